#!/usr/bin/env python3
"""Prefill attention TFLOP/s: Tessel's kernels beside the sm80 template's,
SDPA flash and SDPA cuDNN.

The kernels of BENCH (<bundles>/prefill.tsb: sm_90a on an H100/H200 where
the bundle has it) on 4 x 4096 tokens and a ragged batch (8000, 100, 1500,
37, 4000, 513, 2100), causal and not, head dims 64 to 256, GQA 32/8 and
64/4, bf16; beside the kernels of the same names in prefill_sm80.tsb (the
sm80 template on the same GPU: the "base" column) and torch SDPA's flash
and cuDNN backends on the same data as [1, H, n, D] per request, back to
back. Useful FLOPs: 2 n^2 H (D + Dv) per request, half of it causal.
Tessel's launches are replayed from a CUDA graph, SDPA's timed over as
many plain calls (benchlib's peer_ms); times are medians of CUDA events.
Each Tessel output (both bundles') is checked once against a float64
reference.

    python3 bench/prefill_bench.py [--bundles .carry] [--smoke]

(bench/benchlib.py: the common options.) --smoke: batches of 2 x 64 and
37, 5, 20 tokens on the host, without SDPA.
"""
import math
import sys

import torch

import benchlib

BENCH = ["pre_q32_kv8_d128_v128_causal_lse", "pre_q64_kv4_d128_v128_causal_lse",
         "pre_q32_kv8_d128_v128_lse", "pre_q32_kv8_d64_v64_causal_lse",
         "pre_q16_kv2_d256_v256_causal_lse",
         "pre_q16_kv16_d192_v128_causal_lse"]
BATCHES = {"4x4096": [4096] * 4,
           "ragged": [8000, 100, 1500, 37, 4000, 513, 2100]}
SMOKE_BATCHES = {"2x64": [64] * 2, "ragged": [37, 5, 20]}
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


