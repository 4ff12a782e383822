#!/usr/bin/env python3
"""Serving simulation through the attention dispatcher: tokens/s per mode.

    python3 bench/continuous_batching.py [--bundles .carry] [--smoke]

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
the host's enqueueing (plan building from Python costs more than a decode
step's kernels; an engine replays decodes from CUDA graphs). On the host
backend, perf_counter around each run. The last step's output of each
mode is checked against a float64 reference over the caches it read.
Prints tokens/s per mode and a markdown table relative to triple. The
kernels: the first NHD configuration of <bundles>/dispatch.tsb (llama3_8b).

(bench/benchlib.py: the common options.) --smoke: tiny mixes on the host.
"""
import math
import random
import sys
import time
from typing import List, NamedTuple

import torch

import benchlib
import paged_batch
import tessel

MODES = ("triple", "unified", "two_path")
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}
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
               Mix("long-context-extend", 3, 0.2, (600, 900), (2, 4)),
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
    metadata with tessel.permute_rows and puts it on the device."""
    ql = [n for n, _, _ in step.requests]
    cl = [c for _, c, _ in step.requests]
    order = att.order(ql, cl)
    mb = max(len(b) for _, _, b in step.requests)
    table = torch.zeros(len(ql), mb, dtype=torch.int32)
    for i, (_, _, blocks) in enumerate(step.requests):
        table[i, :len(blocks)] = torch.tensor(blocks, dtype=torch.int32)
    table = tessel.permute_rows(order, table)
    ql, cl = tessel.permute_rows(order, ql), tessel.permute_rows(order, cl)
    slots = []
    for b, (n, c) in enumerate(zip(ql, cl)):
        pos = torch.arange(c, c + n)
        slots.append(table[b, pos // block_size] * block_size +
                     pos % block_size)
    tensors = dict(block_table=table,
                   seq_lens=torch.tensor(ql, dtype=torch.int32) +
                   torch.tensor(cl, dtype=torch.int32),
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


def run_mode(bench, bundle, case, mode, prepared, num_blocks, budget):
    """Runs the steps in one mode, checks the last step's output; returns
    the seconds spent in the timed runs."""
    att = tessel.Attention(bundle, routing=mode, context_chunk_tokens=budget,
                           **case)
    hq, hkv, d, bs = (case[k] for k in ("num_q_heads", "num_kv_heads",
                                        "head_dim", "block_size"))
    T = max(p.tokens for p in prepared)
    # The same data in every mode.
    gen = torch.Generator(device=bench.device).manual_seed(bench.args.seed)

    def rand(*shape):
        return torch.randn(*shape, generator=gen,
                           device=bench.device).to(DTYPES[case["dtype"]])

    q, k, v = rand(T, hq, d), rand(T, hkv, d), rand(T, hkv, d)
    k_cache, v_cache = rand(num_blocks, bs, hkv, d), rand(num_blocks, bs,
                                                          hkv, d)
    out = torch.empty_like(q)
    last = 2 * len(prepared) - 1
    plan = tessel.Plan(att, max(len(p.query_lens) for p in prepared))
    timer = Timer(bench.device)
    for i, p in enumerate(prepared + prepared):
        plan.build(p.query_lens, p.context_lens,
                   p.tensors["block_table"].shape[1])
        bufs = dict(q=q[:p.tokens], k=k[:p.tokens], v=v[:p.tokens],
                    k_cache=k_cache, v_cache=v_cache, out=out[:p.tokens],
                    **p.tensors)
        if i == last:  # poisoned: the check below sees this step's writes
            out.fill_(math.nan)
        # The untimed pass loads every kernel and grows the plan's
        # workspace to its largest.
        if i < len(prepared):
            plan.run(**bufs)
        else:
            timer.around(lambda: plan.run(**bufs))
    seconds = timer.seconds()
    p = prepared[-1]
    # The run wrote the step's new tokens into the caches before reading
    # them: the caches now hold exactly what it attended to.
    ref = paged_batch.reference(q[:p.tokens], k_cache, v_cache,
                                p.tensors["block_table"], p.query_lens,
                                p.context_lens)
    err = benchlib.relative_error(out[:p.tokens], ref)
    bench.check(f"{mode}: the last step", err <= 1e-2, f"error {err:.1e}")
    return seconds


def nhd_config(bundle):
    """tessel.Attention's configuration of the bundle's first NHD decode
    kernel."""
    for kernel in bundle:
        p = kernel.params
        if kernel.op == "tessel.decode_attention" and p["layout"] == 0:
            return dict(num_q_heads=p["num_q_heads"],
                        num_kv_heads=p["num_kv_heads"],
                        head_dim=p["head_dim"], block_size=p["block_size"],
                        dtype=kernel.dtype)
    raise SystemExit("continuous_batching: the bundle has no NHD "
                     "decode_attention kernel")


def main():
    parser = benchlib.parser(__doc__)
    parser.add_argument("--mix", action="append",
                        help="run only this mix (repeatable)")
    args = parser.parse_args()
    bench = benchlib.Bench(args, "continuous_batching")
    mixes, step_budget, budget, max_steps = SIZES[
        "small" if bench.smoke else "full"]
    bundle = bench.bundle("dispatch")
    case = nhd_config(bundle)
    print(f"q{case['num_q_heads']}/kv{case['num_kv_heads']} "
          f"d{case['head_dim']} bs{case['block_size']}; step budget "
          f"{step_budget} tokens, context chunks of {budget}, "
          f"at most {MAX_RUNNING} running")
    rows = []
    for m, mix in enumerate(mixes):
        if args.mix and mix.name not in args.mix:
            continue
        steps, num_blocks = simulate(mix, step_budget, case["block_size"],
                                     max_steps, args.seed + m)
        order_by = tessel.Attention(bundle, routing="triple", **case)
        prepared = [prepare(order_by, s, case["block_size"], bench.device)
                    for s in steps]
        tokens = sum(p.tokens for p in prepared)
        longest = max(max(p.context_lens) for p in prepared)
        print(f"== {mix.name}: {mix.requests} requests, {len(steps)} steps, "
              f"{tokens} tokens, contexts up to {longest}, "
              f"{num_blocks} cache blocks")
        rates = {}
        for mode in MODES:
            seconds = run_mode(bench, bundle, case, mode, prepared,
                               num_blocks, budget)
            rates[mode] = tokens / seconds
            print(f"  {mode:8s} {seconds * 1e3:10.2f} ms "
                  f"{rates[mode]:12.0f} tokens/s")
        for mode in MODES[1:]:
            bench.row(f"{mix.name}, {mode} mode", "tokens/s", rates[mode],
                      "triple mode", rates["triple"])
        rows.append((mix, len(steps), tokens, rates))
    print()
    print("| mix | steps | tokens | " +
          " | ".join(f"{m} tokens/s" for m in MODES) + " | " +
          " | ".join(f"{m} / triple" for m in MODES[1:]) + " |")
    print("|---|---:|---:|" + "---:|" * (2 * len(MODES) - 1))
    for mix, n, tokens, rates in rows:
        cells = [f"{rates[m]:.0f}" for m in MODES]
        cells += [f"{rates[m] / rates['triple']:.2f}x" for m in MODES[1:]]
        print(f"| {mix.name} | {n} | {tokens} | " + " | ".join(cells) + " |")
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
