#!/usr/bin/env python3
"""Time Tessel's grouped-matmul kernels beside torch on an NVIDIA GPU.

For each MoE GEMM (forward, dgrad and wgrad of the gate/up and down
projections) of three shapes it prints, in one run on the same inputs, the
TFLOP/s of the Tessel kernel, of torch._grouped_mm, of a per-expert loop of
torch.mm and of a dense bf16 matmul of the same M, N, K (the ceiling):

  * the reference MoE: E=128, H=2048, I=512, top-8 of 4096 tokens (32768
    rows) and of 32768 tokens (262144 rows);
  * DeepSeek-V3's experts: 32 local experts (of 256, top-8) of 8192 tokens
    (about 8192 rows), H=7168, I=2048 (gate and up fused, N=4096); and the
    same 32 experts with 1024 rows each, the gate projection alone too
    (K=7168 -> N=2048).

Bundles as for grouped_matmul_check.py (which checks every kernel in full;
here each timed kernel's output is checked once against an fp32 reference):

  tessel-aot bench/grouped_matmul_kernels.mlir --targets=sm80,sm90 -o gm.tsb
  tessel-aot bench/grouped_matmul_wgrad_kernels.mlir --targets=sm80,sm90 \
      -o gmw.tsb
  python3 bench/grouped_matmul_bench.py gm.tsb gmw.tsb [cfg.tsb ...] \
      [--runtime build-rt/libtessel_runtime.so]

The kernels run through the CUDA driver directly (the sm90 cubin: sm80 code
paths); with --runtime each also runs through the runtime's C API, which
picks the device's best target in the bundle (on an H200, sm90a: the
wgmma/TMA main loop where a template has one; bundles compiled with
--targets=sm80,sm90,sm90a), a row of its own beside the direct one.

The default kernel of each GEMM (gm_*, gmd_*, gmw_*: stacked weights) gets
the first row; other kernels of the same shape (pointer tables, tile
configurations) get a row each below it. A GEMM with no Tessel kernel in
the bundles still gets its torch columns. Exits 1 if a timed Tessel kernel
was wrong.
"""
import argparse
import re
import statistics
import sys

import torch

from grouped_matmul_check import (Layout, Problem, Runtime, cumulative,
                                  read_bundle, routed_sizes, start)


def local_routed_sizes(tokens, topk, experts, local, gen):
    """Rows of the first `local` of `experts` experts under a random top-k
    routing: what one expert-parallel rank of that many experts gets."""
    return routed_sizes(tokens, topk, experts, gen)[:local]


# (label, wgrad, N, K or M): the six GEMMs of an MoE layer with hidden size
# H and expert size I. Ragged M: a [rows, K] . W [E, N, K]^T (forward,
# trans_b) or a [rows, K] . W [E, K, N] (dgrad: the gradient times the same
# weights). Wgrad: dW [E, M, N] = dY[rows]^T . X[rows].
def gemms(H, I, gate_apart=False):
    """With gate_apart, also the gate (or up) projection alone: N = I."""
    fused = [("gate/up fwd", False, 2 * I, H),
             ("down fwd", False, H, I),
             ("down dgrad", False, I, H),
             ("gate/up dgrad", False, H, 2 * I),
             ("gate/up wgrad", True, H, 2 * I),
             ("down wgrad", True, I, H)]
    return ([("gate fwd", False, I, H)] if gate_apart else []) + fused


def shapes(gen):
    """(title, E, H, I, group sizes, gate apart) of the benchmarked MoE
    layers."""
    return [
        ("MoE 4k tok", 128, 2048, 512, routed_sizes(4096, 8, 128, gen),
         False),
        ("MoE 32k tok", 128, 2048, 512, routed_sizes(32768, 8, 128, gen),
         False),
        ("DSv3 32 exp", 32, 7168, 2048,
         local_routed_sizes(8192, 8, 256, 32, gen), False),
        ("DSv3 32x1024", 32, 7168, 2048, [1024] * 32, True),
    ]