def reference(q, k, v, lens, causal, scale):
    """float64 out [T, Hq, Dv], a request and a few queries at a time."""
    g = q.shape[1] // k.shape[1]
    out = torch.empty(q.shape[0], q.shape[1], v.shape[2], dtype=torch.float64,
                      device=q.device)
    start = 0
    for n in lens:
        ks = k[start:start + n].double().repeat_interleave(g, 1)
        vs = v[start:start + n].double().repeat_interleave(g, 1)
        step = max(1, (1 << 26) // (q.shape[1] * n))
        for r in range(0, n, step):
            m = min(n - r, step)
            s = torch.einsum("mhd,nhd->hmn",
                             q[start + r:start + r + m].double(), ks) * scale
            if causal:
                seen = torch.arange(n, device=q.device)
                own = r + torch.arange(m, device=q.device)
                s.masked_fill_(seen[None, :] > own[:, None], -math.inf)
            out[start + r:start + r + m] = torch.einsum(
                "hmn,nhd->mhd", s.softmax(-1), vs)
        start += n
    return out


def sdpa_ms(bench, q, k, v, lens, causal, scale):
    """{peer: ms} of SDPA's flash and cuDNN backends, per request [1, H,
    n, D] back to back (None: refused, or no CUDA)."""
    peers = {"SDPA flash": None, "SDPA cuDNN": None}
    if bench.cuda_only("SDPA flash and cuDNN"):
        return peers
    import torch.nn.attention
    import torch.nn.functional as F
    views, start = [], 0
    for n in lens:
        views.append(tuple(t[start:start + n].transpose(0, 1)[None]
                           for t in (q, k, v)))
        start += n

    def sdpa():
        for qq, kk, vv in views:
            F.scaled_dot_product_attention(qq, kk, vv, is_causal=causal,
                                           enable_gqa=True, scale=scale)

    backends = torch.nn.attention.SDPBackend
    for peer, backend in (("SDPA flash", backends.FLASH_ATTENTION),
                          ("SDPA cuDNN", backends.CUDNN_ATTENTION)):
        try:
            with torch.nn.attention.sdpa_kernel(backend):
                peers[peer] = bench.peer_ms(sdpa)
        except RuntimeError as e:
            bench.note(f"{peer} refused: {str(e).splitlines()[0]}")
    return peers


def bench_kernel(bench, kernel, baseline, batch, lens):
    """Times `kernel` (and its baseline, if any) and the SDPA peers on one
    batch; prints a row."""
    p = kernel.params
    hq, hkv, d, dv = (p[n] for n in ("num_q_heads", "num_kv_heads",
                                     "head_dim", "v_head_dim"))
    causal, scale = bool(p["causal"]), p["head_dim"] ** -0.5
    dtype, dev, gen = DTYPES[kernel.dtype], bench.device, bench.gen
    T = sum(lens)
    q, k, v = (torch.randn(T, h, width, device=dev, generator=gen).to(dtype)
               for h, width in ((hq, d), (hkv, d), (hkv, dv)))
    cu = torch.tensor([0] + lens, device=dev).cumsum(0).int()
    out = torch.empty(T, hq, dv, dtype=dtype, device=dev)
    lse = [torch.empty(hq, T, device=dev)] if p["has_lse"] else []
    ref = reference(q, k, v, lens, causal, scale)

    def tessel_ms(kern, what):
        out.fill_(math.nan)
        kern(q, k, v, cu, out, *lse, scale)
        err = benchlib.relative_error(out, ref)
        bench.check(f"{kernel.name} [{what}] {batch}", err <= 1e-2,
                    f"error {err:.1e}")
        return bench.launch_ms(lambda: kern(q, k, v, cu, out, *lse, scale))

    t_tessel = tessel_ms(kernel, kernel.target)
    t_base = tessel_ms(baseline, "base " + baseline.target) \
        if baseline else None
    ref = None  # its memory back before the peers run
    peers = sdpa_ms(bench, q, k, v, lens, causal, scale)
    flops = sum(2 * n * n * hq * (d + dv) for n in lens) / (2 if causal else 1)

    def tflops(ms):
        return flops / ms / 1e9 if ms else None

    def ratio(ms):
        return f"{ms / t_tessel:6.2f}" if ms else f"{'-':>6}"

    cells = [tflops(t) for t in (t_tessel, t_base, peers["SDPA flash"],
                                 peers["SDPA cuDNN"])]
    print(f"{kernel.name:>34} {batch:>14} | " +
          " ".join(f"{c:7.1f}" if c else f"{'-':>7}" for c in cells) +
          f" | {ratio(t_base)} {ratio(peers['SDPA flash'])} "
          f"{ratio(peers['SDPA cuDNN'])}")
    case = f"{kernel.name} {batch}"
    bench.row(case, "TFLOP/s", cells[0], "sm80 template", cells[1])
    for peer, value in zip(("SDPA flash", "SDPA cuDNN"), cells[2:]):
        bench.row(case, "TFLOP/s", cells[0], peer, value)


def main():
    args = benchlib.parser(__doc__).parse_args()
    bench = benchlib.Bench(args, "prefill_bench")
    kernels = bench.bundle("prefill")
    baseline = bench.bundle("prefill_sm80")
    print("prefill: TFLOP/s (useful FLOPs: causal counts half); base: the "
          "sm80 template's kernel of the same name")
    print(f"{'kernel':>34} {'batch':>14} | {'tessel':>7} {'base':>7} "
          f"{'flash':>7} {'cudnn':>7} | {'/base':>6} {'/flash':>6} "
          f"{'/cudnn':>6}")
    batches = SMOKE_BATCHES if bench.smoke else BATCHES
    for name in BENCH:
        for batch, lens in batches.items():
            bench_kernel(bench, kernels[name],
                         baseline[name] if name in baseline else None,
                         f"{batch} T={sum(lens)}", lens)
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
