#!/usr/bin/env python3
"""Check the attention dispatcher end to end, in every routing mode.

  tessel-aot bench/dispatch_kernels.mlir --targets=sm80,sm90 -o dispatch.tsb
  python3 bench/dispatch_check.py dispatch.tsb --device cuda \\
      --lib /tmp/tessel-gpu-check/libtessel_runtime.so
  python3 bench/dispatch_check.py build/examples/attention_dispatch.tsb \\
      --device host                        # the C example's host bundle

For each MHA configuration the bundle has (head geometry, KV layout) and
each of --batches random batches (a fresh seed each run unless --seed):
decodes (contexts 0, one block +-1, up to ~50K), extends (new tokens over
contexts of 1 to 70K+: one token short of, at and past the context budget
and at twice it, so that chunk boundaries fall everywhere) and prefills,
GQA, in a shuffled engine order. The batch is ordered by the dispatcher
(the permutation is checked: a stable [decode : extend : prefill] sort),
its metadata permuted with tessel_permute_rows, planned (phase counts and
the chunk schedule checked against the header's rules) and run in every
routing mode (auto, triple, unified, two_path), with the new tokens' keys
and values written by the run (and once by tessel_attention_write_cache).
The block tables are random permutations of the cache's blocks, with
garbage past each request's blocks; outputs are poisoned with NaN.

The reference is fp32 torch per request: causal attention of its new
tokens over [cached context + new tokens]. out must be within 1e-2 of the
largest reference magnitude, and every new token's key and value must be
in its cache slot, bit for bit. AUTO must follow TESSEL_ATTENTION, and a
value it does not know must be refused. On CUDA, a batch of single-token
decodes is also captured in a CUDA graph and replayed after new seq_lens,
block tables and q/k/v were written into the captured buffers. Prints the
max error per mode and PASS or FAIL; exits 1 unless all passed.
"""
import itertools
import math
import os
import random
import sys

import torch

from dispatcher import (PHASES, Dispatcher, arguments, configs,
                        open_bundle, permute_rows, workspace)
from extend_check import shuffle
from paged_decode_check import TesselError

MODES = ("auto", "triple", "unified", "two_path")
TOLERANCE = 1e-2


def unshuffle(ks, vs):
    """The NHD caches of CDNA pre-shuffled ones (inverse of shuffle)."""
    nb, h, _, bs, _ = ks.shape
    k = ks.permute(0, 3, 1, 2, 4).reshape(nb, bs, h, -1)
    v = vs.permute(0, 2, 4, 1, 3).reshape(nb, bs, h, -1)
    return k, v


def lengths(rng, budget, bs, small):
    """(query_len, context_len) per request of one mixed batch, in a
    random (engine) order. `small`: host-sized lengths, but contexts still
    at and around the budget's multiples and one past 32768."""
    far = 3000 if small else 50000
    decodes = [(1, c) for c in (0, bs - 1, bs, bs + 1, rng.randint(1, far),
                                rng.randint(1, far))]
    contexts = [budget - 1, budget, budget + 1, 2 * budget,
                rng.randint(1, 3 * budget), rng.randint(1, 40),
                32769 if small else rng.randint(33000, 70000)]
    extends = [(rng.randint(2, 24 if small else 160), c) for c in contexts]
    prefills = [(rng.randint(2, 40 if small else 1500), 0)
                for _ in range(3)]
    batch = decodes + extends + prefills
    rng.shuffle(batch)
    return batch


def phase(query_len, context_len):
    """The header's classification (decode_threshold 1)."""
    if query_len <= 1:
        return 0
    return 1 if context_len > 0 else 2


