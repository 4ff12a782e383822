#!/usr/bin/env python3
"""A short new turn on a long conversation: extends of a few new tokens
over long cached contexts, through tessel.Attention on an NVIDIA GPU. Three
ways: triple with the context as the plan schedules it (parallel windows of
one launch when the new tokens cannot fill the device), triple with the
same context in chunks one after the other (compute_units=1 makes the plan
believe the new tokens fill it), and unified (one causal kernel over each
whole sequence, split into windows the same way). Prints ms and the KV
bandwidth (context K and V bytes read / time; the H200's device copy is
~4.3 TB/s) of each.

    tessel-aot bench/dispatch_kernels.mlir --targets=sm80,sm90,sm90a -o .carry/dispatch.tsb
    PYTHONPATH=/tmp/tessel-py python3 bench/extend_turn_bench.py .carry/dispatch.tsb

The outputs are compared first (each path is checked against torch by
dispatch_check.py and attention_package_check.py). Exits 1 on a mismatch.
"""
import argparse
import sys

import torch

import tessel
from paged_batch import PagedBatch

HEADS = (32, 8, 128, 16)  # llama3_8b in bench/dispatch_kernels.mlir
CASES = [(1, 131072, 64), (1, 131072, 16), (4, 100000, 128), (8, 65536, 32),
         (16, 32768, 16)]
# (routing, compute_units: 0 = the device's, 1 = chunks in sequence)
WAYS = [("triple", 0), ("triple", 1), ("unified", 0)]


def run_case(bundle, requests, context, new_tokens, gen):
    batch = PagedBatch([(new_tokens, context)] * requests, HEADS, gen)
    outs, times, infos = [], [], []
    for routing, units in WAYS:
        att = batch.attention(bundle, routing=routing, compute_units=units)
        if not outs:
            batch.write_cache(att)
        ms, out, info = batch.timed_run(att, 20)
        times.append(ms)
        outs.append(out)
        infos.append(info)
    ref = outs[1].float()
    err = max(((o.float() - ref).abs().max() / ref.abs().max()).item()
              for o in outs)
    return times, infos, err, batch.context_kv_bytes()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle")
    args = parser.parse_args()
    bundle = tessel.Bundle(tessel.Device("cuda", 0), args.bundle)
    gen = torch.Generator(device="cuda").manual_seed(0)
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("| requests | context | new tokens | triple: windows | ms | "
          "TB/s | triple: chunks in sequence | ms | TB/s | unified: splits "
          "| ms | TB/s |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    ok = True
    for requests, context, new_tokens in CASES:
        times, infos, err, kv = run_case(bundle, requests, context,
                                         new_tokens, gen)
        ok &= err < 1e-2 and infos[1]["context_chunks_parallel"] == 0
        windows = infos[0]["context_chunks"]
        if not infos[0]["context_chunks_parallel"]:
            windows = f"{windows} (in sequence)"
        cells = [windows, infos[1]["context_chunks"], infos[2]["kv_splits"]]
        row = " | ".join(f"{c} | {t:.3f} | {kv / t / 1e9:.2f}"
                         for c, t in zip(cells, times))
        print(f"| {requests} | {context} | {new_tokens} | {row} |"
              f"   (outputs differ by {err:.1e})")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
