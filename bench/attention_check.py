#!/usr/bin/env python3
"""Check Tessel's attention-side GPU kernels on an NVIDIA GPU.

Today: tessel.lse_merge, tessel.lse_merge_n and tessel.reshape_and_cache
(nhd and shuffled). The kernels are compiled into a bundle on the
development machine (no LLVM is needed here):

  tessel-aot bench/attention_kernels.mlir --targets=sm80,sm90 -o attn.tsb
  python3 bench/attention_check.py attn.tsb \\
      [--runtime build-rt/libtessel_runtime.so]

Each kernel is loaded through the CUDA driver API (the sm90 cubin on an
sm_90 GPU, else the sm80 PTX) and launched with the bundle's launch
geometry and the runtime's parameter convention on torch's current stream;
with --runtime every case runs again through the runtime's C API (which
also takes T = 0: no launch). The kernel's op, operand types and static
dims come from the bundle, so any kernel of these ops can be added to the
spec; the checks per op are the case functions of CASES (add decode or
prefill attention there).

Outputs are poisoned with NaN before every run and compared with a torch
reference of the op's semantics (docs/dialect.md) computed in float64:

  * lse_merge: f32, bf16 (and any) partials, T in {1, 7, 16384}, LSEs of
    -inf and +inf (empty partials, whose outputs hold NaN: none may leak),
    rows where both are empty (out == o_a, lse_out = -inf, no NaN), widely
    apart LSEs; and the merge in place (out = o_a, lse_out = lse_a) where
    the types allow it.
  * lse_merge_n: P in {1, 2, 5, 33}, empty partials holding NaN, rows with
    every partial empty (out = 0, lse_out = -inf).
  * reshape_and_cache: slots in random order with padding (-1) and slots
    past the cache: written slots must equal the input bit for bit, every
    other cache element must keep its NaN poison.

Tolerances: max |out - ref| / max(1, |ref|) at most 1e-2 for 16-bit out
(rounding is 4e-3), 1e-4 for f32 out (exp2/log2 approximations); lse_out
within 1e-4 + 1e-5 |ref|, and -inf exactly where the reference is.
Exits 1 unless every check passed (then it prints ALL OK last). Timing:
bench/attention_bench.py.
"""
import ctypes
import math
import sys

import torch

from grouped_matmul_check import (RuntimeKernel, Runtime, TesselTensor,
                                  TORCH_DTYPE, bundle_parser, evaluate,
                                  guarded, read_bundle, start)

NEG_INF = float("-inf")
POS_INF = float("inf")


def symbols_of(record, tensors):
    """The shape symbols of `record` derived from `tensors` (a dict by
    argument name), checking every dimension like the runtime does."""
    values = {}
    for arg in record["args"]:
        t = tensors[arg["name"]]
        if t.dim() != len(arg["dims"]):
            raise ValueError(f"{arg['name']}: rank {t.dim()}, kernel "
                             f"{len(arg['dims'])}")
        if TORCH_DTYPE.get(arg["dtype"]) != t.dtype:
            raise ValueError(f"{arg['name']}: {t.dtype}, kernel "
                             f"{TORCH_DTYPE.get(arg['dtype'])}")
        for size, (sym, mul, add) in zip(t.shape, arg["dims"]):
            if sym < 0:
                if size != add:
                    raise ValueError(f"{arg['name']}: dim {size} != {add}")
                continue
            value, rest = divmod(size - add, mul)
            if rest or value < 0 or values.setdefault(sym, value) != value:
                raise ValueError(f"{arg['name']}: dim {size} disagrees with "
                                 f"{record['symbols'][sym]}")
    return [values[s] for s in range(len(record["symbols"]))]


def static_dim(record, name, d):
    """Dimension d of argument `name` (a constant in the kernel)."""
    arg = next(a for a in record["args"] if a["name"] == name)
    sym, _, add = arg["dims"][d]
    assert sym < 0, f"{name} dim {d} is symbolic"
    return add


def arg_dtype(record, name):
    arg = next((a for a in record["args"] if a["name"] == name), None)
    return None if arg is None else TORCH_DTYPE[arg["dtype"]]


