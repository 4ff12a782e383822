#!/usr/bin/env python3
"""Check Tessel's MoE routing glue kernels on an NVIDIA GPU, through the
runtime, and time them beside torch.

  tessel-aot bench/moe_glue_kernels.mlir --targets=sm80,sm90 -o moe.tsb
  python3 bench/moe_glue_check.py moe.tsb \\
      --runtime /tmp/tessel-gpu-check/libtessel_runtime.so [--no-bench]

Kernels (bench/moe_glue_kernels.mlir): hist_e<E>, sort_e<E>, permute_h<H>,
unpermute_h<H>[_wbf16], paired as E = 128 with H = 2048 and E = 256 with
H = 7168. For T in {0 (histogram only), 1, 7, 4096, 32768} tokens, top-8
routings (8 distinct experts a token) with about 2% of the ids dropped
(-1, -2^31, E, E + 7, 2^31 - 1), every output poisoned before each run
(0xA5A5A5A5 in int32 outputs, NaN in float ones):

  * expert_histogram: counts and group_offsets equal to torch.bincount of
    the ids in [0, E) and its cumulative sum, exactly (T = 0: zeros).
  * expert_sort: sorted_rows and row_positions equal, exactly, to a torch
    reference of the op (stable argsort of the ids, -1 for dropped rows and
    the tail), with the kernel's group_offsets; for T = 7 and 4096 also
    with offsets that do not match the ids (garbage, negative, past R: the
    clamping of docs/dialect.md / MoEToLoops.cpp), and a second run must
    give the same bits (deterministic).
  * moe_permute: out equal, bit for bit, to x[sorted_rows // 8], zero rows
    for negative and out-of-range entries (some are injected).
  * moe_unpermute: out within 1e-2 of the f32 reference's largest magnitude
    (sum over j = 0..7 in order; bf16 output), positions past y (injected)
    and -1 contributing nothing even with NaN weights there, bitwise
    identical on a second run; f32 and bf16 weights; an empty y (R = 0)
    gives zeros.
  * swiglu and swiglu_backward (swiglu_i512 on [R, 2I], swiglu_i2048_parts
    on [2, R, I], with the E = 128 and 256 routings at T = 7 and 4096):
    act, dh, w * act and d topk_weights within 1e-2 of an f32 torch
    reference, the unplaced tail's rows zero although its grad and h rows
    hold NaN, dropped slots' weight gradients zero, d topk_weights bitwise
    identical on a second run.
  * CUDA graphs: histogram -> sort -> permute -> unpermute captured once at
    T = 4096 and replayed with new ids, x and weights written into the
    captured buffers (outputs poisoned before each replay).

Timing (unless --no-bench), T = 4096 and 32768: each kernel's median time
per launch (microseconds, CUDA-event timings of 10 launches replayed from a
CUDA graph) beside a torch equivalent (bincount + cumsum, stable argsort +
inverse scatter, index_select, gather + weighted f32 sum), with the bytes
moved per microsecond for the copies. The routing kernels are one block of
1024 threads (one SM): their time grows with T * k.
Exits 1 unless every check passed (then it prints ALL OK before timing).
"""
import argparse
import math
import re
import sys

import torch

from grouped_matmul_check import device_line
from paged_decode_bench import graphed, timed
from paged_decode_check import Runtime

TOPK = 8
SHAPES = {128: 2048, 256: 7168}  # experts -> hidden size of that MoE
TOKENS = [1, 7, 4096, 32768]
POISON = 0xA5A5A5A5 - (1 << 32)  # 0xA5A5A5A5 as an int32
DROPPED = [-1, -(1 << 31), (1 << 31) - 1]  # plus E and E + 7
NAME = re.compile(r"(?P<op>hist|sort|permute|unpermute|swiglu|swiglu_backward)"
                  r"_(?P<kind>[ehi])(?P<n>\d+)(?P<variant>_wbf16|_parts)?$")
# experts -> intermediate size and h's layout of the SwiGLU kernels checked
# with that routing (the reference MoE fused [R, 2I], DeepSeek-V3's apart).
SWIGLU = {128: (512, ""), 256: (2048, "_parts")}
DEV = "cuda"


