"""A batch of requests over a paged KV cache, for the attention benchmarks
(paged_decode_bench.py, extend_turn_bench.py, mixed_batch_bench.py):
random bf16 caches, a block table that scatters each request's blocks over
the cache, the step's q/k/v, seq_lens and the new tokens' cache slots; and
the float64 reference of the step's attention.
"""
import torch

import tessel


class PagedBatch:
    def __init__(self, requests, heads, gen, device, layout="nhd"):
        """`requests`: (new tokens, cached context) per request, in plan
        order; `heads`: (Hq, Hkv, D, block size); `layout`: the caches'
        ("nhd" or "shuffled")."""
        self.hq, self.hkv, self.d, self.bs = heads
        self.layout = layout
        self.ql = [n for n, _ in requests]
        self.cl = [c for _, c in requests]
        bs = self.bs
        blocks = [-(-(n + c) // bs) for n, c in requests]
        self.max_blocks = max(blocks)
        total = sum(blocks)
        perm = torch.randperm(total, device=device, generator=gen).int()
        table = torch.zeros(len(requests), self.max_blocks, dtype=torch.int32,
                            device=device)
        first = 0
        for i, b in enumerate(blocks):
            table[i, :b] = perm[first:first + b]
            first += b
        self.table = table

        def rand(*shape):
            return torch.randn(*shape, device=device,
                               generator=gen).bfloat16()

        shape = (total, bs, self.hkv, self.d)
        self.k_cache, self.v_cache = rand(*shape), rand(*shape)
        if layout == "shuffled":
            self.k_cache, self.v_cache = tessel.shuffle_kv_caches(
                self.k_cache, self.v_cache)
        T = sum(self.ql)
        self.q, self.k, self.v = (rand(T, self.hq, self.d),
                                  rand(T, self.hkv, self.d),
                                  rand(T, self.hkv, self.d))
        self.seq_lens = torch.tensor([n + c for n, c in requests],
                                     dtype=torch.int32, device=device)
        slots = []
        for i, (n, c) in enumerate(requests):
            pos = torch.arange(c, c + n, device=device)
            slots.append(table[i, pos // bs].long() * bs + pos % bs)
        self.slot_mapping = torch.cat(slots).int()

    def attention(self, bundle, **config):
        return tessel.Attention(bundle, num_q_heads=self.hq,
                                num_kv_heads=self.hkv, head_dim=self.d,
                                block_size=self.bs, kv_layout=self.layout,
                                **config)

    def buffers(self, out):
        return dict(q=self.q, k=self.k, v=self.v, k_cache=self.k_cache,
                    v_cache=self.v_cache, block_table=self.table,
                    seq_lens=self.seq_lens, out=out)

    def write_cache(self, att):
        """The new tokens' keys and values into their slots (the unified
        mode reads them from the cache)."""
        att.write_cache(self.k, self.v, self.k_cache, self.v_cache,
                        self.slot_mapping)

    def timed_run(self, att, bench):
        """Plans this batch on `att` and times its run with `bench`
        (benchlib.Bench): (median ms, out, plan info)."""
        plan = att.plan(self.ql, self.cl, self.max_blocks)
        out = torch.full_like(self.q, float("nan"))
        bufs = self.buffers(out)
        return bench.time_ms(lambda: plan.run(**bufs), warmup=3), out, \
            plan.info

    def context_kv_bytes(self):
        """Bytes of cached K and V (before this step) the step reads once."""
        return sum(self.cl) * self.hkv * self.d * 2 * 2

    def reference(self):
        """float64 out [T, Hq, D] of the step (the new tokens must be in
        the caches first)."""
        caches = (self.k_cache, self.v_cache)
        if self.layout == "shuffled":
            caches = tessel.nhd_kv_caches(*caches)
        return reference(self.q, *caches, self.table, self.ql, self.cl)


def reference(q, k_cache, v_cache, table, query_lens, context_lens):
    """float64 out [T, Hq, D]: each new token of request b (query_lens[b]
    of them, after context_lens[b] cached ones) over its sequence in the NHD
    caches (context and new tokens, already written there; block table
    `table`) up to itself; a few queries at a time, to bound the score
    matrix."""
    hq, d = q.shape[1:]
    bs, hkv = k_cache.shape[1:3]
    out = torch.empty(q.shape, dtype=torch.float64, device=q.device)
    t = 0
    for b, (n, c) in enumerate(zip(query_lens, context_lens)):
        pos = torch.arange(c + n, device=q.device)
        rows = table[b, pos // bs].long()
        keys = k_cache[rows, pos % bs].double()     # [c + n, Hkv, D]
        values = v_cache[rows, pos % bs].double()
        step = max(1, (1 << 26) // (hq * (c + n)))
        for r in range(0, n, step):
            m = min(n - r, step)
            qs = q[t + r:t + r + m].double().view(m, hkv, hq // hkv, d)
            s = torch.einsum("mhgd,khd->hgmk", qs, keys) * d ** -0.5
            own = c + r + torch.arange(m, device=q.device)
            s.masked_fill_(pos[None, :] > own[:, None], float("-inf"))
            out[t + r:t + r + m] = torch.einsum(
                "hgmk,khd->mhgd", s.softmax(-1), values).reshape(m, hq, d)
        t += n
    return out
