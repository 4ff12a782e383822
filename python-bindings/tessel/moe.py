"""The routed experts of a mixture-of-experts layer (DeepSeek-V2/V3: SiLU-
gated MLPs, top-k routing) as one torch autograd Function over Tessel
kernels; tessel.torch exports it.

    import tessel, tessel.torch
    bundle = tessel.Bundle(tessel.Device("cuda"), "moe.tsb")
    out = tessel.torch.moe_mlp(x, topk_ids, topk_weights, w_gate_up,
                               w_down, bundle)

    out[t] = sum_j topk_weights[t, j] * expert_{topk_ids[t, j]}(x[t])
    expert_e(v) = w_down[e] @ (silu(gate) * up), [gate; up] = w_gate_up[e] @ v

Ids outside [0, E) are dropped slots (an expert-parallel rank's
non-local experts): they contribute nothing, and their routing weights get
zero gradient. Forward, R = T * k rows (each a (token, slot) pair), all on
the device with no host synchronisation:

    topk_ids [T, k]  -expert_histogram->  group_offsets [E]
                     -expert_sort->       sorted_rows [R], row_positions [T, k]
    x [T, H]  -grouped_matmul(w_gate_up, trans_b, a_rows = sorted_rows / k)->
              h [R, 2I]  (gate | up; x's rows read in expert order, xs =
              x[sorted_rows / k] never written)
              and act = silu(gate) * up [R, I] (the same launch's
              epilogue; with gate and up apart, a swiglu pass)
    act  -grouped_matmul(w_down, trans_b)->  y [R, H]
    y    -moe_unpermute(topk_weights)->  out [T, H]  (fp32 sums, no atomics)

Backward, dout [T, H]; w_s[p] is the routing weight of sorted row p;
dout_s = dout[sorted_rows / k] and xs = x[sorted_rows / k] are what the
grouped matmuls read through sorted_rows (a_rows / b_rows), never copies:

    g = grouped_matmul(dout_s, w_down)  (down dgrad)     [R, I]
    swiglu_backward(g, h, topk_weights), one pass:
      dh = SiLU-gate backward of g * w_s                 [R, 2I]
      act_w = act * w_s                                  [R, I]
      d topk_weights[t, j] = <g[p], act[p]>, p = row_positions[t, j]
        (= <dout[t], y[p]>, as y[p] = act[p] w_down^T: y is not kept)
    d w_down = grouped_matmul_wgrad(dout_s, act_w)
    dxs = grouped_matmul(dh, w_gate_up)  (gate/up dgrad) [R, H]
    d w_gate_up = grouped_matmul_wgrad(dh, xs)
    dx = moe_unpermute(dxs, weights 1)                   [T, H]
        (gate and up apart: both dgrads' rows, 2k a token, one pass)

Two grouped-matmul launches forward and four backward, whatever E is
(a per-expert loop makes 3E and 9E); every step over rows is a Tessel
kernel (torch only casts the routing weights and, with gate and up apart,
builds the [T, 2k] positions of the dx combine).
Saved for the backward: x, h, the int32 routing (sorted_rows,
row_positions, group_offsets), the routing weights as fp32, and the
weights themselves (no copies). Not saved: act (recomputed from h by
swiglu_backward) and y (the identity above); xs is never made.

`moe_mlp_unstacked` takes the experts' weights as lists, as a model keeps
them (one nn.Linear each), and reads them in place through pointer tables
(tessel.grouped_matmul with a [E] i64 `b`): no stacked copy, forward or
backward. Gate and up are then two launches (three forward, six backward);
their weight gradients come out of the wgrad kernels as [E, I, H] tensors
whose slices are the experts' gradients (views, no copy). The tables are
looked up by the weights' addresses on each call, forward and backward
(FSDP gathers the weights again for the backward, maybe elsewhere), and
made only for addresses not seen before.
`moe_mlp` with a pair (w_gate, w_up) of stacked [E, I, H] tensors runs the
same two launches on them directly, with no tables.

`moe_mlp_spec` writes the spec of every kernel these need (tessel-aot or
tessel.compile); kernels are found in the bundle by op and shape
parameters, the expert count (`groups`) among them.
"""

