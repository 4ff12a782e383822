#!/usr/bin/env python3
"""One mixed serving step through tessel.Attention in every routing mode:
48 decodes over 2K contexts, 8 extends of 512 new tokens over 16K and 8
prefills of 2048 tokens (llama3_8b of <bundles>/dispatch.tsb: 32/8 heads,
head dim 128, bf16, blocks of 16). Prints ms, the cached context's K/V
read rate (bytes before the step / time; the H200's device copy is ~4.3
TB/s), tokens/s and the ratio to triple; each mode's output is checked
first against a float64 reference.

    python3 bench/mixed_batch_bench.py [--bundles .carry] [--smoke] [--vllm FILE]

(bench/benchlib.py: the common options.) --smoke: 3 decodes, 2 extends
and 2 prefills of a few tokens on the host. The peer, vLLM's Triton
unified attention (bench/vllm_peer.py says where it comes from), runs the
same batch from the same cache when its file is given by --vllm or lies
at <bundles>/peers/vllm_unified_attention_2d.py.
"""
import os
import sys

import benchlib
import vllm_peer
from paged_batch import PagedBatch

HEADS = (32, 8, 128, 16)  # llama3_8b in bench/dispatch_kernels.mlir
BATCH = [(1, 2048)] * 48 + [(512, 16384)] * 8 + [(2048, 0)] * 8
SMOKE_BATCH = [(1, 40)] * 3 + [(8, 100)] * 2 + [(16, 0)] * 2
MODES = ("triple", "unified", "two_path")


def main():
    parser = benchlib.parser(__doc__)
    parser.add_argument("--vllm", metavar="FILE",
                        help="vLLM's unified attention kernel (the peer)")
    args = parser.parse_args()
    bench = benchlib.Bench(args, "mixed_batch_bench")
    vllm = args.vllm or os.path.join(args.bundles, "peers",
                                     "vllm_unified_attention_2d.py")
    bundle = bench.bundle("dispatch")
    requests = SMOKE_BATCH if bench.smoke else BATCH
    batch = PagedBatch(requests, HEADS, bench.gen, bench.device)
    print(f"{len(requests)} requests, {sum(batch.ql)} new tokens, "
          f"{batch.context_kv_bytes() / 1e9:.2f} GB of cached K/V")
    ref, times = None, {}
    for mode in MODES:
        att = batch.attention(bundle, routing=mode)
        if ref is None:
            batch.write_cache(att)
            ref = batch.reference()
        times[mode], out, _ = batch.timed_run(att, bench)
        err = benchlib.relative_error(out, ref)
        bench.check(f"{mode} mode", err <= 1e-2, f"error {err:.1e}")
    if os.path.isfile(vllm) and not bench.cuda_only("vLLM's Triton kernel"):
        run, out = vllm_peer.runner(vllm_peer.load(vllm), batch,
                                    HEADS[2] ** -0.5)
        times["vllm"] = bench.time_ms(run)
        err = benchlib.relative_error(out, ref)
        bench.check("vLLM's unified attention (the peer)", err <= 1e-2,
                    f"error {err:.1e}")
    print("| mode | ms | KV TB/s | tokens/s | vs triple | vs vLLM |")
    print("|---|---:|---:|---:|---:|---:|")
    for mode in times:
        ms = times[mode]
        vs_vllm = f"{times['vllm'] / ms:.2f}x" if "vllm" in times else "-"
        print(f"| {mode} | {ms:.3f} | "
              f"{batch.context_kv_bytes() / ms / 1e9:.2f} | "
              f"{sum(batch.ql) / ms * 1e3:.0f} | "
              f"{times['triple'] / ms:.2f}x | {vs_vllm} |")
        if mode in ("unified", "two_path"):
            bench.row(f"{len(requests)}-request step, {mode} mode", "ms",
                      ms, "triple mode", times["triple"])
        if mode in MODES and "vllm" in times:
            bench.row(f"{len(requests)}-request step, {mode} mode", "ms",
                      ms, "vLLM Triton unified attention", times["vllm"])
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
