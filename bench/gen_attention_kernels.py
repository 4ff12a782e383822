#!/usr/bin/env python3
"""Writes bench/paged_decode_kernels.mlir, bench/prefill_kernels.mlir,
bench/extend_kernels.mlir and bench/mla_decode_kernels.mlir: the kernels that
bench/paged_decode_check.py and the attention benchmark run, one per
(heads, head dim, block size, layout, dtype, split, lse) case. The kernel
name spells the case: dec[split]_q<Hq>_kv<Hkv>_d<D>_bs<BS>_<nhd|shuf>[_f16][_lse]."""
import sys

CASES = [
    # (Hq, Hkv, D, BS, layout, dtype, split, lse)
    (32, 8, 128, 16, "nhd", "bf16", False, True),
    (32, 8, 128, 16, "shuf", "bf16", False, True),
    (64, 4, 128, 16, "nhd", "bf16", False, True),
    (4, 4, 128, 32, "nhd", "bf16", False, True),
    (8, 2, 64, 64, "nhd", "bf16", False, True),
    (16, 2, 256, 16, "nhd", "bf16", False, True),
    (16, 2, 256, 32, "shuf", "bf16", False, True),
    (32, 8, 64, 64, "shuf", "bf16", False, False),
    (32, 8, 128, 16, "nhd", "f16", False, True),
    (32, 8, 128, 16, "nhd", "bf16", True, True),
    (32, 8, 128, 16, "shuf", "bf16", True, True),
    (64, 4, 128, 16, "nhd", "bf16", True, True),
    (16, 2, 256, 64, "nhd", "bf16", True, True),
    # Block sizes that are multiples of 16 but not of the tile or of 32.
    (32, 8, 128, 48, "nhd", "bf16", False, True),
    (8, 2, 64, 128, "shuf", "bf16", True, True),
]


PREFILL = [
    # (Hq, Hkv, Dqk, Dv, dtype, causal, lse)
    (32, 8, 128, 128, "bf16", True, True),
    (64, 4, 128, 128, "bf16", True, True),
    (32, 32, 128, 128, "bf16", True, False),
    (8, 2, 64, 64, "bf16", True, True),
    (16, 2, 256, 256, "bf16", True, True),
    (16, 16, 192, 128, "bf16", True, True),
    (4, 4, 128, 128, "bf16", False, True),
    (32, 8, 128, 128, "f16", True, True),
]


def prefill_name(Hq, Hkv, Dqk, Dv, dtype, causal, lse):
    return (f"pre_q{Hq}_kv{Hkv}_d{Dqk}_v{Dv}{'_f16' if dtype == 'f16' else ''}"
            f"{'_causal' if causal else ''}{'_lse' if lse else ''}")


def prefill_kernel(Hq, Hkv, Dqk, Dv, dtype, causal, lse):
    e = dtype
    q, k = f"memref<?x{Hq}x{Dqk}x{e}>", f"memref<?x{Hkv}x{Dqk}x{e}>"
    v, out = f"memref<?x{Hkv}x{Dv}x{e}>", f"memref<?x{Hq}x{Dv}x{e}>"
    lse_t = f"memref<{Hq}x?xf32>"
    args = (f"%q: {q}, %k: {k}, %v: {v}, %cu: memref<?xi32>, %out: {out}" +
            (f", %lse: {lse_t}" if lse else "") + ", %scale: f32")
    return (f"func.func @{prefill_name(Hq, Hkv, Dqk, Dv, dtype, causal, lse)}"
            f"({args}) {{\n"
            f"  tessel.prefill_attention q(%q : {q}) k(%k : {k}) v(%v : {v}) "
            f"cu_seqlens(%cu : memref<?xi32>) out(%out : {out})" +
            (f" lse(%lse : {lse_t})" if lse else "") + " scale(%scale)" +
            (" {causal}" if causal else "") + "\n  return\n}\n")


# Extend, composed: causal prefill of the new tokens (f32 out + LSE),
# the cached context in split-form chunks (paged_attention with
# cu_seqlens), one N-way merge of all the partials.
EXTEND = [
    # (Hq, Hkv, D, Dv, BS, layout)
    (32, 8, 128, 128, 16, "nhd"),
    (32, 8, 128, 128, 16, "shuf"),
    (64, 4, 128, 128, 32, "nhd"),
    (32, 8, 128, 128, 48, "shuf"),
    # DeepSeek-V3 non-absorbed MLA extend: qk 192, v 128.
    (128, 128, 192, 128, 16, "nhd"),
]


