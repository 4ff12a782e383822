#!/usr/bin/env python3
"""One mixed serving step through tessel.Attention in every routing mode on
an NVIDIA GPU: 48 decodes over 2K contexts, 8 extends of 512 new tokens
over 16K and 8 prefills of 2048 tokens (llama3_8b: 32/8 heads, head dim
128, bf16, blocks of 16). Prints ms, the cached context's K/V read rate
(bytes before the step / time; the H200's device copy is ~4.3 TB/s),
tokens/s and the ratio to triple; the outputs of the modes are compared
with triple's first (each is checked against torch by dispatch_check.py).

    tessel-aot bench/dispatch_kernels.mlir --targets=sm80,sm90,sm90a -o .carry/dispatch.tsb
    PYTHONPATH=/tmp/tessel-py python3 bench/mixed_batch_bench.py .carry/dispatch.tsb \
        [--vllm .carry/peers/vllm_unified_attention_2d.py]

With --vllm, vLLM's Triton unified attention (bench/vllm_peer.py says
where it comes from) runs the same batch from the same cache, as a row of
its own, checked against triple like the modes.

Exits 1 when a mode's output differs from triple's by more than 1e-2 of
its largest value.
"""
import argparse
import sys

import torch

import tessel
import vllm_peer
from grouped_matmul_bench import time_ms
from paged_batch import PagedBatch

HEADS = (32, 8, 128, 16)  # llama3_8b in bench/dispatch_kernels.mlir
BATCH = [(1, 2048)] * 48 + [(512, 16384)] * 8 + [(2048, 0)] * 8
MODES = ("triple", "unified", "two_path")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--vllm", metavar="FILE",
                        help="vLLM's unified attention kernel (the peer)")
    args = parser.parse_args()
    bundle = tessel.Bundle(tessel.Device("cuda", 0), args.bundle)
    gen = torch.Generator(device="cuda").manual_seed(0)
    batch = PagedBatch(BATCH, HEADS, gen)
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"{len(BATCH)} requests, {sum(batch.ql)} new tokens, "
          f"{batch.context_kv_bytes() / 1e9:.2f} GB of cached K/V")
    outs, times = {}, {}
    for mode in MODES:
        att = batch.attention(bundle, routing=mode)
        if mode == MODES[0]:
            batch.write_cache(att)
        times[mode], outs[mode], _ = batch.timed_run(att, args.reps)
    rows = list(MODES)
    if args.vllm:
        run, outs["vllm"] = vllm_peer.runner(vllm_peer.load(args.vllm), batch,
                                             HEADS[2] ** -0.5)
        times["vllm"] = time_ms(run, args.reps, warmup=3)
        rows.append("vllm")
    ok = True
    print("| mode | ms | KV TB/s | tokens/s | vs triple | vs vLLM | "
          "max diff to triple |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    ref = outs["triple"].float()
    for mode in rows:
        ms = times[mode]
        err = ((outs[mode].float() - ref).abs().max() / ref.abs().max()).item()
        ok &= err < 1e-2
        vs_vllm = f"{times['vllm'] / ms:.2f}x" if "vllm" in times else "-"
        print(f"| {mode} | {ms:.3f} | "
              f"{batch.context_kv_bytes() / ms / 1e9:.2f} | "
              f"{sum(batch.ql) / ms * 1e3:.0f} | "
              f"{times['triple'] / ms:.2f}x | {vs_vllm} | {err:.1e} |")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
