"""tessel.ops on the GPU: prefill and paged decode at head dim 192 (in no
bundle; decode at 192 is the case that once crashed the compiler), the
2-way LSE merge, MLA decode (128 heads), reshape-and-cache (head dim 192,
padding slots) and the grouped matmul with both gradients, against float64
references; then torch.compile(fullgraph=True) of a prefill block, of a
grouped-matmul step with its backward, of a small attention + MoE layer
and of moe_mlp with its backward, and decode replayed from a CUDA graph,
each against the same computation run eagerly. (conftest.py: how to run
it.)
"""

import pytest
import torch

import tessel.ops
from gpu_checks import assert_close

TOLERANCE = 2e-2  # bf16 outputs, relative to the largest reference value


def prefill_case(device, gen):
    lens = [300, 1, 77]
    T, hq, hkv, d = sum(lens), 8, 2, 192
    q, k, v = (torch.randn(T, h, d, generator=gen, device=device).bfloat16()
               for h in (hq, hkv, hkv))
    cu = torch.tensor([0, 300, 301, 378], dtype=torch.int32, device=device)
    out, lse = tessel.ops.prefill(q, k, v, cu, return_lse=True)
    g = hq // hkv
    refs, start = [], 0
    for n in lens:
        qs = q[start:start + n].double()
        ks = k[start:start + n].double().repeat_interleave(g, 1)
        vs = v[start:start + n].double().repeat_interleave(g, 1)
        s = torch.einsum("qhd,khd->hqk", qs, ks) * d ** -0.5
        mask = torch.ones(n, n, dtype=torch.bool, device=device).triu(1)
        refs.append(torch.einsum("hqk,khd->qhd",
                                 s.masked_fill(mask, -1e300).softmax(-1), vs))
        start += n
    ref = torch.cat(refs)
    return "prefill d192 causal (3 seqs, GQA 4)", out, ref


