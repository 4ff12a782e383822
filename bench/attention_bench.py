#!/usr/bin/env python3
"""Tessel's LSE merge beside eager torch and the copy ceiling.

The merge of two partial attentions of 16K tokens x 32 heads x 128 (the
extend phase's chunk merge of a Llama-3-8B-like model), with f32 and with
bf16 partials, bf16 out and the merged LSE (the kernels of
bench/attention_kernels.mlir, <bundles>/attention.tsb). Per case, in one
run on the same inputs: the Tessel kernel, the formula of DESIGN.md in
eager torch ops (what a serving engine without a merge kernel runs), and
the device's copy ceiling measured in the same run (a large
device-to-device copy, read + write). Bandwidth is the bytes the merge
must move (both partials and their LSEs read, out and lse_out written)
over the time; Tessel's launches are replayed from a CUDA graph.

    python3 bench/attention_bench.py [--bundles .carry] [--smoke]

Each kernel's output is checked once against a float64 reference first
(bench/benchlib.py: the common options). --smoke: 64 tokens on the host.
"""
import sys

import torch

import benchlib

H, D = 32, 128
# kernel -> (partials' dtype, out dtype)
KERNELS = {"merge_f32_h32_d128_bf16_lse": (torch.float32, torch.bfloat16),
           "merge_bf16_h32_d128_bf16_lse": (torch.bfloat16, torch.bfloat16)}
NAMES = {torch.float32: "f32", torch.bfloat16: "bf16"}


def merge(oa, la, ob, lb, out, lse_out):
    """The merge as DESIGN.md writes it, in torch ops in out's and the
    LSEs' precision (f32 for the eager peer, float64 for the reference):
    m = max(lse_a, lse_b); wa = exp(lse_a - m); wb = exp(lse_b - m);
    out = (o_a wa + o_b wb) / (wa + wb); lse = m + log(wa + wb). (Without
    the infinity rules: the inputs here have none.)"""
    m = torch.maximum(la, lb)
    wa = torch.exp(la - m).t().unsqueeze(-1)
    wb = torch.exp(lb - m).t().unsqueeze(-1)
    s = wa + wb
    out.copy_((oa.to(wa.dtype) * wa + ob.to(wa.dtype) * wb) / s)
    lse_out.copy_(m + torch.log(s.squeeze(-1).t()))


def bench_merge(bench, kernel, parts, out_dtype, T, ceiling):
    gen, dev = bench.gen, bench.device
    oa, ob = (torch.randn(T, H, D, device=dev, generator=gen).to(parts)
              for _ in range(2))
    la, lb = (torch.randn(H, T, device=dev, generator=gen) * 3
              for _ in range(2))
    out = torch.full((T, H, D), float("nan"), dtype=out_dtype, device=dev)
    lse = torch.full((H, T), float("nan"), device=dev)
    kernel(oa, la, ob, lb, out, lse)
    ref_out = torch.empty(T, H, D, dtype=torch.float64, device=dev)
    ref_lse = torch.empty(H, T, dtype=torch.float64, device=dev)
    merge(oa, la.double(), ob, lb.double(), ref_out, ref_lse)
    err = benchlib.relative_error(out, ref_out)
    lse_err = (lse.double() - ref_lse).abs().max().item()
    case = f"{NAMES[parts]} partials -> {NAMES[out_dtype]}, T={T}"
    bench.check(f"{kernel.name} {case}", err <= 1e-2 and lse_err <= 1e-3,
                f"out error {err:.1e}, LSE error {lse_err:.1e}")
    del ref_out, ref_lse

    nbytes = (2 * oa.numel() * oa.element_size() +
              out.numel() * out.element_size() + 3 * la.numel() * 4)
    ours = nbytes / bench.launch_ms(lambda: kernel(oa, la, ob, lb, out,
                                                   lse)) / 1e9
    peer_out, peer_lse = torch.empty_like(out), torch.empty_like(lse)
    eager = nbytes / bench.time_ms(lambda: merge(oa, la, ob, lb, peer_out,
                                                 peer_lse)) / 1e9
    print(f"{case:28s} {kernel.name:30s} {nbytes / 2**20:8.1f} "
          f"{ours:7.2f} {eager:7.2f} {ours / eager:6.2f}x "
          f"{ours / ceiling:6.2f}")
    bench.row(case, "TB/s", ours, "eager torch", eager)
    bench.row(case, "TB/s", ours, "device copy (ceiling)", ceiling)


def main():
    args = benchlib.parser(__doc__, reps=50).parse_args()
    bench = benchlib.Bench(args, "attention_bench")
    T = 64 if bench.smoke else 16384
    bundle = bench.bundle("attention")
    ceiling = bench.copy_ceiling()
    print(f"device copy ceiling (copy_, read + write): {ceiling:.2f} TB/s")
    print(f"""\
LSE merge of T={T} tokens x H={H} heads x D={D}, with lse_out; TB/s of the
bytes the merge must move (o_a, o_b, lse_a, lse_b read; out, lse_out
written); medians of {bench.reps} timings.
  tessel: the kernel; eager: DESIGN.md's formula in torch ops (f32 math);
  /eager: tessel over eager; /copy: tessel over the copy ceiling.""")
    print(f"{'case':28s} {'kernel':30s} {'MiB':>8s} {'tessel':>7s} "
          f"{'eager':>7s} {'/eager':>7s} {'/copy':>6s}")
    for name, (parts, out_dtype) in KERNELS.items():
        bench_merge(bench, bundle[name], parts, out_dtype, T, ceiling)
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
