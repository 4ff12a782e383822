"""A batch of requests over a paged KV cache on the GPU, for the attention
benchmarks (extend_turn_bench.py, mixed_batch_bench.py): random bf16
caches, a block table that scatters each request's blocks over the cache,
the step's q/k/v, seq_lens and the new tokens' cache slots.
"""
import torch

import tessel
from grouped_matmul_bench import time_ms


class PagedBatch:
    def __init__(self, requests, heads, gen):
        """`requests`: (new tokens, cached context) per request, in plan
        order; `heads`: (Hq, Hkv, D, block size)."""
        self.hq, self.hkv, self.d, self.bs = heads
        self.ql = [n for n, _ in requests]
        self.cl = [c for _, c in requests]
        bs = self.bs
        blocks = [-(-(n + c) // bs) for n, c in requests]
        self.max_blocks = max(blocks)
        total = sum(blocks)
        perm = torch.randperm(total, device="cuda", generator=gen).int()
        table = torch.zeros(len(requests), self.max_blocks, dtype=torch.int32,
                            device="cuda")
        first = 0
        for i, b in enumerate(blocks):
            table[i, :b] = perm[first:first + b]
            first += b
        self.table = table
        shape = (total, bs, self.hkv, self.d)
        rand = lambda *s: torch.randn(*s, device="cuda",  # noqa: E731
                                      generator=gen).bfloat16()
        self.k_cache, self.v_cache = rand(*shape), rand(*shape)
        T = sum(self.ql)
        self.q, self.k, self.v = (rand(T, self.hq, self.d),
                                  rand(T, self.hkv, self.d),
                                  rand(T, self.hkv, self.d))
        self.seq_lens = torch.tensor([n + c for n, c in requests],
                                     dtype=torch.int32, device="cuda")
        slots = []
        for i, (n, c) in enumerate(requests):
            pos = torch.arange(c, c + n, device="cuda")
            slots.append(table[i, pos // bs].long() * bs + pos % bs)
        self.slot_mapping = torch.cat(slots).int()

    def attention(self, bundle, **config):
        return tessel.Attention(bundle, num_q_heads=self.hq,
                                num_kv_heads=self.hkv, head_dim=self.d,
                                block_size=self.bs, **config)

    def buffers(self, out):
        return dict(q=self.q, k=self.k, v=self.v, k_cache=self.k_cache,
                    v_cache=self.v_cache, block_table=self.table,
                    seq_lens=self.seq_lens, out=out)

    def write_cache(self, att):
        """The new tokens' keys and values into their slots (the unified
        mode reads them from the cache)."""
        att.write_cache(self.k, self.v, self.k_cache, self.v_cache,
                        self.slot_mapping)

    def timed_run(self, att, reps):
        """Plans this batch on `att` and times its run: (median ms of
        `reps`, out, plan info)."""
        plan = att.plan(self.ql, self.cl, self.max_blocks)
        out = torch.empty_like(self.q)
        bufs = self.buffers(out)
        return time_ms(lambda: plan.run(**bufs), reps, warmup=3), out, \
            plan.info

    def context_kv_bytes(self):
        """Bytes of cached K and V (before this step) the step reads once."""
        return sum(self.cl) * self.hkv * self.d * 2 * 2
