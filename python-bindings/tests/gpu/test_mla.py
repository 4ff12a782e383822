"""The absorbed MLA decode kernels (tessel.specs.mla_decode, from the
default kernel cache: q [B, H, 576] over a latent cache [blocks, BS, 576]
whose first 512 dims are the values) against float64 torch. Whole form
(out [B, H, 512] bf16, LSE [H, B]) at 16 heads and blocks of 64, 128 at
64, 8 at 16: contexts 0, 1, 18, 463, 1328, 33000 and 5, 0, 2049. Split
form (f32 partials [P, B, H, 512], LSEs [P, H, B]) at 128 heads and blocks
of 64, 16 at 16, for P = 1, 3 and 17 on the first batch: each partial
against attention over its window of whole blocks (an empty window:
zeros, LSE -inf), then their merge against the whole. Block tables with
garbage (out of range too) past each request's blocks; cache rows outside
every context NaN; outputs poisoned with NaN; DeepSeek-V3's scale
192**-0.5. out within 1e-2 of the largest reference value, LSE within
1e-3, and -inf exactly where a request has no key. On the host backend
(preparing) the 33000-token context is 3300; the kernels are the same.
(conftest.py: how to run it.)
"""

import math

import pytest
import torch

import tessel.specs
from gpu_checks import (assert_close, assert_lse_close, block_table, kernel,
                        merged, nan_full)

SCALE = 192 ** -0.5  # DeepSeek-V3's (qk head dim 192), not 576**-0.5
KERNELS = [(16, 64), (128, 64), (8, 16)]  # (heads, block size)
SPLIT_KERNELS = [(128, 64), (16, 16)]
# name: (contexts on the GPU, on the host)
CONTEXTS = {
    "contexts": ([0, 1, 18, 463, 1328, 33000], [0, 1, 18, 463, 1328, 3300]),
    "short_empty_long": ([5, 0, 2049], [5, 0, 2049]),
}


def batch(h, bs, lens, device, gen):
    """q, the latent cache, the block table and seq_lens of `lens`."""
    per = [max(1, -(-n // bs)) for n in lens]
    blocks = sum(per) + 2
    q = torch.randn(len(lens), h, 576, generator=gen, device=device)
    cache = torch.randn(blocks, bs, 576, generator=gen, device=device)
    cache = cache.bfloat16()
    table, spare = block_table(per, blocks, gen, device)
    # Rows no request may read are NaN: the spare blocks and the tail of
    # each request's last block.
    cache[spare.long()] = math.nan
    for b, n in enumerate(lens):
        if n % bs:
            cache[table[b, per[b] - 1].long(), n % bs:] = math.nan
    seq_lens = torch.tensor(lens, dtype=torch.int32, device=device)
    return q.bfloat16(), cache, table, seq_lens


def reference(q, cache, table, lens, windows=None):
    """float64 out [B, H, 512] and lse [H, B] over each request's context,
    only positions in windows[b] = (start, end) if given (no key: out 0,
    lse -inf)."""
    B, H = q.shape[:2]
    out = torch.zeros(B, H, 512, dtype=torch.float64, device=q.device)
    lse = torch.full((H, B), -math.inf, dtype=torch.float64, device=q.device)
    bs = cache.shape[1]
    for b, n in enumerate(lens):
        start, end = windows[b] if windows else (0, n)
        if end <= start:
            continue
        pos = torch.arange(start, end, device=q.device)
        rows = cache[table[b, pos // bs].long(), pos % bs].double()
        s = q[b].double() @ rows.T * SCALE
        lse[:, b] = s.logsumexp(-1)
        out[b] = s.softmax(-1) @ rows[:, :512]
    return out, lse


def mla_kernel(device, h, bs, split):
    name = f"mla{'split' if split else ''}_h{h}_bs{bs}"
    return name, kernel(device, name, tessel.specs.mla_decode(
        name, h, bs, split=split))


@pytest.mark.parametrize("contexts", CONTEXTS)
@pytest.mark.parametrize("config", KERNELS,
                         ids=lambda k: f"mla_h{k[0]}_bs{k[1]}")
def test_mla_decode(config, contexts, device, on_gpu, gen):
    h, bs = config
    name, run = mla_kernel(device, h, bs, split=False)
    lens = CONTEXTS[contexts][0 if on_gpu else 1]
    q, cache, table, seq_lens = batch(h, bs, lens, device, gen)
    out = nan_full(len(lens), h, 512, dtype=torch.bfloat16, device=device)
    lse = nan_full(h, len(lens), device=device)
    run(q, cache, table, seq_lens, out, lse, SCALE)
    ref, ref_lse = reference(q, cache, table, lens)
    what = f"{name} contexts {lens}"
    assert_close(out, ref, 1e-2, f"{what}: out")
    assert_lse_close(lse, ref_lse, 1e-3, what)


@pytest.mark.parametrize("splits", [1, 3, 17])
@pytest.mark.parametrize("config", SPLIT_KERNELS,
                         ids=lambda k: f"mlasplit_h{k[0]}_bs{k[1]}")
def test_mla_split_partials(config, splits, device, on_gpu, gen):
    h, bs = config
    name, run = mla_kernel(device, h, bs, split=True)
    lens = CONTEXTS["contexts"][0 if on_gpu else 1]
    q, cache, table, seq_lens = batch(h, bs, lens, device, gen)
    B = len(lens)
    parts = nan_full(splits, B, h, 512, device=device)
    lses = nan_full(splits, h, B, device=device)
    run(q, cache, table, seq_lens, parts, lses, SCALE)
    what = f"{name} P={splits} contexts {lens}"
    per = -(-table.shape[1] // splits) * bs  # whole blocks a split
    for p in range(splits):
        windows = [(min(p * per, n), min((p + 1) * per, n)) for n in lens]
        ref, ref_lse = reference(q, cache, table, lens, windows)
        assert_close(parts[p], ref, 1e-2, f"{what}: partial {p}")
        assert_lse_close(lses[p], ref_lse, 1e-3, f"{what}: partial {p}")
    out, lse, none = merged(parts, lses)
    ref, ref_lse = reference(q, cache, table, lens)
    assert_close(out.masked_fill(none[..., None], 0.0), ref, 1e-2,
                 f"{what}: merged")
    assert_lse_close(lse, ref_lse, 1e-3, f"{what}: merged")
