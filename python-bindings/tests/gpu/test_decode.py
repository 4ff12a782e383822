"""Paged decode against float64 torch over the same paged data.

* test_decode: the decode kernels (tessel.specs.decode, from the default
  kernel cache): GQA 1 to 16, head dims 64, 128 and 256, blocks of 16, 32,
  48 and 64, bf16 and f16, both cache layouts, with the LSE output where
  the kernel has one; outputs poisoned with NaN. Ragged batches of
  contexts 0, 1, 18, 463, 1328 and 33000; 7, 0, 1; and 131072 for 32
  heads at head dim 128, with block tables that scatter each request over
  the cache and hold garbage ids (negative, out of range) past its blocks.
  out within 1e-2 of the largest reference value, LSE within 1e-3
  (natural log); a request without context gives zeros and LSE -inf.
* test_split_partials: the split-KV kernels (tessel.specs.paged: f32
  partials [P, B, Hq, D] and LSEs [P, Hq, B] of P windows of whole blocks)
  for P = 1, 2, 5, 33 on the ragged batch and 64 on two long contexts:
  each partial against attention over its window of the context (an
  empty window: zeros and LSE -inf), then their merge against the whole.
* test_unified: tessel.ops.unified, decode rows (one query) mixed with
  rows of several queries, each the last tokens of its sequence, causal.
* test_decode_replayed_from_cuda_graph: tessel.ops.decode captured in a
  CUDA graph, replayed after new queries, lengths, block tables and
  caches were written into the captured buffers (on the host: run
  eagerly on each batch).

On the host backend (preparing) the long contexts are shorter (still odd,
and many blocks); the kernels are the same. (conftest.py: how to run it.)
"""

from typing import NamedTuple

import pytest
import torch

import tessel.ops
import tessel.specs
from gpu_checks import (assert_close, assert_lse_close, block_table, kernel,
                        merged, nan_full, shuffle)

TOLERANCE = 1e-2  # relative to the largest reference value
ELEMENT = {torch.bfloat16: "bf16", torch.float16: "f16"}

class Config(NamedTuple):
    """A paged attention configuration: heads, head dim, block size, cache
    layout, dtype, and (decode kernels) whether the kernel writes the
    LSE."""
    hq: int
    hkv: int
    d: int
    bs: int
    layout: str = "nhd"
    dtype: torch.dtype = torch.bfloat16
    lse: bool = False

    def id(self):
        return (f"q{self.hq}kv{self.hkv}-d{self.d}-bs{self.bs}-{self.layout}"
                f"-{ELEMENT[self.dtype]}{'-lse' if self.lse else ''}")

    def kernel_name(self, kind):
        return f"{kind}_{self.id()}".replace("-", "_")


F16 = torch.float16
DECODE = [Config(32, 8, 128, 16, lse=True),
          Config(32, 8, 128, 16, "shuffled", lse=True),
          Config(64, 4, 128, 16, lse=True), Config(4, 4, 128, 32, lse=True),
          Config(8, 2, 64, 64, lse=True), Config(16, 2, 256, 16, lse=True),
          Config(16, 2, 256, 32, "shuffled", lse=True),
          Config(32, 8, 64, 64, "shuffled"),
          Config(32, 8, 128, 16, dtype=F16, lse=True),
          # A block size that is a multiple of 16 but not of the tile or 32.
          Config(32, 8, 128, 48, lse=True)]
SPLIT = [Config(32, 8, 128, 16), Config(32, 8, 128, 16, "shuffled"),
         Config(64, 4, 128, 16), Config(16, 2, 256, 64),
         Config(8, 2, 64, 128, "shuffled")]
# tessel.ops.decode and unified's (NHD caches)
NHD = [Config(4, 4, 128, 32), Config(8, 2, 64, 64), Config(16, 2, 256, 16),
       Config(32, 8, 128, 16), Config(32, 8, 128, 16, dtype=F16),
       Config(32, 8, 128, 48), Config(64, 4, 128, 16)]


def contexts(name, on_gpu):
    """Context lengths; on the host shorter long ones (still odd, and many
    blocks)."""
    long = 131072 if on_gpu else 8195
    return {"ragged": [0, 1, 18, 463, 1328, 33000 if on_gpu else 3001],
            "short": [7, 0, 1],
            "long": [long, 5],
            "long_split": [long, 3, long - 1, 0]}[name]


