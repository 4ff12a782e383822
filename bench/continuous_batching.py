#!/usr/bin/env python3
"""Serving simulation through the attention dispatcher: tokens/s per mode.

  tessel-aot bench/dispatch_kernels.mlir --targets=sm80,sm90 -o dispatch.tsb
  python3 bench/continuous_batching.py dispatch.tsb --device cuda \\
      --lib /tmp/tessel-gpu-check/libtessel_runtime.so
  python3 bench/continuous_batching.py build/examples/attention_dispatch.tsb \\
      --device host --small                # CI-sized, seconds

Serving with attention only: requests arrive (Poisson, a fixed seed per
mix) with prompt and output lengths drawn from the mix's ranges. A block
allocator hands each admitted request the cache blocks of its whole
length, in scattered order, and takes them back when it finishes. Each
step schedules, within a token budget, every running decode (one token),
the next chunk of every prompt being prefilled (chunked prefill: the first
chunk is a prefill, later ones extends over the cached prompt) and new
requests while fewer than 64 run. Three mixes: decode-heavy, long-context
extend (prompts of 100K+ tokens, so extends over 100K+ contexts) and
prefill-heavy.

The step sequence of a mix is made once; each routing mode (triple,
unified, two_path) runs the same steps through the dispatcher with random
q/k/v and the cache write (slot_mapping), twice: an untimed pass (every
kernel loaded, every workspace size reached), then the timed one. Only the
runs are timed, as device time: on the GPU a sleep kernel is queued before
each step's start event, so the events bracket the step's kernels and not
the host's enqueueing (ctypes and plan building from Python cost more than
a decode step's kernels; an engine replays decodes from CUDA graphs). On
the host backend, perf_counter around each run. Prints tokens/s per mode
and a markdown table relative to triple; exits 1 if a run fails or leaves
a non-finite output.
"""
import math
import random
import sys
import time
from typing import List, NamedTuple

import torch

from dispatcher import (Dispatcher, arguments, configs, open_bundle,
                        permute_rows, workspace)
from paged_decode_check import TesselError

MODES = ("triple", "unified", "two_path")
MAX_RUNNING = 64
# GPU cycles (~5 ms on an H200) the sleep kernel keeps the device busy
# while the host enqueues one step behind it.
HIDE_HOST_CYCLES = 10_000_000


class Mix(NamedTuple):
    name: str
    requests: int
    arrivals: float  # per step, on average
    prompt: tuple    # (shortest, longest) tokens
    output: tuple


# (mixes, step token budget, extend context budget, max steps)
SIZES = {
    "full": ([Mix("decode-heavy", 128, 4.0, (256, 1024), (256, 1024)),
              Mix("long-context-extend", 8, 0.1, (100_000, 160_000),
                  (8, 32)),
              Mix("prefill-heavy", 256, 8.0, (512, 4096), (1, 8))],
             8192, 32768, 4000),
    "small": ([Mix("decode-heavy", 20, 2.0, (8, 32), (16, 48)),
               Mix("long-context-extend", 3, 0.2, (1500, 2500), (2, 4)),
               Mix("prefill-heavy", 24, 4.0, (32, 160), (1, 3))],
              64, 512, 400),
}


class Request:
    def __init__(self, rid, arrival, prompt, output):
        self.rid, self.arrival = rid, arrival
        self.prompt, self.output = prompt, output
        self.cached = 0     # tokens in the KV cache
        self.generated = 0  # output tokens sampled
        self.blocks = None


class BlockAllocator:
    """The free list of a paged cache, handed out in shuffled order so that
    block tables are scattered as in a long-running server."""

    def __init__(self, num_blocks, rng):
        self.free = list(range(num_blocks))
        rng.shuffle(self.free)

    def take(self, n):
        """n (>= 1) blocks, or None if the cache is that full."""
        if n > len(self.free):
            return None
        blocks, self.free[-n:] = self.free[-n:], []
        return blocks

    def give(self, blocks):
        self.free.extend(blocks)


class Step(NamedTuple):
    """One step's requests, (query_len, context_len, blocks) each, in the
    scheduler's order."""
    requests: List[tuple]


