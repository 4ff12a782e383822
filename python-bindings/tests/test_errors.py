"""Bad launches: each fails with an exception that says what is wrong, and
the kernel's outputs stay untouched. Checks the runtime makes surface as
tessel.Error with its message verbatim; the ones a pointer cannot tell the
runtime (dtype support, contiguity, device, arity) are Python's."""

import numpy as np
import pytest
import torch

import reference
import tessel

KERNEL = "gmm_f32_tb_g5_k19_n37"


@pytest.fixture
def gmm(bundle):
    return bundle[KERNEL]


@pytest.fixture
def args(rng):
    """Valid arguments of the grouped matmul, as numpy arrays."""
    offsets = reference.group_offsets([2, 0, 3, 1, 4])
    a = rng.standard_normal((10, 19)).astype(np.float32)
    b = rng.standard_normal((5, 37, 19)).astype(np.float32)
    c = np.full((10, 37), np.nan, np.float32)
    return [a, b, offsets, c]


def fails(exception, kernel, args, match=None):
    """Launches expecting `exception`; checks the output was not written."""
    output = args[-1]
    before = np.array(output, dtype=np.float64, copy=True) \
        if isinstance(output, np.ndarray) else None
    with pytest.raises(exception, match=match) as info:
        kernel(*args)
    if before is not None:
        np.testing.assert_array_equal(output, before)
    return info.value


def runtime_error(kernel, args, message, code=tessel.StatusCode.INVALID_ARGUMENT):
    error = fails(tessel.Error, kernel, args)
    assert error.code == code
    assert str(error) == message
    return error


def test_valid_arguments_work(gmm, args):
    # The baseline every case below breaks one thing of.
    gmm(*args)
    want = reference.grouped_matmul(args[0], args[1], args[2], trans_b=True)
    np.testing.assert_allclose(args[3], want, rtol=1e-4, atol=1e-4)


def test_unsupported_dtypes(gmm, args):
    a64 = args[0].astype(np.float64)
    fails(TypeError, gmm, [a64] + args[1:],
          match=f"kernel '{KERNEL}': arg 'a' has numpy dtype float64, which Tessel "
                "kernels do not take")
    fails(TypeError, gmm, [torch.from_numpy(a64)] + args[1:],
          match="arg 'a' has dtype torch.float64")
    fails(TypeError, gmm, args[:2] + [args[2].astype(np.uint32), args[3]],
          match="arg 'group_offsets' has numpy dtype uint32")
    fails(TypeError, gmm, args[:3] + [torch.zeros(10, 37, dtype=torch.complex64)],
          match="arg 'c' has dtype torch.complex64")


def test_numpy_has_no_bfloat16(bundle, rng):
    """bf16 kernels take torch tensors; the bits of bf16 in a numpy uint16
    array are refused, naming the dtype."""
    kernel = bundle["prefill_bf16_h4kv2_d64"]
    bits = np.zeros((6, 4, 64), np.uint16)
    with pytest.raises(TypeError, match="numpy dtype uint16.*numpy has no "
                                        "bfloat16: pass a torch tensor"):
        kernel(bits, bits[:, :2], bits[:, :2], np.array([0, 6], np.int32),
               np.zeros((6, 4, 64), np.uint16), np.zeros((4, 6), np.float32),
               0.125)


def test_wrong_dtype(gmm, args, bundle):
    runtime_error(gmm, [args[0].astype(np.float16)] + args[1:],
                  f"kernel '{KERNEL}': arg 'a' has dtype f16 (value 2), expected f32")
    runtime_error(gmm, args[:2] + [args[2].astype(np.int64), args[3]],
                  f"kernel '{KERNEL}': arg 'group_offsets' has dtype i64 (value 5), "
                  "expected i32")
    q = torch.zeros(6, 4, 64, dtype=torch.bfloat16)
    runtime_error(bundle["prefill_f32_h4kv2_d64"],
                  [q, torch.zeros(6, 2, 64), torch.zeros(6, 2, 64),
                   torch.tensor([0, 6], dtype=torch.int32), torch.zeros(6, 4, 64),
                   torch.zeros(4, 6), 0.125],
                  "kernel 'prefill_f32_h4kv2_d64': arg 'q' has dtype bf16 (value 3), "
                  "expected f32")


def test_bad_scale(bundle):
    """The softmax scale is a Python float passed by value, and finite."""
    kernel = bundle["prefill_f32_h4kv2_d64"]
    out = torch.full((6, 4, 64), float("nan"))
    args = [torch.ones(6, 4, 64), torch.ones(6, 2, 64), torch.ones(6, 2, 64),
            torch.tensor([0, 6], dtype=torch.int32), out, torch.zeros(4, 6)]
    for bad, kind in ((torch.tensor(0.125), "Tensor"), ("0.125", "str"),
                      (True, "bool")):
        with pytest.raises(TypeError, match="kernel 'prefill_f32_h4kv2_d64': "
                           "arg 'scale' is an f32 scalar passed by value; "
                           f"expected a Python float, got {kind}"):
            kernel(*args, bad)
    with pytest.raises(tessel.Error, match="kernel 'prefill_f32_h4kv2_d64': "
                       "arg 'scale' is nan; it must be finite"):
        kernel(*args, float("nan"))
    assert torch.isnan(out).all()


