"""The emulated GPUs from Python: a bf16 prefill compiled for emu-gfx942,
emu-gfx950 and emu-sm80 (each chip's GPU kernel run lane by lane on the
CPU, docs/architecture.md) on torch CPU tensors, against float64; and what
such a device is."""

import numpy as np
import pytest
import torch

import reference
import tessel
import tessel.specs

EMULATED = ["emu-gfx942", "emu-gfx950", "emu-sm80"]
SPEC = tessel.specs.prefill("pre", 8, 2, 64, lse=True)


@pytest.fixture(scope="module")
def spec_bundle():
    return tessel.compile(SPEC, targets=EMULATED)


@pytest.mark.parametrize("target", EMULATED)
def test_prefill(target, spec_bundle, rng):
    device = tessel.Device(target)
    assert device.targets == [target]
    kernel = tessel.Bundle(device, spec_bundle)["pre"]
    assert kernel.target == target
    lens = [37, 0, 1, 70]
    cu = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    rows = int(cu[-1])
    q, k, v = (torch.from_numpy(rng.standard_normal((rows, h, 64)))
               .to(torch.bfloat16) for h in (8, 2, 2))
    out = torch.full((rows, 8, 64), float("nan"), dtype=torch.bfloat16)
    lse = torch.full((8, rows), float("nan"))
    kernel(q, k, v, torch.from_numpy(cu), out, lse, 0.125)
    want_out, want_lse = reference.prefill_attention(
        q.float().numpy(), k.float().numpy(), v.float().numpy(), cu, 0.125)
    scale = np.abs(want_out).max()
    assert np.abs(out.float().numpy() - want_out).max() <= 1e-2 * scale
    np.testing.assert_allclose(lse.numpy(), want_lse, rtol=1e-4, atol=1e-4)


def test_host_kernels_are_not_emulated_kernels(spec_bundle):
    """A bundle without the device's target has nothing for it."""
    with pytest.raises(tessel.Error) as info:
        tessel.Bundle(tessel.Device("host"), spec_bundle)
    assert "host" in str(info.value)
