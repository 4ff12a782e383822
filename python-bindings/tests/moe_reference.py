"""What tessel.torch's MoE functions are checked against, here, in the GPU
suite (gpu/test_moe.py, gpu/test_moe_fsdp.py) and by
bench/moe_layer_bench.py:

  * routed_experts_loop: the routed experts one at a time, differentiable
    by torch autograd (the per-expert Python loop);
  * ToyModel: a small DeepSeek-V2-style MoE language model, so that nothing
    needs transformers. Its MoE block has the modeling code's attribute
    layout (gate -> (topk_idx, topk_weight, aux_loss), experts of
    gate_proj/up_proj/down_proj, shared_experts, num_experts_per_tok) and
    its forward is DeepSeek-V2's training path, the per-expert loop that
    tessel.torch.patch_deepseek_moe replaces. Attention is left out: a
    linear token mixer stands in for it (the MoE is what is under test).
"""

from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn


def routed_experts_loop(x, ids, weights, w_gate_up, w_down):
    """out [T, H] = sum_j weights[t, j] * expert_{ids[t, j]}(x[t]), one
    expert at a time (what tessel.torch.moe_mlp computes), summed in fp32
    (float64 for float64 x) and returned in x's dtype; ids outside [0, E)
    match no expert. w_gate_up [E, 2I, H] and w_down [E, H, I] may be
    stacked tensors or lists of E matrices (a model's per-expert weights)."""
    inter = w_down[0].shape[1]
    out = torch.zeros(x.shape, device=x.device,
                      dtype=torch.promote_types(x.dtype, torch.float32))
    for e in range(len(w_gate_up)):
        token, slot = torch.where(ids == e)
        if token.numel() == 0:
            continue
        h = F.linear(x[token], w_gate_up[e])
        y = F.linear(F.silu(h[:, :inter]) * h[:, inter:], w_down[e])
        out = out.index_add(0, token, y.to(out.dtype) *
                            weights[token, slot, None].to(out.dtype))
    return out.to(x.dtype)


@dataclass
class ToyConfig:
    vocab_size: int = 64
    hidden_size: int = 19
    moe_intermediate_size: int = 11
    n_routed_experts: int = 5
    num_experts_per_tok: int = 3
    n_shared_experts: Optional[int] = 1
    num_layers: int = 2
    aux_loss_alpha: float = 0.01  # 0: the gate returns no aux loss
    hidden_act: str = "silu"


# The toy model of the GPU training checks: 3 MoE blocks of 16 experts
# (top-4) and a shared expert, H = 256, I = 128 (bench/moe_layer_kernels.mlir
# holds its kernels as mlp_toy, the MoE benchmark's --smoke shape).
GPU_TOY = ToyConfig(vocab_size=512, hidden_size=256, moe_intermediate_size=128,
                    n_routed_experts=16, num_experts_per_tok=4,
                    n_shared_experts=1, num_layers=3, aux_loss_alpha=0.01)


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return self.weight * (x.float() * torch.rsqrt(variance + self.eps)
                              ).to(x.dtype)


class MLP(nn.Module):
    def __init__(self, hidden: int, intermediate: int):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Gate(nn.Module):
    """Softmax top-k routing in fp32, normalised weights, and DeepSeek-V2's
    expert-balance loss while training."""

    def __init__(self, config: ToyConfig):
        super().__init__()
        self.top_k = config.num_experts_per_tok
        self.alpha = config.aux_loss_alpha
        self.weight = nn.Parameter(torch.empty(config.n_routed_experts,
                                               config.hidden_size))
        nn.init.kaiming_uniform_(self.weight, a=5 ** 0.5)

    def forward(self, hidden_states):
        h = hidden_states.reshape(-1, hidden_states.shape[-1])
        scores = F.linear(h.float(), self.weight.float()).softmax(dim=-1)
        topk_weight, topk_idx = torch.topk(scores, self.top_k, dim=-1)
        topk_weight = topk_weight / topk_weight.sum(dim=-1, keepdim=True)
        aux_loss = None
        if self.training and self.alpha > 0:
            experts = scores.shape[-1]
            load = F.one_hot(topk_idx.view(-1), experts).float().mean(0)
            aux_loss = (scores.mean(0) * load * experts).sum() * self.alpha
        return topk_idx, topk_weight, aux_loss


class AddAuxLoss(torch.autograd.Function):
    """y unchanged; the aux loss gets gradient 1 in the backward."""

    @staticmethod
    def forward(ctx, y, loss):
        ctx.dtype = loss.dtype
        return y

    @staticmethod
    def backward(ctx, dy):
        return dy, torch.ones((), dtype=ctx.dtype, device=dy.device)


class MoE(nn.Module):
    def __init__(self, config: ToyConfig):
        super().__init__()
        self.config = config
        self.num_experts_per_tok = config.num_experts_per_tok
        self.experts = nn.ModuleList(
            MLP(config.hidden_size, config.moe_intermediate_size)
            for _ in range(config.n_routed_experts))
        self.gate = Gate(config)
        self.shared_experts = None
        if config.n_shared_experts:
            self.shared_experts = MLP(
                config.hidden_size,
                config.moe_intermediate_size * config.n_shared_experts)

    def forward(self, hidden_states):
        """DeepSeek-V2's training path: each (token, slot) row through its
        expert, one expert at a time."""
        topk_idx, topk_weight, aux_loss = self.gate(hidden_states)
        shape = hidden_states.shape
        x = hidden_states.reshape(-1, shape[-1])
        x = x.repeat_interleave(self.num_experts_per_tok, dim=0)
        flat_idx = topk_idx.view(-1)
        y = torch.empty_like(x)
        for i, expert in enumerate(self.experts):
            y[flat_idx == i] = expert(x[flat_idx == i])
        y = (y.view(*topk_weight.shape, -1) * topk_weight.unsqueeze(-1)
             ).sum(dim=1).to(x.dtype).view(shape)
        if aux_loss is not None:
            y = AddAuxLoss.apply(y, aux_loss)
        if self.shared_experts is not None:
            y = y + self.shared_experts(hidden_states)
        return y


class Block(nn.Module):
    def __init__(self, config: ToyConfig):
        super().__init__()
        self.input_norm = RMSNorm(config.hidden_size)
        self.mixer = nn.Linear(config.hidden_size, config.hidden_size,
                               bias=False)
        self.post_norm = RMSNorm(config.hidden_size)
        self.mlp = MoE(config)

    def forward(self, x):
        x = x + self.mixer(self.input_norm(x))
        return x + self.mlp(self.post_norm(x))


class ToyModel(nn.Module):
    def __init__(self, config: ToyConfig):
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(Block(config)
                                    for _ in range(config.num_layers))
        self.norm = RMSNorm(config.hidden_size)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size,
                                 bias=False)

    def forward(self, tokens):
        h = self.embed(tokens)
        for layer in self.layers:
            h = layer(h)
        return self.lm_head(self.norm(h))


def loss_of(model: nn.Module, tokens: torch.Tensor,
            targets: torch.Tensor) -> torch.Tensor:
    logits = model(tokens)
    return F.cross_entropy(logits.float().view(-1, logits.shape[-1]),
                           targets.view(-1))
