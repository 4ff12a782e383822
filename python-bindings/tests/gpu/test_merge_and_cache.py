"""tessel.ops.lse_merge, lse_merge_n and reshape_and_cache against float64
torch: the cases of bench/attention_check.py that tessel.ops can run.

  * lse_merge: T in {0, 1, 7, 16384} (513 on the host backend; 0 is the
    script's empty launch through the runtime);
    LSEs of -inf and +inf (empty partials, whose outputs hold NaN: none may
    leak), rows where both partials are empty (out == o_a exactly), widely
    apart LSEs (one weight underflows in f32).
  * lse_merge_n: (P, T) in {(1, 7), (2, 1000), (5, 333), (33, 77)}, empty
    partials holding NaN, rows where every partial is empty (out == 0).
  * Both with f32 partials at the script's heads x head dims, 32 x 128,
    8 x 64 and 16 x 512, with its bf16 and f32 outputs, and f16 out at
    32 x 128 (no kernel of the script writes f16; the N-way merge also
    runs at 8 x 64 and with f32 out here).
  * reshape_and_cache (NHD): T in {1, 7, 700}, slots in random order with
    padding (-1) and slots past the cache; written slots must equal the
    input bit for bit, every other cache element keeps its NaN poison.

Tolerances: max |out - ref| / max(1, |ref|) at most 1e-2 for 16-bit out,
1e-4 for f32 out.

Not ported (tessel.ops has no entry point for them): bf16 partials
(merge_bf16_*, merge_n_bf16_*: tessel.ops merges f32 partials; those
shapes run here with f32 partials); the merged LSE (lse_out) and the
merge in place (out = o_a, lse_out = lse_a); the shuffled cache layout
(rc_shuffled_*) and distinct K and V head dims (rc_nhd_f16_h4_d192_128:
tessel.ops.reshape_and_cache takes NHD caches and k, v of one shape; here
f16 4 x 192 at block size 32 with v of 192 too, and f32 2 x 64 at block
size 16 in NHD); the launches through the driver API beside the runtime's
(tessel.ops launches through the runtime only).
"""

import math

import pytest
import torch

import tessel.ops

INF = math.inf
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
# (heads, head dim, out dtype) of the merges
MERGES = [(32, 128, "bf16"), (8, 64, "f32"), (16, 512, "bf16"),
          (32, 128, "f16")]
# name: (T on the GPU, T on the host)
MERGE_TOKENS = {"T0": (0, 0), "T1": (1, 1), "T7": (7, 7),
                "T16384": (16384, 513)}
MERGE_N_SHAPES = [(1, 7), (2, 1000), (5, 333), (33, 77)]  # (P, T)
# (dtype, KV heads, head dim, block size) of reshape_and_cache
CACHES = [("bf16", 8, 128, 16), ("f16", 4, 192, 32), ("f32", 2, 64, 16)]


def merge_id(merge):
    h, d, out = merge
    return f"h{h}_d{d}_{out}"


def merged(parts, lses):
    """The float64 merge of partials [P, T, H, D] with LSEs [P, H, T] (+inf
    is empty, as -inf is), and the [T, H] mask of rows where every partial
    is empty (the merge is NaN there: each op has its own rule)."""
    lses = lses.double().masked_fill(lses == INF, -INF)
    top = lses.amax(0)
    empty = top == -INF
    w = torch.exp(lses - top.masked_fill(empty, 0.0)).transpose(1, 2)
    w = w[..., None]  # [P, T, H, 1]
    # An empty partial's output (NaN) is dropped, not multiplied by 0.
    total = (parts.double() * w).masked_fill(w == 0, 0.0).sum(0)
    return total / w.sum(0), empty.T


def assert_merge_close(out, ref, what):
    """The script's bound: max |out - ref| / max(1, |ref|), no NaN."""
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)}"
    assert not bool(torch.isnan(out).any()), f"{what}: NaN in out"
    if out.numel():
        err = ((out.double() - ref).abs() / ref.abs().clamp(min=1.0)).max()
        bound = 1e-4 if out.dtype == torch.float32 else 1e-2
        assert err.item() <= bound, f"{what}: error {err:.2e} > {bound}"


