#!/usr/bin/env python3
"""Absorbed MLA decode: TB/s of latent cache read and TFLOP/s, Tessel's
kernels beside the sm80 template's and the copy ceiling.

DeepSeek-V3 (128 heads) decode at 8K context, batch 64 and 128, and
8 x 64K; 16 heads at 8K: q [B, H, 576] over a latent cache [blocks, 64,
576] (bf16; the first 512 dims are the values), DeepSeek-V3's softmax
scale 192**-0.5. Per case: the whole-form kernel mla_h<H>_bs64
(<bundles>/mla_decode.tsb), the kernel of the same name in
mla_decode_sm80.tsb (the sm80 template on the same GPU: "base"), and,
where the bundle has mlasplit_h<H>_bs64, the split form's f32 partials
at split counts that fill 1, 2 or 3 whole waves of one block an SM (the
sm_90a kernel takes 64 heads a block) and the one that is a wave and a
bit at two blocks an SM, the fastest shown. Bytes: the latent cache read
once; FLOPs: 2 B ctx H (576 + 512). Launches are replayed from a CUDA
graph. Every timed output is checked once against a float64 reference
(the split form's partials merged in float64).

    python3 bench/mla_decode_bench.py [--bundles .carry] [--smoke]

(bench/benchlib.py: the common options.) --smoke: 128 heads over 300
tokens and 16 heads 2 x 130 on the host.
"""
import math
import sys

import torch

import benchlib

SCALE = 192 ** -0.5  # DeepSeek-V3's (qk head dim 192)
BS = 64
CASES = [(128, 64, 8192), (128, 128, 8192), (128, 8, 65536), (16, 64, 8192)]
SMOKE_CASES = [(128, 1, 300), (16, 2, 130)]


def batch(bench, H, B, ctx):
    """q, latent cache, block table (each request's blocks a random draw
    of the cache's) and seq_lens of B requests of `ctx` tokens."""
    dev, gen = bench.device, bench.gen
    per = -(-ctx // BS)
    q = torch.randn(B, H, 576, device=dev, generator=gen).bfloat16()
    cache = torch.randn(B * per, BS, 576, device=dev, generator=gen)
    cache = cache.bfloat16()
    table = torch.randperm(B * per, device=dev, generator=gen).int()
    seq_lens = torch.full((B,), ctx, dtype=torch.int32, device=dev)
    return q, cache, table.view(B, per), seq_lens


def reference(q, cache, table, ctx):
    """float64 out [B, H, 512]."""
    pos = torch.arange(ctx, device=q.device)
    out = torch.empty(q.shape[0], q.shape[1], 512, dtype=torch.float64,
                      device=q.device)
    for b in range(q.shape[0]):
        rows = cache[table[b, pos // BS].long(), pos % BS].double()
        out[b] = (q[b].double() @ rows.T * SCALE).softmax(-1) @ rows[:, :512]
    return out


def merged(parts, lses):
    """float64 merge of f32 partials [P, B, H, 512] with LSEs [P, H, B]
    (every window holds keys here)."""
    lses = lses.double()
    w = torch.exp(lses - lses.amax(0))
    return torch.einsum("phb,pbhd->bhd", w, parts.double()) / \
        w.sum(0).T[..., None]


def split_counts(bench, H, B, ctx):
    """Split counts that fill 1, 2 or 3 whole waves of one block an SM,
    and a wave and a bit at two blocks an SM; 1 and 2 on the host."""
    if bench.smoke:
        return [1, 2]
    sms = bench.compute_units()
    per_split = B * -(-H // 64)
    return sorted({max(1, min(P, ctx // 1024)) for P in
                   [k * sms // per_split for k in (1, 2, 3)] +
                   [-(-2 * sms // per_split)]})


def main():
    args = benchlib.parser(__doc__).parse_args()
    bench = benchlib.Bench(args, "mla_decode_bench")
    kernels = bench.bundle("mla_decode")
    baseline = bench.bundle("mla_decode_sm80")
    ceiling = bench.copy_ceiling()
    print(f"MLA decode, 576/512, bf16, block {BS}; copy ceiling "
          f"{ceiling:.2f} TB/s; base: the sm80 template's kernel of the "
          f"same name")
    for H, B, ctx in SMOKE_CASES if bench.smoke else CASES:
        q, cache, table, seq_lens = batch(bench, H, B, ctx)
        kv = B * ctx * 576 * 2
        flops = B * ctx * H * (576 + 512) * 2
        ref = reference(q, cache, table, ctx)
        case = f"H={H} B={B} ctx={ctx}"
        out = torch.empty(B, H, 512, device=bench.device,
                          dtype=torch.bfloat16)
        lse = torch.empty(H, B, device=bench.device)

        def whole(kernel, what):
            out.fill_(math.nan)
            kernel(q, cache, table, seq_lens, out, lse, SCALE)
            err = benchlib.relative_error(out, ref)
            bench.check(f"{kernel.name} [{what}] {case}", err <= 1e-2,
                        f"error {err:.1e}")
            return bench.launch_ms(lambda: kernel(q, cache, table, seq_lens,
                                                  out, lse, SCALE))

        name = f"mla_h{H}_bs{BS}"
        t = whole(kernels[name], kernels[name].target)
        t_base = whole(baseline[name], "base " + baseline[name].target) \
            if name in baseline else None
        line = (f"  {case:24s} direct {kv / t / 1e9:5.2f} TB/s "
                f"({flops / t / 1e9:5.1f} TFLOP/s, base "
                f"{flops / t_base / 1e9 if t_base else 0:5.1f}, "
                f"{t_base / t if t_base else 0:4.2f}x)")
        best = t
        split = f"mlasplit_h{H}_bs{BS}"
        if split in kernels:
            t_split, best_P = math.inf, 0
            counts = split_counts(bench, H, B, ctx)
            for P in counts:
                parts = torch.full((P, B, H, 512), math.nan,
                                   device=bench.device)
                plse = torch.empty(P, H, B, device=bench.device)

                def launch():
                    kernels[split](q, cache, table, seq_lens, parts, plse,
                                   SCALE)

                launch()
                err = benchlib.relative_error(merged(parts, plse), ref)
                bench.check(f"{split} P={P} {case}", err <= 1e-2,
                            f"error {err:.1e} (partials merged)")
                t_P = bench.launch_ms(launch)
                if t_P < t_split:
                    t_split, best_P = t_P, P
            best = min(t, t_split)
            line += (f"  split P={best_P:<2} (of {counts}) partials "
                     f"{kv / t_split / 1e9:5.2f} TB/s "
                     f"({flops / t_split / 1e9:5.1f} TFLOP/s)")
        print(line + f"  best/copy {kv / best / 1e9 / ceiling:4.0%}")
        bench.row(f"{case}, whole form", "TFLOP/s", flops / t / 1e9,
                  "sm80 template", flops / t_base / 1e9 if t_base else None)
        bench.row(f"{case}, best form", "TB/s", kv / best / 1e9,
                  "device copy (ceiling)", ceiling)
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
