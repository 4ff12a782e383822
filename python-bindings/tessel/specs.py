"""Kernel specs (MLIR for tessel-aot or tessel.compile) of every op, from
its shapes: what a bundle must hold before the runtime can find a kernel.
Plain Python: importable without torch or the native module, so a spec can
be written on a machine that only compiles.

    import tessel.specs as specs
    text = (specs.dispatch_set("llama", 32, 8, 128, 16)      # tessel.Attention
            + specs.mla_decode("mla", 128, 64)
            + specs.moe_mlp(128, 2048, 512, 8, "bf16", "moe"))

Attention writers take the kernel name, the heads and head dim, and for
paged ops the block size and cache layout ('nhd' or 'shuffled'); element
types are 'bf16', 'f16' or 'f32'. Token, request and block counts are
dynamic; every attention kernel takes its softmax scale as a trailing f32
argument. The grouped-matmul and MoE writers describe each kernel once as
(op, shape params), the description that tessel.torch also finds it by.
"""

from typing import Dict, Iterable, List, Tuple

from .kernel_specs import kernel_spec, kernels_spec

# (keyword, [(SSA name, type), ...]) of one clause of an op.
_Clause = Tuple[str, List[Tuple[str, str]]]
_I32 = "memref<?xi32>"
_TABLE = "memref<?x?xi32>"


def _memref(*dims, dtype: str) -> str:
    return "memref<" + "x".join(str(d) for d in dims) + f"x{dtype}>"


def _kernel(name: str, op: str, clauses: List[_Clause], tail: str = "",
            scaled: bool = False) -> str:
    """One func.func around one tessel op; `tail`: the clauses and
    attributes after the operands; `scaled`: an attention op, whose softmax
    scale is the kernel's last argument (before the attribute dictionary)."""
    args = ", ".join(f"%{n}: {t}" for _, group in clauses for n, t in group)
    if scaled:
        args += ", %scale: f32"
        keywords, brace, attrs = tail.partition(" {")
        tail = keywords + " scale(%scale)" + brace + attrs
    body = " ".join(f"{kw}(" + ", ".join(f"%{n} : {t}" for n, t in group) +
                    ")" for kw, group in clauses)
    return (f"func.func @{name}({args}) {{\n  tessel.{op} {body}{tail}\n"
            f"  return\n}}\n")


def _caches(num_kv_heads: int, head_dim: int, v_head_dim: int,
            block_size: int, layout: str, dtype: str) -> List[_Clause]:
    """The k_cache and v_cache clauses in `layout` (docs/dispatcher.md):
    NHD [blocks, block_size, Hkv, D], or shuffled in 16-byte groups of x
    elements, k [blocks, Hkv, D/x, block_size, x] and v [blocks, Hkv,
    block_size/x, Dv, x]."""
    if layout == "nhd":
        k = _memref("?", block_size, num_kv_heads, head_dim, dtype=dtype)
        v = _memref("?", block_size, num_kv_heads, v_head_dim, dtype=dtype)
    elif layout == "shuffled":
        x = 16 // (4 if dtype == "f32" else 2)
        k = _memref("?", num_kv_heads, head_dim // x, block_size, x,
                    dtype=dtype)
        v = _memref("?", num_kv_heads, block_size // x, v_head_dim, x,
                    dtype=dtype)
    else:
        raise ValueError(f"tessel.specs: layout {layout!r} is not 'nhd' or "
                         f"'shuffled'")
    return [("k_cache", [("kc", k)]), ("v_cache", [("vc", v)])]


def prefill(name: str, num_q_heads: int, num_kv_heads: int, head_dim: int,
            *, v_head_dim: int = 0, dtype: str = "bf16", causal: bool = True,
            lse: bool = False, out_dtype: str = "") -> str:
    """tessel.prefill_attention over varlen q/k/v [T, H, D] (cu_seqlens);
    out [T, Hq, Dv] in `out_dtype` (default: dtype; 'f32' for an extend's
    partial), with `lse` also the LSE [Hq, T]."""
    dv = v_head_dim or head_dim
    clauses = [
        ("q", [("q", _memref("?", num_q_heads, head_dim, dtype=dtype))]),
        ("k", [("k", _memref("?", num_kv_heads, head_dim, dtype=dtype))]),
        ("v", [("v", _memref("?", num_kv_heads, dv, dtype=dtype))]),
        ("cu_seqlens", [("cu", _I32)]),
        ("out", [("out", _memref("?", num_q_heads, dv,
                                 dtype=out_dtype or dtype))])]
    if lse:
        clauses.append(("lse", [("lse", _memref(num_q_heads, "?",
                                                dtype="f32"))]))
    return _kernel(name, "prefill_attention", clauses,
                   " {causal}" if causal else "", scaled=True)


