"""Kernel specs (MLIR for tessel-aot or tessel.compile) of single-op
kernels, written from the op and the shape parameters that `Bundle.find`
matches the compiled kernel by.

    spec = kernel_spec("moe_down", "grouped_matmul", "bf16", groups=128,
                       N=2048, K=512, trans_b=1, pointer_table=0)

tessel.specs' grouped-matmul and MoE writers (tessel.torch's
grouped_mm_spec and moe_mlp_spec) describe each kernel once, as (op,
params), and tessel.torch uses that one description both to write its spec
here and to find it in a bundle: the two cannot drift apart. Token and row counts are dynamic (`?`); `groups` (the expert count)
is static, as the GPU templates need, and is itself a shape parameter of
the compiled kernel: lookups pass it too.
"""

from typing import Dict, List, Tuple

# (keyword, SSA name, type) of one operand of the op.
_Operand = Tuple[str, str, str]


def _memref(*dims, element: str) -> str:
    return "memref<" + "x".join(str(d) for d in dims) + f"x{element}>"


def _func(name: str, op: str, operands: List[_Operand], attrs: str) -> str:
    args = ", ".join(f"%{var}: {type_}" for _, var, type_ in operands)
    uses = " ".join(f"{kw}(%{var} : {type_})" for kw, var, type_ in operands)
    return (f"func.func @{name}({args}) {{\n  tessel.{op} {uses}{attrs}\n"
            f"  return\n}}\n")