def make_empty(lse, out, flat, value):
    """Partial (out [T, H, D], lse [H, T]) empty at the flat (h, t) indices
    of lse: LSE `value` (-inf or +inf), NaN outputs."""
    T = lse.shape[1]
    lse.view(-1)[flat] = value
    out[flat % T, flat // T] = math.nan


@pytest.mark.parametrize("tokens", MERGE_TOKENS)
@pytest.mark.parametrize("merge", MERGES, ids=merge_id)
def test_lse_merge(merge, tokens, device, on_gpu, gen):
    h, d, out_dtype = merge
    T = MERGE_TOKENS[tokens][0 if on_gpu else 1]
    oa, ob = (torch.randn(T, h, d, generator=gen, device=device)
              for _ in range(2))
    la, lb = (torch.randn(h, T, generator=gen, device=device) * 3
              for _ in range(2))
    # Disjoint sets of (h, t) rows, each a tenth (at least one).
    perm = torch.randperm(h * T, generator=gen, device=device)
    k = max(1, h * T // 10)
    far, a_neg, b_pos, a_pos, b_neg, both = (perm[i * k:(i + 1) * k]
                                             for i in range(6))
    la.view(-1)[far] = 90.0
    lb.view(-1)[far] = -90.0
    make_empty(la, oa, a_neg, -INF)
    make_empty(lb, ob, b_pos, INF)
    make_empty(la, oa, a_pos, INF)
    make_empty(lb, ob, b_neg, -INF)
    # Both empty: o_a (finite) is the output there.
    la.view(-1)[both] = -INF
    make_empty(lb, ob, both, INF)
    ref, none = merged(torch.stack([oa, ob]), torch.stack([la, lb]))
    ref = torch.where(none[..., None], oa.double(), ref)

    out = tessel.ops.lse_merge(oa, la, ob, lb, out_dtype=DTYPES[out_dtype])
    what = f"lse_merge {merge_id(merge)} T={T}"
    assert_merge_close(out, ref, what)
    assert torch.equal(out[none], oa[none].to(out.dtype)), \
        f"{what}: rows with both partials empty are not o_a"


@pytest.mark.parametrize("shape", MERGE_N_SHAPES,
                         ids=lambda s: f"P{s[0]}_T{s[1]}")
@pytest.mark.parametrize("merge", MERGES, ids=merge_id)
def test_lse_merge_n(merge, shape, device, gen):
    h, d, out_dtype = merge
    P, T = shape
    parts = torch.randn(P, T, h, d, generator=gen, device=device)
    lses = torch.randn(P, h, T, generator=gen, device=device) * 3
    # About a fifth of the partials empty, half of them at +inf.
    empty = torch.rand(P, h, T, generator=gen, device=device) < 0.2
    negative = torch.rand(P, h, T, generator=gen, device=device) < 0.5
    lses[empty] = torch.where(negative, -INF, INF)[empty]
    parts.permute(0, 2, 1, 3)[empty] = math.nan
    # Rows where every partial is empty.
    rows = torch.randperm(h * T, generator=gen, device=device)
    rows = rows[:max(1, h * T // 20)]
    lses[:, rows // T, rows % T] = -INF
    parts[:, rows % T, rows // T] = math.nan
    ref, none = merged(parts, lses)
    ref = ref.masked_fill(none[..., None], 0.0)

    out = tessel.ops.lse_merge_n(parts, lses, out_dtype=DTYPES[out_dtype])
    assert_merge_close(out, ref, f"lse_merge_n {merge_id(merge)} P={P} "
                                 f"T={T}")


def bits(t):
    """The tensor's bits, for exact comparison (NaN poison included)."""
    return t.view({2: torch.int16, 4: torch.int32}[t.element_size()])


@pytest.mark.parametrize("T", [1, 7, 700], ids=lambda T: f"T{T}")
@pytest.mark.parametrize("caches", CACHES,
                         ids=lambda c: f"{c[0]}_kv{c[1]}_d{c[2]}_bs{c[3]}")
def test_reshape_and_cache(caches, T, device, gen):
    dtype, hkv, d, bs = caches
    dtype, blocks = DTYPES[dtype], 64
    slots_in_cache = blocks * bs
    k, v = (torch.randn(T, hkv, d, generator=gen, device=device).to(dtype)
            for _ in range(2))
    slots = torch.randperm(slots_in_cache, generator=gen,
                           device=device)[:T].int()
    if T > 1:  # padding, and slots past the cache: both skipped
        slots[0] = -1
        skipped = [-1, slots_in_cache, slots_in_cache + 5, 2 ** 31 - 1, -7]
        for i, slot in enumerate(skipped[:T - 1]):
            slots[1 + i * (T - 1) // len(skipped)] = slot
    k_cache, v_cache = (torch.full((blocks, bs, hkv, d), math.nan,
                                   dtype=dtype, device=device)
                        for _ in range(2))
    kept = (slots >= 0) & (slots < slots_in_cache)
    s = slots[kept].long()
    ref_k, ref_v = k_cache.clone(), v_cache.clone()
    ref_k[s // bs, s % bs] = k[kept]
    ref_v[s // bs, s % bs] = v[kept]

    tessel.ops.reshape_and_cache(k, v, k_cache, v_cache, slots)
    what = f"reshape_and_cache {caches} T={T} ({int(kept.sum())} written)"
    assert torch.equal(bits(k_cache), bits(ref_k)), f"{what}: k_cache"
    assert torch.equal(bits(v_cache), bits(ref_v)), f"{what}: v_cache"
