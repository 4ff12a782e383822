"""Tessel's attention kernels as eager torch functions, compiled on miss.

    import tessel.ops
    out, lse = tessel.ops.prefill(q, k, v, cu_seqlens, return_lse=True)
    out = tessel.ops.decode(q, k_cache, v_cache, block_table, seq_lens)
    out = tessel.ops.lse_merge(out_a, lse_a, out_b, lse_b)

Each call writes the spec of the kernel its inputs need (tessel.specs) and
gets it from the kernel cache (tessel.cache: compiled by tessel-aot for the
tensors' device on the first miss, then loaded from the cache directory),
so any head size the compiler supports works without a hand-written spec.
Outputs are allocated here, in q's dtype (out) and float32 (lse), on q's
device, and computed on torch's current stream. Engines that ship AOT
bundles use tessel.Attention or Bundle.find instead.
"""

from typing import Optional

import torch

from . import _checks, _tessel, specs
from .cache import KernelCache, default_cache

_DTYPES = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32"}
_devices = {}


def _device(t: torch.Tensor) -> _tessel.Device:
    key = (t.device.type, t.device.index or 0)
    if key not in _devices:
        kind = {"cpu": "host", "cuda": "cuda"}.get(key[0])
        if kind is None:
            raise ValueError(f"tessel.ops: tensors on {t.device} are not "
                             f"supported (cpu or cuda)")
        _devices[key] = _tessel.Device(kind, key[1])
    return _devices[key]


def _check(fn: str, name: str, t, rank: int, layout: str, dtype=None):
    _checks.tensor(f"tessel.ops.{fn}", name, t, rank, layout)
    if dtype is not None and t.dtype != dtype:
        raise TypeError(f"tessel.ops.{fn}: '{name}' must be {dtype}, got "
                        f"{t.dtype}")


def _element(fn: str, q: torch.Tensor, *others) -> str:
    """The element type of q, which `others` (name, tensor) share, as are
    they on its device."""
    if q.dtype not in _DTYPES:
        raise TypeError(f"tessel.ops.{fn}: 'q' is {q.dtype}; the kernels "
                        f"take bfloat16, float16 or float32")
    _checks.like(f"tessel.ops.{fn}", "q", q, others)
    return _DTYPES[q.dtype]


def _scale(softmax_scale: Optional[float], head_dim: int) -> float:
    return head_dim ** -0.5 if not softmax_scale else float(softmax_scale)


def prefill(q, k, v, cu_seqlens, *, causal: bool = True,
            softmax_scale: Optional[float] = None, return_lse: bool = False,
            cache: Optional[KernelCache] = None):
    """Varlen attention of q [T, Hq, D] over k [T, Hkv, D], v [T, Hkv, Dv]
    (sequence s: rows cu_seqlens[s] .. cu_seqlens[s + 1], int32 [S + 1]);
    causal by default; scale 1/sqrt(D) unless given. out [T, Hq, Dv], and
    with `return_lse` (out, lse [Hq, T] float32)."""
    fn = "prefill"
    _check(fn, "q", q, 3, "[T, Hq, D]")
    _check(fn, "k", k, 3, "[T, Hkv, D]")
    _check(fn, "v", v, 3, "[T, Hkv, Dv]")
    _check(fn, "cu_seqlens", cu_seqlens, 1, "[S + 1]", torch.int32)
    e = _element(fn, q, ("k", k), ("v", v))
    T, hq, d = q.shape
    hkv, dv = k.shape[1], v.shape[2]
    if k.shape[2] != d or v.shape[1] != hkv or k.shape[0] != v.shape[0]:
        raise ValueError(f"tessel.ops.{fn}: q {list(q.shape)}, k "
                         f"{list(k.shape)} and v {list(v.shape)} must be "
                         f"[T, Hq, D], [T, Hkv, D] and [T, Hkv, Dv]")
    name = (f"prefill_{e}_q{hq}_kv{hkv}_d{d}_v{dv}"
            f"{'_causal' if causal else ''}{'_lse' if return_lse else ''}")
    kernel = (cache or default_cache()).kernel(
        _device(q), name, specs.prefill(name, hq, hkv, d, v_head_dim=dv,
                                        dtype=e, causal=causal,
                                        lse=return_lse))
    out = q.new_empty(T, hq, dv)
    tensors = [q.contiguous(), k.contiguous(), v.contiguous(), cu_seqlens,
               out]
    lse = None
    if return_lse:
        lse = torch.empty(hq, T, dtype=torch.float32, device=q.device)
        tensors.append(lse)
    kernel(*tensors, _scale(softmax_scale, d))
    return (out, lse) if return_lse else out


