"""What the MoE layer benchmarks share (moe_layer_bench.py,
moe_glue_bench.py, gen_moe_layer_kernels.py): the MoE shapes whose kernels
bench/moe_layer_kernels.mlir holds, random layer inputs and comparisons.

The reference code (the per-expert loop, the toy DeepSeek-style model) is
python-bindings/tests/moe_reference.py, which the tests use too.
"""
import os
import sys
from typing import NamedTuple

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python-bindings", "tests"))
from moe_reference import GPU_TOY, routed_experts_loop  # noqa: E402

__all__ = ["SHAPES", "Layer", "Shape", "errors", "expert_views",
           "random_layer", "routed_experts_loop"]


class Shape(NamedTuple):
    experts: int
    hidden: int
    intermediate: int
    topk: int


# Kernel-name prefix in moe_layer_kernels.mlir -> MoE shape.
SHAPES = {
    "mlp_ref": Shape(128, 2048, 512, 8),    # the reference MoE configuration
    "mlp_dsv3": Shape(256, 7168, 2048, 8),  # DeepSeek-V3's routed experts
    # The GPU suite's toy DeepSeek-style model; the benchmarks' --smoke.
    "mlp_toy": Shape(GPU_TOY.n_routed_experts, GPU_TOY.hidden_size,
                     GPU_TOY.moe_intermediate_size,
                     GPU_TOY.num_experts_per_tok),
}


class Layer(NamedTuple):
    """The inputs of one MoE layer call (bf16 tokens and weights, fp32
    routing weights) and an upstream gradient."""
    x: torch.Tensor             # [T, H]
    ids: torch.Tensor           # [T, k] int64, as torch.topk gives them
    weights: torch.Tensor       # [T, k] fp32
    w_gate_up: torch.Tensor     # [E, 2I, H]
    w_down: torch.Tensor        # [E, H, I]
    dout: torch.Tensor          # [T, H]


def random_layer(shape: Shape, tokens: int, gen: torch.Generator,
                 dtype=torch.bfloat16) -> Layer:
    """Fresh random inputs: each token routed to k distinct experts (top-k
    of random scores), weights the softmax of the chosen scores. (Empty
    experts and dropped slots are the GPU suite's cases, test_moe.py.)"""
    E, H, I, k = shape
    dev = gen.device
    scores = torch.rand(tokens, E, device=dev, generator=gen)
    top, ids = scores.topk(k, dim=1)
    weights = torch.softmax(top * 4, dim=1)

    def randn(*size, scale=1.0):
        # Drawn in `dtype`: an fp32 draw of DeepSeek-V3's stacked weights
        # would be 30 GiB.
        return torch.randn(*size, device=dev, generator=gen,
                           dtype=dtype).mul_(scale)

    return Layer(randn(tokens, H), ids, weights,
                 randn(E, 2 * I, H, scale=H ** -0.5),
                 randn(E, H, I, scale=I ** -0.5), randn(tokens, H))


def expert_views(w: torch.Tensor, rows: slice = slice(None)):
    """Leaf tensors viewing each expert's matrix of stacked weights (rows
    `rows` of it): a model's per-expert parameters without a copy."""
    return [m.requires_grad_() for m in w.detach()[:, rows].unbind(0)]


def errors(actual: torch.Tensor, expected: torch.Tensor, chunk=1 << 26):
    """(largest error / largest magnitude, error norm / norm), in fp32 (both
    infinite if `actual` is not finite), a chunk of elements at a time:
    DeepSeek-V3's weight gradients are 22 GiB in bf16, and an fp32 copy of
    one would not fit beside them."""
    a, e = actual.reshape(-1), expected.reshape(-1)
    worst = largest = diff_sq = ref_sq = 0.0
    for start in range(0, a.numel(), chunk):
        ac = a[start:start + chunk].float()
        ec = e[start:start + chunk].float()
        diff = ac - ec
        if not torch.isfinite(ac).all():
            return float("inf"), float("inf")
        worst = max(worst, diff.abs().max().item())
        largest = max(largest, ec.abs().max().item())
        diff_sq += diff.double().square().sum().item()
        ref_sq += ec.double().square().sum().item()
    return (worst / max(largest, 1e-30),
            (diff_sq ** 0.5) / max(ref_sq ** 0.5, 1e-30))
