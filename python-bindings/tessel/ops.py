"""Tessel's attention kernels as eager torch functions, compiled on miss.

    import tessel.ops
    out, lse = tessel.ops.prefill(q, k, v, cu_seqlens, return_lse=True)
    out = tessel.ops.decode(q, k_cache, v_cache, block_table, seq_lens)
    out = tessel.ops.lse_merge(out_a, lse_a, out_b, lse_b)
    out = tessel.ops.lse_merge_n(partials, partial_lse)
    out = tessel.ops.unified(q, k_cache, v_cache, block_table, seq_lens,
                             cu_seqlens)
    out, lse = tessel.ops.mla_decode(q, kv_cache, block_table, seq_lens)
    tessel.ops.reshape_and_cache(k, v, k_cache, v_cache, slot_mapping)
    offsets, sorted_rows, row_positions = tessel.ops.expert_sort(topk_ids, E)
    xs = tessel.ops.moe_permute(x, sorted_rows, topk)
    y = tessel.ops.moe_unpermute(ys, row_positions, topk_weights)
    c = tessel.ops.grouped_mm(a, b, group_offsets)   # differentiable

Each call writes the spec of the kernel its inputs need (tessel.specs) and
gets it from the kernel cache (tessel.cache: compiled by tessel-aot for the
tensors' device on the first miss, then loaded from the cache directory),
so any head size the compiler supports works without a hand-written spec.
Outputs are allocated here, in q's dtype (out) and float32 (lse), on q's
device, and computed on torch's current stream. On torch >= 2.4 they run
as torch.library operators (torch.ops.tessel.*, with fake kernels): they
trace under torch.compile(fullgraph=True) and replay in CUDA graphs. Engines
that ship AOT bundles use tessel.Attention or Bundle.find instead.
"""

from typing import Optional, Tuple

import torch

from . import _checks, _tessel, specs
from .cache import KernelCache, default_cache
from .kernel_specs import kernel_spec

_DTYPES = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32"}
_devices = {}


def device_of(t: torch.Tensor) -> _tessel.Device:
    """The tessel.Device of a cpu or cuda tensor."""
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


def _supported(fn: str, name: str, t: torch.Tensor) -> str:
    """The element type of `t`, one the kernels take."""
    if t.dtype not in _DTYPES:
        raise TypeError(f"tessel.ops.{fn}: '{name}' is {t.dtype}; the "
                        f"kernels take bfloat16, float16 or float32")
    return _DTYPES[t.dtype]


def _element(fn: str, q: torch.Tensor, *others) -> str:
    """The element type of q, which `others` (name, tensor) share, as are
    they on its device."""
    e = _supported(fn, "q", q)
    _checks.like(f"tessel.ops.{fn}", "q", q, others)
    return e


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
    _element(fn, q, ("k", k), ("v", v))
    d = q.shape[2]
    if k.shape[2] != d or v.shape[1] != k.shape[1] or \
            k.shape[0] != v.shape[0]:
        raise ValueError(f"tessel.ops.{fn}: q {list(q.shape)}, k "
                         f"{list(k.shape)} and v {list(v.shape)} must be "
                         f"[T, Hq, D], [T, Hkv, D] and [T, Hkv, Dv]")
    args = (q.contiguous(), k.contiguous(), v.contiguous(), cu_seqlens,
            causal, _scale(softmax_scale, d), return_lse)
    out, lse = _run_prefill(*args, cache) if cache or not _OPS else \
        torch.ops.tessel.prefill(*args)
    return (out, lse) if return_lse else out


def _run_prefill(q, k, v, cu_seqlens, causal, scale, return_lse, cache):
    """(out, lse), lse empty [0] without `return_lse`."""
    e = _DTYPES[q.dtype]
    T, hq, d = q.shape
    hkv, dv = k.shape[1], v.shape[2]
    name = (f"prefill_{e}_q{hq}_kv{hkv}_d{d}_v{dv}"
            f"{'_causal' if causal else ''}{'_lse' if return_lse else ''}")
    kernel = (cache or default_cache()).kernel(
        device_of(q), name, specs.prefill(name, hq, hkv, d, v_head_dim=dv,
                                        dtype=e, causal=causal,
                                        lse=return_lse))
    out = q.new_empty(T, hq, dv)
    lse = torch.empty((hq, T) if return_lse else (0,), dtype=torch.float32,
                      device=q.device)
    kernel(q, k, v, cu_seqlens, out, *([lse] if return_lse else []), scale)
    return out, lse


