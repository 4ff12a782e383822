#!/usr/bin/env python3
"""Compiles every attention template over a grid of shapes for one target
and reports the compiles that crashed (a signal, or a failure without an
`error:` diagnostic): a refused shape must be a clear error, never a crash.
Too slow for CI (about 3 minutes a target on 2 cores); run it after
changing a template.

    python3 scripts/sweep-attention-templates.py sm80 [TESSEL_AOT]
"""
import itertools
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python-bindings"))
from tessel import specs  # noqa: E402  (plain Python: no build needed)

HEADS = [(8, 1), (8, 2), (16, 16), (32, 8), (64, 4), (128, 8)]
DIMS = [64, 128, 192, 256]


def cases():
    for d, (hq, hkv), bs, layout in itertools.product(
            DIMS, HEADS, [16, 32, 64], ["nhd", "shuffled"]):
        where = f"d{d} {hq}/{hkv} bs{bs} {layout}"
        yield f"decode {where}", specs.decode("k", hq, hkv, d, bs,
                                              layout=layout)
        yield f"split {where}", specs.paged("k", hq, hkv, d, bs,
                                            layout=layout)
        yield f"context {where}", specs.paged("k", hq, hkv, d, bs,
                                              layout=layout, cu_seqlens=True)
    for d, dv, (hq, hkv) in itertools.product(DIMS, DIMS,
                                              [(8, 2), (16, 16), (32, 8)]):
        yield f"prefill d{d}/{dv} {hq}/{hkv}", specs.prefill(
            "k", hq, hkv, d, v_head_dim=dv, lse=True)
    for h, bs, split in itertools.product([1, 8, 16, 32, 64, 128], [16, 64],
                                          [False, True]):
        yield f"mla h{h} bs{bs} split={split}", specs.mla_decode(
            "k", h, bs, split=split)
    for h, d in itertools.product([1, 3, 32, 128], DIMS + [512]):
        yield f"merge h{h} d{d}", specs.lse_merge("k", h, d)
        yield f"merge_n h{h} d{d}", specs.lse_merge_n("k", h, d)


def main():
    target = sys.argv[1]
    aot = sys.argv[2] if len(sys.argv) > 2 else \
        os.path.join(REPO, "build", "bin", "tessel-aot")
    count = crashes = 0
    with tempfile.TemporaryDirectory() as tmp:
        spec_path = os.path.join(tmp, "spec.mlir")
        for title, spec in cases():
            count += 1
            with open(spec_path, "w") as f:
                f.write(spec)
            result = subprocess.run(
                [aot, spec_path, f"--targets={target}", "--quiet", "-o",
                 os.path.join(tmp, "out.tsb")], capture_output=True,
                text=True)
            if result.returncode < 0 or (result.returncode != 0 and
                                         "error:" not in result.stderr):
                crashes += 1
                print(f"CRASH (exit {result.returncode})  {title}",
                      flush=True)
    print(f"{target}: {count} shapes, {crashes} crashes")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