def decode(name: str, num_q_heads: int, num_kv_heads: int, head_dim: int,
           block_size: int, *, layout: str = "nhd", dtype: str = "bf16",
           lse: bool = False) -> str:
    """tessel.decode_attention: one query token a request, over a paged
    cache (block_table, seq_lens); out [B, Hq, D], with `lse` the LSE
    [Hq, B]."""
    clauses = [("q", [("q", _memref("?", num_q_heads, head_dim,
                                    dtype=dtype))])]
    clauses += _caches(num_kv_heads, head_dim, head_dim, block_size, layout,
                       dtype)
    clauses += [("block_table", [("bt", _TABLE)]),
                ("seq_lens", [("sl", _I32)]),
                ("out", [("out", _memref("?", num_q_heads, head_dim,
                                         dtype=dtype))])]
    if lse:
        clauses.append(("lse", [("lse", _memref(num_q_heads, "?",
                                                dtype="f32"))]))
    return _kernel(name, "decode_attention", clauses, f" layout({layout})",
                   scaled=True)


def paged(name: str, num_q_heads: int, num_kv_heads: int, head_dim: int,
          block_size: int, *, v_head_dim: int = 0, layout: str = "nhd",
          dtype: str = "bf16", cu_seqlens: bool = False) -> str:
    """tessel.paged_attention in split form: f32 partials [S, T, Hq, Dv]
    and LSE [S, Hq, T] over a paged cache; one query token a request (the
    decodes' split-KV), or with `cu_seqlens` varlen queries over their
    context (the extends' context chunks)."""
    dv = v_head_dim or head_dim
    clauses = [("q", [("q", _memref("?", num_q_heads, head_dim,
                                    dtype=dtype))])]
    clauses += _caches(num_kv_heads, head_dim, dv, block_size, layout, dtype)
    clauses.append(("block_table", [("bt", _TABLE)]))
    if cu_seqlens:
        clauses.append(("cu_seqlens", [("cu", _I32)]))
    clauses += [("context_lens", [("cl", _I32)]),
                ("out", [("out", _memref("?", "?", num_q_heads, dv,
                                         dtype="f32"))]),
                ("lse", [("lse", _memref("?", num_q_heads, "?",
                                         dtype="f32"))])]
    return _kernel(name, "paged_attention", clauses, f" layout({layout})",
                   scaled=True)


def unified(name: str, num_q_heads: int, num_kv_heads: int, head_dim: int,
            block_size: int, *, v_head_dim: int = 0, layout: str = "nhd",
            dtype: str = "bf16", split: bool = False) -> str:
    """tessel.paged_attention, causal, with cu_seqlens: the dispatcher's
    unified mode, every request's queries (the last tokens of its
    sequence, already in the cache) over its whole sequence (context_lens
    = seq_lens). out [T, Hq, Dv] in dtype; with `split`, f32 partials
    [S, T, Hq, Dv] and LSE [S, Hq, T] of S windows (merged by
    lse_merge_n)."""
    dv = v_head_dim or head_dim
    clauses = [("q", [("q", _memref("?", num_q_heads, head_dim,
                                    dtype=dtype))])]
    clauses += _caches(num_kv_heads, head_dim, dv, block_size, layout, dtype)
    clauses += [("block_table", [("bt", _TABLE)]),
                ("cu_seqlens", [("cu", _I32)]),
                ("context_lens", [("sl", _I32)])]
    if split:
        clauses += [("out", [("out", _memref("?", "?", num_q_heads, dv,
                                             dtype="f32"))]),
                    ("lse", [("lse", _memref("?", num_q_heads, "?",
                                             dtype="f32"))])]
    else:
        clauses.append(("out", [("out", _memref("?", num_q_heads, dv,
                                                dtype=dtype))]))
    return _kernel(name, "paged_attention", clauses,
                   f" causal layout({layout})", scaled=True)


