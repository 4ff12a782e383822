"""Launch arguments as the buffers the runtime takes.

A launch argument is a torch tensor, a numpy array or any object with
``__dlpack__`` (the array interchange protocol). Each becomes a `Buffer`
(data pointer, Tessel dtype, shape) after the checks the runtime cannot make
from a pointer: the dtype is one Tessel has, the memory is dense row-major,
it is on the kernel's device, and an output is writable. Shapes, dtypes
against the kernel's signature and alignment are the runtime's to check.

torch and numpy are never imported here: a tensor of either can only exist
once its module is loaded, so ``sys.modules`` says whether to look for one.
"""

import array
import numbers
import sys
from typing import Any, NamedTuple, Optional, Tuple

from . import _tessel

SUPPORTED = "float32, float16, bfloat16, int32, int64"

_NUMPY_DTYPES = {"float32": "f32", "float16": "f16", "int32": "i32", "int64": "i64"}

# DLPack (type code, bits, lanes) -> Tessel dtype name.
_DLPACK_DTYPES = {
    (2, 32, 1): "f32",
    (2, 16, 1): "f16",
    (4, 16, 1): "bf16",
    (0, 32, 1): "i32",
    (0, 64, 1): "i64",
}
_DLPACK_TYPE_CODES = {0: "int", 1: "uint", 2: "float", 3: "opaque", 4: "bfloat",
                      5: "complex", 6: "bool"}
# DLPack device types: CPU, CUDA, CUDA pinned host memory, ROCm, ROCm pinned
# host memory, CUDA managed memory.
_DLPACK_DEVICES = {1: "host", 2: "cuda", 3: "host", 10: "hip", 11: "host", 13: "cuda"}

_torch_dtypes = None


class Buffer(NamedTuple):
    data: int
    dtype: int  # tessel_dtype value
    shape: Tuple[int, ...]
    # What owns the memory until the launch returns (a DLPack capsule).
    owner: Any


def _torch_dtype_names(torch):
    global _torch_dtypes
    if _torch_dtypes is None:
        _torch_dtypes = {torch.float32: "f32", torch.float16: "f16",
                         torch.bfloat16: "bf16", torch.int32: "i32",
                         torch.int64: "i64"}
    return _torch_dtypes


def _numpy_dtype_name(dtype) -> Optional[str]:
    return _NUMPY_DTYPES.get(dtype.name) if dtype.isnative else None


def dtype_name(spec) -> str:
    """The Tessel dtype name ('f32', 'f16', 'bf16', 'i32', 'i64') of a name,
    a torch dtype or anything numpy.dtype() takes."""
    if isinstance(spec, str) and spec in _tessel.DTYPES:
        return spec
    name = None
    torch = sys.modules.get("torch")
    np = sys.modules.get("numpy")
    if torch is not None and isinstance(spec, torch.dtype):
        name = _torch_dtype_names(torch).get(spec)
    elif np is not None:
        try:
            name = _numpy_dtype_name(np.dtype(spec))
        except TypeError:
            pass
    if name is None:
        raise TypeError(f"dtype {spec!r} is not one Tessel kernels take "
                        f"({SUPPORTED}; by name: {', '.join(_tessel.DTYPES)})")
    return name


def _device_name(device: Tuple[str, int]) -> str:
    kind, index = device
    if kind == "host":
        return "the host"
    if kind in ("cuda", "hip"):
        return f"{kind.upper()} device {index}"
    return f"device {kind}:{index}"


def is_row_major(shape, strides) -> bool:
    """Whether `strides` (in elements) address `shape` densely in row-major
    order. Dims of size 1 may have any stride; an empty tensor addresses
    nothing."""
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def _not_contiguous(what, shape, strides) -> ValueError:
    return ValueError(
        f"{what} must be contiguous row-major (C order), but shape "
        f"{tuple(shape)} has strides {tuple(strides)} (in elements); pass "
        f"tensor.contiguous() or numpy.ascontiguousarray(array)")


def _check_device(what, actual, expected):
    if actual != expected:
        where = "in host memory" if actual[0] == "host" else \
            f"on {_device_name(actual)}"
        raise ValueError(f"{what} is {where}, but the kernel runs on "
                         f"{_device_name(expected)}: copy it there first")


