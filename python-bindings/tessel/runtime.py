"""Bundles and kernels: the runtime's C API (tessel/runtime.h) for Python.

    dev = tessel.Device("host")                  # or "cuda" / "hip", ordinal
    bundle = tessel.Bundle(dev, "kernels.tsb")   # a path, or bundle bytes
    gmm = bundle.find("grouped_matmul", dtype=torch.bfloat16, N=512, K=2048)
    gmm(a, b, group_offsets, c)                  # or gmm(a=..., b=..., ...)

Kernels take torch tensors, numpy arrays or DLPack objects, dense row-major,
on the kernel's device. Everything the runtime checks (argument count, dtypes
against the signature, shapes and the consistency of symbolic sizes,
alignment) fails with tessel.Error carrying its code and message.
"""

import operator
import os
from typing import Dict, Iterator, Tuple

from . import _buffers, _tessel

_MISSING = object()


class Kernel:
    """A kernel of a loaded bundle: the binary of its device's most preferred
    target that the bundle has. Calling it launches it (see `launch`)."""

    __slots__ = ("_bundle", "_handle", "_name", "_args", "_index", "_outputs",
                 "_scalars", "_device")

    def __init__(self, bundle: "Bundle", handle: "_tessel.Kernel"):
        self._bundle = bundle
        self._handle = handle
        self._name = handle.name
        self._args = tuple(handle.args)
        self._index = {name: i for i, name in enumerate(self._args)}
        self._outputs = tuple(handle.outputs)
        self._scalars = tuple(handle.scalars)
        device = bundle.device
        # An emulated GPU (emu-gfx942, emu-sm80, ...) computes in host memory.
        self._device = ("host", 0) if device.kind.startswith("emu-") else \
            (device.kind, device.ordinal)

    @property
    def name(self) -> str:
        return self._name

    @property
    def op(self) -> str:
        """The tessel op, e.g. 'tessel.prefill_attention'."""
        return self._handle.op

    @property
    def target(self) -> str:
        """The bundle target of the loaded binary, e.g. 'host', 'sm90'."""
        return self._handle.target

    @property
    def dtype(self) -> str:
        """The dtype of the main data operands: 'f32', 'f16', 'bf16', ..."""
        return self._handle.dtype

    @property
    def args(self) -> Tuple[str, ...]:
        """The argument names, in launch order."""
        return self._args

    @property
    def outputs(self) -> Tuple[str, ...]:
        """The names of the arguments the kernel writes."""
        return tuple(a for a, out in zip(self._args, self._outputs) if out)

    @property
    def scalars(self) -> Tuple[str, ...]:
        """The names of the arguments passed by value as Python floats (the
        attention kernels' softmax scale, 'scale')."""
        return tuple(a for a, s in zip(self._args, self._scalars) if s)

    @property
    def params(self) -> Dict[str, int]:
        """The shape parameters the kernel is specialised for."""
        return dict(self._handle.params)

    @property
    def bundle(self) -> "Bundle":
        return self._bundle

    def __repr__(self) -> str:
        return (f"<tessel.Kernel '{self._name}': {self.op}, {self.dtype}, "
                f"target {self.target}, args ({', '.join(self._args)})>")

    def __call__(self, *tensors, stream=None, **named) -> None:
        self.launch(*tensors, stream=stream, **named)

    def launch(self, *tensors, stream=None, **named) -> None:
        """Launches the kernel on its arguments, given in `args` order, by
        name, or both.

        Host kernels run on the calling thread and return when done (stream
        must be None). GPU launches are asynchronous on `stream`: an integer
        handle (CUstream/hipStream_t) or an object with `cuda_stream`
        (torch.cuda.Stream); None means torch's current stream when an
        argument is a torch tensor, else the default stream.
        """
        values = self._bind(tensors, named)
        on_gpu = self._device[0] != "host"
        if stream is None:
            handle = (_buffers.torch_stream(values) if on_gpu else None) or 0
        elif isinstance(stream, int):
            handle = stream
        elif isinstance(getattr(stream, "cuda_stream", None), int):
            handle = stream.cuda_stream
        else:
            raise TypeError(f"stream is of type {type(stream).__name__}; "
                            f"expected None, an integer handle or an object "
                            f"with cuda_stream")
        dlpack_stream = None
        if on_gpu:
            # DLPack numbers CUDA's legacy default stream 1 (0 is ambiguous).
            dlpack_stream = handle or (1 if self._device[0] == "cuda" else 0)
        buffers = [
            _buffers.scalar_buffer(value, f"kernel '{self._name}': arg '{arg}'")
            if scalar else
            _buffers.to_buffer(value, f"kernel '{self._name}': arg '{arg}'",
                               self._device, output, dlpack_stream)
            for value, arg, output, scalar in zip(values, self._args,
                                                  self._outputs, self._scalars)
        ]
        self._handle.launch([(b.data, b.dtype, b.shape) for b in buffers],
                            handle)

    def _bind(self, tensors, named):
        """The argument values in launch order, from positional and named
        ones, as Python binds a call."""
        names = self._args
        signature = f"kernel '{self._name}' takes {len(names)} args " \
                    f"({', '.join(names)})"
        if len(tensors) > len(names):
            raise TypeError(f"{signature}, got {len(tensors)}")
        values = list(tensors) + [_MISSING] * (len(names) - len(tensors))
        for key, value in named.items():
            i = self._index.get(key)
            if i is None:
                raise TypeError(f"{signature}; it has no arg '{key}'")
            if values[i] is not _MISSING:
                raise TypeError(f"{signature}; arg '{key}' is given twice")
            values[i] = value
        missing = [n for n, v in zip(names, values) if v is _MISSING]
        if missing:
            raise TypeError(f"{signature}; missing: {', '.join(missing)}")
        return values


