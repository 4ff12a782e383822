#!/usr/bin/env python3
"""Check Tessel's absorbed MLA decode kernels on an NVIDIA GPU, through the
runtime, and (with --bench) measure their bandwidth.

  tessel-aot bench/mla_decode_kernels.mlir --targets=sm80,sm90,sm90a -o mla.tsb
  python3 bench/mla_decode_check.py mla.tsb \
      --runtime /tmp/tessel-gpu-check/libtessel_runtime.so \
      [--bench [--baseline mla80.tsb]]

Kernels mla[split]_h<H>_bs<BS> (bench/gen_attention_kernels.py): q
[B, H, 576] against a latent cache [NB, BS, 576] whose first 512 dims are
the values; out [B, H, 512] bf16 (or split-form f32 partials [P, B, H, 512]
with LSEs, checked one by one and merged). Contexts 0, 1, 18, 463, 1328,
33000, block tables with garbage past each request's blocks, cache rows
outside every context NaN, outputs poisoned; fp32 torch reference; out within 1e-2 of the largest reference
magnitude, LSE within 1e-3. Exits 1 unless every check passed.

--bench: DeepSeek-V3 (128 heads) decode at 8K context, batch 64 and 128,
and 8 x 64K; 16 heads at 8K: bytes of latent cache read / time and
TFLOP/s, beside the device copy ceiling measured in the same run and the
same kernels of the --baseline bundles (split form with P chosen to fill
the GPU, plus the merge in torch, timed apart).
"""
import argparse
import math
import re
import sys

import torch

from paged_decode_bench import copy_ceiling, graphed, timed
from paged_decode_check import merge, session

NAME = re.compile(r"mla(?P<split>split)?_h(?P<h>\d+)_bs(?P<bs>\d+)$")
CONTEXTS = [0, 1, 18, 463, 1328, 33000]
# DeepSeek-V3's softmax scale (qk head dim 192), given at launch.
SCALE = 192 ** -0.5


