"""Kernels compiled by tessel-aot, launched from Python on the host and
compared with float64 references, on fresh random data of awkward sizes.
Outputs are poisoned (NaN) before each launch, so an unwritten element
fails."""

import numpy as np
import pytest
import torch

import reference

SEQ_LENS = [7, 1, 13, 0, 22]  # an empty request, a one-token one
SCALE = 0.125


def prefill_inputs(rng, dtype_np=np.float32):
    cu = np.concatenate([[0], np.cumsum(SEQ_LENS)]).astype(np.int32)
    tokens = int(cu[-1])
    q = rng.standard_normal((tokens, 4, 64)).astype(dtype_np)
    k = rng.standard_normal((tokens, 2, 64)).astype(dtype_np)
    v = rng.standard_normal((tokens, 2, 64)).astype(dtype_np)
    return q, k, v, cu


def test_prefill_numpy(bundle, rng):
    q, k, v, cu = prefill_inputs(rng)
    out = np.full((q.shape[0], 4, 64), np.nan, np.float32)
    lse = np.full((4, q.shape[0]), np.nan, np.float32)
    bundle["prefill_f32_h4kv2_d64"](q, k, v, cu, out, lse, SCALE)
    want_out, want_lse = reference.prefill_attention(q, k, v, cu, SCALE)
    np.testing.assert_allclose(out, want_out, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(lse, want_lse, rtol=1e-5, atol=1e-5)


def test_prefill_scale_is_a_launch_argument(bundle, rng):
    """One kernel, two scales, two right answers (which differ: a kernel
    that ignored the scale would fail one)."""
    q, k, v, cu = prefill_inputs(rng)
    kernel = bundle["prefill_f32_h4kv2_d64"]
    assert kernel.scalars == ("scale",)
    results = []
    for scale in (SCALE, 0.3):
        out = np.full((q.shape[0], 4, 64), np.nan, np.float32)
        lse = np.full((4, q.shape[0]), np.nan, np.float32)
        kernel(q, k, v, cu, out, lse, scale=scale)
        want_out, want_lse = reference.prefill_attention(q, k, v, cu, scale)
        np.testing.assert_allclose(out, want_out, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(lse, want_lse, rtol=1e-5, atol=1e-5)
        results.append(out)
    assert np.abs(results[0] - results[1]).max() > 1e-2


def test_prefill_torch_by_name(bundle, rng):
    q, k, v, cu = (torch.from_numpy(x) for x in prefill_inputs(rng))
    out = torch.full((q.shape[0], 4, 64), float("nan"))
    lse = torch.full((4, q.shape[0]), float("nan"))
    kernel = bundle.find("prefill_attention", dtype=torch.float32,
                         num_q_heads=4, num_kv_heads=2, head_dim=64)
    assert kernel.name == "prefill_f32_h4kv2_d64"
    kernel(q, k, v, out=out, lse=lse, cu_seqlens=cu, scale=SCALE)
    want_out, want_lse = reference.prefill_attention(q, k, v, cu.numpy(), SCALE)
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(lse.numpy(), want_lse, rtol=1e-5, atol=1e-5)


def test_prefill_torch_bf16(bundle, rng):
    q, k, v, cu = prefill_inputs(rng)
    q, k, v = (torch.from_numpy(x).to(torch.bfloat16) for x in (q, k, v))
    out = torch.full((q.shape[0], 4, 64), float("nan"), dtype=torch.bfloat16)
    lse = torch.full((4, q.shape[0]), float("nan"))
    bundle["prefill_bf16_h4kv2_d64"].launch(q, k, v, torch.from_numpy(cu), out, lse,
                                            SCALE)
    # The reference sees the same bf16-rounded inputs.
    want_out, want_lse = reference.prefill_attention(
        q.float().numpy(), k.float().numpy(), v.float().numpy(), cu, SCALE)
    np.testing.assert_allclose(out.float().numpy(), want_out, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(lse.numpy(), want_lse, rtol=1e-3, atol=1e-3)


def test_lse_merge_numpy_with_empty_partials(bundle, rng):
    tokens = 29
    o_a = rng.standard_normal((tokens, 3, 64)).astype(np.float32)
    o_b = rng.standard_normal((tokens, 3, 64)).astype(np.float32)
    lse_a = (rng.standard_normal((3, tokens)) * 3).astype(np.float32)
    lse_b = (rng.standard_normal((3, tokens)) * 3).astype(np.float32)
    # Empty partials: -inf, and +inf (which counts as -inf); both empty.
    lse_a[0, 3] = -np.inf
    lse_b[1, 5] = np.inf
    o_b[5, 1] = np.nan  # an empty partial's rows are never read
    lse_a[2, 7] = lse_b[2, 7] = -np.inf
    out = np.full_like(o_a, np.nan)
    lse_out = np.full_like(lse_a, np.nan)
    kernel = bundle["merge_f32_h3_d64"]
    kernel(o_a, lse_a, o_b, lse_b, out, lse_out)
    want_out, want_lse = reference.lse_merge(o_a, lse_a, o_b, lse_b)
    assert not np.isnan(out).any() and not np.isnan(lse_out).any()
    np.testing.assert_allclose(out, want_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lse_out, want_lse, rtol=1e-6, atol=1e-6)
    assert lse_out[2, 7] == -np.inf
    np.testing.assert_array_equal(out[7, 2], o_a[7, 2])


@pytest.mark.parametrize("sizes", [[3, 0, 11, 1, 0], [0, 0, 0, 0, 0], [17, 2, 0, 5, 9]])
def test_grouped_matmul_torch(bundle, rng, sizes):
    offsets = reference.group_offsets(sizes)
    tokens = int(offsets[-1]) + 3  # rows past the last group are zeroed
    a = torch.from_numpy(rng.standard_normal((tokens, 19)).astype(np.float32))
    b = torch.from_numpy(rng.standard_normal((5, 37, 19)).astype(np.float32))
    c = torch.full((tokens, 37), float("nan"))
    bundle["gmm_f32_tb_g5_k19_n37"](a, b, torch.from_numpy(offsets), c)
    want = reference.grouped_matmul(a.numpy(), b.numpy(), offsets, trans_b=True)
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-4, atol=1e-4)


def test_grouped_matmul_numpy_f16(bundle, rng):
    offsets = reference.group_offsets([9, 0, 14])
    a = rng.standard_normal((23, 24)).astype(np.float16)
    b = rng.standard_normal((3, 24, 40)).astype(np.float16)
    c = np.full((23, 40), np.nan, np.float16)
    kernel = bundle.find("grouped_matmul", dtype="f16")
    assert kernel.params["trans_b"] == 0
    kernel(a, b, offsets, c)
    want = reference.grouped_matmul(a, b, offsets, trans_b=False)
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=1e-2, atol=2e-2)


def test_grouped_matmul_pointer_table(bundle, rng):
    """B as an i64 table of per-expert matrices, read in place."""
    experts = [rng.standard_normal((20, 16)).astype(np.float32) for _ in range(4)]
    table = np.array([w.ctypes.data for w in experts], dtype=np.int64)
    offsets = reference.group_offsets([4, 0, 7, 2])
    a = rng.standard_normal((13, 16)).astype(np.float32)
    c = np.full((13, 20), np.nan, np.float32)
    bundle["gmm_f32_ptr_tb_g4_k16_n20"](a, table, offsets, c)
    want = reference.grouped_matmul(a, np.stack(experts), offsets, trans_b=True)
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)