import abc
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import torch
from torch.autograd.function import once_differentiable

from ._tessel import Error, StatusCode
from . import _checks, specs
from .cache import KernelCache, default_cache
from .kernel_specs import lookup_params
from .ops import device_of
from .runtime import Bundle, Kernel

_ELEMENT = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
_ROUTING_OPS = ("expert_histogram", "expert_sort")  # no float operands


# The spec writer lives in tessel.specs (no torch needed to write a spec).
moe_mlp_spec = specs.moe_mlp


#===----------------------------------------------------------------------===#
# How the expert weights are given
#===----------------------------------------------------------------------===#

class _Form(abc.ABC):
    """One way of passing the expert weights: the kernel of each step, how
    many launches the up projection takes (`parts`: gate and up fused in
    one, or one each) and the `b` operand of each launch."""

    name: str
    parts: int
    steps: Dict[str, str]  # step -> kernel role

    @abc.abstractmethod
    def operands(self, weights) -> Tuple[List[torch.Tensor], torch.Tensor]:
        """The `b` of each up-projection launch, and of the down one."""

    @abc.abstractmethod
    def needs(self, needed: Sequence[bool]) -> Tuple[bool, bool]:
        """Whether any gate/up weight, and any down weight, needs a
        gradient, from the weights' needs_input_grad."""

    @abc.abstractmethod
    def weight_grads(self, d_up: Optional[torch.Tensor],
                     d_down: Optional[torch.Tensor],
                     needed: Sequence[bool]) -> Tuple:
        """The gradients of the weights, from d_up [parts, E, 2I/parts, H]
        and d_down [E, H, I] (None where not computed)."""


class _Stacked(_Form):
    """w_gate_up [E, 2I, H] (each expert's gate rows, then its up rows)
    and w_down [E, H, I]."""

    name = "moe_mlp"
    parts = 1
    steps = specs.MOE_FORM_STEPS["stacked"]

    def operands(self, weights):
        w_gate_up, w_down = weights
        return [w_gate_up], w_down

    def needs(self, needed):
        return needed[0], needed[1]

    def weight_grads(self, d_up, d_down, needed):
        return (d_up[0] if needed[0] else None,
                d_down if needed[1] else None)


class _Split(_Form):
    """w_gate and w_up [E, I, H] apart, each read in place (two launches
    for the up projection, as unstacked), and w_down [E, H, I]."""

    name = "moe_mlp"
    parts = 2
    steps = specs.MOE_FORM_STEPS["split"]

    def operands(self, weights):
        w_gate, w_up, w_down = weights
        return [w_gate, w_up], w_down

    def needs(self, needed):
        return needed[0] or needed[1], needed[2]

    def weight_grads(self, d_up, d_down, needed):
        grads = (None, None) if d_up is None else (d_up[0], d_up[1])
        return tuple(g if need else None
                     for g, need in zip((*grads, d_down), needed))


class _Unstacked(_Form):
    """Lists of E gate [I, H], E up [I, H] and E down [H, I] matrices, in
    that order, read in place through pointer tables."""

    name = "moe_mlp_unstacked"
    parts = 2
    steps = specs.MOE_FORM_STEPS["unstacked"]

    def operands(self, weights):
        tables = _pointer_tables(weights).view(3, -1)
        return [tables[0], tables[1]], tables[2]

    def needs(self, needed):
        E = len(needed) // 3
        return any(needed[:2 * E]), any(needed[2 * E:])

    def weight_grads(self, d_up, d_down, needed):
        E = len(needed) // 3
        grads = [None] * (3 * E)
        if d_up is not None:
            grads[:2 * E] = d_up.flatten(0, 1).unbind(0)
        if d_down is not None:
            grads[2 * E:] = d_down.unbind(0)
        return tuple(g if need else None for g, need in zip(grads, needed))


