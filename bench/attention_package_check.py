#!/usr/bin/env python3
"""tessel.Attention (the dispatcher from the tessel package) on an NVIDIA
GPU: mixed batches of decodes, extends (contexts past the 32768-token chunk
budget) and prefills in every routing mode, on torch CUDA tensors and
torch's current stream, against a float64 reference; the run's cache write
checked slot by slot. Then the cache written by Attention.write_cache
(with a padding slot) and a run without slot_mapping, and
tessel.permute_rows on a CUDA block table.

    tessel-aot bench/dispatch_kernels.mlir --targets=sm80,sm90 -o .carry/dispatch.tsb
    bash scripts/install-python.sh --prefix /tmp/tessel-py
    PYTHONPATH=/tmp/tessel-py python3 bench/attention_package_check.py .carry/dispatch.tsb

Exits 1 if a mode fails.
"""
import argparse
import os
import sys

import torch

import tessel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python-bindings", "tests"))
from attention_reference import Step  # noqa: E402

# llama3_8b's kernels in bench/dispatch_kernels.mlir.
HQ, HKV, D, BS = 32, 8, 128, 16
BATCH = [(1, 40000), (300, 33000), (1, 0), (700, 0), (64, 32768), (1, 17),
         (5, 65536), (2000, 0), (1, 5000)]
TOLERANCE = 1e-2  # bf16 output, relative to the largest reference value


def check_write_cache_and_permute(bundle) -> bool:
    att = tessel.Attention(bundle, num_q_heads=HQ, num_kv_heads=HKV,
                           head_dim=D, block_size=BS)
    step = Step(att, BATCH, torch.Generator().manual_seed(4), HQ, HKV, D, BS,
                device="cuda")
    pad = torch.tensor([-1], dtype=torch.int32, device="cuda")
    noise = torch.randn(1, HKV, D, device="cuda").bfloat16()
    before = step.k_cache.clone()
    att.write_cache(torch.cat([step.k, noise]), torch.cat([step.v, noise]),
                    step.k_cache, step.v_cache, torch.cat([step.slots, pad]))
    torch.cuda.synchronize()
    slots = step.slots.long()
    kept = torch.ones(step.k_cache.shape[:2], dtype=torch.bool, device="cuda")
    kept[slots // BS, slots % BS] = False
    untouched = torch.equal(step.k_cache[kept], before[kept])
    buffers = step.buffers()
    del buffers["slot_mapping"]
    att.plan(step.ql, step.cl, step.max_blocks).run(**buffers)
    torch.cuda.synchronize()
    err, written = step.error(), step.cache_written()
    good = err <= TOLERANCE and written and untouched
    print(f"{'PASS' if good else 'FAIL'}  write_cache then run without "
          f"slot_mapping: max error {err:.2e}, cache written: {written}, "
          f"other slots untouched: {untouched}")
    order = att.order([q for q, _ in BATCH], [c for _, c in BATCH])
    permuted = tessel.permute_rows(order, step.table)
    same = permuted.device == step.table.device and torch.equal(
        permuted, step.table[torch.tensor(order, device="cuda")])
    print(f"{'PASS' if same else 'FAIL'}  permute_rows on a CUDA block table")
    return good and same


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle")
    args = parser.parse_args()
    bundle = tessel.Bundle(tessel.Device("cuda", 0), args.bundle)
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    ok = True
    for routing in ("triple", "unified", "two_path"):
        att = tessel.Attention(bundle, num_q_heads=HQ, num_kv_heads=HKV,
                               head_dim=D, block_size=BS, routing=routing)
        step = Step(att, BATCH, torch.Generator().manual_seed(3), HQ, HKV, D,
                    BS, device="cuda")
        plan = att.plan(step.ql, step.cl, step.max_blocks)
        plan.run(**step.buffers())
        torch.cuda.synchronize()
        err, written = step.error(), step.cache_written()
        good = err <= TOLERANCE and written
        ok &= good
        info = plan.info
        print(f"{'PASS' if good else 'FAIL'}  {routing:8s} splits "
              f"{info['kv_splits']:2d} chunks {info['context_chunks']} "
              f"max error {err:.2e}, cache written: {written}")
    ok &= check_write_cache_and_permute(bundle)
    print("ALL PASS" if ok else "SOME FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