def lse_merge(name: str, num_heads: int, head_dim: int, *,
              out_dtype: str = "bf16", lse_out: bool = False,
              dtype: str = "f32") -> str:
    """tessel.lse_merge of two partials (out [T, H, D] of `dtype`, LSE
    [H, T] f32) into out [T, H, D] of `out_dtype`; with `lse_out`, also
    the merged LSE (an accumulator that a later merge folds more into)."""
    part = _memref("?", num_heads, head_dim, dtype=dtype)
    lse = _memref(num_heads, "?", dtype="f32")
    clauses = [("a", [("oa", part), ("la", lse)]),
               ("b", [("ob", part), ("lb", lse)]),
               ("out", [("out", _memref("?", num_heads, head_dim,
                                        dtype=out_dtype))])]
    if lse_out:
        clauses.append(("lse_out", [("lo", lse)]))
    return _kernel(name, "lse_merge", clauses)


def lse_merge_n(name: str, num_heads: int, head_dim: int, *,
                out_dtype: str = "bf16", lse_out: bool = False,
                dtype: str = "f32") -> str:
    """tessel.lse_merge_n of S partials [S, T, H, D] of `dtype` (LSE
    [S, H, T] f32) into out [T, H, D]; with `lse_out`, also the merged
    LSE [H, T]."""
    clauses = [
        ("partials", [("p", _memref("?", "?", num_heads, head_dim,
                                    dtype=dtype)),
                      ("pl", _memref("?", num_heads, "?", dtype="f32"))]),
        ("out", [("out", _memref("?", num_heads, head_dim,
                                 dtype=out_dtype))])]
    if lse_out:
        clauses.append(("lse_out", [("lo", _memref(num_heads, "?",
                                                   dtype="f32"))]))
    return _kernel(name, "lse_merge_n", clauses)


def reshape_and_cache(name: str, num_kv_heads: int, head_dim: int,
                      block_size: int, *, v_head_dim: int = 0,
                      layout: str = "nhd", dtype: str = "bf16") -> str:
    """tessel.reshape_and_cache: new tokens' k [T, Hkv, D] and v [T, Hkv,
    Dv] into their slots of the caches (slot_mapping; negative:
    skipped)."""
    dv = v_head_dim or head_dim
    return _kernel(name, "reshape_and_cache",
                   [("k", [("k", _memref("?", num_kv_heads, head_dim,
                                         dtype=dtype))]),
                    ("v", [("v", _memref("?", num_kv_heads, dv,
                                         dtype=dtype))])] +
                   _caches(num_kv_heads, head_dim, dv, block_size,
                           layout, dtype) +
                   [("slot_mapping", [("slots", _I32)])],
                   f" layout({layout})")


def mla_decode(name: str, num_heads: int, block_size: int, *,
               split: bool = False, latent_dim: int = 512,
               rope_dim: int = 64) -> str:
    """tessel.mla_decode (absorbed DeepSeek MLA, bf16): q [B, H, L + R]
    over a latent cache [blocks, block_size, L + R]; out [B, H, L] bf16
    and LSE [H, B], or with `split` f32 partials [S, B, H, L] and LSE
    [S, H, B]."""
    width = latent_dim + rope_dim
    if split:
        out = _memref("?", "?", num_heads, latent_dim, dtype="f32")
        lse = _memref("?", num_heads, "?", dtype="f32")
    else:
        out = _memref("?", num_heads, latent_dim, dtype="bf16")
        lse = _memref(num_heads, "?", dtype="f32")
    return _kernel(name, "mla_decode", [
        ("q", [("q", _memref("?", num_heads, width, dtype="bf16"))]),
        ("kv_cache", [("c", _memref("?", block_size, width, dtype="bf16"))]),
        ("block_table", [("bt", _TABLE)]), ("seq_lens", [("sl", _I32)]),
        ("out", [("out", out)]), ("lse", [("lse", lse)])], scaled=True)


