#!/usr/bin/env python3
"""Tessel's grouped-matmul kernels beside torch: TFLOP/s of each MoE GEMM.

For each GEMM of an MoE layer (forward, dgrad and wgrad of the gate/up and
down projections) of four shapes it prints, in one run on the same inputs,
the TFLOP/s of the Tessel kernels, of torch._grouped_mm, of a per-expert
loop of torch.mm and of a dense bf16 matmul of the same rows, N and K (the
ceiling):

  * the reference MoE: E=128, H=2048, I=512, top-8 of 4096 tokens (32768
    rows) and of 32768 tokens (262144 rows);
  * DeepSeek-V3's experts: 32 local experts (of 256, top-8) of 8192 tokens
    (about 8192 rows), H=7168, I=2048 (gate and up fused, N=4096); and the
    same 32 experts with 1024 rows each, the gate projection alone too
    (K=7168 -> N=2048).

Kernels come from <bundles>/grouped_matmul.tsb and grouped_matmul_wgrad.tsb
(and grouped_matmul_configs.tsb, other tile configurations, if it is there:
bench/grouped_matmul_configs.mlir compiled by hand), each loaded for the
device's preferred target (sm_90a on an H100/H200 where the bundle has
it). The stacked-weight kernel of each GEMM (gm_*, gmd_*, gmw_*) gets the
first row; the other kernels of the same GEMM (pointer tables, bf16 c,
tile configurations) a row each below it; a GEMM with no Tessel kernel
still gets its torch columns. Each Tessel output (NaN-poisoned first) is
checked once against an fp32 reference: every element written, the rows
no group owns (wgrad: the empty groups' c) exactly zero.

    python3 bench/grouped_matmul_bench.py [--bundles .carry] [--smoke]
        [--only REGEX]

(bench/benchlib.py: the common options.) --smoke: E=8, H=64, I=32 on the
host (the small kernels of the bundles), without torch._grouped_mm.
"""
import math
import os
import re
import sys
from typing import NamedTuple

import torch

import benchlib

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


class Layout(NamedTuple):
    """The GEMM a kernel computes, from its op and shape parameters."""
    wgrad: bool     # c [E, M, N] = a[rows_g]^T . b[rows_g]; else ragged M
    E: int
    M: int          # wgrad: a [T, M]; 0 for ragged M
    N: int          # c [T, N] (ragged M) or [E, M, N] (wgrad)
    K: int          # ragged M: a [T, K]; 0 for wgrad
    trans_b: bool   # ragged M: b [E, N, K] (or a table of [N, K])
    dtype: torch.dtype  # of a and b


def layout_of(kernel) -> Layout:
    p = kernel.params
    if kernel.op == "tessel.grouped_matmul_wgrad":
        return Layout(True, p["groups"], p["M"], p["N"], 0, False,
                      DTYPES[kernel.dtype])
    return Layout(False, p["groups"], 0, p["N"], p["K"], bool(p["trans_b"]),
                  DTYPES[kernel.dtype])


def c_dtype(kernel, L):
    """Wgrad writes f32 (gmw_*, cfgw_*) or bf16 (gmwb_*), the name says
    (bench/grouped_matmul_wgrad_kernels.mlir); ragged M the operands'."""
    if L.wgrad and not kernel.name.startswith("gmwb"):
        return torch.float32
    return L.dtype


def gemms(H, I, gate_apart=False):
    """(label, layout builder args) of an MoE layer's six GEMMs: ragged M
    is a [rows, K] . W [E, N, K]^T (forward, trans_b) or a [rows, K] . W
    [E, K, N] (dgrad); wgrad dW [E, M, N] = dY[rows]^T . X[rows]. With
    gate_apart, also the gate (or up) projection alone: N = I."""
    fused = [("gate/up fwd", False, 2 * I, H), ("down fwd", False, H, I),
             ("down dgrad", False, I, H), ("gate/up dgrad", False, H, 2 * I),
             ("gate/up wgrad", True, H, 2 * I), ("down wgrad", True, I, H)]
    return ([("gate fwd", False, I, H)] if gate_apart else []) + fused


def routed_sizes(bench, tokens, topk, experts, local=None):
    """Rows of the first `local` (default all) of `experts` experts under a
    random top-k routing: what one expert-parallel rank gets."""
    scores = torch.rand(tokens, experts, device=bench.device,
                        generator=bench.gen)
    ids = scores.topk(topk, dim=1).indices.flatten()
    return torch.bincount(ids, minlength=experts).tolist()[:local]


def shapes(bench):
    """(title, E, H, I, group sizes, gate apart) of the benchmarked
    layers."""
    if bench.smoke:
        return [("smoke E8", 8, 64, 32, routed_sizes(bench, 40, 2, 8),
                 False)]
    return [
        ("MoE 4k tok", 128, 2048, 512, routed_sizes(bench, 4096, 8, 128),
         False),
        ("MoE 32k tok", 128, 2048, 512, routed_sizes(bench, 32768, 8, 128),
         False),
        ("DSv3 32 exp", 32, 7168, 2048,
         routed_sizes(bench, 8192, 8, 256, local=32), False),
        ("DSv3 32x1024", 32, 7168, 2048, [1024] * 32, True),
    ]


