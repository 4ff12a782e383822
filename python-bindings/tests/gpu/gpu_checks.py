"""What the GPU suite's tests share: the comparison against a reference,
kernels from the default kernel cache, poisoned outputs and the shuffled
KV-cache layout."""

import math

import torch

import tessel
import tessel.cache
import tessel.ops


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


def assert_lse_close(lse, ref, atol, what, rtol=0.0):
    """An LSE output against its float64 reference: -inf exactly where the
    reference is (a row without keys), no NaN or +inf, the finite entries
    within atol + rtol |ref|."""
    assert lse.shape == ref.shape, f"{what}: LSE shape {tuple(lse.shape)}, " \
        f"expected {tuple(ref.shape)}"
    keys = torch.isfinite(ref)
    assert torch.equal(torch.isfinite(lse), keys), \
        f"{what}: LSE not finite exactly where a row has keys"
    assert bool((lse[~keys] == -math.inf).all()), \
        f"{what}: LSE NaN or +inf where a row has no keys"
    if keys.any():
        excess = ((lse[keys].double() - ref[keys]).abs() -
                  rtol * ref[keys].abs()).max().item()
        assert excess <= atol, f"{what}: LSE error {excess:.2e} past " \
            f"{atol} + {rtol} |lse|"


def merged(parts, lses):
    """The float64 LSE merge of partials [P, T, H, D] with LSEs [P, H, T]
    (+inf is empty, as -inf is): out [T, H, D], lse [H, T], and the [T, H]
    mask of rows where every partial is empty (lse -inf there; out NaN:
    each op has its own rule)."""
    lses = lses.double().masked_fill(lses == math.inf, -math.inf)
    top = lses.amax(0)
    empty = top == -math.inf
    w = torch.exp(lses - top.masked_fill(empty, 0.0))  # [P, H, T]
    total = w.sum(0)
    wt = w.transpose(1, 2)[..., None]  # [P, T, H, 1]
    # An empty partial's output (NaN) is dropped, not multiplied by 0.
    out = (parts.double() * wt).masked_fill(wt == 0, 0.0).sum(0) / \
        total.T[..., None]
    lse = (top + torch.log(total)).masked_fill(empty, -math.inf)
    return out, lse, empty.T


def block_table(per, blocks, gen, device, width=0):
    """A block table [B, max(width, *per)] giving request b per[b] blocks,
    a random draw of the cache's `blocks` (none shared), and garbage ids
    (negative, or past the cache) after them; and the blocks nobody
    owns."""
    table = torch.randint(-5, 2 * blocks, (len(per), max(width, *per)),
                          generator=gen, device=device, dtype=torch.int32)
    perm = torch.randperm(blocks, generator=gen, device=device).int()
    used = 0
    for b, n in enumerate(per):
        table[b, :n] = perm[used:used + n]
        used += n
    return table, perm[used:]


def kernel(device, name, spec):
    """Kernel `name` of `spec` from the default kernel cache, for the
    torch device `device` ('cuda', or 'cpu': the host backend while
    preparing)."""
    return tessel.cache.default_cache().kernel(
        tessel.ops.device_of(torch.empty(0, device=device)), name, spec)


def nan_full(*shape, dtype=torch.float32, device):
    """An output poisoned with NaN: an element the kernel leaves unwritten
    fails every comparison."""
    return torch.full(shape, math.nan, dtype=dtype, device=device)


# The shuffled layout's conversions (docs/dispatcher.md).
shuffle = tessel.shuffle_kv_caches
unshuffle = tessel.nhd_kv_caches