class DLPackOnly:
    """An array known only through the DLPack protocol."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        assert stream is None  # a host launch asks for no stream
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_dlpack_objects(bundle, rng):
    """Objects with __dlpack__, from numpy and from torch (bf16 included)."""
    offsets = reference.group_offsets([5, 6, 0, 2, 1])
    a = rng.standard_normal((16, 19)).astype(np.float32)
    b = rng.standard_normal((5, 37, 19)).astype(np.float32)
    c = torch.full((16, 37), float("nan"))
    bundle["gmm_f32_tb_g5_k19_n37"](DLPackOnly(a), DLPackOnly(torch.from_numpy(b)),
                                    DLPackOnly(offsets), DLPackOnly(c))
    want = reference.grouped_matmul(a, b, offsets, trans_b=True)
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-4, atol=1e-4)

    q, k, v, cu = prefill_inputs(rng)
    q, k, v = (torch.from_numpy(x).to(torch.bfloat16) for x in (q, k, v))
    out = torch.full((q.shape[0], 4, 64), float("nan"), dtype=torch.bfloat16)
    lse = torch.full((4, q.shape[0]), float("nan"))
    bundle["prefill_bf16_h4kv2_d64"](*(DLPackOnly(x) for x in (q, k, v)), cu,
                                     DLPackOnly(out), lse, SCALE)
    want_out, _ = reference.prefill_attention(
        q.float().numpy(), k.float().numpy(), v.float().numpy(), cu, SCALE)
    np.testing.assert_allclose(out.float().numpy(), want_out, rtol=2e-2, atol=2e-2)


def test_views_with_offsets(bundle, rng):
    """A contiguous slice starts past its storage's start: the data pointer
    must include the offset."""
    offsets = reference.group_offsets([2, 3, 1, 0, 4])
    big = torch.from_numpy(rng.standard_normal((30, 19)).astype(np.float32))
    a = big[7:17]
    assert a.is_contiguous() and a.storage_offset() == 7 * 19
    b = torch.from_numpy(rng.standard_normal((5, 37, 19)).astype(np.float32))
    c_np = np.full((12, 37), np.nan, np.float32)[2:]
    bundle["gmm_f32_tb_g5_k19_n37"](a, b, offsets, c_np)
    want = reference.grouped_matmul(a.numpy(), b.numpy(), offsets, trans_b=True)
    np.testing.assert_allclose(c_np, want, rtol=1e-4, atol=1e-4)


def test_concurrent_launches(bundle, rng):
    """Host launches from several threads at once (the GIL is released),
    on distinct output buffers."""
    import threading

    offsets = reference.group_offsets([40, 0, 33, 21, 6])
    a = rng.standard_normal((100, 19)).astype(np.float32)
    b = rng.standard_normal((5, 37, 19)).astype(np.float32)
    outs = [np.full((100, 37), np.nan, np.float32) for _ in range(4)]
    kernel = bundle["gmm_f32_tb_g5_k19_n37"]
    threads = [threading.Thread(target=lambda c=c: [kernel(a, b, offsets, c)
                                                    for _ in range(20)])
               for c in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    want = reference.grouped_matmul(a, b, offsets, trans_b=True)
    for c in outs:
        np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)