def _check_paged(fn: str, q, q_layout: str, k_cache, v_cache, block_table,
                 seq_lens) -> int:
    """Checks q and its NHD caches, block table and lengths; returns D."""
    _check(fn, "q", q, 3, q_layout)
    _check(fn, "k_cache", k_cache, 4, "[blocks, block_size, Hkv, D]")
    _check(fn, "v_cache", v_cache, 4, "[blocks, block_size, Hkv, D]")
    _check(fn, "block_table", block_table, 2, "[B, max_blocks]", torch.int32)
    _check(fn, "seq_lens", seq_lens, 1, "[B]", torch.int32)
    _element(fn, q, ("k_cache", k_cache), ("v_cache", v_cache))
    d = q.shape[2]
    if k_cache.shape[3] != d or v_cache.shape != k_cache.shape:
        raise ValueError(f"tessel.ops.{fn}: k_cache and v_cache must both be "
                         f"[blocks, block_size, Hkv, D] with q's D = {d}, "
                         f"got {list(k_cache.shape)} and "
                         f"{list(v_cache.shape)}")
    return d


def decode(q, k_cache, v_cache, block_table, seq_lens, *,
           softmax_scale: Optional[float] = None,
           cache: Optional[KernelCache] = None):
    """Paged decode: q [B, Hq, D], one token a request, over NHD caches
    [blocks, block_size, Hkv, D] through block_table [B, max_blocks] and
    seq_lens [B] (both int32); out [B, Hq, D]."""
    d = _check_paged("decode", q, "[B, Hq, D]", k_cache, v_cache,
                     block_table, seq_lens)
    args = (q.contiguous(), k_cache, v_cache, block_table, seq_lens,
            _scale(softmax_scale, d))
    if cache or not _OPS:
        return _run_decode(*args, cache)
    return torch.ops.tessel.decode(*args)


def _paged_kernel(role: str, writer, q, k_cache, cache):
    """The kernel of the paged op `role` for q [.., Hq, D] and an NHD
    k_cache [NB, BS, Hkv, D], its spec by writer(name, hq, hkv, d, bs,
    dtype=...) (tessel.specs.decode or unified)."""
    e = _DTYPES[q.dtype]
    hq, d = q.shape[-2:]
    _, bs, hkv, _ = k_cache.shape
    name = f"{role}_{e}_q{hq}_kv{hkv}_d{d}_bs{bs}_nhd"
    return (cache or default_cache()).kernel(
        device_of(q), name, writer(name, hq, hkv, d, bs, dtype=e))


def _run_decode(q, k_cache, v_cache, block_table, seq_lens, scale, cache):
    kernel = _paged_kernel("decode", specs.decode, q, k_cache, cache)
    out = torch.empty_like(q)
    kernel(q, k_cache, v_cache, block_table, seq_lens, out, scale)
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
    args = (out_a.contiguous(), lse_a.contiguous(), out_b.contiguous(),
            lse_b.contiguous(), out_dtype)
    if cache or not _OPS:
        return _run_lse_merge(*args, cache)
    return torch.ops.tessel.lse_merge(*args)


def _run_lse_merge(out_a, lse_a, out_b, lse_b, out_dtype, cache):
    T, h, d = out_a.shape
    e = _DTYPES[out_dtype]
    name = f"lse_merge_h{h}_d{d}_{e}"
    kernel = (cache or default_cache()).kernel(
        device_of(out_a), name, specs.lse_merge(name, h, d, out_dtype=e))
    out = torch.empty(T, h, d, dtype=out_dtype, device=out_a.device)
    kernel(out_a, lse_a, out_b, lse_b, out)
    return out


def lse_merge_n(partials, partial_lse, *, out_dtype=torch.bfloat16,
                cache: Optional[KernelCache] = None):
    """Merges S attention partials over disjoint key sets (split-KV):
    partials [S, T, H, D] float32 with their LSEs partial_lse [S, H, T]
    float32 (-inf: no keys) into out [T, H, D] of `out_dtype`."""
    fn = "lse_merge_n"
    _check(fn, "partials", partials, 4, "[S, T, H, D]", torch.float32)
    _check(fn, "partial_lse", partial_lse, 3, "[S, H, T]", torch.float32)
    S, T, h, d = partials.shape
    if partial_lse.shape != (S, h, T):
        raise ValueError(f"tessel.ops.{fn}: partials [S, T, H, D] and "
                         f"partial_lse [S, H, T] must agree, got "
                         f"{list(partials.shape)} and "
                         f"{list(partial_lse.shape)}")
    if out_dtype not in _DTYPES:
        raise TypeError(f"tessel.ops.{fn}: out_dtype {out_dtype} is not "
                        f"bfloat16, float16 or float32")
    args = (partials.contiguous(), partial_lse.contiguous(), out_dtype)
    if cache or not _OPS:
        return _run_lse_merge_n(*args, cache)
    return torch.ops.tessel.lse_merge_n(*args)


