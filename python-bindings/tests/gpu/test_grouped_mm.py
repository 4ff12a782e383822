"""The grouped matmul through the tessel package, against float64
per-group matmuls.

* test_kernels: the forward, dgrad and wgrad kernels that
  tessel.ops.grouped_mm runs (tessel.specs.grouped_mm's spec, from the
  default KernelCache), b stacked, with trans_b and without, bf16 and f16,
  E = 1..256, the shapes of bench/grouped_matmul_kernels.mlir (the
  reference MoE's, DeepSeek-V3's, N and K of 64, 200 / 72 and 136 / 192:
  no tile multiples), on these group sizes: a random top-k routing with
  groups of 0, 1 and 7 rows planted, explicit sizes with a group of 10500
  rows (12001 for E = 8), every group empty, T = 0, and rows past the last
  group end (odd T). Outputs start as NaN: every element must be written,
  the rows past the last end and the weight gradients of empty groups
  must be exact zeros.
* test_wgrad_f32_c: the weight gradient into an f32 c from bf16 operands
  (the gmw_* kernels of bench/grouped_matmul_wgrad_kernels.mlir; the
  package writes c in the operands' dtype), same cases, within 1e-3 of
  each group's largest value.
* test_pointer_table: the forward with b a table of E separately
  allocated matrices (tessel.specs.kernel_spec, pointer_table=1: what
  tessel.torch.moe_mlp_unstacked launches), on the same cases.
* test_swiglu_epilogue: the MoE gate/up forward with act (the SiLU-gated
  product in its epilogue): h against float64, act against silu(gate) *
  up of h's own rounded halves; I of 512 and 384 (the sm_90a main loop)
  and 136 (not a multiple of 128: the sm80 one), the same cases.
* test_autograd: tessel.ops.grouped_mm and tessel.torch.grouped_mm (with a
  KernelCache) forward and backward, both layouts of b.
* test_graph_replay: one launch captured in a CUDA graph, replayed after
  new group offsets are written into the captured buffer (on the host the
  same launches run eagerly).

The tile configurations of bench/grouped_matmul_configs.mlir are
benchmark variants (grouped_matmul_bench.py checks each timed one), not
cases here. (conftest.py: how to run it.)
"""

import itertools
import math

import pytest
import torch

import tessel.cache
import tessel.ops
import tessel.specs
import tessel.torch
from gpu_checks import assert_close, kernel

# Of the largest reference magnitude (per group for the weight gradient): a
# bf16 c rounds each element by up to 2^-8 = 4e-3 of itself.
TOLERANCE = 1e-2
# ||error|| / ||reference|| of a weight gradient's group: bf16 rounding
# gives about 1.5e-3; one row of a 10500-row group left out about 1e-2.
NORM_TOLERANCE = 4e-3
BIG = 10500  # rows of the one large group of the explicit cases
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}

# (E, n, k, trans_b, dtype) of tessel.specs.grouped_mm: b [E, n, k] with
# trans_b, else [E, k, n]. Its forward, dgrad and wgrad are the bench's
# kernels named beside it (gm / gmd / gmwb, _e<E> left out).
SPECS = [
    (128, 1024, 2048, True, "bf16"),  # n1024_k2048, n2048_k1024, m1024_n2048
    (128, 2048, 512, True, "bf16"),   # n2048_k512, n512_k2048, m2048_n512
    (8, 1024, 2048, True, "bf16"),    # gm_e8_n1024_k2048
    (32, 4096, 7168, True, "bf16"),   # n4096_k7168, n7168_k4096, m4096_n7168
    (32, 7168, 2048, True, "bf16"),   # n7168_k2048, n2048_k7168, m7168_n2048
    (32, 2048, 7168, True, "bf16"),   # gm_e32_n2048_k7168
    (1, 64, 64, True, "bf16"),        # gm, gmd, gmw _e1_(n|m)64_(k|n)64
    (8, 64, 64, True, "bf16"),        # the same, E = 8
    (128, 64, 64, True, "bf16"),      # gm, gmd _e128_n64_k64
    (256, 64, 64, True, "bf16"),      # gm, gmd _e256_n64_k64
    (1, 64, 64, False, "bf16"),       # gmd_e1_n64_k64 as a forward
    (256, 64, 64, False, "bf16"),     # gmd_e256_n64_k64 as a forward
    (8, 200, 72, True, "bf16"),       # gm_e8_n200_k72, gmwb_e8_m200_n72
    (8, 200, 72, False, "bf16"),      # gmd_e8_n200_k72
    (256, 512, 256, True, "bf16"),    # gmwb_e256_m512_n256
    (8, 136, 192, True, "bf16"),      # gmwb_e8_m136_n192 (192-column tile)
    (8, 64, 64, True, "f16"),         # gm_f16_e8_n64_k64, gmd_f16_e8_n64_k64
    (128, 1024, 2048, True, "f16"),   # gm_f16_e128_n1024_k2048
    (128, 2048, 512, True, "f16"),    # gmd_f16_e128_n512_k2048 (its dgrad)
]