class Paged(NamedTuple):
    """A decode kernel's inputs: q [B, Hq, D], NHD caches, block table,
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
    hq, hkv, d, bs, _, dtype, _ = config
    per = [max(1, -(-n // bs)) for n in seq_lens]
    blocks = max(blocks, sum(per) + 3)  # spare blocks nobody owns

    def rand(*shape):
        return torch.randn(*shape, generator=gen, device=device).to(dtype)

    table, _ = block_table(per, blocks, gen, device, width)
    return Paged(rand(tokens or len(seq_lens), hq, d),
                 rand(blocks, bs, hkv, d), rand(blocks, bs, hkv, d), table,
                 torch.tensor(seq_lens, dtype=torch.int32, device=device))


def reference(batch, query_lens=None, windows=None):
    """float64 out [T, Hq, D] and lse [Hq, T]: request b's query_lens[b]
    queries (default 1) are the last tokens of its seq_lens[b]; each
    attends to its sequence up to itself, only to positions in windows[b]
    = (start, end) if given (no key: out 0, lse -inf)."""
    q = batch.q
    hq, d = q.shape[1:]
    bs, hkv = batch.k_cache.shape[1:3]
    lens = batch.seq_lens.tolist()
    out = torch.zeros(q.shape, dtype=torch.float64, device=q.device)
    lse = torch.full((hq, q.shape[0]), -float("inf"), dtype=torch.float64,
                     device=q.device)
    t = 0
    for b, (m, n) in enumerate(zip(query_lens or [1] * len(lens), lens)):
        start, end = windows[b] if windows else (0, n)
        if end > start:
            pos = torch.arange(start, end, device=q.device)
            rows = batch.block_table[b, pos // bs].long()
            keys = batch.k_cache[rows, pos % bs].double()      # [n, Hkv, D]
            values = batch.v_cache[rows, pos % bs].double()
            qs = q[t:t + m].double().view(m, hkv, hq // hkv, d)
            s = torch.einsum("mhgd,nhd->hgmn", qs, keys) * d ** -0.5
            own = n - m + torch.arange(m, device=q.device)
            s.masked_fill_(pos[None, :] > own[:, None], float("-inf"))
            lse[:, t:t + m] = s.logsumexp(-1).reshape(hq, m)
            out[t:t + m] = torch.einsum("hgmn,nhd->mhgd", s.softmax(-1),
                                        values).reshape(m, hq, d)
        t += m
    return out, lse


def caches(batch, layout):
    """The batch's caches in `layout`."""
    if layout == "shuffled":
        return shuffle(batch.k_cache, batch.v_cache)
    return batch.k_cache, batch.v_cache


DECODE_CASES = [(config, name) for config in DECODE
                for name in ("ragged", "short", "long")
                if name != "long" or config.hq == 32 and config.d == 128]


@pytest.mark.parametrize("config,batch", DECODE_CASES,
                         ids=[f"{c.id()}-{n}" for c, n in DECODE_CASES])
def test_decode(config, batch, device, on_gpu, gen):
    hq, hkv, d, bs, layout, dtype, lse = config
    name = config.kernel_name("dec")
    run = kernel(device, name, tessel.specs.decode(
        name, hq, hkv, d, bs, layout=layout, dtype=ELEMENT[dtype], lse=lse))
    lens = contexts(batch, on_gpu)
    inputs = paged(gen, device, config, lens)
    out = nan_full(len(lens), hq, d, dtype=dtype, device=device)
    out_lse = nan_full(hq, len(lens), device=device)
    run(inputs.q, *caches(inputs, layout), inputs.block_table,
        inputs.seq_lens, out, *([out_lse] if lse else []), d ** -0.5)
    ref, ref_lse = reference(inputs)
    what = f"{name} contexts {lens} on {device}"
    assert_close(out, ref, TOLERANCE, what)
    empty = [b for b, n in enumerate(lens) if n == 0]
    assert bool((out[empty] == 0).all()), \
        f"{what}: a request without context: out must be zeros"
    if lse:
        assert_lse_close(out_lse, ref_lse, 1e-3, what)


