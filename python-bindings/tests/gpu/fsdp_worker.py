"""One rank of test_moe_fsdp.py, started by torchrun with one process per
rank: the toy DeepSeek-style model (moe_reference.GPU_TOY, bf16) given
tessel.torch.patch_deepseek_moe (kernels from the default kernel cache;
with --stack-experts, its experts stacked), trained 5 AdamW steps on one
GPU and then wrapped in FullyShardedDataParallel (FULL_SHARD,
use_orig_params=True, one FSDP unit per transformer block).

Each step's global batch is W x (4 x 256) tokens for W ranks: rank r trains
on part r under FSDP; the one-GPU run (on every rank, first, from the same
initial weights) accumulates the gradients of the W parts, each loss
divided by W: the same sum of gradients that FSDP's averaging gives, and
the same auxiliary balance losses (computed per part). Rank 0 writes both runs'
losses per step (FSDP's: the mean over the parts) as JSON to --out.
"""

import argparse
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy
from torch.distributed.fsdp.wrap import ModuleWrapPolicy

import tessel.cache
import tessel.torch

# python-bindings/tests: the toy model of the CPU tests.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
from moe_reference import GPU_TOY, Block, ToyModel, loss_of  # noqa: E402


def patched_model(seed, stack_experts):
    torch.manual_seed(seed)
    model = ToyModel(GPU_TOY).to("cuda", torch.bfloat16)
    tessel.torch.patch_deepseek_moe(model, tessel.cache.default_cache(),
                                    stack_experts=stack_experts)
    return model


def batches(seed, steps, world):
    """Per step, the global batch's `world` parts (tokens, targets)."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return [[tuple(torch.randint(0, GPU_TOY.vocab_size, (4, 256),
                                 device="cuda", generator=gen)
                   for _ in range(2))
             for _ in range(world)] for _ in range(steps)]


def one_gpu_losses(model, data):
    """Losses of AdamW steps accumulating the parts' gradients."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for parts in data:
        total = 0.0
        for tokens, targets in parts:
            loss = loss_of(model, tokens, targets) / len(parts)
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
    for parts in data:
        tokens, targets = parts[rank]
        loss = loss_of(model, tokens, targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        losses.append(mean.item() / world)
    return losses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--stack-experts", action="store_true")
    args = parser.parse_args()
    world = int(os.environ["WORLD_SIZE"])
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    data = batches(args.seed, args.steps, world)
    one_gpu = one_gpu_losses(patched_model(args.seed, args.stack_experts),
                             data)
    torch.cuda.empty_cache()
    sharded = fsdp_losses(patched_model(args.seed, args.stack_experts), data,
                          rank, world)
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump({"one_gpu": one_gpu, "fsdp": sharded}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
