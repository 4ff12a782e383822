"""What the GPU suite's tests share: the comparison against a reference."""

import torch


def relative_error(out, ref):
    """max |out - ref| / max |ref| (over every element; 0 for empty)."""
    if out.numel() == 0:
        return 0.0
    scale = ref.double().abs().max().item() or 1.0
    return (out.double() - ref.double()).abs().max().item() / scale


def assert_close(out, ref, tolerance, what):
    """out finite and within `tolerance` of ref (relative_error)."""
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)}, " \
        f"expected {tuple(ref.shape)}"
    assert bool(torch.isfinite(out).all()), f"{what}: non-finite values"
    err = relative_error(out, ref)
    assert err <= tolerance, f"{what}: error {err:.2e} > {tolerance}"