class Problem:
    """Random inputs of one GEMM with T rows and their fp32 reference.
    Ragged M: a [T, K], weights w [E, N, K] (the nn.Linear layout; each
    kernel gets them in its own layout from b_arg); wgrad: a [T, M], b
    [T, N]."""

    def __init__(self, bench, L, sizes):
        self.L, self.sizes = L, sizes
        self.ends = list(torch.tensor(sizes).cumsum(0).tolist())
        T, dev, gen = sum(sizes), bench.device, bench.gen

        def randn(*shape, scale=1.0):
            return (torch.randn(*shape, device=dev, generator=gen) *
                    scale).to(L.dtype)

        if L.wgrad:
            self.a, self.b = randn(T, L.M), randn(T, L.N)
        else:
            self.a = randn(T, L.K)
            # Scaled so that c is about N(0, 1) whatever K is.
            self.w = randn(L.E, L.N, L.K, scale=L.K ** -0.5)
        self.offsets = torch.tensor(self.ends, dtype=torch.int32, device=dev)

    def b_arg(self, kernel):
        """b for `kernel`: the stacked weights in its layout, or a table of
        the addresses of E separately allocated matrices (kept alive on the
        table tensor)."""
        if self.L.wgrad:
            return self.b
        mats = self.w if self.L.trans_b else self.w.transpose(1, 2)
        if not kernel.params["pointer_table"]:
            return mats.contiguous()
        keep = [m.contiguous().clone() for m in mats]
        table = torch.tensor([m.data_ptr() for m in keep], dtype=torch.int64,
                             device=self.w.device)
        table.keep = keep
        return table

    def output(self, kernel):
        L = self.L
        shape = (L.E, L.M, L.N) if L.wgrad else (self.a.shape[0], L.N)
        return torch.full(shape, math.nan, dtype=c_dtype(kernel, L),
                          device=self.a.device)

    def check(self, bench, what, c):
        """c against the fp32 reference: max relative error (per group for
        wgrad, whose groups differ in scale), every element written, the
        parts no group owns zero."""
        L, start = self.L, 0
        ref = torch.zeros(c.shape, device=c.device)
        for g, end in enumerate(self.ends):
            if end > start:
                rows = self.a[start:end].float()
                if L.wgrad:
                    ref[g] = rows.T @ self.b[start:end].float()
                else:
                    ref[start:end] = rows @ self.w[g].float().T
            start = end
        written = not torch.isnan(c).any().item()
        diff = (c.float() - ref).abs()
        if L.wgrad:
            scale = ref.abs().amax(dim=(1, 2))
            err = (diff.amax(dim=(1, 2)) /
                   torch.where(scale > 0, scale, torch.ones_like(scale))) \
                .max().item()
            empty = [g for g, s in enumerate(self.sizes) if not s]
            zeros = not empty or not c[empty].any().item()
        else:
            err = diff.max().item() / (ref.abs().max().item() or 1.0)
            zeros = not c[self.ends[-1]:].any().item()
        # A bf16 c rounds by up to 4e-3 of itself; an f32 c differs only in
        # the order of summation.
        bound = 1e-3 if c.dtype == torch.float32 else 1e-2
        return bench.check(what, written and zeros and err <= bound,
                           f"max relative error {err:.1e}, all written "
                           f"{written}, unowned zero {zeros}")


class Peers:
    """The torch versions of one GEMM on a Problem's inputs (bf16 out):
    torch._grouped_mm, a per-expert loop of torch.mm and a dense matmul of
    the same FLOPs."""

    def __init__(self, p):
        L = self.L = p.L
        self.p = p
        self.spans = list(zip([0] + p.ends[:-1], p.ends))
        if L.wgrad:
            self.out = torch.empty(L.E, L.M, L.N, dtype=L.dtype,
                                   device=p.a.device)
        else:
            # torch takes b as [E, K, N], any strides: the transposed view
            # of the weights for the forward, the stacked [E, K, N] tensor
            # for the dgrad (the layout Tessel's gmd kernels get).
            bt = p.w.transpose(1, 2)
            self.b = bt if L.trans_b else bt.contiguous()
            self.out = torch.empty(p.a.shape[0], L.N, dtype=L.dtype,
                                   device=p.a.device)
            self.dense_b = self.b[0].contiguous()

    def grouped_mm(self):
        if self.L.wgrad:  # ragged K: [M, rows] x [rows, N] -> [E, M, N]
            return torch._grouped_mm(self.p.a.t(), self.p.b,
                                     offs=self.p.offsets)
        return torch._grouped_mm(self.p.a, self.b, offs=self.p.offsets)

    def loop(self):
        a = self.p.a
        for g, (s, e) in enumerate(self.spans):
            if self.L.wgrad:
                if e > s:
                    torch.mm(a[s:e].t(), self.p.b[s:e], out=self.out[g])
                else:
                    self.out[g].zero_()
            elif e > s:
                torch.mm(a[s:e], self.b[g], out=self.out[s:e])

    def dense(self):
        if self.L.wgrad:
            return torch.mm(self.p.a.t(), self.p.b)
        return torch.mm(self.p.a, self.dense_b)