def decode(q, k_cache, v_cache, block_table, seq_lens, *,
           softmax_scale: Optional[float] = None,
           cache: Optional[KernelCache] = None):
    """Paged decode: q [B, Hq, D], one token a request, over NHD caches
    [blocks, block_size, Hkv, D] through block_table [B, max_blocks] and
    seq_lens [B] (both int32); out [B, Hq, D]."""
    fn = "decode"
    _check(fn, "q", q, 3, "[B, Hq, D]")
    _check(fn, "k_cache", k_cache, 4, "[blocks, block_size, Hkv, D]")
    _check(fn, "v_cache", v_cache, 4, "[blocks, block_size, Hkv, D]")
    _check(fn, "block_table", block_table, 2, "[B, max_blocks]", torch.int32)
    _check(fn, "seq_lens", seq_lens, 1, "[B]", torch.int32)
    e = _element(fn, q, ("k_cache", k_cache), ("v_cache", v_cache))
    B, hq, d = q.shape
    _, bs, hkv, dk = k_cache.shape
    if dk != d or v_cache.shape != k_cache.shape:
        raise ValueError(f"tessel.ops.{fn}: k_cache and v_cache must both be "
                         f"[blocks, block_size, Hkv, D] with q's D = {d}, "
                         f"got {list(k_cache.shape)} and "
                         f"{list(v_cache.shape)}")
    name = f"decode_{e}_q{hq}_kv{hkv}_d{d}_bs{bs}_nhd"
    kernel = (cache or default_cache()).kernel(
        _device(q), name, specs.decode(name, hq, hkv, d, bs, dtype=e))
    out = q.new_empty(B, hq, d)
    kernel(q.contiguous(), k_cache, v_cache, block_table, seq_lens, out,
           _scale(softmax_scale, d))
    return out


def lse_merge(out_a, lse_a, out_b, lse_b, *, out_dtype=torch.bfloat16,
              cache: Optional[KernelCache] = None):
    """Merges two attention partials over disjoint key sets: out_* [T, H, D]
    float32 with their LSEs lse_* [H, T] float32 (-inf: no keys) into
    out [T, H, D] of `out_dtype`."""
    fn = "lse_merge"
    for name, t in (("out_a", out_a), ("out_b", out_b)):
        _check(fn, name, t, 3, "[T, H, D]", torch.float32)
    for name, t in (("lse_a", lse_a), ("lse_b", lse_b)):
        _check(fn, name, t, 2, "[H, T]", torch.float32)
    T, h, d = out_a.shape
    if out_b.shape != out_a.shape or lse_a.shape != (h, T) or \
            lse_b.shape != (h, T):
        raise ValueError(f"tessel.ops.{fn}: out_a, out_b [T, H, D] and "
                         f"lse_a, lse_b [H, T] must agree, got "
                         f"{list(out_a.shape)}, {list(out_b.shape)}, "
                         f"{list(lse_a.shape)} and {list(lse_b.shape)}")
    if out_dtype not in _DTYPES:
        raise TypeError(f"tessel.ops.{fn}: out_dtype {out_dtype} is not "
                        f"bfloat16, float16 or float32")
    e = _DTYPES[out_dtype]
    name = f"lse_merge_h{h}_d{d}_{e}"
    kernel = (cache or default_cache()).kernel(
        _device(out_a), name, specs.lse_merge(name, h, d, out_dtype=e))
    out = torch.empty(T, h, d, dtype=out_dtype, device=out_a.device)
    kernel(out_a.contiguous(), lse_a.contiguous(), out_b.contiguous(),
           lse_b.contiguous(), out)
    return out


__all__ = ["decode", "lse_merge", "prefill"]
