#!/usr/bin/env python3
"""An MoE layer's routed experts, forward + backward: the per-expert loop,
the same fused structure on torch._grouped_mm, and Tessel, in one run on
the same inputs.

Cases (bf16, fresh random top-8 routings, fp32 routing weights; kernels
from <bundles>/moe_layer.tsb, bench/moe_layer_kernels.mlir):
  * the reference MoE, E = 128, H = 2048, I = 512: 4096 and 32768 tokens;
  * DeepSeek-V3's routed experts, E = 256, H = 7168, I = 2048: 4096
    tokens (all 256 experts on one GPU: about 128 rows each).

Methods, each a forward and a backward to every input (x, routing
weights, expert weights) from the same upstream gradient:
  loop:    tessel's reference per-expert loop (moe_reference.py): one
           expert's rows at a time through F.linear, per-expert weight
           tensors (as a model's nn.Linear layers), fp32 combine;
  gr_mm:   the fused structure on torch: stable argsort of the ids, gather,
           torch._grouped_mm for gate/up and down on the stacked weights
           (transposed views), SiLU gate, weighted combine; autograd;
  tessel:  tessel.torch.moe_mlp on the stacked weights;
  split:   tessel.torch.moe_mlp with gate and up apart ([E, I, H] each);
  ptrs:    tessel.torch.moe_mlp_unstacked on per-expert weight views
           (pointer tables: what patch_deepseek_moe runs by default);
  patched: a DeepSeek-style MoE module (an nn.Linear per expert weight,
           the gate returning the layer's routing) given
           patch_deepseek_moe(stack_experts=True), called as a model
           calls it (its stacked parameters then share the layer's
           weights' memory).
Each case first checks every method's output and gradients once against
the loop's (bf16 both: error norm <= 2e-2 of the norm), then times each:
median of --reps fwd+bwd steps after warm-up (the loop: --loop-reps).
TFLOP/s count 18 * rows * H * I (the six GEMMs of fwd+bwd). x faster: the
loop's or gr_mm's time over Tessel's. Then, for the methods of --profile,
each stage's device time (moe_layer_profile.py).

    python3 bench/moe_layer_bench.py [--bundles .carry] [--smoke]

(bench/benchlib.py: the common options.) --smoke: the toy shape (E = 16,
H = 256, I = 128, top-4) of 64 tokens on the host, without gr_mm and the
profile.
"""
import sys

import torch
import torch.nn.functional as F
from torch import nn

import benchlib
import tessel.torch
from moe_layer_common import (SHAPES, errors, expert_views, random_layer,
                              routed_experts_loop)
from moe_layer_profile import print_profile

CASES = [("ref 4k tok", "mlp_ref", 4096), ("ref 32k tok", "mlp_ref", 32768),
         ("DSv3 4k tok", "mlp_dsv3", 4096)]
SMOKE_CASES = [("toy 64 tok", "mlp_toy", 64)]
METHODS = ("loop", "gr_mm", "tessel", "split", "ptrs", "patched")
NORM_REL = 2e-2


