#!/usr/bin/env python3
"""Check tessel.torch's MoE layer on an NVIDIA GPU: the fused forward and
backward against the per-expert loop in fp32, and a short training run of
a DeepSeek-style model patched against the same model's own loop.

  PATH=/usr/local/cuda/bin:$PATH build/bin/tessel-aot \\
      bench/moe_layer_kernels.mlir --targets=sm80,sm90 -o moe_layer.tsb
  PYTHONPATH=<tessel package> python3 bench/moe_layer_check.py moe_layer.tsb

(bench/moe_gpu_check.sh installs the package and runs this.)

1. Layer: E = 128, H = 2048, I = 512, top-8 of 4096 tokens, bf16 (fresh
   random data): moe_mlp (stacked weights), moe_mlp with gate and up
   apart ([E, I, H] each, "moe_mlp split") and moe_mlp_unstacked
   (per-expert views through pointer tables), output and the gradients of
   x, topk_weights, w_gate_up and w_down against torch autograd of the
   per-expert loop run in fp32 on the same (bf16) values. PASS: largest
   error <= 3e-2 of the largest magnitude, and error norm <= 1e-2 of the
   norm. Then with 16 experts never routed and 2% of the slots dropped
   (id -1): the same, plus the empty experts' weight gradients and the
   dropped slots' routing-weight gradients exactly zero.
2. The same layer twice: outputs and gradients bitwise equal
   (deterministic); and fwd+bwd under torch.cuda.set_sync_debug_mode
   ("error"): no host synchronisation.
3. Training: the toy DeepSeek-style model (moe_layer_common.TOY, bf16,
   random init) and a copy given tessel.torch.patch_deepseek_moe, 5 AdamW
   steps on the same batches (8 x 256 tokens): the loss of each step
   (PASS: relative difference <= 0.2% at every step) and
   torch.cuda.max_memory_allocated of each run.

Prints one PASS/FAIL line per check and ALL PASS or SOME FAILED; exits 1
if a check failed.
"""
import sys

import torch

import tessel.torch
from moe_layer_common import (SHAPES, TOY, ToyModel, errors, expert_views,
                              gpu_bundle, loss_of, random_layer,
                              routed_experts_loop, script_parser)

MAX_REL, NORM_REL, LOSS_REL = 3e-2, 1e-2, 2e-3
GRADS = ("x", "topk_weights", "w_gate_up", "w_down")
FORMS = ("moe_mlp", "moe_mlp split", "moe_mlp_unstacked")
results = []


def verdict(name: str, ok: bool, detail: str = ""):
    results.append(ok)
    print(f"{'PASS' if ok else 'FAIL'}  {name}{'  ' + detail if detail else ''}")


def leaf(t: torch.Tensor, dtype=None) -> torch.Tensor:
    """A fresh leaf copy of `t` (in `dtype`) that will get a gradient."""
    return t.detach().to(dtype or t.dtype, copy=True).requires_grad_()


def run_tessel(form: str, layer, bundle):
    """Output and gradients (x, topk_weights, w_gate_up, w_down) of one
    fwd+bwd of the fused layer, on leaves made from `layer`."""
    x, w = leaf(layer.x), leaf(layer.weights)
    if form == "moe_mlp":
        gu, down = leaf(layer.w_gate_up), leaf(layer.w_down)
        out = tessel.torch.moe_mlp(x, layer.ids, w, gu, down, bundle)
        out.backward(layer.dout)
        return out.detach(), [x.grad, w.grad, gu.grad, down.grad]
    inter = layer.w_down.shape[2]
    if form == "moe_mlp split":
        gate, up = (leaf(layer.w_gate_up[:, part].contiguous()) for part in
                    (slice(0, inter), slice(inter, None)))
        down = leaf(layer.w_down)
        out = tessel.torch.moe_mlp(x, layer.ids, w, (gate, up), down, bundle)
        out.backward(layer.dout)
        return out.detach(), [x.grad, w.grad,
                              torch.cat([gate.grad, up.grad], dim=1),
                              down.grad]
    gate = expert_views(layer.w_gate_up, slice(0, inter))
    up = expert_views(layer.w_gate_up, slice(inter, None))
    down = expert_views(layer.w_down)
    out = tessel.torch.moe_mlp_unstacked(x, layer.ids, w, gate, up, down,
                                         bundle)
    out.backward(layer.dout)
    d_gate_up = torch.cat([torch.stack([g.grad for g in gate]),
                           torch.stack([u.grad for u in up])], dim=1)
    return out.detach(), [x.grad, w.grad, d_gate_up,
                          torch.stack([d.grad for d in down])]


def fp32_reference(layer):
    """The per-expert loop in fp32 on the same values, by autograd."""
    leaves = [leaf(t, torch.float32) for t in
              (layer.x, layer.weights, layer.w_gate_up, layer.w_down)]
    x, w, gu, down = leaves
    # unbind: the experts' matrices with one gradient buffer for all.
    out = routed_experts_loop(x, layer.ids, w, gu.unbind(0), down.unbind(0))
    out.backward(layer.dout.float())
    return out.detach(), [t.grad for t in leaves]


