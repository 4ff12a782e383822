"""Tessel's grouped matmul as a differentiable torch function.

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
op and the shape parameters it looked for.
"""

from typing import Tuple

import torch

from .runtime import Bundle, Kernel

_ELEMENT = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}


def grouped_mm_spec(groups: int, n: int, k: int, dtype: str = "bf16",
                    trans_b: bool = True, name: str = "gmm") -> str:
    """The kernel spec (MLIR) of grouped_mm's forward, dgrad and wgrad for
    b [groups, n, k] (trans_b) or [groups, k, n], elements `dtype`
    ('bf16', 'f16' or 'f32')."""
    e = dtype
    b_type = (f"memref<{groups}x{n}x{k}x{e}>" if trans_b else
              f"memref<{groups}x{k}x{n}x{e}>")
    off = f"memref<{groups}xi32>"

    def ragged_m(kernel, a_cols, c_cols, transposed):
        a, c = f"memref<?x{a_cols}x{e}>", f"memref<?x{c_cols}x{e}>"
        attr = " {trans_b}" if transposed else ""
        return (f"func.func @{kernel}(%a: {a}, %b: {b_type}, %off: {off}, "
                f"%c: {c}) {{\n  tessel.grouped_matmul a(%a : {a}) "
                f"b(%b : {b_type}) group_offsets(%off : {off}) c(%c : {c})"
                f"{attr}\n  return\n}}\n")

    # wgrad: c[g] = a[rows]^T b[rows], db's layout: [n, k] (trans_b) needs
    # a = dc [T, n] and b = a [T, k]; [k, n] needs a = a, b = dc.
    m_cols, n_cols = (n, k) if trans_b else (k, n)
    wa, wb = f"memref<?x{m_cols}x{e}>", f"memref<?x{n_cols}x{e}>"
    wc = f"memref<{groups}x{m_cols}x{n_cols}x{e}>"
    wgrad = (f"func.func @{name}_wgrad(%a: {wa}, %b: {wb}, %off: {off}, "
             f"%c: {wc}) {{\n  tessel.grouped_matmul_wgrad a(%a : {wa}) "
             f"b(%b : {wb}) group_offsets(%off : {off}) c(%c : {wc})\n"
             f"  return\n}}\n")
    return (ragged_m(f"{name}_fwd", k, n, trans_b) +
            ragged_m(f"{name}_dgrad", n, k, not trans_b) + wgrad)


def _kernels(bundle: Bundle, dtype: torch.dtype, n: int, k: int,
             trans_b: bool) -> Tuple[Kernel, Kernel, Kernel]:
    if dtype not in _ELEMENT:
        raise TypeError(f"tessel.torch.grouped_mm: dtype {dtype} is not "
                        f"supported (float32, float16, bfloat16)")
    e = _ELEMENT[dtype]
    forward = bundle.find("grouped_matmul", e, N=n, K=k, trans_b=int(trans_b),
                          pointer_table=0)
    dgrad = bundle.find("grouped_matmul", e, N=k, K=n,
                        trans_b=int(not trans_b), pointer_table=0)
    m_cols, n_cols = (n, k) if trans_b else (k, n)
    wgrad = bundle.find("grouped_matmul_wgrad", e, M=m_cols, N=n_cols)
    return forward, dgrad, wgrad


class _GroupedMM(torch.autograd.Function):

    @staticmethod
    def forward(ctx, a, b, offsets, bundle, trans_b):
        n, k = (b.shape[1], b.shape[2]) if trans_b else (b.shape[2],
                                                          b.shape[1])
        forward, dgrad, wgrad = _kernels(bundle, a.dtype, n, k, trans_b)
        c = torch.empty(a.shape[0], n, dtype=a.dtype, device=a.device)
        forward(a, b, offsets, c)
        ctx.save_for_backward(a, b, offsets)
        ctx.kernels = (dgrad, wgrad)
        ctx.trans_b = trans_b
        return c

    @staticmethod
    def backward(ctx, dc):
        a, b, offsets = ctx.saved_tensors
        dgrad, wgrad = ctx.kernels
        dc = dc.contiguous()
        da = db = None
        if ctx.needs_input_grad[0]:
            da = torch.empty_like(a)
            dgrad(dc, b, offsets, da)
        if ctx.needs_input_grad[1]:
            db = torch.empty_like(b)
            if ctx.trans_b:
                wgrad(dc, a, offsets, db)
            else:
                wgrad(a, dc, offsets, db)
        return da, db, None, None, None


def grouped_mm(a: torch.Tensor, b: torch.Tensor, group_offsets: torch.Tensor,
               bundle: Bundle, trans_b: bool = True) -> torch.Tensor:
    """c = a grouped by `group_offsets` times op(b[g]); differentiable in
    a and b (see the module's description)."""
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


__all__ = ["grouped_mm", "grouped_mm_spec"]
