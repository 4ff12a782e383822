"""A training forward for DeepSeek-V2/V3-style MoE modules, without
editing their modeling file; tessel.torch exports it.

    model = AutoModelForCausalLM.from_pretrained(..., trust_remote_code=True)
    tessel.torch.patch_deepseek_moe(model, bundle)   # every MoE block in it

The public DeepSeek-V3 modeling code defines the MoE block's output only
when not training (and computes it under no_grad); DeepSeek-V2's training
path loops over the experts in Python. The patched forward runs the routed
experts, whatever the module's mode, in one of two ways:
  * by default through tessel.torch.moe_mlp_unstacked: the experts' own
    nn.Linear weights are read in place through pointer tables (the
    model's parameters are untouched; gradients flow to each Linear);
  * with stack_experts=True through tessel.torch.moe_mlp on stacked
    weights: each `experts` list gets two parameters, `gate_up_proj`
    [E, 2I, H] (each expert's gate rows, then its up rows) and
    `down_proj` [E, H, I], which take the experts' weights over (the
    layout of transformers' fused MoE experts). The experts' Linear
    layers keep a `weight` that is a view of them, so an expert can still
    be called on its own.
    This is the form for training: autograd then sees 2 weight leaves per
    MoE module instead of 3E, whose host cost per leaf (2.9 ms a step for
    384 leaves on the H200, docs/performance.md) exceeds the kernels'
    time at 4096 tokens. It replaces the model's expert parameters: patch
    before making the optimizer (one made before holds the replaced
    tensors, which no longer get gradients). The state dict then has the
    stacked keys; a per-expert state dict (the checkpoint the model
    loaded) still loads, stacked on the way in.

What a module needs to be patched (the DeepSeek-V2/V3 layout):
  * `gate`: called on the hidden states [..., H], returns (topk_idx [T, k],
    topk_weight [T, k]) or (topk_idx, topk_weight, aux_loss);
  * `experts`: an nn.ModuleList of MLPs with `gate_proj`, `up_proj` [I, H]
    and `down_proj` [H, I] nn.Linear layers without bias, computing
    down_proj(silu(gate_proj(x)) * up_proj(x));
  * optionally `shared_experts`, a module added to the output;
  * top-k from `num_experts_per_tok` on the module or its `config`.

An aux_loss from the gate is attached as DeepSeek-V2's AddAuxiliaryLoss
does: the output is unchanged and the loss gets gradient 1 in the backward.

Under FSDP (FULL_SHARD) the model must be wrapped with use_orig_params=True
(the experts' weights, stacked or not, are then views of the gathered flat
parameter, which the forward reads through the module attributes on every
call) and
auto-wrapped per transformer block, so that a block's experts are gathered
together for its forward and again for its backward (docs/moe.md).
"""

import types
from typing import List

import torch
from torch import nn

from .moe import moe_mlp, moe_mlp_unstacked
from .runtime import Bundle

# Each expert Linear, the stacked parameter that takes its weight over, and
# which half of the expert's rows there is its (None: all of them).
_STACKED_AS = {"gate_proj": ("gate_up_proj", 0),
               "up_proj": ("gate_up_proj", 1),
               "down_proj": ("down_proj", None)}


class _AttachAuxLoss(torch.autograd.Function):
    """y unchanged; in the backward, the auxiliary loss gets gradient 1,
    as if it had been added to the loss."""

    @staticmethod
    def forward(ctx, y, aux_loss):
        ctx.aux = (aux_loss.shape, aux_loss.dtype, aux_loss.device)
        return y

    @staticmethod
    def backward(ctx, dy):
        shape, dtype, device = ctx.aux
        aux_grad = None
        if ctx.needs_input_grad[1]:
            aux_grad = torch.ones(shape, dtype=dtype, device=device)
        return dy, aux_grad


