"""The CUDA path without a GPU: the runtime tests' fake libcuda (an sm_90
device that records what it is asked to do) and a bundle with one sm80
kernel whose binary the fake accepts. Covers device selection, the checks
that keep host memory away from a GPU kernel, and which stream a launch
uses."""

import ctypes

import numpy as np
import pytest
import torch

import tessel
from tessel import _tessel

F32, I32 = _tessel.DTYPES["f32"], _tessel.DTYPES["i32"]
T = (0, 1, 0)  # the dim "T" (symbol 0)


def scale_kernel():
    """y[T] = f(x[T]) for sm80, in blocks of 128 threads."""
    return {
        "name": "scale", "op": "test.scale", "target": "sm80", "entry": "scale",
        "dtype": F32,
        "args": [("x", F32, False, [T]), ("y", F32, True, [T])],
        "symbols": ["T"], "params": [("factor", 3)],
        "grid": [T, (-1, 1, 1), (-1, 1, 1)], "grid_div": [128, 1, 1],
        "block": [128, 1, 1], "shared_bytes": 0,
        "binary": b"FAKE:scale",
    }


class FakeLaunch(ctypes.Structure):
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("params", ctypes.c_uint64 * 8), ("current", ctypes.c_ssize_t),
                ("function", ctypes.c_char * 64),
                ("maps", (ctypes.c_uint8 * 128) * 4),
                ("map_addresses", ctypes.c_size_t * 4)]


class FakeState(ctypes.Structure):
    """The start of struct fake_driver_state (runtime/test/fake_drivers.h)."""
    _fields_ = [("modules_loaded", ctypes.c_int), ("modules_unloaded", ctypes.c_int),
                ("last_image", ctypes.c_char * 64), ("launches", ctypes.c_int),
                ("num_params", ctypes.c_int), ("num_maps", ctypes.c_int),
                ("last_launch", FakeLaunch)]


@pytest.fixture
def fake(fake_cuda):
    """The fake driver's recorded state (the library the runtime dlopens:
    same path, same handle)."""
    library = ctypes.CDLL(fake_cuda)
    library.fake_cuda_state.restype = ctypes.POINTER(FakeState)
    return library.fake_cuda_state().contents


@pytest.fixture
def gpu(fake):
    return tessel.Device("cuda", 0)


@pytest.fixture
def kernel(gpu):
    return tessel.Bundle(gpu, _tessel.serialize_bundle([scale_kernel()]))["scale"]


class FakeCudaArray:
    """A CUDA array through DLPack: a DLManagedTensor built with ctypes, at
    an aligned address the fake driver never dereferences."""

    class _DLTensor(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                    ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                    ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                    ("lanes", ctypes.c_uint16),
                    ("shape", ctypes.POINTER(ctypes.c_int64)),
                    ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64),
                    ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]

    def __init__(self, n, device_id=0, data=0x7f0000001000):
        self.shape = (ctypes.c_int64 * 1)(n)
        self.tensor = self._DLTensor(data, 2, device_id, 1, 2, 32, 1, self.shape,
                                     None, 0, None, None)
        self.device_id = device_id
        self.streams = []

    def __dlpack_device__(self):
        return (2, self.device_id)

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.tensor), b"dltensor", None)


class Stream:
    """Like torch.cuda.Stream: the handle is in cuda_stream."""
    cuda_stream = 0x5000


def test_fake_device(gpu, fake):
    assert gpu.kind == "cuda"
    assert gpu.target == "sm90a"
    assert gpu.targets == ["sm90a", "sm90", "sm80"]


def test_sm80_kernel_on_sm90(kernel, fake):
    assert kernel.target == "sm80"
    assert kernel.params == {"factor": 3}
    assert fake.last_image.startswith(b"FAKE:scale")


def test_launch_streams(kernel, fake):
    x, y = FakeCudaArray(300), FakeCudaArray(300, data=0x7f0000002000)
    before = fake.launches
    kernel(x, y)  # the default stream; DLPack calls CUDA's legacy one 1
    assert fake.launches == before + 1
    launch = fake.last_launch
    assert launch.stream is None
    assert (list(launch.grid), list(launch.block)) == ([3, 1, 1], [128, 1, 1])
    assert x.streams == [1] and y.streams == [1]
    kernel(x, y, stream=0x1234)
    assert fake.last_launch.stream == 0x1234 and x.streams[-1] == 0x1234
    kernel(x, y, stream=Stream())
    assert fake.last_launch.stream == 0x5000 and y.streams[-1] == 0x5000
    assert fake.launches == before + 3


def test_host_memory_on_gpu_kernel(kernel, fake):
    before = fake.launches
    for host in (np.zeros(300, np.float32), torch.zeros(300)):
        with pytest.raises(ValueError, match="kernel 'scale': arg 'x' is in host "
                                             "memory, but the kernel runs on CUDA "
                                             "device 0: copy it there first"):
            kernel(host, FakeCudaArray(300))
    with pytest.raises(ValueError, match="arg 'y' is on CUDA device 1, but the "
                                         "kernel runs on CUDA device 0"):
        kernel(FakeCudaArray(300), FakeCudaArray(300, device_id=1))
    assert fake.launches == before


def test_gpu_checks_of_the_runtime(kernel, fake):
    before = fake.launches
    with pytest.raises(tessel.Error) as info:
        kernel(FakeCudaArray(300), FakeCudaArray(300, data=0x7f0000002004))
    assert info.value.code == tessel.StatusCode.INVALID_ARGUMENT
    assert str(info.value) == ("kernel 'scale': arg 'y' data 0x7f0000002004 is not "
                               "aligned to 16 bytes (GPU kernels access buffers in "
                               "16-byte vectors)")
    assert fake.launches == before
