#!/usr/bin/env python3
"""Paged decode bandwidth: Tessel beside SDPA and the copy ceiling.

Llama-3-8B attention (32 query heads, 8 KV heads, head dim 128, bf16, KV
blocks of 16 tokens), one query token per request, in one process on the
same inputs:

* Tessel decode_attention (one block per request and KV head) and the
  split-KV paged_attention partials (P splits chosen from the batch and
  context so that the grid fills the GPU) followed by the N-way LSE merge
  kernel (<bundles>/paged_decode.tsb and attention.tsb);
* torch SDPA (flash backend) on contiguous KV [B, Hkv, ctx, D] with
  enable_gqa, the peer of the DESIGN reference table;
* a device-to-device copy (read + write bytes / time), the ceiling.

Effective bandwidth = bytes of K and V read (sum of contexts x Hkv x D x 2
x 2 bytes) / time. Tessel's launches are replayed from a CUDA graph (ten
a replay) so that Python's launch overhead is not timed; SDPA runs
eagerly, timed over as many calls (benchlib's peer_ms). Both Tessel
outputs are checked once against a float64 reference.

    python3 bench/paged_decode_bench.py [--bundles .carry] [--smoke]

(bench/benchlib.py: the common options.) --smoke: 2 x 100 and 1 x 300 on
the host, without SDPA.
"""
import sys

import torch

import benchlib
from paged_batch import PagedBatch

HEADS = (32, 8, 128, 16)  # Hq, Hkv, D, block size
SHAPES = [(64, 4096), (8, 131072), (4, 131072), (128, 1024)]
SMOKE_SHAPES = [(2, 100), (1, 300)]
DECODE = "dec_q32_kv8_d128_bs16_nhd_lse"
SPLIT = "decsplit_q32_kv8_d128_bs16_nhd_lse"
MERGE = "merge_n_f32_h32_d128_bf16"


def splits_for(B, ctx, units):
    """Enough (request, KV head, split) blocks for 4 a compute unit,
    splits of at least 512 tokens."""
    want = max(1, -(-4 * units // (B * HEADS[1])))
    return max(1, min(want, ctx // 512))


def sdpa_ms(bench, batch, B, ctx):
    """SDPA flash over contiguous KV of the batch's size (None: refused
    or no CUDA)."""
    if bench.cuda_only("SDPA flash"):
        return None
    import torch.nn.attention
    import torch.nn.functional as F
    hq, hkv, d, _ = HEADS
    q = batch.q.view(B, hq, 1, d)
    k = torch.randn(B, hkv, ctx, d, device="cuda", generator=bench.gen,
                    dtype=torch.bfloat16)
    v = torch.randn_like(k)
    try:
        with torch.nn.attention.sdpa_kernel(
                torch.nn.attention.SDPBackend.FLASH_ATTENTION):
            return bench.peer_ms(lambda: F.scaled_dot_product_attention(
                q, k, v, scale=d ** -0.5, enable_gqa=True))
    except RuntimeError as e:
        bench.note(f"SDPA flash refused: {str(e).splitlines()[0]}")
        return None


def main():
    args = benchlib.parser(__doc__).parse_args()
    bench = benchlib.Bench(args, "paged_decode_bench")
    decode, split = (bench.bundle("paged_decode")[n] for n in (DECODE, SPLIT))
    merge = bench.bundle("attention")[MERGE]
    hq, hkv, d, bs = HEADS
    scale = d ** -0.5
    ceiling = bench.copy_ceiling()
    print(f"copy ceiling: {ceiling:.2f} TB/s (device-to-device, read + "
          f"write)")
    print(f"{'batch x ctx':>14} {'KV GB':>6} | {'decode':>14} "
          f"{'split-KV+merge':>22} | {'SDPA flash':>14} | "
          f"{'best/SDPA':>9} {'best/copy':>9}")
    for B, ctx in SMOKE_SHAPES if bench.smoke else SHAPES:
        batch = PagedBatch([(1, ctx - 1)] * B, HEADS, bench.gen, bench.device)
        case = f"{B} x {ctx}"
        kv_bytes = B * ctx * hkv * d * 2 * 2
        out = torch.full((B, hq, d), float("nan"), dtype=torch.bfloat16,
                         device=bench.device)
        lse = torch.empty(hq, B, device=bench.device)
        inputs = (batch.q, batch.k_cache, batch.v_cache, batch.table,
                  batch.seq_lens)
        ref = batch.reference()

        def run_decode():
            decode(*inputs, out, lse, scale)

        run_decode()
        err = benchlib.relative_error(out, ref)
        bench.check(f"decode {case}", err <= 1e-2, f"error {err:.1e}")
        t_dec = bench.launch_ms(run_decode)

        # A few splits on the host too, so that the merge has work.
        P = 3 if bench.smoke else splits_for(B, ctx, bench.compute_units())
        parts = torch.empty(P, B, hq, d, device=bench.device)
        plse = torch.empty(P, hq, B, device=bench.device)
        out.fill_(float("nan"))
        split(*inputs, parts, plse, scale)
        merge(parts, plse, out)
        err = benchlib.relative_error(out, ref)
        bench.check(f"split-KV P={P} + merge {case}", err <= 1e-2,
                    f"error {err:.1e}")
        t_split = bench.launch_ms(lambda: split(*inputs, parts, plse, scale))
        t_merge = bench.launch_ms(lambda: merge(parts, plse, out))
        t_sk = t_split + t_merge
        del ref

        t_sdpa = sdpa_ms(bench, batch, B, ctx)

        def tbps(ms):
            return kv_bytes / ms / 1e9 if ms else None

        best = max(tbps(t_dec), tbps(t_sk))
        sdpa = tbps(t_sdpa)
        print(f"{B:>5} x {ctx:>6} {kv_bytes / 1e9:6.2f} | "
              f"{tbps(t_dec):6.2f} TB/s    {tbps(t_sk):6.2f} TB/s P={P:<3} "
              f"tessel | {sdpa or 0:6.2f} TB/s    | "
              f"{best / sdpa if sdpa else 0:8.2f}x {best / ceiling:8.0%}")
        print(f"{'':>22}  times: decode {t_dec * 1e3:.0f} us, partials "
              f"{t_split * 1e3:.0f} us + merge {t_merge * 1e3:.0f} us, "
              f"SDPA {t_sdpa * 1e3 if t_sdpa else 0:.0f} us")
        bench.row(f"{case} (best of decode, split-KV)", "TB/s", best,
                  "SDPA flash", sdpa)
        bench.row(f"{case} (best of decode, split-KV)", "TB/s", best,
                  "device copy (ceiling)", ceiling)
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
