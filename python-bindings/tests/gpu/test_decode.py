"""Paged decode through tessel.ops.decode: the NHD decode kernels of
bench/paged_decode_check.py (bench/paged_decode_kernels.mlir: GQA 1 to 16,
head dims 64, 128 and 256, blocks of 16, 32, 48 and 64, bf16 and f16) on
its ragged batches (contexts 0, 1, 18, 463, 1328 and 33000; 7, 0, 1; and
131072 for 32 heads at head dim 128), with block tables that scatter each
request over the cache and hold garbage ids past its blocks; a request
without context must give zeros. Then the same configurations through
tessel.ops.unified (decode rows mixed with multi-token rows), and on a GPU
decode replayed from a CUDA graph after new queries, lengths, block tables
and caches were written into the captured buffers. References: float64
torch over the same paged data. (conftest.py: how to run it.)

Not here: the shuffled cache layout and the split-KV kernels (tessel.ops
has neither; test_dispatch.py runs both through tessel.Attention, with
the split partials merged, not checked one by one), the LSE outputs
(tessel.ops.decode returns none), and NaN-poisoned outputs (tessel.ops
allocates them).
"""

from typing import NamedTuple

import pytest
import torch

import tessel.ops
from gpu_checks import assert_close

TOLERANCE = 1e-2  # the bench's: relative to the largest reference value

# (q heads, kv heads, head dim, block size, dtype).
NHD = [(4, 4, 128, 32, torch.bfloat16), (8, 2, 64, 64, torch.bfloat16),
       (16, 2, 256, 16, torch.bfloat16), (32, 8, 128, 16, torch.bfloat16),
       (32, 8, 128, 16, torch.float16), (32, 8, 128, 48, torch.bfloat16),
       (64, 4, 128, 16, torch.bfloat16)]


def config_id(config):
    hq, hkv, d, bs, dtype = config
    return f"q{hq}kv{hkv}-d{d}-bs{bs}-{str(dtype)[6:]}"


def contexts(name, on_gpu):
    """The bench's context lengths; on the host shorter long ones (still
    odd, and many blocks)."""
    return {"ragged": [0, 1, 18, 463, 1328, 33000 if on_gpu else 3001],
            "short": [7, 0, 1],
            "long": [131072 if on_gpu else 8195, 5]}[name]


class Paged(NamedTuple):
    """tessel.ops.decode's inputs: q [B, Hq, D], NHD caches, block table,
    seq_lens."""
    q: torch.Tensor
    k_cache: torch.Tensor
    v_cache: torch.Tensor
    block_table: torch.Tensor
    seq_lens: torch.Tensor


