#!/usr/bin/env python3
"""A short new turn on a long conversation: extends of a few new tokens
over long cached contexts, through tessel.Attention (llama3_8b of
<bundles>/dispatch.tsb). Three ways: triple with the context as the plan
schedules it (parallel windows of one launch when the new tokens cannot
fill the device), triple with the same context in chunks one after the
other (compute_units=1 makes the plan believe the new tokens fill it), and
unified (one causal kernel over each whole sequence, split into windows
the same way). Prints ms and the KV bandwidth (context K and V bytes read
/ time; the H200's device copy is ~4.3 TB/s) of each; each way's output is
checked first against a float64 reference.

    python3 bench/extend_turn_bench.py [--bundles .carry] [--smoke]
                                       [--layout shuffled]

(bench/benchlib.py: the common options.) --smoke: two small turns on the
host. --layout shuffled: the caches pre-shuffled (CDNA layout), each way
also timed on dispatch_sm80.tsb (the sm80 template on the same GPU).
"""
import sys

import benchlib
from paged_batch import PagedBatch

HEADS = (32, 8, 128, 16)  # llama3_8b in bench/dispatch_kernels.mlir
# (requests, context, new tokens)
CASES = [(1, 131072, 64), (1, 131072, 16), (4, 100000, 128), (8, 65536, 32),
         (16, 32768, 16)]
SMOKE_CASES = [(1, 300, 4), (2, 100, 3)]
# (label, routing, compute_units: 0 = the device's, 1 = chunks in sequence)
WAYS = [("triple: windows", "triple", 0),
        ("triple: chunks in sequence", "triple", 1),
        ("unified: splits", "unified", 0)]


def run_case(bench, bundle, requests, context, new_tokens, layout,
             baseline):
    """(ms, plan info) of each way; each output checked. With a
    `baseline` bundle, each way runs on it too and its row is printed."""
    batch = PagedBatch([(new_tokens, context)] * requests, HEADS, bench.gen,
                       bench.device, layout)
    case = f"{requests} x {new_tokens} new over {context}"
    ref, results = None, []
    for label, routing, units in WAYS:
        att = batch.attention(bundle, routing=routing, compute_units=units)
        if ref is None:
            batch.write_cache(att)
            ref = batch.reference()
        ms, out, info = batch.timed_run(att, bench)
        err = benchlib.relative_error(out, ref)
        bench.check(f"{case}, {label}", err <= 1e-2, f"error {err:.1e}")
        results.append((ms, info))
        if baseline:
            base = batch.attention(baseline, routing=routing,
                                   compute_units=units)
            base_ms, out, _ = batch.timed_run(base, bench)
            err = benchlib.relative_error(out, ref)
            bench.check(f"{case}, {label}, sm80 template", err <= 1e-2,
                        f"error {err:.1e}")
            bench.row(f"{case} ({layout}), {label}", "ms", ms,
                      "sm80 template", base_ms)
            print(f"{case} ({layout}), {label}: {ms:.3f} ms, sm80 template "
                  f"{base_ms:.3f} ms: {base_ms / ms:.2f}x")
    return case, results, batch.context_kv_bytes()


def main():
    parser = benchlib.parser(__doc__)
    parser.add_argument("--layout", choices=["nhd", "shuffled"],
                        default="nhd")
    args = parser.parse_args()
    bench = benchlib.Bench(args, "extend_turn_bench")
    bundle = bench.bundle("dispatch")
    baseline = (bench.bundle("dispatch_sm80")
                if args.layout == "shuffled" and not bench.smoke else None)
    rows = []
    for requests, context, new_tokens in (SMOKE_CASES if bench.smoke
                                          else CASES):
        case, results, kv = run_case(bench, bundle, requests, context,
                                     new_tokens, args.layout, baseline)
        (windows, info), (sequence, seq_info), (unified, uni_info) = results
        bench.check(f"{case}: compute_units=1 runs the chunks in sequence",
                    seq_info["context_chunks_parallel"] == 0)
        bench.row(f"{case}, triple: windows", "ms", windows,
                  "triple: chunks in sequence", sequence)
        bench.row(f"{case}, unified", "ms", unified,
                  "triple: chunks in sequence", sequence)
        cells = [info["context_chunks"], seq_info["context_chunks"],
                 uni_info["kv_splits"]]
        if not info["context_chunks_parallel"]:
            cells[0] = f"{cells[0]} (in sequence)"
        rows.append((requests, context, new_tokens, " | ".join(
            f"{c} | {t:.3f} | {kv / t / 1e9:.2f}"
            for c, t in zip(cells, (windows, sequence, unified)))))
    print("| requests | context | new tokens | triple: windows | ms | "
          "TB/s | triple: chunks in sequence | ms | TB/s | unified: splits "
          "| ms | TB/s |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for requests, context, new_tokens, cells in rows:
        print(f"| {requests} | {context} | {new_tokens} | {cells} |")
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
