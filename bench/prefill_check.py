#!/usr/bin/env python3
"""Check Tessel's prefill attention kernels on an NVIDIA GPU, through the
runtime, and (with --bench) time them beside SDPA.

  tessel-aot bench/prefill_kernels.mlir --targets=sm80,sm90,sm90a -o pre.tsb
  tessel-aot bench/prefill_kernels.mlir --targets=sm80,sm90 -o pre80.tsb
  python3 bench/prefill_check.py pre.tsb \
      --runtime /tmp/tessel-gpu-check/libtessel_runtime.so \
      [--bench [--baseline pre80.tsb]]

Kernel names (bench/gen_attention_kernels.py) spell heads, qk and v head
dims, dtype, causal and LSE. Every kernel runs on ragged batches of fresh
random data (query lengths 1, 5, 129, 1000+, an empty request, lengths not
multiples of any tile; rows of no request past the last, NaN; one batch
at a negative scale), outputs
poisoned with NaN; the reference is fp32 torch per request (GQA heads
expanded, causal mask). out within 1e-2 of the largest reference
magnitude, LSE within 1e-3 (natural log). Exits 1 unless every check
passed (ALL OK last).

--bench: prefill TFLOP/s (useful FLOPs: 2 L^2 H (D + Dv) per request,
half of it causal) of Tessel beside torch SDPA's flash and cuDNN backends
on the same [B, H, L, D] data, and beside the same kernels of the
--baseline bundles (the sm80 template, where the first bundle has sm_90a
code): 4 x 4096 and a ragged batch of the BENCH kernels (causal and not,
head dims 64 to 256, GQA 32/8 and 64/4). Times are medians of CUDA events;
Tessel's launches are replayed from a CUDA graph.
"""
import argparse
import math
import re
import sys

import torch
import torch.nn.attention
import torch.nn.functional as F

from paged_decode_bench import graphed, timed
from paged_decode_check import session

NAME = re.compile(r"pre_q(?P<hq>\d+)_kv(?P<hkv>\d+)_d(?P<d>\d+)_v(?P<v>\d+)"
                  r"(?P<f16>_f16)?(?P<causal>_causal)?(?P<lse>_lse)?$")
RAGGED = [1, 5, 129, 1000, 0, 77, 1333]


class Case:
    def __init__(self, name):
        m = NAME.match(name)
        if not m:
            raise ValueError(name)
        self.name = name
        self.hq, self.hkv = int(m["hq"]), int(m["hkv"])
        self.d, self.dv = int(m["d"]), int(m["v"])
        self.dtype = torch.float16 if m["f16"] else torch.bfloat16
        self.causal, self.lse = bool(m["causal"]), bool(m["lse"])
        self.scale = self.d ** -0.5


def inputs(c, lens, gen, pad=0):
    """q, k, v of the requests' rows and then `pad` rows of no request,
    NaN (no kernel may read them into a result), and cu_seqlens."""
    T = sum(lens) + pad
    dev = "cuda"
    q = torch.randn(T, c.hq, c.d, device=dev, generator=gen).to(c.dtype)
    k = torch.randn(T, c.hkv, c.d, device=dev, generator=gen).to(c.dtype)
    v = torch.randn(T, c.hkv, c.dv, device=dev, generator=gen).to(c.dtype)
    for t in (q, k, v):
        t[T - pad:] = math.nan
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()),
                      dtype=torch.int32, device=dev)
    return q, k, v, cu


def reference(c, q, k, v, lens, scale):
    """fp32 out [T, Hq, Dv] and lse [Hq, T]."""
    T = q.shape[0]
    out = torch.zeros(T, c.hq, c.dv, device="cuda")
    lse = torch.full((c.hq, T), -math.inf, device="cuda")
    g = c.hq // c.hkv
    s0 = 0
    for n in lens:
        if n:
            qs = q[s0:s0 + n].float().transpose(0, 1)          # [H, n, D]
            ks = k[s0:s0 + n].float().repeat_interleave(g, 1).transpose(0, 1)
            vs = v[s0:s0 + n].float().repeat_interleave(g, 1).transpose(0, 1)
            s = qs @ ks.transpose(1, 2) * scale
            if c.causal:
                mask = torch.ones(n, n, device="cuda", dtype=torch.bool).tril()
                s = s.masked_fill(~mask, -math.inf)
            lse[:, s0:s0 + n] = torch.logsumexp(s, dim=-1)
            out[s0:s0 + n] = (torch.softmax(s, -1) @ vs).transpose(0, 1)
        s0 += n
    return out, lse


def run(rt, kernel, c, q, k, v, cu, scale):
    T = q.shape[0]
    out = torch.full((T, c.hq, c.dv), math.nan, device="cuda", dtype=c.dtype)
    lse = torch.full((c.hq, T), math.nan, device="cuda")
    rt.launch(kernel, [q, k, v, cu, out] + ([lse] if c.lse else []) + [scale])
    return out, lse


