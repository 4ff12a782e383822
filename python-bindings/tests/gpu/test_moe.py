"""The MoE layer through the tessel package.

* Routing glue (tessel.ops), E = 128 with H = 2048 and E = 256 with
  H = 7168, top-8 routings of 0 to 32768 tokens with about 2% of the ids
  dropped (-1, -2^31, 2^31 - 1, E, E + 7): expert_sort's group_offsets,
  sorted_rows and row_positions exactly those of a torch reference, twice;
  moe_permute bit for bit, with negative and out-of-range rows injected
  (zero rows); moe_unpermute within 1e-2 of a float64 reference, with
  positions past y and -1 injected and NaN routing weights there (they
  must add nothing), bitwise equal twice, and an empty y; the four
  captured in a CUDA graph and replayed on new ids, x and weights (on the
  host: run again eagerly).
* The kernels themselves (tessel.specs.kernel_spec from the default
  KernelCache, as tessel.ops and tessel.torch spec them), outputs poisoned
  (0xA5A5A5A5, NaN): expert_histogram, and expert_sort on group offsets
  that do not match the ids (garbage, halved: the clamping of
  docs/dialect.md); swiglu and swiglu_backward against float64, NaN in the
  unplaced rows, d topk_weights deterministic; moe_unpermute with bf16
  routing weights (tessel.ops passes float32 ones).
* tessel.torch.moe_mlp (stacked weights, gate and up apart) and
  moe_mlp_unstacked, E = 128, H = 2048, I = 512, top-8, forward and the
  gradients of x, topk_weights and every weight against float64 autograd
  of the per-expert loop; then with 16 experts never routed and 2% of the
  slots dropped; twice bitwise equal, the second time (GPU) under
  torch.cuda.set_sync_debug_mode("error").

* Training: the toy DeepSeek-style model (moe_reference.GPU_TOY) and a
  copy given tessel.torch.patch_deepseek_moe (the experts read in place,
  and stacked), 5 AdamW steps: losses
  within 0.2% of the loop's, peak memory not above it. Under FSDP:
  test_moe_fsdp.py.

Timings: bench/moe_layer_bench.py and moe_glue_bench.py. (conftest.py:
how to run it.)
"""

import gc
import math
from typing import NamedTuple

import pytest
import torch
import torch.nn.functional as F

import tessel.cache
import tessel.ops
import tessel.specs
import tessel.torch
from gpu_checks import assert_close, kernel, nan_full
# python-bindings/tests (on sys.path through its conftest.py): the toy
# DeepSeek-style model of the CPU tests.
from moe_reference import GPU_TOY, ToyModel, loss_of

TOPK = 8
GLUE = {128: 2048, 256: 7168}  # experts -> hidden size of that MoE
SWIGLU = {128: (512, 1), 256: (2048, 2)}  # experts -> (I, parts of h)
POISON = 0xA5A5A5A5 - (1 << 32)  # as an int32
DROPPED = [-1, -(1 << 31), (1 << 31) - 1]  # and E, E + 7
TOLERANCE = 1e-2  # bf16 outputs, of the largest reference magnitude


def tokens(T, on_gpu):
    """The host runs a hundredth of the bench's token counts above 7."""
    return T if on_gpu or T <= 7 else T // 100


def routing(T, E, gen, drop=0.02):
    """[T, 8] int32: 8 distinct experts a token, about `drop` of them
    replaced by ids outside [0, E)."""
    device = gen.device
    ids = torch.rand(T, E, generator=gen, device=device).topk(
        TOPK, dim=1).indices.int()
    bad = torch.tensor(DROPPED + [E, E + 7], dtype=torch.int32,
                       device=device)
    mask = torch.rand(T, TOPK, generator=gen, device=device) < drop
    pick = torch.randint(0, len(bad), (T, TOPK), generator=gen,
                         device=device)
    return torch.where(mask, bad[pick], ids).contiguous()