_STACKED, _SPLIT, _UNSTACKED = _Stacked(), _Split(), _Unstacked()


# Pointer tables already on a device, by (device, stream, addresses): a
# model's weights stay where they are from step to step, so the table of a
# forward serves its backward and the next steps; the stream orders a
# table's first use after its copy. A table's content is its key, so a
# cached one is never stale. Kept for the _TABLES_KEPT weight sets used
# last (one per MoE layer).
_TABLES: Dict[Tuple, torch.Tensor] = {}
_TABLES_KEPT = 64


def _pointer_tables(weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """The weights' addresses as an int64 tensor on their device, from
    _TABLES when it has them. A new table is copied to a GPU from pinned
    memory, asynchronously on the current stream: no host synchronisation
    (torch keeps the pinned buffer until it is done)."""
    addresses = tuple(w.data_ptr() for w in weights)
    device = weights[0].device
    stream = (torch.cuda.current_stream(device).cuda_stream
              if device.type == "cuda" else None)
    key = (device, stream, addresses)
    table = _TABLES.pop(key, None)
    if table is None:
        table = torch.tensor(addresses, dtype=torch.int64)
        if device.type != "cpu":
            table = table.pin_memory().to(device, non_blocking=True)
        # A copy captured into a CUDA graph runs only when the graph does:
        # such a table would be unwritten for eager calls, so it is not kept.
        if stream is not None and torch.cuda.is_current_stream_capturing():
            return table
        if len(_TABLES) >= _TABLES_KEPT:
            _TABLES.pop(next(iter(_TABLES)))  # the least recently used
    _TABLES[key] = table
    return table


#===----------------------------------------------------------------------===#
# Argument checks and kernel lookup
#===----------------------------------------------------------------------===#

_shape = _checks.shape


class _Dims(NamedTuple):
    tokens: int
    topk: int
    experts: int
    hidden: int
    intermediate: int


def _check_tensor(fn: str, name: str, t, rank: int, expected: str):
    _checks.tensor(f"tessel.torch.{fn}", name, t, rank, expected)


def _check_routing(fn: str, x, topk_ids, topk_weights) -> Tuple[int, int, int]:
    """T, k and H of x [T, H], topk_ids and topk_weights [T, k]."""
    _check_tensor(fn, "x", x, 2, "[T, H]")
    _check_tensor(fn, "topk_ids", topk_ids, 2, "[T, k]")
    _check_tensor(fn, "topk_weights", topk_weights, 2, "[T, k]")
    if x.dtype not in _ELEMENT:
        raise TypeError(f"tessel.torch.{fn}: 'x' is {x.dtype}; the kernels "
                        f"take float32, float16 or bfloat16")
    if topk_ids.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"tessel.torch.{fn}: 'topk_ids' must be int32 or "
                        f"int64, got {topk_ids.dtype}")
    if not topk_weights.is_floating_point():
        raise TypeError(f"tessel.torch.{fn}: 'topk_weights' must be "
                        f"floating point, got {topk_weights.dtype}")
    T, k = topk_ids.shape
    if x.shape[0] != T or topk_weights.shape != topk_ids.shape:
        raise ValueError(f"tessel.torch.{fn}: x [T, H], topk_ids [T, k] and "
                         f"topk_weights [T, k] must agree on T and k, got "
                         f"{_shape(x)}, {_shape(topk_ids)} and "
                         f"{_shape(topk_weights)}")
    if k < 1:
        raise ValueError(f"tessel.torch.{fn}: top-k is 0 (topk_ids "
                         f"{_shape(topk_ids)})")
    return T, k, x.shape[1]