def _grouped_matmul(e, groups, N, K, trans_b, pointer_table,
                    a_rows_divisor=0, swiglu=0):
    """c [T, N] = a [T, K] . op(b[g]); b stacked or a table of pointers to
    [N, K] (trans_b) or [K, N] matrices; with a_rows_divisor, row t of the
    product reads row a_rows[t] / a_rows_divisor of a [S, K]; with swiglu,
    act [T, N / 2] = silu(gate) * up of c's two column halves too."""
    rows = (N, K) if trans_b else (K, N)
    attrs = ["trans_b"] if trans_b else []
    if pointer_table:
        b = _memref(groups, element="i64")
        shape = ", ".join(str(d) for d in rows)
        attrs.append(f"b_shape = array<i64: {shape}>")
    else:
        b = _memref(groups, *rows, element=e)
    operands = [("a", "a", _memref("?", K, element=e)), ("b", "b", b),
                ("group_offsets", "off", _memref(groups, element="i32")),
                ("c", "c", _memref("?", N, element=e))]
    if swiglu:
        operands.append(("act", "act", _memref("?", N // 2, element=e)))
    if a_rows_divisor:
        attrs.append(f"a_rows_divisor = {a_rows_divisor}")
        operands.insert(1, ("a_rows", "rows", _memref("?", element="i32")))
    attr = " {" + ", ".join(attrs) + "}" if attrs else ""
    return (operands, attr)


def _grouped_matmul_wgrad(e, groups, M, N, a_rows_divisor=0,
                          b_rows_divisor=0):
    """c [G, M, N] = a[rows_g]^T . b[rows_g], stored in the element type of
    a and b (fp32 accumulation over all of a group's rows in one block);
    with a_rows_divisor (b_rows_divisor), row t of a (b) is gathered: row
    a_rows[t] / a_rows_divisor of a [S, M]."""
    rows = _memref("?", element="i32")
    operands = [("a", "a", _memref("?", M, element=e))]
    if a_rows_divisor:
        operands.append(("a_rows", "arows", rows))
    operands.append(("b", "b", _memref("?", N, element=e)))
    if b_rows_divisor:
        operands.append(("b_rows", "brows", rows))
    operands += [("group_offsets", "off", _memref(groups, element="i32")),
                 ("c", "c", _memref(groups, M, N, element=e))]
    divisor = a_rows_divisor or b_rows_divisor
    return (operands, f" {{rows_divisor = {divisor}}}" if divisor else "")


def _expert_histogram(e, groups, topk):
    counts = _memref(groups, element="i32")
    return ([("topk_ids", "ids", _memref("?", topk, element="i32")),
             ("counts", "counts", counts),
             ("group_offsets", "offsets", counts)], "")


def _expert_sort(e, groups, topk):
    ids = _memref("?", topk, element="i32")
    return ([("topk_ids", "ids", ids),
             ("group_offsets", "offsets", _memref(groups, element="i32")),
             ("sorted_rows", "sorted", _memref("?", element="i32")),
             ("row_positions", "pos", ids)], "")


def _moe_permute(e, groups, hidden, topk):
    rows = _memref("?", hidden, element=e)
    return ([("x", "x", rows),
             ("sorted_rows", "sorted", _memref("?", element="i32")),
             ("out", "out", rows)], f" {{topk = {topk} : i64}}")


def _moe_unpermute(e, groups, hidden, topk):
    """Weights f32: tessel.torch passes routing weights as float32."""
    rows = _memref("?", hidden, element=e)
    return ([("y", "y", rows),
             ("row_positions", "pos", _memref("?", topk, element="i32")),
             ("weights", "w", _memref("?", topk, element="f32")),
             ("out", "out", rows)], "")


def _gate_up(e, intermediate, parts):
    """h of the SwiGLU ops: [R, 2I] (parts 1) or [2, R, I] (parts 2)."""
    if parts == 1:
        return _memref("?", 2 * intermediate, element=e)
    return _memref(2, "?", intermediate, element=e)


def _swiglu(e, groups, intermediate, parts):
    return ([("h", "h", _gate_up(e, intermediate, parts)),
             ("act", "act", _memref("?", intermediate, element=e))], "")


def _swiglu_backward(e, groups, intermediate, parts, topk):
    """Routing weights and their gradient f32, as tessel.torch keeps them."""
    h = _gate_up(e, intermediate, parts)
    rows = _memref("?", intermediate, element=e)
    slots = _memref("?", topk, element="f32")
    return ([("grad", "g", rows), ("h", "h", h), ("topk_weights", "w", slots),
             ("sorted_rows", "sorted", _memref("?", element="i32")),
             ("row_positions", "pos", _memref("?", topk, element="i32")),
             ("dh", "dh", h), ("act_weighted", "aw", rows),
             ("d_topk_weights", "dw", slots)], "")


_WRITERS = {
    "grouped_matmul": _grouped_matmul,
    "grouped_matmul_wgrad": _grouped_matmul_wgrad,
    "expert_histogram": _expert_histogram,
    "expert_sort": _expert_sort,
    "moe_permute": _moe_permute,
    "moe_unpermute": _moe_unpermute,
    "swiglu": _swiglu,
    "swiglu_backward": _swiglu_backward,
}


# The ops whose compiled kernels record the expert count, `groups`, among
# their shape parameters (permute, unpermute and the SwiGLU ops do not
# depend on it).
_GROUPED_OPS = {"grouped_matmul", "grouped_matmul_wgrad", "expert_histogram",
                "expert_sort"}


def lookup_params(op: str, groups: int, params: Dict[str, int]
                  ) -> Dict[str, int]:
    """The shape parameters `Bundle.find` matches a kernel of `op` (without
    'tessel.') for `groups` experts by."""
    return dict(params, groups=groups) if op in _GROUPED_OPS else dict(params)


def kernel_spec(name: str, op: str, dtype: str, groups: int,
                **params: int) -> str:
    """The func.func of kernel `name`: one tessel `op` (without the
    'tessel.' prefix) on elements `dtype` ('bf16', 'f16', 'f32') for
    `groups` experts, with the shape parameters `params` that tessel-aot
    records for it (docs/architecture.md, Kernel signatures)."""
    operands, attr = _WRITERS[op](dtype, groups, **params)
    return _func(name, op, operands, attr)


def kernels_spec(name: str, kernels: Dict[str, Tuple[str, Dict[str, int]]],
                 dtype: str, groups: int) -> str:
    """The specs of `kernels` (role -> (op, params)), each named
    `<name>_<role>`."""
    return "".join(kernel_spec(f"{name}_{role}", op, dtype, groups, **params)
                   for role, (op, params) in kernels.items())