def ref_histogram(ids, E):
    flat = ids.reshape(-1).long()
    counts = torch.bincount(flat[(flat >= 0) & (flat < E)], minlength=E)
    return counts.int(), counts.cumsum(0).int()


def ref_sort(ids, offsets, E):
    """sorted_rows [R], row_positions [T, k]: the stable expert order, with
    the group ends clamped as the op does: end_e = min(R, max(0,
    offsets[0..e]))."""
    flat = ids.reshape(-1).long()
    R = flat.numel()
    valid = (flat >= 0) & (flat < E)
    key = torch.where(valid, flat, torch.full_like(flat, E))
    order = torch.argsort(key, stable=True)
    counts = torch.bincount(key, minlength=E + 1)
    start = counts.cumsum(0) - counts  # first sorted index of each key
    rank = torch.empty_like(flat)
    rank[order] = torch.arange(R, device=ids.device) - start[key[order]]
    ends = offsets.long().clamp(min=0).cummax(0).values.clamp(max=R)
    begins = torch.cat([ends.new_zeros(1), ends[:-1]])
    expert = key.clamp(max=E - 1)
    pos = begins[expert] + rank
    placed = valid & (pos < ends[expert])
    positions = torch.where(placed, pos, torch.full_like(pos, -1))
    sorted_rows = torch.full((R,), -1, dtype=torch.long, device=ids.device)
    sorted_rows[pos[placed]] = torch.arange(R, device=ids.device)[placed]
    return sorted_rows.int(), positions.view(ids.shape).int()


