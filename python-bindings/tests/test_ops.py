"""tessel.ops on the host backend: head sizes no bundle has, compiled on
miss into a kernel cache (tessel.cache), against float64 references; the
cache reused without a compiler; the error where there is neither."""

import pytest
import torch

import tessel
import tessel.ops
import tessel.specs


def rel(actual, expected):
    return ((actual.double() - expected).abs().max() /
            expected.abs().max()).item()


def causal_reference(q, k, v, lens, scale):
    """float64 causal attention of each sequence, and its LSE [Hq, T]."""
    g = q.shape[1] // k.shape[1]
    outs, lses, start = [], [], 0
    for n in lens:
        qs = q[start:start + n].double()
        ks = k[start:start + n].double().repeat_interleave(g, 1)
        vs = v[start:start + n].double().repeat_interleave(g, 1)
        s = torch.einsum("qhd,khd->hqk", qs, ks) * scale
        s.masked_fill_(torch.ones(n, n, dtype=torch.bool).triu(1), -1e300)
        outs.append(torch.einsum("hqk,khd->qhd", s.softmax(-1), vs))
        lses.append(torch.logsumexp(s, -1))
        start += n
    return torch.cat(outs), torch.cat(lses, 1)


def prefill_case(seed, lens=(5, 1, 17), hq=6, hkv=2, d=48, dv=32):
    gen = torch.Generator().manual_seed(seed)
    T = sum(lens)
    q = torch.randn(T, hq, d, generator=gen).bfloat16()
    k = torch.randn(T, hkv, d, generator=gen).bfloat16()
    v = torch.randn(T, hkv, dv, generator=gen).bfloat16()
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)),
                      dtype=torch.int32)
    return q, k, v, cu, lens


def test_new_head_size_compiles_on_miss_and_is_cached(tmp_path):
    cache = tessel.KernelCache(tmp_path)
    q, k, v, cu, lens = prefill_case(1)
    out, lse = tessel.ops.prefill(q, k, v, cu, return_lse=True,
                                  softmax_scale=0.2, cache=cache)
    ref, ref_lse = causal_reference(q, k, v, lens, 0.2)
    assert out.dtype == torch.bfloat16 and out.shape == (23, 6, 32)
    assert rel(out, ref) < 2e-2
    assert (lse.double() - ref_lse).abs().max() < 1e-3
    assert len(list(tmp_path.glob("host-*.tsb"))) == 1
    assert len(list(tmp_path.glob("host-*.mlir"))) == 1
    # The default scale is 1/sqrt(D), in the same kernel.
    out = tessel.ops.prefill(q, k, v, cu, cache=cache)
    assert rel(out, causal_reference(q, k, v, lens, 48 ** -0.5)[0]) < 2e-2
    assert len(list(tmp_path.glob("host-*.tsb"))) == 2  # no lse: another


def test_cached_bundle_is_used_without_a_compiler(tmp_path, monkeypatch):
    q, k, v, cu, lens = prefill_case(2)
    tessel.ops.prefill(q, k, v, cu, cache=tessel.KernelCache(tmp_path))
    monkeypatch.setenv("TESSEL_AOT", str(tmp_path / "no-compiler"))
    out = tessel.ops.prefill(q, k, v, cu, cache=tessel.KernelCache(tmp_path))
    assert rel(out, causal_reference(q, k, v, lens, 48 ** -0.5)[0]) < 2e-2


def test_no_compiler_and_no_cached_bundle_names_the_spec(tmp_path,
                                                         monkeypatch):
    monkeypatch.setenv("TESSEL_AOT", str(tmp_path / "no-compiler"))
    q, k, v, cu, _ = prefill_case(3, d=80, dv=80)
    with pytest.raises(tessel.Error) as e:
        tessel.ops.prefill(q, k, v, cu, cache=tessel.KernelCache(tmp_path))
    assert e.value.code == tessel.StatusCode.NOT_FOUND
    message = str(e.value)
    assert message.startswith("tessel: kernel 'prefill_bf16_q6_kv2_d80_v80_"
                              "causal' for host is in no bundle and there is "
                              "no tessel-aot here to compile it")
    assert "func.func @prefill_bf16_q6_kv2_d80_v80_causal(" in message