def check(rt, kernel, c, lens, gen, pad=0, scale=None):
    """One batch against the reference; `scale` (default the model's)
    may be any float: the sm_90a kernel takes another path where it is not
    positive."""
    scale = c.scale if scale is None else scale
    q, k, v, cu = inputs(c, lens, gen, pad)
    out, lse = run(rt, kernel, c, q, k, v, cu, scale)
    torch.cuda.synchronize()
    rows = sum(lens)  # padding rows stay unwritten
    out, lse = out[:rows], lse[:, :rows]
    ref, ref_lse = reference(c, q[:rows], k[:rows], v[:rows], lens, scale)
    problems = []
    if torch.isnan(out).any():
        problems.append("NaN in out (unwritten or computed)")
    err = ((out.float() - ref).abs().max().item() /
           (ref.abs().max().item() or 1.0)) if out.numel() else 0.0
    if err > 1e-2:
        problems.append(f"out error {err:.2e} > 1e-2")
    lse_err = 0.0
    if c.lse and lse.numel():
        lse_err = (lse - ref_lse).abs().max().item()
        if not lse_err <= 1e-3:
            problems.append(f"LSE error {lse_err:.2e} > 1e-3")
    shown = ",".join(map(str, lens)) + (f"+{pad} NaN" if pad else "")
    if scale != c.scale:
        shown += f" scale {scale:g}"
    print(f"  {'ok  ' if not problems else 'FAIL'} {c.name:34s} "
          f"lens={shown:34s} err {err:.1e} lse "
          f"{lse_err:.1e}" + "".join(f"\n       {p}" for p in problems))
    return not problems


# (kernel, causal); each on 4 x 4096 and a ragged batch.
BENCH = ["pre_q32_kv8_d128_v128_causal_lse", "pre_q64_kv4_d128_v128_causal_lse",
         "pre_q32_kv8_d128_v128_lse", "pre_q32_kv8_d64_v64_causal_lse",
         "pre_q16_kv2_d256_v256_causal_lse",
         "pre_q16_kv16_d192_v128_causal_lse"]


def bench(rt, kernels, gen, baseline):
    """Prefill TFLOP/s beside SDPA flash and cuDNN (and the kernels of
    the --baseline bundle: the sm80 template where `kernels` are sm90a)."""
    print("prefill, bf16: TFLOP/s (useful FLOPs: causal counts half)")
    print(f"{'kernel':>34} {'batch':>14} | {'tessel':>7} {'base':>7} "
          f"{'flash':>7} {'cudnn':>7} | {'/base':>6} {'/flash':>6} "
          f"{'/cudnn':>6}")
    for name in BENCH:
        if name not in kernels:
            continue
        c, kernel = Case(name), kernels[name]
        for lens in ([4096] * 4, [8000, 100, 1500, 37, 4000, 513, 2100]):
            q, k, v, cu = inputs(c, lens, gen)
            T = q.shape[0]
            out = torch.empty(T, c.hq, c.dv, device="cuda", dtype=c.dtype)
            lse = torch.empty(c.hq, T, device="cuda")

            def tessel_ms(kern):
                fn, rep = graphed(lambda: rt.launch(
                    kern, [q, k, v, cu, out, lse, c.scale]))
                return timed(fn) / rep

            t_tessel = tessel_ms(kernel)
            t_base = (tessel_ms(baseline[name]) if name in baseline
                      else math.inf)
            flops = sum(2 * n * n * c.hq * (c.d + c.dv) for n in lens)
            if c.causal:
                flops /= 2
            peers = {}
            for backend, label in (
                    (torch.nn.attention.SDPBackend.FLASH_ATTENTION, "flash"),
                    (torch.nn.attention.SDPBackend.CUDNN_ATTENTION, "cudnn")):
                # Per request, [1, H, n, D]: the same work, back to back.
                views = []
                s0 = 0
                for n in lens:
                    views.append((q[s0:s0 + n].transpose(0, 1)[None],
                                  k[s0:s0 + n].transpose(0, 1)[None],
                                  v[s0:s0 + n].transpose(0, 1)[None]))
                    s0 += n

                def sdpa():
                    for qq, kk, vv in views:
                        F.scaled_dot_product_attention(
                            qq, kk, vv, is_causal=c.causal, enable_gqa=True,
                            scale=c.scale)
                try:
                    with torch.nn.attention.sdpa_kernel(backend):
                        peers[label] = timed(sdpa)
                except RuntimeError as e:
                    print(f"  {label} refused: {str(e).splitlines()[0]}")
                    peers[label] = math.inf
            tf = lambda ms: flops / ms / 1e9  # noqa: E731
            batch = "4x4096" if lens == [4096] * 4 else f"ragged T={T}"
            print(f"{name:>34} {batch:>14} | {tf(t_tessel):7.1f} "
                  f"{tf(t_base):7.1f} {tf(peers['flash']):7.1f} "
                  f"{tf(peers['cudnn']):7.1f} | {t_base / t_tessel:6.2f} "
                  f"{peers['flash'] / t_tessel:6.2f} "
                  f"{peers['cudnn'] / t_tessel:6.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", action="store_true")
    parser.add_argument("--baseline", action="append", default=[],
                        help="bundle whose kernels of the same names are "
                        "timed beside (--bench)")
    args, gen, rt = session(parser, 99)
    kernels = rt.kernels(args.bundles, NAME.match)
    ok = True
    for name, kernel in sorted(kernels.items()):
        c = Case(name)
        try:
            ok &= check(rt, kernel, c, RAGGED, gen)
            ok &= check(rt, kernel, c, [64, 63, 65, 1, 2], gen)
            ok &= check(rt, kernel, c, [3000], gen)
            ok &= check(rt, kernel, c, [200, 70], gen, pad=50)
            ok &= check(rt, kernel, c, [300, 129], gen, scale=-c.scale)
        except Exception as e:  # report, keep going
            print(f"  FAIL {name}: {type(e).__name__}: {e}")
            ok = False
    print("ALL OK" if ok else "SOME CHECKS FAILED")
    if args.bench:
        bench(rt, kernels, gen, rt.kernels(args.baseline, NAME.match))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