def _run_lse_merge_n(partials, partial_lse, out_dtype, cache):
    _, T, h, d = partials.shape
    e = _DTYPES[out_dtype]
    name = f"lse_merge_n_h{h}_d{d}_{e}"
    kernel = (cache or default_cache()).kernel(
        device_of(partials), name, specs.lse_merge_n(name, h, d, out_dtype=e))
    out = torch.empty(T, h, d, dtype=out_dtype, device=partials.device)
    kernel(partials, partial_lse, out)
    return out


def unified(q, k_cache, v_cache, block_table, seq_lens, cu_seqlens, *,
            softmax_scale: Optional[float] = None,
            cache: Optional[KernelCache] = None):
    """Attention of a whole mixed batch (decodes, extends, prefills) in one
    kernel, as the dispatcher's unified mode runs it: request b's queries
    q[cu_seqlens[b]:cu_seqlens[b+1]] [T, Hq, D] are the last tokens of its
    sequence of seq_lens[b] tokens, which are all in the NHD caches
    [blocks, block_size, Hkv, D] already (write the new ones first, e.g.
    with reshape_and_cache); each attends causally to its sequence up to
    itself. block_table [B, max_blocks], seq_lens [B], cu_seqlens [B + 1]
    int32; out [T, Hq, D]."""
    fn = "unified"
    d = _check_paged(fn, q, "[T, Hq, D]", k_cache, v_cache, block_table,
                     seq_lens)
    _check(fn, "cu_seqlens", cu_seqlens, 1, "[B + 1]", torch.int32)
    _checks.same_device(f"tessel.ops.{fn}", "q", q,
                        [("block_table", block_table), ("seq_lens", seq_lens),
                         ("cu_seqlens", cu_seqlens)])
    B = seq_lens.shape[0]
    if block_table.shape[0] != B or cu_seqlens.shape[0] != B + 1:
        raise ValueError(f"tessel.ops.{fn}: block_table [B, max_blocks], "
                         f"seq_lens [B] and cu_seqlens [B + 1] must agree, "
                         f"got {list(block_table.shape)}, "
                         f"{list(seq_lens.shape)} and "
                         f"{list(cu_seqlens.shape)}")
    args = (q.contiguous(), k_cache, v_cache, block_table, seq_lens,
            cu_seqlens, _scale(softmax_scale, d))
    if cache or not _OPS:
        return _run_unified(*args, cache)
    return torch.ops.tessel.unified(*args)


def _run_unified(q, k_cache, v_cache, block_table, seq_lens, cu_seqlens,
                 scale, cache):
    kernel = _paged_kernel("unified", specs.unified, q, k_cache, cache)
    out = torch.empty_like(q)
    kernel(q, k_cache, v_cache, block_table, cu_seqlens, seq_lens, out, scale)
    return out


def mla_decode(q, kv_cache, block_table, seq_lens, *,
               softmax_scale: Optional[float] = None, latent_dim: int = 512,
               cache: Optional[KernelCache] = None):
    """Absorbed MLA decode (DeepSeek): q [B, H, L + R] bf16, one token a
    request, over a latent cache [blocks, block_size, L + R] through
    block_table [B, max_blocks] and seq_lens [B] (int32); the first L
    columns are also the values. (out [B, H, L] bf16, lse [H, B] float32);
    scale 1/sqrt(L + R) unless given."""
    fn = "mla_decode"
    _check(fn, "q", q, 3, "[B, H, L + R]", torch.bfloat16)
    _check(fn, "kv_cache", kv_cache, 3, "[blocks, block_size, L + R]",
           torch.bfloat16)
    _check(fn, "block_table", block_table, 2, "[B, max_blocks]", torch.int32)
    _check(fn, "seq_lens", seq_lens, 1, "[B]", torch.int32)
    _checks.like(f"tessel.ops.{fn}", "q", q, [("kv_cache", kv_cache)])
    width = q.shape[2]
    if kv_cache.shape[2] != width or not 0 < latent_dim < width:
        raise ValueError(f"tessel.ops.{fn}: q {list(q.shape)} and kv_cache "
                         f"{list(kv_cache.shape)} must share their last "
                         f"dimension L + R, with L = {latent_dim} < L + R")
    args = (q.contiguous(), kv_cache, block_table, seq_lens,
            _scale(softmax_scale, width), latent_dim)
    if cache or not _OPS:
        return _run_mla_decode(*args, cache)
    return torch.ops.tessel.mla_decode(*args)