def test_decode_with_a_new_head_size(tmp_path):
    gen = torch.Generator().manual_seed(4)
    B, hq, hkv, d, bs = 3, 8, 2, 80, 16
    lens = [1, 37, 16]
    blocks = 10
    kc = torch.randn(blocks, bs, hkv, d, generator=gen).bfloat16()
    vc = torch.randn(blocks, bs, hkv, d, generator=gen).bfloat16()
    table = torch.randperm(blocks, generator=gen)[:9].view(3, 3).int()
    q = torch.randn(B, hq, d, generator=gen).bfloat16()
    out = tessel.ops.decode(q, kc, vc, table, torch.tensor(lens).int(),
                            cache=tessel.KernelCache(tmp_path))
    for b, n in enumerate(lens):
        pos = torch.arange(n)
        rows = table[b, pos // bs].long()
        keys = kc[rows, pos % bs].double().repeat_interleave(hq // hkv, 1)
        values = vc[rows, pos % bs].double().repeat_interleave(hq // hkv, 1)
        s = torch.einsum("hd,khd->hk", q[b].double(), keys) * d ** -0.5
        ref = torch.einsum("hk,khd->hd", s.softmax(-1), values)
        assert rel(out[b], ref) < 2e-2, b


def test_lse_merge(tmp_path):
    gen = torch.Generator().manual_seed(5)
    T, h, d = 7, 3, 32
    oa, ob = torch.randn(T, h, d, generator=gen), torch.randn(T, h, d,
                                                               generator=gen)
    la, lb = torch.randn(h, T, generator=gen), torch.randn(h, T, generator=gen)
    la[0, 2] = float("-inf")  # partial a saw no keys for this row
    out = tessel.ops.lse_merge(oa, la, ob, lb, out_dtype=torch.float32,
                               cache=tessel.KernelCache(tmp_path))
    wa = torch.sigmoid(la.double() - lb.double()).T[:, :, None]
    ref = wa * oa.double() + (1 - wa) * ob.double()
    assert out.dtype == torch.float32
    assert rel(out, ref) < 1e-5


def test_lse_merge_n(tmp_path):
    gen = torch.Generator().manual_seed(6)
    S, T, h, d = 3, 5, 2, 16
    parts = torch.randn(S, T, h, d, generator=gen)
    lse = torch.randn(S, h, T, generator=gen)
    lse[1, 0, 3] = float("-inf")  # partial 1 saw no keys for this row
    out = tessel.ops.lse_merge_n(parts, lse, out_dtype=torch.float32,
                                 cache=tessel.KernelCache(tmp_path))
    w = lse.double().softmax(0).permute(0, 2, 1)[..., None]  # [S, T, H, 1]
    ref = (w * parts.double()).sum(0)
    assert out.shape == (T, h, d) and out.dtype == torch.float32
    assert rel(out, ref) < 1e-5


def test_lse_merge_n_refuses_disagreeing_shapes(tmp_path):
    with pytest.raises(ValueError, match=r"partials \[S, T, H, D\] and "
                       r"partial_lse \[S, H, T\] must agree"):
        tessel.ops.lse_merge_n(torch.zeros(3, 5, 2, 16), torch.zeros(2, 2, 5),
                               cache=tessel.KernelCache(tmp_path))


def unified_case(seed, requests, hq=4, hkv=2, d=32, bs=16):
    """Caches holding every request's whole sequence, in scattered blocks;
    requests are (new tokens, cached before)."""
    gen = torch.Generator().manual_seed(seed)
    blocks = [-(-(n + c) // bs) for n, c in requests]
    ids = torch.randperm(sum(blocks) + 2, generator=gen)
    table = torch.zeros(len(requests), max(blocks), dtype=torch.int32)
    first = 0
    for b, n in enumerate(blocks):
        table[b, :n] = ids[first:first + n]
        first += n
    kc = torch.randn(sum(blocks) + 2, bs, hkv, d, generator=gen).bfloat16()
    vc = torch.randn(sum(blocks) + 2, bs, hkv, d, generator=gen).bfloat16()
    q = torch.randn(sum(n for n, _ in requests), hq, d,
                    generator=gen).bfloat16()
    seq = torch.tensor([n + c for n, c in requests], dtype=torch.int32)
    cu = torch.tensor([0] + list(torch.tensor([n for n, _ in requests])
                                 .cumsum(0)), dtype=torch.int32)
    return q, kc, vc, table, seq, cu


def test_unified_runs_a_mixed_batch(tmp_path):
    # A decode, an extend, a prefill, an empty request, a decode at 0.
    requests = [(1, 40), (7, 21), (9, 0), (0, 5), (1, 0)]
    q, kc, vc, table, seq, cu = unified_case(7, requests)
    out = tessel.ops.unified(q, kc, vc, table, seq, cu,
                             cache=tessel.KernelCache(tmp_path))
    bs, g = kc.shape[1], q.shape[1] // kc.shape[2]
    for b, (n, c) in enumerate(requests):
        if n == 0:
            continue
        pos = torch.arange(n + c)
        rows = table[b, pos // bs].long()
        keys = kc[rows, pos % bs].double().repeat_interleave(g, 1)
        values = vc[rows, pos % bs].double().repeat_interleave(g, 1)
        qs = q[cu[b]:cu[b + 1]].double()
        s = torch.einsum("qhd,khd->hqk", qs, keys) * q.shape[2] ** -0.5
        # Query j sits at position c + j: keys past it are masked.
        s.masked_fill_(pos[None, :] > (c + torch.arange(n))[:, None],
                       float("-inf"))
        ref = torch.einsum("hqk,khd->qhd", s.softmax(-1), values)
        assert rel(out[cu[b]:cu[b + 1]], ref) < 2e-2, b


def test_unified_refuses_a_short_cu_seqlens(tmp_path):
    q, kc, vc, table, seq, cu = unified_case(8, [(1, 4), (2, 3)])
    with pytest.raises(ValueError, match=r"seq_lens \[B\] and cu_seqlens "
                       r"\[B \+ 1\] must agree, got \[2, 1\], \[2\] and "
                       r"\[2\]"):
        tessel.ops.unified(q, kc, vc, table, seq, cu[:2],
                           cache=tessel.KernelCache(tmp_path))


def test_moe_glue_round_trip(tmp_path):
    """Sort rows by expert (ids 5 and -1 dropped), gather the tokens in that
    order, and combine them back with the routing weights."""
    gen = torch.Generator().manual_seed(9)
    T, k, E, H = 9, 2, 4, 24
    ids = torch.randint(0, E, (T, k), generator=gen, dtype=torch.int32)
    ids[2, 1], ids[6, 0] = 5, -1
    cache = tessel.KernelCache(tmp_path)
    offsets, sorted_rows, positions = tessel.ops.expert_sort(ids, E,
                                                             cache=cache)
    flat = ids.flatten().long()
    kept = [r for r in range(T * k) if 0 <= flat[r] < E]
    order = sorted(kept, key=lambda r: (flat[r].item(), r))  # stable
    assert sorted_rows.tolist() == order + [-1] * (T * k - len(order))
    counts = torch.bincount(flat[kept], minlength=E)
    assert offsets.tolist() == counts.cumsum(0).tolist()
    for p, r in enumerate(order):
        assert positions.flatten()[r] == p
    assert positions[2, 1] == -1 and positions[6, 0] == -1

    x = torch.randn(T, H, generator=gen)
    xs = tessel.ops.moe_permute(x, sorted_rows, k, cache=cache)
    assert torch.equal(xs[:len(order)], x[torch.tensor(order) // k])
    assert not xs[len(order):].any()
    w = torch.rand(T, k, generator=gen)
    y = tessel.ops.moe_unpermute(xs * 2, positions, w, cache=cache)
    ref = torch.zeros(T, H, dtype=torch.float64)
    for t in range(T):
        for j in range(k):
            if positions[t, j] >= 0:
                ref[t] += w[t, j].double() * 2 * x[t].double()
    assert rel(y, ref) < 1e-6


def test_moe_mlp_forward_and_gradients(tmp_path):
    """tessel.ops.moe_mlp and its gradients in x, the routing weights and
    both weights against float64 autograd of the per-expert loop (a
    dropped slot, an expert with no rows)."""
    from moe_reference import routed_experts_loop
    gen = torch.Generator().manual_seed(4)
    T, k, E, H, I = 11, 2, 4, 64, 32
    ids = torch.randint(0, E - 1, (T, k), generator=gen, dtype=torch.int32)
    ids[3, 1] = -1
    w = torch.rand(T, k, generator=gen).requires_grad_()
    x = torch.randn(T, H, generator=gen).requires_grad_()
    gate_up = (torch.randn(E, 2 * I, H, generator=gen) * 0.2).requires_grad_()
    down = (torch.randn(E, H, I, generator=gen) * 0.2).requires_grad_()
    dout = torch.randn(T, H, generator=gen)
    out = tessel.ops.moe_mlp(x, ids, w, gate_up, down,
                             cache=tessel.KernelCache(tmp_path))
    grads = torch.autograd.grad((out * dout).sum(), (x, w, gate_up, down))
    inputs64 = [t.detach().double().requires_grad_()
                for t in (x, w, gate_up, down)]
    x64, w64, gate_up64, down64 = inputs64
    ref = routed_experts_loop(x64, ids, w64, gate_up64, down64)
    refs = torch.autograd.grad((ref * dout.double()).sum(), inputs64)
    assert rel(out, ref) < 1e-5
    for got, want in zip(grads, refs):
        assert rel(got, want) < 1e-5


def test_moe_mlp_argument_errors(tmp_path):
    x, ids, w = torch.zeros(4, 64), torch.zeros(4, 2, dtype=torch.int32), \
        torch.zeros(4, 2)
    with pytest.raises(ValueError, match="w_down"):
        tessel.ops.moe_mlp(x, ids, w, torch.zeros(3, 64, 64),
                           torch.zeros(3, 64, 16),
                           cache=tessel.KernelCache(tmp_path))


def test_moe_glue_argument_errors(tmp_path):
    cache = tessel.KernelCache(tmp_path)
    with pytest.raises(TypeError, match="'topk_ids' must be torch.int32"):
        tessel.ops.expert_sort(torch.zeros(3, 2, dtype=torch.int64), 4,
                               cache=cache)
    with pytest.raises(ValueError, match="num_experts must be positive"):
        tessel.ops.expert_sort(torch.zeros(3, 2, dtype=torch.int32), 0,
                               cache=cache)
    with pytest.raises(ValueError, match="'sorted_rows' is on meta but 'x' "
                       "is on cpu"):
        tessel.ops.moe_permute(torch.zeros(3, 8),
                               torch.zeros(6, dtype=torch.int32,
                                           device="meta"), 2, cache=cache)
    with pytest.raises(ValueError, match=r"row_positions and weights must "
                       r"both be \[T, k\], got \[3, 2\] and \[3, 1\]"):
        tessel.ops.moe_unpermute(torch.zeros(6, 8),
                                 torch.zeros(3, 2, dtype=torch.int32),
                                 torch.zeros(3, 1), cache=cache)


@pytest.mark.parametrize("change,error,message", [
    (dict(q=torch.zeros(4, 6)), ValueError,
     r"'q' must be \[T, Hq, D\] \(3-D\), got shape \[4, 6\]"),
    (dict(k=torch.zeros(23, 2, 48, dtype=torch.float16)), TypeError,
     "'k' is torch.float16 but 'q' is torch.bfloat16"),
    (dict(cu_seqlens=torch.zeros(4, dtype=torch.int64)), TypeError,
     "'cu_seqlens' must be torch.int32, got torch.int64"),
    (dict(v=torch.zeros(23, 3, 32, dtype=torch.bfloat16)), ValueError,
     r"q \[23, 6, 48\], k \[23, 2, 48\] and v \[23, 3, 32\] must be "
     r"\[T, Hq, D\], \[T, Hkv, D\] and \[T, Hkv, Dv\]"),
])
def test_bad_prefill_inputs(tmp_path, change, error, message):
    q, k, v, cu, _ = prefill_case(6)
    args = dict(q=q, k=k, v=v, cu_seqlens=cu)
    args.update(change)
    with pytest.raises(error, match="tessel.ops.prefill: " + message):
        tessel.ops.prefill(**args, cache=tessel.KernelCache(tmp_path))


def test_unsupported_head_size_is_the_compilers_error(tmp_path):
    q, k, v, cu, _ = prefill_case(7, d=40, dv=40)
    with pytest.raises(tessel.CompileError, match="supported head dims are "
                                                  "multiples of 16"):
        tessel.ops.prefill(q, k, v, cu, cache=tessel.KernelCache(tmp_path))


def test_prepare_fills_the_cache_for_a_machine_without_compiler(
        tmp_path, monkeypatch, host):
    spec = tessel.specs.lse_merge("merge_h2_d16", 2, 16, out_dtype="f32")
    path = tessel.KernelCache(tmp_path).prepare(spec, "host")
    assert path.is_file() and path.name.startswith("host-")
    monkeypatch.setenv("TESSEL_AOT", str(tmp_path / "no-compiler"))
    kernel = tessel.KernelCache(tmp_path).kernel(host, "merge_h2_d16", spec)
    assert kernel.op == "tessel.lse_merge"
    with pytest.raises(FileNotFoundError, match="needs tessel-aot"):
        tessel.KernelCache(tmp_path).prepare(spec, "sm80")


def test_mla_decode(tmp_path):
    """Absorbed MLA: scores over all 576 columns, values the first 512."""
    gen = torch.Generator().manual_seed(9)
    B, h, bs, lens = 3, 16, 16, [1, 40, 17]
    cache_rows = torch.randn(10, bs, 576, generator=gen).bfloat16()
    table = torch.randperm(10, generator=gen)[:9].view(3, 3).int()
    q = torch.randn(B, h, 576, generator=gen).bfloat16()
    out, lse = tessel.ops.mla_decode(q, cache_rows, table,
                                     torch.tensor(lens).int(),
                                     softmax_scale=0.05,
                                     cache=tessel.KernelCache(tmp_path))
    assert out.shape == (B, h, 512) and lse.shape == (h, B)
    for b, n in enumerate(lens):
        pos = torch.arange(n)
        rows = cache_rows[table[b, pos // bs].long(), pos % bs].double()
        s = q[b].double() @ rows.T * 0.05
        assert rel(out[b], s.softmax(-1) @ rows[:, :512]) < 2e-2, b
        assert (lse[:, b].double() - torch.logsumexp(s, -1)).abs().max() \
            < 1e-3


def test_reshape_and_cache_writes_in_place(tmp_path):
    gen = torch.Generator().manual_seed(10)
    k, v = (torch.randn(5, 2, 64, generator=gen).bfloat16()
            for _ in range(2))
    k_cache, v_cache = (torch.randn(4, 16, 2, 64, generator=gen).bfloat16()
                        for _ in range(2))
    before = k_cache.clone()
    slots = torch.tensor([0, 17, -1, 63, 40], dtype=torch.int32)
    tessel.ops.reshape_and_cache(k, v, k_cache, v_cache, slots,
                                 cache=tessel.KernelCache(tmp_path))
    for t, slot in enumerate(slots.tolist()):
        if slot >= 0:
            assert torch.equal(k_cache[slot // 16, slot % 16], k[t])
            assert torch.equal(v_cache[slot // 16, slot % 16], v[t])
            before[slot // 16, slot % 16] = k[t]
    assert torch.equal(k_cache, before)  # the padding slot wrote nothing
    with pytest.raises(ValueError, match="tessel.ops.reshape_and_cache: k, "
                                         "v .* and the caches .* must "
                                         "agree"):
        tessel.ops.reshape_and_cache(k, v, k_cache[:, :, :1], v_cache, slots,
                                     cache=tessel.KernelCache(tmp_path))


@pytest.mark.parametrize("trans_b", [True, False])
def test_grouped_mm_forward_and_gradients(tmp_path, trans_b):
    """A shape no bundle has (G=3, N=20, K=12, an empty group, rows past
    the last end): c, da and db against float64 autograd of the loop."""
    gen = torch.Generator().manual_seed(11)
    ends = [4, 4, 9]
    T = 11
    a = torch.randn(T, 12, generator=gen)
    b = torch.randn(*((3, 20, 12) if trans_b else (3, 12, 20)),
                    generator=gen) * 0.3
    w = torch.randn(T, 20, generator=gen)
    a1, b1 = a.clone().requires_grad_(), b.clone().requires_grad_()
    c = tessel.ops.grouped_mm(a1, b1, torch.tensor(ends, dtype=torch.int32),
                              trans_b=trans_b,
                              cache=tessel.KernelCache(tmp_path))
    (c * w).sum().backward()
    a2, b2 = a.double().requires_grad_(), b.double().requires_grad_()
    rows, start = [], 0
    for g, end in enumerate(ends):
        rows.append(a2[start:end] @ (b2[g].T if trans_b else b2[g]))
        start = end
    ref = torch.cat(rows + [a2.new_zeros(T - start, 20)])
    (ref * w.double()).sum().backward()
    assert c.shape == (T, 20) and not c[ends[-1]:].any()
    for got, want in ((c.detach(), ref.detach()), (a1.grad, a2.grad),
                      (b1.grad, b2.grad)):
        assert rel(got, want) < 1e-5


@pytest.mark.parametrize("change, error, message", [
    ("offsets_i64", TypeError, "'group_offsets' must be int32"),
    ("b_rank", ValueError, "'b' must be a 3-D torch tensor"),
    ("b_dtype", TypeError, "'a' is torch.float32 but 'b' is torch.float64"),
])
def test_grouped_mm_argument_errors(tmp_path, change, error, message):
    a, b = torch.zeros(4, 8), torch.zeros(2, 16, 8)
    offsets = torch.tensor([1, 4], dtype=torch.int32)
    if change == "offsets_i64":
        offsets = offsets.long()
    elif change == "b_rank":
        b = b[0]
    else:
        b = b.double()
    with pytest.raises(error, match="tessel.ops.grouped_mm: " + message):
        tessel.ops.grouped_mm(a, b, offsets,
                              cache=tessel.KernelCache(tmp_path))