def _routed_forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
    routing = self.gate(hidden_states)
    topk_idx, topk_weight = routing[0], routing[1]
    aux_loss = routing[2] if len(routing) > 2 else None
    if topk_idx.shape[-1] != self.tessel_topk:
        raise ValueError(f"tessel.torch.patch_deepseek_moe: the gate routed "
                         f"each token to {topk_idx.shape[-1]} experts, but "
                         f"num_experts_per_tok is {self.tessel_topk}")
    shape = hidden_states.shape
    x = hidden_states.reshape(-1, shape[-1])
    # Read from the modules on each call: under FSDP they are fresh views.
    experts = self.experts
    if _is_stacked(experts):
        y = moe_mlp(x, topk_idx, topk_weight, experts.gate_up_proj,
                    experts.down_proj, self.tessel_bundle)
    else:
        y = moe_mlp_unstacked(
            x, topk_idx, topk_weight, [e.gate_proj.weight for e in experts],
            [e.up_proj.weight for e in experts],
            [e.down_proj.weight for e in experts], self.tessel_bundle)
    y = y.view(shape)
    if aux_loss is not None:
        y = _AttachAuxLoss.apply(y, aux_loss)
    shared = getattr(self, "shared_experts", None)
    if shared is not None:
        y = y + shared(hidden_states)
    return y


def _is_deepseek_moe(module: nn.Module) -> bool:
    experts = getattr(module, "experts", None)
    return (hasattr(module, "gate") and isinstance(experts, nn.ModuleList)
            and len(experts) > 0 and hasattr(experts[0], "gate_proj"))


def _topk(module: nn.Module, name: str) -> int:
    for owner in (module, getattr(module, "config", None)):
        k = getattr(owner, "num_experts_per_tok", None)
        if k is not None:
            return int(k)
    raise ValueError(f"tessel.torch.patch_deepseek_moe: '{name}' has no "
                     f"num_experts_per_tok (on the module or its config)")


def _check_experts(module: nn.Module, name: str):
    """Every expert is a bias-free SiLU-gated MLP of the same shapes."""
    act = getattr(getattr(module, "config", None), "hidden_act", "silu")
    if act not in ("silu", "swish"):
        raise ValueError(f"tessel.torch.patch_deepseek_moe: '{name}' uses "
                         f"hidden_act '{act}'; the kernels compute silu")
    shapes = None
    for e, expert in enumerate(module.experts):
        layers = [getattr(expert, p, None)
                  for p in ("gate_proj", "up_proj", "down_proj")]
        where = f"'{name}.experts.{e}'"
        if not all(isinstance(layer, nn.Linear) for layer in layers):
            raise ValueError(f"tessel.torch.patch_deepseek_moe: {where} "
                             f"needs gate_proj, up_proj and down_proj "
                             f"nn.Linear layers")
        if any(layer.bias is not None for layer in layers):
            raise ValueError(f"tessel.torch.patch_deepseek_moe: {where} has "
                             f"a bias; the kernels have none")
        these = [tuple(layer.weight.shape) for layer in layers]
        shapes = shapes or these
        if these != shapes or shapes[0] != shapes[1] or (
                shapes[2] != shapes[0][::-1]):
            raise ValueError(f"tessel.torch.patch_deepseek_moe: {where} has "
                             f"weights {these}; every expert needs gate_proj "
                             f"and up_proj [I, H] and down_proj [H, I], as "
                             f"the first has ({shapes})")


def _is_stacked(experts: nn.ModuleList) -> bool:
    return getattr(experts, "tessel_stacked", False)


class _StackedExpertLinear(nn.Linear):
    """An expert's nn.Linear whose weight lives in its experts list's
    stacked parameter: `weight` is a view of it, read anew on each access
    (FSDP replaces the stacked parameter by a view of its gathered flat
    parameter), through which gradients reach the stacked parameter."""

    @property
    def weight(self):
        experts, expert, name, half = self._tessel_stacked
        rows = getattr(experts, name)[expert]
        return rows if half is None else rows.chunk(2)[half]