def ref_permute(x, rows):
    rows = rows.long()
    valid = (rows >= 0) & (rows < x.shape[0] * TOPK)
    out = torch.zeros(rows.numel(), x.shape[1], dtype=x.dtype,
                      device=x.device)
    out[valid] = x[rows[valid] // TOPK]
    return out


def ref_unpermute(y, positions, weights):
    """float64 [T, H]: sum over j of weights[t, j] * y[positions[t, j]],
    positions outside y adding nothing."""
    out = torch.zeros(positions.shape[0], y.shape[1], dtype=torch.float64,
                      device=y.device)
    pos = positions.long()
    valid = (pos >= 0) & (pos < y.shape[0])
    for j in range(pos.shape[1]):
        rows = valid[:, j].nonzero().flatten()
        out[rows] += weights[rows, j, None].double() * \
            y[pos[rows, j]].double()
    return out


def inject(t, values, gen):
    """`t` with 1% of its entries (at least one) set to random `values`."""
    t = t.clone()
    flat = t.view(-1)
    if flat.numel():
        count = max(1, flat.numel() // 100)
        at = torch.randint(0, flat.numel(), (count,), generator=gen,
                           device=t.device)
        vals = torch.tensor(values, dtype=t.dtype, device=t.device)
        flat[at] = vals[torch.randint(0, len(values), (count,),
                                      generator=gen, device=t.device)]
    return t


def nan_weights(positions, R, gen):
    """Routing weights, NaN where the slot adds nothing (position -1 or
    past y): they must not reach the output."""
    w = torch.rand(positions.shape, generator=gen, device=gen.device)
    pos = positions.long()
    return w.masked_fill((pos < 0) | (pos >= R), math.nan)


def assert_equal(what, got, want):
    """Exact equality (a poisoned element left unwritten never equals)."""
    if not torch.equal(got, want):
        bad = (got != want).nonzero()
        at = tuple(bad[0].tolist()) if len(bad) else ()
        raise AssertionError(
            f"{what}: {len(bad)} of {want.numel()} elements differ"
            + (f"; first at {at}: {got[at].item()}, expected "
               f"{want[at].item()}" if at else ""))


#===----------------------------------------------------------------------===#
# The routing glue through tessel.ops
#===----------------------------------------------------------------------===#

@pytest.mark.parametrize("T", [0, 1, 7, 4096, 32768])
@pytest.mark.parametrize("E", list(GLUE))
def test_routing_glue(E, T, device, on_gpu, gen):
    T, H = tokens(T, on_gpu), GLUE[E]
    R = T * TOPK
    ids = routing(T, E, gen)
    offsets, sorted_rows, positions = tessel.ops.expert_sort(ids, E)
    _, ref_offsets = ref_histogram(ids, E)
    assert_equal(f"group_offsets (T={T})", offsets, ref_offsets)
    ref_rows, ref_positions = ref_sort(ids, ref_offsets, E)
    assert_equal(f"sorted_rows (T={T})", sorted_rows, ref_rows)
    assert_equal(f"row_positions (T={T})", positions, ref_positions)
    for name, again, first in zip(
            ("group_offsets", "sorted_rows", "row_positions"),
            tessel.ops.expert_sort(ids, E), (offsets, sorted_rows, positions)):
        assert_equal(f"{name}, second run (T={T})", again, first)

    x = torch.randn(T, H, generator=gen, device=device).bfloat16()
    rows = inject(sorted_rows, [R, R + 5, -3, (1 << 31) - 1], gen)
    assert_equal(f"moe_permute (T={T})", tessel.ops.moe_permute(x, rows, TOPK),
                 ref_permute(x, rows))

    y = torch.randn(R, H, generator=gen, device=device).bfloat16()
    pos = inject(positions, [R, R + 1, -7], gen)
    w = nan_weights(pos, R, gen)
    out = tessel.ops.moe_unpermute(y, pos, w)
    assert_close(out, ref_unpermute(y, pos, w), TOLERANCE,
                 f"moe_unpermute (T={T})")
    assert_equal(f"moe_unpermute, second run (T={T})",
                 tessel.ops.moe_unpermute(y, pos, w), out)


@pytest.mark.parametrize("E", list(GLUE))
def test_unpermute_empty_y(E, device, gen):
    """No rows in y: nothing to read, out = 0 (one position past y)."""
    pos = torch.full((5, TOPK), -1, dtype=torch.int32, device=device)
    pos[0, 0] = 3
    y = torch.empty(0, GLUE[E], dtype=torch.bfloat16, device=device)
    out = tessel.ops.moe_unpermute(
        y, pos, torch.rand(5, TOPK, generator=gen, device=device))
    assert_equal("moe_unpermute of an empty y", out, torch.zeros_like(out))


@pytest.mark.parametrize("E", list(GLUE))
def test_glue_graph(E, device, on_gpu, gen):
    """expert_sort, moe_permute and moe_unpermute captured once, replayed
    on new ids, x and weights written into the captured inputs, outputs
    poisoned before each replay."""
    T, H = tokens(4096, on_gpu), GLUE[E]
    ids = routing(T, E, gen)
    x = torch.randn(T, H, generator=gen, device=device).bfloat16()
    w = torch.rand(T, TOPK, generator=gen, device=device)

    def pipeline():
        offsets, rows, positions = tessel.ops.expert_sort(ids, E)
        xs = tessel.ops.moe_permute(x, rows, TOPK)
        return offsets, rows, positions, xs, \
            tessel.ops.moe_unpermute(xs, positions, w)

    run = pipeline
    if on_gpu:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            pipeline()  # loads the kernels outside the capture
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            outputs = pipeline()

        def run():
            for t in outputs:
                t.fill_(math.nan if t.is_floating_point() else POISON)
            graph.replay()
            return outputs

    for replay in range(2):
        ids.copy_(routing(T, E, gen, drop=0.05 * (replay + 1)))
        x.copy_(torch.randn(T, H, generator=gen, device=device))
        w.copy_(torch.rand(T, TOPK, generator=gen, device=device))
        offsets, rows, positions, xs, out = run()
        _, ref_offsets = ref_histogram(ids, E)
        ref_rows, ref_positions = ref_sort(ids, ref_offsets, E)
        what = f"replay {replay} (T={T})"
        assert_equal(f"group_offsets, {what}", offsets, ref_offsets)
        assert_equal(f"sorted_rows, {what}", rows, ref_rows)
        assert_equal(f"row_positions, {what}", positions, ref_positions)
        ref_xs = ref_permute(x, ref_rows)
        assert_equal(f"moe_permute, {what}", xs, ref_xs)
        assert_close(out, ref_unpermute(ref_xs, ref_positions, w), TOLERANCE,
                     f"moe_unpermute, {what}")


#===----------------------------------------------------------------------===#
# The kernels, outputs poisoned
#===----------------------------------------------------------------------===#

def glue_kernel(device, op, groups, dtype=None, **params):
    """The kernel of `op` as tessel.ops names and specs it (the same
    bundle), from the default cache."""
    tag = "_".join(f"{k}{v}" for k, v in sorted(params.items()))
    name = f"{op}_{dtype or 'ids'}_e{groups}_{tag}"
    return kernel(device, name, tessel.specs.kernel_spec(
        name, op, dtype or "i32", groups, **params))


def poison_int(*shape, device):
    return torch.full(shape, POISON, dtype=torch.int32, device=device)


def nan(*shape, device, dtype=torch.bfloat16):
    return nan_full(*shape, dtype=dtype, device=device)


@pytest.mark.parametrize("T", [7, 4096])
def test_unpermute_bf16_weights(T, device, on_gpu, gen):
    """moe_unpermute with bf16 routing weights (tessel.ops passes float32
    ones; the kernel of that spec with the weights' type changed): the
    checks of test_routing_glue's unpermute, out poisoned."""
    E, H = 128, GLUE[128]
    T = tokens(T, on_gpu)
    R = T * TOPK
    name = f"moe_unpermute_bf16_h{H}_topk{TOPK}_wbf16"
    spec = tessel.specs.kernel_spec(name, "moe_unpermute", "bf16", E,
                                    hidden=H, topk=TOPK)
    run = kernel(device, name, spec.replace(f"memref<?x{TOPK}xf32>",
                                            f"memref<?x{TOPK}xbf16>"))
    _, _, positions = tessel.ops.expert_sort(routing(T, E, gen), E)
    y = torch.randn(R, H, generator=gen, device=device).bfloat16()
    pos = inject(positions, [R, R + 1, -7], gen)
    w = nan_weights(pos, R, gen).bfloat16()
    outs = []
    for _ in range(2):
        outs.append(nan(T, H, device=device))
        run(y, pos, w, outs[-1])
    assert_close(outs[0], ref_unpermute(y, pos, w), TOLERANCE,
                 f"moe_unpermute, bf16 weights (T={T})")
    assert_equal(f"moe_unpermute, bf16 weights, second run (T={T})", outs[1],
                 outs[0])


@pytest.mark.parametrize("T,offsets", [
    (0, "histogram"), (7, "histogram"), (4096, "histogram"),
    (7, "garbage"), (4096, "garbage"), (7, "halved"), (4096, "halved")])
@pytest.mark.parametrize("E", list(GLUE))
def test_sort_kernels(E, T, offsets, device, on_gpu, gen):
    """expert_histogram (T = 0: zeros), then expert_sort on its offsets or
    on offsets that do not match the ids: garbage (negative, past R) or
    halved (ends that drop rows); twice, the same bits."""
    T = tokens(T, on_gpu)
    R = T * TOPK
    ids = routing(T, E, gen)
    counts, ends = poison_int(E, device=device), poison_int(E, device=device)
    glue_kernel(device, "expert_histogram", E, topk=TOPK)(ids, counts, ends)
    ref_counts, ref_ends = ref_histogram(ids, E)
    assert_equal(f"counts (T={T})", counts, ref_counts)
    assert_equal(f"group_offsets (T={T})", ends, ref_ends)
    given = {"histogram": ends,
             "garbage": torch.randint(-5, R + 9, (E,), generator=gen,
                                      device=device, dtype=torch.int32),
             "halved": (ends // 2).contiguous()}[offsets]
    sort = glue_kernel(device, "expert_sort", E, topk=TOPK)
    results = []
    for _ in range(2):
        rows, positions = (poison_int(R, device=device),
                           poison_int(T, TOPK, device=device))
        sort(ids, given, rows, positions)
        results.append((rows, positions))
    ref_rows, ref_positions = ref_sort(ids, given, E)
    what = f"expert_sort on {offsets} offsets (T={T})"
    assert_equal(f"sorted_rows, {what}", results[0][0], ref_rows)
    assert_equal(f"row_positions, {what}", results[0][1], ref_positions)
    assert_equal(f"sorted_rows, second run, {what}", results[1][0],
                 results[0][0])
    assert_equal(f"row_positions, second run, {what}", results[1][1],
                 results[0][1])


def ref_swiglu(h, weights, sorted_rows, g):
    """float64 act, dh (h's layout), w * act and d topk_weights [T, k] of
    the unplaced-row-aware SwiGLU ops; h [R, 2I] or [2, R, I]."""
    fused = h.dim() == 2
    gate, up = h.double().chunk(2, dim=1) if fused else h.double().unbind(0)
    slot = sorted_rows.long()
    placed = (slot >= 0)[:, None]
    w = weights.reshape(-1).double()[slot.clamp(min=0)][:, None]
    s = torch.sigmoid(gate)
    act = gate * s * up
    gz = torch.where(placed, g.double(), torch.zeros_like(act))

    def zero_unplaced(t):
        return torch.where(placed, t, torch.zeros_like(t))

    d_gate = zero_unplaced(gz * w * up * s * (1 + gate * (1 - s)))
    d_up = zero_unplaced(gz * w * gate * s)
    dh = torch.cat([d_gate, d_up], 1) if fused else \
        torch.stack([d_gate, d_up])
    dw = torch.zeros(weights.numel(), dtype=torch.float64, device=h.device)
    keep = placed.flatten()
    dw[slot[keep]] = (gz * act)[keep].sum(1)
    return act, dh, zero_unplaced(act * w), dw.view(weights.shape)


@pytest.mark.parametrize("T", [7, 4096])
@pytest.mark.parametrize("E", list(SWIGLU))
def test_swiglu(E, T, device, on_gpu, gen):
    """swiglu and swiglu_backward (h [R, 2I] at E = 128, [2, R, I] at
    E = 256) on an expert_sort of a routing, NaN in the unplaced rows'
    grad and h: their outputs must be zeros, not NaN; d topk_weights of
    dropped slots zero and the same bits twice."""
    I, parts = SWIGLU[E]
    T = tokens(T, on_gpu)
    _, sorted_rows, positions = tessel.ops.expert_sort(routing(T, E, gen), E)
    R = T * TOPK
    shape = (R, 2 * I) if parts == 1 else (2, R, I)
    h = (torch.randn(shape, generator=gen, device=device) * 3).bfloat16()
    g = torch.randn(R, I, generator=gen, device=device).bfloat16()
    weights = torch.rand(T, TOPK, generator=gen, device=device)
    tail = sorted_rows < 0
    g[tail] = math.nan
    if parts == 1:
        h[tail] = math.nan
    else:
        h[:, tail] = math.nan
    act = nan(R, I, device=device)
    glue_kernel(device, "swiglu", 1, "bf16", intermediate=I, parts=parts)(
        h, act)
    ref_act, *refs = ref_swiglu(h, weights, sorted_rows, g)
    assert_close(act[~tail], ref_act[~tail], TOLERANCE,
                 f"swiglu act (R={R}, {int(tail.sum())} unplaced)")

    backward = glue_kernel(device, "swiglu_backward", 1, "bf16",
                           intermediate=I, parts=parts, topk=TOPK)
    dws = []
    for _ in range(2):
        dh, act_w = nan(*shape, device=device), nan(R, I, device=device)
        dws.append(nan(T, TOPK, device=device, dtype=torch.float32))
        backward(g, h, weights, sorted_rows, positions, dh, act_w, dws[-1])
    for what, got, want in zip(("dh", "act_weighted", "d_topk_weights"),
                               (dh, act_w, dws[0]), refs):
        assert_close(got, want, TOLERANCE, f"swiglu_backward {what} "
                     f"(R={R}, {int(tail.sum())} unplaced)")
    assert dws[0][positions < 0].count_nonzero() == 0, \
        "swiglu_backward: dropped slots' d_topk_weights are not zeros"
    assert_equal("d_topk_weights, second run", dws[1], dws[0])


#===----------------------------------------------------------------------===#
# The layer: tessel.torch.moe_mlp and moe_mlp_unstacked
#===----------------------------------------------------------------------===#

# The reference MoE (bench SHAPES["mlp_ref"]), top-8.
EXPERTS, HIDDEN, INTER = 128, 2048, 512
LAYER_MAX, LAYER_NORM = 3e-2, 1e-2  # of the largest magnitude, of the norm
FORMS = ["stacked", "split", "unstacked"]


class Layer(NamedTuple):
    x: torch.Tensor          # [T, H] bf16
    ids: torch.Tensor        # [T, k] int64 (as torch.topk gives), -1 dropped
    weights: torch.Tensor    # [T, k] fp32
    w_gate_up: torch.Tensor  # [E, 2I, H] bf16
    w_down: torch.Tensor     # [E, H, I] bf16
    dout: torch.Tensor       # [T, H] bf16
    used: list               # the experts some token is routed to


def random_layer(T, gen, empty=(), dropped=0.0):
    """Each token routed to 8 distinct experts (never one of `empty`),
    about `dropped` of the slots (at least one) given id -1. The weights of
    experts nobody is routed to are NaN on the GPU (nothing may read them)
    and left unwritten on the host (a first touch costs seconds a GB
    there)."""
    device = gen.device
    scores = torch.rand(T, EXPERTS, generator=gen, device=device)
    scores[:, list(empty)] = -1.0
    top, ids = scores.topk(TOPK, dim=1)
    weights = torch.softmax(top * 4, dim=1)
    if dropped:
        mask = torch.rand(T, TOPK, generator=gen, device=device) < dropped
        mask[0, -1] = True
        ids = ids.masked_fill(mask, -1)
    used = sorted(set(ids[ids >= 0].tolist()))
    w_gate_up, w_down = (torch.empty(shape, dtype=torch.bfloat16,
                                     device=device)
                         for shape in ((EXPERTS, 2 * INTER, HIDDEN),
                                       (EXPERTS, HIDDEN, INTER)))
    for w in (w_gate_up, w_down):
        if w.is_cuda:
            w.fill_(math.nan)
        for e in used:
            w[e] = torch.randn(w.shape[1:], generator=gen, device=device) * \
                w.shape[2] ** -0.5

    def randn(*shape):
        return torch.randn(*shape, generator=gen, device=device).bfloat16()

    return Layer(randn(T, HIDDEN), ids, weights, w_gate_up, w_down,
                 randn(T, HIDDEN), used)


def leaf(t):
    """A fresh leaf on t's values (no copy of a dense t)."""
    return t.detach().contiguous().requires_grad_()


def run_form(form, layer):
    """out and the gradients of one fwd+bwd of tessel.torch's layer: of x,
    topk_weights, and per weight (w_gate_up or w_gate and w_up, w_down)
    something that gives expert e's gradient at [e]."""
    x, w = leaf(layer.x), leaf(layer.weights)
    if form == "unstacked":
        # Per-expert leaves viewing the stacked weights, as a model's
        # nn.Linear weights: read in place through pointer tables.
        weights = {name: [m.requires_grad_() for m in t.detach().unbind(0)]
                   for name, t in (("w_gate", layer.w_gate_up[:, :INTER]),
                                   ("w_up", layer.w_gate_up[:, INTER:]),
                                   ("w_down", layer.w_down))}
        out = tessel.torch.moe_mlp_unstacked(x, layer.ids, w,
                                             *weights.values())
    else:
        if form == "stacked":
            weights = {"w_gate_up": leaf(layer.w_gate_up)}
        else:
            weights = {"w_gate": leaf(layer.w_gate_up[:, :INTER]),
                       "w_up": leaf(layer.w_gate_up[:, INTER:])}
        weights["w_down"] = leaf(layer.w_down)
        gate_up = weights["w_gate_up"] if form == "stacked" else \
            (weights["w_gate"], weights["w_up"])
        out = tessel.torch.moe_mlp(x, layer.ids, w, gate_up,
                                   weights["w_down"])
    out.backward(layer.dout)

    def grad(t):
        return [m.grad for m in t] if isinstance(t, list) else t.grad

    return dict(out=out.detach(), x=x.grad, topk_weights=w.grad,
                **{name: grad(t) for name, t in weights.items()})


def reference(layer):
    """float64 autograd of the per-expert loop over the used experts: out,
    the gradients of x and topk_weights, and those of the used experts'
    weights, [U, ...] in the order of layer.used."""
    x, w = (t.detach().double().requires_grad_()
            for t in (layer.x, layer.weights))
    gate_up, down = (t[layer.used].double().requires_grad_()
                     for t in (layer.w_gate_up, layer.w_down))
    out = torch.zeros(x.shape, dtype=torch.float64, device=x.device)
    # unbind: one gradient buffer for all experts (indexing would add a
    # whole zero-padded one per expert).
    for e, m_gate_up, m_down in zip(layer.used, gate_up.unbind(0),
                                    down.unbind(0)):
        token, slot = torch.where(layer.ids == e)
        h = x[token] @ m_gate_up.T
        y = (F.silu(h[:, :INTER]) * h[:, INTER:]) @ m_down.T
        out = out.index_add(0, token, y * w[token, slot, None])
    out.backward(layer.dout.double())
    return dict(out=out.detach(), x=x.grad, topk_weights=w.grad,
                w_gate_up=gate_up.grad, w_gate=gate_up.grad[:, :INTER],
                w_up=gate_up.grad[:, INTER:], w_down=down.grad)


def check_layer(what, got, ref):
    """The bench's criteria: the largest error within LAYER_MAX of the
    largest magnitude, the error norm within LAYER_NORM of the norm (norms
    of the difference rather than assert_close: fewer float64 copies of
    the weight gradients on the host)."""
    assert got.shape == ref.shape, f"{what}: shape {tuple(got.shape)}, " \
        f"expected {tuple(ref.shape)}"
    diff = got.double().sub_(ref)
    norm = torch.linalg.vector_norm
    worst = (norm(diff, math.inf) / norm(ref, math.inf)).item()
    total = (norm(diff) / norm(ref)).item()
    assert worst <= LAYER_MAX and total <= LAYER_NORM, \
        f"{what}: error {worst:.2e} (at most {LAYER_MAX}), error norm " \
        f"{total:.2e} (at most {LAYER_NORM}); NaN: not finite"


@pytest.mark.parametrize("sparse", [False, True],
                         ids=["dense", "16_empty_2pct_dropped"])
@pytest.mark.parametrize("form", FORMS)
def test_moe_mlp(form, sparse, device, on_gpu, gen):
    T = 4096 if on_gpu else 2
    empty = list(range(3, EXPERTS, EXPERTS // 16))[:16] if sparse else []
    layer = random_layer(T, gen, empty, 0.02 if sparse else 0.0)
    got = run_form(form, layer)
    ref = reference(layer)
    title = f"{form} (T={T}, {len(layer.used)} experts used" + \
        (", 16 empty, dropped slots)" if sparse else ")")
    for name in ("out", "x", "topk_weights"):
        check_layer(f"{name}, {title}", got[name], ref[name])
    unused = [e for e in range(EXPERTS) if e not in layer.used]
    for name in got.keys() - {"out", "x", "topk_weights"}:
        check_layer(f"d {name}, {title}",
                    torch.stack([got[name][e] for e in layer.used]),
                    ref[name])
        written = [e for e in unused if got[name][e].count_nonzero()]
        assert not written, \
            f"d {name}, {title}: unrouted experts {written} have gradients"
    if sparse:
        assert got["topk_weights"][layer.ids < 0].count_nonzero() == 0, \
            f"{title}: dropped slots' routing-weight gradients are not zero"
        return
    # Deterministic, and (on the GPU) no host synchronisation.
    if on_gpu:
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
    try:
        again = run_form(form, layer)
    finally:
        if on_gpu:
            torch.cuda.set_sync_debug_mode("default")
    for name, first in got.items():
        same = all(torch.equal(a, b) for a, b in zip(first, again[name])) \
            if isinstance(first, list) else torch.equal(first, again[name])
        assert same, f"{name}, {title}: a second run differs"


#===----------------------------------------------------------------------===#
# Training: a DeepSeek-style model patched with tessel.torch
#===----------------------------------------------------------------------===#

def toy_model(seed, device):
    """The toy model (moe_reference.GPU_TOY, bf16), the same initial
    weights for the same seed."""
    torch.manual_seed(seed)
    return ToyModel(GPU_TOY).to(device, torch.bfloat16)


def train(model, batches):
    """Losses of AdamW steps (lr 1e-3) over `batches` of (tokens, targets),
    and on the GPU the peak memory allocated above what was allocated
    before (the model's weights, and whatever earlier tests left)."""
    cuda = batches[0][0].is_cuda
    if cuda:
        gc.collect()
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for tokens, targets in batches:
        loss = loss_of(model, tokens, targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses, torch.cuda.max_memory_allocated() - before if cuda else 0


@pytest.mark.parametrize("stack", [False, True])
def test_patched_training(stack, device, on_gpu, gen):
    """The toy model and a copy given tessel.torch.patch_deepseek_moe
    (kernels from the default cache; the experts read in place or, with
    `stack`, stacked), 5 AdamW steps on the same batches of
    8 x 256 tokens: each step's loss within 0.2% of the loop's, and on the
    GPU a peak memory not above the loop's (one model on it at a time).
    On the host 2 steps of 2 x 16 tokens."""
    steps, shape = (5, (8, 256)) if on_gpu else (2, (2, 16))
    batches = [tuple(torch.randint(0, GPU_TOY.vocab_size, shape,
                                   generator=gen, device=device)
                     for _ in range(2)) for _ in range(steps)]
    seed = gen.initial_seed() % (1 << 31)
    loop_losses, loop_peak = train(toy_model(seed, device), batches)
    if on_gpu:
        torch.cuda.empty_cache()
    patched = toy_model(seed, device)
    names = tessel.torch.patch_deepseek_moe(
        patched, tessel.cache.default_cache(), stack_experts=stack)
    assert len(names) == GPU_TOY.num_layers, names
    losses, peak = train(patched, batches)
    for step, (want, got) in enumerate(zip(loop_losses, losses), 1):
        diff = abs(got - want) / abs(want)
        assert diff <= 2e-3, f"training step {step}: loss {got:.6f}, the " \
            f"loop's {want:.6f} ({diff:.2e} apart, at most 2e-3)"
    assert peak <= loop_peak, f"peak memory {peak / 2**20:.1f} MiB above " \
        f"the model's, the loop's {loop_peak / 2**20:.1f} MiB"
