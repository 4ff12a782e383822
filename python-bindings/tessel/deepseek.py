"""A training forward for DeepSeek-V2/V3-style MoE modules, without
editing their modeling file; tessel.torch exports it.

    model = AutoModelForCausalLM.from_pretrained(..., trust_remote_code=True)
    tessel.torch.patch_deepseek_moe(model, bundle)   # every MoE block in it

The public DeepSeek-V3 modeling code defines the MoE block's output only
when not training (and computes it under no_grad); DeepSeek-V2's training
path loops over the experts in Python. The patched forward runs the routed
experts through tessel.torch.moe_mlp_unstacked: the experts' own
nn.Linear weights are read in place through pointer tables (no stacked
copy; gradients flow to each Linear), whatever the module's mode.

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
(the experts' weights are then views of the gathered flat parameter, which
the forward reads through their module attributes on every call) and
auto-wrapped per transformer block, so that a block's experts are gathered
together for its forward and again for its backward (docs/moe.md).
"""

import types
from typing import List

import torch
from torch import nn

from .moe import moe_mlp_unstacked
from .runtime import Bundle


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
    # Read from the modules on each call: under FSDP they are fresh views.
    experts = self.experts
    y = moe_mlp_unstacked(
        hidden_states.reshape(-1, shape[-1]), topk_idx, topk_weight,
        [e.gate_proj.weight for e in experts],
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


def patch_deepseek_moe(model: nn.Module, bundle: Bundle) -> List[str]:
    """Gives every DeepSeek-V2/V3-style MoE module in `model` (itself
    included) a forward through Tessel's kernels of `bundle` (the module's
    description says what is required), by setting the module's `forward`;
    returns the patched modules' names ('' for `model` itself). The bundle
    needs the kernels of moe_mlp_spec(E, H, I, k, dtype) for each MoE
    shape in the model; they are looked up on each call, so the model may
    change dtype or device after patching."""
    patched = []
    for name, module in model.named_modules():
        if not _is_deepseek_moe(module):
            continue
        _check_experts(module, name)
        module.tessel_topk = _topk(module, name)
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
