#!/usr/bin/env python3
"""Runs every benchmark of bench/ against the bundles in one directory and
prints the whole peer table: one row per case with Tessel's measure beside
each peer's (torch SDPA, torch._grouped_mm, eager torch, the sm80
template, the copy ceiling, the dispatcher's triple mode) and Tessel's
speed over the peer's.

    bash scripts/prepare-gpu-bundles.sh .carry        # development machine
    python3 bench/peer_table.py [--bundles .carry]    # GPU machine
    python3 bench/peer_table.py --smoke               # anywhere, no GPU

Each benchmark's own tables stream as it runs; at the end the peer table,
then each benchmark's failures: Tessel outputs its check found wrong (every
timed output is checked once against a reference) and benchmarks that
crashed. Exits 1 if there is any. --smoke compiles bench/'s specs for the
host (scripts/prepare-gpu-bundles.sh with TESSEL_BUNDLE_TARGETS=host, into
a temporary directory unless --bundles is given) and runs every
benchmark's --smoke: tiny shapes on the host backend, the plumbing and the
checks, not the speed (ctest's bench-smoke). The tessel package comes from
PYTHONPATH (scripts/install-python.sh --prefix DIR, or build/python).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import benchlib

BENCHMARKS = ["attention_bench", "paged_decode_bench", "prefill_bench",
              "mla_decode_bench", "grouped_matmul_bench", "moe_glue_bench",
              "moe_layer_bench", "mixed_batch_bench", "extend_turn_bench",
              "continuous_batching"]
HERE = os.path.dirname(os.path.abspath(__file__))


def prepare_host_bundles(directory):
    """bench/'s specs compiled for the host into `directory`."""
    env = dict(os.environ, TESSEL_BUNDLE_TARGETS="host")
    print(f"== compiling bench/*_kernels.mlir for the host into {directory}",
          flush=True)
    subprocess.run(["bash", os.path.join(benchlib.REPO, "scripts",
                                         "prepare-gpu-bundles.sh"),
                    directory], env=env, check=True,
                   stdout=subprocess.DEVNULL)


def run(name, args, bundles, rows):
    """Runs one benchmark, its output streaming; (exit status, seconds)."""
    command = [sys.executable, os.path.join(HERE, f"{name}.py"),
               "--bundles", bundles, "--rows", rows]
    if args.smoke:
        command.append("--smoke")
    if args.reps:
        command += ["--reps", str(args.reps)]
    print(f"\n== {name}", flush=True)
    start = time.monotonic()
    status = subprocess.run(command).returncode
    return status, time.monotonic() - start


def value(x, unit):
    return f"{x:.3g} {unit}" if x else "-"


def print_table(entries):
    """The peer table: a row per (benchmark, case, peer), the benchmark and
    case written once."""
    lines, last = [], None
    for e in entries:
        ratio = benchlib.speedup(e["unit"], e["tessel"], e["peer_value"])
        key = (e["bench"], e["case"])
        shown = key if key != last else ("", "")
        lines.append((*shown, value(e["tessel"], e["unit"]) if shown[0]
                      else "", e["peer"], value(e["peer_value"], e["unit"]),
                      f"{ratio:.2f}x" if ratio else "-"))
        last = key
    header = ("benchmark", "case", "Tessel", "peer", "peer's", "Tessel/peer")
    widths = [max(len(str(c)) for c in column)
              for column in zip(header, *lines)]
    print("\n== peer table (Tessel/peer: how many times faster Tessel is)")
    for line in [header] + lines:
        print("  ".join(str(c).ljust(w) for c, w in zip(line, widths))
              .rstrip())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundles", help="the prepared bundles (default: "
                        ".carry; with --smoke, host bundles compiled now)")
    parser.add_argument("--smoke", action="store_true",
                        help="every benchmark's --smoke on the host backend")
    parser.add_argument("--only", action="append", choices=BENCHMARKS,
                        help="run this benchmark (repeatable; default all)")
    parser.add_argument("--reps", type=int,
                        help="timed calls per measurement (default: each "
                        "benchmark's)")
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="tessel-peer-table-")
    try:
        bundles = args.bundles or os.path.join(benchlib.REPO, ".carry")
        if args.smoke and not args.bundles:
            bundles = os.path.join(scratch, "bundles")
            prepare_host_bundles(bundles)
        rows = os.path.join(scratch, "rows.jsonl")
        statuses = {name: run(name, args, bundles, rows)
                    for name in args.only or BENCHMARKS}
        entries = []
        if os.path.exists(rows):
            with open(rows) as f:
                entries = [json.loads(line) for line in f]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print_table([e for e in entries if "case" in e])
    print("\n== benchmarks")
    failed = False
    for name, (status, seconds) in statuses.items():
        wrong = [e["failed"] for e in entries
                 if e["bench"] == name and "failed" in e]
        verdict = "ok" if status == 0 else \
            f"FAILED ({len(wrong)} wrong outputs)" if wrong else \
            f"FAILED (exit status {status}: see its output above)"
        print(f"  {name:22s} {seconds:7.1f} s  {verdict}")
        for what in wrong:
            print(f"      wrong: {what}")
        failed |= status != 0
    print("peer_table: FAILED" if failed else "peer_table: ALL OK")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
