#!/usr/bin/env python3
"""Time Tessel's LSE merge beside eager torch on an NVIDIA GPU.

The merge of two partial attentions of 16K tokens x 32 heads x 128 (the
extend phase's chunk merge of a Llama-3-8B-like model), with f32 and with
bf16 partials, bf16 out and the merged LSE. Per case, in one run on the same
inputs: the Tessel kernel, the formula of DESIGN.md written in eager torch
ops (what a serving engine without a merge kernel runs), and the device's
copy ceiling measured in the same run (a large device-to-device copy, read
+ write). Bandwidth is the bytes the merge must move (both partials and
their LSEs read, out and lse_out written) over the time.

  tessel-aot bench/attention_kernels.mlir --targets=sm80,sm90 -o attn.tsb
  python3 bench/attention_bench.py attn.tsb

Each timed kernel's output is checked once against a float64 reference
(attention_check.py checks them in full). Exits 1 if a Tessel kernel was
wrong.
"""
import sys

import torch

from attention_check import (BundleKernel, arg_dtype, merge_reference,
                             out_tolerance, rel_err, lse_err)
from grouped_matmul_bench import time_ms
from grouped_matmul_check import bundle_parser, start

T, H, D = 16384, 32, 128


def torch_merge(oa, la, ob, lb, out, lse_out):
    """The merge as DESIGN.md writes it, in eager torch (f32 math):
    m = max(lse_a, lse_b); wa = exp(lse_a - m); wb = exp(lse_b - m);
    out = (o_a wa + o_b wb) / (wa + wb); lse = m + log(wa + wb). (Without
    the infinity rules: the inputs here have none.)"""
    m = torch.maximum(la, lb)
    wa = torch.exp(la - m).t().unsqueeze(-1)
    wb = torch.exp(lb - m).t().unsqueeze(-1)
    s = wa + wb
    out.copy_((oa.float() * wa + ob.float() * wb) / s)
    lse_out.copy_(m + torch.log(s.squeeze(-1).t()))


def copy_ceiling(reps):
    """TB/s of a 2 GiB device-to-device copy (bytes read + written)."""
    n = 1 << 29  # f32 elements: 2 GiB
    src = torch.empty(n, device="cuda")
    dst = torch.empty_like(src)
    ms = per_call_ms(lambda: dst.copy_(src), reps)
    del src, dst
    return 2 * n * 4 / ms / 1e9


def tbps(nbytes, ms):
    return nbytes / ms / 1e9


def per_call_ms(fn, reps, inner=10):
    """Median time of one call of `fn`, timed `inner` calls at a time so
    that the host's launch gaps do not count."""
    def batch():
        for _ in range(inner):
            fn()
    return time_ms(batch, reps) / inner


def bench_merge(kernel, gen, reps, ceiling):
    """Times one merge kernel and its torch peer; prints a row; returns
    False if the kernel's output was wrong."""
    r = kernel.record
    pd, od = arg_dtype(r, "o_a"), arg_dtype(r, "out")
    oa = (torch.randn(T, H, D, device="cuda", generator=gen)).to(pd)
    ob = (torch.randn(T, H, D, device="cuda", generator=gen)).to(pd)
    la = torch.randn(H, T, device="cuda", generator=gen) * 3
    lb = torch.randn(H, T, device="cuda", generator=gen) * 3
    out = torch.full((T, H, D), float("nan"), dtype=od, device="cuda")
    lse = torch.full((H, T), float("nan"), device="cuda")
    args = dict(o_a=oa, lse_a=la, o_b=ob, lse_b=lb, out=out, lse_out=lse)

    kernel(**args)
    torch.cuda.synchronize()
    ref_out, ref_lse = merge_reference(oa, la, ob, lb)
    err = rel_err(out, ref_out)
    good = err <= out_tolerance(od) and lse_err(lse, ref_lse) <= 0
    del ref_out, ref_lse

    nbytes = (2 * oa.numel() * oa.element_size() + out.numel() *
              out.element_size() + 3 * la.numel() * 4)
    ours = tbps(nbytes, per_call_ms(kernel.prepare(**args), reps))
    peer_out = torch.empty_like(out)
    peer_lse = torch.empty_like(lse)
    eager = tbps(nbytes, per_call_ms(
        lambda: torch_merge(oa, la, ob, lb, peer_out, peer_lse), reps))
    label = f"{str(pd)[6:]} partials -> {str(od)[6:]}"
    print(f"{label:28s} {kernel.name:28s} {nbytes / 2**20:8.0f} "
          f"{ours:7.2f} {eager:7.2f} {ours / eager:6.2f}x "
          f"{ours / ceiling:6.2f}   {'ok' if good else 'WRONG'} {err:.1e}")
    return good


def main():
    parser = bundle_parser(__doc__)
    parser.add_argument("--reps", type=int, default=50,
                        help="timed batches per case (the median is shown)")
    args = parser.parse_args()
    gen, _, kernels = start(args.bundles, args.seed, make=BundleKernel)
    ceiling = copy_ceiling(args.reps)
    print(f"device copy ceiling (2 GiB copy_, read + write): "
          f"{ceiling:.2f} TB/s")
    print(f"""\
LSE merge of T={T} tokens x H={H} heads x D={D}, with lse_out; TB/s of the
bytes the merge must move (o_a, o_b, lse_a, lse_b read; out, lse_out
written); median over {args.reps} batches of 10 calls between CUDA events,
after 5 warm-up batches.
  tessel: the kernel; eager: DESIGN.md's formula in torch ops (f32 math);
  /eager: tessel over eager; /copy: tessel over the copy ceiling;
  check:  the kernel's output against a float64 reference.""")
    print(f"{'case':28s} {'kernel':28s} {'MiB':>8s} {'tessel':>7s} "
          f"{'eager':>7s} {'/eager':>7s} {'/copy':>6s}   check")
    ok, ran = True, 0
    for k in kernels.values():
        r = k.record
        if (k.op != "tessel.lse_merge" or arg_dtype(r, "lse_out") is None or
                [a["dims"] for a in r["args"] if a["name"] == "o_a"][0][1:]
                != [(-1, 1, H), (-1, 1, D)]):
            continue
        ok &= bench_merge(k, gen, args.reps, ceiling)
        ran += 1
        torch.cuda.empty_cache()
    if not ran:
        print(f"no lse_merge kernel of H={H}, D={D} with lse_out in the "
              "bundles")
        return 1
    print("ALL OK" if ok else "SOME TESSEL OUTPUTS WRONG")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