def dispatch_set(prefix: str, num_q_heads: int, num_kv_heads: int,
                 head_dim: int, block_size: int,
                 layouts: Iterable[str] = ("nhd",),
                 dtype: str = "bf16") -> str:
    """Every kernel tessel.Attention (the dispatcher) looks up for one MHA/
    GQA configuration, named `<prefix>_<role>`: causal prefill, the
    extends' new tokens (f32 + LSE), the two 2-way merges and the N-way
    merge; and per cache layout decode, its split-KV partials, the extends'
    context chunks, the unified mode's kernel (whole and split) and
    reshape-and-cache (`<prefix>_shuffled_<role>` for the shuffled
    layout)."""
    hq, hkv, d = num_q_heads, num_kv_heads, head_dim
    out = [
        prefill(f"{prefix}_prefill", hq, hkv, d, dtype=dtype),
        prefill(f"{prefix}_extend_new", hq, hkv, d, dtype=dtype,
                out_dtype="f32", lse=True),
        lse_merge(f"{prefix}_extend_merge_acc", hq, d, out_dtype="f32",
                  lse_out=True),
        lse_merge(f"{prefix}_extend_merge_out", hq, d, out_dtype=dtype),
        lse_merge_n(f"{prefix}_lse_merge_n", hq, d, out_dtype=dtype),
    ]
    for layout in layouts:
        tag = prefix if layout == "nhd" else f"{prefix}_{layout}"
        paged_args = (hq, hkv, d, block_size)
        out += [
            decode(f"{tag}_decode", *paged_args, layout=layout, dtype=dtype),
            paged(f"{tag}_decode_split", *paged_args, layout=layout,
                  dtype=dtype),
            paged(f"{tag}_extend_context", *paged_args, layout=layout,
                  dtype=dtype, cu_seqlens=True),
            unified(f"{tag}_unified", *paged_args, layout=layout,
                    dtype=dtype),
            unified(f"{tag}_unified_split", *paged_args, layout=layout,
                    dtype=dtype, split=True),
            reshape_and_cache(f"{tag}_reshape_and_cache", hkv, d, block_size,
                              layout=layout, dtype=dtype),
        ]
    return "".join(out)


#===----------------------------------------------------------------------===#
# Grouped matmuls and the MoE layer (tessel.torch finds kernels by these)
#===----------------------------------------------------------------------===#

Roles = Dict[str, Tuple[str, Dict[str, int]]]


def grouped_mm_kernels(n: int, k: int, trans_b: bool) -> Roles:
    """The three kernels of tessel.torch.grouped_mm for b [G, n, k]
    (trans_b) or [G, k, n], as role -> (op, shape params)."""
    # dgrad: da = dc . b[g] with the other trans_b (b [G, N, K] read as
    # [G, K', N']). wgrad: c[g] = a[rows]^T b[rows] in db's layout: [n, k]
    # (trans_b) needs a = dc [T, n] and b = a [T, k]; [k, n] needs a = a,
    # b = dc.
    m_cols, n_cols = (n, k) if trans_b else (k, n)
    return {
        "fwd": ("grouped_matmul", dict(N=n, K=k, trans_b=int(trans_b),
                                       pointer_table=0, a_rows_divisor=0,
                                       swiglu=0)),
        "dgrad": ("grouped_matmul", dict(N=k, K=n, trans_b=int(not trans_b),
                                         pointer_table=0, a_rows_divisor=0,
                                         swiglu=0)),
        "wgrad": ("grouped_matmul_wgrad", dict(M=m_cols, N=n_cols,
                                               a_rows_divisor=0,
                                               b_rows_divisor=0)),
    }


def grouped_mm(groups: int, n: int, k: int, dtype: str = "bf16",
               trans_b: bool = True, name: str = "gmm") -> str:
    """tessel.torch.grouped_mm's forward, dgrad and wgrad kernels for b
    [groups, n, k] (trans_b) or [groups, k, n]."""
    return kernels_spec(name, grouped_mm_kernels(n, k, trans_b), dtype,
                        groups)