def batch(H, BS, lens, gen):
    dev = "cuda"
    B = len(lens)
    per = [max(1, -(-n // BS)) for n in lens]
    mb, nb = max(per), sum(per) + 2
    q = torch.randn(B, H, 576, device=dev, generator=gen).bfloat16()
    cache = torch.randn(nb, BS, 576, device=dev, generator=gen).bfloat16()
    perm = torch.randperm(nb, device=dev, generator=gen).int()
    bt = torch.randint(-4, 2 * nb, (B, mb), device=dev, generator=gen,
                       dtype=torch.int32)
    at = 0
    for b, n in enumerate(per):
        bt[b, :n] = perm[at:at + n]
        at += n
    # Rows no request may read are NaN: the two spare blocks and the tail
    # of each request's last block.
    cache[perm[at:].long()] = math.nan
    for b, n in enumerate(lens):
        if n % BS:
            cache[bt[b, per[b] - 1].long(), n % BS:] = math.nan
    return q, cache, bt, torch.tensor(lens, dtype=torch.int32, device=dev)


def reference(q, cache, bt, lens, BS, windows=None):
    B, H, _ = q.shape
    out = torch.zeros(B, H, 512, device="cuda")
    lse = torch.full((H, B), -math.inf, device="cuda")
    for b, n in enumerate(lens):
        s0, e0 = windows[b] if windows else (0, n)
        if e0 <= s0:
            continue
        tok = torch.arange(s0, e0, device="cuda")
        rows = cache[bt[b, tok // BS].long(), tok % BS].float()  # [n, 576]
        s = q[b].float() @ rows.T * SCALE
        lse[:, b] = torch.logsumexp(s, -1)
        out[b] = torch.softmax(s, -1) @ rows[:, :512]
    return out, lse


def check(rt, kernel, name, lens, gen, P=1):
    m = NAME.match(name)
    H, BS, split = int(m["h"]), int(m["bs"]), bool(m["split"])
    q, cache, bt, sl = batch(H, BS, lens, gen)
    B = len(lens)
    problems = []
    if split:
        out = torch.full((P, B, H, 512), math.nan, device="cuda")
        lse = torch.full((P, H, B), math.nan, device="cuda")
    else:
        out = torch.full((B, H, 512), math.nan, device="cuda",
                         dtype=torch.bfloat16)
        lse = torch.full((H, B), math.nan, device="cuda")
    rt.launch(kernel, [q, cache, bt, sl, out, lse, SCALE])
    torch.cuda.synchronize()
    if split:
        per = -(-bt.shape[1] // P) * BS
        for p in range(P):
            w = [(min(p * per, n), min((p + 1) * per, n)) for n in lens]
            ro, rl = reference(q, cache, bt, lens, BS, w)
            e = (out[p] - ro).abs().max().item() / (ro.abs().max().item() or 1)
            if not e <= 1e-2:
                problems.append(f"partial {p}: out error {e:.1e}")
            fin = torch.isfinite(rl)
            if not torch.equal(torch.isfinite(lse[p]), fin):
                problems.append(f"partial {p}: LSE -inf pattern")
        out, lse = merge(out, lse)
    ro, rl = reference(q, cache, bt, lens, BS)
    if torch.isnan(out).any():
        problems.append("NaN in out")
    err = (out.float() - ro).abs().max().item() / (ro.abs().max().item() or 1)
    fin = torch.isfinite(rl)
    lse_err = (lse[fin] - rl[fin]).abs().max().item() if fin.any() else 0.0
    if not err <= 1e-2:
        problems.append(f"out error {err:.1e} > 1e-2")
    if not lse_err <= 1e-3:
        problems.append(f"LSE error {lse_err:.1e} > 1e-3")
    if not torch.equal(torch.isfinite(lse), fin):
        problems.append("LSE: -inf where (and only where) no key")
    print(f"  {'ok  ' if not problems else 'FAIL'} {name:18s} P={P:<3} "
          f"ctx={','.join(map(str, lens)):34s} err {err:.1e} lse {lse_err:.1e}"
          + "".join(f"\n       {p}" for p in problems))
    return not problems


def bench(rt, kernels, gen, baseline):
    ceiling = copy_ceiling()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"MLA decode, 576/512, bf16, block 64; copy ceiling {ceiling:.2f} "
          f"TB/s; base: the --baseline bundle's kernel of the same name")
    for H, B, ctx in ((128, 64, 8192), (128, 128, 8192), (128, 8, 65536),
                      (16, 64, 8192)):
        q, cache, bt, sl = batch(H, 64, [ctx] * B, gen)
        kv = B * ctx * 576 * 2
        flops = B * ctx * H * (576 + 512) * 2
        out = torch.empty(B, H, 512, device="cuda", dtype=torch.bfloat16)
        lse = torch.empty(H, B, device="cuda")

        def direct(k):
            fn, rep = graphed(lambda: rt.launch(k, [q, cache, bt, sl, out,
                                                    lse, SCALE]))
            return timed(fn) / rep
        name = f"mla_h{H}_bs64"
        t = direct(kernels[name])
        t_base = direct(baseline[name]) if name in baseline else math.inf
        line = (f"  H={H:<3} B={B:<4} ctx={ctx:<6} direct {kv / t / 1e9:5.2f} "
                f"TB/s ({flops / t / 1e9:5.1f} TFLOP/s, base "
                f"{flops / t_base / 1e9:5.1f}, {t_base / t:4.2f}x)")
        best = t
        split = f"mlasplit_h{H}_bs64"
        if split in kernels:
            # The sm90a kernel takes 64 heads a block: split counts that
            # fill 1, 2 or 3 whole waves of one block an SM, and the one
            # that is a wave and a bit at two blocks an SM; the fastest.
            per_split = B * -(-H // 64)
            counts = {max(1, min(P, ctx // 1024)) for P in
                      [k * sms // per_split for k in (1, 2, 3)] +
                      [-(-2 * sms // per_split)]}
            t_split, P = math.inf, 0
            for count in sorted(counts):
                parts = torch.empty(count, B, H, 512, device="cuda")
                plse = torch.empty(count, H, B, device="cuda")
                fn, rep = graphed(lambda: rt.launch(
                    kernels[split], [q, cache, bt, sl, parts, plse, SCALE]))
                t_count = timed(fn) / rep
                if t_count < t_split:
                    t_split, P = t_count, count
            best = min(t, t_split)
            line += (f"  split P={P:<2} (of {sorted(counts)}) partials "
                     f"{kv / t_split / 1e9:5.2f} TB/s "
                     f"({flops / t_split / 1e9:5.1f} TFLOP/s)")
        print(line + f"  best/copy {kv / best / 1e9 / ceiling:4.0%}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", action="store_true")
    parser.add_argument("--baseline", action="append", default=[],
                        help="bundle whose kernels of the same names are "
                        "timed beside (--bench)")
    args, gen, rt = session(parser, 17)
    kernels = rt.kernels(args.bundles, NAME.match)
    ok = True
    for name, k in sorted(kernels.items()):
        try:
            if NAME.match(name)["split"]:
                for P in (1, 3, 17):
                    ok &= check(rt, k, name, CONTEXTS, gen, P)
            else:
                ok &= check(rt, k, name, CONTEXTS, gen)
                ok &= check(rt, k, name, [5, 0, 2049], gen)
        except Exception as e:  # report, keep going
            print(f"  FAIL {name}: {type(e).__name__}: {e}")
            ok = False
    print("ALL OK" if ok else "SOME CHECKS FAILED")
    if args.bench:
        bench(rt, kernels, gen, rt.kernels(args.baseline, NAME.match))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