class Batch:
    """One step's inputs in plan order, on `device`: q/k/v of the new
    tokens, NHD caches holding the contexts, block table, slots."""

    def __init__(self, att, case, reqs, gen, device):
        self.case = case
        ql, cl = zip(*reqs)
        self.order = att.order(ql, cl)
        meta = permute_rows(att.rt, self.order,
                            torch.tensor([ql, cl], dtype=torch.int32).T)
        self.ql, self.cl = meta[:, 0].tolist(), meta[:, 1].tolist()
        bs, hq, hkv, d = (case[k] for k in ("block_size", "num_q_heads",
                                            "num_kv_heads", "head_dim"))
        T, B = sum(ql), len(reqs)
        rand = lambda *shape: torch.randn(  # noqa: E731
            *shape, generator=gen, device=device).to(case["dtype"])
        self.q, self.k, self.v = rand(T, hq, d), rand(T, hkv, d), \
            rand(T, hkv, d)
        # Blocks for context + new tokens, from a random permutation of the
        # cache's blocks; garbage (negative or out of range) past them.
        per = [-(-(c + n) // bs) for n, c in reqs]
        nb = sum(per) + 3
        self.k_cache, self.v_cache = rand(nb, bs, hkv, d), rand(nb, bs, hkv, d)
        perm = torch.randperm(nb, generator=gen, device=device).int()
        table = torch.randint(-5, 2 * nb, (B, max(per)), generator=gen,
                              device=device, dtype=torch.int32)
        at = 0
        for b, n in enumerate(per):
            table[b, :n] = perm[at:at + n]
            at += n
        self.block_table = permute_rows(att.rt, self.order,
                                        table.cpu()).to(device)
        self.seq_lens = torch.tensor(
            [c + n for n, c in zip(self.ql, self.cl)], dtype=torch.int32,
            device=device)
        slots = []
        for b, (n, c) in enumerate(zip(self.ql, self.cl)):
            pos = torch.arange(c, c + n, device=device)
            slots.append(self.block_table[b, pos // bs] * bs + pos % bs)
        self.slot_mapping = torch.cat(slots).int()

    def buffers(self):
        """The run's buffers: fresh caches (in the case's layout) and a
        poisoned out."""
        kc, vc = self.k_cache.clone(), self.v_cache.clone()
        if self.case["layout"] == "shuffled":
            kc, vc = shuffle(kc, vc)
        out = torch.full_like(self.q, math.nan)
        return dict(q=self.q, k=self.k, v=self.v, k_cache=kc, v_cache=vc,
                    block_table=self.block_table, seq_lens=self.seq_lens,
                    slot_mapping=self.slot_mapping, out=out)

    def reference(self):
        """fp32 out [T, Hq, D]: per request, causal attention of its new
        tokens over its cached context and themselves."""
        bs, d = self.case["block_size"], self.case["head_dim"]
        g = self.case["num_q_heads"] // self.case["num_kv_heads"]
        out = torch.empty(self.q.shape, device=self.q.device)
        s0 = 0
        for b, (n, c) in enumerate(zip(self.ql, self.cl)):
            pos = torch.arange(c, device=self.q.device)
            blocks = self.block_table[b, pos // bs].long()
            keys = torch.cat([self.k_cache[blocks, pos % bs],
                              self.k[s0:s0 + n]]).float()
            vals = torch.cat([self.v_cache[blocks, pos % bs],
                              self.v[s0:s0 + n]]).float()
            keys = keys.repeat_interleave(g, 1).transpose(0, 1)  # [H, c+n, D]
            vals = vals.repeat_interleave(g, 1).transpose(0, 1)
            # Rows of queries at a time, to bound the score matrix.
            step = max(1, (1 << 27) // (keys.shape[0] * (c + n)))
            for r in range(0, n, step):
                rows = torch.arange(r, min(n, r + step), device=self.q.device)
                qs = self.q[s0 + rows].float().transpose(0, 1)  # [H, r, D]
                s = qs @ keys.transpose(1, 2) * d ** -0.5
                seen = torch.arange(c + n, device=self.q.device)
                s = s.masked_fill(seen[None, :] > (c + rows)[:, None],
                                  -math.inf)
                out[s0 + rows] = (torch.softmax(s, -1) @ vals).transpose(0, 1)
            s0 += n
        return out

    def problems(self, buffers, ref):
        """What is wrong with a run's outputs: (relative error, [text])."""
        out, found = buffers["out"], []
        if torch.isnan(out).any():
            found.append("NaN in out")
        err = ((out.float() - ref).nan_to_num(math.inf).abs().max().item() /
               (ref.abs().max().item() or 1.0))
        if err > TOLERANCE:
            found.append(f"out error {err:.2e} > {TOLERANCE}")
        kc, vc = buffers["k_cache"], buffers["v_cache"]
        if self.case["layout"] == "shuffled":
            kc, vc = unshuffle(kc, vc)
        bs = self.case["block_size"]
        slots = self.slot_mapping.long()
        if not (torch.equal(kc[slots // bs, slots % bs], self.k) and
                torch.equal(vc[slots // bs, slots % bs], self.v)):
            found.append("new keys/values not in their cache slots")
        return err, found


def plan_problems(plan, batch, budget, unified=False):
    """Builds the plan and checks it against the header's rules (unified:
    no context chunks, one kernel over every sequence)."""
    found = []
    phases = [phase(n, c) for n, c in zip(batch.ql, batch.cl)]
    info = plan.build(batch.ql, batch.cl, batch.block_table.shape[1])
    counts = [phases.count(p) for p in range(3)]
    got = [info.num_decodes, info.num_extends, info.num_prefills]
    if got != counts:
        found.append(f"plan counts {got}, expected {counts}")
    tokens = [sum(n for n, p in zip(batch.ql, phases) if p == x)
              for x in range(3)]
    got = [info.decode_tokens, info.extend_tokens, info.prefill_tokens]
    if got != tokens:
        found.append(f"plan tokens {got}, expected {tokens}")
    extends = [c for c, p in zip(batch.cl, phases) if p == 1]
    if unified:
        if info.context_chunks:
            found.append(f"{info.context_chunks} context chunks, expected "
                         f"none")
        return info, found
    end = 0
    for start, width in plan.chunks():
        if start != end:
            found.append(f"chunk starts at {start}, previous ended at {end}")
        end = start + width
        # In sequence a chunk's tokens over all extends fit the budget; in
        # parallel (one launch) each extend's do.
        used = (width if info.context_chunks_parallel else
                sum(max(0, min(c, end) - start) for c in extends))
        if used > budget:
            found.append(f"chunk [{start}, {end}) holds {used} extend "
                         f"tokens > budget {budget}")
    if extends and end < max(extends):
        found.append(f"chunks end at {end} < longest context "
                     f"{max(extends)}")
    return info, found


def check_batch(rt, bundle, case, reqs, gen, device, errors):
    """Runs one batch in every mode; adds max errors to `errors`; returns
    the problems found."""
    found = []
    # One batch (and reference) for all modes, which must order it alike:
    # Python's sort is stable, so this keeps the engine's order within each
    # phase.
    expected = sorted(range(len(reqs)), key=lambda i: phase(*reqs[i]))
    batch = Batch(Dispatcher(rt, bundle, routing="triple", **case), case,
                  reqs, gen, device)
    ref = batch.reference()
    for mode in MODES + ("triple+write_cache",):
        att = Dispatcher(rt, bundle, routing=mode.split("+")[0], **case)
        order = att.order([n for n, _ in reqs], [c for _, c in reqs])
        if order != expected:
            found.append(f"{mode}: order {order}, expected {expected}")
        plan = att.plan(len(reqs))
        info, probs = plan_problems(plan, batch,
                                    case["context_chunk_tokens"],
                                    unified=mode == "unified")
        found += [f"{mode}: {p}" for p in probs]
        bufs = batch.buffers()
        if mode.endswith("write_cache"):
            att.write_cache(bufs["k"], bufs["v"], bufs["k_cache"],
                            bufs["v_cache"], batch.slot_mapping)
            bufs["slot_mapping"] = None
        plan.run(bufs, workspace(info.workspace_bytes, device))
        if device == "cuda":
            torch.cuda.synchronize()
        err, probs = batch.problems(bufs, ref)
        found += [f"{mode} ({att.routing}): {p}" for p in probs]
        errors[mode] = max(errors.get(mode, 0.0), err)
        print(f"    {mode:18s} -> {att.routing:8s} splits {info.kv_splits:<3}"
              f" chunks {info.context_chunks:<3}"
              f"{'p' if info.context_chunks_parallel else ' '}"
              f" ws {info.workspace_bytes:>11}"
              f"  err {err:.1e}  {'ok' if not probs else 'FAIL'}")
    return found


def check_environment(rt, bundle, case):
    """AUTO follows TESSEL_ATTENTION; an unknown value is refused."""
    found = []
    saved = os.environ.pop("TESSEL_ATTENTION", None)
    try:
        for value, expect in ((None, "triple"), ("unified", "unified"),
                              ("two_path", "two_path"), ("triple", "triple")):
            if value:
                os.environ["TESSEL_ATTENTION"] = value
            got = Dispatcher(rt, bundle, routing="auto", **case).routing
            if got != expect:
                found.append(f"TESSEL_ATTENTION={value}: AUTO gave {got}, "
                             f"expected {expect}")
            # An explicit mode ignores the variable.
            got = Dispatcher(rt, bundle, routing="unified", **case).routing
            if got != "unified":
                found.append(f"TESSEL_ATTENTION={value}: UNIFIED gave {got}")
        os.environ["TESSEL_ATTENTION"] = "fastest"
        try:
            Dispatcher(rt, bundle, routing="auto", **case)
            found.append("TESSEL_ATTENTION=fastest was accepted")
        except TesselError as e:
            print(f"    TESSEL_ATTENTION=fastest refused: {e.code}: {e}")
    finally:
        os.environ.pop("TESSEL_ATTENTION", None)
        if saved is not None:
            os.environ["TESSEL_ATTENTION"] = saved
    return found


def refill(batch, ctx, gen):
    """New single-token decodes in a decode batch's buffers, in place (as
    an engine updates captured buffers): contexts `ctx`, a fresh block
    table over the whole cache, slots, q/k/v."""
    B, mb = batch.block_table.shape
    bs = batch.case["block_size"]
    nb = batch.k_cache.shape[0]
    perm = torch.randperm(nb, generator=gen, device="cuda").int()
    batch.block_table.copy_(perm[:B * mb].view(B, mb))
    batch.cl = ctx
    pos = torch.tensor(ctx, device="cuda")
    batch.seq_lens.copy_(pos + 1)
    rows = torch.arange(B, device="cuda")
    batch.slot_mapping.copy_(batch.block_table[rows, pos // bs] * bs +
                             pos % bs)
    for t in (batch.q, batch.k, batch.v):
        t.copy_(torch.randn(t.shape, generator=gen, device="cuda"))


def check_graph(rt, bundle, case, gen, mode, longest):
    """Single-token decodes captured in a CUDA graph with contexts of up to
    `longest` tokens (which sets the plan's split-KV factor), replayed after
    new contexts (up to 35K tokens), block tables and q/k/v were written
    into the captured buffers."""
    rng = random.Random(gen.initial_seed())
    att = Dispatcher(rt, bundle, routing=mode, **case)
    B, mb, bs = 12, 2200, case["block_size"]
    # Built at the largest size, so every buffer fits every replay.
    batch = Batch(att, case, [(1, mb * bs - 1)] * B, gen, "cuda")
    refill(batch, [rng.randint(0, longest) for _ in range(B)], gen)
    plan = att.plan(B)
    info = plan.build([1] * B, batch.cl, mb)
    ws = workspace(info.workspace_bytes, "cuda")
    bufs = batch.buffers()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())  # the buffers' writes
    with torch.cuda.stream(stream):
        plan.run(bufs, ws)  # warm-up outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            plan.run(bufs, ws)
    found = []
    for replay in range(3):
        refill(batch, [rng.randint(0, mb * bs - 1) for _ in range(B)], gen)
        # The run writes the new tokens into the caches: restore them.
        fresh = batch.buffers()
        bufs["k_cache"].copy_(fresh["k_cache"])
        bufs["v_cache"].copy_(fresh["v_cache"])
        bufs["out"].fill_(math.nan)
        graph.replay()
        torch.cuda.synchronize()
        err, probs = batch.problems(bufs, batch.reference())
        tag = f"graph {mode} captured at <= {longest} replay {replay}"
        print(f"    {tag}: contexts up to {max(batch.cl)}, splits "
              f"{info.kv_splits}  err {err:.1e}  "
              f"{'ok' if not probs else 'FAIL'}")
        found += [f"{tag}: {p}" for p in probs]
    return found


def main():
    parser = arguments(__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int,
                        default=int.from_bytes(os.urandom(4), "little"))
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--chunk-tokens", type=int,
                        help="the context budget of the extends (default: "
                        "32768 on cuda, 512 on the host)")
    args = parser.parse_args()
    small = args.device == "host"
    budget = args.chunk_tokens or (512 if small else 32768)
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"dispatch_check: {args.bundle} on {args.device}, seed {args.seed}"
          f", context budget {budget}")
    rt, bundle, device = open_bundle(args)
    cases = configs(rt, bundle)
    if not cases:
        print("FAIL: the bundle has no decode_attention kernels")
        return 1
    gen = torch.Generator(device=device)
    gen.manual_seed(args.seed)
    rng = random.Random(args.seed)
    problems, errors = [], {}
    for case in cases:
        # The host backend counts few compute units, which never splits a
        # decode: plan as for an H200's 132 SMs there, so splits run too.
        case.update(context_chunk_tokens=budget,
                    **({"compute_units": 132} if small else {}))
        name = (f"q{case['num_q_heads']}/kv{case['num_kv_heads']} "
                f"d{case['head_dim']} bs{case['block_size']} "
                f"{case['layout']} {str(case['dtype'])[6:]}")
        print(f"== {name}")
        problems += check_environment(rt, bundle, case)
        for i in range(args.batches):
            reqs = lengths(rng, budget, case["block_size"], small)
            print(f"  batch {i}: " + " ".join(
                f"{PHASES[phase(n, c)][0]}{n}/{c}" for n, c in reqs))
            try:
                problems += check_batch(rt, bundle, case, reqs, gen, device,
                                        errors)
            except TesselError as e:
                problems.append(f"{name} batch {i}: {e.code}: {e}")
        if args.device == "cuda":
            # Short contexts at capture (as engines capture), or long ones
            # (split decodes).
            for mode, longest in itertools.product(("triple", "two_path"),
                                                   (40, 35000)):
                try:
                    problems += check_graph(rt, bundle, case, gen, mode,
                                            longest)
                except TesselError as e:
                    problems.append(f"{name} graph {mode}: {e.code}: {e}")
    print("max error per mode (relative to the largest reference value):")
    for mode, err in errors.items():
        print(f"  {mode:18s} {err:.2e}")
    for p in problems:
        print(f"  FAIL {p}")
    print("PASS" if not problems else f"FAIL ({len(problems)} problems)")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