def _check_weights(fn: str, x: torch.Tensor, named):
    """Every weight (name, tensor) has x's dtype and device and is dense."""
    _checks.like(f"tessel.torch.{fn}", "x", x, named)
    for name, w in named:
        if not w.is_contiguous():
            raise ValueError(f"tessel.torch.{fn}: '{name}' {_shape(w)} must "
                             f"be contiguous (row-major, as nn.Linear keeps "
                             f"its weight): a transposed view would need a "
                             f"copy")


def _check_devices(fn: str, bundle, x, topk_ids, topk_weights):
    _checks.same_device(f"tessel.torch.{fn}", "x", x,
                        (("topk_ids", topk_ids), ("topk_weights", topk_weights)))
    if not isinstance(bundle, Bundle):
        return  # kernels compiled for x's device
    device = bundle.device
    on_host = device.kind == "host"
    if (x.device.type == "cpu") != on_host or (
            not on_host and x.device.index != device.ordinal):
        where = "the host" if on_host else f"{device.kind}:{device.ordinal}"
        raise ValueError(f"tessel.torch.{fn}: the tensors are on {x.device} "
                         f"but the bundle's kernels run on {where}")


def _stacked_dims(x, topk_ids, w_gate_up, w_down, T, k, H) -> _Dims:
    fn = _STACKED.name
    _check_tensor(fn, "w_gate_up", w_gate_up, 3, "[E, 2I, H]")
    _check_tensor(fn, "w_down", w_down, 3, "[E, H, I]")
    E, two_i, h = w_gate_up.shape
    if h != H or two_i % 2:
        raise ValueError(f"tessel.torch.{fn}: 'w_gate_up' must be [E, 2I, H] "
                         f"with H = {H} (x is {_shape(x)}), got "
                         f"{_shape(w_gate_up)}")
    I = two_i // 2
    if tuple(w_down.shape) != (E, H, I):
        raise ValueError(f"tessel.torch.{fn}: 'w_down' must be [E, H, I] = "
                         f"[{E}, {H}, {I}] (from w_gate_up [E, 2I, H] = "
                         f"{_shape(w_gate_up)}), got {_shape(w_down)}")
    _check_weights(fn, x, (("w_gate_up", w_gate_up), ("w_down", w_down)))
    return _Dims(T, k, E, H, I)


def _split_dims(x, topk_ids, w_gate, w_up, w_down, T, k, H) -> _Dims:
    fn = _SPLIT.name
    _check_tensor(fn, "w_gate", w_gate, 3, "[E, I, H]")
    _check_tensor(fn, "w_up", w_up, 3, "[E, I, H]")
    _check_tensor(fn, "w_down", w_down, 3, "[E, H, I]")
    E, I, h = w_gate.shape
    if h != H:
        raise ValueError(f"tessel.torch.{fn}: 'w_gate' must be [E, I, H] "
                         f"with H = {H} (x is {_shape(x)}), got "
                         f"{_shape(w_gate)}")
    if w_up.shape != w_gate.shape:
        raise ValueError(f"tessel.torch.{fn}: 'w_up' must be [E, I, H] = "
                         f"{_shape(w_gate)} (as w_gate), got {_shape(w_up)}")
    if tuple(w_down.shape) != (E, H, I):
        raise ValueError(f"tessel.torch.{fn}: 'w_down' must be [E, H, I] = "
                         f"[{E}, {H}, {I}] (from w_gate [E, I, H] = "
                         f"{_shape(w_gate)}), got {_shape(w_down)}")
    _check_weights(fn, x, (("w_gate", w_gate), ("w_up", w_up),
                           ("w_down", w_down)))
    return _Dims(T, k, E, H, I)


