"""tessel.compile: specs to bundles through tessel-aot (bin/tessel-aot of the
build tree's package), and its errors."""

import numpy as np
import pytest

import reference
import tessel
from tessel import compiler

SPEC = """
func.func @gmm_f32_g2_k5_n3(%a: memref<?x5xf32>, %b: memref<2x5x3xf32>, %off: memref<2xi32>, %c: memref<?x3xf32>) {
  tessel.grouped_matmul a(%a : memref<?x5xf32>) b(%b : memref<2x5x3xf32>) group_offsets(%off : memref<2xi32>) c(%c : memref<?x3xf32>)
  return
}
"""


def check_bundle(bundle, rng):
    kernel = bundle["gmm_f32_g2_k5_n3"]
    a = rng.standard_normal((9, 5)).astype(np.float32)
    b = rng.standard_normal((2, 5, 3)).astype(np.float32)
    offsets = reference.group_offsets([4, 3])
    c = np.full((9, 3), np.nan, np.float32)
    kernel(a, b, offsets, c)
    want = reference.grouped_matmul(a, b, offsets, trans_b=False)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)


def test_compile_text_to_bytes(host, rng):
    assert compiler.find_aot().endswith("tessel/bin/tessel-aot")
    data = tessel.compile(SPEC)
    assert isinstance(data, bytes) and data[:8] == b"TESSELKB"
    check_bundle(tessel.Bundle(host, data), rng)


def test_compile_file_to_file(host, rng, tmp_path):
    spec = tmp_path / "gmm.mlir"
    spec.write_text(SPEC)
    output = tmp_path / "gmm.tsb"
    assert tessel.compile(spec, targets="host", output=output) == str(output)
    check_bundle(tessel.Bundle(host, output), rng)
    assert tessel.compile(str(spec), targets=["host"], output=str(output)) == str(output)


def test_compile_error():
    """The verifier's diagnostics, with the spec named <spec>."""
    bad = SPEC.replace("memref<?x3xf32>", "memref<?x4xf32>")
    with pytest.raises(tessel.CompileError) as info:
        tessel.compile(bad)
    assert str(info.value).startswith(
        "tessel-aot failed (exit 1):\n<spec>:3:3: error: 'tessel.grouped_matmul' "
        "op 'c' dim 1 (N) must be 3, got 4\n")
    with pytest.raises(tessel.CompileError) as info:
        tessel.compile(SPEC, targets=["host", "sm70"])
    assert str(info.value) == ("tessel-aot failed (exit 1):\ntessel-aot: error: "
                               "unknown target 'sm70'; known targets: host, sm80, "
                               "sm90, sm90a, gfx942, gfx950, emu-gfx942, "
                               "emu-gfx950, emu-sm80")


def test_missing_spec(tmp_path):
    with pytest.raises(FileNotFoundError, match="kernel spec '.*nothing.mlir' does "
                                                "not exist"):
        tessel.compile(tmp_path / "nothing.mlir")
    with pytest.raises(TypeError, match="spec is a path, the spec's text or None, "
                                        "not bytes"):
        tessel.compile(SPEC.encode())


def test_tessel_aot_from_the_environment(monkeypatch, tmp_path, host, rng):
    monkeypatch.setenv("TESSEL_AOT", str(tmp_path / "tessel-aot"))
    with pytest.raises(FileNotFoundError, match="TESSEL_AOT is '.*tessel-aot', which "
                                                "is not an executable file"):
        tessel.compile(SPEC)
    monkeypatch.setenv("TESSEL_AOT", str(compiler._PACKAGE_AOT))
    check_bundle(tessel.Bundle(host, tessel.compile(SPEC)), rng)


def test_without_tessel_aot(monkeypatch, tmp_path):
    """Where MLIR (and so tessel-aot) is not installed, as on the GPU machine."""
    monkeypatch.delenv("TESSEL_AOT", raising=False)
    monkeypatch.setattr(compiler, "_PACKAGE_AOT", tmp_path / "bin" / "tessel-aot")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(FileNotFoundError) as info:
        tessel.compile(SPEC)
    message = str(info.value)
    assert message.startswith("tessel.compile needs tessel-aot, the Tessel compiler, "
                              "which is not installed here (it needs LLVM/MLIR 22)")
    assert "scripts/install-python.sh --with-compiler" in message