def _from_torch(torch, t, what, device) -> Buffer:
    name = _torch_dtype_names(torch).get(t.dtype)
    if name is None:
        raise TypeError(f"{what} has dtype {t.dtype}, which Tessel kernels do "
                        f"not take ({SUPPORTED})")
    if t.device.type == "cpu":
        actual = ("host", 0)
    elif t.device.type == "cuda":
        # A ROCm build of torch calls its GPUs "cuda" too.
        actual = ("hip" if torch.version.hip else "cuda", t.device.index)
    else:
        actual = (t.device.type, t.device.index or 0)
    _check_device(what, actual, device)
    if not t.is_contiguous():
        raise _not_contiguous(what, t.shape, t.stride())
    return Buffer(t.data_ptr(), _tessel.DTYPES[name], tuple(t.shape), None)


def _from_numpy(a, what, device, output) -> Buffer:
    name = _numpy_dtype_name(a.dtype)
    if name is None:
        raise TypeError(f"{what} has numpy dtype {a.dtype}, which Tessel "
                        f"kernels do not take ({SUPPORTED}; numpy has no "
                        f"bfloat16: pass a torch tensor to a bf16 kernel)")
    _check_device(what, ("host", 0), device)
    if not a.flags.c_contiguous:
        raise _not_contiguous(what, a.shape,
                              [s // a.itemsize for s in a.strides])
    if output and not a.flags.writeable:
        raise ValueError(f"{what} is a read-only numpy array, but the kernel "
                         f"writes it")
    return Buffer(a.ctypes.data, _tessel.DTYPES[name], a.shape, None)


def _from_dlpack(x, what, device, dlpack_stream) -> Buffer:
    # Check the device first when the producer says it cheaply: asking a
    # host array for a capsule with a stream is an error in the producer.
    on_gpu = device[0] != "host"
    if hasattr(x, "__dlpack_device__"):
        dev_type, dev_id = x.__dlpack_device__()
        _check_device(what, (_DLPACK_DEVICES.get(int(dev_type), f"dlpack{int(dev_type)}"),
                             dev_id), device)
    capsule = x.__dlpack__(stream=dlpack_stream) if on_gpu else x.__dlpack__()
    info = _tessel.dlpack_info(capsule)
    dev_type, dev_id = info["device"]
    _check_device(what, (_DLPACK_DEVICES.get(dev_type, f"dlpack{dev_type}"), dev_id),
                  device)
    code, bits, lanes = info["dtype"]
    name = _DLPACK_DTYPES.get((code, bits, lanes))
    if name is None:
        kind = _DLPACK_TYPE_CODES.get(code, f"type code {code} of ")
        lanes_text = f"x{lanes}" if lanes != 1 else ""
        raise TypeError(f"{what} has DLPack dtype {kind}{bits}{lanes_text}, "
                        f"which Tessel kernels do not take ({SUPPORTED})")
    shape, strides = info["shape"], info["strides"]
    if strides is not None and not is_row_major(shape, strides):
        raise _not_contiguous(what, shape, strides)
    return Buffer(info["data"], _tessel.DTYPES[name], shape, capsule)


def to_buffer(x, what: str, device: Tuple[str, int], output: bool,
              dlpack_stream: Optional[int]) -> Buffer:
    """The buffer of launch argument `x`; `what` names it in errors
    ("kernel 'k': arg 'q'"), `device` is the kernel's (kind, ordinal),
    `dlpack_stream` the stream a GPU launch runs on, as DLPack numbers it."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return _from_torch(torch, x, what, device)
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.ndarray):
        return _from_numpy(x, what, device, output)
    if hasattr(x, "__dlpack__"):
        return _from_dlpack(x, what, device, dlpack_stream)
    raise TypeError(f"{what} is of type {type(x).__name__}; expected a torch "
                    f"tensor, a numpy array or an object with __dlpack__")


def scalar_buffer(x, what: str) -> Buffer:
    """The buffer of a scalar argument (rank 0, f32, such as an attention
    kernel's softmax scale): the runtime reads its value from host memory
    during the launch call."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{what} is an f32 scalar passed by value; expected a "
                        f"Python float, got {type(x).__name__}")
    value = array.array("f", [float(x)])
    return Buffer(value.buffer_info()[0], _tessel.DTYPES["f32"], (), value)


def torch_stream(values) -> Optional[int]:
    """The current torch stream of the first GPU torch tensor in `values`,
    or None: a launch on torch tensors joins torch's stream order."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    for x in values:
        if isinstance(x, torch.Tensor) and x.is_cuda:
            return torch.cuda.current_stream(x.device).cuda_stream
    return None