# (E, N, K, trans_b) of the pointer-table forwards: the bench's gmp_*
# (trans_b, a table of [N, K] matrices) and gmpd_* ([K, N]) kernels.
TABLES = [(128, 1024, 2048, True), (128, 2048, 512, True),
          (128, 512, 2048, False), (128, 2048, 1024, False)] + [
    (E, 64, 64, trans_b) for trans_b in (True, False)
    for E in (1, 8, 128, 256)] + [(8, 200, 72, True), (8, 200, 72, False)]

# The bench's explicit group sizes of E = 8 and E = 1, with their tails.
FIXED = {
    "e8-10500": ([0, 1, 7, 10500, 0, 130, 129, 3], 37),
    "e8-12001": ([0, 1, 7, 12001, 0, 255, 256, 3], 0),
    "e8-tiles": ([0, 1, 7, 10500, 0, 64, 65, 63], 9),
    "e1-1000": ([1000], 0),
    "e1-1-tail200": ([1], 200),
    "e1-10500": ([BIG], 36),
    "e1-7": ([7], 0),
    "e1-empty-tail5": ([0], 5),
    "all-empty": (None, 5),
    "T0": (None, 0),
}


def case_names(E, n, k):
    """The bench's cases for E groups of an n x k matmul (cases())."""
    if E == 1:
        # T = 0 too: the runtime skips the empty grid (the bench's driver
        # refused it).
        return [c for c in FIXED if c.startswith("e1-")] + ["T0"]
    names = ["routed"] + (["explicit"] if E >= 5 else [])
    if E == 8:
        names += [c for c in FIXED if c.startswith("e8-")]
    if n * k <= 200 * 72:
        names += ["all-empty", "T0"]
    return names


def huge(n, k):
    """DeepSeek-V3's matrices (1.9 GB of weights at E = 32)."""
    return n * k >= 1 << 23


def host_scale(on_gpu, n, k):
    """On the host (scalar loops), group sizes above 7 are divided by this
    (for huge matrices only the groups of 0, 1 and 7 rows stay); the shapes
    are those of the GPU."""
    if on_gpu:
        return 1
    return 10 ** 9 if huge(n, k) else 100 if n * k <= 1 << 18 else 1000


def odd(sizes, tail):
    """`tail` or `tail + 1`, whichever makes T odd: no multiple of a tile."""
    return tail + 1 - (sum(sizes) + tail) % 2


def routed_sizes(tokens, topk, E, gen):
    """Group sizes of a random top-k routing of `tokens` tokens."""
    scores = torch.rand(tokens, E, generator=gen, device=gen.device)
    return torch.bincount(scores.topk(topk, dim=1).indices.flatten(),
                          minlength=E).tolist()