def _stack_experts(experts: nn.ModuleList, name: str):
    """Moves the experts' weights into `gate_up_proj` [E, 2I, H] and
    `down_proj` [E, H, I] parameters of `experts` (a copy; the per-expert
    parameters are dropped), leaving each Linear a view of its part."""
    layers = [[getattr(e, p) for p in _STACKED_AS] for e in experts]
    for e, row in enumerate(layers):
        for layer in row:
            if type(layer) is not nn.Linear:
                raise ValueError(
                    f"tessel.torch.patch_deepseek_moe: '{name}.experts.{e}' "
                    f"has a {type(layer).__name__}; stack_experts=True "
                    f"takes plain nn.Linear layers")
    weights = [layer.weight for row in layers for layer in row]
    first = weights[0]
    for w in weights:
        if (w.dtype, w.device, w.requires_grad) != (
                first.dtype, first.device, first.requires_grad):
            raise ValueError(
                f"tessel.torch.patch_deepseek_moe: '{name}.experts' mixes "
                f"{w.dtype} on {w.device} (requires_grad={w.requires_grad}) "
                f"with {first.dtype} on {first.device} (requires_grad="
                f"{first.requires_grad}); stack_experts=True needs one "
                f"dtype, device and requires_grad for all of them")
    with torch.no_grad():
        gate_up = torch.stack([torch.cat([row[0].weight, row[1].weight])
                               for row in layers])
        down = torch.stack([row[2].weight for row in layers])
    for e, row in enumerate(layers):
        for layer, (param, half) in zip(row, _STACKED_AS.values()):
            del layer.weight
            layer.__class__ = _StackedExpertLinear
            layer._tessel_stacked = (experts, e, param, half)
    experts.gate_up_proj = nn.Parameter(gate_up,
                                        requires_grad=first.requires_grad)
    experts.down_proj = nn.Parameter(down, requires_grad=first.requires_grad)
    experts.tessel_stacked = True
    experts._register_load_state_dict_pre_hook(_stack_on_load,
                                               with_module=True)


def _stack_on_load(experts, state_dict, prefix, local_metadata, strict,
                   missing_keys, unexpected_keys, error_msgs):
    """A state dict with the experts' own weights (a checkpoint of the
    model before stacking) loads into the stacked parameters."""
    keys = [[f"{prefix}{e}.{p}.weight" for p in _STACKED_AS]
            for e in range(len(experts))]
    found = sum(k in state_dict for row in keys for k in row)
    if found == 0:
        return
    if found < 3 * len(experts):
        error_msgs.append(
            f"tessel.torch.patch_deepseek_moe: the state dict has {found} of "
            f"the {3 * len(experts)} per-expert weights of '{prefix}*'; "
            f"experts stacked by stack_experts=True load all of them or "
            f"none ('{prefix}gate_up_proj' and '{prefix}down_proj' instead)")
        return
    rows = [[state_dict.pop(k) for k in row] for row in keys]
    state_dict[prefix + "gate_up_proj"] = torch.stack(
        [torch.cat(row[:2]) for row in rows])
    state_dict[prefix + "down_proj"] = torch.stack([row[2] for row in rows])


def patch_deepseek_moe(model: nn.Module, bundle: Bundle,
                       stack_experts: bool = False) -> List[str]:
    """Gives every DeepSeek-V2/V3-style MoE module in `model` (itself
    included) a forward through Tessel's kernels of `bundle` (the module's
    description says what is required), by setting the module's `forward`;
    returns the patched modules' names ('' for `model` itself). The bundle
    needs the kernels of moe_mlp_spec(E, H, I, k, dtype) for each MoE
    shape in the model; they are looked up on each call, so the model may
    change dtype or device after patching. With `stack_experts`, the
    experts' weights move into stacked parameters first (the module's
    description: faster, but patch before making the optimizer)."""
    patched = []
    for name, module in model.named_modules():
        if not _is_deepseek_moe(module):
            continue
        _check_experts(module, name)
        module.tessel_topk = _topk(module, name)
        if stack_experts and not _is_stacked(module.experts):
            _stack_experts(module.experts, name)
        module.tessel_bundle = bundle
        module.forward = types.MethodType(_routed_forward, module)
        patched.append(name)
    if not patched:
        raise ValueError(f"tessel.torch.patch_deepseek_moe: no DeepSeek-"
                         f"style MoE module (with 'gate' and an nn.ModuleList "
                         f"'experts' of gate_proj/up_proj/down_proj MLPs) in "
                         f"{type(model).__name__}")
    return patched


__all__ = ["patch_deepseek_moe"]