def extend_kernels(Hq, Hkv, D, Dv, BS, layout):
    tag = f"q{Hq}_kv{Hkv}_d{D}" + (f"_v{Dv}" if Dv != D else "")
    q, kv = f"memref<?x{Hq}x{D}xbf16>", f"memref<?x{Hkv}x{D}xbf16>"
    vv, o = f"memref<?x{Hkv}x{Dv}xbf16>", f"memref<?x{Hq}x{Dv}xbf16>"
    part, plse = f"memref<?x{Hq}x{Dv}xf32>", f"memref<{Hq}x?xf32>"
    parts, plses = f"memref<?x?x{Hq}x{Dv}xf32>", f"memref<?x{Hq}x?xf32>"
    if layout == "nhd":
        kc = f"memref<?x{BS}x{Hkv}x{D}xbf16>"
        vc = f"memref<?x{BS}x{Hkv}x{Dv}xbf16>"
        lay = "nhd"
    else:
        kc = f"memref<?x{Hkv}x{D // 8}x{BS}x8xbf16>"
        vc = f"memref<?x{Hkv}x{BS // 8}x{Dv}x8xbf16>"
        lay = "shuffled"
    out = []
    if layout == "nhd":
        out.append(
            f"func.func @ext_prefill_{tag}(%q: {q}, %k: {kv}, %v: {vv}, "
            f"%cu: memref<?xi32>, %out: {part}, %lse: {plse}, "
            f"%scale: f32) {{\n"
            f"  tessel.prefill_attention q(%q : {q}) k(%k : {kv}) v(%v : {vv}) "
            f"cu_seqlens(%cu : memref<?xi32>) out(%out : {part}) "
            f"lse(%lse : {plse}) scale(%scale) {{causal}}\n"
            f"  return\n}}\n")
        out.append(
            f"func.func @ext_merge_{tag}(%p: {parts}, %pl: {plses}, "
            f"%out: {o}) {{\n"
            f"  tessel.lse_merge_n partials(%p : {parts}, %pl : {plses}) "
            f"out(%out : {o})\n  return\n}}\n")
    out.append(
        f"func.func @ext_ctx_{tag}_bs{BS}_{layout}(%q: {q}, %kc: {kc}, "
        f"%vc: {vc}, %bt: memref<?x?xi32>, %cu: memref<?xi32>, "
        f"%cl: memref<?xi32>, %out: {parts}, %lse: {plses}, "
        f"%scale: f32) {{\n"
        f"  tessel.paged_attention q(%q : {q}) k_cache(%kc : {kc}) "
        f"v_cache(%vc : {vc}) block_table(%bt : memref<?x?xi32>) "
        f"cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) "
        f"out(%out : {parts}) lse(%lse : {plses}) layout({lay}) "
        f"scale(%scale)\n  return\n}}\n")
    return "".join(out)


# Absorbed MLA decode: (heads, block size, split).
MLA = [(16, 64, False), (128, 64, False), (8, 16, False), (128, 64, True),
       (16, 16, True)]


def mla_kernel(H, BS, split):
    q = f"memref<?x{H}x576xbf16>"
    c = f"memref<?x{BS}x576xbf16>"
    if split:
        out, lse = f"memref<?x?x{H}x512xf32>", f"memref<?x{H}x?xf32>"
    else:
        out, lse = f"memref<?x{H}x512xbf16>", f"memref<{H}x?xf32>"
    name = f"mla{'split' if split else ''}_h{H}_bs{BS}"
    return (f"func.func @{name}(%q: {q}, %c: {c}, %bt: memref<?x?xi32>, "
            f"%sl: memref<?xi32>, %out: {out}, %lse: {lse}, "
            f"%scale: f32) {{\n"
            f"  tessel.mla_decode q(%q : {q}) kv_cache(%c : {c}) "
            f"block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) "
            f"out(%out : {out}) lse(%lse : {lse}) scale(%scale)\n"
            f"  return\n}}\n")


def name(Hq, Hkv, D, BS, layout, dtype, split, lse):
    return (f"dec{'split' if split else ''}_q{Hq}_kv{Hkv}_d{D}_bs{BS}_"
            f"{layout}{'_f16' if dtype == 'f16' else ''}{'_lse' if lse else ''}")


def kernel(Hq, Hkv, D, BS, layout, dtype, split, lse):
    e = dtype
    if layout == "nhd":
        kc = f"memref<?x{BS}x{Hkv}x{D}x{e}>"
        vc = kc
        lay = "nhd"
    else:
        kc = f"memref<?x{Hkv}x{D // 8}x{BS}x8x{e}>"
        vc = f"memref<?x{Hkv}x{BS // 8}x{D}x8x{e}>"
        lay = "shuffled"
    q = f"memref<?x{Hq}x{D}x{e}>"
    if split:
        out = f"memref<?x?x{Hq}x{D}xf32>"
        lse_t = f"memref<?x{Hq}x?xf32>"
        op = "paged_attention"
        lens = "context_lens"
    else:
        out = f"memref<?x{Hq}x{D}x{e}>"
        lse_t = f"memref<{Hq}x?xf32>"
        op = "decode_attention"
        lens = "seq_lens"
    args = (f"%q: {q}, %kc: {kc}, %vc: {vc}, %bt: memref<?x?xi32>, "
            f"%sl: memref<?xi32>, %out: {out}")
    lse_part = ""
    if lse:
        args += f", %lse: {lse_t}"
        lse_part = f" lse(%lse : {lse_t})"
    args += ", %scale: f32"
    return (f"func.func @{name(Hq, Hkv, D, BS, layout, dtype, split, lse)}"
            f"({args}) {{\n"
            f"  tessel.{op} q(%q : {q}) k_cache(%kc : {kc}) "
            f"v_cache(%vc : {vc}) block_table(%bt : memref<?x?xi32>) "
            f"{lens}(%sl : memref<?xi32>) out(%out : {out}){lse_part} "
            f"layout({lay}) scale(%scale)\n  return\n}}\n")


if __name__ == "__main__":
    folder = sys.argv[1] if len(sys.argv) > 1 else "bench"
    header = "// Generated by bench/gen_attention_kernels.py; do not edit.\n"
    with open(f"{folder}/paged_decode_kernels.mlir", "w") as f:
        f.write(header)
        for c in CASES:
            f.write(kernel(*c))
    with open(f"{folder}/mla_decode_kernels.mlir", "w") as f:
        f.write(header)
        for c in MLA:
            f.write(mla_kernel(*c))
    with open(f"{folder}/extend_kernels.mlir", "w") as f:
        f.write(header)
        for c in EXTEND:
            f.write(extend_kernels(*c))
    with open(f"{folder}/prefill_kernels.mlir", "w") as f:
        f.write(header)
        for c in PREFILL:
            f.write(prefill_kernel(*c))