def _run_mla_decode(q, kv_cache, block_table, seq_lens, scale, latent_dim,
                    cache):
    B, h, width = q.shape
    bs = kv_cache.shape[1]
    name = f"mla_decode_h{h}_l{latent_dim}_r{width - latent_dim}_bs{bs}"
    kernel = (cache or default_cache()).kernel(
        device_of(q), name, specs.mla_decode(
            name, h, bs, latent_dim=latent_dim, rope_dim=width - latent_dim))
    out = q.new_empty(B, h, latent_dim)
    lse = torch.empty(h, B, dtype=torch.float32, device=q.device)
    kernel(q, kv_cache, block_table, seq_lens, out, lse, scale)
    return out, lse


def reshape_and_cache(k, v, k_cache, v_cache, slot_mapping, *,
                      cache: Optional[KernelCache] = None) -> None:
    """Writes new tokens' k, v [T, Hkv, D] into NHD caches [blocks,
    block_size, Hkv, D] in place: token t to slot slot_mapping[t] (int32;
    block slot // block_size, offset slot % block_size; negative:
    skipped)."""
    fn = "reshape_and_cache"
    _check(fn, "k", k, 3, "[T, Hkv, D]")
    _check(fn, "v", v, 3, "[T, Hkv, D]")
    _check(fn, "k_cache", k_cache, 4, "[blocks, block_size, Hkv, D]")
    _check(fn, "v_cache", v_cache, 4, "[blocks, block_size, Hkv, D]")
    _check(fn, "slot_mapping", slot_mapping, 1, "[T]", torch.int32)
    _supported(fn, "k", k)
    _checks.like(f"tessel.ops.{fn}", "k", k,
                 [("v", v), ("k_cache", k_cache), ("v_cache", v_cache)])
    if v.shape != k.shape or k_cache.shape != v_cache.shape or \
            k_cache.shape[2:] != k.shape[1:]:
        raise ValueError(f"tessel.ops.{fn}: k, v [T, Hkv, D] and the caches "
                         f"[blocks, block_size, Hkv, D] must agree, got "
                         f"{list(k.shape)}, {list(v.shape)}, "
                         f"{list(k_cache.shape)} and {list(v_cache.shape)}")
    args = (k.contiguous(), v.contiguous(), k_cache, v_cache, slot_mapping)
    if cache or not _OPS:
        _run_reshape_and_cache(*args, cache)
    else:
        torch.ops.tessel.reshape_and_cache(*args)


def _run_reshape_and_cache(k, v, k_cache, v_cache, slot_mapping, cache):
    e = _DTYPES[k.dtype]
    _, bs, hkv, d = k_cache.shape
    name = f"reshape_and_cache_{e}_kv{hkv}_d{d}_bs{bs}_nhd"
    kernel = (cache or default_cache()).kernel(
        device_of(k), name, specs.reshape_and_cache(name, hkv, d, bs,
                                                    dtype=e))
    kernel(k, v, k_cache, v_cache, slot_mapping)


#===----------------------------------------------------------------------===#
# The MoE routing glue: sort (token, slot) rows by expert, gather, combine
#===----------------------------------------------------------------------===#

def _glue_kernel(device, op, groups, cache, dtype=None, **params):
    """The kernel of `op` (on rows of `dtype`, if it moves any) for
    `groups` experts."""
    tag = "_".join(f"{k}{v}" for k, v in sorted(params.items()))
    name = f"{op}_{dtype or 'ids'}_e{groups}_{tag}"
    return (cache or default_cache()).kernel(
        device, name, kernel_spec(name, op, dtype or "i32", groups, **params))