def moe_kernels(hidden: int, intermediate: int, topk: int) -> Roles:
    """Every kernel tessel.torch.moe_mlp and moe_mlp_unstacked launch, as
    role -> (op, shape params)."""
    H, I = hidden, intermediate

    # gather: a's rows through expert_sort's sorted rows (x or dout [T, H]
    # read in expert order, no permuted copy); swiglu: act = silu(gate) *
    # up written by the epilogue too.
    def ragged_m(N, K, trans_b, pointer_table, gather=False, swiglu=False):
        return ("grouped_matmul", dict(N=N, K=K, trans_b=int(trans_b),
                                       pointer_table=int(pointer_table),
                                       a_rows_divisor=topk if gather else 0,
                                       swiglu=int(swiglu)))

    def ragged_k(M, N, gather):  # gather: "a" or "b"
        return ("grouped_matmul_wgrad",
                dict(M=M, N=N, a_rows_divisor=topk if gather == "a" else 0,
                     b_rows_divisor=topk if gather == "b" else 0))

    return {
        "histogram": ("expert_histogram", dict(topk=topk)),
        "sort": ("expert_sort", dict(topk=topk)),
        # The layer reads x and dout through the sorted rows instead;
        # tessel.ops.moe_permute and the glue benchmark keep the copy.
        "permute": ("moe_permute", dict(hidden=H, topk=topk)),
        "unpermute": ("moe_unpermute", dict(hidden=H, topk=topk)),
        # dx from the gate and the up dgrads apart: 2k rows a token.
        "unpermute_parts": ("moe_unpermute", dict(hidden=H, topk=2 * topk)),
        "down_wgrad": ragged_k(H, I, "a"),
        # Stacked: w_gate_up [E, 2I, H], w_down [E, H, I]; h and act =
        # silu(gate) * up from one launch.
        "gate_up": ragged_m(2 * I, H, True, False, gather=True, swiglu=True),
        "gate_up_dgrad": ragged_m(H, 2 * I, False, False),
        "gate_up_wgrad": ragged_k(2 * I, H, "b"),
        "down": ragged_m(H, I, True, False),
        "down_dgrad": ragged_m(I, H, False, False, gather=True),
        # Split: w_gate and w_up [E, I, H] each (and the stacked w_down).
        "gate_or_up": ragged_m(I, H, True, False, gather=True),
        "gate_or_up_dgrad": ragged_m(H, I, False, False),
        "gate_or_up_wgrad": ragged_k(I, H, "b"),
        # Unstacked: pointer tables of [I, H] gate or up and [H, I] down
        # matrices (the dgrads read the same matrices as [K, N]).
        "gate_or_up_ptrs": ragged_m(I, H, True, True, gather=True),
        "gate_or_up_dgrad_ptrs": ragged_m(H, I, False, True),
        "down_ptrs": ragged_m(H, I, True, True),
        "down_dgrad_ptrs": ragged_m(I, H, False, True, gather=True),
        # silu(gate) * up (gate and up launched apart: h [2, R, I]; the
        # stacked gate_up writes act itself) and its backward, on h [R, 2I]
        # or [2, R, I].
        "swiglu_backward": ("swiglu_backward",
                            dict(intermediate=I, parts=1, topk=topk)),
        "swiglu_parts": ("swiglu", dict(intermediate=I, parts=2)),
        "swiglu_parts_backward": ("swiglu_backward",
                                  dict(intermediate=I, parts=2, topk=topk)),
    }


# The kernels every form of the MoE layer launches, and each form's steps
# (step -> role): weights stacked, gate and up apart, or per expert
# through pointer tables.
MOE_SHARED_ROLES = ("histogram", "sort", "unpermute", "down_wgrad")
MOE_FORM_STEPS = {
    "stacked": dict(up="gate_up", up_dgrad="gate_up_dgrad",
                    up_wgrad="gate_up_wgrad", down="down",
                    down_dgrad="down_dgrad",
                    act_backward="swiglu_backward", dx="unpermute"),
    "split": dict(up="gate_or_up", up_dgrad="gate_or_up_dgrad",
                  up_wgrad="gate_or_up_wgrad", down="down",
                  down_dgrad="down_dgrad", act="swiglu_parts",
                  act_backward="swiglu_parts_backward",
                  dx="unpermute_parts"),
    "unstacked": dict(up="gate_or_up_ptrs", up_dgrad="gate_or_up_dgrad_ptrs",
                      up_wgrad="gate_or_up_wgrad", down="down_ptrs",
                      down_dgrad="down_dgrad_ptrs", act="swiglu_parts",
                      act_backward="swiglu_parts_backward",
                      dx="unpermute_parts"),
}


def moe_mlp(experts: int, hidden: int, intermediate: int, topk: int,
            dtype: str = "bf16", name: str = "moe", unstacked: bool = True,
            split: bool = True) -> str:
    """Every kernel tessel.torch.moe_mlp needs for `experts` experts of
    `hidden` -> 2 x `intermediate` -> `hidden`, top-`topk` routing, with
    w_gate_up stacked; with `split`, also those of moe_mlp with gate and up
    apart; with `unstacked`, also those of moe_mlp_unstacked (and so
    patch_deepseek_moe). Kernels are named `<name>_<role>`."""
    forms = ["stacked"] + (["split"] if split else []) + \
        (["unstacked"] if unstacked else [])
    keep = set(MOE_SHARED_ROLES)
    for form in forms:
        keep.update(MOE_FORM_STEPS[form].values())
    roles = {r: v for r, v in moe_kernels(hidden, intermediate,
                                          topk).items() if r in keep}
    return kernels_spec(name, roles, dtype, experts)


__all__ = ["decode", "dispatch_set", "grouped_mm", "grouped_mm_kernels",
           "kernel_spec", "kernels_spec", "lse_merge", "lse_merge_n",
           "mla_decode", "moe_kernels", "moe_mlp", "paged", "prefill",
           "reshape_and_cache"]
