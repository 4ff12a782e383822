"""The emulator against the hardware: each sm80 kernel below runs on the
GPU (its PTX, JIT-compiled for the H200) and on the emu-sm80 device (the
same kernel, lowered to the host and run lane by lane by the runtime's
emulator, on the CPU), on the same inputs. The two must agree within bf16
rounding (the MMA's summation order is the hardware's own; the emulator
adds in k order), and both must match the float64 reference. The test
prints how many output elements are bitwise equal: the evidence that the
emulator models the chip, which is what makes its gfx942/gfx950 runs in
CI worth something.

While preparing (TESSEL_GPU_PREPARE, on the development machine) the
emulated run is checked against the reference on the host, and both
bundles (sm80, emu-sm80) go into the cache.
"""

import math

import pytest
import torch

import tessel
import tessel.cache
import tessel.specs
from gpu_checks import assert_close, nan_full
from test_prefill import reference as prefill_reference


@pytest.fixture(scope="module")
def emulated():
    return tessel.Device("emu-sm80")


def run_both(device, emulated, spec, name, inputs, outputs, scalars=()):
    """Runs kernel `name` of `spec` on the emulated sm80 (host tensors)
    and, on a GPU, as sm80 on the GPU: the outputs of each, as CPU
    tensors (the GPU's None while preparing)."""
    cache = tessel.cache.default_cache()
    host_in = [t.cpu() for t in inputs]
    host_out = [t.cpu().clone() for t in outputs]
    cache.bundle(emulated, spec)[name](*host_in, *host_out, *scalars)
    if device != "cuda":
        # The sm80 bundle too, for the GPU machine, which has no compiler.
        cache.prepare(spec, "sm80")
        return host_out, None
    gpu = tessel.Device("cuda")
    gpu_out = [t.clone() for t in outputs]
    cache.bundle(gpu, spec, target="sm80")[name](*inputs, *gpu_out, *scalars)
    torch.cuda.synchronize()
    return host_out, [t.cpu() for t in gpu_out]


def agree(emu, hw, ref, what):
    """emu (and hw on a GPU) within bf16 rounding of each other and of the
    reference; prints the share of bitwise-equal elements."""
    assert_close(emu, ref, 1e-2, f"{what}: emulated vs float64")
    if hw is None:
        return
    assert_close(hw, ref, 1e-2, f"{what}: GPU vs float64")
    assert_close(emu.float(), hw.float(), 2 ** -7, f"{what}: emulated vs GPU")
    equal = (emu.view(torch.int16) == hw.view(torch.int16)) \
        if emu.dtype == torch.bfloat16 else (emu == hw)
    print(f"\n{what}: {equal.sum().item()} of {equal.numel()} elements "
          f"bitwise equal between the GPU and the emulator")


@pytest.mark.parametrize("hq,hkv,d,causal",
                         [(8, 2, 128, True), (4, 4, 64, False)])
def test_prefill(hq, hkv, d, causal, device, emulated, gen):
    lens = [37, 1, 100]
    rows = sum(lens)
    q, k, v = (torch.randn(rows, h, d, generator=gen, device=device)
               .to(torch.bfloat16) for h in (hq, hkv, hkv))
    cu = torch.tensor([0] + lens, device=device).cumsum(0).int()
    name = f"emu_pre_q{hq}_kv{hkv}_d{d}{'_causal' if causal else ''}"
    spec = tessel.specs.prefill(name, hq, hkv, d, causal=causal)
    scale = d ** -0.5
    out = nan_full(rows, hq, d, dtype=torch.bfloat16, device=device)
    (emu,), hw = run_both(device, emulated, spec, name, [q, k, v, cu], [out],
                          [scale])
    ref, _ = prefill_reference(q.cpu(), k.cpu(), v.cpu(), lens, causal, scale)
    agree(emu, hw and hw[0], ref, name)


def test_grouped_matmul(device, emulated, gen):
    groups, n, k = 4, 96, 64
    sizes = [17, 0, 64, 40]
    rows = sum(sizes)
    a = torch.randn(rows, k, generator=gen, device=device).to(torch.bfloat16)
    b = torch.randn(groups, n, k, generator=gen, device=device) \
        .to(torch.bfloat16)
    offsets = torch.tensor(sizes, device=device).cumsum(0).int()
    spec = tessel.specs.grouped_mm(groups, n, k, name="emu_gmm")
    out = nan_full(rows, n, dtype=torch.bfloat16, device=device)
    (emu,), hw = run_both(device, emulated, spec, "emu_gmm_fwd",
                          [a, b, offsets], [out])
    ref = torch.cat([a[s:e].cpu().double() @ b[g].cpu().double().T
                     for g, (s, e) in enumerate(zip([0] + offsets.tolist(),
                                                    offsets.tolist()))])
    agree(emu, hw and hw[0], ref, "grouped matmul")


def test_merge(device, emulated, gen):
    heads, d, tokens = 4, 64, 33
    parts = [torch.randn(tokens, heads, d, generator=gen, device=device)
             for _ in range(2)]
    lses = [torch.randn(heads, tokens, generator=gen, device=device) * 3
            for _ in range(2)]
    lses[1][0, :5] = -math.inf
    spec = tessel.specs.lse_merge("emu_merge", heads, d)
    out = nan_full(tokens, heads, d, dtype=torch.bfloat16, device=device)
    (emu,), hw = run_both(device, emulated, spec, "emu_merge",
                          [parts[0], lses[0], parts[1], lses[1]], [out])
    w = torch.stack([l.cpu().double().T for l in lses]).softmax(0)[..., None]
    ref = (w * torch.stack([p.cpu().double() for p in parts])).sum(0)
    agree(emu, hw and hw[0], ref, "lse merge")
