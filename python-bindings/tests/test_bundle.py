"""Devices, bundle loading and kernel introspection."""

import ctypes
import pathlib

import numpy as np
import pytest
import torch

import tessel

KERNELS = ["prefill_f32_h4kv2_d64", "prefill_bf16_h4kv2_d64", "merge_f32_h3_d64",
           "gmm_f32_tb_g5_k19_n37", "gmm_f16_g3_k24_n40", "gmm_f32_ptr_tb_g4_k16_n20",
           "gmm_autograd_fwd", "gmm_autograd_dgrad", "gmm_autograd_wgrad"]
# moe_mlp_spec's kernels, in the order it writes them, for the two MoE shapes.
MOE_ROLES = ["histogram", "sort", "unpermute", "unpermute_parts",
             "down_wgrad",
             "gate_up", "gate_up_dgrad", "gate_up_wgrad", "down", "down_dgrad",
             "gate_or_up", "gate_or_up_dgrad", "gate_or_up_wgrad",
             "gate_or_up_ptrs", "gate_or_up_dgrad_ptrs", "down_ptrs",
             "down_dgrad_ptrs", "swiglu_backward", "swiglu_parts",
             "swiglu_parts_backward"]
KERNELS += [f"{moe}_{role}" for moe in ("moe_k3", "moe_k2")
            for role in MOE_ROLES]


def test_host_device(host):
    assert host.kind == "host" and host.ordinal == 0
    assert host.target == "host"
    assert host.targets == ["host"]
    assert repr(host) == "tessel.Device('host', 0)"


def test_unknown_backend():
    with pytest.raises(tessel.Error) as info:
        tessel.Device("tpu")
    assert info.value.code == tessel.StatusCode.NOT_FOUND
    assert str(info.value) == ("unknown backend 'tpu'; valid backends: host, cuda, "
                               "hip, emu-gfx942, emu-gfx950, emu-sm80")
    assert info.value.message == str(info.value)


def test_negative_ordinal():
    with pytest.raises(tessel.Error, match="device ordinal -1 is negative") as info:
        tessel.Device("host", -1)
    assert info.value.code == tessel.StatusCode.INVALID_ARGUMENT


def _cuda_driver_installed():
    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            pass
    return False


def test_cuda_without_driver(monkeypatch):
    if _cuda_driver_installed():
        pytest.skip("this machine has a CUDA driver: the no-driver error "
                    "cannot be provoked here")
    monkeypatch.delenv("TESSEL_CUDA_LIBRARY", raising=False)
    with pytest.raises(tessel.Error) as info:
        tessel.Device("cuda")
    assert info.value.code == tessel.StatusCode.UNAVAILABLE
    message = str(info.value)
    assert message.startswith("cannot load the CUDA driver (is the NVIDIA driver "
                              "installed?): dlopen(libcuda.so.1): ")
    assert "dlopen(libcuda.so): " in message
    assert isinstance(info.value, RuntimeError)


def test_bundle_from_path_and_bytes(host, bundle_path):
    data = pathlib.Path(bundle_path).read_bytes()
    for source in (bundle_path, pathlib.Path(bundle_path), data, bytearray(data),
                   memoryview(data), np.frombuffer(data, np.uint8)):
        bundle = tessel.Bundle(host, source)
        assert [k.name for k in bundle] == KERNELS
        assert len(bundle) == len(KERNELS)
        assert bundle.device is host


def test_kernel_introspection(bundle):
    k = bundle["prefill_f32_h4kv2_d64"]
    assert k.name == "prefill_f32_h4kv2_d64"
    assert k.op == "tessel.prefill_attention"
    assert k.target == "host"
    assert k.dtype == "f32"
    assert k.args == ("q", "k", "v", "cu_seqlens", "out", "lse", "scale")
    assert k.outputs == ("out", "lse")
    assert k.scalars == ("scale",)
    params = k.params
    assert {key: params[key] for key in
            ("num_q_heads", "num_kv_heads", "head_dim", "v_head_dim", "has_lse",
             "causal")} == {"num_q_heads": 4, "num_kv_heads": 2, "head_dim": 64,
                            "v_head_dim": 64, "has_lse": 1, "causal": 1}
    assert k.bundle is bundle
    assert "prefill_f32_h4kv2_d64" in repr(k) and \
        "(q, k, v, cu_seqlens, out, lse, scale)" in repr(k)
    g = bundle["gmm_f32_tb_g5_k19_n37"]
    assert (g.params["N"], g.params["K"], g.params["trans_b"],
            g.params["groups"]) == (37, 19, 1, 5)
    ptr = bundle["gmm_f32_ptr_tb_g4_k16_n20"].params
    assert (ptr["pointer_table"], ptr["groups"]) == (1, 4)
    assert bundle.kernels == tuple(bundle)
    assert "merge_f32_h3_d64" in bundle and "merge" not in bundle


