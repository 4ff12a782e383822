"""The prefill kernels (tessel.specs.prefill, from the default kernel
cache) against float64 torch: heads, qk and v head dims (64 to 256, 192 /
128 for DeepSeek's non-absorbed MLA, 192 / 192 on sm_90a's 64-key tiles),
bf16 or f16, causal or not, with or without LSE, on six batches: ragged
lengths with an empty request, lengths around the 64-row tile, one long
request, 50 NaN rows of no request after the last (no kernel may read them
into a result), a negative softmax scale (the sm_90a kernel takes another
path where the scale is not positive), and keys that grow along each
request (a row's maximum keeps passing the slack of the lazy O rescaling,
tile after tile, in some rows and not others). Outputs are poisoned with
NaN before the launch: out within 1e-2 of the largest reference value, LSE
(natural log) within 1e-3. On the host backend (preparing) the long
requests are shorter; the kernels are the same. (conftest.py: how to run
it.)
"""

import math

import pytest
import torch

import tessel.specs
from gpu_checks import assert_close, assert_lse_close, kernel, nan_full

ELEMENT = {torch.bfloat16: "bf16", torch.float16: "f16"}

# (Hq, Hkv, Dqk, Dv, dtype, causal, lse)
CONFIGS = [
    (32, 8, 128, 128, torch.bfloat16, True, True),
    (64, 4, 128, 128, torch.bfloat16, True, True),
    (32, 32, 128, 128, torch.bfloat16, True, False),
    (8, 2, 64, 64, torch.bfloat16, True, True),
    (16, 2, 256, 256, torch.bfloat16, True, True),
    (16, 16, 192, 128, torch.bfloat16, True, True),
    (8, 8, 192, 192, torch.bfloat16, False, True),
    (4, 4, 128, 128, torch.bfloat16, False, True),
    (32, 8, 128, 128, torch.float16, True, True),
    (32, 8, 128, 128, torch.bfloat16, False, True),
    (32, 8, 64, 64, torch.bfloat16, True, True),
]

# name: (lengths on the GPU, lengths on the host, NaN rows after the last
# request, sign of the softmax scale d**-0.5, whether key i of a request is
# scaled by 1 + i / 32). The host lengths are shorter where the float64
# reference (single-threaded torch there) would take many seconds.
BATCHES = {
    "ragged": ([1, 5, 129, 1000, 0, 77, 1333], [1, 5, 129, 200, 0, 77, 263],
               0, 1, False),
    "around_tile": ([64, 63, 65, 1, 2], [64, 63, 65, 1, 2], 0, 1, False),
    "long": ([3000], [449], 0, 1, False),
    "nan_tail": ([200, 70], [200, 70], 50, 1, False),
    "negative_scale": ([300, 129], [300, 129], 0, -1, False),
    "growing_keys": ([1000, 129, 300], [300, 129], 0, 1, True),
}


def config_id(config):
    hq, hkv, d, dv, dtype, causal, lse = config
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
@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_prefill(config, batch, device, on_gpu, gen):
    hq, hkv, d, dv, dtype, causal, lse = config
    gpu_lens, host_lens, pad, sign, grow = BATCHES[batch]
    lens = gpu_lens if on_gpu else host_lens
    rows = sum(lens)
    q, k, v = (torch.randn(rows + pad, h, width, generator=gen,
                           device=device)
               for h, width in ((hq, d), (hkv, d), (hkv, dv)))
    if grow:
        position = torch.cat([torch.arange(n, device=device) for n in lens])
        k[:rows] *= (1 + position / 32)[:, None, None]
    q, k, v = (t.to(dtype) for t in (q, k, v))
    for t in (q, k, v):
        t[rows:] = math.nan
    cu = torch.tensor([0] + lens, device=device).cumsum(0).int()
    name = f"pre_{config_id(config)}"
    run = kernel(device, name, tessel.specs.prefill(
        name, hq, hkv, d, v_head_dim=dv, dtype=ELEMENT[dtype],
        causal=causal, lse=lse))
    scale = sign * d ** -0.5
    out = nan_full(rows + pad, hq, dv, dtype=dtype, device=device)
    out_lse = nan_full(hq, rows + pad, device=device)
    run(q, k, v, cu, out, *([out_lse] if lse else []), scale)
    ref, ref_lse = reference(q[:rows], k[:rows], v[:rows], lens, causal,
                             scale)
    what = f"{name} lens={lens}+{pad} NaN scale {scale:.3g}"
    assert_close(out[:rows], ref, 1e-2, f"{what}: out")
    if lse:
        assert_lse_close(out_lse[:, :rows], ref_lse, 1e-3, what)