def decode_case(device, gen):
    B, hq, hkv, d, bs = 4, 16, 2, 192, 16
    lens = [1, 700, 33, 4096]
    blocks = sum((n + bs - 1) // bs for n in lens) + 5
    kc = torch.randn(blocks, bs, hkv, d, generator=gen,
                     device=device).bfloat16()
    vc = torch.randn(blocks, bs, hkv, d, generator=gen,
                     device=device).bfloat16()
    width = max((n + bs - 1) // bs for n in lens)
    perm = torch.randperm(blocks, generator=gen, device=device)
    table = torch.zeros(B, width, dtype=torch.int32, device=device)
    used = 0
    for b, n in enumerate(lens):
        count = (n + bs - 1) // bs
        table[b, :count] = perm[used:used + count].int()
        used += count
    q = torch.randn(B, hq, d, generator=gen, device=device).bfloat16()
    seq_lens = torch.tensor(lens, dtype=torch.int32, device=device)
    out = tessel.ops.decode(q, kc, vc, table, seq_lens)
    refs = []
    for b, n in enumerate(lens):
        pos = torch.arange(n, device=device)
        rows = table[b, pos // bs].long()
        keys = kc[rows, pos % bs].double().repeat_interleave(hq // hkv, 1)
        values = vc[rows, pos % bs].double().repeat_interleave(hq // hkv, 1)
        s = torch.einsum("hd,khd->hk", q[b].double(), keys) * d ** -0.5
        refs.append(torch.einsum("hk,khd->hd", s.softmax(-1), values))
    return "decode d192 paged (GQA 8, up to 4096 tokens)", out, \
        torch.stack(refs)


def merge_case(device, gen):
    T, h, d = 513, 8, 192
    oa, ob = (torch.randn(T, h, d, generator=gen, device=device)
              for _ in range(2))
    la, lb = (torch.randn(h, T, generator=gen, device=device) * 4
              for _ in range(2))
    la[:, 7] = float("-inf")  # partial a saw no keys for token 7
    out = tessel.ops.lse_merge(oa, la, ob, lb)
    wa = torch.sigmoid(la.double() - lb.double()).T[:, :, None]
    return "lse_merge d192 to bf16", out, wa * oa.double() + \
        (1 - wa) * ob.double()


def mla_case(device, gen):
    B, h, bs, lens = 4, 128, 64, [1, 3000, 8192, 77]
    width = max((n + bs - 1) // bs for n in lens)
    blocks = B * width + 3
    rows = torch.randn(blocks, bs, 576, generator=gen,
                       device=device).bfloat16()
    table = torch.randperm(blocks, generator=gen, device=device)[:B * width] \
        .view(B, width).int()
    q = torch.randn(B, h, 576, generator=gen, device=device).bfloat16()
    out, _ = tessel.ops.mla_decode(q, rows, table,
                                   torch.tensor(lens, dtype=torch.int32,
                                                device=device))
    refs = []
    for b, n in enumerate(lens):
        pos = torch.arange(n, device=device)
        kv = rows[table[b, pos // bs].long(), pos % bs].double()
        s = q[b].double() @ kv.T * 576 ** -0.5
        refs.append(s.softmax(-1) @ kv[:, :512])
    return "mla_decode 128 heads (up to 8192 tokens)", out, torch.stack(refs)


def cache_write_case(device, gen):
    T, hkv, d, bs, blocks = 300, 8, 192, 16, 64
    k, v = (torch.randn(T, hkv, d, generator=gen, device=device).bfloat16()
            for _ in range(2))
    kc, vc = (torch.zeros(blocks, bs, hkv, d, device=device).bfloat16()
              for _ in range(2))
    slots = torch.randperm(blocks * bs, generator=gen,
                           device=device)[:T].int()
    slots[::7] = -1  # padding, skipped
    tessel.ops.reshape_and_cache(k, v, kc, vc, slots)
    kept = slots >= 0
    s = slots[kept].long()
    written = torch.cat([kc[s // bs, s % bs], vc[s // bs, s % bs]])
    expected = torch.cat([k[kept], v[kept]]).double()
    # Every other row of the caches stays zero (compared as such).
    for c in (kc, vc):
        c[s // bs, s % bs] = 0
    rest = torch.cat([kc.flatten(), vc.flatten()])
    return "reshape_and_cache head dim 192 (padding slots)", \
        torch.cat([written.flatten(), rest]), \
        torch.cat([expected.flatten(), torch.zeros_like(rest).double()])


def grouped_mm_inputs(device, gen):
    """a [T, K], b [G, N, K] bf16 with requires_grad, int32 ends (an empty
    group, rows past the last end) and a weighting of c for the loss."""
    ends = [100, 100, 357, 600, 611, 900, 1000, 1200]
    a = torch.randn(1234, 128, generator=gen, device=device).bfloat16()
    b = (torch.randn(8, 256, 128, generator=gen, device=device) *
         0.1).bfloat16()
    w = torch.randn(1234, 256, generator=gen, device=device)
    offsets = torch.tensor(ends, dtype=torch.int32, device=device)
    return a.requires_grad_(), b.requires_grad_(), offsets, w


def grouped_mm_case(device, gen):
    """tessel.ops.grouped_mm forward and both gradients against float64
    autograd of the per-group loop."""
    a, b, offsets, w = grouped_mm_inputs(device, gen)
    c = tessel.ops.grouped_mm(a, b, offsets)
    da, db = torch.autograd.grad((c.float() * w).sum(), (a, b))
    a64, b64 = (t.detach().double().requires_grad_() for t in (a, b))
    rows, start = [], 0
    for g, end in enumerate(offsets.tolist()):
        rows.append(a64[start:end] @ b64[g].T)
        start = end
    ref = torch.cat(rows + [a64.new_zeros(a.shape[0] - start, 256)])
    rda, rdb = torch.autograd.grad((ref * w.double()).sum(), (a64, b64))
    return [(f"grouped_mm {name} (G=8, an empty group, a zero tail)", got,
             want) for name, got, want in (("forward", c, ref.detach()),
                                           ("da", da, rda), ("db", db, rdb))]


CASES = [prefill_case, decode_case, merge_case, mla_case, cache_write_case,
         grouped_mm_case]


def compiled_case(device, gen):
    """A small attention block under torch.compile(fullgraph=True): the
    torch.ops.tessel.prefill operator (its fake kernel traced) inside a
    graph of torch ops, against the same block run eagerly. On the host
    (prepare), the eager block only: it fills the cache."""
    lens = [129, 64]
    q, k, v = (torch.randn(193, h, 192, generator=gen,
                           device=device).bfloat16() for h in (8, 2, 2))
    cu = torch.tensor([0, 129, 193], dtype=torch.int32, device=device)
    w = torch.randn(192, 16, generator=gen, device=device)

    def block(q, k, v, cu, w):
        out = tessel.ops.prefill(q * 0.5, k, v, cu)
        return torch.relu(out.float() @ w)

    eager = block(q, k, v, cu, w)
    if device == "cpu":
        return None
    compiled = torch.compile(block, fullgraph=True)(q, k, v, cu, w)
    return (f"torch.compile(fullgraph=True) of prefill in a block "
            f"({len(lens)} seqs)", compiled, eager.double())


def compiled_grouped_mm_case(device, gen):
    """An MoE-like step under torch.compile(fullgraph=True): the
    torch.ops.tessel.grouped_mm operator and its backward operator traced
    with torch ops around them, db against the same step run eagerly."""
    a, b, offsets, w = grouped_mm_inputs(device, gen)

    def step(a, b):
        c = tessel.ops.grouped_mm(torch.nn.functional.silu(a), b, offsets)
        return (c.float() * w).sum()

    eager = torch.autograd.grad(step(a, b), b)[0]
    if device == "cpu":
        return None
    compiled = torch.compile(step, fullgraph=True)
    return ("torch.compile(fullgraph=True) of grouped_mm, forward and "
            "backward", torch.autograd.grad(compiled(a, b), b)[0],
            eager.double())


def compiled_layer_case(device, gen):
    """A small transformer layer of tessel.ops under
    torch.compile(fullgraph=True): causal prefill attention (GQA 4) then a
    top-2 MoE MLP of 4 experts (expert sort, permute, grouped matmuls with
    SiLU between, weighted unpermute), against the same layer run eagerly."""
    T, hq, hkv, d, E, H, I, k = 160, 8, 2, 64, 4, 512, 256, 2
    cu = torch.tensor([0, 100, 160], dtype=torch.int32, device=device)
    wq = torch.randn(H, hq * d, generator=gen, device=device) * H ** -0.5
    wkv = torch.randn(H, 2 * hkv * d, generator=gen, device=device) * \
        H ** -0.5
    router = torch.randn(H, E, generator=gen, device=device)
    w_up = (torch.randn(E, I, H, generator=gen, device=device) *
            H ** -0.5).bfloat16()
    w_down = (torch.randn(E, H, I, generator=gen, device=device) *
              I ** -0.5).bfloat16()
    x = torch.randn(T, H, generator=gen, device=device)

    def layer(x):
        q = (x @ wq).view(T, hq, d).bfloat16()
        k_, v = (x @ wkv).view(T, 2, hkv, d).bfloat16().unbind(1)
        attn = tessel.ops.prefill(q, k_.contiguous(), v.contiguous(), cu)
        h = x + attn.float().reshape(T, H)  # hq * d = H
        weights, ids = torch.topk(torch.softmax(h @ router, -1), k)
        offsets, rows, positions = tessel.ops.expert_sort(ids.int(), E)
        xs = tessel.ops.moe_permute(h.bfloat16(), rows, k)
        up = tessel.ops.grouped_mm(xs, w_up, offsets)
        down = tessel.ops.grouped_mm(torch.nn.functional.silu(up), w_down,
                                     offsets)
        return h + tessel.ops.moe_unpermute(down, positions, weights).float()

    eager = layer(x)
    if device == "cpu":
        return None
    compiled = torch.compile(layer, fullgraph=True)(x)
    return ("torch.compile(fullgraph=True) of an attention + MoE layer",
            compiled, eager.double())


def compiled_moe_mlp_case(device, gen):
    """tessel.ops.moe_mlp forward and backward (an operator pair) under
    torch.compile(fullgraph=True): the output and the gradients of x, the
    routing weights and both weights against the same step run eagerly."""
    T, k, E, H, I = 300, 2, 8, 256, 128
    ids = torch.randint(0, E, (T, k), generator=gen, device=device,
                        dtype=torch.int32)
    ids[7, 1] = -1  # a dropped slot
    dout = torch.randn(T, H, generator=gen, device=device)
    inputs = [torch.randn(T, H, generator=gen, device=device).bfloat16(),
              torch.rand(T, k, generator=gen, device=device),
              (torch.randn(E, 2 * I, H, generator=gen, device=device) *
               H ** -0.5).bfloat16(),
              (torch.randn(E, H, I, generator=gen, device=device) *
               I ** -0.5).bfloat16()]
    inputs = [t.requires_grad_() for t in inputs]

    def step(x, w, gate_up, down):
        out = tessel.ops.moe_mlp(x, ids, w, gate_up, down)
        return out, (out.float() * dout).sum()

    out, loss = step(*inputs)
    eager = [out, *torch.autograd.grad(loss, inputs)]
    if device == "cpu":
        return None
    out, loss = torch.compile(step, fullgraph=True)(*inputs)
    compiled = [out, *torch.autograd.grad(loss, inputs)]
    names = ["out", "dx", "d topk_weights", "d w_gate_up", "d w_down"]
    return [(f"torch.compile(fullgraph=True) of moe_mlp: {name}", got,
             want.double()) for name, got, want in zip(names, compiled, eager)]


def graph_case(device, gen):
    """tessel.ops.decode captured in a CUDA graph, replayed on new queries
    written into the captured input, against an eager call on them."""
    B, hq, hkv, d, bs = 4, 16, 2, 192, 16
    blocks = 300
    kc, vc = (torch.randn(blocks, bs, hkv, d, generator=gen,
                          device=device).bfloat16() for _ in range(2))
    table = torch.randperm(blocks, generator=gen, device=device)[:4 * 64] \
        .view(4, 64).int()
    seq_lens = torch.tensor([1, 1000, 17, 64 * 16], dtype=torch.int32,
                            device=device)
    q = torch.randn(B, hq, d, generator=gen, device=device).bfloat16()
    out = tessel.ops.decode(q, kc, vc, table, seq_lens)  # loads the kernel
    if device == "cpu":
        return None
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = tessel.ops.decode(q, kc, vc, table, seq_lens)
    q.copy_(torch.randn(B, hq, d, generator=gen, device=device).bfloat16())
    graph.replay()
    torch.cuda.synchronize()
    return "CUDA graph replay of decode on new queries", out, \
        tessel.ops.decode(q, kc, vc, table, seq_lens).double()


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
def test_op(case, device, gen):
    result = case(device, gen)
    for title, out, ref in (result if isinstance(result, list) else [result]):
        assert_close(out, ref, TOLERANCE, f"{title} on {device}")


@pytest.mark.parametrize("case", [compiled_case, compiled_grouped_mm_case,
                                  compiled_layer_case, compiled_moe_mlp_case,
                                  graph_case],
                         ids=lambda case: case.__name__)
def test_compiled_and_graphed(case, device, gen):
    """On the host (preparing) only the eager half runs: it fills the
    cache."""
    result = case(device, gen)
    for title, out, ref in (result if isinstance(result, list) else
                            [result] if result else []):
        assert_close(out, ref, TOLERANCE, title)