def group_sizes(case, E, gen, scale):
    """(sizes, tail rows) of `case` for E groups."""
    def rows(s):
        return s if s <= 7 else s // scale

    if case == "routed":
        # Top-8 (top-E/4 for small E) of 4096 tokens, the first group
        # empty, one of 1 row and the last of 7.
        sizes = [rows(s) for s in
                 routed_sizes(4096, min(8, max(1, E // 4)), E, gen)]
        sizes[0], sizes[E // 2], sizes[-1] = 0, 1, 7
        return sizes, odd(sizes, 37)
    if case == "explicit":
        # 0, 1, 7 and 10500 rows, random small groups, the last group empty
        # (so that the tail follows an empty group).
        rest = torch.randint(0, 300, (E - 5,), generator=gen,
                             device=gen.device).tolist()
        sizes = [0, 1, 7, rows(BIG)] + [rows(s) for s in rest] + [0]
        return sizes, odd(sizes, 9)
    sizes, tail = FIXED[case]
    sizes = [0] * E if sizes is None else [rows(s) for s in sizes]
    return sizes, odd(sizes, tail) if case == "e1-10500" else tail


def ends_of(sizes, device):
    """group_offsets: the groups' cumulative ends, int32."""
    return torch.tensor(list(itertools.accumulate(sizes)), dtype=torch.int32,
                        device=device)


def randn(*shape, gen, dtype, scale=1.0):
    return (torch.randn(*shape, generator=gen, device=gen.device) *
            scale).to(dtype)


def weights(sizes, shape, k, gen, dtype):
    """b [E, *shape] of a product over k, scaled so that c is about
    unit-sized whatever k is: random for the groups with rows, NaN for the
    others on the GPU (no kernel may read them); the host leaves those
    unwritten (a first touch costs seconds a GB there: DeepSeek-V3's
    weights are 1.9 GB)."""
    w = torch.empty(len(sizes), *shape, dtype=dtype, device=gen.device)
    if w.is_cuda:
        w.fill_(math.nan)
    for g in (g for g, s in enumerate(sizes) if s):
        w[g] = randn(*shape, gen=gen, dtype=dtype, scale=k ** -0.5)
    return w


def row_groups(sizes):
    """(group, slice of its rows) of every group with rows."""
    start = 0
    for g, size in enumerate(sizes):
        if size:
            yield g, slice(start, start + size)
        start += size


def ragged_reference(x, sizes, mats, width):
    """float64 [T, width]: group g's rows of x times mats[g], zero past
    the last group end."""
    out = torch.zeros(x.shape[0], width, dtype=torch.float64, device=x.device)
    for g, rows in row_groups(sizes):
        out[rows] = x[rows].double() @ mats[g]
    return out


def nan_like(shape, like):
    return torch.full(shape, math.nan, dtype=like.dtype, device=like.device)


def check_ragged(what, out, ref, sizes):
    assert_close(out, ref, TOLERANCE, what)
    assert out[sum(sizes):].count_nonzero() == 0, \
        f"{what}: rows past the last group end are not exact zeros"


def check_wgrad(what, out, sizes, ref_of, tolerance=TOLERANCE,
                norm_tolerance=NORM_TOLERANCE):
    """Per group (a 1-row group's gradient is ~100x smaller than a 10K-row
    one's): within `tolerance` and `norm_tolerance` of ref_of(rows); an
    empty group's exact zeros."""
    inf = float("inf")
    for g, rows in row_groups(sizes):
        ref = ref_of(rows)
        # Norms of the difference, not assert_close: two float64 copies of
        # a DeepSeek-V3 group rather than six.
        diff = out[g].double().sub_(ref)
        err = (torch.linalg.vector_norm(diff, inf) /
               torch.linalg.vector_norm(ref, inf)).item()
        norm = (torch.linalg.vector_norm(diff) /
                torch.linalg.vector_norm(ref)).item()
        assert err <= tolerance and norm <= norm_tolerance, \
            f"{what} group {g} ({rows.stop - rows.start} rows): error " \
            f"{err:.2e} (at most {tolerance}), error norm {norm:.2e} " \
            f"(at most {norm_tolerance}; nan: elements not written)"
    written = [g for g, s in enumerate(sizes) if not s and
               out[g].count_nonzero()]
    assert not written, \
        f"{what}: the gradients of empty groups {written} are not zeros"


def package_kernels(device, E, n, k, trans_b, dtype):
    """The fwd, dgrad and wgrad kernels tessel.ops.grouped_mm runs, from
    the default cache under tessel.torch's names (the same bundle)."""
    name = f"gmm_{dtype}_g{E}_n{n}_k{k}{'_tb' if trans_b else ''}"
    spec = tessel.specs.grouped_mm(E, n, k, dtype, trans_b, name)
    return {role: kernel(device, f"{name}_{role}", spec)
            for role in ("fwd", "dgrad", "wgrad")}


def table_kernel(device, E, N, K, trans_b, dtype="bf16"):
    name = f"gmm_table_{dtype}_g{E}_n{N}_k{K}{'_tb' if trans_b else ''}"
    return kernel(device, name, tessel.specs.kernel_spec(
        name, "grouped_matmul", dtype, E, N=N, K=K, trans_b=int(trans_b),
        pointer_table=1))


def f32_wgrad_kernel(device, E, m, n):
    """The weight gradient c [E, m, n] in f32 from bf16 a and b:
    tessel.specs writes c in the operands' dtype, so its spec with c's
    element type changed (a and b are [?, m] and [?, n]: the only
    [E, m, n] memref is c's)."""
    name = f"gmw_f32c_e{E}_m{m}_n{n}"
    spec = tessel.specs.kernel_spec(name, "grouped_matmul_wgrad", "bf16", E,
                                    M=m, N=n)
    return kernel(device, name, spec.replace(f"memref<{E}x{m}x{n}xbf16>",
                                             f"memref<{E}x{m}x{n}xf32>"))


def spec_id(spec):
    E, n, k, trans_b, dtype = spec
    return f"e{E}_n{n}_k{k}{'_tb' if trans_b else ''}_{dtype}"


@pytest.mark.parametrize("spec,case", [
    (spec, case) for spec in SPECS for case in case_names(*spec[:3])],
    ids=lambda p: spec_id(p) if isinstance(p, tuple) else p)
def test_kernels(spec, case, device, on_gpu, gen):
    E, n, k, trans_b, dtype = spec
    if not on_gpu and huge(n, k) and case != "explicit":
        pytest.skip("on the host, huge matrices run one case: its first "
                    "touch of the outputs alone takes seconds")
    sizes, tail = group_sizes(case, E, gen, host_scale(on_gpu, n, k))
    T = sum(sizes) + tail
    kernels = package_kernels(device, *spec)
    element = DTYPES[dtype]
    a = randn(T, k, gen=gen, dtype=element)
    dc = randn(T, n, gen=gen, dtype=element)
    b = weights(sizes, (n, k) if trans_b else (k, n), k, gen, element)
    offsets = ends_of(sizes, device)
    # op(b[g]) [k, n] in float64, for the groups with rows.
    op_b = {g: (b[g].T if trans_b else b[g]).double()
            for g, _ in row_groups(sizes)}
    title = f"{spec_id(spec)} {case} (T={T}, {sizes[:8]}...)"

    c = nan_like((T, n), a)
    kernels["fwd"](a, b, offsets, c)
    check_ragged(f"forward {title}", c, ragged_reference(a, sizes, op_b, n),
                 sizes)

    da = nan_like((T, k), a)
    kernels["dgrad"](dc, b, offsets, da)
    check_ragged(f"dgrad {title}", da, ragged_reference(
        dc, sizes, {g: m.T for g, m in op_b.items()}, k), sizes)

    db = nan_like(b.shape, b)
    if trans_b:  # db[g] [n, k] = dc[rows]^T a[rows]
        kernels["wgrad"](dc, a, offsets, db)
        check_wgrad(f"wgrad {title}", db, sizes,
                    lambda rows: dc[rows].double().T @ a[rows].double())
    else:  # db[g] [k, n] = a[rows]^T dc[rows]
        kernels["wgrad"](a, dc, offsets, db)
        check_wgrad(f"wgrad {title}", db, sizes,
                    lambda rows: a[rows].double().T @ dc[rows].double())


# (E, M, N) of the f32-c weight gradients.
WGRAD_F32 = [(128, 1024, 2048), (128, 2048, 512), (32, 4096, 7168),
             (32, 7168, 2048), (1, 64, 64), (8, 64, 64), (8, 200, 72),
             (256, 512, 256), (8, 136, 192)]


@pytest.mark.parametrize("shape,case", [
    (shape, case) for shape in WGRAD_F32 for case in case_names(*shape)],
    ids=lambda p: "e{}_m{}_n{}".format(*p) if isinstance(p, tuple) else p)
def test_wgrad_f32_c(shape, case, device, on_gpu, gen):
    E, m, n = shape
    run = f32_wgrad_kernel(device, E, m, n)
    if not on_gpu and huge(m, n):
        pytest.skip("on the host, DeepSeek-V3's f32 gradients (3.7 GB) are "
                    "left to the GPU (the kernel is prepared)")
    sizes, tail = group_sizes(case, E, gen, host_scale(on_gpu, m, n))
    T = sum(sizes) + tail
    a = randn(T, m, gen=gen, dtype=torch.bfloat16)
    b = randn(T, n, gen=gen, dtype=torch.bfloat16)
    c = torch.full((E, m, n), math.nan, device=device)
    run(a, b, ends_of(sizes, device), c)
    # An f32 c differs from float64 in the order of summation (below
    # 1e-4); one row of a large group left out shows as about 1e-2.
    check_wgrad(f"f32-c wgrad e{E}_m{m}_n{n} {case} (T={T})", c, sizes,
                lambda rows: a[rows].double().T @ b[rows].double(),
                tolerance=1e-3, norm_tolerance=1e-3)


@pytest.mark.parametrize("layout,case", [
    (layout, case) for layout in TABLES for case in case_names(*layout[:3])],
    ids=lambda p: spec_id(p + ("bf16",)) if isinstance(p, tuple) else p)
def test_pointer_table(layout, case, device, on_gpu, gen):
    E, N, K, trans_b = layout
    sizes, tail = group_sizes(case, E, gen, host_scale(on_gpu, N, K))
    T = sum(sizes) + tail
    a = randn(T, K, gen=gen, dtype=torch.bfloat16)
    stacked = weights(sizes, (N, K) if trans_b else (K, N), K, gen,
                      torch.bfloat16)
    # E matrices of their own (separate allocations), by address; the host
    # leaves those of empty groups unwritten, as weights() does.
    mats = [m.clone() if size or m.is_cuda else torch.empty_like(m)
            for m, size in zip(stacked, sizes)]
    table = torch.tensor([m.data_ptr() for m in mats], dtype=torch.int64,
                         device=device)
    c = nan_like((T, N), a)
    table_kernel(device, *layout)(a, table, ends_of(sizes, device), c)
    ref = ragged_reference(a, sizes, {
        g: (m.T if trans_b else m).double() for g, m in enumerate(mats)
        if sizes[g]}, N)
    check_ragged(f"pointer table {spec_id(layout + ('bf16',))} {case} "
                 f"(T={T})", c, ref, sizes)


# (E, I, K) of the fused SwiGLU forwards: w_gate_up [E, 2I, K].
SWIGLU = [(128, 512, 2048), (8, 384, 256), (8, 136, 192)]


@pytest.mark.parametrize("shape,case", [
    (shape, case) for shape in SWIGLU
    for case in case_names(shape[0], 2 * shape[1], shape[2])],
    ids=lambda p: "e{}_i{}_k{}".format(*p) if isinstance(p, tuple) else p)
def test_swiglu_epilogue(shape, case, device, on_gpu, gen):
    E, I, K = shape
    sizes, tail = group_sizes(case, E, gen, host_scale(on_gpu, 2 * I, K))
    T = sum(sizes) + tail
    name = f"gmm_swiglu_bf16_g{E}_i{I}_k{K}"
    run = kernel(device, name, tessel.specs.kernel_spec(
        name, "grouped_matmul", "bf16", E, N=2 * I, K=K, trans_b=1,
        pointer_table=0, swiglu=1))
    a = randn(T, K, gen=gen, dtype=torch.bfloat16)
    b = weights(sizes, (2 * I, K), K, gen, torch.bfloat16)
    h, act = nan_like((T, 2 * I), a), nan_like((T, I), a)
    run(a, b, ends_of(sizes, device), h, act)
    title = f"e{E}_i{I}_k{K} {case} (T={T})"
    check_ragged(f"swiglu h {title}", h, ragged_reference(
        a, sizes, {g: b[g].T.double() for g, _ in row_groups(sizes)}, 2 * I),
        sizes)
    gate, up = h.double().split(I, dim=1)
    check_ragged(f"swiglu act {title}", act,
                 torch.nn.functional.silu(gate) * up, sizes)


@pytest.mark.parametrize("trans_b", [True, False], ids=["tb", "no_tb"])
@pytest.mark.parametrize("api", ["tessel.ops", "tessel.torch"])
def test_autograd(api, trans_b, device, on_gpu, gen):
    """c, da and db of the public functions against float64 autograd of
    the per-group loop, E = 8, N = 200, K = 72, the explicit sizes."""
    E, N, K = 8, 200, 72
    sizes, tail = group_sizes("explicit", E, gen, host_scale(on_gpu, N, K))
    T = sum(sizes) + tail
    a = randn(T, K, gen=gen, dtype=torch.bfloat16).requires_grad_()
    b = randn(E, *((N, K) if trans_b else (K, N)), gen=gen,
              dtype=torch.bfloat16, scale=K ** -0.5).requires_grad_()
    w = torch.randn(T, N, generator=gen, device=device)
    offsets = ends_of(sizes, device)
    if api == "tessel.ops":
        c = tessel.ops.grouped_mm(a, b, offsets, trans_b=trans_b)
    else:
        c = tessel.torch.grouped_mm(a, b, offsets,
                                    tessel.cache.default_cache(), trans_b)
    da, db = torch.autograd.grad((c.float() * w).sum(), (a, b))

    a64, b64 = (t.detach().double().requires_grad_() for t in (a, b))
    ref = ragged_reference(a64, sizes, {
        g: b64[g].T if trans_b else b64[g] for g, _ in row_groups(sizes)}, N)
    rda, rdb = torch.autograd.grad((ref * w.double()).sum(), (a64, b64))
    for what, got, want in (("c", c, ref), ("da", da, rda), ("db", db, rdb)):
        assert_close(got, want.detach(), TOLERANCE,
                     f"{api}.grouped_mm {what} (trans_b={trans_b})")


def graph_routings(gen, scale):
    """Three routings of E = 128 for one graph: two random top-8 routings
    of 4096 tokens, and one with 126 experts empty."""
    skewed = [0] * 128
    skewed[5], skewed[77] = 30000 // scale, 1
    return [routed_sizes(4096 // scale, 8, 128, gen),
            routed_sizes(4096 // scale, 8, 128, gen), skewed]


@pytest.mark.parametrize("role,spec", [
    ("fwd", (128, 1024, 2048, True, "bf16")),    # gm_e128_n1024_k2048
    ("dgrad", (128, 2048, 512, True, "bf16")),   # gmd_e128_n512_k2048
    ("wgrad", (128, 1024, 2048, True, "bf16"))],  # gmw(b)_e128_m1024_n2048
    ids=["fwd", "dgrad", "wgrad"])
def test_graph_replay(role, spec, device, on_gpu, gen):
    """The kernel reads the offsets on the device when it runs: nothing
    is baked in at capture, no host synchronisation in the launch. Rows
    past a routing's end are tail rows."""
    E, n, k, _, _ = spec
    routings = graph_routings(gen, host_scale(on_gpu, n, k))
    T = max(sum(sizes) for sizes in routings)
    used = [sum(s[g] for s in routings) for g in range(E)]
    a = randn(T, k, gen=gen, dtype=torch.bfloat16)
    dc = randn(T, n, gen=gen, dtype=torch.bfloat16)
    b = weights(used, (n, k), k, gen, torch.bfloat16)
    kernel = package_kernels(device, *spec)[role]
    x, y, out = {"fwd": (a, b, nan_like((T, n), a)),
                 "dgrad": (dc, b, nan_like((T, k), a)),
                 "wgrad": (dc, a, nan_like(b.shape, b))}[role]
    offsets = torch.zeros(E, dtype=torch.int32, device=device)

    def launch():
        kernel(x, y, offsets, out)

    if on_gpu:
        launch()  # loads the kernel outside the capture
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            launch()
        launch = graph.replay
    for replay, sizes in enumerate(routings):
        offsets.copy_(ends_of(sizes, device))
        out.fill_(math.nan)
        launch()
        title = f"{role} replay {replay} (T={T}, {sum(sizes)} rows routed)"
        op_b = {g: b[g].T.double() for g, _ in row_groups(sizes)}
        if role == "fwd":
            check_ragged(title, out, ragged_reference(a, sizes, op_b, n),
                         sizes)
        elif role == "dgrad":
            check_ragged(title, out, ragged_reference(
                dc, sizes, {g: m.T for g, m in op_b.items()}, k), sizes)
        else:
            check_wgrad(title, out, sizes,
                        lambda rows: dc[rows].double().T @ a[rows].double())
