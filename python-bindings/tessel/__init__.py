"""Tessel from Python: load kernel bundles made by tessel-aot and launch their
kernels on torch tensors, numpy arrays or DLPack objects; compile kernel specs
where the compiler is installed.

    import tessel
    dev = tessel.Device("host")                      # "cuda" / "hip", ordinal
    bundle = tessel.Bundle(dev, "kernels.tsb")       # or bytes
    kernel = bundle["prefill_f32_h4kv2_d64"]         # or bundle.find(op, ...)
    kernel(q, k, v, cu_seqlens, out, lse)            # arguments in kernel.args order

    data = tessel.compile(spec_text, targets=["host"])   # needs tessel-aot
    import tessel.specs                  # spec writers: no torch, no native module
    import tessel.ops                    # torch functions, compiled on miss

tessel.Attention is the attention dispatcher (decode / extend / prefill of
one mixed batch; docs/dispatcher.md), tessel.permute_rows applies its order
to a batch's per-request state. Errors of the runtime are tessel.Error,
with the runtime's `code` (tessel.StatusCode) and `message`.
"""

import importlib

# Each name's module, imported on first use: tessel.specs and
# tessel.compile work where the native module (or torch) is missing.
_EXPORTS = {"Device": "_tessel", "Error": "_tessel", "StatusCode": "_tessel",
            "Attention": "attention", "Plan": "attention",
            "permute_rows": "attention", "shuffle_kv_caches": "attention",
            "nhd_kv_caches": "attention", "CompileError": "compiler",
            "compile": "compiler", "Bundle": "runtime", "Kernel": "runtime",
            "KernelCache": "cache"}


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'tessel' has no attribute '{name}'")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__),
                    name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))


__all__ = sorted(_EXPORTS)
