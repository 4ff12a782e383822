"""A mixed attention batch for the dispatcher (tessel.Attention) and its
float64 reference: causal attention of each new token over its request's
cached context and the new tokens up to itself. Used by test_attention.py
(host)."""

import math

import torch


class Step:
    """A batch in the caller's order, ordered by the dispatcher: bf16 NHD
    caches with every request's context, new tokens' q/k/v, block table and
    slots, on `device`; hq/hkv/d/bs: the heads, head dim and block size."""

    def __init__(self, att, requests, gen, hq, hkv, d, bs, device="cpu"):
        self.hq, self.hkv, self.d, self.bs = hq, hkv, d, bs
        HQ, HKV, D, BS = hq, hkv, d, bs  # the shapes below read as the math
        ql = [q for q, _ in requests]
        cl = [c for _, c in requests]
        order = att.order(ql, cl)
        self.ql = [ql[i] for i in order]
        self.cl = [cl[i] for i in order]
        blocks = [math.ceil((q + c) / BS) for q, c in zip(self.ql, self.cl)]
        self.max_blocks = max(blocks) + 1
        num_blocks = sum(blocks) + 3
        ids = torch.randperm(num_blocks, generator=gen).tolist()
        self.table = torch.randint(0, num_blocks, (len(self.ql),
                                                   self.max_blocks),
                                   generator=gen, dtype=torch.int32)
        for b, n in enumerate(blocks):
            self.table[b, :n] = torch.tensor(ids[:n], dtype=torch.int32)
            ids = ids[n:]
        shape = (num_blocks, BS, HKV, D)
        self.k_cache = torch.randn(*shape, generator=gen).bfloat16()
        self.v_cache = torch.randn(*shape, generator=gen).bfloat16()
        T = sum(self.ql)
        self.q = torch.randn(T, HQ, D, generator=gen).bfloat16()
        self.k = torch.randn(T, HKV, D, generator=gen).bfloat16()
        self.v = torch.randn(T, HKV, D, generator=gen).bfloat16()
        slots = []
        for b, (q, c) in enumerate(zip(self.ql, self.cl)):
            pos = torch.arange(c, c + q)
            slots.append(self.table[b, pos // BS].long() * BS + pos % BS)
        self.slots = torch.cat(slots).int()
        self.seq_lens = torch.tensor([q + c for q, c in
                                      zip(self.ql, self.cl)],
                                     dtype=torch.int32)
        self.out = torch.full((T, HQ, D), float("nan")).bfloat16()
        self.to(device)

    def buffers(self):
        return dict(q=self.q, k=self.k, v=self.v, k_cache=self.k_cache,
                    v_cache=self.v_cache, block_table=self.table,
                    seq_lens=self.seq_lens, slot_mapping=self.slots,
                    out=self.out)

    def to(self, device):
        for name in ("table", "k_cache", "v_cache", "q", "k", "v", "slots",
                     "seq_lens", "out"):
            setattr(self, name, getattr(self, name).to(device))
        return self

    def reference(self, scale=None):
        """float64 attention of each new token over its request's cached
        tokens and the new ones up to itself (read from the caches, which
        the run has written), one request at a time on the tensors'
        device; softmax scale 1/sqrt(d) unless given."""
        if scale is None:
            scale = self.d ** -0.5
        g, bs = self.hq // self.hkv, self.bs
        out, t = [], 0
        for b, (q, c) in enumerate(zip(self.ql, self.cl)):
            pos = torch.arange(c + q, device=self.q.device)
            rows = self.table[b, pos // bs].long()
            keys = self.k_cache[rows, pos % bs].double()    # [n, HKV, D]
            values = self.v_cache[rows, pos % bs].double()
            # [HKV, G, q, D]: the G query heads of each KV head.
            qs = self.q[t:t + q].double().reshape(q, self.hkv, g, self.d)
            scores = torch.einsum("qhgd,nhd->hgqn", qs, keys) * scale
            causal = pos[None, :] > (c + torch.arange(q, device=pos.device)
                                     )[:, None]
            scores.masked_fill_(causal, float("-inf"))
            o = torch.einsum("hgqn,nhd->qhgd", scores.softmax(-1), values)
            out.append(o.reshape(q, self.hq, self.d))
            t += q
        return torch.cat(out)

    def cache_written(self) -> bool:
        """Whether the new tokens' keys and values are in their slots."""
        slots = self.slots.long()
        return bool(torch.equal(self.k_cache[slots // self.bs,
                                             slots % self.bs], self.k)
                    and torch.equal(self.v_cache[slots // self.bs,
                                                 slots % self.bs], self.v))

    def error(self, scale=None) -> float:
        """The output's largest error, relative to the largest reference
        value (of softmax scale `scale`, default 1/sqrt(d))."""
        ref = self.reference(scale)
        return ((self.out.double() - ref).abs().max() /
                ref.abs().max()).item()