def expert_sort(topk_ids, num_experts: int, *,
                cache: Optional[KernelCache] = None):
    """The stable expert order of the rows r = t * k + j of topk_ids [T, k]
    int32 (ids outside [0, num_experts) are dropped): group_offsets [E]
    (the cumulative end of each expert's rows), sorted_rows [T * k] (the
    row at each position, -1 past the placed ones) and row_positions [T, k]
    (each row's position, -1 if dropped), all int32."""
    fn = "expert_sort"
    _check(fn, "topk_ids", topk_ids, 2, "[T, k]", torch.int32)
    if num_experts < 1:
        raise ValueError(f"tessel.ops.{fn}: num_experts must be positive, "
                         f"got {num_experts}")
    if cache or not _OPS:
        return _run_expert_sort(topk_ids.contiguous(), num_experts, cache)
    return torch.ops.tessel.expert_sort(topk_ids.contiguous(), num_experts)


def _run_expert_sort(ids, num_experts, cache):
    T, k = ids.shape
    device = device_of(ids)
    counts = ids.new_empty(num_experts)
    offsets = ids.new_empty(num_experts)
    _glue_kernel(device, "expert_histogram", num_experts, cache,
                 topk=k)(ids, counts, offsets)
    sorted_rows = ids.new_empty(T * k)
    positions = torch.empty_like(ids)
    _glue_kernel(device, "expert_sort", num_experts, cache,
                 topk=k)(ids, offsets, sorted_rows, positions)
    return offsets, sorted_rows, positions


def moe_permute(x, sorted_rows, topk: int, *,
                cache: Optional[KernelCache] = None):
    """Token rows in expert order: out[p] = x[sorted_rows[p] / topk] for x
    [T, H] and sorted_rows [R] int32 (a negative entry gives a zero row);
    out [R, H]."""
    fn = "moe_permute"
    _check(fn, "x", x, 2, "[T, H]")
    _check(fn, "sorted_rows", sorted_rows, 1, "[R]", torch.int32)
    _supported(fn, "x", x)
    _checks.same_device(f"tessel.ops.{fn}", "x", x,
                        [("sorted_rows", sorted_rows)])
    args = (x.contiguous(), sorted_rows.contiguous(), topk)
    if cache or not _OPS:
        return _run_moe_permute(*args, cache)
    return torch.ops.tessel.moe_permute(*args)


def _run_moe_permute(x, sorted_rows, topk, cache):
    out = x.new_empty(sorted_rows.shape[0], x.shape[1])
    _glue_kernel(device_of(x), "moe_permute", 1, cache, _DTYPES[x.dtype],
                 hidden=x.shape[1], topk=topk)(x, sorted_rows, out)
    return out


def moe_unpermute(y, row_positions, weights, *,
                  cache: Optional[KernelCache] = None):
    """Each token's weighted sum of its expert rows: out[t] = sum_j
    weights[t, j] * y[row_positions[t, j]] (in fp32, j in order; a
    negative position adds nothing) for y [R, H], row_positions [T, k]
    int32 and weights [T, k] float32; out [T, H] in y's dtype."""
    fn = "moe_unpermute"
    _check(fn, "y", y, 2, "[R, H]")
    _check(fn, "row_positions", row_positions, 2, "[T, k]", torch.int32)
    _check(fn, "weights", weights, 2, "[T, k]", torch.float32)
    _supported(fn, "y", y)
    _checks.same_device(f"tessel.ops.{fn}", "y", y,
                        [("row_positions", row_positions),
                         ("weights", weights)])
    if weights.shape != row_positions.shape:
        raise ValueError(f"tessel.ops.{fn}: row_positions and weights must "
                         f"both be [T, k], got {list(row_positions.shape)} "
                         f"and {list(weights.shape)}")
    args = (y.contiguous(), row_positions.contiguous(), weights.contiguous())
    if cache or not _OPS:
        return _run_moe_unpermute(*args, cache)
    return torch.ops.tessel.moe_unpermute(*args)


def _run_moe_unpermute(y, row_positions, weights, cache):
    T, k = row_positions.shape
    out = y.new_empty(T, y.shape[1])
    _glue_kernel(device_of(y), "moe_unpermute", 1, cache, _DTYPES[y.dtype],
                 hidden=y.shape[1], topk=k)(y, row_positions, weights, out)
    return out