class BundleKernel:
    """A kernel of any op, launched through the driver API: called with its
    arguments by name (torch tensors), it derives the shape symbols from
    their shapes and launches with the bundle's geometry."""

    def __init__(self, driver, record):
        self.driver, self.record = driver, record
        self.name, self.op = record["name"], record["op"]
        self.kind = "cubin" if record["target"] == "sm90" else "ptx-jit"
        image = record["binary"] + (b"\0" if self.kind == "ptx-jit" else b"")
        self.func = driver.load(image, record["entry"])

    def __call__(self, **tensors):
        self.prepare(**tensors)()

    def prepare(self, **tensors):
        """A call of no arguments that launches the kernel on these tensors
        on the current stream (for timing: no per-call Python work but the
        launch itself)."""
        r = self.record
        symbols = symbols_of(r, tensors)
        grid = tuple(-(-evaluate(d, symbols) // div)
                     for d, div in zip(r["grid"], r["grid_div"]))
        if 0 in grid:
            return lambda: None  # no work: the runtime launches nothing
        args = []
        for a in r["args"]:
            t = tensors[a["name"]]
            assert t.is_contiguous() and t.data_ptr() % 16 == 0, a["name"]
            args.append(t.data_ptr())
        # kernelParams[i] points to the i-th value: pointers, then symbols.
        values = [ctypes.c_uint64(a) for a in args] + [
            ctypes.c_int64(s) for s in symbols]
        params = (ctypes.c_void_p * len(values))(
            *[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values])
        lib, func, block, shared = (self.driver.lib, self.func, r["block"],
                                    r["shared"])

        def launch():
            stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
            self.driver.check(lib.cuLaunchKernel(
                func, *grid, *block, shared, stream, params, None),
                "cuLaunchKernel")
        launch.keep = (values, tensors)  # alive as long as the call
        return launch


class BundleRuntimeKernel:
    """The same kernel through the runtime's C API (argument checks, target
    choice and launch are the runtime's)."""

    def __init__(self, runtime, bundle, name, record):
        self.runtime, self.name, self.record = runtime, name, record
        self.op = record["op"]
        self.kernel = ctypes.c_void_p()
        runtime.check(runtime.lib.tessel_bundle_find_kernel(
            bundle, name.encode(), ctypes.byref(self.kernel)))
        self.kind = ("runtime:" +
                     runtime.lib.tessel_kernel_target(self.kernel).decode())

    def __call__(self, **tensors):
        names = [a["name"] for a in self.record["args"]]
        args = (TesselTensor * len(names))(
            *[RuntimeKernel.tensor(tensors[n]) for n in names])
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        self.runtime.check(self.runtime.lib.tessel_kernel_launch(
            self.kernel, args, len(names), stream))


# --- checks ---------------------------------------------------------------

def report(kernel, what, ok, detail):
    print(f"  {'ok  ' if ok else 'FAIL'} {kernel.name:34s} [{kernel.kind}] "
          f"{what}: {detail}")
    return ok


def rel_err(out, ref):
    """max |out - ref| / max(1, |ref|) over the elements, in float64; NaN
    anywhere makes it NaN (which fails every bound)."""
    if out.numel() == 0:
        return 0.0
    out, ref = out.double(), ref.double()
    err = ((out - ref).abs() / ref.abs().clamp(min=1.0)).max()
    return float("nan") if torch.isnan(out).any() else err.item()


def lse_err(lse, ref):
    """Worst violation of |lse - ref| <= 1e-4 + 1e-5 |ref| (<= 0 passes):
    -inf must be exactly where the reference has it, and no NaN."""
    if lse.numel() == 0:
        return 0.0
    lse, ref = lse.double(), ref.double()
    if torch.isnan(lse).any() or not torch.equal(torch.isneginf(lse),
                                                 torch.isneginf(ref)):
        return float("inf")
    finite = torch.isfinite(ref)
    if not finite.any():
        return 0.0
    diff = (lse[finite] - ref[finite]).abs()
    return (diff - (1e-4 + 1e-5 * ref[finite].abs())).max().item()


def out_tolerance(dtype):
    return 1e-4 if dtype == torch.float32 else 1e-2


def randn(shape, gen, dtype, scale=1.0):
    return (torch.randn(*shape, device="cuda", generator=gen,
                        dtype=torch.float32) * scale).to(dtype)


def weights(lses, dim):
    """The merge's shift and weights for LSEs stacked along `dim`, float64,
    with the op's infinity rules: +inf is -inf (empty), and when every
    partial is empty the shift is 0 (weights 0, lse -inf)."""
    lses = lses.double().masked_fill(lses == POS_INF, NEG_INF)
    m = lses.amax(dim=dim)
    empty = m == NEG_INF
    shift = m.masked_fill(empty, 0.0)
    return shift, empty, torch.exp(lses - shift.unsqueeze(dim))


def merge_reference(oa, la, ob, lb):
    """lse_merge: (out [T, H, D] float64, lse [H, T] float64)."""
    shift, empty, w = weights(torch.stack([la, lb]), 0)  # w [2, H, T]
    total = w.sum(0)
    # An empty partial's output (NaN here) is dropped, not multiplied by 0.
    terms = [(o.double() * wp.t()[..., None]).masked_fill(
        wp.t()[..., None] == 0, 0.0) for o, wp in zip((oa, ob), w)]
    out = (terms[0] + terms[1]) / total.t()[..., None]
    out = torch.where(empty.t()[..., None], oa.double(), out)
    return out, shift + torch.log(total)


def merge_n_reference(parts, plse):
    """lse_merge_n: parts [P, T, H, D], plse [P, H, T]."""
    shift, empty, w = weights(plse, 0)  # w [P, H, T]
    wt = w.transpose(1, 2)[..., None]   # [P, T, H, 1]
    terms = (parts.double() * wt).masked_fill(wt == 0, 0.0).sum(0)
    total = w.sum(0)
    out = (terms / total.t()[..., None]).masked_fill(empty.t()[..., None],
                                                      0.0)
    lse = (shift + torch.log(total)).masked_fill(empty, NEG_INF)
    return out, lse


def plant_empty(lse, o, rows, value):
    """Makes partial (o, lse) empty at `rows` (flat (h, t) indices of lse)
    with LSE `value` (-inf or +inf) and NaN outputs there."""
    H, T = lse.shape
    lse.view(-1)[rows] = value
    h, t = rows // T, rows % T
    o[t, h] = float("nan")


def some_rows(count, fraction, gen):
    n = max(1, int(count * fraction))
    return torch.randperm(count, device="cuda", generator=gen)[:n]


def merge_inputs(record, T, gen):
    """Random lse_merge inputs of the kernel's types with T tokens: (o_a,
    lse_a, o_b, lse_b, both-empty mask [H, T])."""
    H, D = static_dim(record, "o_a", 1), static_dim(record, "o_a", 2)
    oa = randn((T, H, D), gen, arg_dtype(record, "o_a"))
    ob = randn((T, H, D), gen, arg_dtype(record, "o_b"))
    la = randn((H, T), gen, torch.float32, 3.0)
    lb = randn((H, T), gen, torch.float32, 3.0)
    rows = H * T
    # Widely apart LSEs (one weight underflows to 0 in f32 exp).
    far = some_rows(rows, 0.05, gen)
    la.view(-1)[far] = 90.0
    lb.view(-1)[far] = -90.0
    # Empty partials (NaN outputs), both kinds of infinity; and rows where
    # both are empty (o_a finite there: it is the output).
    if rows >= 4:
        perm = torch.randperm(rows, device="cuda", generator=gen)
        k = max(1, rows // 10)
        plant_empty(la, oa, perm[:k], NEG_INF)
        plant_empty(lb, ob, perm[k:2 * k], POS_INF)
        plant_empty(la, oa, perm[2 * k:3 * k], POS_INF)
        plant_empty(lb, ob, perm[3 * k:4 * k], NEG_INF)
        both = perm[4 * k:5 * k] if rows >= 5 else perm[3:4]
        la.view(-1)[both] = NEG_INF
        lb.view(-1)[both] = POS_INF
        h, t = both // T, both % T
        ob[t, h] = float("nan")
    else:
        la.view(-1)[0] = NEG_INF  # a tiny T: one row with a empty
        lb.view(-1)[-1] = POS_INF
    bothmask = ((la == NEG_INF) | (la == POS_INF)) & (
        (lb == NEG_INF) | (lb == POS_INF))
    return oa, la, ob, lb, bothmask


def check_merge_outputs(kernel, what, out, lse, ref_out, ref_lse, oa,
                        bothmask):
    """Compares one lse_merge result; extra check: rows with both partials
    empty hold o_a (as out's type) exactly."""
    err = rel_err(out, ref_out)
    lerr = lse_err(lse, ref_lse) if lse is not None else 0.0
    t_idx = bothmask.t()  # [T, H]
    same = torch.equal(out[t_idx], oa[t_idx].to(out.dtype))
    ok = err <= out_tolerance(out.dtype) and lerr <= 0 and same
    return report(kernel, what, ok,
                  f"rel_err={err:.2e} lse_excess={lerr:.1e} "
                  f"both_empty_rows={int(bothmask.sum())} out==o_a:{same}")


def merge_outputs(record, shape, H, T):
    """NaN-poisoned outputs of a merge kernel: out of `shape` and, if the
    kernel has one, lse_out [H, T] (else None)."""
    out = torch.full(shape, float("nan"), dtype=arg_dtype(record, "out"),
                     device="cuda")
    lse = None
    if arg_dtype(record, "lse_out") is not None:
        lse = torch.full((H, T), float("nan"), device="cuda")
    return out, lse


def run(kernel, **tensors):
    """Launches `kernel` on the given tensors (None: an absent optional
    operand) and waits for it."""
    kernel(**{name: t for name, t in tensors.items() if t is not None})
    torch.cuda.synchronize()


def lse_merge_cases(kernel, gen):
    r = kernel.record
    H = static_dim(r, "o_a", 1)
    ok = True
    for T in (1, 7, 16384):
        oa, la, ob, lb, both = merge_inputs(r, T, gen)
        ref_out, ref_lse = merge_reference(oa, la, ob, lb)
        out, lse = merge_outputs(r, oa.shape, H, T)
        run(kernel, o_a=oa, lse_a=la, o_b=ob, lse_b=lb, out=out, lse_out=lse)
        ok &= check_merge_outputs(kernel, f"T={T:5d}", out, lse, ref_out,
                                  ref_lse, oa, both)
        # In place: out is o_a and lse_out is lse_a.
        if lse is not None and out.dtype == oa.dtype:
            a, l = oa.clone(), la.clone()
            run(kernel, o_a=a, lse_a=l, o_b=ob, lse_b=lb, out=a, lse_out=l)
            ok &= check_merge_outputs(kernel, f"T={T:5d} in place", a, l,
                                      ref_out, ref_lse, oa, both)
    return ok


def merge_n_inputs(record, P, T, gen):
    H, D = static_dim(record, "partials", 2), static_dim(record, "partials", 3)
    parts = randn((P, T, H, D), gen, arg_dtype(record, "partials"))
    plse = randn((P, H, T), gen, torch.float32, 3.0)
    # Empty partials (NaN outputs): about a fifth, both infinities.
    empty = torch.rand((P, H, T), device="cuda", generator=gen) < 0.2
    infinity = torch.full_like(plse, POS_INF)
    infinity[torch.rand((P, H, T), device="cuda", generator=gen) < 0.5] = \
        NEG_INF
    plse[empty] = infinity[empty]
    parts.permute(0, 2, 1, 3)[empty] = float("nan")
    # Rows where every partial is empty.
    rows = some_rows(H * T, 0.05, gen)
    h, t = rows // T, rows % T
    plse[:, h, t] = NEG_INF
    parts[:, t, h] = float("nan")
    return parts, plse


def lse_merge_n_cases(kernel, gen):
    r = kernel.record
    H = static_dim(r, "partials", 2)
    ok = True
    for P, T in ((1, 7), (2, 1000), (5, 333), (33, 77)):
        parts, plse = merge_n_inputs(r, P, T, gen)
        ref_out, ref_lse = merge_n_reference(parts, plse)
        out, lse = merge_outputs(r, parts.shape[1:], H, T)
        run(kernel, partials=parts, partial_lse=plse, out=out, lse_out=lse)
        err = rel_err(out, ref_out)
        lerr = lse_err(lse, ref_lse) if lse is not None else 0.0
        all_empty = (ref_lse == NEG_INF).t()  # [T, H]
        zeros = not (out[all_empty] != 0).any().item()
        good = err <= out_tolerance(out.dtype) and lerr <= 0 and zeros
        ok &= report(kernel, f"P={P:2d} T={T:4d}", good,
                     f"rel_err={err:.2e} lse_excess={lerr:.1e} "
                     f"all_empty_rows={int(all_empty.sum())} "
                     f"zero_there={zeros}")
    return ok


def cache_reference(layout, cache_k, cache_v, k, v, slots, block_size):
    """The caches after reshape_and_cache (clones of the inputs)."""
    ck, cv = cache_k.clone(), cache_v.clone()
    num_slots = ck.shape[0] * block_size
    for t, slot in enumerate(slots.tolist()):
        if slot < 0 or slot >= num_slots:
            continue
        blk, off = divmod(slot, block_size)
        if layout == "nhd":
            ck[blk, off] = k[t]
            cv[blk, off] = v[t]
        else:
            H, x = ck.shape[1], ck.shape[4]
            ck[blk, :, :, off, :] = k[t].reshape(H, -1, x)
            cv[blk, :, off // x, :, off % x] = v[t]
    return ck, cv


def bits(t):
    """The tensor's bits, for exact comparison (NaN poison included)."""
    return t.view({2: torch.int16, 4: torch.int32}[t.element_size()])


def reshape_and_cache_cases(kernel, gen):
    r = kernel.record
    kc_dims = [d for d in next(a for a in r["args"]
                               if a["name"] == "k_cache")["dims"]]
    shuffled = len(kc_dims) == 5
    layout = "shuffled" if shuffled else "nhd"
    block_size = kc_dims[3][2] if shuffled else kc_dims[1][2]
    H, Dk = static_dim(r, "k", 1), static_dim(r, "k", 2)
    Dv = static_dim(r, "v", 2)
    dtype = arg_dtype(r, "k")
    x = 16 // torch.tensor([], dtype=dtype).element_size()
    NB = 64
    num_slots = NB * block_size
    ok = True
    for T in (1, 7, 700):
        k = randn((T, H, Dk), gen, dtype)
        v = randn((T, H, Dv), gen, dtype)
        slots = torch.randperm(num_slots, device="cuda",
                               generator=gen)[:T].to(torch.int32)
        if T > 1:
            # Padding and slots past the cache.
            slots[0] = -1
            bad = [-1, num_slots, num_slots + 5, 2 ** 31 - 1, -7]
            for i, s in enumerate(bad[:T - 1]):
                slots[1 + i * (T - 1) // len(bad)] = s
        if shuffled:
            kshape = (NB, H, Dk // x, block_size, x)
            vshape = (NB, H, block_size // x, Dv, x)
        else:
            kshape = (NB, block_size, H, Dk)
            vshape = (NB, block_size, H, Dv)
        kc = torch.full(kshape, float("nan"), dtype=dtype, device="cuda")
        vc = torch.full(vshape, float("nan"), dtype=dtype, device="cuda")
        ref_k, ref_v = cache_reference(layout, kc, vc, k, v, slots,
                                       block_size)
        run(kernel, k=k, v=v, k_cache=kc, v_cache=vc, slot_mapping=slots)
        same_k = torch.equal(bits(kc), bits(ref_k))
        same_v = torch.equal(bits(vc), bits(ref_v))
        valid = ((slots >= 0) & (slots < num_slots)).sum().item()
        ok &= report(kernel, f"{layout} T={T:3d}", same_k and same_v,
                     f"written={valid} skipped={T - valid} "
                     f"k_cache_exact={same_k} v_cache_exact={same_v}")
    return ok


# The checks of each op; each takes (kernel, generator) and returns True if
# every check passed. Attention kernels (prefill, decode, extend) get theirs
# here.
CASES = {
    "tessel.lse_merge": lse_merge_cases,
    "tessel.lse_merge_n": lse_merge_n_cases,
    "tessel.reshape_and_cache": reshape_and_cache_cases,
}


def empty_launch(kernel):
    """T = 0 through the runtime: accepted, nothing launched."""
    r = kernel.record
    if kernel.op != "tessel.lse_merge":
        return True
    H, D = static_dim(r, "o_a", 1), static_dim(r, "o_a", 2)
    t = {a["name"]: torch.empty(
        (0, H, D) if a["name"] in ("o_a", "o_b", "out") else (H, 0),
        dtype=TORCH_DTYPE[a["dtype"]], device="cuda") for a in r["args"]}
    run(kernel, **t)
    return report(kernel, "T=    0", True, "accepted, no launch")


def main():
    args = bundle_parser(__doc__, runtime=True).parse_args()
    gen, _, kernels = start(args.bundles, args.seed, make=BundleKernel)

    print("correctness (float64 torch reference; NaN-poisoned outputs):")
    ok = True
    for name, k in kernels.items():
        cases = CASES.get(k.op)
        if cases is None:
            print(f"  NOTE {name}: no checks for {k.op}")
            continue
        ok &= guarded(cases, k, gen)

    if args.runtime:
        print("the same through the runtime's C API:")
        runtime = Runtime(args.runtime)
        seen = set()
        for path in args.bundles:
            for r in read_bundle(path):
                if r["name"] in seen or r["op"] not in CASES:
                    continue
                seen.add(r["name"])
                rk = runtime.kernel(
                    path, r["name"],
                    make=lambda rt, b, n, r=r: BundleRuntimeKernel(rt, b, n,
                                                                   r))
                ok &= guarded(CASES[r["op"]], rk, gen)
                ok &= guarded(empty_launch, rk)

    print("ALL OK" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
