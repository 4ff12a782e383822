"""What the benchmarks share: their command line, the device and bundles,
timing, and the report of checks and peer rows that bench/peer_table.py
collects into one table.

Every benchmark takes:
  --bundles DIR  the bundles of scripts/prepare-gpu-bundles.sh (default:
                 .carry in the repository);
  --smoke        tiny shapes on the host backend (CPU torch, no GPU): the
                 benchmark's plumbing and checks, not its speed; peers that
                 need CUDA are skipped with a note;
  --reps N       timed calls per measurement (the median is shown);
  --seed N       the random data's seed;
  --rows FILE    where to append its peer rows and failed checks, one JSON
                 object a line (bench/peer_table.py reads them).
Each timed Tessel output is checked once against a reference first, so a
wrong fast kernel is reported as wrong, and the benchmark exits 1; times
are never asserted.
"""

import argparse
import json
import os
import statistics
import time

import torch

import tessel

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Rates (higher is better); any other unit is a time (lower is better).
RATES = ("TFLOP/s", "TB/s", "GB/s", "tokens/s")


def parser(doc: str, reps: int = 20) -> argparse.ArgumentParser:
    """The benchmarks' common options (the module docstring says them)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--bundles", default=os.path.join(REPO, ".carry"),
                   help="directory of the prepared bundles (default: "
                        "%(default)s)")
    p.add_argument("--smoke", action="store_true",
                   help="tiny shapes on the host backend")
    p.add_argument("--reps", type=int, default=reps,
                   help="timed calls per measurement (default %(default)s; "
                        "2 with --smoke)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--rows", help="append peer rows and failures here "
                                  "(JSON lines, for bench/peer_table.py)")
    return p


def graphed(launch, repeat: int = 1):
    """`repeat` launches captured into one CUDA graph (after one outside
    the capture, which loads the kernel); the graph's replay."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        launch()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(repeat):
                launch()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    return graph.replay