class Bundle:
    """A kernel bundle made by tessel-aot (or tessel.compile), loaded on a
    device: for each kernel name, the kernel of the device's most preferred
    target that the bundle has.

    `source` is a path (str or os.PathLike) or the bundle's bytes (any
    bytes-like object). The whole bundle is validated first: a damaged one
    fails with tessel.Error (StatusCode.CORRUPT_BUNDLE).
    """

    def __init__(self, device: "_tessel.Device", source):
        if isinstance(source, (str, os.PathLike)):
            handle = _tessel.Bundle.load_file(device, os.fsdecode(source))
        else:
            try:
                data = memoryview(source)
            except TypeError:
                raise TypeError(f"a bundle source is a path or bytes-like, "
                                f"not {type(source).__name__}") from None
            handle = _tessel.Bundle.load_memory(device, data)
        self._device = device
        self._handle = handle
        self._kernels = tuple(Kernel(self, k) for k in handle.kernels())
        self._by_name = {k.name: k for k in self._kernels}
        # find()'s answers: a loaded bundle never changes, and tessel.torch
        # looks its kernels up on every call.
        self._found: Dict[tuple, Kernel] = {}

    @property
    def device(self) -> "_tessel.Device":
        return self._device

    @property
    def kernels(self) -> Tuple[Kernel, ...]:
        """The loaded kernels, in bundle order."""
        return self._kernels

    def __len__(self) -> int:
        return len(self._kernels)

    def __iter__(self) -> Iterator[Kernel]:
        return iter(self._kernels)

    def __contains__(self, name) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> Kernel:
        """The kernel of this name; tessel.Error (NOT_FOUND) naming the
        kernels there are if there is none."""
        kernel = self._by_name.get(name)
        if kernel is None:
            kernel = self._kernels[self._handle.find(name)]
        return kernel

    def find(self, op: str, dtype=None, **params: int) -> Kernel:
        """The first kernel of `op` ('grouped_matmul' or
        'tessel.grouped_matmul'), of `dtype` if given (a name such as 'bf16',
        a torch or numpy dtype), whose shape parameters include `params`;
        tessel.Error (NOT_FOUND) listing the kernels of the op otherwise."""
        full_op = op if "." in op else "tessel." + op
        code = 0 if dtype is None else _tessel.DTYPES[_buffers.dtype_name(dtype)]
        pairs = [(key, operator.index(value)) for key, value in params.items()]
        key = (full_op, code, tuple(sorted(pairs)))
        kernel = self._found.get(key)
        if kernel is None:
            kernel = self._kernels[self._handle.find_by_params(full_op, code,
                                                               pairs)]
            self._found[key] = kernel
        return kernel

    def __repr__(self) -> str:
        return (f"<tessel.Bundle on {self._device!r}: "
                f"{', '.join(self._by_name)}>")