def _unstacked_dims(x, gate, up, down, T, k, H) -> _Dims:
    fn = _UNSTACKED.name
    lists = (("gate_weights", gate), ("up_weights", up),
             ("down_weights", down))
    for name, ws in lists:
        if isinstance(ws, torch.Tensor) or not isinstance(ws, Sequence):
            raise TypeError(f"tessel.torch.{fn}: '{name}' must be a list of "
                            f"per-expert weight tensors")
    E = len(gate)
    if E == 0 or len(up) != E or len(down) != E:
        raise ValueError(f"tessel.torch.{fn}: gate_weights, up_weights and "
                         f"down_weights must hold one tensor per expert "
                         f"(at least one), got {len(gate)}, {len(up)} and "
                         f"{len(down)}")
    _check_tensor(fn, "gate_weights[0]", gate[0], 2, "[I, H]")
    I = gate[0].shape[0]
    dtype, device = x.dtype, x.device

    def fits(w, expected) -> bool:
        # The GPU kernels read every matrix in 16-byte chunks.
        return (isinstance(w, torch.Tensor) and w.shape == expected and
                w.dtype == dtype and w.device == device and
                w.is_contiguous() and w.data_ptr() % 16 == 0)

    # Hundreds of experts' matrices a call: one cheap pass, and the checks
    # that name the culprit only when it fails.
    if (all(fits(w, (I, H)) for w in gate) and
            all(fits(w, (I, H)) for w in up) and
            all(fits(w, (H, I)) for w in down)):
        return _Dims(T, k, E, H, I)
    for (name, ws), layout, expected in zip(
            lists, ("[I, H]", "[I, H]", "[H, I]"), ((I, H), (I, H), (H, I))):
        for e, w in enumerate(ws):
            what = f"{name}[{e}]"
            _check_tensor(fn, what, w, 2, layout)
            if tuple(w.shape) != expected:
                raise ValueError(
                    f"tessel.torch.{fn}: '{what}' must be {layout} = "
                    f"[{expected[0]}, {expected[1]}] (I from gate_weights[0] "
                    f"{_shape(gate[0])}, H from x {_shape(x)}), got "
                    f"{_shape(w)}")
            _check_weights(fn, x, ((what, w),))
            if w.data_ptr() % 16:
                raise ValueError(f"tessel.torch.{fn}: '{what}' starts at an "
                                 f"address that is not 16-byte aligned "
                                 f"({w.data_ptr():#x})")
    return _Dims(T, k, E, H, I)


def _kernels(bundle, form: _Form, x: torch.Tensor,
             dims: _Dims) -> Dict[str, Kernel]:
    """The kernels of `form`'s steps and of the shared roles, by step or
    role: from a Bundle (a missing one is a tessel.Error, NOT_FOUND, saying
    which and how to write its spec), or from a KernelCache (None: the
    default one), every kernel of the shape compiled together on the first
    miss."""
    e = _ELEMENT[x.dtype]
    wanted = {r: r for r in specs.MOE_SHARED_ROLES}
    wanted.update(form.steps)
    if not isinstance(bundle, Bundle):
        name = (f"moe_{e}_e{dims.experts}_h{dims.hidden}_"
                f"i{dims.intermediate}_k{dims.topk}")
        spec = specs.moe_mlp(dims.experts, dims.hidden, dims.intermediate,
                             dims.topk, e, name)
        cache, device = bundle or default_cache(), device_of(x)
        return {step: cache.kernel(device, f"{name}_{role}", spec)
                for step, role in wanted.items()}
    roles = specs.moe_kernels(dims.hidden, dims.intermediate, dims.topk)
    kernels = {}
    for step, role in wanted.items():
        op, params = roles[role]
        try:
            kernels[step] = bundle.find(
                op, None if op in _ROUTING_OPS else e,
                **lookup_params(op, dims.experts, params))
        except Error as error:
            message = (f"tessel.torch.{form.name}: the bundle has no kernel "
                       f"for '{role}' (E={dims.experts}, H={dims.hidden}, "
                       f"I={dims.intermediate}, top-{dims.topk}, {e}); "
                       f"tessel.torch.moe_mlp_spec({dims.experts}, "
                       f"{dims.hidden}, {dims.intermediate}, {dims.topk}, "
                       f"'{e}') writes every kernel it needs. {error}")
            missing = Error(message)
            missing.code, missing.message = StatusCode.NOT_FOUND, message
            raise missing from None
    return kernels


