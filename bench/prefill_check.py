#!/usr/bin/env python3
"""Check Tessel's prefill attention kernels on an NVIDIA GPU, through the
runtime, and (with --bench) time them beside SDPA.

  tessel-aot bench/prefill_kernels.mlir --targets=sm80,sm90 -o pre.tsb
  python3 bench/prefill_check.py pre.tsb \
      --runtime /tmp/tessel-gpu-check/libtessel_runtime.so [--bench]

Kernel names (bench/gen_attention_kernels.py) spell heads, qk and v head
dims, dtype, causal and LSE. Every kernel runs on ragged batches of fresh
random data (query lengths 1, 5, 129, 1000+, an empty request, lengths not
multiples of any tile), outputs poisoned with NaN; the reference is fp32
torch per request (GQA heads expanded, causal mask). out within 1e-2 of the
largest reference magnitude, LSE within 1e-3 (natural log). Exits 1 unless
every check passed (ALL OK last).

--bench: causal prefill TFLOP/s (useful FLOPs: 4 B L^2 H D / 2 per causal
batch) of Tessel beside torch SDPA's flash and cuDNN backends on the same
[B, H, L, D] data: 4 x 4096 and a ragged batch, head dim 128, GQA 32/8 and
64/4. Times are medians of CUDA events; Tessel's launches are replayed from
a CUDA graph.
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


def inputs(c, lens, gen):
    T = sum(lens)
    dev = "cuda"
    q = torch.randn(T, c.hq, c.d, device=dev, generator=gen).to(c.dtype)
    k = torch.randn(T, c.hkv, c.d, device=dev, generator=gen).to(c.dtype)
    v = torch.randn(T, c.hkv, c.dv, device=dev, generator=gen).to(c.dtype)
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()),
                      dtype=torch.int32, device=dev)
    return q, k, v, cu


def reference(c, q, k, v, lens):
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
            s = qs @ ks.transpose(1, 2) * c.scale
            if c.causal:
                mask = torch.ones(n, n, device="cuda", dtype=torch.bool).tril()
                s = s.masked_fill(~mask, -math.inf)
            lse[:, s0:s0 + n] = torch.logsumexp(s, dim=-1)
            out[s0:s0 + n] = (torch.softmax(s, -1) @ vs).transpose(0, 1)
        s0 += n
    return out, lse


def run(rt, kernel, c, q, k, v, cu):
    T = q.shape[0]
    out = torch.full((T, c.hq, c.dv), math.nan, device="cuda", dtype=c.dtype)
    lse = torch.full((c.hq, T), math.nan, device="cuda")
    rt.launch(kernel, [q, k, v, cu, out] + ([lse] if c.lse else []) + [c.scale])
    return out, lse


def check(rt, kernel, c, lens, gen):
    q, k, v, cu = inputs(c, lens, gen)
    out, lse = run(rt, kernel, c, q, k, v, cu)
    torch.cuda.synchronize()
    ref, ref_lse = reference(c, q, k, v, lens)
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
    print(f"  {'ok  ' if not problems else 'FAIL'} {c.name:34s} "
          f"lens={','.join(map(str, lens)):34s} err {err:.1e} lse "
          f"{lse_err:.1e}" + "".join(f"\n       {p}" for p in problems))
    return not problems


def bench(rt, kernels, gen):
    """Causal prefill TFLOP/s beside SDPA flash and cuDNN."""
    print("causal prefill, head dim 128, bf16: TFLOP/s (useful FLOPs)")
    print(f"{'heads':>6} {'batch':>22} | {'tessel':>7} {'flash':>7} "
          f"{'cudnn':>7} | {'/flash':>6} {'/cudnn':>6}")
    for hq, hkv in ((32, 8), (64, 4)):
        name = f"pre_q{hq}_kv{hkv}_d128_v128_causal_lse"
        if name not in kernels:
            continue
        c, kernel = Case(name), kernels[name]
        for lens in ([4096] * 4, [8000, 100, 1500, 37, 4000, 513, 2100]):
            q, k, v, cu = inputs(c, lens, gen)
            T = q.shape[0]
            out = torch.empty(T, hq, 128, device="cuda", dtype=c.dtype)
            lse = torch.empty(hq, T, device="cuda")
            fn, rep = graphed(lambda: rt.launch(kernel,
                                                [q, k, v, cu, out, lse,
                                                 c.scale]))
            t_tessel = timed(fn) / rep
            flops = sum(4 * n * n * hq * 128 / 2 for n in lens)
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
                            qq, kk, vv, is_causal=True, enable_gqa=True)
                try:
                    with torch.nn.attention.sdpa_kernel(backend):
                        peers[label] = timed(sdpa)
                except RuntimeError as e:
                    print(f"  {label} refused: {str(e).splitlines()[0]}")
                    peers[label] = math.inf
            tf = lambda ms: flops / ms / 1e9  # noqa: E731
            batch = "4x4096" if lens == [4096] * 4 else f"ragged T={T}"
            print(f"{hq:>3}/{hkv:<2} {batch:>22} | {tf(t_tessel):7.1f} "
                  f"{tf(peers['flash']):7.1f} {tf(peers['cudnn']):7.1f} | "
                  f"{peers['flash'] / t_tessel:6.2f} "
                  f"{peers['cudnn'] / t_tessel:6.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", action="store_true")
    args, gen, rt = session(parser, 99)
    kernels = rt.kernels(args.bundles, NAME.match)
    ok = True
    for name, kernel in sorted(kernels.items()):
        c = Case(name)
        try:
            ok &= check(rt, kernel, c, RAGGED, gen)
            ok &= check(rt, kernel, c, [64, 63, 65, 1, 2], gen)
            ok &= check(rt, kernel, c, [3000], gen)
        except Exception as e:  # report, keep going
            print(f"  FAIL {name}: {type(e).__name__}: {e}")
            ok = False
    print("ALL OK" if ok else "SOME CHECKS FAILED")
    if args.bench:
        bench(rt, kernels, gen)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
