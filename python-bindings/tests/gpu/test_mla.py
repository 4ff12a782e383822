"""tessel.ops.mla_decode (absorbed DeepSeek MLA: q [B, H, 576] over a
latent cache [blocks, BS, 576] whose first 512 dims are the values) against
float64 torch: the cases of bench/mla_decode_check.py for its whole-form
kernels (bench/gen_attention_kernels.py's MLA: 16 heads at block size 64,
128 at 64, 8 at 16). Contexts 0, 1, 18, 463, 1328, 33000 and 5, 0, 2049;
block tables with garbage (out of range too) past each request's blocks;
cache rows outside every context NaN; the script's DeepSeek-V3 scale
192**-0.5. out within 1e-2 of the largest reference value, LSE within
1e-3, and -inf exactly where a request has no key. On the host backend
(preparing) the 33000-token context is 3300; the kernels are the same.

Not ported: the split-form kernels (mlasplit_h128_bs64, mlasplit_h16_bs16:
f32 partials [P, B, H, 512] for P = 1, 3, 17, each checked against its
window of the context, then merged): tessel.ops.mla_decode has no split
form. The script fills the outputs with NaN before each launch; tessel.ops
allocates them, so every row is compared with the reference instead.
--bench (bandwidth) is no test.
"""

import math

import pytest
import torch

import tessel.ops
from gpu_checks import assert_close

SCALE = 192 ** -0.5  # DeepSeek-V3's (qk head dim 192), not 576**-0.5
KERNELS = [(16, 64), (128, 64), (8, 16)]  # (heads, block size)
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
    perm = torch.randperm(blocks, generator=gen, device=device).int()
    table = torch.randint(-4, 2 * blocks, (len(lens), max(per)),
                          generator=gen, device=device, dtype=torch.int32)
    used = 0
    for b, count in enumerate(per):
        table[b, :count] = perm[used:used + count]
        used += count
    # Rows no request may read are NaN: the spare blocks and the tail of
    # each request's last block.
    cache[perm[used:].long()] = math.nan
    for b, n in enumerate(lens):
        if n % bs:
            cache[table[b, per[b] - 1].long(), n % bs:] = math.nan
    seq_lens = torch.tensor(lens, dtype=torch.int32, device=device)
    return q.bfloat16(), cache, table, seq_lens


def reference(q, cache, table, lens):
    """float64 out [B, H, 512] and lse [H, B] (-inf, out 0: no key)."""
    outs, lses = [], []
    bs = cache.shape[1]
    for b, n in enumerate(lens):
        pos = torch.arange(n, device=q.device)
        rows = cache[table[b, pos // bs].long(), pos % bs].double()
        s = q[b].double() @ rows.T * SCALE
        lses.append(s.logsumexp(-1))
        outs.append(s.softmax(-1) @ rows[:, :512])
    return torch.stack(outs), torch.stack(lses, 1)


@pytest.mark.parametrize("contexts", CONTEXTS)
@pytest.mark.parametrize("kernel", KERNELS,
                         ids=lambda k: f"mla_h{k[0]}_bs{k[1]}")
def test_mla_decode(kernel, contexts, device, on_gpu, gen):
    h, bs = kernel
    lens = CONTEXTS[contexts][0 if on_gpu else 1]
    q, cache, table, seq_lens = batch(h, bs, lens, device, gen)
    out, lse = tessel.ops.mla_decode(q, cache, table, seq_lens,
                                     softmax_scale=SCALE)
    ref, ref_lse = reference(q, cache, table, lens)
    what = f"mla_decode h{h} bs{bs} contexts {lens}"
    assert_close(out, ref, 1e-2, f"{what}: out")
    assert lse.shape == ref_lse.shape, f"{what}: LSE shape {lse.shape}"
    keys = torch.isfinite(ref_lse)
    assert torch.equal(torch.isfinite(lse), keys), \
        f"{what}: LSE not -inf exactly where a request has no key"
    assert bool((lse[~keys] == -math.inf).all()), f"{what}: LSE NaN or +inf"
    err = (lse[keys].double() - ref_lse[keys]).abs().max().item()
    assert err <= 1e-3, f"{what}: LSE error {err:.2e} > 1e-3"