def poison_int(*shape):
    return torch.full(shape, POISON, dtype=torch.int32, device=DEV)


def poison_float(*shape, dtype=torch.bfloat16):
    return torch.full(shape, math.nan, dtype=dtype, device=DEV)


def routing(T, E, gen, drop=0.02):
    """[T, 8] int32 ids: 8 distinct experts a token, about `drop` of them
    replaced by ids outside [0, E)."""
    if T == 0:
        return torch.empty(0, TOPK, dtype=torch.int32, device=DEV)
    scores = torch.rand(T, E, device=DEV, generator=gen)
    ids = scores.topk(TOPK, dim=1).indices.to(torch.int32)
    bad = torch.tensor(DROPPED + [E, E + 7], dtype=torch.int32, device=DEV)
    mask = torch.rand(T, TOPK, device=DEV, generator=gen) < drop
    pick = torch.randint(0, len(bad), (T, TOPK), device=DEV, generator=gen)
    return torch.where(mask, bad[pick], ids).contiguous()


# --- references (docs/dialect.md; MoEToLoops.cpp is the host oracle) -------

def ref_histogram(ids, E):
    flat = ids.reshape(-1).long()
    valid = (flat >= 0) & (flat < E)
    counts = torch.bincount(flat[valid], minlength=E)[:E]
    return counts.int(), torch.cumsum(counts, 0).int()


def ref_sort(ids, offsets, E):
    """sorted_rows [R], row_positions [T, k] of the op, with the group ends
    clamped like the host: end_e = min(R, max(0, offsets[0..e]))."""
    flat = ids.reshape(-1).long()
    R = flat.numel()
    valid = (flat >= 0) & (flat < E)
    key = torch.where(valid, flat, torch.full_like(flat, E))
    order = torch.argsort(key, stable=True)
    counts = torch.bincount(key, minlength=E + 1)
    start = torch.cumsum(counts, 0) - counts  # first sorted index per key
    rank = torch.empty_like(flat)
    rank[order] = torch.arange(R, device=DEV) - start[key[order]]
    ends = torch.cummax(offsets.long().clamp(min=0), 0).values.clamp(max=R)
    begins = torch.cat([ends.new_zeros(1), ends[:-1]])
    expert = key.clamp(max=E - 1)
    pos = begins[expert] + rank
    placed = valid & (pos < ends[expert])
    positions = torch.where(placed, pos, torch.full_like(pos, -1))
    sorted_rows = torch.full((R,), -1, dtype=torch.long, device=DEV)
    sorted_rows[pos[placed]] = torch.arange(R, device=DEV)[placed]
    return sorted_rows.int(), positions.view(ids.shape).int()