def paged(gen, device, config, seq_lens, tokens=None, blocks=0, width=0):
    """Random data: `tokens` query rows (default one a request), each
    request's blocks a random draw of the cache's, garbage (negative or
    out of range) past them; at least `blocks` blocks, `width` columns."""
    hq, hkv, d, bs, dtype = config
    per = [max(1, -(-n // bs)) for n in seq_lens]
    blocks = max(blocks, sum(per) + 3)  # spare blocks nobody owns

    def rand(*shape):
        return torch.randn(*shape, generator=gen, device=device).to(dtype)

    table = torch.randint(-5, 2 * blocks, (len(seq_lens), max(width, *per)),
                          generator=gen, device=device, dtype=torch.int32)
    perm = torch.randperm(blocks, generator=gen, device=device).int()
    used = 0
    for b, n in enumerate(per):
        table[b, :n] = perm[used:used + n]
        used += n
    return Paged(rand(tokens or len(seq_lens), hq, d),
                 rand(blocks, bs, hkv, d), rand(blocks, bs, hkv, d), table,
                 torch.tensor(seq_lens, dtype=torch.int32, device=device))


def reference(batch, query_lens=None):
    """float64 out [T, Hq, D]: request b's query_lens[b] queries (default
    1) are the last tokens of its seq_lens[b]; each attends to its
    sequence up to itself (no tokens: zeros)."""
    q = batch.q
    hq, d = q.shape[1:]
    bs, hkv = batch.k_cache.shape[1:3]
    lens = batch.seq_lens.tolist()
    out = torch.zeros(q.shape, dtype=torch.float64, device=q.device)
    t = 0
    for b, (m, n) in enumerate(zip(query_lens or [1] * len(lens), lens)):
        if n:
            pos = torch.arange(n, device=q.device)
            rows = batch.block_table[b, pos // bs].long()
            keys = batch.k_cache[rows, pos % bs].double()      # [n, Hkv, D]
            values = batch.v_cache[rows, pos % bs].double()
            qs = q[t:t + m].double().view(m, hkv, hq // hkv, d)
            s = torch.einsum("mhgd,nhd->hgmn", qs, keys) * d ** -0.5
            own = n - m + torch.arange(m, device=q.device)
            s.masked_fill_(pos[None, :] > own[:, None], float("-inf"))
            out[t:t + m] = torch.einsum("hgmn,nhd->mhgd", s.softmax(-1),
                                        values).reshape(m, hq, d)
        t += m
    return out


DECODE_CASES = [(config, name) for config in NHD
                for name in ("ragged", "short", "long")
                if name != "long" or config[0] == 32 and config[2] == 128]


@pytest.mark.parametrize("config,batch", DECODE_CASES,
                         ids=[f"{config_id(c)}-{n}" for c, n in DECODE_CASES])
def test_decode(config, batch, device, on_gpu, gen):
    lens = contexts(batch, on_gpu)
    inputs = paged(gen, device, config, lens)
    out = tessel.ops.decode(*inputs)
    assert out.dtype == config[4]
    assert_close(out, reference(inputs), TOLERANCE,
                 f"decode {config_id(config)} contexts {lens} on {device}")
    empty = [b for b, n in enumerate(lens) if n == 0]
    assert bool((out[empty] == 0).all()), "a request without context: " \
        "out must be zeros"


@pytest.mark.parametrize("config", NHD, ids=config_id)
def test_unified(config, device, on_gpu, gen):
    """Decode rows (one query) between rows of several queries, each the
    last tokens of its sequence, causal."""
    new = [1, 1, 5, 1, 129 if on_gpu else 29, 3]
    lens = [n + c for n, c in zip(new, contexts("ragged", on_gpu))]
    inputs = paged(gen, device, config, lens, tokens=sum(new))
    cu = torch.tensor([0] + new, device=device).cumsum(0).int()
    out = tessel.ops.unified(*inputs, cu)
    assert_close(out, reference(inputs, new), TOLERANCE,
                 f"unified {config_id(config)} new {new} over {lens} on "
                 f"{device}")


@pytest.mark.parametrize("config", NHD, ids=config_id)
def test_decode_replayed_from_cuda_graph(config, on_gpu, gen):
    """Captured on one batch, replayed after the next batches' queries,
    lengths, block tables and caches were copied into the captured
    buffers."""
    if not on_gpu:
        pytest.skip("CUDA graphs need a GPU (test_decode prepares these "
                    "kernels)")
    batches = [[1328, 18, 0, 463], [5, 1327, 200, 0], [463, 1, 1328, 1000]]
    bs = config[3]
    blocks = max(sum(-(-n // bs) + 1 for n in lens) for lens in batches) + 3
    width = max(-(-n // bs) for lens in batches for n in lens)
    captured = paged(gen, "cuda", config, batches[0], blocks=blocks,
                     width=width)
    tessel.ops.decode(*captured)  # loads the kernel outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = tessel.ops.decode(*captured)
    for lens in batches[1:]:
        fresh = paged(gen, "cuda", config, lens, blocks=blocks, width=width)
        for into, new in zip(captured, fresh):
            into.copy_(new)
        graph.replay()
        torch.cuda.synchronize()
        assert_close(out, reference(fresh), TOLERANCE,
                     f"decode {config_id(config)} replayed on contexts "
                     f"{lens}")