def layout_of(label, wgrad, E, N, KM):
    """The Layout a kernel for this GEMM has (forward: trans_b)."""
    if wgrad:
        return Layout("gmw", True, E, KM, N, 0, False, False, torch.bfloat16)
    trans_b = label.endswith("fwd")
    return Layout("gm" if trans_b else "gmd", False, E, 0, N, KM, trans_b,
                  False, torch.bfloat16)


def same_gemm(a, b):
    """Kernels computing the same GEMM (any b layout, any tile)."""
    return (a.wgrad, a.E, a.M, a.N, a.K, a.trans_b, a.dtype) == (
        b.wgrad, b.E, b.M, b.N, b.K, b.trans_b, b.dtype)


def time_ms(fn, reps, warmup=5):
    """Median time of `fn` over `reps` calls, each between two CUDA events
    (after warm-up calls): GPU time, including any idle gaps while the host
    launches (the per-expert loop)."""
    for _ in range(warmup):
        fn()
    events = [(torch.cuda.Event(enable_timing=True),
               torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    torch.cuda.synchronize()
    for start, stop in events:
        start.record()
        fn()
        stop.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in events)


class Peers:
    """The torch versions of one GEMM on a Problem's inputs (bf16 out):
    torch._grouped_mm, a per-expert loop of torch.mm and a dense matmul of
    the same FLOPs."""

    def __init__(self, p, ends):
        L = p.L
        self.offsets = torch.tensor(ends, dtype=torch.int32, device="cuda")
        self.spans = list(zip([0] + ends[:-1], ends))
        self.p = p
        if L.wgrad:
            self.out = torch.empty(L.E, L.M, L.N, dtype=L.dtype,
                                   device="cuda")
        else:
            # torch takes b as [E, K, N], any strides: the transposed view
            # of the weights for the forward, the stacked [E, K, N] tensor
            # for the dgrad (the layout Tessel's gmd kernels get).
            bt = p.w.transpose(1, 2)
            self.b = bt if L.trans_b else bt.contiguous()
            self.out = torch.empty(p.a.shape[0], L.N, dtype=L.dtype,
                                   device="cuda")
            self.dense_b = self.b[0].contiguous()

    def grouped_mm(self):
        if self.p.L.wgrad:  # ragged K: [M, rows] x [rows, N] -> [E, M, N]
            return torch._grouped_mm(self.p.a.t(), self.p.b,
                                     offs=self.offsets)
        return torch._grouped_mm(self.p.a, self.b, offs=self.offsets)

    def loop(self):
        a = self.p.a
        for g, (s, e) in enumerate(self.spans):
            if self.p.L.wgrad:
                if e > s:
                    torch.mm(a[s:e].t(), self.p.b[s:e], out=self.out[g])
                else:
                    self.out[g].zero_()
            elif e > s:
                torch.mm(a[s:e], self.b[g], out=self.out[s:e])

    def dense(self):
        if self.p.L.wgrad:
            return torch.mm(self.p.a.t(), self.p.b)
        return torch.mm(self.p.a, self.dense_b)


def tflops(flops, ms):
    return flops / ms / 1e9 if ms else float("nan")


def bench_gemm(title, label, L, sizes, kernels, reps, gen):
    """Times one GEMM; prints its rows; returns False if a Tessel kernel
    was wrong."""
    T = sum(sizes)
    ends = cumulative(sizes)
    p = Problem(L, T, gen)
    peers = Peers(p, ends)
    flops = 2.0 * T * L.N * (L.M if L.wgrad else L.K)
    shape = (f"M={L.M} N={L.N}" if L.wgrad else f"N={L.N} K={L.K}")
    case = f"{title} {label} {shape}"

    try:
        gmm = tflops(flops, time_ms(peers.grouped_mm, reps))
    except Exception as e:  # report, keep going
        print(f"  torch._grouped_mm failed on {case}: {e}")
        gmm = float("nan")
    loop = tflops(flops, time_ms(peers.loop, reps))
    dense = tflops(flops, time_ms(peers.dense, reps))

    # The default kernel (stacked weights) first, then the other variants.
    mine = sorted((k for k in kernels.values() if same_gemm(k.layout, L)),
                  key=lambda k: (k.layout.prefix != L.prefix, k.name))
    ok = True
    for k in mine or [None]:
        name, ours, verdict = "-", float("nan"), ""
        if k is not None:
            name = f"{k.name} [{k.kind}]"
            b = p.b_arg(k)
            # A wgrad's c is f32 or bf16 (gmwb).
            if p.c.dtype != k.layout.c_dtype:
                p.c = torch.empty(p.c.shape, dtype=k.layout.c_dtype,
                                  device="cuda")
            p.c.fill_(float("nan"))
            k(p.a, b, peers.offsets, p.c)
            err, written, zeros = p.compare(ends)
            good = written and zeros and err <= k.layout.tolerance
            ok &= good
            verdict = f"{'ok' if good else 'WRONG'} {err:.1e}"
            ours = tflops(flops, time_ms(lambda: k(p.a, b, peers.offsets,
                                                   p.c), reps))
            del b
        print(f"{case:40s} {T:7d} {name:40s} {ours:7.1f} {gmm:7.1f} "
              f"{loop:7.1f} {ours / gmm:6.2f}x {ours / loop:6.2f}x "
              f"{dense:7.1f}  {verdict}")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundles", nargs="*")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--reps", type=int, default=50,
                        help="timed calls per kernel (the median is shown)")
    parser.add_argument("--runtime", help="libtessel_runtime.so: also time "
                        "each kernel through the runtime")
    parser.add_argument("--only", default="",
                        help="a regular expression: only the cases whose "
                        "title and GEMM (say 'MoE 32k tok gate/up dgrad') "
                        "it finds")
    args = parser.parse_args()
    gen, _, kernels = start(args.bundles, args.seed)
    if args.runtime:
        runtime = Runtime(args.runtime)
        for path in args.bundles:
            for name in sorted({r["name"] for r in read_bundle(path)}):
                kernels.setdefault(name + "@runtime",
                                   runtime.kernel(path, name))

    # A square dense bf16 matmul: the GPU's practical ceiling.
    x = torch.randn(8192, 8192, device="cuda", generator=gen).bfloat16()
    y = torch.randn(8192, 8192, device="cuda", generator=gen).bfloat16()
    ms = time_ms(lambda: torch.mm(x, y), args.reps)
    print(f"dense bf16 matmul 8192^3: {tflops(2.0 * 8192 ** 3, ms):.1f} "
          "TFLOP/s")
    del x, y

    print(f"""\
TFLOP/s of useful FLOPs (2*rows*N*K; wgrad 2*rows*M*N), bf16 in, fp32
accumulate; median of {args.reps} calls between CUDA events, after 5 warm-ups.
  tessel: the kernel (wgrad: gmw writes f32 out, gmwb bf16 like the
          torch columns);
  gr_mm:  torch._grouped_mm on the same layout (wgrad: its ragged-K form,
          torch._grouped_mm(a.t(), b, offs=group_offsets) -> [E, M, N]);
  loop:   torch.mm per expert, a Python loop over the groups;
  /gr_mm, /loop: tessel over those;
  dense:  one torch.mm of the same rows, N and K (wgrad: a.t() by b), the
          ceiling;
  check:  the tessel output (NaN-poisoned first) against an fp32
          reference, max relative error.""")
    print(f"{'case':40s} {'rows':>7s} {'tessel kernel':40s} {'tessel':>7s} "
          f"{'gr_mm':>7s} {'loop':>7s} {'/gr_mm':>7s} {'/loop':>7s} "
          f"{'dense':>7s}  check")
    ok = True
    for title, E, H, I, sizes, gate_apart in shapes(gen):
        for label, wgrad, N, KM in gemms(H, I, gate_apart):
            if not re.search(args.only, f"{title} {label}"):
                continue
            L = layout_of(label, wgrad, E, N, KM)
            ok &= bench_gemm(title, label, L, sizes, kernels, args.reps, gen)
            torch.cuda.empty_cache()
    print("ALL OK" if ok else "SOME TESSEL OUTPUTS WRONG")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