def grouped_mm_layer(x, ids, weights, w_gate_up, w_down):
    """The fused structure on torch ops and torch._grouped_mm, no host
    synchronisation: rows (token, slot) sorted by expert, two grouped
    matmuls, the weighted combine."""
    T, k = ids.shape
    E, inter = w_gate_up.shape[0], w_down.shape[2]
    flat = ids.reshape(-1)
    order = torch.argsort(flat, stable=True)
    counts = torch.zeros(E, dtype=torch.int32, device=x.device)
    counts.scatter_add_(0, flat, torch.ones_like(flat, dtype=torch.int32))
    offs = counts.cumsum(0, dtype=torch.int32)
    h = torch._grouped_mm(x[order // k], w_gate_up.transpose(1, 2),
                          offs=offs)
    y = torch._grouped_mm(F.silu(h[:, :inter]) * h[:, inter:],
                          w_down.transpose(1, 2), offs=offs)
    position = torch.empty_like(order)
    position[order] = torch.arange(order.numel(), device=x.device)
    out = (y[position].view(T, k, -1).float() * weights.unsqueeze(-1)).sum(1)
    return out.to(x.dtype)


class FixedRouting(nn.Module):
    """A gate that returns the layer's routing."""

    def __init__(self, ids, weights):
        super().__init__()
        self.routing = (ids, weights)

    def forward(self, hidden_states):
        return self.routing


class Expert(nn.Module):
    """A DeepSeek MLP whose Linear weights are the given tensors (views,
    no copy)."""

    def __init__(self, gate_up, down):
        super().__init__()
        inter = down.shape[1]
        for name, w in (("gate_proj", gate_up[:inter]),
                        ("up_proj", gate_up[inter:]), ("down_proj", down)):
            layer = nn.Linear(w.shape[1], w.shape[0], bias=False,
                              device="meta")
            layer.weight = nn.Parameter(w)
            setattr(self, name, layer)


def patched_module(layer, weights, bundle):
    """The DeepSeek-style module of `layer`, patched with stacked experts;
    its experts' Linear weights are views of the layer's (no copy), and so
    are the stacked parameters once patched (the patch's copy freed)."""
    module = nn.Module()
    module.gate = FixedRouting(layer.ids, weights)
    module.num_experts_per_tok = layer.ids.shape[1]
    module.experts = nn.ModuleList(
        Expert(gu, down) for gu, down in zip(layer.w_gate_up.detach(),
                                             layer.w_down.detach()))
    tessel.torch.patch_deepseek_moe(module, bundle, stack_experts=True)
    module.experts.gate_up_proj = nn.Parameter(layer.w_gate_up.detach())
    module.experts.down_proj = nn.Parameter(layer.w_down.detach())
    return module


class Methods:
    """The six methods on one layer's inputs, each as a fwd+bwd step that
    leaves its gradients in `grads()`."""

    def __init__(self, layer, bundle):
        self.layer = layer
        self.x = layer.x.requires_grad_()
        self.w = layer.weights.requires_grad_()
        self.gu = layer.w_gate_up.requires_grad_()
        self.down = layer.w_down.requires_grad_()
        inter = layer.w_down.shape[2]
        # Leaves viewing the stacked weights: per-expert tensors, no copy.
        self.gu_views = expert_views(layer.w_gate_up)
        self.down_views = expert_views(layer.w_down)
        self.gate_views = expert_views(layer.w_gate_up, slice(0, inter))
        self.up_views = expert_views(layer.w_gate_up, slice(inter, None))
        # Gate and up as two stacked tensors, as some models keep them.
        self.gate = layer.w_gate_up[:, :inter].detach().clone() \
            .requires_grad_()
        self.up = layer.w_gate_up[:, inter:].detach().clone().requires_grad_()
        ids, x, w = layer.ids, self.x, self.w
        self.patched = patched_module(layer, w, bundle)
        self.calls = {
            "loop": lambda: routed_experts_loop(x, ids, w, self.gu_views,
                                                self.down_views),
            "gr_mm": lambda: grouped_mm_layer(x, ids, w, self.gu, self.down),
            "tessel": lambda: tessel.torch.moe_mlp(x, ids, w, self.gu,
                                                   self.down, bundle),
            "split": lambda: tessel.torch.moe_mlp(
                x, ids, w, (self.gate, self.up), self.down, bundle),
            "ptrs": lambda: tessel.torch.moe_mlp_unstacked(
                x, ids, w, self.gate_views, self.up_views, self.down_views,
                bundle),
            "patched": lambda: self.patched(x),
        }

    def leaves(self):
        return [self.x, self.w, self.gu, self.down, self.gate, self.up,
                *self.patched.parameters(),
                *self.gu_views,
                *self.down_views, *self.gate_views, *self.up_views]

    def step(self, name):
        for t in self.leaves():
            t.grad = None
        out = self.calls[name]()
        out.backward(self.layer.dout)
        return out.detach()

    def grads(self, name):
        """x, routing-weight, stacked gate/up and down gradients."""
        def stacked(views):
            return torch.stack([v.grad for v in views])
        if name == "loop":
            gu, down = stacked(self.gu_views), stacked(self.down_views)
        elif name == "split":
            gu = torch.cat([self.gate.grad, self.up.grad], dim=1)
            down = self.down.grad
        elif name == "ptrs":
            gu = torch.cat([stacked(self.gate_views),
                            stacked(self.up_views)], dim=1)
            down = stacked(self.down_views)
        elif name == "patched":
            experts = self.patched.experts
            gu, down = experts.gate_up_proj.grad, experts.down_proj.grad
        else:
            gu, down = self.gu.grad, self.down.grad
        return [self.x.grad, self.w.grad, gu, down]


def check(bench, methods, title):
    """Every method's output and gradients against the loop's; a wrong
    Tessel method is a failure, a wrong peer a note."""
    ref = [methods.step("loop")] + methods.grads("loop")
    for name in methods.calls:
        if name == "loop":
            continue
        got = [methods.step(name)] + methods.grads(name)
        worst = [errors(a, e) for a, e in zip(got, ref)]
        good = all(norm <= NORM_REL for _, norm in worst)
        detail = "error norms " + ", ".join(
            f"{what} {norm:.1e}" for what, (_, norm) in
            zip(("out", "dx", "dw", "dWgu", "dWd"), worst))
        if name == "gr_mm":
            bench.note(f"{title}: gr_mm vs loop, {detail}"
                       f"{'' if good else ' (beyond 2e-2!)'}")
        else:
            bench.check(f"{title}: {name} vs loop", good, detail)
        del got


def run_case(bench, args, bundle, title, shape, tokens):
    """Checks and times every method on one layer (its tensors freed on
    return); {method: median fwd+bwd ms}."""
    methods = Methods(random_layer(shape, tokens, bench.gen), bundle)
    if bench.cuda_only("gr_mm (torch._grouped_mm)"):
        del methods.calls["gr_mm"]
    check(bench, methods, title)
    ms = {name: bench.time_ms(
        lambda: methods.step(name),
        reps=args.loop_reps if name == "loop" else None,
        warmup=1 if name == "loop" or bench.smoke else 5)
        for name in methods.calls}
    profiled = [m for m in args.profile.split(",") if m in methods.calls]
    if profiled and not bench.cuda_only("the profile (CUDA activity)"):
        for name in profiled:
            print_profile(title, name, methods.calls[name],
                          lambda: methods.step(name), ms[name])
    return ms


def main():
    parser = benchlib.parser(__doc__)
    parser.add_argument("--loop-reps", type=int, default=3)
    parser.add_argument("--cases", default=",".join(c[0] for c in CASES),
                        help="comma-separated case titles to run")
    parser.add_argument("--profile", default="gr_mm,tessel",
                        help="comma-separated methods whose per-stage "
                        "device time is printed (none: '')")
    args = parser.parse_args()
    bench = benchlib.Bench(args, "moe_layer_bench")
    bundle = bench.bundle("moe_layer")
    cases = SMOKE_CASES if bench.smoke else \
        [c for c in CASES if c[0] in args.cases.split(",")]
    rows = []
    for title, shape_name, tokens in cases:
        shape = SHAPES[shape_name]
        ms = run_case(bench, args, bundle, title, shape, tokens)
        flops = 18.0 * tokens * shape.topk * shape.hidden * shape.intermediate
        rows.append((title, shape, tokens, ms, flops))
        for name, label in (("tessel", "moe_mlp"), ("split", "moe_mlp split"),
                            ("ptrs", "moe_mlp_unstacked"),
                            ("patched", "patched module, stacked")):
            case = f"{title} fwd+bwd, {label}"
            if name == "tessel":
                bench.row(case, "ms", ms[name], "per-expert loop",
                          ms["loop"])
            bench.row(case, "ms", ms[name], "torch._grouped_mm layer",
                      ms.get("gr_mm"))
        if not bench.smoke:
            torch.cuda.empty_cache()

    print("\nfwd+bwd of the routed experts, ms (TFLOP/s); x faster: the "
          "other's time over Tessel's")
    print(f"{'case':12s} {'E':>4s} {'H':>5s} {'I':>5s} {'tokens':>6s} " +
          " ".join(f"{m:>15s}" for m in METHODS) +
          f" {'vs loop':>8s} {'vs gr_mm':>8s} {'ptrs vs gr_mm':>13s}"
          f" {'patched/tessel':>14s}")
    for title, shape, tokens, ms, flops in rows:
        cells = " ".join(f"{ms[n]:7.2f} ({flops / ms[n] / 1e9:5.0f})"
                         if n in ms else f"{'-':>15s}" for n in METHODS)
        gr_mm = ms.get("gr_mm")

        def faster(ms_of, width):
            return f"{gr_mm / ms_of:{width}.2f}x" if gr_mm else \
                f"{'-':>{width + 1}}"

        print(f"{title:12s} {shape.experts:4d} {shape.hidden:5d} "
              f"{shape.intermediate:5d} {tokens:6d} {cells} "
              f"{ms['loop'] / ms['tessel']:7.1f}x "
              f"{faster(ms['tessel'], 7)} {faster(ms['ptrs'], 12)} "
              f"{ms['patched'] / ms['tessel']:13.2f}x")
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
