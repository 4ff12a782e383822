"""One rank of test_moe_fsdp.py, started by torchrun with two processes:
the toy DeepSeek-style model (moe_reference.GPU_TOY, bf16) given
tessel.torch.patch_deepseek_moe (kernels from the default kernel cache),
trained 5 AdamW steps on one GPU and then wrapped in FullyShardedDataParallel
(FULL_SHARD, use_orig_params=True, one FSDP unit per transformer block).

Each step's global batch is 2 x (4 x 256) tokens: rank r trains on half r
under FSDP; the one-GPU run (on every rank, first, from the same initial
weights) accumulates the gradients of the two halves, each loss halved:
the same sum of gradients that FSDP's averaging gives, and the same
auxiliary balance losses (computed per half). Rank 0 writes both runs'
losses per step (FSDP's: the mean over the halves) as JSON to --out.
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


def patched_model(seed):
    torch.manual_seed(seed)
    model = ToyModel(GPU_TOY).to("cuda", torch.bfloat16)
    tessel.torch.patch_deepseek_moe(model, tessel.cache.default_cache())
    return model


def batches(seed, steps, world):
    """Per step, the global batch's `world` halves (tokens, targets)."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return [[tuple(torch.randint(0, GPU_TOY.vocab_size, (4, 256),
                                 device="cuda", generator=gen)
                   for _ in range(2))
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    world = int(os.environ["WORLD_SIZE"])
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    data = batches(args.seed, args.steps, world)
    one_gpu = one_gpu_losses(patched_model(args.seed), data)
    torch.cuda.empty_cache()
    sharded = fsdp_losses(patched_model(args.seed), data, rank, world)
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump({"one_gpu": one_gpu, "fsdp": sharded}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
