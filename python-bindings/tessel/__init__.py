"""Tessel from Python: load kernel bundles made by tessel-aot and launch their
kernels on torch tensors, numpy arrays or DLPack objects; compile kernel specs
where the compiler is installed.

    import tessel
    dev = tessel.Device("host")                      # "cuda" / "hip", ordinal
    bundle = tessel.Bundle(dev, "kernels.tsb")       # or bytes
    kernel = bundle["prefill_f32_h4kv2_d64"]         # or bundle.find(op, ...)
    kernel(q, k, v, cu_seqlens, out, lse)            # arguments in kernel.args order

    data = tessel.compile(spec_text, targets=["host"])   # needs tessel-aot

tessel.Attention is the attention dispatcher (decode / extend / prefill of
one mixed batch; docs/dispatcher.md), tessel.permute_rows applies its order
to a batch's per-request state. Errors of the runtime are tessel.Error, with the runtime's `code`
(tessel.StatusCode) and `message`.
"""

from ._tessel import Device, Error, StatusCode
from .attention import Attention, Plan, permute_rows
from .compiler import CompileError, compile
from .runtime import Bundle, Kernel

__all__ = ["Attention", "Bundle", "CompileError", "Device", "Error", "Kernel",
           "Plan", "StatusCode", "compile", "permute_rows"]
