#!/usr/bin/env python3
"""Paged decode bandwidth on an NVIDIA GPU: Tessel vs SDPA vs the copy ceiling.

  python3 bench/paged_decode_bench.py dec.tsb [merge.tsb] \
      --runtime /tmp/tessel-gpu-check/libtessel_runtime.so

Llama-3-8B attention (32 query heads, 8 KV heads, head dim 128, bf16, KV
blocks of 16 tokens), one query token per request, in one process on the
same inputs:

* Tessel decode_attention (one block per request and KV head) and the
  split-KV paged_attention partials (P splits chosen from the batch and
  context so that the grid fills the GPU), followed by the N-way LSE merge:
  Tessel's lse_merge_n kernel when a bundle has one (`merge_n_*`), else
  eager torch (then the merge is timed separately and said so);
* torch SDPA (flash backend) on contiguous KV [B, Hkv, ctx, D] with
  enable_gqa, the peer of the DESIGN reference table;
* a device-to-device copy of 2 GiB (read + write bytes / time), the ceiling.

Effective bandwidth = bytes of K and V read (sum of contexts x Hkv x D x 2
x 2 bytes) / time. Tessel launches are captured in a CUDA graph (ten per
replay) so that Python's launch overhead is not timed; the peers run
eagerly. Times are medians of CUDA-event timings.
"""
import argparse
import math
import statistics
import sys

import torch
import torch.nn.attention
import torch.nn.functional as F

from grouped_matmul_check import device_line, read_bundle
from paged_decode_check import Batch, Case, Runtime

HQ, HKV, D, BS = 32, 8, 128, 16
SHAPES = [(64, 4096), (8, 131072), (4, 131072), (128, 1024)]


def timed(fn, iters=20, warmup=3):
    """Median milliseconds of fn() over iters CUDA-event timings."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def graphed(launch, repeat=10):
    """A callable replaying `repeat` launches from one CUDA graph; its
    timing divided by `repeat` is one launch."""
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        launch()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(repeat):
                launch()
    torch.cuda.synchronize()
    return lambda: graph.replay(), repeat


def copy_ceiling():
    src = torch.empty(1 << 30, dtype=torch.int16, device="cuda")
    dst = torch.empty_like(src)
    ms = timed(lambda: dst.copy_(src))
    return 2 * src.numel() * 2 / ms / 1e9  # TB/s


def splits_for(B, ctx, sms):
    """Enough (request, KV head, split) blocks for 4 per SM, splits of at
    least 512 tokens."""
    want = max(1, -(-4 * sms // (B * HKV)))
    return max(1, min(want, ctx // 512))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundles", nargs="+")
    parser.add_argument("--runtime", required=True)
    args = parser.parse_args()
    print(device_line())
    rt = Runtime(args.runtime)
    kernels = {}
    for path in args.bundles:
        bundle = rt.bundle(path)
        for r in read_bundle(path):
            kernels.setdefault(r["name"], (bundle, r["op"]))
    dec_name = f"dec_q{HQ}_kv{HKV}_d{D}_bs{BS}_nhd_lse"
    split_name = f"decsplit_q{HQ}_kv{HKV}_d{D}_bs{BS}_nhd_lse"
    merge_name = next((n for n in kernels if n.startswith("merge_n_")
                       and f"_h{HQ}_" in n and n.endswith(f"d{D}_bf16")),
                      None)
    dec = rt.kernel(kernels[dec_name][0], dec_name)
    split = rt.kernel(kernels[split_name][0], split_name)
    merge = rt.kernel(kernels[merge_name][0], merge_name) if merge_name else None
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    gen = torch.Generator(device="cuda")
    gen.manual_seed(7)
    ceiling = copy_ceiling()
    print(f"copy ceiling: {ceiling:.2f} TB/s (2 GiB device-to-device, "
          "read + write)")
    print(f"{'batch x ctx':>14} {'KV GB':>6} | {'decode':>14} "
          f"{'split-KV+merge':>22} | {'SDPA flash':>14} | "
          f"{'best/SDPA':>9} {'best/copy':>9}")
    c = Case(dec_name)
    for B, ctx in SHAPES:
        batch = Batch(c, [ctx] * B, gen)
        kv_bytes = B * ctx * HKV * D * 2 * 2
        out = torch.empty(B, HQ, D, device="cuda", dtype=torch.bfloat16)
        lse = torch.empty(HQ, B, device="cuda")
        args = [batch.q, batch.k, batch.v, batch.bt, batch.sl]
        fn, rep = graphed(lambda: rt.launch(dec, args + [out, lse, c.scale]))
        t_dec = timed(fn) / rep

        P = splits_for(B, ctx, sms)
        parts = torch.empty(P, B, HQ, D, device="cuda")
        plse = torch.empty(P, HQ, B, device="cuda")
        fn, rep = graphed(lambda: rt.launch(split,
                                            args + [parts, plse, c.scale]))
        t_split = timed(fn) / rep
        if merge:
            fn, rep = graphed(lambda: rt.launch(merge, [parts, plse, out]))
            t_merge = timed(fn) / rep
            how = "tessel"
        else:
            def torch_merge():
                m = plse.amax(0)
                w = torch.exp(plse - m)
                o = torch.einsum("phb,pbhd->bhd", w, parts)
                out.copy_(o / w.sum(0).T[:, :, None])
            t_merge = timed(torch_merge)
            how = "torch"
        t_sk = t_split + t_merge

        # SDPA on contiguous KV of the same contents.
        q = batch.q.view(B, HQ, 1, D)
        k = torch.randn(B, HKV, ctx, D, device="cuda", generator=gen,
                        dtype=torch.bfloat16)
        v = torch.randn_like(k)
        with torch.nn.attention.sdpa_kernel(
                torch.nn.attention.SDPBackend.FLASH_ATTENTION):
            try:
                t_sdpa = timed(lambda: F.scaled_dot_product_attention(
                    q, k, v, scale=D ** -0.5, enable_gqa=True))
            except RuntimeError as e:
                print(f"  SDPA flash refused: {e}")
                t_sdpa = math.inf
        del k, v
        bw = lambda ms: kv_bytes / ms / 1e9  # noqa: E731  TB/s
        best = max(bw(t_dec), bw(t_sk))
        print(f"{B:>5} x {ctx:>6} {kv_bytes / 1e9:6.2f} | "
              f"{bw(t_dec):6.2f} TB/s    "
              f"{bw(t_sk):6.2f} TB/s P={P:<3} {how:>6} | "
              f"{bw(t_sdpa):6.2f} TB/s    | {best / bw(t_sdpa):8.2f}x "
              f"{best / ceiling:8.0%}")
        print(f"{'':>22}  times: decode {t_dec * 1e3:.0f} us, partials "
              f"{t_split * 1e3:.0f} us + merge {t_merge * 1e3:.0f} us, "
              f"SDPA {t_sdpa * 1e3:.0f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