class _Plan(NamedTuple):
    form: _Form
    kernels: Dict[str, Kernel]
    dims: _Dims


#===----------------------------------------------------------------------===#
# The autograd Function
#===----------------------------------------------------------------------===#

def _unpermute(plan: _Plan, y: torch.Tensor, row_positions: torch.Tensor,
               weights: torch.Tensor, step: str = "unpermute") -> torch.Tensor:
    out = y.new_empty(row_positions.shape[0], y.shape[1])
    plan.kernels[step](y, row_positions, weights, out)
    return out


def _gate_up_operand(h: torch.Tensor) -> torch.Tensor:
    """h [parts, R, 2I / parts] (or its gradient) as the SwiGLU kernels
    take it: [R, 2I] (gate | up) from one fused launch, else [2, R, I]."""
    return h[0] if h.shape[0] == 1 else h


def forward(plan: _Plan, x: torch.Tensor, topk_ids: torch.Tensor,
            topk_weights: torch.Tensor, weights: Sequence[torch.Tensor]
            ) -> Tuple[torch.Tensor, Tuple[torch.Tensor, ...]]:
    """The layer's output and what the backward keeps: (sorted_rows,
    row_positions, offsets, h), all new tensors."""
    k, form, dims = plan.kernels, plan.form, plan.dims
    ids = topk_ids.to(torch.int32).contiguous()
    x = x.contiguous()
    rows = dims.tokens * dims.topk
    offsets = ids.new_empty(dims.experts)
    k["histogram"](ids, ids.new_empty(dims.experts), offsets)
    sorted_rows = ids.new_empty(rows)
    row_positions = torch.empty_like(ids)
    k["sort"](ids, offsets, sorted_rows, row_positions)

    up_bs, down_b = form.operands(weights)
    # h (gate | up) is what the backward keeps of the activations:
    # recomputing it would cost a grouped matmul, while act comes back
    # from it elementwise (keeping act too would add R x I). x is read
    # through sorted_rows (a_rows), here and in the backward.
    h = x.new_empty(form.parts, rows, 2 * dims.intermediate // form.parts)
    act = x.new_empty(rows, dims.intermediate)
    if "act" in k:
        # Gate and up launched apart: SwiGLU is a pass of its own.
        for part, b in enumerate(up_bs):
            k["up"](x, sorted_rows, b, offsets, h[part])
        k["act"](h, act)
    else:
        # One launch writes h and, in its epilogue, act.
        k["up"](x, sorted_rows, up_bs[0], offsets, h[0], act)
    y = x.new_empty(rows, dims.hidden)
    k["down"](act, down_b, offsets, y)
    del act
    w32 = topk_weights.to(torch.float32).contiguous()
    out = _unpermute(plan, y, row_positions, w32)
    return out, (sorted_rows, row_positions, offsets, h)


def backward(plan: _Plan, dout: torch.Tensor, x: torch.Tensor,
             topk_weights: torch.Tensor, kept: Sequence[torch.Tensor],
             weights: Sequence[torch.Tensor], need_x: bool,
             need_weights: Sequence[bool]) -> Tuple:
    """(dx, d topk_weights (fp32), *weight gradients) from forward's kept
    tensors; dx and weight gradients not needed are None."""
    sorted_rows, row_positions, offsets, h = kept
    x = x.contiguous()
    w32 = topk_weights.to(torch.float32).contiguous()
    k, form, dims = plan.kernels, plan.form, plan.dims
    need_up, need_down = form.needs(need_weights)
    # Rebuilt, not kept from the forward: under FSDP the weights are
    # gathered again for the backward, perhaps at other addresses.
    up_bs, down_b = form.operands(weights)

    # dout and x are read in expert order through sorted_rows by the
    # grouped matmuls themselves: neither is permuted into a copy.
    dout = dout.contiguous()
    g = x.new_empty(sorted_rows.shape[0], dims.intermediate)
    k["down_dgrad"](dout, sorted_rows, down_b, offsets, g)
    # The SwiGLU backward with the routing weights in one pass: dh, the
    # down weight gradient's operand w_s * act, and d topk_weights.
    dh = torch.empty_like(h)
    act_w = x.new_empty(g.shape)
    d_w32 = torch.empty_like(w32)
    k["act_backward"](g, _gate_up_operand(h), w32, sorted_rows,
                      row_positions, _gate_up_operand(dh), act_w, d_w32)
    del g, h
    d_down = None
    if need_down:
        # dy[p] = w_s[p] dout_s[p] (dout_s = dout in expert order): the
        # weight moved onto act, the smaller operand (I <= H in these
        # models).
        d_down = x.new_empty(dims.experts, dims.hidden, dims.intermediate)
        k["down_wgrad"](dout, sorted_rows, act_w, offsets, d_down)
    del act_w

    # One dgrad output buffer at a time: dxs ([parts, R, H]) is
    # combined into dx before the gate/up weight gradient.
    dx = d_up_w = None
    if need_x:
        rows = dh.shape[1]
        dxs = x.new_empty(form.parts, rows, dims.hidden)
        for part in range(form.parts):
            k["up_dgrad"](dh[part], up_bs[part], offsets, dxs[part])
        positions = row_positions
        if form.parts == 2:
            # Gate and up apart: a token's rows in both halves of dxs,
            # summed by one combine (2k rows a token) rather than an
            # [R, H] add first.
            positions = torch.cat(
                [row_positions,
                 torch.where(row_positions < 0, row_positions,
                             row_positions + rows)], dim=1)
        dx = _unpermute(plan, dxs.view(-1, dims.hidden), positions,
                        w32.new_ones(positions.shape), "dx")
        del dxs
    if need_up:
        d_up_w = x.new_empty(form.parts, dims.experts, dh.shape[2],
                             dims.hidden)
        for part in range(form.parts):
            k["up_wgrad"](dh[part], x, sorted_rows, offsets, d_up_w[part])
    return (dx, d_w32, *form.weight_grads(d_up_w, d_down, need_weights))


class _MoEMLP(torch.autograd.Function):

    @staticmethod
    def forward(ctx, x, topk_ids, topk_weights, plan, *weights):
        out, kept = forward(plan, x, topk_ids, topk_weights, weights)
        ctx.save_for_backward(x, topk_weights, *kept, *weights)
        ctx.plan = plan
        return out

    @staticmethod
    @once_differentiable  # the backward's kernels are not differentiable
    def backward(ctx, dout):
        x, topk_weights, *saved = ctx.saved_tensors
        kept, weights = saved[:4], saved[4:]
        need_x, _, need_topk_weights = ctx.needs_input_grad[:3]
        dx, d_w32, *d_weights = backward(
            ctx.plan, dout, x, topk_weights, kept, weights, need_x,
            ctx.needs_input_grad[4:])
        return (dx, None,
                d_w32.to(topk_weights.dtype) if need_topk_weights else None,
                None, *d_weights)


def check_stacked(fn: str, x, topk_ids, topk_weights, w_gate_up,
                  w_down) -> _Dims:
    """moe_mlp's checks of its stacked form (shapes, dtypes, devices;
    nothing that needs data), for the operator `fn`."""
    T, k, H = _check_routing(fn, x, topk_ids, topk_weights)
    dims = _stacked_dims(x, topk_ids, w_gate_up, w_down, T, k, H)
    _check_devices(fn, None, x, topk_ids, topk_weights)
    return dims


def stacked_plan(x, topk_ids, topk_weights, w_gate_up, w_down) -> _Plan:
    """The stacked form's kernels from the default kernel cache (compiled
    on the first miss): tessel.ops.moe_mlp's."""
    dims = check_stacked("tessel.ops.moe_mlp", x, topk_ids, topk_weights,
                         w_gate_up, w_down)
    return _Plan(_STACKED, _kernels(None, _STACKED, x, dims), dims)


def _apply(form: _Form, bundle, x, topk_ids, topk_weights, dims,
           weights) -> torch.Tensor:
    plan = _Plan(form, _kernels(bundle, form, x, dims), dims)
    return _MoEMLP.apply(x, topk_ids, topk_weights, plan, *weights)


def moe_mlp(x: torch.Tensor, topk_ids: torch.Tensor,
            topk_weights: torch.Tensor,
            w_gate_up: Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]],
            w_down: torch.Tensor,
            bundle: Union[Bundle, KernelCache, None] = None) -> torch.Tensor:
    """The routed experts' output [T, H] for tokens `x` [T, H] routed by
    `topk_ids` [T, k] (int32 or int64; ids outside [0, E) are dropped
    slots) with `topk_weights` [T, k] (float; used in fp32), through the
    experts' stacked weights `w_gate_up` [E, 2I, H] (nn.Linear layout, each
    expert's gate rows then its up rows) and `w_down` [E, H, I], all of x's
    dtype (float32, float16, bfloat16) and device. Differentiable in x,
    topk_weights, w_gate_up and w_down. The bundle must hold the kernels of
    moe_mlp_spec(E, H, I, k, dtype) (the module's description says what
    runs); without one (None or a tessel.KernelCache) they are compiled on
    the first miss (tessel.cache).

    `w_gate_up` may instead be a pair (w_gate, w_up) of [E, I, H] tensors,
    as models that keep gate and up apart hold them: each is read in place
    (no [E, 2I, H] copy), gate and up are then two launches, and both get
    their own gradient."""
    fn = _STACKED.name
    T, k, H = _check_routing(fn, x, topk_ids, topk_weights)
    if isinstance(w_gate_up, (tuple, list)):
        if len(w_gate_up) != 2:
            raise TypeError(f"tessel.torch.{fn}: 'w_gate_up' must be a "
                            f"tensor [E, 2I, H] or a pair (w_gate, w_up) of "
                            f"[E, I, H] tensors, got {len(w_gate_up)} "
                            f"items")
        form, weights = _SPLIT, (*w_gate_up, w_down)
        dims = _split_dims(x, topk_ids, *weights, T, k, H)
    else:
        form, weights = _STACKED, (w_gate_up, w_down)
        dims = _stacked_dims(x, topk_ids, *weights, T, k, H)
    _check_devices(fn, bundle, x, topk_ids, topk_weights)
    return _apply(form, bundle, x, topk_ids, topk_weights, dims, weights)


