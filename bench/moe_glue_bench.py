#!/usr/bin/env python3
"""The MoE routing glue kernels beside their torch equivalents.

The reference MoE's (E = 128, H = 2048) and DeepSeek-V3's (E = 256,
H = 7168) glue kernels of <bundles>/moe_layer.tsb (mlp_ref_*, mlp_dsv3_*:
expert_histogram, expert_sort, moe_permute, moe_unpermute) on top-8
routings of 4096 and 32768 tokens: each kernel's time per launch
(replayed from a CUDA graph) beside the torch ops an engine without them
runs (bincount + cumsum; stable argsort + inverse scatter; index_select;
a gather and a weighted f32 sum per slot), and the bytes moved per second
for the copies. The routing kernels are one block of 1024 threads (one
SM): their time grows with T * k. Each kernel's output is checked once
against its torch equivalent's (exactly; the weighted sum within 1e-2).

    python3 bench/moe_glue_bench.py [--bundles .carry] [--smoke]

(bench/benchlib.py: the common options.) --smoke: the toy shape (E = 16,
H = 256, top-4) on 64 tokens on the host.
"""
import sys

import torch

import benchlib
from moe_layer_common import SHAPES

CASES = [("mlp_ref", 4096), ("mlp_ref", 32768), ("mlp_dsv3", 4096),
         ("mlp_dsv3", 32768)]
SMOKE_CASES = [("mlp_toy", 64)]


def torch_glue(ids, x, y, weights, E):
    """The glue in torch ops, each a callable returning its outputs:
    histogram (group ends), sort (sorted rows, row positions [T, k]),
    permute (x's rows in expert order), unpermute (the weighted combine of
    y's rows, bf16, summed in f32 in slot order)."""
    T, k = ids.shape
    key = ids.reshape(-1).long()

    def histogram():
        return torch.cumsum(torch.bincount(key, minlength=E), 0).int()

    def sort():
        order = torch.argsort(key, stable=True)
        inverse = torch.empty_like(order)
        inverse[order] = torch.arange(order.numel(), device=order.device)
        return order.int(), inverse.view(T, k).int()

    rows, positions = (t.long() for t in sort())

    def permute():
        return torch.index_select(x, 0, rows // k)

    def unpermute():
        acc = torch.zeros(T, y.shape[1], device=y.device)
        for j in range(k):
            acc += weights[:, j, None] * y[positions[:, j]].float()
        return acc.bfloat16()

    return dict(expert_histogram=histogram, expert_sort=sort,
                moe_permute=permute, moe_unpermute=unpermute)


def main():
    args = benchlib.parser(__doc__).parse_args()
    bench = benchlib.Bench(args, "moe_glue_bench")
    bundle = bench.bundle("moe_layer")
    dev, gen = bench.device, bench.gen
    print("microseconds per launch, torch beside; GB/s of the copies' bytes "
          "read + written")
    for prefix, T in SMOKE_CASES if bench.smoke else CASES:
        E, H, _, k = SHAPES[prefix]
        R = T * k
        ids = torch.rand(T, E, device=dev, generator=gen).topk(
            k, dim=1).indices.int()
        x = torch.randn(T, H, device=dev, generator=gen).bfloat16()
        y = torch.randn(R, H, device=dev, generator=gen).bfloat16()
        weights = torch.rand(T, k, device=dev, generator=gen)
        peers = torch_glue(ids, x, y, weights, E)
        counts, ends = (torch.empty(E, dtype=torch.int32, device=dev)
                        for _ in range(2))
        rows = torch.empty(R, dtype=torch.int32, device=dev)
        positions = torch.empty(T, k, dtype=torch.int32, device=dev)
        permuted = torch.empty(R, H, dtype=torch.bfloat16, device=dev)
        out = torch.empty(T, H, dtype=torch.bfloat16, device=dev)
        kernels = {  # op -> (launch, its outputs, bytes it copies)
            "expert_histogram": (lambda: bundle[f"{prefix}_histogram"](
                ids, counts, ends), lambda: ends, None),
            "expert_sort": (lambda: bundle[f"{prefix}_sort"](
                ids, ends, rows, positions), lambda: (rows, positions), None),
            "moe_permute": (lambda: bundle[f"{prefix}_permute"](
                x, rows, permuted), lambda: permuted, 2 * R * H * 2),
            "moe_unpermute": (lambda: bundle[f"{prefix}_unpermute"](
                y, positions, weights, out), lambda: out, (R + T) * H * 2),
        }
        print(f"  E={E} H={H} top-{k} T={T} (R={R}):")
        for op, (launch, outputs, nbytes) in kernels.items():
            launch()
            got, want = outputs(), peers[op]()
            if op == "moe_unpermute":
                err = benchlib.relative_error(got, want)
                bench.check(f"{op} E={E} T={T}", err <= 1e-2,
                            f"error {err:.1e} against torch")
            else:
                pairs = zip(got, want) if op == "expert_sort" else \
                    [(got, want)]
                same = all(torch.equal(a, b) for a, b in pairs)
                bench.check(f"{op} E={E} T={T}", same,
                            "equal to torch's" if same else "differs")
            ours = bench.launch_ms(launch) * 1e3
            theirs = bench.time_ms(peers[op]) * 1e3
            rate = f"  {nbytes / ours / 1e3:7.0f} GB/s" if nbytes else ""
            print(f"    {op:18s} tessel {ours:9.1f} us   torch "
                  f"{theirs:9.1f} us{rate}")
            bench.row(f"{op} E={E} H={H} T={T}", "us", ours, "torch ops",
                      theirs)
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
