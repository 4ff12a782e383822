"""Tessel's kernels as differentiable torch functions:

  * grouped_mm, grouped_mm_spec: the grouped matmul (here);
  * moe_mlp, moe_mlp_unstacked, moe_mlp_spec: the routed experts of an MoE
    layer, forward and backward (tessel/moe.py);
  * patch_deepseek_moe: those as the training forward of DeepSeek-V2/V3
    MoE modules (tessel/deepseek.py).

The grouped matmul:

    import tessel, tessel.torch
    bundle = tessel.Bundle(tessel.Device("cuda"), "moe.tsb")
    c = tessel.torch.grouped_mm(a, b, group_offsets, bundle, trans_b=True)

`c[rows_g] = a[rows_g] @ op(b[g])` for the row groups that the int32
cumulative ends `group_offsets` [G] cut `a` [T, K] into, with op(b[g]) =
b[g].T for b [G, N, K] (`trans_b`, the nn.Linear layout) or b[g] for
b [G, K, N]; rows past the last end get zeros. The backward pass launches
two more kernels of the bundle, on the device, with no host synchronisation:

  * da = grouped_mm(dc, b) with the other trans_b: the ragged-M dgrad,
    reading the same b (a [G, N, K] array is a [G, K', N'] one with
    K' = N, N' = K);
  * db[g] = the ragged-K weight gradient of the group's rows
    (tessel.grouped_matmul_wgrad: fp32 accumulation over the group's rows in
    one block, stored once in b's dtype); an empty group's is zero.

The bundle must hold the three kernels for the shapes and dtype in use;
`grouped_mm_spec` writes their kernel spec for tessel-aot (or
tessel.compile). A missing one is a tessel.Error (NOT_FOUND) that names the
op and the shape parameters it looked for. Without a bundle (None or a
tessel.KernelCache), the three are compiled together on the first miss
(tessel.cache).
"""

from typing import Union

import torch

from . import specs
from .cache import KernelCache, default_cache
from .deepseek import patch_deepseek_moe
from .kernel_specs import lookup_params
from .moe import moe_mlp, moe_mlp_spec, moe_mlp_unstacked
from .ops import device_of
from .runtime import Bundle, Kernel

_ELEMENT = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}

grouped_mm_spec = specs.grouped_mm  # writes the spec without torch


def _kernel(role: str, source, device, dtype: torch.dtype, groups: int,
            n: int, k: int, trans_b: bool) -> Kernel:
    """The kernel for `role` ('fwd', 'dgrad' or 'wgrad'), looked up when
    that role runs (a forward-only use needs no backward kernels): found in
    a Bundle by its shape parameters, or from a KernelCache (None: the
    default one), the three compiled together on the first miss."""
    if dtype not in _ELEMENT:
        raise TypeError(f"tessel.torch.grouped_mm: dtype {dtype} is not "
                        f"supported (float32, float16, bfloat16)")
    e = _ELEMENT[dtype]
    if isinstance(source, Bundle):
        op, params = specs.grouped_mm_kernels(n, k, trans_b)[role]
        return source.find(op, e, **lookup_params(op, groups, params))
    name = f"gmm_{e}_g{groups}_n{n}_k{k}{'_tb' if trans_b else ''}"
    return (source or default_cache()).kernel(
        device, f"{name}_{role}",
        specs.grouped_mm(groups, n, k, e, trans_b, name))


class _GroupedMM(torch.autograd.Function):

    @staticmethod
    def forward(ctx, a, b, offsets, bundle, trans_b):
        n, k = (b.shape[1], b.shape[2]) if trans_b else (b.shape[2],
                                                          b.shape[1])
        lookup = (bundle, device_of(a), a.dtype, b.shape[0], n, k, trans_b)
        c = torch.empty(a.shape[0], n, dtype=a.dtype, device=a.device)
        _kernel("fwd", *lookup)(a, b, offsets, c)
        ctx.save_for_backward(a, b, offsets)
        ctx.lookup = lookup
        ctx.trans_b = trans_b
        return c

    @staticmethod
    def backward(ctx, dc):
        a, b, offsets = ctx.saved_tensors
        dc = dc.contiguous()
        da = db = None
        if ctx.needs_input_grad[0]:
            da = torch.empty_like(a)
            _kernel("dgrad", *ctx.lookup)(dc, b, offsets, da)
        if ctx.needs_input_grad[1]:
            db = torch.empty_like(b)
            wgrad = _kernel("wgrad", *ctx.lookup)
            if ctx.trans_b:
                wgrad(dc, a, offsets, db)
            else:
                wgrad(a, dc, offsets, db)
        return da, db, None, None, None


def grouped_mm(a: torch.Tensor, b: torch.Tensor, group_offsets: torch.Tensor,
               bundle: Union[Bundle, KernelCache, None] = None,
               trans_b: bool = True) -> torch.Tensor:
    """c = a grouped by `group_offsets` times op(b[g]); differentiable in
    a and b (see the module's description). The kernels come from
    `bundle`, or are compiled on the first miss into a KernelCache
    (`bundle`, or the default cache when it is None)."""
    for name, t, rank in (("a", a, 2), ("b", b, 3),
                          ("group_offsets", group_offsets, 1)):
        if not isinstance(t, torch.Tensor) or t.dim() != rank:
            raise ValueError(f"tessel.torch.grouped_mm: '{name}' must be a "
                             f"{rank}-D torch tensor")
    if group_offsets.dtype != torch.int32:
        raise TypeError("tessel.torch.grouped_mm: 'group_offsets' must be "
                        f"int32, got {group_offsets.dtype}")
    if b.dtype != a.dtype:
        raise TypeError(f"tessel.torch.grouped_mm: 'a' is {a.dtype} but 'b' "
                        f"is {b.dtype}")
    return _GroupedMM.apply(a.contiguous(), b.contiguous(), group_offsets,
                            bundle, trans_b)


__all__ = ["grouped_mm", "grouped_mm_spec", "moe_mlp", "moe_mlp_spec",
           "moe_mlp_unstacked", "patch_deepseek_moe"]
