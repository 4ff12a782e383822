#!/usr/bin/env python3
"""Check extend attention on an NVIDIA GPU: the decomposition into Tessel's
kernels, run through the runtime.

  tessel-aot bench/extend_kernels.mlir --targets=sm80,sm90 -o ext.tsb
  python3 bench/extend_check.py ext.tsb \
      --runtime /tmp/tessel-gpu-check/libtessel_runtime.so

Extend = request b's new tokens attend causally to themselves and to all
of its cached context. Three launches, no host synchronisation:

  1. ext_prefill_*: causal prefill of the new tokens -> partial 0 (f32 out
     and LSE);
  2. ext_ctx_*: the cached context in split form, P windows of whole
     blocks of at most the token budget (32768) -> partials 1..P;
  3. ext_merge_*: the N-way LSE merge of the P + 1 partials -> bf16 out.

The context chunks are exactly the chunked extend of DESIGN.md (a budget
of context tokens per chunk, merged by LSE); here every chunk of the
batch is one launch, the dispatcher may also run them in budget-sized
launches. Ragged batches: new-token counts 1, 5, 129, 1000+ and contexts
0, 18, 463, 1328, 33000, 131072 (and a batch where several requests
share the budget), both cache layouts, GQA 32/8 and 64/4, and DeepSeek-V3's
non-absorbed MLA extend (128 heads, qk 192, v 128; contexts up to 33000). The reference
is fp32 torch over the concatenated context + new keys, causal over the
new ones; out within 1e-2 of the largest reference magnitude. Exits 1
unless every check passed (ALL OK last).
"""
import argparse
import math
import re
import sys

import torch

from paged_decode_check import session

CTX = re.compile(r"ext_ctx_q(?P<hq>\d+)_kv(?P<hkv>\d+)_d(?P<d>\d+)"
                 r"(_v(?P<dv>\d+))?_bs(?P<bs>\d+)_(?P<layout>nhd|shuf)$")
BUDGET = 32768
BATCHES = [
    ([1, 5, 129, 1000, 3], [0, 18, 463, 1328, 33000]),
    ([7, 1200], [131072, 100000]),
    ([64, 64, 64, 64], [9000, 9000, 9000, 9000]),
]


def shuffle(k, v):
    nb, bs, h, d = k.shape
    dv = v.shape[3]
    ks = k.view(nb, bs, h, d // 8, 8).permute(0, 2, 3, 1, 4).contiguous()
    vs = v.view(nb, bs // 8, 8, h, dv).permute(0, 3, 1, 4, 2).contiguous()
    return ks, vs


def check(rt, kernels, name, new, ctx, gen):
    m = CTX.match(name)
    hq, hkv, d, bs = (int(m[x]) for x in ("hq", "hkv", "d", "bs"))
    dv = int(m["dv"]) if m["dv"] else d
    tag = f"q{hq}_kv{hkv}_d{d}" + (f"_v{dv}" if dv != d else "")
    dev = "cuda"
    T, B = sum(new), len(new)
    q = torch.randn(T, hq, d, device=dev, generator=gen).bfloat16()
    k = torch.randn(T, hkv, d, device=dev, generator=gen).bfloat16()
    v = torch.randn(T, hkv, dv, device=dev, generator=gen).bfloat16()
    cu = torch.tensor([0] + torch.tensor(new).cumsum(0).tolist(),
                      dtype=torch.int32, device=dev)
    per = [max(1, -(-c // bs)) for c in ctx]
    mb = max(per)
    nb = sum(per) + 2
    kc = torch.randn(nb, bs, hkv, d, device=dev, generator=gen).bfloat16()
    vc = torch.randn(nb, bs, hkv, dv, device=dev, generator=gen).bfloat16()
    perm = torch.randperm(nb, device=dev, generator=gen).int()
    bt = torch.randint(-3, 2 * nb, (B, mb), device=dev, generator=gen,
                       dtype=torch.int32)
    at = 0
    for b, n in enumerate(per):
        bt[b, :n] = perm[at:at + n]
        at += n
    cl = torch.tensor(ctx, dtype=torch.int32, device=dev)
    caches = (kc, vc) if m["layout"] == "nhd" else shuffle(kc, vc)

    P = max(1, -(-max(ctx) // BUDGET))
    parts = torch.full((P + 1, T, hq, dv), math.nan, device=dev)
    lses = torch.full((P + 1, hq, T), math.nan, device=dev)
    out = torch.full((T, hq, dv), math.nan, device=dev, dtype=torch.bfloat16)
    softmax_scale = d ** -0.5
    rt.launch(kernels[f"ext_prefill_{tag}"],
              [q, k, v, cu, parts[0], lses[0], softmax_scale])
    rt.launch(kernels[name],
              [q, *caches, bt, cu, cl, parts[1:], lses[1:], softmax_scale])
    rt.launch(kernels[f"ext_merge_{tag}"], [parts, lses, out])
    torch.cuda.synchronize()

    g = hq // hkv
    err, scale = 0.0, 0.0
    problems = []
    if torch.isnan(out).any():
        problems.append("NaN in out")
    s0 = 0
    for b, (n, c) in enumerate(zip(new, ctx)):
        if n == 0:
            continue
        tok = torch.arange(c, device=dev)
        blocks = bt[b, tok // bs].long()
        keys = torch.cat([kc[blocks, tok % bs], k[s0:s0 + n]]).float()
        vals = torch.cat([vc[blocks, tok % bs], v[s0:s0 + n]]).float()
        keys = keys.repeat_interleave(g, 1).transpose(0, 1)  # [H, c+n, D]
        vals = vals.repeat_interleave(g, 1).transpose(0, 1)
        qs = q[s0:s0 + n].float().transpose(0, 1)             # [H, n, D]
        s = qs @ keys.transpose(1, 2) * softmax_scale
        mask = torch.ones(n, c + n, device=dev, dtype=torch.bool)
        mask[:, c:] = torch.ones(n, n, device=dev, dtype=torch.bool).tril()
        s = s.masked_fill(~mask, -math.inf)
        ref = (torch.softmax(s, -1) @ vals).transpose(0, 1)
        err = max(err, (out[s0:s0 + n].float() - ref).abs().max().item())
        scale = max(scale, ref.abs().max().item())
        s0 += n
    rel = err / (scale or 1.0)
    if rel > 1e-2:
        problems.append(f"out error {rel:.2e} > 1e-2")
    print(f"  {'ok  ' if not problems else 'FAIL'} {name:30s} P={P:<2} "
          f"new={','.join(map(str, new)):20s} ctx={','.join(map(str, ctx)):28s}"
          f" err {rel:.1e}" + "".join(f"\n       {p}" for p in problems))
    return not problems


def main():
    args, gen, rt = session(
        argparse.ArgumentParser(description=__doc__.splitlines()[0]), 5)
    kernels = rt.kernels(args.bundles, lambda n: n.startswith("ext_"))
    ok = True
    for name in sorted(n for n in kernels if CTX.match(n)):
        for new, ctx in BATCHES:
            # 128 heads: the fp32 reference of 1200 queries over 100K keys
            # would need 62 GB; the other batches cover that kernel.
            if int(CTX.match(name)["hq"]) > 64 and max(ctx) > 65536:
                continue
            try:
                ok &= check(rt, kernels, name, new, ctx, gen)
            except Exception as e:  # report, keep going
                print(f"  FAIL {name}: {type(e).__name__}: {e}")
                ok = False
    print("ALL OK" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