def moe_mlp_unstacked(x: torch.Tensor, topk_ids: torch.Tensor,
                      topk_weights: torch.Tensor,
                      gate_weights: Sequence[torch.Tensor],
                      up_weights: Sequence[torch.Tensor],
                      down_weights: Sequence[torch.Tensor],
                      bundle: Union[Bundle, KernelCache, None] = None
                      ) -> torch.Tensor:
    """moe_mlp with each expert's weights given on their own, as a model's
    nn.Linear layers hold them: gate_weights[e] and up_weights[e] [I, H],
    down_weights[e] [H, I], each contiguous and 16-byte aligned, read in
    place through pointer tables (no stacked copy). Differentiable in x,
    topk_weights and every weight. The bundle must hold the kernels of
    moe_mlp_spec(E, H, I, k, dtype) (with unstacked=True, the default)."""
    fn = _UNSTACKED.name
    T, k, H = _check_routing(fn, x, topk_ids, topk_weights)
    dims = _unstacked_dims(x, gate_weights, up_weights, down_weights, T, k, H)
    _check_devices(fn, bundle, x, topk_ids, topk_weights)
    return _apply(_UNSTACKED, bundle, x, topk_ids, topk_weights, dims,
                  (*gate_weights, *up_weights, *down_weights))


__all__ = ["moe_mlp", "moe_mlp_spec", "moe_mlp_unstacked"]
