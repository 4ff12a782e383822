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


def _sizes(b: torch.Tensor, trans_b: bool):
    """(n, k) of the grouped matmul with b [G, N, K] (trans_b) or
    [G, K, N]."""
    return (b.shape[1], b.shape[2]) if trans_b else (b.shape[2], b.shape[1])


def grouped_mm_forward(source, a, b, offsets, trans_b):
    """c = a grouped by `offsets` times op(b[g]), by the forward kernel of
    `source` (a Bundle, a KernelCache or None: the default cache)."""
    n, k = _sizes(b, trans_b)
    c = torch.empty(a.shape[0], n, dtype=a.dtype, device=a.device)
    _kernel("fwd", source, device_of(a), a.dtype, b.shape[0], n, k,
            trans_b)(a, b, offsets, c)
    return c


def grouped_mm_backward(source, dc, a, b, offsets, trans_b, need_a, need_b):
    """(da, db) of grouped_mm_forward, each None unless asked for: the
    dgrad reads the same b, the wgrad the rows of a and dc."""
    n, k = _sizes(b, trans_b)
    lookup = (source, device_of(a), a.dtype, b.shape[0], n, k, trans_b)
    dc = dc.contiguous()
    da = db = None
    if need_a:
        da = torch.empty_like(a)
        _kernel("dgrad", *lookup)(dc, b, offsets, da)
    if need_b:
        db = torch.empty_like(b)
        wgrad = _kernel("wgrad", *lookup)
        if trans_b:
            wgrad(dc, a, offsets, db)
        else:
            wgrad(a, dc, offsets, db)
    return da, db


def check_grouped_mm(fn: str, a, b, group_offsets):
    """Raises what is wrong with grouped_mm's inputs, naming `fn`."""
    for name, t, rank in (("a", a, 2), ("b", b, 3),
                          ("group_offsets", group_offsets, 1)):
        if not isinstance(t, torch.Tensor) or t.dim() != rank:
            raise ValueError(f"{fn}: '{name}' must be a {rank}-D torch "
                             f"tensor")
    if group_offsets.dtype != torch.int32:
        raise TypeError(f"{fn}: 'group_offsets' must be int32, got "
                        f"{group_offsets.dtype}")
    if b.dtype != a.dtype:
        raise TypeError(f"{fn}: 'a' is {a.dtype} but 'b' is {b.dtype}")


class _GroupedMM(torch.autograd.Function):

    @staticmethod
    def forward(ctx, a, b, offsets, bundle, trans_b):
        ctx.save_for_backward(a, b, offsets)
        ctx.bundle, ctx.trans_b = bundle, trans_b
        return grouped_mm_forward(bundle, a, b, offsets, trans_b)

    @staticmethod
    def backward(ctx, dc):
        a, b, offsets = ctx.saved_tensors
        da, db = grouped_mm_backward(ctx.bundle, dc, a, b, offsets,
                                     ctx.trans_b, *ctx.needs_input_grad[:2])
        return da, db, None, None, None


def grouped_mm(a: torch.Tensor, b: torch.Tensor, group_offsets: torch.Tensor,
               bundle: Union[Bundle, KernelCache, None] = None,
               trans_b: bool = True) -> torch.Tensor:
    """c = a grouped by `group_offsets` times op(b[g]); differentiable in
    a and b (see the module's description). The kernels come from
    `bundle`, or are compiled on the first miss into a KernelCache
    (`bundle`, or the default cache when it is None)."""
    check_grouped_mm("tessel.torch.grouped_mm", a, b, group_offsets)
    return _GroupedMM.apply(a.contiguous(), b.contiguous(), group_offsets,
                            bundle, trans_b)


__all__ = ["grouped_mm", "grouped_mm_spec", "moe_mlp", "moe_mlp_spec",
           "moe_mlp_unstacked", "patch_deepseek_moe"]