def bench_gemm(bench, title, label, L, sizes, kernels):
    """Times one GEMM's Tessel kernels and peers; prints its rows."""
    T = sum(sizes)
    p = Problem(bench, L, sizes)
    peers = Peers(p)
    flops = 2.0 * T * L.N * (L.M if L.wgrad else L.K)
    shape = f"M={L.M} N={L.N}" if L.wgrad else f"N={L.N} K={L.K}"
    case = f"{title} {label} {shape}"

    def tflops(ms):
        return flops / ms / 1e9 if ms else None

    gmm = None
    if not bench.cuda_only("torch._grouped_mm"):
        try:
            gmm = tflops(bench.time_ms(peers.grouped_mm))
        except Exception as e:  # report, keep going
            bench.note(f"torch._grouped_mm failed on {case}: {e}")
    loop = tflops(bench.time_ms(peers.loop))
    dense = tflops(bench.time_ms(peers.dense))

    # The stacked-weight kernel first (gm, gmd, gmw), then the variants.
    mine = sorted((k for k in kernels if layout_of(k) == L),
                  key=lambda k: (not re.match(r"gm[dw]?_", k.name), k.name))
    for k in mine or [None]:
        name, ours = "-", None
        if k is not None:
            name = f"{k.name} [{k.target}]"
            b, c = p.b_arg(k), p.output(k)
            k(p.a, b, p.offsets, c)
            p.check(bench, f"{k.name} {case}", c)
            ours = tflops(bench.time_ms(lambda: k(p.a, b, p.offsets, c)))
            del b, c
            bench.row(f"{case}, {k.name}", "TFLOP/s", ours,
                      "torch._grouped_mm", gmm)
            bench.row(f"{case}, {k.name}", "TFLOP/s", ours,
                      "per-expert torch.mm loop", loop)

        def cell(x):
            return f"{x:7.1f}" if x else f"{'-':>7}"

        def ratio(x):
            return f"{ours / x:6.2f}x" if ours and x else f"{'-':>7}"

        print(f"{case:40s} {T:7d} {name:44s} {cell(ours)} {cell(gmm)} "
              f"{cell(loop)} {ratio(gmm)} {ratio(loop)} {cell(dense)}")


def dense_ceiling(bench):
    """Prints the TFLOP/s of a square dense bf16 matmul: the device's
    practical ceiling."""
    n = 256 if bench.smoke else 8192
    x, y = (torch.randn(n, n, device=bench.device,
                        generator=bench.gen).bfloat16() for _ in range(2))
    ms = bench.time_ms(lambda: torch.mm(x, y))
    print(f"dense bf16 matmul {n}^3: {2.0 * n ** 3 / ms / 1e9:.1f} TFLOP/s")


def main():
    parser = benchlib.parser(__doc__, reps=50)
    parser.add_argument("--only", default="",
                        help="a regular expression: only the cases whose "
                        "title and GEMM (say 'MoE 32k tok gate/up dgrad') "
                        "it finds")
    args = parser.parse_args()
    bench = benchlib.Bench(args, "grouped_matmul_bench")
    kernels = [k for name in ("grouped_matmul", "grouped_matmul_wgrad")
               for k in bench.bundle(name)]
    if os.path.isfile(os.path.join(args.bundles,
                                   "grouped_matmul_configs.tsb")):
        kernels += list(bench.bundle("grouped_matmul_configs"))
    else:
        bench.note("no grouped_matmul_configs.tsb: the default tile "
                   "configurations only")

    dense_ceiling(bench)

    print(f"""\
TFLOP/s of useful FLOPs (2*rows*N*K; wgrad 2*rows*M*N), bf16 in, fp32
accumulate; median of {bench.reps} calls.
  tessel: the kernel [the target loaded] (wgrad: gmw writes f32 out, gmwb
          bf16 like the torch columns);
  gr_mm:  torch._grouped_mm on the same layout (wgrad: its ragged-K form,
          torch._grouped_mm(a.t(), b, offs=group_offsets) -> [E, M, N]);
  loop:   torch.mm per expert, a Python loop over the groups;
  /gr_mm, /loop: tessel over those;
  dense:  one torch.mm of the same rows, N and K (wgrad: a.t() by b), the
          ceiling.""")
    print(f"{'case':40s} {'rows':>7s} {'tessel kernel':44s} {'tessel':>7s} "
          f"{'gr_mm':>7s} {'loop':>7s} {'/gr_mm':>7s} {'/loop':>7s} "
          f"{'dense':>7s}")
    for title, E, H, I, sizes, gate_apart in shapes(bench):
        for label, wgrad, N, KM in gemms(H, I, gate_apart):
            if not re.search(args.only, f"{title} {label}"):
                continue
            L = Layout(True, E, KM, N, 0, False, torch.bfloat16) if wgrad \
                else Layout(False, E, 0, N, KM, label.endswith("fwd"),
                            torch.bfloat16)
            bench_gemm(bench, title, label, L, sizes, kernels)
            if not bench.smoke:
                torch.cuda.empty_cache()
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