def check_layer(title, layer, bundle, empty=(), dropped=False):
    ref, ref_grads = fp32_reference(layer)
    for form in FORMS:
        out, grads = run_tessel(form, layer, bundle)
        for name, a, e in zip(("out",) + GRADS, [out] + grads,
                              [ref] + ref_grads):
            worst, norm = errors(a, e)
            ok = bool(torch.isfinite(a).all()) and worst <= MAX_REL and \
                norm <= NORM_REL
            verdict(f"{title}: {form} {name}", ok,
                    f"max err {worst:.2e}, norm err {norm:.2e}")
        if empty:
            zero = all(torch.count_nonzero(g[list(empty)]) == 0
                       for g in grads[2:])
            verdict(f"{title}: {form} empty experts' weight gradients zero",
                    zero)
        if dropped:
            slots = layer.ids < 0
            verdict(f"{title}: {form} dropped slots' routing-weight "
                    f"gradients zero ({int(slots.sum())} slots)",
                    torch.count_nonzero(grads[1][slots]).item() == 0)


def check_determinism_and_syncs(layer, bundle):
    for form in FORMS:
        first = run_tessel(form, layer, bundle)
        second = run_tessel(form, layer, bundle)
        same = all(torch.equal(a, b) for a, b in
                   zip([first[0]] + first[1], [second[0]] + second[1]))
        verdict(f"{form}: two runs bitwise equal", same)
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            run_tessel(form, layer, bundle)
            verdict(f"{form}: fwd+bwd without host synchronisation", True)
        except RuntimeError as e:
            verdict(f"{form}: fwd+bwd without host synchronisation", False,
                    str(e).splitlines()[0])
        finally:
            torch.cuda.set_sync_debug_mode("default")


def train(model, batches, lr):
    """Losses of AdamW steps over `batches`, and the peak memory (bytes)."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    losses = []
    for tokens, targets in batches:
        loss = loss_of(model, tokens, targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    torch.cuda.synchronize()
    return losses, torch.cuda.max_memory_allocated()


def toy_model(seed):
    """The toy model from `seed`: the same initial weights each time."""
    torch.manual_seed(seed)
    return ToyModel(TOY).to("cuda", torch.bfloat16)


def check_training(bundle, steps, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    batches = [tuple(torch.randint(0, TOY.vocab_size, (8, 256), device="cuda",
                                   generator=gen) for _ in range(2))
               for _ in range(steps)]
    # One model on the GPU at a time, so that the peaks compare.
    naive_losses, naive_peak = train(toy_model(seed), batches, 1e-3)
    torch.cuda.empty_cache()
    patched = toy_model(seed)
    names = tessel.torch.patch_deepseek_moe(patched, bundle)
    print(f"training: toy DeepSeek-style model, {len(names)} patched MoE "
          f"blocks ({', '.join(names)}), {TOY.n_routed_experts} experts "
          f"top-{TOY.num_experts_per_tok}, H={TOY.hidden_size}, "
          f"I={TOY.moe_intermediate_size}, bf16, AdamW lr 1e-3, "
          f"{steps} steps of 8 x 256 tokens")
    ours, our_peak = train(patched, batches, 1e-3)
    print(f"{'step':>4s} {'loop loss':>12s} {'tessel loss':>12s} "
          f"{'rel diff':>9s}")
    for step, (a, b) in enumerate(zip(naive_losses, ours), 1):
        diff = abs(b - a) / abs(a)
        print(f"{step:4d} {a:12.6f} {b:12.6f} {diff:9.2e}")
        verdict(f"training step {step}: loss within 0.2% of the loop",
                diff <= LOSS_REL, f"{diff:.2e}")
    mib = 1 << 20
    verdict("training: peak memory not above the loop's",
            our_peak <= naive_peak,
            f"tessel {our_peak / mib:.1f} MiB, loop {naive_peak / mib:.1f} "
            f"MiB ({our_peak / naive_peak:.2f}x)")


def main():
    parser = script_parser(__doc__)
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    bundle = gpu_bundle(args.bundle)
    if bundle is None:
        return 1
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    shape = SHAPES["mlp_ref"]
    title = (f"E={shape.experts} H={shape.hidden} I={shape.intermediate} "
             f"top-{shape.topk} T={args.tokens}")
    layer = random_layer(shape, args.tokens, gen)
    check_layer(title, layer, bundle)
    empty = list(range(3, shape.experts, shape.experts // 16))[:16]
    sparse = random_layer(shape, args.tokens, gen, empty=empty, dropped=0.02)
    check_layer(f"{title}, 16 empty experts, 2% dropped", sparse, bundle,
                empty, dropped=True)
    check_determinism_and_syncs(layer, bundle)
    del layer, sparse
    torch.cuda.empty_cache()
    check_training(bundle, args.steps, args.seed)
    ok = all(results)
    print(f"{'ALL PASS' if ok else 'SOME FAILED'} ({sum(results)} of "
          f"{len(results)} checks passed)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
