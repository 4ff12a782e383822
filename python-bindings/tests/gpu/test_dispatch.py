"""The attention dispatcher, tessel.Attention, given the device: its
kernel set (tessel.specs.dispatch_set) comes from the default kernel cache.
Mixed batches of decodes (contexts 0, a block +-1, long), extends
(contexts at, around and twice the context budget, and one long) and
prefills in a shuffled engine order, for the GQA groups and cache layouts
of bench/dispatch_kernels.mlir, in every routing mode (auto, triple,
unified, two_path, and triple with the cache written by
Attention.write_cache first, a padding slot among the new tokens'); extend
batches (several requests sharing the budget, contexts to 131072); and
decode-only batches over the shuffled and split-KV decode kernels, the KV
splits bounded from 1 to 64. Each run checks the dispatcher's order (a
stable [decode : extend : prefill] sort, applied with
tessel.permute_rows), the plan (phase counts and tokens, the chunk
schedule against the budget), out (poisoned with NaN) against float64
causal attention over each request's context and new tokens, and the
caches bit for bit: the new keys and values in their slots, every other
slot as it was. AUTO must follow TESSEL_ATTENTION; tessel.permute_rows
keeps a device block table on its device. On a GPU, single-token decodes
are also replayed from a CUDA graph after new lengths, block tables and
q/k/v were written into the captured buffers. On the host (preparing) the
batches are smaller and the budget 512. (conftest.py: how to run it.)

Elsewhere: DeepSeek's non-absorbed MLA extend (qk 192, v 128:
tessel.Attention compiles sets with v_head_dim = head_dim only) is
test_extend.py's, its three launches by hand; the split-KV partials one
by one are test_decode.py's (the dispatcher merges them).
"""

import math
import random

import pytest
import torch

import tessel
import tessel.ops
from gpu_checks import assert_close, block_table, shuffle, unshuffle

TOLERANCE = 1e-2  # the bench's: relative to the largest reference value

# (q heads, kv heads, head dim, block size, cache layout), all bf16.
MIXED = [(32, 8, 128, 16, "nhd"), (32, 8, 128, 16, "shuffled"),
         (64, 4, 128, 16, "nhd"), (8, 2, 128, 64, "nhd"),
         (16, 1, 128, 32, "shuffled")]
EXTEND = [(32, 8, 128, 16, "nhd"), (32, 8, 128, 16, "shuffled"),
          (32, 8, 128, 48, "shuffled"), (64, 4, 128, 32, "nhd"),
          (8, 2, 64, 128, "shuffled"), (16, 2, 256, 32, "shuffled")]
DECODE = [(16, 2, 256, 32, "shuffled"), (32, 8, 128, 16, "shuffled"),
          (32, 8, 64, 64, "shuffled"), (16, 2, 256, 64, "nhd"),
          (32, 8, 128, 16, "nhd"), (64, 4, 128, 16, "nhd"),
          (8, 2, 64, 128, "shuffled")]
MODES = ["auto", "triple", "unified", "two_path", "triple+write_cache"]


def config_id(config):
    hq, hkv, d, bs, layout = config
    return f"q{hq}kv{hkv}-d{d}-bs{bs}-{layout}"


def budget(on_gpu):
    """The extends' context tokens per chunk: small on the host, so that
    its short contexts still cross many chunk boundaries."""
    return 32768 if on_gpu else 512


def attention(device, on_gpu, config, routing="triple", **options):
    """A dispatcher of `config` on the device, its kernel set from the
    default kernel cache; `options` as tessel.Attention's."""
    hq, hkv, d, bs, layout = config
    settings = dict(context_chunk_tokens=budget(on_gpu),
                    # The host counts few compute units, which never splits
                    # a decode: plan as for an H200's 132 SMs there.
                    compute_units=0 if on_gpu else 132)
    settings.update(options)
    return tessel.Attention(
        tessel.ops.device_of(torch.empty(0, device=device)),
        num_q_heads=hq, num_kv_heads=hkv, head_dim=d, block_size=bs,
        kv_layout=layout, dtype="bf16", routing=routing, **settings)


