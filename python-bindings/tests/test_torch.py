"""tessel.torch.grouped_mm against torch autograd of the per-group loop, on
the host backend (the kernels of kernels.mlir's gmm_autograd_*)."""

import os

import pytest
import torch

import tessel
import tessel.torch


def naive(a, b, ends):
    """The per-expert loop, in float64: c[rows_g] = a[rows_g] @ b[g].T."""
    c = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float64)
    start = 0
    for g, end in enumerate(ends):
        if end > start:
            c[start:end] = a[start:end].double() @ b[g].double().T
        start = end
    return c


def random_case(rng_seed, ends, rows):
    gen = torch.Generator().manual_seed(rng_seed)
    a = torch.randn(rows, 16, generator=gen)
    b = torch.randn(3, 24, 16, generator=gen) * 0.25
    w = torch.randn(rows, 24, generator=gen)  # dL/dc
    return a, b, w


@pytest.mark.parametrize("ends,rows", [([5, 5, 12], 13), ([0, 7, 7], 7),
                                       ([4, 9, 31], 31)])
def test_forward_and_gradients_match_the_loop(bundle, ends, rows):
    a, b, w = random_case(rows + sum(ends), ends, rows)
    offsets = torch.tensor(ends, dtype=torch.int32)
    a1, b1 = a.clone().requires_grad_(), b.clone().requires_grad_()
    c = tessel.torch.grouped_mm(a1, b1, offsets, bundle, trans_b=True)
    (c * w).sum().backward()

    a2 = a.double().requires_grad_()
    b2 = b.double().requires_grad_()
    ref = naive(a2, b2, ends)
    (ref * w.double()).sum().backward()

    def rel(x, y):
        return ((x.double() - y).abs().max() / y.abs().max().clamp(min=1e-30)
                ).item()

    assert rel(c.detach(), ref.detach()) < 1e-5
    # Rows past the last end are zeros in c, and get zero gradient.
    assert torch.equal(c.detach()[ends[-1]:], torch.zeros(rows - ends[-1], 24))
    assert rel(a1.grad, a2.grad) < 1e-5
    assert rel(b1.grad, b2.grad) < 1e-5
    # An empty group's weight gradient is exactly zero.
    starts = [0] + ends[:-1]
    for g, (s, e) in enumerate(zip(starts, ends)):
        if e <= s:
            assert torch.count_nonzero(b1.grad[g]) == 0


def test_only_a_needs_grad(bundle):
    a, b, w = random_case(3, [2, 6, 9], 9)
    a1 = a.clone().requires_grad_()
    c = tessel.torch.grouped_mm(a1, b, torch.tensor([2, 6, 9],
                                                    dtype=torch.int32),
                                bundle)
    (c * w).sum().backward()
    assert a1.grad is not None and b.grad is None
    assert torch.isfinite(a1.grad).all()


def test_spec_is_what_the_test_bundle_holds():
    text = tessel.torch.grouped_mm_spec(3, 24, 16, "f32", True,
                                        "gmm_autograd")
    with open(os.environ["TESSEL_TEST_SPEC"]) as f:
        assert text in f.read()


def test_missing_kernels_name_what_was_looked_for(bundle):
    a = torch.randn(4, 16)
    b = torch.randn(3, 16, 24)  # [G, K, N]: no trans_b kernels in the bundle
    with pytest.raises(tessel.Error) as e:
        tessel.torch.grouped_mm(a, b, torch.tensor([1, 2, 4],
                                                   dtype=torch.int32),
                                bundle, trans_b=False)
    assert "grouped_matmul" in str(e.value)
    assert "trans_b" in str(e.value)


@pytest.mark.parametrize("bad,message", [
    (dict(offsets=torch.tensor([1, 2, 4])), "'group_offsets' must be int32"),
    (dict(b=torch.randn(3, 24, 16, dtype=torch.float64)), "is torch.float64"),
    (dict(a=torch.randn(4, 16, 1)), "'a' must be a 2-D torch tensor"),
])
def test_bad_inputs_raise(bundle, bad, message):
    args = dict(a=torch.randn(4, 16), b=torch.randn(3, 24, 16),
                offsets=torch.tensor([1, 2, 4], dtype=torch.int32))
    args.update(bad)
    with pytest.raises((TypeError, ValueError), match=message):
        tessel.torch.grouped_mm(args["a"], args["b"], args["offsets"], bundle)


def test_unsupported_dtype_is_a_type_error(bundle):
    a = torch.randn(4, 16, dtype=torch.float64)
    b = torch.randn(3, 24, 16, dtype=torch.float64)
    with pytest.raises(TypeError, match="float64 is not supported"):
        tessel.torch.grouped_mm(a, b, torch.tensor([1, 2, 4],
                                                   dtype=torch.int32), bundle)


def test_forward_needs_only_the_forward_kernel(bundle):
    # The bundle has a trans_b forward kernel for G=5, K=19, N=37 but no
    # backward kernels for it: inference works, and a backward pass names
    # the kernel it is missing.
    gen = torch.Generator().manual_seed(7)
    a = torch.randn(11, 19, generator=gen)
    b = torch.randn(5, 37, 19, generator=gen)
    ends = [2, 2, 6, 9, 11]
    c = tessel.torch.grouped_mm(a, b, torch.tensor(ends, dtype=torch.int32),
                                bundle, trans_b=True)
    ref = naive(a, b, ends)
    assert ((c.double() - ref).abs().max() / ref.abs().max()).item() < 1e-5

    a1 = a.clone().requires_grad_()
    c = tessel.torch.grouped_mm(a1, b, torch.tensor(ends, dtype=torch.int32),
                                bundle, trans_b=True)
    with pytest.raises(tessel.Error, match="grouped_matmul"):
        c.sum().backward()


def test_without_a_bundle_the_kernels_are_compiled_on_miss(tmp_path):
    """A shape no bundle has (G=4, N=20, K=12): the three kernels are
    compiled together into the cache on the first miss, then reused."""
    gen = torch.Generator().manual_seed(8)
    ends = [3, 3, 9, 10]
    a = torch.randn(10, 12, generator=gen)
    b = (torch.randn(4, 20, 12, generator=gen) * 0.3)
    w = torch.randn(10, 20, generator=gen)
    cache = tessel.KernelCache(tmp_path)
    a1, b1 = a.clone().requires_grad_(), b.clone().requires_grad_()
    c = tessel.torch.grouped_mm(a1, b1, torch.tensor(ends, dtype=torch.int32),
                                cache)
    (c * w).sum().backward()
    a2, b2 = a.double().requires_grad_(), b.double().requires_grad_()
    ref = naive(a2, b2, ends)
    (ref * w.double()).sum().backward()
    for got, want in ((c.detach(), ref.detach()), (a1.grad, a2.grad),
                      (b1.grad, b2.grad)):
        assert ((got.double() - want).abs().max() / want.abs().max()) < 1e-5
    assert len(list(tmp_path.glob("host-*.tsb"))) == 1
