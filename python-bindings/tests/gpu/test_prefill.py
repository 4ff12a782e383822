"""tessel.ops.prefill against float64 torch: the cases of
bench/prefill_check.py. Every kernel of bench/prefill_kernels.mlir
(bench/gen_attention_kernels.py's PREFILL: heads, qk and v head dims, bf16
or f16, causal or not, with or without LSE) on the script's five batches:
ragged lengths with an empty request, lengths around the 64-row tile, one
long request, 50 NaN rows of no request after the last (no kernel may read
them into a result), and a negative softmax scale (the sm_90a kernel takes
another path where the scale is not positive). out within 1e-2 of the
largest reference value, LSE (natural log) within 1e-3. On the host
backend (preparing) the long requests are shorter; the kernels are the
same. (conftest.py: how to run it.)

Not ported: the script fills out and lse with NaN before each launch;
tessel.ops allocates its outputs, so instead every request's row must be
finite and within tolerance. --bench (timing) is no test.
"""

import math

import pytest
import torch

import tessel.ops
from gpu_checks import assert_close

# (Hq, Hkv, Dqk, Dv, dtype, causal, lse): bench/gen_attention_kernels.py's
# PREFILL, in its order.
KERNELS = [
    (32, 8, 128, 128, torch.bfloat16, True, True),
    (64, 4, 128, 128, torch.bfloat16, True, True),
    (32, 32, 128, 128, torch.bfloat16, True, False),
    (8, 2, 64, 64, torch.bfloat16, True, True),
    (16, 2, 256, 256, torch.bfloat16, True, True),
    (16, 16, 192, 128, torch.bfloat16, True, True),
    (4, 4, 128, 128, torch.bfloat16, False, True),
    (32, 8, 128, 128, torch.float16, True, True),
    (32, 8, 128, 128, torch.bfloat16, False, True),
    (32, 8, 64, 64, torch.bfloat16, True, True),
]

# name: (lengths on the GPU, lengths on the host, NaN rows after the last
# request, sign of the softmax scale d**-0.5). The host lengths are shorter
# where the float64 reference (single-threaded torch there) would take
# many seconds.
BATCHES = {
    "ragged": ([1, 5, 129, 1000, 0, 77, 1333], [1, 5, 129, 200, 0, 77, 263],
               0, 1),
    "around_tile": ([64, 63, 65, 1, 2], [64, 63, 65, 1, 2], 0, 1),
    "long": ([3000], [449], 0, 1),
    "nan_tail": ([200, 70], [200, 70], 50, 1),
    "negative_scale": ([300, 129], [300, 129], 0, -1),
}


def kernel_id(kernel):
    hq, hkv, d, dv, dtype, causal, lse = kernel
    return (f"q{hq}_kv{hkv}_d{d}_v{dv}_{str(dtype)[6:]}"
            f"{'_causal' if causal else ''}{'_lse' if lse else ''}")


def reference(q, k, v, lens, causal, scale):
    """float64 out [T, Hq, Dv] and lse [Hq, T] of the requests' rows."""
    g = q.shape[1] // k.shape[1]
    outs, lses, start = [], [], 0
    for n in lens:
        qs, ks, vs = (t[start:start + n].double().transpose(0, 1)
                      for t in (q, k, v))
        s = qs @ ks.repeat_interleave(g, 0).transpose(1, 2) * scale
        if causal:
            above = torch.ones(n, n, dtype=torch.bool, device=q.device)
            s = s.masked_fill(above.triu(1), -math.inf)
        lses.append(s.logsumexp(-1))
        outs.append((s.softmax(-1) @ vs.repeat_interleave(g, 0))
                    .transpose(0, 1))
        start += n
    return torch.cat(outs), torch.cat(lses, 1)


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("kernel", KERNELS, ids=kernel_id)
def test_prefill(kernel, batch, device, on_gpu, gen):
    hq, hkv, d, dv, dtype, causal, lse = kernel
    gpu_lens, host_lens, pad, sign = BATCHES[batch]
    lens = gpu_lens if on_gpu else host_lens
    rows = sum(lens)
    q, k, v = (torch.randn(rows + pad, h, width, generator=gen,
                           device=device).to(dtype)
               for h, width in ((hq, d), (hkv, d), (hkv, dv)))
    for t in (q, k, v):
        t[rows:] = math.nan
    cu = torch.tensor([0] + lens, device=device).cumsum(0).int()
    # The positive scale is tessel.ops' default (None: 1/sqrt(Dqk)).
    scale = sign * d ** -0.5
    result = tessel.ops.prefill(q, k, v, cu, causal=causal,
                                softmax_scale=scale if sign < 0 else None,
                                return_lse=lse)
    out, out_lse = result if lse else (result, None)
    ref, ref_lse = reference(q[:rows], k[:rows], v[:rows], lens, causal,
                             scale)
    what = f"{kernel_id(kernel)} lens={lens}+{pad} NaN scale {scale:.3g}"
    assert_close(out[:rows], ref, 1e-2, f"{what}: out")
    if lse:
        got = out_lse[:, :rows]
        assert bool(torch.isfinite(got).all()), f"{what}: non-finite LSE"
        err = (got.double() - ref_lse).abs().max().item()
        assert err <= 1e-3, f"{what}: LSE error {err:.2e} > 1e-3"