def phase(query_len, context_len):
    """0 decode, 1 extend, 2 prefill (decode_threshold 1)."""
    if query_len <= 1:
        return 0
    return 1 if context_len > 0 else 2


class Step:
    """One engine step: `requests` (new tokens, cached context) in engine
    order, ordered by the dispatcher; then in plan order q/k/v of the new
    tokens, NHD caches holding the contexts, a block table of random
    blocks with garbage ids past each request's, seq_lens and slots."""

    def __init__(self, att, config, requests, gen, device):
        hq, hkv, d, self.bs, self.layout = config
        self.order = att.order(*zip(*requests))
        self.ql, self.cl = zip(*tessel.permute_rows(self.order, requests))
        bs = self.bs
        per = [-(-(n + c) // bs) for n, c in requests]
        blocks = sum(per) + 3

        def rand(*shape):
            return torch.randn(*shape, generator=gen,
                               device=device).bfloat16()

        T = sum(self.ql)
        self.q, self.k, self.v = rand(T, hq, d), rand(T, hkv, d), \
            rand(T, hkv, d)
        self.k_cache, self.v_cache = (rand(blocks, bs, hkv, d)
                                      for _ in range(2))
        table, _ = block_table(per, blocks, gen, device)
        self.table = tessel.permute_rows(self.order, table)
        self.seq_lens = torch.tensor([n + c for n, c in zip(self.ql, self.cl)],
                                     dtype=torch.int32, device=device)
        self.slots = torch.cat([self.slots_of(b, c, n) for b, (n, c) in
                                enumerate(zip(self.ql, self.cl))]).int()

    def slots_of(self, b, start, count):
        pos = torch.arange(start, start + count, device=self.q.device)
        return self.table[b, pos // self.bs] * self.bs + pos % self.bs

    def buffers(self):
        """The run's buffers: the step's tensors, copies of the caches in
        the layout, out poisoned with NaN."""
        kc, vc = self.k_cache.clone(), self.v_cache.clone()
        if self.layout == "shuffled":
            kc, vc = shuffle(kc, vc)
        return dict(q=self.q, k=self.k, v=self.v, k_cache=kc, v_cache=vc,
                    block_table=self.table, seq_lens=self.seq_lens,
                    slot_mapping=self.slots,
                    out=torch.full_like(self.q, math.nan))

    def cache_written(self, buffers) -> bool:
        """Whether the run's caches hold the new keys and values in their
        slots and every other slot as it was, bit for bit."""
        kc, vc = buffers["k_cache"], buffers["v_cache"]
        if self.layout == "shuffled":
            kc, vc = unshuffle(kc, vc)
        s = self.slots.long()
        expected = []
        for before, new in ((self.k_cache, self.k), (self.v_cache, self.v)):
            after = before.clone()
            after[s // self.bs, s % self.bs] = new
            expected.append(after)
        return bool(torch.equal(kc, expected[0]) and
                    torch.equal(vc, expected[1]))

    def reference(self):
        """float64 [T, Hq, D]: each new token over its request's context
        (read from the caches before the run) and the new tokens up to
        itself."""
        T, hq, d = self.q.shape
        hkv = self.k.shape[1]
        out = torch.empty(T, hq, d, dtype=torch.float64,
                          device=self.q.device)
        t = 0
        for b, (n, c) in enumerate(zip(self.ql, self.cl)):
            pos = torch.arange(c, device=self.q.device)
            rows = self.table[b, pos // self.bs].long()
            keys = torch.cat([self.k_cache[rows, pos % self.bs],
                              self.k[t:t + n]]).double()     # [c + n, Hkv, D]
            values = torch.cat([self.v_cache[rows, pos % self.bs],
                                self.v[t:t + n]]).double()
            seen = torch.arange(c + n, device=self.q.device)
            # Queries a few at a time, to bound the score matrix.
            step = max(1, (1 << 27) // (hq * (c + n)))
            for r in range(0, n, step):
                m = min(n - r, step)
                qs = self.q[t + r:t + r + m].double().view(m, hkv, -1, d)
                s = torch.einsum("mhgd,khd->hgmk", qs, keys) * d ** -0.5
                own = c + r + torch.arange(m, device=self.q.device)
                s.masked_fill_(seen[None, :] > own[:, None], float("-inf"))
                out[t + r:t + r + m] = torch.einsum(
                    "hgmk,khd->mhgd", s.softmax(-1), values).reshape(m, hq, d)
            t += n
        return out


def check_plan(plan, step, chunk_budget, unified):
    """The plan against the header's rules: phase counts and tokens; no
    context chunks in the unified mode (one kernel over each sequence),
    else chunks that tile the longest extend's context, each within the
    budget (in sequence: all extends' tokens; in parallel: each's)."""
    info = plan.info
    phases = [phase(n, c) for n, c in zip(step.ql, step.cl)]
    assert [info["num_decodes"], info["num_extends"], info["num_prefills"]] \
        == [phases.count(p) for p in range(3)]
    assert [info["decode_tokens"], info["extend_tokens"],
            info["prefill_tokens"]] == \
        [sum(n for n, p in zip(step.ql, phases) if p == x) for x in range(3)]
    extends = [c for c, p in zip(step.cl, phases) if p == 1]
    if unified:
        assert info["context_chunks"] == len(plan.chunks) == 0
        return
    parallel = info["context_chunks_parallel"]
    end = 0
    for start, width in plan.chunks:
        assert start == end, f"chunk at {start}, the previous ended at {end}"
        end = start + width
        used = width if parallel else \
            sum(max(0, min(c, end) - start) for c in extends)
        assert used <= chunk_budget, \
            f"chunk [{start}, {end}): {used} tokens"
    assert end >= max(extends, default=0)


def run_step(att, step, write_cache=False):
    """Plans and runs the step (the new tokens written by the run, or by
    write_cache first, given one more token at a padding slot, -1, which
    it must skip); its buffers."""
    plan = att.plan(step.ql, step.cl, step.table.shape[1])
    check_plan(plan, step, budget(step.q.is_cuda),
               unified=att.routing == "unified")
    buffers = step.buffers()
    if write_cache:
        pad = torch.full_like(step.k[:1], 7.0)
        att.write_cache(torch.cat([step.k, pad]), torch.cat([step.v, pad]),
                        buffers["k_cache"], buffers["v_cache"],
                        torch.cat([step.slots, step.slots.new_full((1,),
                                                                   -1)]))
        del buffers["slot_mapping"]
    plan.run(**buffers)
    return plan, buffers


def check_step(step, buffers, what):
    assert_close(buffers["out"], step.reference(), TOLERANCE, what)
    assert step.cache_written(buffers), f"{what}: new keys/values not in " \
        f"their cache slots"


def mixed_requests(rng, chunk_budget, bs, on_gpu):
    """A mixed batch in a random engine order: decodes, extends,
    prefills. On the host, fewer new tokens over shorter long contexts:
    there the float64 reference (torch's CPU matmul) costs far more than
    the kernels."""
    far = 50000 if on_gpu else 3000
    decodes = [(1, c) for c in (0, bs - 1, bs, bs + 1, rng.randint(1, far),
                                rng.randint(1, far))]
    b = chunk_budget
    contexts = [b - 1, b, b + 1, 2 * b, rng.randint(1, 3 * b),
                rng.randint(1, 40),
                rng.randint(33000, 70000) if on_gpu else 4097]
    extends = [(rng.randint(2, 160 if on_gpu else 8), c) for c in contexts]
    prefills = [(rng.randint(2, 1500 if on_gpu else 40), 0)
                for _ in range(3)]
    batch = decodes + extends + prefills
    rng.shuffle(batch)
    return batch


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("config", MIXED, ids=config_id)
def test_mixed_batch(config, mode, device, on_gpu, gen, monkeypatch):
    monkeypatch.delenv("TESSEL_ATTENTION", raising=False)  # AUTO: triple
    routing = mode.split("+")[0]
    att = attention(device, on_gpu, config, routing)
    assert att.routing == ("triple" if routing == "auto" else routing)
    requests = mixed_requests(random.Random(gen.initial_seed()),
                              budget(on_gpu), config[3], on_gpu)
    step = Step(att, config, requests, gen, device)
    assert step.order == sorted(range(len(requests)),
                                key=lambda i: phase(*requests[i]))
    _, buffers = run_step(att, step, write_cache=mode.endswith("write_cache"))
    check_step(step, buffers, f"{config_id(config)} {mode} on {device}")


def test_permute_rows_on_the_device(device, on_gpu):
    """tessel.permute_rows of a block table on the device: its rows in the
    dispatcher's order, on the same device."""
    requests = [(1, 40000), (300, 33000), (1, 0), (700, 0), (64, 32768),
                (1, 17), (5, 65536), (2000, 0), (1, 5000)]
    order = attention(device, on_gpu, MIXED[0]).order(*zip(*requests))
    assert sorted(order) == list(range(len(requests)))
    table = torch.arange(len(requests) * 5, dtype=torch.int32,
                         device=device).view(-1, 5)
    permuted = tessel.permute_rows(order, table)
    assert permuted.device == table.device
    assert torch.equal(permuted, table[torch.tensor(order, device=device)])


def extend_requests(index, on_gpu):
    """The extend batches (new tokens, context) per request; on the
    host fewer tokens (as in mixed_requests)."""
    if on_gpu:
        return [list(zip([1, 5, 129, 1000, 3], [0, 18, 463, 1328, 33000])),
                [(7, 131072), (1200, 100000)],
                [(64, 9000)] * 4][index]
    return [list(zip([1, 5, 13, 40, 3], [0, 18, 463, 1328, 3001])),
            [(7, 4099), (30, 2000)],
            [(8, 1500)] * 4][index]


# two_path runs extends as triple does (and these batches have no
# prefills).
@pytest.mark.parametrize("mode", ["triple", "unified"])
@pytest.mark.parametrize("batch", [0, 1, 2])
@pytest.mark.parametrize("config", EXTEND, ids=config_id)
def test_extend_batch(config, batch, mode, device, on_gpu, gen):
    att = attention(device, on_gpu, config, mode)
    step = Step(att, config, extend_requests(batch, on_gpu), gen, device)
    _, buffers = run_step(att, step)
    check_step(step, buffers, f"{config_id(config)} {mode} extends "
               f"{list(zip(step.ql, step.cl))} on {device}")


def test_parallel_windows_within_the_budget(device, on_gpu):
    """docs/dispatcher.md: parallel context windows are each at most
    context_chunk_tokens wide, also where the block size does not divide
    it. Planning only, alike on every device: 5 new tokens over 3001 at
    blocks of 48, a budget of 512."""
    att = attention(device, on_gpu, EXTEND[2], context_chunk_tokens=512,
                    compute_units=132)
    plan = att.plan([5], [3001], -(-3006 // 48))
    if not plan.info["context_chunks_parallel"]:
        pytest.fail("the chunks run one after the other: not the case")
    widths = [width for _, width in plan.chunks]
    assert max(widths) <= 512, f"windows {widths}"


def decode_contexts(name, on_gpu):
    """Decode contexts (shorter long ones on the host)."""
    long = 131072 if on_gpu else 8195
    return {"ragged": [0, 1, 18, 463, 1328, 33000 if on_gpu else 3001],
            "short": [7, 0, 1], "long": [long, 3, long - 1, 0]}[name]


DECODE_CASES = [("ragged", 1), ("short", 1), ("ragged", 5), ("ragged", 33),
                ("long", 64)]


@pytest.mark.parametrize("contexts,max_splits", DECODE_CASES,
                         ids=[f"{c}-splits{s}" for c, s in DECODE_CASES])
@pytest.mark.parametrize("config", DECODE, ids=config_id)
def test_decode_batch(config, contexts, max_splits, device, on_gpu, gen):
    """Single-token decodes (so the context plus the new token) in triple
    mode: at most `max_splits` KV splits, the whole-context decode kernel
    at 1, the split kernel and the merge past it."""
    att = attention(device, on_gpu, config, max_kv_splits=max_splits)
    lens = decode_contexts(contexts, on_gpu)
    step = Step(att, config, [(1, c) for c in lens], gen, device)
    plan, buffers = run_step(att, step)
    splits = plan.info["kv_splits"]
    assert 1 <= splits <= max_splits
    if contexts == "long":
        assert splits > 1, "a long context must split"
    check_step(step, buffers, f"{config_id(config)} decodes {lens}, "
               f"{splits} splits, on {device}")


def test_auto_follows_the_environment(device, on_gpu, monkeypatch):
    config = MIXED[0]
    monkeypatch.delenv("TESSEL_ATTENTION", raising=False)
    for value in (None, "unified", "two_path", "triple"):
        if value:
            monkeypatch.setenv("TESSEL_ATTENTION", value)
        assert attention(device, on_gpu, config, "auto").routing == \
            (value or "triple")
        # An explicit mode ignores it.
        assert attention(device, on_gpu, config, "unified").routing == \
            "unified"
    monkeypatch.setenv("TESSEL_ATTENTION", "fastest")
    with pytest.raises(tessel.Error):
        attention(device, on_gpu, config, "auto")


def refill(step, contexts, gen):
    """New single-token decodes written into a decode step's tensors in
    place, as an engine updates captured buffers: contexts, a fresh block
    table over the whole cache, seq_lens, slots, q/k/v."""
    B, width = step.table.shape
    device = step.q.device
    perm = torch.randperm(step.k_cache.shape[0], generator=gen,
                          device=device).int()
    step.table.copy_(perm[:B * width].view(B, width))
    step.cl = contexts
    step.seq_lens.copy_(torch.tensor(contexts, device=device) + 1)
    step.slots.copy_(torch.cat([step.slots_of(b, c, 1)
                                for b, c in enumerate(contexts)]))
    for t in (step.q, step.k, step.v):
        t.copy_(torch.randn(t.shape, generator=gen, device=device))


@pytest.mark.parametrize("longest", [40, 35000])
@pytest.mark.parametrize("mode", ["triple", "two_path"])
def test_decodes_replayed_from_cuda_graph(mode, longest, on_gpu, gen):
    """Captured with contexts of up to `longest` tokens (which sets the
    plan's split-KV factor), replayed after new contexts (up to 35199),
    block tables and q/k/v were written into the captured buffers."""
    if not on_gpu:
        pytest.skip("CUDA graphs need a GPU (test_mixed_batch prepares "
                    "these kernels)")
    config = MIXED[0]
    rng = random.Random(gen.initial_seed())
    att = attention("cuda", on_gpu, config, mode)
    B, width, bs = 12, 2200, config[3]
    # Built at the largest size, so that every replay fits.
    step = Step(att, config, [(1, width * bs - 1)] * B, gen, "cuda")
    refill(step, [rng.randint(0, longest) for _ in range(B)], gen)
    plan = att.plan([1] * B, step.cl, width)
    workspace = torch.empty(max(16, plan.info["workspace_bytes"]),
                            dtype=torch.uint8, device="cuda")
    buffers = step.buffers()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        plan.run(workspace=workspace, **buffers)  # warm-up, not captured
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            plan.run(workspace=workspace, **buffers)
    for replay in range(3):
        refill(step, [rng.randint(0, width * bs - 1) for _ in range(B)], gen)
        # The run writes the new tokens into the caches: restore them.
        fresh = step.buffers()
        for name in ("k_cache", "v_cache", "out"):
            buffers[name].copy_(fresh[name])
        graph.replay()
        torch.cuda.synchronize()
        check_step(step, buffers, f"graph {mode} captured at <= {longest}, "
                   f"replay {replay} (contexts up to {max(step.cl)})")
