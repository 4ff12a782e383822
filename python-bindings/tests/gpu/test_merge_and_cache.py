"""LSE merges and the cache write against float64 torch: through tessel.ops,
and the kernels themselves (from tessel.specs and the default kernel
cache, every output poisoned with NaN).

  * LSE merge of two partials: T in {0, 1, 7, 16384} (513 on the host
    backend); LSEs of -inf and +inf (empty partials, whose outputs hold
    NaN: none may leak), rows where both partials are empty (out == o_a
    exactly, the merged LSE -inf), widely apart LSEs (one weight
    underflows in f32). tessel.ops.lse_merge: f32 partials, bf16, f32 and
    f16 out at 32 x 128, 8 x 64 and 16 x 512 heads x head dim. The
    kernels: f32 and bf16 partials, all with the merged LSE (lse_out), and
    where out has the partials' dtype the merge in place (out = o_a,
    lse_out = lse_a).
  * N-way merge: (P, T) in {(1, 7), (2, 1000), (5, 333), (33, 77)}, empty
    partials holding NaN, rows where every partial is empty (out == 0,
    merged LSE -inf); tessel.ops.lse_merge_n (f32 partials, the heads
    above) and the kernels with lse_out and with bf16 partials.
  * reshape_and_cache: T in {1, 7, 700}, slots in random order with
    padding (-1) and slots past the cache; written slots must equal the
    input bit for bit, every other cache element keeps its NaN poison.
    tessel.ops (NHD; bf16, f16 at 4 x 192, f32) and the kernels of the
    shuffled layout (bf16, f16, f32: 16-byte groups of 8 or 4) and of
    distinct K and V head dims (192 / 128, DeepSeek's non-absorbed MLA).

Tolerances: max |out - ref| / max(1, |ref|) at most 1e-2 for 16-bit out,
1e-4 for f32 out; merged LSE within 1e-4 + 1e-5 |ref|. (conftest.py: how
to run it.)
"""

import math

import pytest
import torch

import tessel.ops
import tessel.specs
from gpu_checks import assert_lse_close, kernel, merged, nan_full, shuffle

INF = math.inf
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
# (heads, head dim, out dtype) of tessel.ops' merges (f32 partials)
MERGES = [(32, 128, "bf16"), (8, 64, "f32"), (16, 512, "bf16"),
          (32, 128, "f16")]
# (partials' dtype, heads, head dim, out dtype) of the merge kernels, each
# with lse_out
MERGE_KERNELS = [("f32", 32, 128, "bf16"), ("bf16", 32, 128, "bf16"),
                 ("f32", 8, 64, "f32"), ("bf16", 16, 512, "bf16")]
# (partials' dtype, heads, head dim, out dtype, lse_out) of the N-way ones
MERGE_N_KERNELS = [("f32", 32, 128, "bf16", False),
                   ("f32", 32, 128, "bf16", True),
                   ("bf16", 16, 512, "bf16", True)]
# name: (T on the GPU, T on the host)
MERGE_TOKENS = {"T0": (0, 0), "T1": (1, 1), "T7": (7, 7),
                "T16384": (16384, 513)}
MERGE_N_SHAPES = [(1, 7), (2, 1000), (5, 333), (33, 77)]  # (P, T)
# (dtype, layout, KV heads, head dim, v head dim, block size)
CACHES = [("bf16", "nhd", 8, 128, 128, 16), ("f16", "nhd", 4, 192, 192, 32),
          ("f32", "nhd", 2, 64, 64, 16)]
CACHE_KERNELS = [("bf16", "shuffled", 8, 128, 128, 16),
                 ("f16", "shuffled", 4, 192, 128, 32),
                 ("f16", "nhd", 4, 192, 128, 32),
                 ("f32", "shuffled", 2, 64, 64, 16)]


def merge_id(merge):
    """tessel.ops' (heads, head dim, out)."""
    h, d, out = merge
    return f"h{h}_d{d}_{out}"


def kernel_id(merge):
    """A kernel's (partials, heads, head dim, out[, lse_out])."""
    parts, h, d, out, *lse_out = merge
    return f"{parts}_h{h}_d{d}_{out}{'_lse' if lse_out and lse_out[0] else ''}"


def cache_id(cache):
    dtype, layout, hkv, d, dv, bs = cache
    return f"{dtype}_{layout}_kv{hkv}_d{d}_v{dv}_bs{bs}"


