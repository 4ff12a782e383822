#!/usr/bin/env python3
"""Check tessel.torch.patch_deepseek_moe under FSDP on two NVIDIA GPUs:
the toy DeepSeek-style model (moe_layer_common.TOY, bf16) patched, wrapped
in FullyShardedDataParallel (FULL_SHARD, use_orig_params=True, one FSDP
unit per transformer block), trained 5 AdamW steps, against the same model
patched on one GPU without FSDP.

  PATH=/usr/local/cuda/bin:$PATH build/bin/tessel-aot \\
      bench/moe_layer_kernels.mlir --targets=sm80,sm90 -o moe_layer.tsb
  PYTHONPATH=<tessel package> torchrun --standalone --nproc_per_node=2 \\
      bench/moe_fsdp_check.py moe_layer.tsb

Each step's global batch is 2 x (4 x 256) tokens: rank r trains on half r
under FSDP; the one-GPU run (on every rank, before the FSDP run, with the
same initial weights) accumulates the gradients of the two halves, each
loss halved: the same sum of gradients that FSDP's averaging gives, and
the same auxiliary balance losses (computed per half). PASS when every
step's loss (the mean over the halves) is within 4e-3 relative of the
one-GPU run's: about one bf16 rounding (2^-8), what reducing bf16
gradients in another order may change. Rank 0 prints the table and one
PASS/FAIL line per step; exits 1 on a failure.
"""
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy
from torch.distributed.fsdp.wrap import ModuleWrapPolicy

import tessel.torch
from moe_layer_common import (TOY, Block, ToyModel, bundle_of, loss_of,
                              script_parser)

LOSS_REL = 4e-3


def patched_model(seed, bundle):
    torch.manual_seed(seed)
    model = ToyModel(TOY).to("cuda", torch.bfloat16)
    tessel.torch.patch_deepseek_moe(model, bundle)
    return model


def batches(seed, steps, world):
    """Per step, the global batch's `world` halves (tokens, targets)."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return [[tuple(torch.randint(0, TOY.vocab_size, (4, 256), device="cuda",
                                 generator=gen) for _ in range(2))
             for _ in range(world)] for _ in range(steps)]


def one_gpu_losses(model, data):
    """Losses of AdamW steps accumulating the halves' gradients."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for halves in data:
        total = 0.0
        for tokens, targets in halves:
            loss = loss_of(model, tokens, targets) / len(halves)
            loss.backward()
            total += loss.item()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(total)
    return losses


def fsdp_losses(model, data, rank, world):
    model = FSDP(model, sharding_strategy=ShardingStrategy.FULL_SHARD,
                 use_orig_params=True,
                 auto_wrap_policy=ModuleWrapPolicy({Block}),
                 device_id=torch.cuda.current_device())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for halves in data:
        tokens, targets = halves[rank]
        loss = loss_of(model, tokens, targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        losses.append(mean.item() / world)
    return losses


def main():
    parser = script_parser(__doc__)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world != 2:
        print(f"FAIL  run with torchrun --nproc_per_node=2 (WORLD_SIZE is "
              f"{world})")
        return 1
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    bundle = bundle_of(args.bundle, local)
    data = batches(args.seed, args.steps, world)

    reference = one_gpu_losses(patched_model(args.seed, bundle), data)
    torch.cuda.empty_cache()
    sharded = fsdp_losses(patched_model(args.seed, bundle), data, rank,
                          world)
    ok = True
    if rank == 0:
        print(f"FSDP FULL_SHARD, use_orig_params=True, one unit per Block, "
              f"{world} GPUs ({torch.cuda.get_device_name()}), torch "
              f"{torch.__version__}; toy model {TOY.num_layers} MoE blocks, "
              f"{TOY.n_routed_experts} experts top-{TOY.num_experts_per_tok}"
              f", bf16, patched")
        print(f"{'step':>4s} {'1 GPU':>12s} {'FSDP x2':>12s} {'rel diff':>9s}")
        for step, (a, b) in enumerate(zip(reference, sharded), 1):
            diff = abs(b - a) / abs(a)
            print(f"{step:4d} {a:12.6f} {b:12.6f} {diff:9.2e}")
        for step, (a, b) in enumerate(zip(reference, sharded), 1):
            diff = abs(b - a) / abs(a)
            good = diff <= LOSS_REL
            ok &= good
            print(f"{'PASS' if good else 'FAIL'}  FSDP step {step}: loss "
                  f"within {LOSS_REL:.0e} of one GPU ({diff:.2e})")
        print("ALL PASS" if ok else "SOME FAILED")
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