SPLIT_CASES = [(config, name, splits) for config in SPLIT
               for name, splits in (("ragged", 1), ("short", 1),
                                    ("ragged", 2), ("ragged", 5),
                                    ("ragged", 33), ("long_split", 64))]


@pytest.mark.parametrize("config,batch,splits", SPLIT_CASES,
                         ids=[f"{c.id()}-{n}-P{p}"
                              for c, n, p in SPLIT_CASES])
def test_split_partials(config, batch, splits, device, on_gpu, gen):
    hq, hkv, d, bs, layout, _, _ = config
    name = config.kernel_name("decsplit")
    run = kernel(device, name, tessel.specs.paged(name, hq, hkv, d, bs,
                                                  layout=layout))
    lens = contexts(batch, on_gpu)
    inputs = paged(gen, device, config, lens)
    B = len(lens)
    parts = nan_full(splits, B, hq, d, device=device)
    lses = nan_full(splits, hq, B, device=device)
    run(inputs.q, *caches(inputs, layout), inputs.block_table,
        inputs.seq_lens, parts, lses, d ** -0.5)
    what = f"{name} P={splits} contexts {lens} on {device}"
    # Split p covers whole blocks: [p * per, (p + 1) * per) of each
    # context, per = ceil(max_blocks / P) blocks.
    per = -(-inputs.block_table.shape[1] // splits) * bs
    for p in range(splits):
        windows = [(min(p * per, n), min((p + 1) * per, n)) for n in lens]
        ref, ref_lse = reference(inputs, windows=windows)
        assert_close(parts[p], ref, TOLERANCE, f"{what}: partial {p}")
        assert_lse_close(lses[p], ref_lse, 1e-3, f"{what}: partial {p}")
    out, lse, none = merged(parts, lses)
    ref, ref_lse = reference(inputs)
    assert_close(out.masked_fill(none[..., None], 0.0), ref, TOLERANCE,
                 f"{what}: merged")
    assert_lse_close(lse, ref_lse, 1e-3, f"{what}: merged")


@pytest.mark.parametrize("config", NHD, ids=Config.id)
def test_unified(config, device, on_gpu, gen):
    """Decode rows (one query) between rows of several queries, each the
    last tokens of its sequence, causal."""
    new = [1, 1, 5, 1, 129 if on_gpu else 29, 3]
    lens = [n + c for n, c in zip(new, contexts("ragged", on_gpu))]
    inputs = paged(gen, device, config, lens, tokens=sum(new))
    cu = torch.tensor([0] + new, device=device).cumsum(0).int()
    out = tessel.ops.unified(*inputs, cu)
    assert_close(out, reference(inputs, new)[0], TOLERANCE,
                 f"unified {config.id()} new {new} over {lens} on "
                 f"{device}")


@pytest.mark.parametrize("config", NHD, ids=Config.id)
def test_decode_replayed_from_cuda_graph(config, device, on_gpu, gen):
    """Captured on one batch, replayed after the next batches' queries,
    lengths, block tables and caches were copied into the captured
    buffers."""
    batches = [[1328, 18, 0, 463], [5, 1327, 200, 0], [463, 1, 1328, 1000]]
    bs = config.bs
    blocks = max(sum(-(-n // bs) + 1 for n in lens) for lens in batches) + 3
    width = max(-(-n // bs) for lens in batches for n in lens)
    captured = paged(gen, device, config, batches[0], blocks=blocks,
                     width=width)
    out = tessel.ops.decode(*captured)  # loads the kernel outside a capture
    replay = None
    if on_gpu:
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = tessel.ops.decode(*captured)
        replay = graph.replay
    for lens in batches[1:]:
        fresh = paged(gen, device, config, lens, blocks=blocks, width=width)
        for into, new in zip(captured, fresh):
            into.copy_(new)
        if replay:
            replay()
            torch.cuda.synchronize()
        else:
            out = tessel.ops.decode(*captured)
        assert_close(out, reference(fresh)[0], TOLERANCE,
                     f"tessel.ops.decode {config.id()} "
                     f"{'replayed' if replay else 'run'} on contexts {lens}")