def simulate(mix, step_budget, block_size, max_steps, seed):
    """The step sequence of a mix, and the cache blocks it needs."""
    rng = random.Random(seed)
    t, requests = 0.0, []
    for rid in range(mix.requests):
        t += rng.expovariate(mix.arrivals)
        requests.append(Request(rid, int(t), rng.randint(*mix.prompt),
                                rng.randint(*mix.output)))
    need = sorted(-(-(r.prompt + r.output) // block_size) for r in requests)
    num_blocks = sum(need[-MAX_RUNNING:])
    alloc = BlockAllocator(num_blocks, rng)
    waiting, running, steps, now = list(requests), [], [], 0
    while (waiting or running) and len(steps) < max_steps:
        budget, batch = step_budget, []

        def schedule(r, tokens):
            nonlocal budget
            batch.append((r, tokens))
            budget -= tokens

        for r in running:  # decodes first: they cost one token each
            if r.cached >= r.prompt and budget > 0:
                schedule(r, 1)
        for r in running:  # then the prompts being prefilled in chunks
            if r.cached < r.prompt and budget > 0:
                schedule(r, min(r.prompt - r.cached, budget))
        while (waiting and waiting[0].arrival <= now and budget > 0 and
               len(running) < MAX_RUNNING):
            r = waiting[0]
            r.blocks = alloc.take(-(-(r.prompt + r.output) // block_size))
            if r.blocks is None:
                break
            running.append(waiting.pop(0))
            schedule(r, min(r.prompt, budget))
        now += 1
        if not batch:
            continue
        steps.append(Step([(n, r.cached, r.blocks) for r, n in batch]))
        for r, n in batch:
            r.cached += n
            if r.cached >= r.prompt:  # the prompt's last chunk samples too
                r.generated += 1
            if r.generated == r.output:
                running.remove(r)
                alloc.give(r.blocks)
    return steps, num_blocks


class Prepared(NamedTuple):
    """A step in plan order, its metadata on the device."""
    query_lens: list
    context_lens: list
    tensors: dict
    tokens: int


def prepare(att, step, block_size, device):
    """Orders a step (the order is the same in every mode), permutes its
    metadata with tessel_permute_rows and puts it on the device."""
    ql = [n for n, _, _ in step.requests]
    cl = [c for _, c, _ in step.requests]
    order = att.order(ql, cl)
    mb = max(len(b) for _, _, b in step.requests)
    table = torch.zeros(len(ql), mb, dtype=torch.int32)
    for i, (_, _, blocks) in enumerate(step.requests):
        table[i, :len(blocks)] = torch.tensor(blocks, dtype=torch.int32)
    table = permute_rows(att.rt, order, table)
    meta = permute_rows(att.rt, order, torch.tensor([ql, cl],
                                                    dtype=torch.int32).T)
    ql, cl = meta[:, 0].tolist(), meta[:, 1].tolist()
    slots = []
    for b, (n, c) in enumerate(zip(ql, cl)):
        pos = torch.arange(c, c + n)
        slots.append(table[b, pos // block_size] * block_size +
                     pos % block_size)
    tensors = dict(block_table=table,
                   seq_lens=meta.sum(1, dtype=torch.int32),
                   slot_mapping=torch.cat(slots).int())
    return Prepared(ql, cl, {k: v.to(device) for k, v in tensors.items()},
                    sum(ql))


class Timer:
    """Times the runs: CUDA events on the GPU, perf_counter on the host."""

    def __init__(self, device):
        self.device, self.marks = device, []

    def around(self, run):
        if self.device == "cuda":
            start, end = (torch.cuda.Event(enable_timing=True)
                          for _ in range(2))
            torch.cuda._sleep(HIDE_HOST_CYCLES)
            start.record()
            run()
            end.record()
            self.marks.append((start, end))
        else:
            start = time.perf_counter()
            run()
            self.marks.append(time.perf_counter() - start)

    def seconds(self):
        if self.device != "cuda":
            return sum(self.marks)
        torch.cuda.synchronize()
        return sum(s.elapsed_time(e) for s, e in self.marks) / 1e3


def run_mode(rt, bundle, case, mode, prepared, num_blocks, budget, device,
             gen):
    """Runs the steps in one mode; returns the seconds spent in the timed
    runs."""
    att = Dispatcher(rt, bundle, routing=mode, context_chunk_tokens=budget,
                     **case)
    hq, hkv, d, bs = (case[k] for k in ("num_q_heads", "num_kv_heads",
                                        "head_dim", "block_size"))
    T = max(p.tokens for p in prepared)
    rand = lambda *shape: torch.randn(  # noqa: E731
        *shape, generator=gen, device=device).to(case["dtype"])
    q, k, v = rand(T, hq, d), rand(T, hkv, d), rand(T, hkv, d)
    k_cache, v_cache = rand(num_blocks, bs, hkv, d), rand(num_blocks, bs,
                                                          hkv, d)
    out = torch.empty_like(q)
    last = 2 * len(prepared) - 1
    plan = att.plan(max(len(p.query_lens) for p in prepared))
    ws = workspace(0, device)
    timer = Timer(device)
    for i, p in enumerate(prepared + prepared):
        info = plan.build(p.query_lens, p.context_lens,
                          p.tensors["block_table"].shape[1])
        if info.workspace_bytes > ws.numel():
            ws = workspace(info.workspace_bytes, device)
        bufs = dict(q=q[:p.tokens], k=k[:p.tokens], v=v[:p.tokens],
                    k_cache=k_cache, v_cache=v_cache, out=out[:p.tokens],
                    **p.tensors)
        if i == last:  # poisoned: the check below sees this step's writes
            out.fill_(math.nan)
        if i < len(prepared):
            plan.run(bufs, ws)
        else:
            timer.around(lambda: plan.run(bufs, ws))
    seconds = timer.seconds()
    if not torch.isfinite(out[:prepared[-1].tokens]).all():
        raise RuntimeError(f"{mode}: non-finite output in the last step")
    return seconds


def main():
    parser = arguments(__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true",
                        help="tiny mixes, for the host backend and CI")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--mix", action="append",
                        help="run only this mix (repeatable)")
    args = parser.parse_args()
    mixes, step_budget, budget, max_steps = SIZES[
        "small" if args.small else "full"]
    rt, bundle, device = open_bundle(args)
    nhd = [c for c in configs(rt, bundle) if c["layout"] == "nhd"]
    if not nhd:
        print("FAIL: the bundle has no NHD decode_attention kernels")
        return 1
    case = nhd[0]
    print(f"continuous_batching: {args.bundle} on {args.device}; "
          f"q{case['num_q_heads']}/kv{case['num_kv_heads']} "
          f"d{case['head_dim']} bs{case['block_size']}; step budget "
          f"{step_budget} tokens, context chunks of {budget}, "
          f"at most {MAX_RUNNING} running")
    rows, ok = [], True
    for m, mix in enumerate(mixes):
        if args.mix and mix.name not in args.mix:
            continue
        steps, num_blocks = simulate(mix, step_budget, case["block_size"],
                                     max_steps, args.seed + m)
        order_by = Dispatcher(rt, bundle, routing="triple", **case)
        prepared = [prepare(order_by, s, case["block_size"], device)
                    for s in steps]
        tokens = sum(p.tokens for p in prepared)
        longest = max(max(p.context_lens) for p in prepared)
        print(f"== {mix.name}: {mix.requests} requests, {len(steps)} steps, "
              f"{tokens} tokens, contexts up to {longest}, "
              f"{num_blocks} cache blocks")
        rates = {}
        for mode in MODES:
            gen = torch.Generator(device=device)
            gen.manual_seed(args.seed)
            try:
                seconds = run_mode(rt, bundle, case, mode, prepared,
                                   num_blocks, budget, device, gen)
            except (TesselError, RuntimeError) as e:
                print(f"  {mode:8s} FAIL: {e}")
                ok = False
                continue
            rates[mode] = tokens / seconds
            print(f"  {mode:8s} {seconds * 1e3:10.2f} ms "
                  f"{rates[mode]:12.0f} tokens/s")
        rows.append((mix, len(steps), tokens, rates))
    print()
    print("| mix | steps | tokens | " +
          " | ".join(f"{m} tokens/s" for m in MODES) + " | " +
          " | ".join(f"{m} / triple" for m in MODES[1:]) + " |")
    print("|---|---:|---:|" + "---:|" * (2 * len(MODES) - 1))
    for mix, n, tokens, rates in rows:
        base = rates.get("triple")
        cells = [f"{rates[m]:.0f}" if m in rates else "-" for m in MODES]
        cells += [f"{rates[m] / base:.2f}x" if base and m in rates else "-"
                  for m in MODES[1:]]
        print(f"| {mix.name} | {n} | {tokens} | " + " | ".join(cells) + " |")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
