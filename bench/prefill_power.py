#!/usr/bin/env python3
"""Prefill under the power limit: Tessel's kernels and SDPA cuDNN per SM
cycle, in a burst and sustained.

An H200 holds its 700 W limit by lowering the SM clock, so a prefill
kernel's TFLOP/s depends on how long it has been running. For head dim
128 (GQA 32/8 causal and not, 64/4 causal; 4 x 4096 tokens, bf16) this
times Tessel's kernel (<bundles>/prefill.tsb) and SDPA cuDNN on the same
data (per request [1, H, n, D], back to back), each
  - in a burst: 20 single calls 0.1 s apart (the power stays low), and
  - sustained: calls back to back for 3 s,
while nvidia-smi samples the SM clock and the power every 50 ms. Printed:
TFLOP/s (useful FLOPs, causal counts half), the median clock and power,
useful FLOP per SM cycle (TFLOP/s / (clock x SMs); the H200's dense bf16
peak is 4096: 989.4 TFLOP/s = 132 SMs x 4096 x 1830 MHz), and Tessel over
cuDNN. Tessel's output is checked once against SDPA's math in float32 first.
Both are CUDA-graph replays (a burst of plain SDPA calls would time the
host's launches between its requests).

    python3 bench/prefill_power.py [--bundles .carry]

Needs CUDA and nvidia-smi (not part of bench/peer_table.py: it takes a
minute and its table is of clocks, not of peers).
"""
import statistics
import subprocess
import sys
import tempfile
import time

import torch

import benchlib

CASES = [("pre_q32_kv8_d128_v128_causal_lse", [4096] * 4),
         ("pre_q32_kv8_d128_v128_lse", [4096] * 4),
         ("pre_q64_kv4_d128_v128_causal_lse", [4096] * 4)]
PEAK_FLOP_PER_SM_CYCLE = 4096


class Sampler:
    """nvidia-smi's SM clock (MHz) and power (W) every 50 ms while the
    `with` block runs (its first samples, before the block, dropped)."""

    def __enter__(self):
        self.file = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=clocks.sm,power.draw",
             "--format=csv,noheader,nounits", "-lms", "50"],
            stdout=self.file)
        time.sleep(0.3)
        self.file.seek(0, 2)
        self.skip = self.file.tell()
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait()
        self.file.seek(self.skip)
        rows = [line.split(",") for line in self.file.read().splitlines()
                if line.strip()]
        self.clock = statistics.median(float(r[0]) for r in rows)
        self.power = statistics.median(float(r[1]) for r in rows)


def burst(call):
    """(median ms of a call, MHz, W) over 20 calls 0.1 s apart."""
    times = []
    with Sampler() as s:
        for _ in range(20):
            time.sleep(0.1)
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            stop.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(stop))
    return statistics.median(times), s.clock, s.power


def sustained(call, seconds=3.0):
    """(ms a call, MHz, W) over `seconds` of calls back to back."""
    with Sampler() as s:
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        calls, began = 0, time.monotonic()
        start.record()
        while time.monotonic() - began < seconds:
            call()
            calls += 1
            if calls % 16 == 0:  # keep the host a few calls ahead, no more
                torch.cuda.synchronize()
        stop.record()
        torch.cuda.synchronize()
    return start.elapsed_time(stop) / calls, s.clock, s.power


def main():
    args = benchlib.parser(__doc__).parse_args()
    bench = benchlib.Bench(args, "prefill_power")
    if bench.cuda_only("the whole benchmark (clocks of a GPU)"):
        return 0
    import torch.nn.attention
    import torch.nn.functional as F
    kernels = bench.bundle("prefill")
    sms = bench.compute_units()
    print(f"{'kernel':>34} {'how':>9} {'who':>6} | {'TFLOP/s':>7} "
          f"{'MHz':>5} {'W':>4} {'FLOP/SM-cycle':>13} {'of peak':>7} | "
          f"{'tessel/cudnn':>12}")
    for name, lens in CASES:
        kernel = kernels[name]
        p = kernel.params
        hq, hkv, d, dv = (p[n] for n in ("num_q_heads", "num_kv_heads",
                                         "head_dim", "v_head_dim"))
        causal, scale = bool(p["causal"]), d ** -0.5
        T = sum(lens)
        q, k, v = (torch.randn(T, h, w, device="cuda", generator=bench.gen)
                   .to(torch.bfloat16)
                   for h, w in ((hq, d), (hkv, d), (hkv, dv)))
        cu = torch.tensor([0] + lens, device="cuda").cumsum(0).int()
        out = torch.empty(T, hq, dv, dtype=torch.bfloat16, device="cuda")
        lse = torch.empty(hq, T, device="cuda")
        views, start = [], 0
        for n in lens:
            views.append(tuple(t[start:start + n].transpose(0, 1)[None]
                               for t in (q, k, v)))
            start += n

        def sdpa(backend, dtype=torch.bfloat16):
            with torch.nn.attention.sdpa_kernel(backend):
                return [F.scaled_dot_product_attention(
                    a.to(dtype), b.to(dtype), c.to(dtype), is_causal=causal,
                    enable_gqa=True, scale=scale) for a, b, c in views]

        kernel(q, k, v, cu, out, lse, scale)
        ref = torch.cat([o[0].transpose(0, 1) for o in sdpa(
            torch.nn.attention.SDPBackend.MATH, torch.float32)])
        err = benchlib.relative_error(out, ref)
        bench.check(f"{name} 4x4096", err <= 1e-2, f"error {err:.1e}")
        ref = None
        flops = sum(2 * n * n * hq * (d + dv) for n in lens) / \
            (2 if causal else 1)
        calls = {"tessel": benchlib.graphed(
                     lambda: kernel(q, k, v, cu, out, lse, scale)),
                 "cudnn": benchlib.graphed(lambda: sdpa(
                     torch.nn.attention.SDPBackend.CUDNN_ATTENTION))}
        for how, measure in (("burst", burst), ("sustained", sustained)):
            per_cycle = {}
            for who, call in calls.items():
                call()
                torch.cuda.synchronize()
                ms, mhz, watts = measure(call)
                tflops = flops / ms / 1e9
                per_cycle[who] = tflops * 1e12 / (mhz * 1e6 * sms)
                ratio = (f"{per_cycle['tessel'] / per_cycle['cudnn']:5.2f}x "
                         f"a cycle" if who == "cudnn" else "")
                print(f"{name:>34} {how:>9} {who:>6} | {tflops:7.1f} "
                      f"{mhz:5.0f} {watts:4.0f} {per_cycle[who]:13.0f} "
                      f"{per_cycle[who] / PEAK_FLOP_PER_SM_CYCLE:7.1%} | "
                      f"{ratio:>12}", flush=True)
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