def grouped_mm(a, b, group_offsets, *, trans_b: bool = True,
               cache: Optional[KernelCache] = None):
    """c [T, N] = the rows of a [T, K] that the int32 cumulative ends
    `group_offsets` [G] give group g, times b[g].T (b [G, N, K], trans_b)
    or b[g] (b [G, K, N]); rows past the last end are zero.
    Differentiable in a and b: the backward pass runs the dgrad and wgrad
    kernels of the same spec (tessel.specs.grouped_mm), all three compiled
    together on the first miss. tessel.torch.grouped_mm takes an AOT
    bundle instead."""
    from .torch import check_grouped_mm, grouped_mm as eager
    check_grouped_mm("tessel.ops.grouped_mm", a, b, group_offsets)
    _checks.same_device("tessel.ops.grouped_mm", "a", a,
                        (("b", b), ("group_offsets", group_offsets)))
    if _OPS and cache is None:
        return torch.ops.tessel.grouped_mm(a.contiguous(), b.contiguous(),
                                           group_offsets, trans_b)
    return eager(a, b, group_offsets, cache, trans_b)


def moe_mlp(x, topk_ids, topk_weights, w_gate_up, w_down, *,
            cache: Optional[KernelCache] = None):
    """An MoE layer's routed experts as an operator: tessel.torch.moe_mlp
    with stacked weights, x [T, H], topk_ids [T, k] (ids outside [0, E)
    are dropped slots), topk_weights [T, k], w_gate_up [E, 2I, H] (each
    expert's gate rows, then its up rows), w_down [E, H, I]; out [T, H].
    Differentiable in x, topk_weights and both weights (its backward is an
    operator too, so torch.compile traces both passes)."""
    from . import moe
    moe.check_stacked("tessel.ops.moe_mlp", x, topk_ids, topk_weights,
                      w_gate_up, w_down)
    if cache or not _OPS:
        return moe.moe_mlp(x, topk_ids, topk_weights, w_gate_up, w_down,
                           cache)
    return torch.ops.tessel.moe_mlp(x, topk_ids.to(torch.int32), topk_weights,
                                    w_gate_up, w_down)[0]


#===----------------------------------------------------------------------===#
# torch.library operators (torch >= 2.4): torch.ops.tessel.*, with fake
# kernels for torch.compile's tracing; torch 1.13 runs the functions above
# eagerly. The operators use the default cache (an explicit `cache` runs
# eagerly).
#===----------------------------------------------------------------------===#