class Bench:
    """One benchmark run: where it runs, its timing, and its report."""

    def __init__(self, args, name: str):
        self.name, self.args, self.smoke = name, args, args.smoke
        self.reps = 2 if args.smoke else args.reps
        self.device = "cpu" if self.smoke else "cuda"
        self.tessel_device = tessel.Device("host") if self.smoke else \
            tessel.Device("cuda", 0)
        self.gen = torch.Generator(device=self.device).manual_seed(args.seed)
        self.failures = []
        self._rows = []
        self._graph_noted = False
        # fp32 references in fp32, not TF32.
        torch.backends.cuda.matmul.allow_tf32 = False
        print(self.device_line())

    def device_line(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M %Z")
        if self.smoke:
            return (f"{self.name}: --smoke on the host backend (CPU torch "
                    f"{torch.__version__}), {when}: tiny shapes, times "
                    f"meaningless")
        p = torch.cuda.get_device_properties(0)
        return (f"{self.name}: {p.name} (sm_{p.major}{p.minor}), torch "
                f"{torch.__version__}, CUDA {torch.version.cuda}, {when}")

    # --- bundles and devices ---------------------------------------------

    def bundle(self, name: str) -> tessel.Bundle:
        """<bundles>/<name>.tsb on the benchmark's device (the device's
        preferred target of each kernel: sm_90a on an H100/H200 where the
        bundle has it)."""
        path = os.path.join(self.args.bundles, f"{name}.tsb")
        if not os.path.isfile(path):
            raise SystemExit(f"{self.name}: no bundle {path}: run "
                             f"scripts/prepare-gpu-bundles.sh first")
        return tessel.Bundle(self.tessel_device, path)

    def compute_units(self) -> int:
        """The GPU's SMs, or the host's cores."""
        if self.smoke:
            return os.cpu_count() or 1
        return torch.cuda.get_device_properties(0).multi_processor_count

    def note(self, text: str):
        print(f"  note: {text}")

    def cuda_only(self, what: str) -> bool:
        """True (after a note) when `what` needs CUDA and this is --smoke."""
        if self.smoke:
            self.note(f"{what} skipped: it needs CUDA (--smoke runs on the "
                      f"host)")
        return self.smoke

    # --- timing -----------------------------------------------------------

    def time_ms(self, fn, reps=None, warmup=None) -> float:
        """Median milliseconds of one call of `fn` over `reps` calls (after
        `warmup` calls): on the GPU each call between two CUDA events
        (device time, including gaps while the host launches), on the host
        wall time."""
        reps = reps or self.reps
        warmup = (1 if self.smoke else 5) if warmup is None else warmup
        for _ in range(warmup):
            fn()
        if self.smoke:
            times = []
            for _ in range(reps):
                start = time.perf_counter()
                fn()
                times.append((time.perf_counter() - start) * 1e3)
            return statistics.median(times)
        events = [(torch.cuda.Event(enable_timing=True),
                   torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
        torch.cuda.synchronize()
        for start, stop in events:
            start.record()
            fn()
            stop.record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in events)

    def launch_ms(self, launch, repeat: int = 10) -> float:
        """Milliseconds of one `launch`: on the GPU `repeat` launches
        replayed from one CUDA graph, so that Python's launch overhead is
        not timed; on the host plain calls."""
        if self.smoke:
            if not self._graph_noted:
                self.cuda_only("CUDA-graph replay of the launches (timed "
                               "as plain calls)")
                self._graph_noted = True
            return self.time_ms(launch)
        return self.time_ms(graphed(launch, repeat)) / repeat

    def peer_ms(self, call) -> float:
        """Milliseconds of one plain `call` of a peer, over as many calls
        as launch_ms replays of Tessel's kernels (10 a timed call), so that
        both run equally long: the H200 holds its 700 W limit by lowering
        the SM clock within a fraction of a second (1.98 GHz in a burst,
        1.67-1.74 GHz sustained under prefill, 2026-12-04), so a peer timed
        over a tenth of the calls ran at a clock Tessel's kernels did not
        get."""
        if self.smoke:
            return self.time_ms(call)
        return self.time_ms(call, reps=10 * self.reps, warmup=10 * 5)

    def copy_ceiling(self) -> float:
        """TB/s of a large device-to-device copy (bytes read + written):
        2 GiB on the GPU, 64 MiB on the host."""
        n = (1 << 26) if self.smoke else (1 << 29)  # f32 elements
        src = torch.empty(n, device=self.device)
        dst = torch.empty_like(src)
        ms = self.time_ms(lambda: dst.copy_(src))
        return 2 * n * 4 / ms / 1e9

    # --- the report -------------------------------------------------------

    def check(self, what: str, ok: bool, detail: str = "") -> bool:
        """One correctness check of a timed output; a failure is kept."""
        print(f"  {'ok   ' if ok else 'WRONG'} {what}"
              f"{': ' + detail if detail else ''}")
        if not ok:
            self.failures.append(f"{what}: {detail}")
        return ok

    def row(self, case: str, unit: str, tessel_value, peer: str,
            peer_value):
        """One peer-table entry: Tessel's measure of `case` beside a
        peer's (None: not measured)."""
        self._rows.append(dict(bench=self.name, case=case, unit=unit,
                               tessel=tessel_value, peer=peer,
                               peer_value=peer_value))

    def finish(self) -> int:
        """Writes the rows and failures (--rows), prints the verdict; the
        exit status: 1 if a Tessel output was wrong."""
        if self.args.rows:
            with open(self.args.rows, "a") as f:
                for r in self._rows:
                    f.write(json.dumps(r) + "\n")
                for what in self.failures:
                    f.write(json.dumps(dict(bench=self.name, failed=what))
                            + "\n")
        if self.failures:
            print(f"{self.name}: {len(self.failures)} TESSEL OUTPUTS WRONG")
            return 1
        print(f"{self.name}: ALL OK")
        return 0


def speedup(unit: str, tessel_value, peer_value):
    """How many times faster Tessel is than the peer (None if either is
    missing or zero)."""
    if not tessel_value or not peer_value:
        return None
    if unit in RATES:
        return tessel_value / peer_value
    return peer_value / tessel_value


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """max |out - ref| / max |ref|, in float64; NaN anywhere in out gives
    NaN (which fails every bound)."""
    if out.numel() == 0:
        return 0.0
    out, ref = out.double(), ref.double()
    if torch.isnan(out).any():
        return float("nan")
    return (out - ref).abs().max().item() / (ref.abs().max().item() or 1.0)
