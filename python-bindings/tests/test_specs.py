"""tessel.specs: the spec writers import without torch or the native module,
their specs compile (tessel-aot, host) into kernels that the runtime finds
by the shape parameters the writers were given, and the generated spec
files in the repository are what the writers give today."""

import filecmp
import os
import pathlib
import subprocess
import sys

import pytest

import tessel
from tessel import specs

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_writers_need_neither_torch_nor_the_native_module():
    script = (
        "import sys\n"
        "sys.modules['torch'] = None  # any import of it raises\n"
        "sys.modules['tessel._tessel'] = None\n"
        "import tessel.specs as s\n"
        "text = (s.dispatch_set('a', 8, 2, 64, 16, ['nhd', 'shuffled'])\n"
        "        + s.mla_decode('m', 16, 64, split=True)\n"
        "        + s.grouped_mm(4, 32, 16) + s.moe_mlp(4, 32, 16, 2))\n"
        "print(text.count('func.func'))\n")
    result = subprocess.run([sys.executable, "-c", script],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    # 5 + 6 per layout, 1, 3, 20.
    assert result.stdout.split() == [str(17 + 1 + 3 + 20)]


# One kernel of each writer at small, odd-ish shapes: (spec, op, the
# shape parameters tessel-aot must record for it).
KERNELS = [
    (specs.prefill("pre", 6, 2, 64, v_head_dim=32, lse=True),
     "tessel.prefill_attention",
     dict(num_q_heads=6, num_kv_heads=2, head_dim=64, v_head_dim=32)),
    (specs.decode("dec", 4, 4, 64, 32, layout="shuffled", dtype="f16"),
     "tessel.decode_attention",
     dict(num_q_heads=4, num_kv_heads=4, head_dim=64, block_size=32)),
    (specs.paged("ctx", 8, 2, 64, 16, cu_seqlens=True),
     "tessel.paged_attention",
     dict(num_q_heads=8, num_kv_heads=2, head_dim=64, block_size=16)),
    (specs.lse_merge("acc", 3, 64, out_dtype="f32", lse_out=True),
     "tessel.lse_merge", dict(num_heads=3, head_dim=64)),
    (specs.lse_merge("acc16", 3, 64, lse_out=True, dtype="bf16"),
     "tessel.lse_merge", dict(num_heads=3, head_dim=64, has_lse=1)),
    (specs.lse_merge_n("mergen", 5, 32), "tessel.lse_merge_n",
     dict(num_heads=5, head_dim=32)),
    (specs.lse_merge_n("mergen16", 5, 32, lse_out=True, dtype="bf16"),
     "tessel.lse_merge_n", dict(num_heads=5, head_dim=32, has_lse=1)),
    (specs.reshape_and_cache("rc", 2, 64, 16, layout="shuffled"),
     "tessel.reshape_and_cache",
     dict(num_kv_heads=2, head_dim=64, block_size=16)),
    (specs.reshape_and_cache("rc2", 2, 64, 16, v_head_dim=32, dtype="f16"),
     "tessel.reshape_and_cache",
     dict(num_kv_heads=2, head_dim=64, v_head_dim=32, block_size=16)),
    (specs.mla_decode("mla", 16, 64), "tessel.mla_decode",
     dict(num_heads=16, block_size=64)),
]


def test_every_writer_compiles_and_is_found_by_its_shapes(host):
    bundle = tessel.Bundle(host, tessel.compile(
        "".join(spec for spec, _, _ in KERNELS), targets=["host"]))
    for spec, op, params in KERNELS:
        name = spec.split("@", 1)[1].split("(", 1)[0]
        kernel = bundle[name]
        assert kernel.op == op, name
        for key, value in params.items():
            assert kernel.params.get(key) == value, (name, key, kernel.params)
        if op != "tessel.lse_merge" and op != "tessel.lse_merge_n" and \
                op != "tessel.reshape_and_cache":
            assert kernel.scalars == ("scale",), name


def test_bad_layout_is_named():
    with pytest.raises(ValueError, match="layout 'hnd' is not 'nhd' or "
                                         "'shuffled'"):
        specs.decode("d", 4, 4, 64, 16, layout="hnd")


def test_generated_spec_files_are_current(tmp_path):
    """bench/gen_*.py write the committed bench and example specs from
    tessel.specs; rerun into a scratch tree, nothing may differ."""
    for folder in ("bench", "examples"):
        (tmp_path / folder).mkdir()
    bench = REPO / "bench"
    runs = [["gen_dispatch_kernels.py", str(tmp_path)],
            ["gen_attention_kernels.py", str(tmp_path / "bench")],
            ["gen_moe_layer_kernels.py",
             str(tmp_path / "bench" / "moe_layer_kernels.mlir")]]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    for script, out in runs:
        result = subprocess.run([sys.executable, str(bench / script), out],
                                capture_output=True, text=True, cwd=bench,
                                env=env)
        assert result.returncode == 0, result.stderr
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.mlir"))
    assert len(written) == 6
    stale = [str(p) for p in written
             if not filecmp.cmp(tmp_path / p, REPO / p, shallow=False)]
    assert stale == [], "regenerate with bench/gen_*.py: " + ", ".join(stale)