def test_wrong_shape(gmm, args):
    a, b, offsets, c = args
    runtime_error(gmm, [a, b, offsets, c[:9]],
                  f"kernel '{KERNEL}': arg 'c' dim 0 is 9 but arg 'a' dim 0 says T = 10")
    runtime_error(gmm, [a[:, :18].copy(), b, offsets, c],
                  f"kernel '{KERNEL}': arg 'a' dim 1 is 18, expected 19")
    runtime_error(gmm, [a, b[:4], offsets, c],
                  f"kernel '{KERNEL}': arg 'b' dim 0 is 4, expected 5")
    runtime_error(gmm, [a.reshape(10, 19, 1), b, offsets, c],
                  f"kernel '{KERNEL}': arg 'a' has rank 3, expected 2")
    runtime_error(gmm, [a, b, offsets, np.zeros((1,) * 9, np.float32)],
                  f"kernel '{KERNEL}': arg 'c' has rank 9; a rank must be in [0, 8]")


def test_not_contiguous(gmm, args):
    a, b, offsets, c = args
    wide = np.zeros((10, 38), np.float32)
    fails(ValueError, gmm, [wide[:, ::2]] + args[1:],
          match=rf"kernel '{KERNEL}': arg 'a' must be contiguous row-major \(C order\), "
                r"but shape \(10, 19\) has strides \(38, 2\)")
    fails(ValueError, gmm, [a, torch.from_numpy(b).transpose(1, 2).contiguous()
                            .transpose(1, 2), offsets, c],
          match="arg 'b' must be contiguous row-major")
    fails(ValueError, gmm, [a, b, offsets, np.asfortranarray(c)],
          match="arg 'c' must be contiguous row-major")
    # A dim of size 1 may have any stride: still row-major.
    one_row = torch.from_numpy(np.ascontiguousarray(a[:1]))
    assert one_row.t().t().is_contiguous()
    gmm(one_row, b, reference.group_offsets([1, 0, 0, 0, 0]),
        np.zeros((1, 37), np.float32))


def test_wrong_number_of_args(gmm, args):
    signature = f"kernel '{KERNEL}' takes 4 args \\(a, b, group_offsets, c\\)"
    fails(TypeError, gmm, args[:3], match=signature + "; missing: c")
    fails(TypeError, gmm, args + [args[3]], match=signature + ", got 5")
    with pytest.raises(TypeError, match=signature + "; it has no arg 'd'"):
        gmm(*args, d=args[3])
    with pytest.raises(TypeError, match=signature + "; arg 'a' is given twice"):
        gmm(*args, a=args[0])
    with pytest.raises(TypeError, match=signature + "; missing: a, group_offsets"):
        gmm(b=args[1], c=args[3])


def test_not_a_tensor(gmm, args):
    fails(TypeError, gmm, [args[0].tolist()] + args[1:],
          match=f"kernel '{KERNEL}': arg 'a' is of type list; expected a torch tensor")


def test_read_only_output(gmm, args):
    c = args[3]
    c.flags.writeable = False
    fails(ValueError, gmm, args,
          match=f"kernel '{KERNEL}': arg 'c' is a read-only numpy array, but the "
                "kernel writes it")
    # Read-only inputs are fine.
    args[0].flags.writeable = False
    c.flags.writeable = True
    gmm(*args)


def test_misaligned_data(gmm, args):
    raw = bytearray(args[0].nbytes + 4)
    a = np.frombuffer(raw, np.float32, count=args[0].size, offset=1).reshape(10, 19)
    e = fails(tessel.Error, gmm, [a] + args[1:])
    assert e.code == tessel.StatusCode.INVALID_ARGUMENT
    assert str(e).startswith(f"kernel '{KERNEL}': arg 'a' data 0x")
    assert str(e).endswith("is not aligned to 4 bytes (the size of f32)")


def test_stream_on_host(gmm, args):
    with pytest.raises(tessel.Error) as info:
        gmm(*args, stream=1234)
    assert info.value.code == tessel.StatusCode.INVALID_ARGUMENT
    assert "the host backend has no streams; pass NULL" in str(info.value)
    with pytest.raises(TypeError, match="stream is of type str"):
        gmm(*args, stream="default")


class FakeCudaArray:
    """Claims, through DLPack, to live on CUDA device 0."""

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        raise AssertionError("the device check comes first")


def test_cuda_tensor_on_host_kernel(gmm, args):
    fails(ValueError, gmm, [FakeCudaArray()] + args[1:],
          match=f"kernel '{KERNEL}': arg 'a' is on CUDA device 0, but the kernel "
                "runs on the host: copy it there first")


def test_swiglu_backward_needs_a_row_per_slot(bundle, rng):
    """sorted_rows [R] must have R = T * k: every d_topk_weights entry is
    written by the warp of the row at its flat index."""
    kernel = bundle["moe_k3_swiglu_backward"]
    T, k, I = 4, 3, 11
    R = T * k

    def rand(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    slots = np.arange(R, dtype=np.int32)
    d_weights = np.full((T, k), np.nan, np.float32)
    args = [rand(R, I), rand(R, 2 * I), rand(T, k), slots[:R - 1].copy(),
            slots.reshape(T, k), rand(R, 2 * I), rand(R, I), d_weights]
    runtime_error(kernel, args,
                  "kernel 'moe_k3_swiglu_backward': arg 'sorted_rows' dim 0 "
                  "is 11 but arg 'grad' dim 0 says T = 4, so it must be "
                  "3*T = 12")
