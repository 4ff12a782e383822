#!/usr/bin/env python3
"""Writes the kernel specs of the attention dispatcher's checks:

  bench/dispatch_kernels.mlir      llama3_8b's MHA set (32 q / 8 kv heads,
                                   head dim 128, blocks of 16, bf16), both
                                   KV layouts: what bench/dispatch_check.py
                                   and bench/continuous_batching.py run on
                                   a GPU;
  examples/attention_dispatch.mlir the same set at 4 q / 2 kv heads, head
                                   dim 64, blocks of 16, NHD: the host
                                   bundle of examples/attention_dispatch.c
                                   and of the --device host runs.

A set is every kernel the dispatcher looks up (by op and shape parameters,
whatever the names; runtime/src/dispatch/kernel_set.cpp): decode (whole,
and split-KV partials with their N-way merge), causal prefill (bf16 out;
f32 out with LSE for the extends' new tokens), the extends' context chunks
(paged attention in split form with cu_seqlens), the 2-way LSE merges that
fold a chunk into an f32 accumulator (with LSE) and the last one into the
bf16 out, and reshape-and-cache.

  python3 bench/gen_dispatch_kernels.py   # from the repository root
"""
import sys

BF16 = "bf16"


def memref(*dims, elem=BF16):
    return "memref<" + "x".join(str(d) for d in dims) + f"x{elem}>"


def kernel(name, op, operands, attrs="", scaled=False):
    """One func.func around one tessel op. `operands` are (keyword,
    [(ssa name, type), ...]) in the op's order; `scaled`: an attention op,
    whose softmax scale is the kernel's last argument, an f32."""
    params = ", ".join(f"%{n}: {t}" for _, group in operands
                       for n, t in group) + (", %scale: f32" if scaled else "")
    body = " ".join(
        f"{kw}(" + ", ".join(f"%{n} : {t}" for n, t in group) + ")"
        for kw, group in operands)
    if scaled:  # after layout(...), before the attribute dictionary
        clauses, brace, rest = attrs.partition(" {")
        attrs = clauses + " scale(%scale)" + brace + rest
    return (f"func.func @{name}({params}) {{\n"
            f"  tessel.{op} {body}{attrs}\n  return\n}}\n")


def caches(hkv, d, bs, layout):
    """(k_cache type, v_cache type, layout keyword) of docs/dispatcher.md's
    layouts; x = 16 bytes of bf16."""
    if layout == "nhd":
        return memref("?", bs, hkv, d), memref("?", bs, hkv, d), "nhd"
    x = 8
    return (memref("?", hkv, d // x, bs, x), memref("?", hkv, bs // x, d, x),
            "shuffled")


def mha_set(prefix, hq, hkv, d, bs, layouts):
    q, kv, o = memref("?", hq, d), memref("?", hkv, d), memref("?", hq, d)
    part, plse = memref("?", hq, d, elem="f32"), memref(hq, "?", elem="f32")
    parts = memref("?", "?", hq, d, elem="f32")
    plses = memref("?", hq, "?", elem="f32")
    i32, i32x2 = "memref<?xi32>", "memref<?x?xi32>"
    causal = " {causal}"
    new = [("q", [("q", q)]), ("k", [("k", kv)]), ("v", [("v", kv)]),
           ("cu_seqlens", [("cu", i32)])]
    merge_in = [("a", [("oa", part), ("la", plse)]),
                ("b", [("ob", part), ("lb", plse)])]
    out = [
        kernel(f"{prefix}_prefill", "prefill_attention",
               new + [("out", [("out", o)])], causal, scaled=True),
        kernel(f"{prefix}_extend_new", "prefill_attention",
               new + [("out", [("out", part)]), ("lse", [("lse", plse)])],
               causal, scaled=True),
        kernel(f"{prefix}_extend_merge_acc", "lse_merge",
               merge_in + [("out", [("out", part)]),
                           ("lse_out", [("lo", plse)])]),
        kernel(f"{prefix}_extend_merge_out", "lse_merge",
               merge_in + [("out", [("out", o)])]),
        kernel(f"{prefix}_lse_merge_n", "lse_merge_n",
               [("partials", [("p", parts), ("pl", plses)]),
                ("out", [("out", o)])]),
    ]
    for layout in layouts:
        kc, vc, lay = caches(hkv, d, bs, layout)
        tag = prefix + ("" if layout == "nhd" else "_shuffled")
        paged = [("q", [("q", q)]), ("k_cache", [("kc", kc)]),
                 ("v_cache", [("vc", vc)]), ("block_table", [("bt", i32x2)])]
        lay_attr = f" layout({lay})"
        out += [
            kernel(f"{tag}_decode", "decode_attention",
                   paged + [("seq_lens", [("sl", i32)]),
                            ("out", [("out", o)])], lay_attr, scaled=True),
            kernel(f"{tag}_decode_split", "paged_attention",
                   paged + [("context_lens", [("sl", i32)]),
                            ("out", [("out", parts)]),
                            ("lse", [("lse", plses)])], lay_attr,
                   scaled=True),
            kernel(f"{tag}_extend_context", "paged_attention",
                   paged + [("cu_seqlens", [("cu", i32)]),
                            ("context_lens", [("cl", i32)]),
                            ("out", [("out", parts)]),
                            ("lse", [("lse", plses)])], lay_attr,
                   scaled=True),
            kernel(f"{tag}_reshape_and_cache", "reshape_and_cache",
                   [("k", [("k", kv)]), ("v", [("v", kv)]),
                    ("k_cache", [("kc", kc)]), ("v_cache", [("vc", vc)]),
                    ("slot_mapping", [("slots", i32)])], lay_attr),
        ]
    return "".join(out)


HEADER = "// Generated by bench/gen_dispatch_kernels.py; do not edit.\n"
FILES = {
    "bench/dispatch_kernels.mlir":
        mha_set("llama3_8b", 32, 8, 128, 16, ["nhd", "shuffled"]),
    "examples/attention_dispatch.mlir":
        mha_set("small", 4, 2, 64, 16, ["nhd"]),
}


def main():
    for path, text in FILES.items():
        with open(path, "w") as f:
            f.write(HEADER + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
