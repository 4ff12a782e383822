"""Extend attention composed by hand for DeepSeek-V3's non-absorbed MLA
(128 heads, qk head dim 192, v head dim 128, bf16, NHD blocks of 16),
which tessel.Attention does not compile on demand (v_head_dim =
head_dim only; test_dispatch.py runs the GQA extends through it). Three
launches of kernels from tessel.specs (the default kernel cache):

  1. causal prefill of the new tokens -> partial 0 (f32 out and LSE);
  2. the cached context in split form, P windows of whole blocks of at
     most the context budget -> partials 1..P;
  3. the N-way LSE merge of the P + 1 partials -> bf16 out.

Batches (new tokens, context): 1, 5, 129, 1000 and 3 tokens over 0, 18,
463, 1328 and 33000; four requests of 64 over 9000 (the budget shared).
Partials and out are poisoned with NaN; out against float64 attention of
each new token over its context and the new tokens up to itself, within
1e-2 of the largest reference value. On the host backend (preparing),
fewer tokens over shorter contexts and a budget of 512 (many windows).
(conftest.py: how to run it.)
"""

import math

import pytest
import torch

import tessel.specs
from gpu_checks import assert_close, block_table, kernel, nan_full

HQ = HKV = 128
D, DV, BS = 192, 128, 16


def requests(index, on_gpu):
    """(new tokens, context) per request of batch `index`."""
    if on_gpu:
        return [list(zip([1, 5, 129, 1000, 3], [0, 18, 463, 1328, 33000])),
                [(64, 9000)] * 4][index]
    return [list(zip([1, 5, 13, 40, 3], [0, 18, 463, 1328, 3001])),
            [(8, 1500)] * 4][index]


def extend_kernels(device):
    tag = f"q{HQ}_kv{HKV}_d{D}_v{DV}"
    specs = {
        "new": tessel.specs.prefill(f"ext_new_{tag}", HQ, HKV, D,
                                    v_head_dim=DV, out_dtype="f32",
                                    lse=True),
        "context": tessel.specs.paged(f"ext_ctx_{tag}_bs{BS}", HQ, HKV, D, BS,
                                      v_head_dim=DV, cu_seqlens=True),
        "merge": tessel.specs.lse_merge_n(f"ext_merge_{tag}", HQ, DV)}
    return {role: kernel(device, spec.split("@", 1)[1].split("(", 1)[0],
                         spec)
            for role, spec in specs.items()}


def reference(q, k, v, k_cache, v_cache, table, batch):
    """float64 out [T, Hq, Dv]: each new token over its request's context
    (read through the block table) and the new tokens up to itself, a few
    queries at a time to bound the score matrix."""
    out = torch.empty(q.shape[0], HQ, DV, dtype=torch.float64,
                      device=q.device)
    t = 0
    for b, (n, c) in enumerate(batch):
        pos = torch.arange(c, device=q.device)
        rows = table[b, pos // BS].long()
        keys = torch.cat([k_cache[rows, pos % BS], k[t:t + n]]).double()
        values = torch.cat([v_cache[rows, pos % BS], v[t:t + n]]).double()
        seen = torch.arange(c + n, device=q.device)
        step = max(1, (1 << 26) // (HQ * (c + n)))
        for r in range(0, n, step):
            m = min(n - r, step)
            s = torch.einsum("mhd,khd->hmk", q[t + r:t + r + m].double(),
                             keys) * D ** -0.5
            own = c + r + torch.arange(m, device=q.device)
            s.masked_fill_(seen[None, :] > own[:, None], -math.inf)
            out[t + r:t + r + m] = torch.einsum("hmk,khd->mhd", s.softmax(-1),
                                                values)
        t += n
    return out


@pytest.mark.parametrize("index", [0, 1], ids=["ragged", "shared_budget"])
def test_mla_extend(index, device, on_gpu, gen):
    batch = requests(index, on_gpu)
    budget = 32768 if on_gpu else 512
    new = [n for n, _ in batch]
    T = sum(new)

    def rand(*shape):
        return torch.randn(*shape, generator=gen, device=device).bfloat16()

    q, k, v = rand(T, HQ, D), rand(T, HKV, D), rand(T, HKV, DV)
    per = [max(1, -(-c // BS)) for _, c in batch]
    blocks = sum(per) + 2
    k_cache, v_cache = rand(blocks, BS, HKV, D), rand(blocks, BS, HKV, DV)
    table, _ = block_table(per, blocks, gen, device)
    cu = torch.tensor([0] + new, device=device).cumsum(0).int()
    context_lens = torch.tensor([c for _, c in batch], dtype=torch.int32,
                                device=device)
    P = max(1, -(-max(c for _, c in batch) // budget))
    parts = nan_full(P + 1, T, HQ, DV, device=device)
    lses = nan_full(P + 1, HQ, T, device=device)
    out = nan_full(T, HQ, DV, dtype=torch.bfloat16, device=device)
    run = extend_kernels(device)
    scale = D ** -0.5
    run["new"](q, k, v, cu, parts[0], lses[0], scale)
    run["context"](q, k_cache, v_cache, table, cu, context_lens, parts[1:],
                   lses[1:], scale)
    run["merge"](parts, lses, out)
    assert_close(out, reference(q, k, v, k_cache, v_cache, table, batch),
                 1e-2, f"MLA extend {batch}, {P} context windows, on "
                 f"{device}")
