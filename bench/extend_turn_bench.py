#!/usr/bin/env python3
"""A short new turn on a long conversation: extends of a few new tokens
over long cached contexts, through tessel.Attention (triple) on an NVIDIA
GPU, with the context as the plan schedules it (parallel windows of one
launch when the new tokens cannot fill the device) beside the same context
in chunks one after the other (compute_units=1 makes the plan believe the
new tokens fill it). Prints ms, the ratio, and the KV bandwidth (context
K and V bytes read / time; the H200's device copy is ~4.3 TB/s).

    tessel-aot bench/dispatch_kernels.mlir --targets=sm80,sm90 -o .carry/dispatch.tsb
    PYTHONPATH=/tmp/tessel-py python3 bench/extend_turn_bench.py .carry/dispatch.tsb

The two outputs are compared first (both paths are checked against torch by
dispatch_check.py and attention_package_check.py). Exits 1 on a mismatch.
"""
import argparse
import sys

import torch

import tessel
from grouped_matmul_bench import time_ms

HQ, HKV, D, BS = 32, 8, 128, 16  # llama3_8b in bench/dispatch_kernels.mlir
CASES = [(1, 131072, 64), (1, 131072, 16), (4, 100000, 128), (8, 65536, 32),
         (16, 32768, 16)]


def run_case(bundle, requests, context, new_tokens, gen):
    blocks = -(-(context + new_tokens) // BS)
    table = torch.randperm(requests * blocks, device="cuda",
                           generator=gen).int().reshape(requests, blocks)
    shape = (requests * blocks, BS, HKV, D)
    k_cache = torch.randn(*shape, device="cuda", generator=gen).bfloat16()
    v_cache = torch.randn(*shape, device="cuda", generator=gen).bfloat16()
    T = requests * new_tokens
    rand = lambda *s: torch.randn(*s, device="cuda",  # noqa: E731
                                  generator=gen).bfloat16()
    q, k, v = rand(T, HQ, D), rand(T, HKV, D), rand(T, HKV, D)
    ql, cl = [new_tokens] * requests, [context] * requests
    seq_lens = torch.full((requests,), context + new_tokens, device="cuda",
                          dtype=torch.int32)
    outs, times, infos = [], [], []
    for units in (0, 1):
        att = tessel.Attention(bundle, num_q_heads=HQ, num_kv_heads=HKV,
                               head_dim=D, block_size=BS, routing="triple",
                               compute_units=units)
        plan = att.plan(ql, cl, blocks)
        out = torch.empty_like(q)
        bufs = dict(q=q, k=k, v=v, k_cache=k_cache, v_cache=v_cache,
                    block_table=table, seq_lens=seq_lens, out=out)
        times.append(time_ms(lambda: plan.run(**bufs), 20, warmup=3))
        outs.append(out)
        infos.append(plan.info)
    err = ((outs[0].float() - outs[1].float()).abs().max() /
           outs[1].float().abs().max()).item()
    kv_bytes = requests * context * HKV * D * 2 * 2
    return times, infos, err, kv_bytes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle")
    args = parser.parse_args()
    bundle = tessel.Bundle(tessel.Device("cuda", 0), args.bundle)
    gen = torch.Generator(device="cuda").manual_seed(0)
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("| requests | context | new tokens | windows (one launch) | "
          "ms | TB/s | chunks (in sequence) | ms | TB/s | speed-up |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    ok = True
    for requests, context, new_tokens in CASES:
        (par, seq), (ip, iq), err, kv = run_case(bundle, requests, context,
                                                 new_tokens, gen)
        ok &= err < 1e-2 and iq["context_chunks_parallel"] == 0
        mode = "" if ip["context_chunks_parallel"] else " (in sequence)"
        print(f"| {requests} | {context} | {new_tokens} | "
              f"{ip['context_chunks']}{mode} | {par:.3f} | "
              f"{kv / par / 1e9:.2f} | "
              f"{iq['context_chunks']} | {seq:.3f} | {kv / seq / 1e9:.2f} | "
              f"{seq / par:.1f}x |   (outputs differ by {err:.1e})")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