def test_find(bundle):
    assert bundle.find("lse_merge").name == "merge_f32_h3_d64"
    assert bundle.find("tessel.prefill_attention", dtype="bf16").name == \
        "prefill_bf16_h4kv2_d64"
    assert bundle.find("grouped_matmul", dtype=np.float32, pointer_table=1,
                       trans_b=True).name == "gmm_f32_ptr_tb_g4_k16_n20"
    assert bundle.find("grouped_matmul", dtype=torch.float32, K=19).name == \
        "gmm_f32_tb_g5_k19_n37"
    # The expert count tells apart kernels of otherwise equal shapes.
    assert bundle.find("expert_histogram", topk=3, groups=5).name == \
        "moe_k3_histogram"
    with pytest.raises(tessel.Error, match="groups=6"):
        bundle.find("expert_histogram", topk=3, groups=6)


def test_find_without_match(bundle):
    with pytest.raises(tessel.Error) as info:
        bundle.find("grouped_matmul", dtype="f32", K=4096)
    assert info.value.code == tessel.StatusCode.NOT_FOUND
    assert "tessel.grouped_matmul" in str(info.value)
    assert "gmm_f32_tb_g5_k19_n37" in str(info.value)  # it lists the candidates
    with pytest.raises(tessel.Error) as info:
        bundle.find("decode_attention")
    assert info.value.code == tessel.StatusCode.NOT_FOUND
    with pytest.raises(TypeError, match="dtype 'f64' is not one Tessel kernels take"):
        bundle.find("grouped_matmul", dtype="f64")
    with pytest.raises(TypeError, match="float64"):
        bundle.find("grouped_matmul", dtype=torch.float64)
    with pytest.raises(TypeError):
        bundle.find("grouped_matmul", K=19.0)


def test_unknown_kernel_name(bundle):
    with pytest.raises(tessel.Error) as info:
        bundle["prefill_f64"]
    assert info.value.code == tessel.StatusCode.NOT_FOUND
    assert str(info.value) == (
        "no kernel 'prefill_f64' for target 'host' in this bundle; it has: "
        + ", ".join(KERNELS[:8]) + f" (and {len(KERNELS) - 8} more)")


def _corrupt(data, at):
    damaged = bytearray(data)
    damaged[at] ^= 0x40
    return bytes(damaged)


def test_corrupt_bundles(host, bundle_path):
    data = pathlib.Path(bundle_path).read_bytes()
    cases = {
        "a flipped bit in a binary": (_corrupt(data, len(data) - 100), "checksum"),
        "a flipped bit in the header": (_corrupt(data, 30), "checksum"),
        "truncated": (data[:-7], "file_size"),
        "not a bundle": (b"\x7fELF" + bytes(200), "magic"),
        "empty": (b"", ""),
    }
    for case, (damaged, says) in cases.items():
        with pytest.raises(tessel.Error) as info:
            tessel.Bundle(host, damaged)
        assert info.value.code == tessel.StatusCode.CORRUPT_BUNDLE, case
        assert str(info.value).startswith("invalid bundle: "), case
        assert says in str(info.value), case


def test_missing_file(host, tmp_path):
    path = tmp_path / "missing.tsb"
    with pytest.raises(tessel.Error) as info:
        tessel.Bundle(host, path)
    assert info.value.code == tessel.StatusCode.NOT_FOUND
    assert str(info.value) == f"cannot open bundle '{path}': No such file or directory"


def test_bundle_source_type(host):
    with pytest.raises(TypeError, match="a bundle source is a path or bytes-like, not int"):
        tessel.Bundle(host, 42)