def make_empty(lse, out, flat, value):
    """Partial (out [T, H, D], lse [H, T]) empty at the flat (h, t) indices
    of lse: LSE `value` (-inf or +inf), NaN outputs."""
    T = lse.shape[1]
    lse.view(-1)[flat] = value
    out[flat % T, flat // T] = math.nan


def merge_inputs(h, d, T, dtype, gen, device):
    """Partials (o_a, lse_a, o_b, lse_b: o of `dtype`, lse f32) with, in
    disjoint tenths of the (h, t) rows (at least one each), widely apart
    LSEs, a empty at -inf and at +inf, b empty at +inf and at -inf, and
    both empty; then the float64 merge (out, lse) with o_a where both are
    empty, and that [T, H] mask."""
    oa, ob = (torch.randn(T, h, d, generator=gen, device=device).to(dtype)
              for _ in range(2))
    la, lb = (torch.randn(h, T, generator=gen, device=device) * 3
              for _ in range(2))
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
    ref, ref_lse, none = merged(torch.stack([oa, ob]), torch.stack([la, lb]))
    ref = torch.where(none[..., None], oa.double(), ref)
    return (oa, la, ob, lb), ref, ref_lse, none


def merge_n_inputs(h, d, P, T, dtype, gen, device):
    """P partials [P, T, H, D] of `dtype` and their LSEs [P, H, T], about a
    fifth empty (half of them at +inf) and a twentieth of the rows empty in
    every partial, outputs NaN where empty; then the float64 merge (out,
    zero where every partial is empty; lse)."""
    parts = torch.randn(P, T, h, d, generator=gen, device=device).to(dtype)
    lses = torch.randn(P, h, T, generator=gen, device=device) * 3
    empty = torch.rand(P, h, T, generator=gen, device=device) < 0.2
    negative = torch.rand(P, h, T, generator=gen, device=device) < 0.5
    lses[empty] = torch.where(negative, -INF, INF)[empty]
    parts.permute(0, 2, 1, 3)[empty] = math.nan
    rows = torch.randperm(h * T, generator=gen, device=device)
    rows = rows[:max(1, h * T // 20)]
    lses[:, rows // T, rows % T] = -INF
    parts[:, rows % T, rows // T] = math.nan
    ref, ref_lse, none = merged(parts, lses)
    return (parts, lses), ref.masked_fill(none[..., None], 0.0), ref_lse


def assert_merge_close(out, ref, what):
    """The bound of the merges: max |out - ref| / max(1, |ref|), no NaN."""
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)}"
    assert not bool(torch.isnan(out).any()), f"{what}: NaN in out"
    if out.numel():
        err = ((out.double() - ref).abs() / ref.abs().clamp(min=1.0)).max()
        bound = 1e-4 if out.dtype == torch.float32 else 1e-2
        assert err.item() <= bound, f"{what}: error {err:.2e} > {bound}"


def assert_merged(what, out, lse, ref, ref_lse):
    assert_merge_close(out, ref, what)
    if lse is not None:
        assert_lse_close(lse, ref_lse, 1e-4, f"{what}: lse_out", rtol=1e-5)


@pytest.mark.parametrize("tokens", MERGE_TOKENS)
@pytest.mark.parametrize("merge", MERGES, ids=merge_id)
def test_lse_merge(merge, tokens, device, on_gpu, gen):
    h, d, out_dtype = merge
    T = MERGE_TOKENS[tokens][0 if on_gpu else 1]
    inputs, ref, _, none = merge_inputs(h, d, T, torch.float32, gen, device)
    out = tessel.ops.lse_merge(*inputs, out_dtype=DTYPES[out_dtype])
    what = f"tessel.ops.lse_merge {merge_id(merge)} T={T}"
    assert_merge_close(out, ref, what)
    oa = inputs[0]
    assert torch.equal(out[none], oa[none].to(out.dtype)), \
        f"{what}: rows with both partials empty are not o_a"


@pytest.mark.parametrize("tokens", MERGE_TOKENS)
@pytest.mark.parametrize("merge", MERGE_KERNELS, ids=kernel_id)
def test_lse_merge_kernel(merge, tokens, device, on_gpu, gen):
    parts, h, d, out_dtype = merge
    T = MERGE_TOKENS[tokens][0 if on_gpu else 1]
    name = f"merge_{kernel_id(merge)}_lse"
    run = kernel(device, name, tessel.specs.lse_merge(
        name, h, d, out_dtype=out_dtype, lse_out=True, dtype=parts))
    inputs, ref, ref_lse, none = merge_inputs(h, d, T, DTYPES[parts], gen,
                                              device)
    oa, la, ob, lb = inputs
    out = nan_full(T, h, d, dtype=DTYPES[out_dtype], device=device)
    lse = nan_full(h, T, device=device)
    run(oa, la, ob, lb, out, lse)
    what = f"{name} T={T}"
    assert_merged(what, out, lse, ref, ref_lse)
    assert torch.equal(out[none], oa[none].to(out.dtype)), \
        f"{what}: rows with both partials empty are not o_a"
    if out.dtype == oa.dtype:
        a, a_lse = oa.clone(), la.clone()
        run(a, a_lse, ob, lb, a, a_lse)
        assert_merged(f"{what} in place", a, a_lse, ref, ref_lse)


@pytest.mark.parametrize("shape", MERGE_N_SHAPES,
                         ids=lambda s: f"P{s[0]}_T{s[1]}")
@pytest.mark.parametrize("merge", MERGES, ids=merge_id)
def test_lse_merge_n(merge, shape, device, gen):
    h, d, out_dtype = merge
    inputs, ref, _ = merge_n_inputs(h, d, *shape, torch.float32, gen,
                                    device)
    out = tessel.ops.lse_merge_n(*inputs, out_dtype=DTYPES[out_dtype])
    assert_merge_close(out, ref, f"tessel.ops.lse_merge_n {merge_id(merge)} "
                                 f"P={shape[0]} T={shape[1]}")


@pytest.mark.parametrize("shape", MERGE_N_SHAPES,
                         ids=lambda s: f"P{s[0]}_T{s[1]}")
@pytest.mark.parametrize("merge", MERGE_N_KERNELS, ids=kernel_id)
def test_lse_merge_n_kernel(merge, shape, device, gen):
    parts, h, d, out_dtype, lse_out = merge
    P, T = shape
    name = f"merge_n_{kernel_id(merge)}"
    run = kernel(device, name, tessel.specs.lse_merge_n(
        name, h, d, out_dtype=out_dtype, lse_out=lse_out, dtype=parts))
    inputs, ref, ref_lse = merge_n_inputs(h, d, P, T, DTYPES[parts], gen,
                                          device)
    out = nan_full(T, h, d, dtype=DTYPES[out_dtype], device=device)
    lse = nan_full(h, T, device=device) if lse_out else None
    run(*inputs, out, *([lse] if lse_out else []))
    assert_merged(f"{name} P={P} T={T}", out, lse, ref, ref_lse)


def bits(t):
    """The tensor's bits, for exact comparison (NaN poison included)."""
    return t.view({2: torch.int16, 4: torch.int32}[t.element_size()])


def cache_write(cache, T, gen, device):
    """k [T, Hkv, D], v [T, Hkv, Dv] and int32 slots in random order (for
    T > 1 with padding, -1, and slots past the cache: both skipped), NHD
    caches of 64 blocks poisoned with NaN, and those caches as the write
    must leave them."""
    dtype, _, hkv, d, dv, bs = cache
    dtype, blocks = DTYPES[dtype], 64
    slots_in_cache = blocks * bs
    k = torch.randn(T, hkv, d, generator=gen, device=device).to(dtype)
    v = torch.randn(T, hkv, dv, generator=gen, device=device).to(dtype)
    slots = torch.randperm(slots_in_cache, generator=gen,
                           device=device)[:T].int()
    if T > 1:
        slots[0] = -1
        skipped = [-1, slots_in_cache, slots_in_cache + 5, 2 ** 31 - 1, -7]
        for i, slot in enumerate(skipped[:T - 1]):
            slots[1 + i * (T - 1) // len(skipped)] = slot
    k_cache = nan_full(blocks, bs, hkv, d, dtype=dtype, device=device)
    v_cache = nan_full(blocks, bs, hkv, dv, dtype=dtype, device=device)
    kept = (slots >= 0) & (slots < slots_in_cache)
    s = slots[kept].long()
    ref_k, ref_v = k_cache.clone(), v_cache.clone()
    ref_k[s // bs, s % bs] = k[kept]
    ref_v[s // bs, s % bs] = v[kept]
    return (k, v, k_cache, v_cache, slots), (ref_k, ref_v)


def assert_caches(what, caches, refs):
    for name, got, want in zip(("k_cache", "v_cache"), caches, refs):
        assert torch.equal(bits(got), bits(want)), f"{what}: {name}"


@pytest.mark.parametrize("T", [1, 7, 700], ids=lambda T: f"T{T}")
@pytest.mark.parametrize("cache", CACHES, ids=cache_id)
def test_reshape_and_cache(cache, T, device, gen):
    (k, v, k_cache, v_cache, slots), refs = cache_write(cache, T, gen, device)
    tessel.ops.reshape_and_cache(k, v, k_cache, v_cache, slots)
    assert_caches(f"tessel.ops.reshape_and_cache {cache_id(cache)} T={T}",
                  (k_cache, v_cache), refs)


@pytest.mark.parametrize("T", [1, 7, 700], ids=lambda T: f"T{T}")
@pytest.mark.parametrize("cache", CACHE_KERNELS, ids=cache_id)
def test_reshape_and_cache_kernel(cache, T, device, gen):
    dtype, layout, hkv, d, dv, bs = cache
    name = f"rc_{cache_id(cache)}"
    run = kernel(device, name, tessel.specs.reshape_and_cache(
        name, hkv, d, bs, v_head_dim=dv, layout=layout, dtype=dtype))
    (k, v, k_cache, v_cache, slots), refs = cache_write(cache, T, gen, device)
    if layout == "shuffled":
        k_cache, v_cache = shuffle(k_cache, v_cache)
        refs = shuffle(*refs)
    run(k, v, k_cache, v_cache, slots)
    assert_caches(f"{name} T={T}", (k_cache, v_cache), refs)