def ref_permute(x, rows):
    rows = rows.long()
    valid = (rows >= 0) & (rows < x.shape[0] * TOPK)
    out = torch.zeros(rows.numel(), x.shape[1], dtype=x.dtype, device=DEV)
    out[valid] = x[rows[valid] // TOPK]
    return out


def ref_unpermute(y, positions, weights):
    """f32 [T, H]: sum over j in order of weights[t, j] * y[pos[t, j]]."""
    T, H = positions.shape[0], y.shape[1]
    acc = torch.zeros(T, H, device=DEV)
    R = y.shape[0]
    if R == 0:
        return acc
    pos = positions.long()
    valid = (pos >= 0) & (pos < R)
    safe = torch.where(valid, pos, torch.zeros_like(pos))
    for j in range(positions.shape[1]):
        term = weights[:, j].float()[:, None] * y[safe[:, j]].float()
        acc = torch.where(valid[:, j, None], acc + term, acc)
    return acc


def inject(t, values, count, gen):
    """`t` (a copy) with `count` random entries set to random `values`."""
    t = t.clone()
    flat = t.view(-1)
    if flat.numel() == 0:
        return t
    at = torch.randint(0, flat.numel(), (count,), device=DEV, generator=gen)
    vals = torch.tensor(values, dtype=t.dtype, device=DEV)
    flat[at] = vals[torch.randint(0, len(values), (count,), device=DEV,
                                  generator=gen)]
    return t


# --- checks ------------------------------------------------------------------

class Report:
    def __init__(self):
        self.ok = True

    def line(self, name, tag, problems, extra=""):
        self.ok &= not problems
        print(f"  {'ok  ' if not problems else 'FAIL'} {name:22s} {tag:28s}"
              f"{extra}" + "".join(f"\n       {p}" for p in problems))


def equal(name, got, want, problems):
    """Exact equality (an unwritten poisoned element never equals)."""
    if torch.equal(got, want):
        return
    bad = (got != want).nonzero()
    if bad.shape[0] == 0:
        problems.append(f"{name}: differs")
        return
    at = tuple(bad[0].tolist())
    problems.append(f"{name}: {bad.shape[0]} of {want.numel()} elements "
                    f"differ; first at {at}: {got[at].item()} instead of "
                    f"{want[at].item()}")


def rel_error(out, ref):
    if ref.numel() == 0:
        return 0.0
    return ((out.float() - ref).abs().max().item() /
            max(ref.abs().max().item(), 1e-6))


def check_histogram(rt, k, E, ids, report):
    counts, offsets = poison_int(E), poison_int(E)
    rt.launch(k, [ids, counts, offsets])
    torch.cuda.synchronize()
    rc, ro = ref_histogram(ids, E)
    problems = []
    equal("counts", counts, rc, problems)
    equal("group_offsets", offsets, ro, problems)
    report.line(f"hist_e{E}", f"T={ids.shape[0]}", problems)
    return offsets


def run_sort(rt, k, ids, offsets):
    R = ids.numel()
    sorted_rows, positions = poison_int(R), poison_int(*ids.shape)
    rt.launch(k, [ids, offsets, sorted_rows, positions])
    torch.cuda.synchronize()
    return sorted_rows, positions


def check_sort(rt, k, E, ids, offsets, report, what="offsets from hist"):
    sorted_rows, positions = run_sort(rt, k, ids, offsets)
    rs, rp = ref_sort(ids, offsets, E)
    problems = []
    equal("sorted_rows", sorted_rows, rs, problems)
    equal("row_positions", positions, rp, problems)
    again = run_sort(rt, k, ids, offsets)
    if not (torch.equal(again[0], sorted_rows) and
            torch.equal(again[1], positions)):
        problems.append("second run differs (not deterministic)")
    report.line(f"sort_e{E}", f"T={ids.shape[0]} {what}", problems)
    return sorted_rows, positions


def check_permute(rt, k, H, x, rows, report):
    out = poison_float(rows.numel(), H)
    rt.launch(k, [x, rows, out])
    torch.cuda.synchronize()
    problems = []
    equal("out", out, ref_permute(x, rows), problems)
    report.line(f"permute_h{H}", f"T={x.shape[0]} R={rows.numel()}",
                problems)
    return out


def check_unpermute(rt, k, name, y, positions, weights, report):
    T, H = positions.shape[0], y.shape[1]
    out = poison_float(T, H)
    rt.launch(k, [y, positions, weights, out])
    torch.cuda.synchronize()
    ref = ref_unpermute(y, positions, weights)
    problems = []
    if torch.isnan(out).any():
        problems.append("NaN in out (unwritten, or a dropped slot leaked)")
    err = rel_error(out, ref)
    if not err <= 1e-2:
        problems.append(f"out error {err:.1e} > 1e-2")
    again = poison_float(T, H)
    rt.launch(k, [y, positions, weights, again])
    torch.cuda.synchronize()
    if not torch.equal(again.view(torch.int16), out.view(torch.int16)):
        problems.append("second run differs (not deterministic)")
    report.line(name, f"T={T} R={y.shape[0]}", problems, f" err {err:.1e}")


def ref_swiglu_backward(g, h, weights, sorted_rows):
    """dh (layout of h), w * act and d topk_weights [T, k] in f32; rows whose
    sorted_rows entry is no slot give zeros; h [R, 2I] or [2, R, I]."""
    fused = h.dim() == 2
    gate, up = (h.float().chunk(2, dim=1) if fused else h.float().unbind(0))
    slot = sorted_rows.long()
    placed = slot >= 0
    w = torch.where(placed, weights.reshape(-1)[slot.clamp(min=0)],
                    torch.zeros((), device=DEV))[:, None]
    s = torch.sigmoid(gate)
    act = gate * s * up
    gz = torch.where(placed[:, None], g.float(), torch.zeros((), device=DEV))
    d_gate = gz * w * up * s * (1 + gate * (1 - s))
    d_up = gz * w * gate * s
    d_gate, d_up, act_w = (torch.where(placed[:, None], t,
                                       torch.zeros((), device=DEV))
                           for t in (d_gate, d_up, act * w))
    dh = torch.cat([d_gate, d_up], 1) if fused else torch.stack([d_gate, d_up])
    dw = torch.zeros(weights.numel(), device=DEV)
    dw[slot[placed]] = (gz * act)[placed].sum(1)
    return dh, act_w, dw.view(weights.shape)


def check_swiglu(rt, forward, backward, name, sorted_rows, positions, gen,
                 report, intermediate, parts):
    """Both SwiGLU kernels on random rows, NaN in the unplaced tail's grad
    and h rows (the kernels must write zeros there, not NaN)."""
    R = sorted_rows.numel()
    shape = (2, R, intermediate) if parts else (R, 2 * intermediate)
    h = (torch.randn(shape, device=DEV, generator=gen) * 3).bfloat16()
    g = torch.randn(R, intermediate, device=DEV, generator=gen).bfloat16()
    weights = torch.rand(positions.shape, device=DEV, generator=gen)
    tail = sorted_rows < 0
    g[tail] = math.nan
    if parts:
        h[:, tail] = math.nan
    else:
        h[tail] = math.nan
    problems = []
    act = poison_float(R, intermediate)
    rt.launch(forward, [h, act])
    torch.cuda.synchronize()
    gate, up = (h.float().chunk(2, dim=1) if not parts else h.float().unbind(0))
    want = gate * torch.sigmoid(gate) * up
    err = rel_error(act[~tail], want[~tail])
    if not err <= 1e-2:
        problems.append(f"act error {err:.1e} > 1e-2")
    dh, act_w = poison_float(*shape), poison_float(R, intermediate)
    dw = poison_float(*positions.shape, dtype=torch.float32)
    rt.launch(backward, [g, h, weights, sorted_rows, positions, dh, act_w,
                         dw])
    torch.cuda.synchronize()
    ref = ref_swiglu_backward(g, h, weights, sorted_rows)
    for what, got, want in zip(("dh", "act_weighted", "d_topk_weights"),
                               (dh, act_w, dw), ref):
        if torch.isnan(got).any():
            problems.append(f"NaN in {what} (unwritten, or the tail leaked)")
        e = rel_error(got, want)
        err = max(err, e)
        if not e <= 1e-2:
            problems.append(f"{what} error {e:.1e} > 1e-2")
    again = poison_float(*positions.shape, dtype=torch.float32)
    rt.launch(backward, [g, h, weights, sorted_rows, positions, dh, act_w,
                         again])
    torch.cuda.synchronize()
    if not torch.equal(again, dw):
        problems.append("second run's d_topk_weights differ (not "
                        "deterministic)")
    report.line(name, f"R={R} tail={int(tail.sum())}", problems,
                f" err {err:.1e}")


def weights_for(positions, R, dtype, gen):
    """Router weights, NaN where the slot contributes nothing (position -1
    or past y): they must not reach out."""
    w = torch.rand(positions.shape, device=DEV, generator=gen)
    pos = positions.long()
    dropped = (pos < 0) | (pos >= R)
    return torch.where(dropped, torch.full_like(w, math.nan), w).to(dtype)


def check_shape(rt, kernels, E, gen, report):
    H = SHAPES[E]
    hist, sort = kernels[f"hist_e{E}"], kernels[f"sort_e{E}"]
    permute, unpermute = kernels[f"permute_h{H}"], kernels[f"unpermute_h{H}"]
    check_histogram(rt, hist, E, routing(0, E, gen), report)
    for T in TOKENS:
        ids = routing(T, E, gen)
        R = T * TOPK
        offsets = check_histogram(rt, hist, E, ids, report)
        sorted_rows, positions = check_sort(rt, sort, E, ids, offsets,
                                            report)
        if T in (7, 4096):
            garbage = torch.randint(-5, R + 9, (E,), device=DEV,
                                    generator=gen, dtype=torch.int32)
            check_sort(rt, sort, E, ids, garbage, report, "garbage offsets")
            short = (offsets // 2).contiguous()  # ends that drop rows
            check_sort(rt, sort, E, ids, short, report, "offsets / 2")
        x = torch.randn(T, H, device=DEV, generator=gen).bfloat16()
        rows = inject(sorted_rows, [R, R + 5, -3, (1 << 31) - 1],
                      max(1, R // 100), gen)
        permuted = check_permute(rt, permute, H, x, rows, report)
        y = torch.randn(R, H, device=DEV, generator=gen).bfloat16()
        pos = inject(positions, [R, R + 1, -7], max(1, R // 100), gen)
        w = weights_for(pos, R, torch.float32, gen)
        check_unpermute(rt, unpermute, f"unpermute_h{H}", y, pos, w, report)
        wb = f"unpermute_h{H}_wbf16"
        if wb in kernels and T <= 4096:
            check_unpermute(rt, kernels[wb], wb, y, pos,
                            weights_for(pos, R, torch.bfloat16, gen), report)
        intermediate, variant = SWIGLU[E]
        if T in (7, 4096):
            check_swiglu(rt, kernels[f"swiglu_i{intermediate}{variant}"],
                         kernels[f"swiglu_backward_i{intermediate}{variant}"],
                         f"swiglu_i{intermediate}{variant}", sorted_rows,
                         positions, gen, report, intermediate, bool(variant))
        del x, y, permuted
    # No rows in y: nothing to read, out = 0.
    T = 5
    pos = torch.full((T, TOPK), -1, dtype=torch.int32, device=DEV)
    pos[0, 0] = 3
    check_unpermute(rt, unpermute, f"unpermute_h{H}",
                    torch.empty(0, H, device=DEV, dtype=torch.bfloat16), pos,
                    torch.rand(T, TOPK, device=DEV, generator=gen), report)


def graph_check(rt, kernels, E, gen, report):
    """The four kernels captured as one CUDA graph at T = 4096, replayed
    with new ids, x and weights."""
    H, T = SHAPES[E], 4096
    R = T * TOPK
    ids = routing(T, E, gen)
    counts, offsets = poison_int(E), poison_int(E)
    sorted_rows, positions = poison_int(R), poison_int(T, TOPK)
    x = torch.randn(T, H, device=DEV, generator=gen).bfloat16()
    permuted = poison_float(R, H)
    w = torch.rand(T, TOPK, device=DEV, generator=gen)
    out = poison_float(T, H)

    def pipeline():
        rt.launch(kernels[f"hist_e{E}"], [ids, counts, offsets])
        rt.launch(kernels[f"sort_e{E}"], [ids, offsets, sorted_rows,
                                          positions])
        rt.launch(kernels[f"permute_h{H}"], [x, sorted_rows, permuted])
        rt.launch(kernels[f"unpermute_h{H}"], [permuted, positions, w, out])

    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        pipeline()  # warm up outside capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            pipeline()
    torch.cuda.synchronize()
    for replay in range(2):
        ids.copy_(routing(T, E, gen, drop=0.05 * (replay + 1)))
        x.copy_(torch.randn(T, H, device=DEV, generator=gen).bfloat16())
        w.copy_(torch.rand(T, TOPK, device=DEV, generator=gen))
        for t in (counts, offsets, sorted_rows, positions):
            t.fill_(POISON)
        permuted.fill_(math.nan)
        out.fill_(math.nan)
        graph.replay()
        torch.cuda.synchronize()
        rc, ro = ref_histogram(ids, E)
        rs, rp = ref_sort(ids, ro, E)
        rperm = ref_permute(x, rs)
        ref = ref_unpermute(rperm, rp, w)
        problems = []
        equal("counts", counts, rc, problems)
        equal("group_offsets", offsets, ro, problems)
        equal("sorted_rows", sorted_rows, rs, problems)
        equal("row_positions", positions, rp, problems)
        equal("permuted", permuted, rperm, problems)
        err = rel_error(out, ref)
        if torch.isnan(out).any() or not err <= 1e-2:
            problems.append(f"out error {err:.1e} (or NaN)")
        report.line(f"graph e{E}/h{H}", f"replay {replay} T={T}", problems,
                    f" err {err:.1e}")


# --- timing ------------------------------------------------------------------

def torch_unpermute(y, gather, w):
    """The weighted combine in torch: one gather of [T, H] rows per slot,
    summed in f32 in slot order."""
    acc = torch.zeros(gather.shape[0], y.shape[1], device=DEV)
    for j in range(gather.shape[1]):
        acc += w[:, j, None] * y[gather[:, j]].float()
    return acc.bfloat16()


def us(fn):
    return timed(fn) * 1e3


def tessel_us(launch):
    fn, rep = graphed(launch)
    return us(fn) / rep


def bench(rt, kernels, gen):
    print("Timing (microseconds per launch; torch beside; GB/s of the "
          "copies' bytes read + written):")
    for E, H in SHAPES.items():
        for T in (4096, 32768):
            R = T * TOPK
            ids = routing(T, E, gen)
            counts, offsets = poison_int(E), poison_int(E)
            sorted_rows, positions = poison_int(R), poison_int(T, TOPK)
            hist, sort = kernels[f"hist_e{E}"], kernels[f"sort_e{E}"]
            rt.launch(hist, [ids, counts, offsets])
            rt.launch(sort, [ids, offsets, sorted_rows, positions])
            x = torch.randn(T, H, device=DEV, generator=gen).bfloat16()
            permuted = torch.empty(R, H, device=DEV, dtype=torch.bfloat16)
            w = torch.rand(T, TOPK, device=DEV, generator=gen)
            out = torch.empty(T, H, device=DEV, dtype=torch.bfloat16)
            key = ids.reshape(-1).long()
            key = torch.where((key >= 0) & (key < E), key,
                              torch.full_like(key, E))
            tok = (sorted_rows.long().clamp(min=0) // TOPK)
            gather = positions.long().clamp(min=0)

            def torch_hist():
                c = torch.bincount(key, minlength=E + 1)[:E]
                return torch.cumsum(c, 0)

            def torch_sort():
                order = torch.argsort(key, stable=True)
                inv = torch.empty_like(order)
                inv[order] = torch.arange(R, device=DEV)
                return order, inv

            rows = [
                ("expert_histogram",
                 tessel_us(lambda: rt.launch(hist, [ids, counts, offsets])),
                 us(torch_hist), None),
                ("expert_sort",
                 tessel_us(lambda: rt.launch(sort, [ids, offsets,
                                                    sorted_rows, positions])),
                 us(torch_sort), None),
                ("moe_permute",
                 tessel_us(lambda: rt.launch(kernels[f"permute_h{H}"],
                                             [x, sorted_rows, permuted])),
                 us(lambda: torch.index_select(x, 0, tok)), 2 * R * H * 2),
                ("moe_unpermute",
                 tessel_us(lambda: rt.launch(kernels[f"unpermute_h{H}"],
                                             [permuted, positions, w, out])),
                 us(lambda: torch_unpermute(permuted, gather, w)),
                 (R + T) * H * 2),
            ]
            print(f"  E={E} H={H} T={T} (R={R}):")
            for name, t_ours, t_torch, nbytes in rows:
                bw = (f"  {nbytes / t_ours / 1e3:7.0f} GB/s"
                      if nbytes else "")
                print(f"    {name:18s} tessel {t_ours:9.1f} us   torch "
                      f"{t_torch:9.1f} us{bw}")
            del x, permuted, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundles", nargs="+")
    parser.add_argument("--runtime", required=True)
    parser.add_argument("--seed", type=int, default=4321)
    parser.add_argument("--no-bench", action="store_true")
    args = parser.parse_args()
    gen = torch.Generator(device=DEV)
    gen.manual_seed(args.seed)
    print(device_line())
    rt = Runtime(args.runtime)
    kernels = rt.kernels(args.bundles, NAME.match)
    report = Report()
    for E in SHAPES:
        try:
            check_shape(rt, kernels, E, gen, report)
            graph_check(rt, kernels, E, gen, report)
        except Exception as e:  # report, keep going
            print(f"  FAIL E={E}: {type(e).__name__}: {e}")
            report.ok = False
    print("ALL OK" if report.ok else "SOME CHECKS FAILED")
    if not args.no_bench:
        bench(rt, kernels, gen)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