def _register() -> bool:
    custom_op = getattr(torch.library, "custom_op", None)
    if custom_op is None:
        return False
    Tensor = torch.Tensor

    @custom_op("tessel::prefill", mutates_args=())
    def prefill_op(q: Tensor, k: Tensor, v: Tensor, cu_seqlens: Tensor,
                   causal: bool, scale: float,
                   return_lse: bool) -> Tuple[Tensor, Tensor]:
        return _run_prefill(q, k, v, cu_seqlens, causal, scale, return_lse,
                            None)

    @prefill_op.register_fake
    def _(q, k, v, cu_seqlens, causal, scale, return_lse):
        T, hq, _ = q.shape
        return (q.new_empty(T, hq, v.shape[2]),
                q.new_empty((hq, T) if return_lse else (0,),
                            dtype=torch.float32))

    @custom_op("tessel::decode", mutates_args=())
    def decode_op(q: Tensor, k_cache: Tensor, v_cache: Tensor,
                  block_table: Tensor, seq_lens: Tensor,
                  scale: float) -> Tensor:
        return _run_decode(q, k_cache, v_cache, block_table, seq_lens, scale,
                           None)

    @decode_op.register_fake
    def _(q, k_cache, v_cache, block_table, seq_lens, scale):
        return torch.empty_like(q)

    @custom_op("tessel::lse_merge", mutates_args=())
    def lse_merge_op(out_a: Tensor, lse_a: Tensor, out_b: Tensor,
                     lse_b: Tensor, out_dtype: torch.dtype) -> Tensor:
        return _run_lse_merge(out_a, lse_a, out_b, lse_b, out_dtype, None)

    @lse_merge_op.register_fake
    def _(out_a, lse_a, out_b, lse_b, out_dtype):
        return torch.empty_like(out_a, dtype=out_dtype)

    @custom_op("tessel::lse_merge_n", mutates_args=())
    def lse_merge_n_op(partials: Tensor, partial_lse: Tensor,
                       out_dtype: torch.dtype) -> Tensor:
        return _run_lse_merge_n(partials, partial_lse, out_dtype, None)

    @lse_merge_n_op.register_fake
    def _(partials, partial_lse, out_dtype):
        return torch.empty_like(partials[0], dtype=out_dtype)

    @custom_op("tessel::unified", mutates_args=())
    def unified_op(q: Tensor, k_cache: Tensor, v_cache: Tensor,
                   block_table: Tensor, seq_lens: Tensor, cu_seqlens: Tensor,
                   scale: float) -> Tensor:
        return _run_unified(q, k_cache, v_cache, block_table, seq_lens,
                            cu_seqlens, scale, None)

    @unified_op.register_fake
    def _(q, k_cache, v_cache, block_table, seq_lens, cu_seqlens, scale):
        return torch.empty_like(q)

    @custom_op("tessel::expert_sort", mutates_args=())
    def expert_sort_op(topk_ids: Tensor,
                       num_experts: int) -> Tuple[Tensor, Tensor, Tensor]:
        return _run_expert_sort(topk_ids, num_experts, None)

    @expert_sort_op.register_fake
    def _(topk_ids, num_experts):
        T, k = topk_ids.shape
        return (topk_ids.new_empty(num_experts), topk_ids.new_empty(T * k),
                torch.empty_like(topk_ids))

    @custom_op("tessel::moe_permute", mutates_args=())
    def moe_permute_op(x: Tensor, sorted_rows: Tensor, topk: int) -> Tensor:
        return _run_moe_permute(x, sorted_rows, topk, None)

    @moe_permute_op.register_fake
    def _(x, sorted_rows, topk):
        return x.new_empty(sorted_rows.shape[0], x.shape[1])

    @custom_op("tessel::moe_unpermute", mutates_args=())
    def moe_unpermute_op(y: Tensor, row_positions: Tensor,
                         weights: Tensor) -> Tensor:
        return _run_moe_unpermute(y, row_positions, weights, None)

    @moe_unpermute_op.register_fake
    def _(y, row_positions, weights):
        return y.new_empty(row_positions.shape[0], y.shape[1])

    @custom_op("tessel::mla_decode", mutates_args=())
    def mla_decode_op(q: Tensor, kv_cache: Tensor, block_table: Tensor,
                      seq_lens: Tensor, scale: float,
                      latent_dim: int) -> Tuple[Tensor, Tensor]:
        return _run_mla_decode(q, kv_cache, block_table, seq_lens, scale,
                               latent_dim, None)

    @mla_decode_op.register_fake
    def _(q, kv_cache, block_table, seq_lens, scale, latent_dim):
        B, h, _ = q.shape
        return (q.new_empty(B, h, latent_dim),
                q.new_empty(h, B, dtype=torch.float32))

    @custom_op("tessel::reshape_and_cache",
               mutates_args=("k_cache", "v_cache"))
    def reshape_and_cache_op(k: Tensor, v: Tensor, k_cache: Tensor,
                             v_cache: Tensor, slot_mapping: Tensor) -> None:
        _run_reshape_and_cache(k, v, k_cache, v_cache, slot_mapping, None)

    # The grouped matmul and its backward: the backward is an operator of
    # its own, so that torch.compile traces both passes. (tessel.torch,
    # which launches them, imports this module.)
    @custom_op("tessel::grouped_mm", mutates_args=())
    def grouped_mm_op(a: Tensor, b: Tensor, group_offsets: Tensor,
                      trans_b: bool) -> Tensor:
        from .torch import grouped_mm_forward
        return grouped_mm_forward(None, a, b, group_offsets, trans_b)

    @grouped_mm_op.register_fake
    def _(a, b, group_offsets, trans_b):
        return a.new_empty(a.shape[0], b.shape[1] if trans_b else b.shape[2])

    @custom_op("tessel::grouped_mm_backward", mutates_args=())
    def grouped_mm_backward_op(dc: Tensor, a: Tensor, b: Tensor,
                               group_offsets: Tensor, trans_b: bool,
                               need_a: bool,
                               need_b: bool) -> Tuple[Tensor, Tensor]:
        from .torch import grouped_mm_backward
        da, db = grouped_mm_backward(None, dc, a, b, group_offsets, trans_b,
                                     need_a, need_b)
        # An operator returns tensors: an empty one for a gradient not
        # asked for.
        return (a.new_empty(0) if da is None else da,
                b.new_empty(0) if db is None else db)

    @grouped_mm_backward_op.register_fake
    def _(dc, a, b, group_offsets, trans_b, need_a, need_b):
        return (a.new_empty(a.shape if need_a else (0,)),
                b.new_empty(b.shape if need_b else (0,)))

    def setup_context(ctx, inputs, output):
        a, b, group_offsets, trans_b = inputs
        ctx.save_for_backward(a, b, group_offsets)
        ctx.trans_b = trans_b

    def backward(ctx, dc):
        a, b, group_offsets = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad[:2]
        da, db = torch.ops.tessel.grouped_mm_backward(
            dc.contiguous(), a, b, group_offsets, ctx.trans_b, need_a, need_b)
        return (da if need_a else None, db if need_b else None, None, None)

    grouped_mm_op.register_autograd(backward, setup_context=setup_context)
    _register_moe_mlp(custom_op)
    return True


def _register_moe_mlp(custom_op) -> None:
    """tessel::moe_mlp returns, after the output, what its backward keeps
    (sorted rows, row positions, group ends, the gate/up activations h);
    tessel::moe_mlp_backward takes them back. (tessel.moe, which imports
    this module, is imported where they run.)"""
    Tensor = torch.Tensor
    i32 = torch.int32

    @custom_op("tessel::moe_mlp", mutates_args=())
    def moe_mlp_op(x: Tensor, topk_ids: Tensor, topk_weights: Tensor,
                   w_gate_up: Tensor, w_down: Tensor
                   ) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        from . import moe
        plan = moe.stacked_plan(x, topk_ids, topk_weights, w_gate_up, w_down)
        out, kept = moe.forward(plan, x, topk_ids, topk_weights,
                                (w_gate_up, w_down))
        return (out, *kept)

    @moe_mlp_op.register_fake
    def _(x, topk_ids, topk_weights, w_gate_up, w_down):
        (T, k), (E, two_i, H) = topk_ids.shape, w_gate_up.shape
        return (x.new_empty(T, H), topk_ids.new_empty(T * k, dtype=i32),
                topk_ids.new_empty(T, k, dtype=i32),
                topk_ids.new_empty(E, dtype=i32),
                x.new_empty(1, T * k, two_i))

    @custom_op("tessel::moe_mlp_backward", mutates_args=())
    def moe_mlp_backward_op(dout: Tensor, x: Tensor, topk_ids: Tensor,
                            topk_weights: Tensor, sorted_rows: Tensor,
                            row_positions: Tensor, offsets: Tensor, h: Tensor,
                            w_gate_up: Tensor, w_down: Tensor, need_x: bool,
                            need_gate_up: bool, need_down: bool
                            ) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        from . import moe
        plan = moe.stacked_plan(x, topk_ids, topk_weights, w_gate_up, w_down)
        dx, d_w32, d_gate_up, d_down = moe.backward(
            plan, dout, x, topk_weights, (sorted_rows, row_positions, offsets,
                                          h), (w_gate_up, w_down), need_x,
            (need_gate_up, need_down))
        # An operator returns tensors: an empty one (each its own) for a
        # gradient not asked for.
        return tuple(g if g is not None else x.new_empty(0)
                     for g in (dx, d_w32, d_gate_up, d_down))

    @moe_mlp_backward_op.register_fake
    def _(dout, x, topk_ids, topk_weights, sorted_rows, row_positions,
          offsets, h, w_gate_up, w_down, need_x, need_gate_up, need_down):
        return (x.new_empty(x.shape if need_x else (0,)),
                topk_weights.new_empty(topk_weights.shape,
                                       dtype=torch.float32),
                w_gate_up.new_empty(w_gate_up.shape if need_gate_up else (0,)),
                w_down.new_empty(w_down.shape if need_down else (0,)))

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs[:3], *output[1:], *inputs[3:])

    def backward(ctx, dout, *unused):
        need_x, _, need_w, need_gate_up, need_down = ctx.needs_input_grad
        x, topk_ids, topk_weights, *rest = ctx.saved_tensors
        dx, d_w32, d_gate_up, d_down = torch.ops.tessel.moe_mlp_backward(
            dout.contiguous(), x, topk_ids, topk_weights, *rest, need_x,
            need_gate_up, need_down)
        return (dx if need_x else None, None,
                d_w32.to(topk_weights.dtype) if need_w else None,
                d_gate_up if need_gate_up else None,
                d_down if need_down else None)

    moe_mlp_op.register_autograd(backward, setup_context=setup_context)


_OPS = _register()

__all__ = ["decode", "expert_sort", "grouped_mm", "lse_merge", "lse_merge_n",
           "mla_decode", "moe_mlp", "moe_permute", "moe_unpermute", "prefill",
           "reshape_and_cache", "unified"]
