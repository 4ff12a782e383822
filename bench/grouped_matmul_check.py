#!/usr/bin/env python3
"""Check Tessel's sm80 grouped-matmul kernels on an NVIDIA GPU.

The kernels are compiled into bundles on the development machine (no LLVM
is needed here):

  tessel-aot bench/grouped_matmul_kernels.mlir --targets=sm80,sm90 -o gm.tsb
  tessel-aot bench/grouped_matmul_wgrad_kernels.mlir --targets=sm80,sm90 \
      -o gmw.tsb

This script reads the bundles (runtime/include/tessel/bundle_format.h),
loads each kernel through the CUDA driver API (ctypes on libcuda.so.1): the
sm90 cubin on an sm_90 GPU, else the sm80 PTX, which the driver JIT-compiles
(one case also runs the PTX on purpose). It launches them with the bundle's
launch geometry and the runtime's parameter convention (the data pointers of
a, b, group_offsets, c, then T as int64) on torch's current stream, and
compares with an fp32 torch reference on fresh random data, outputs poisoned
with NaN before every run: every element must be written, rows past the
last group (ragged M) and the c[g] of empty groups (wgrad) must be exact
zeros, and the error must stay within 1e-2 (bf16 or f16 c) or 1e-3
(wgrad's f32 c) of the reference's largest magnitude (per group for wgrad,
whose groups differ in scale).

Kernel names give the op, layout, element type and shape (the spec files'
headers say more): gm / gmd / gmp / gmpd_e<E>_n<N>_k<K> are ragged-M
(tessel.grouped_matmul) with b stacked [E, N, K] (trans_b), stacked
[E, K, N], or a pointer table of [N, K] / [K, N] matrices; a `_f16` after
the family means f16 instead of bf16; gmw_e<E>_m<M>_n<N> is the weight
gradient (tessel.grouped_matmul_wgrad, c [E, M, N] f32), gmwb_... the same
with a bf16 c. Other families
(say cfg_* from bench/grouped_matmul_configs.mlir: other tiles) are
gm-like. Every kernel runs on random top-k routings and on explicit group
sizes with groups of 0, 1, 7 and over 10000 rows, T odd (no multiple of
any tile); a few also through CUDA-graph capture and replay with new group
offsets before each replay.

  python3 bench/grouped_matmul_check.py gm.tsb [gmw.tsb cfg.tsb ...] \
      [--runtime build-rt/libtessel_runtime.so]

With --runtime, every kernel runs again through the Tessel runtime's C API.
Exits 1 unless every check passed (then it prints ALL OK last). Timing:
bench/grouped_matmul_bench.py.
"""
import argparse
import ctypes
import itertools
import re
import struct
import sys
import time
from typing import NamedTuple

import torch

CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

HEADER = struct.Struct("<8sIIQIIIIQQQ")
KERNEL = struct.Struct("<IIIIIIQIIQQ" + "iiq" * 3 + "III" + "III" + "II" + "QQQ")
ARG = struct.Struct("<IBBBBQ")
DIM = struct.Struct("<iiq")
U32 = struct.Struct("<I")

WGRAD_OP = "tessel.grouped_matmul_wgrad"
# tessel_dtype (bundle_format.h) of the torch dtypes these kernels use.
TESSEL_DTYPE = {torch.float32: 1, torch.float16: 2, torch.bfloat16: 3,
                torch.int32: 4, torch.int64: 5}
TORCH_DTYPE = {code: dtype for dtype, code in TESSEL_DTYPE.items()}
BIG = 10500  # rows of the one large group (> 10K) of the explicit cases


def read_bundle(path):
    """The kernel records of a bundle: name, op, target, dtype, args (name,
    dtype, output, dims), symbols, grid, block, binary."""
    data = open(path, "rb").read()
    (magic, version, _, size, _, count, record, _, kernels, strings,
     _) = HEADER.unpack_from(data, 0)
    assert magic == b"TESSELKB" and version == 2 and size == len(data), path
    assert record == KERNEL.size, "kernel record size"

    def string(offset):
        start = strings + offset
        return data[start:data.index(b"\0", start)].decode()

    def dims(offset, rank):
        return [DIM.unpack_from(data, offset + i * DIM.size)
                for i in range(rank)]

    out = []
    for i in range(count):
        f = KERNEL.unpack_from(data, kernels + i * KERNEL.size)
        args = []
        for a in range(f[5]):
            name, dtype, rank, output, _, dims_at = ARG.unpack_from(
                data, f[6] + a * ARG.size)
            args.append(dict(name=string(name), dtype=dtype,
                             output=bool(output), dims=dims(dims_at, rank)))
        symbols = [string(U32.unpack_from(data, f[9] + 4 * s)[0])
                   for s in range(f[7])]
        grid = [f[11 + 3 * d: 14 + 3 * d] for d in range(3)]
        out.append(dict(name=string(f[0]), op=string(f[1]),
                        target=string(f[2]), entry=string(f[3]), dtype=f[4],
                        args=args, symbols=symbols, grid=grid,
                        grid_div=f[20:23], block=f[23:26], shared=f[26],
                        binary=data[f[28]:f[28] + f[29]]))
    return out


def evaluate(dim, symbols):
    sym, mul, add = dim
    return add if sym < 0 else symbols[sym] * mul + add


class Layout(NamedTuple):
    """What a kernel's name says about its operands."""
    prefix: str     # the name before _e<E>: family and element type
    wgrad: bool     # c [E, M, N] = a[rows_g]^T . b[rows_g]; else ragged M
    E: int
    M: int          # wgrad: a [T, M]; 0 for ragged M
    N: int          # c [T, N] (ragged M) or [E, M, N] (wgrad)
    K: int          # ragged M: a [T, K]; 0 for wgrad
    trans_b: bool   # ragged M: b [E, N, K] (or table of [N, K])
    table: bool     # ragged M: b is a pointer table
    dtype: torch.dtype  # of a and b (and c, except wgrad's)

    @property
    def c_dtype(self):
        """Wgrad's c is f32, or bf16 for the gmwb family."""
        if not self.wgrad:
            return self.dtype
        return torch.bfloat16 if self.prefix.startswith("gmwb") else \
            torch.float32

    @property
    def tolerance(self):
        """Of the max relative error. A bf16 (f16) c rounds each element by
        up to 2e-3 (5e-4). Wgrad's f32 c differs from the reference only in
        the order of summation (measured < 1e-4), and a row of a large group
        left out of it shows as about 1e-2: 1e-3 tells them apart."""
        return 1e-3 if self.c_dtype == torch.float32 else 1e-2


NAME = re.compile(r"(\w+?)(_f16)?_e(\d+)(?:_m(\d+)_n(\d+)|_n(\d+)_k(\d+))",
                  re.IGNORECASE)


def layout(name):
    """The Layout of a kernel of bench/grouped_matmul_kernels.mlir,
    bench/grouped_matmul_wgrad_kernels.mlir or a config bundle, by its name
    (see the module docstring); _m<M>_n<N> marks the wgrad."""
    match = NAME.fullmatch(name)
    if not match:
        raise ValueError(f"kernel name {name!r} says no layout")
    family, f16, E, wM, wN, N, K = match.groups()
    family = family.lower()
    prefix = family + ("_f16" if f16 else "")
    dtype = torch.float16 if f16 else torch.bfloat16
    if wM:
        return Layout(prefix, True, int(E), int(wM), int(wN), 0, False,
                      False, dtype)
    return Layout(prefix, False, int(E), 0, int(N), int(K),
                  family not in ("gmd", "gmpd"), family in ("gmp", "gmpd"),
                  dtype)


class Driver:
    """The few CUDA driver calls needed, on torch's context."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.check(self.lib.cuInit(0), "cuInit")
        torch.zeros(1, device="cuda")  # makes torch's primary context current
        ctx = ctypes.c_void_p()
        self.check(self.lib.cuCtxGetCurrent(ctypes.byref(ctx)),
                   "cuCtxGetCurrent")
        assert ctx.value, "no current CUDA context"

    def check(self, rc, what):
        if rc != 0:
            msg = ctypes.c_char_p()
            self.lib.cuGetErrorString(rc, ctypes.byref(msg))
            raise RuntimeError(f"{what} failed: {rc} {msg.value}")

    def load(self, image, name):
        module = ctypes.c_void_p()
        self.check(self.lib.cuModuleLoadData(ctypes.byref(module), image),
                   f"cuModuleLoadData({name})")
        func = ctypes.c_void_p()
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(func), module,
                                                name.encode()),
                   f"cuModuleGetFunction({name})")
        return func

    def launch(self, func, grid_dims, block, shared, args):
        # kernelParams[i] points to the i-th value: pointers, then int64 T.
        values = [ctypes.c_uint64(a) if isinstance(a, Ptr) else
                  ctypes.c_int64(a) for a in args]
        params = (ctypes.c_void_p * len(values))(
            *[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values])
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        self.check(self.lib.cuLaunchKernel(
            func, *grid_dims, *block, shared, stream, params, None),
            "cuLaunchKernel")


class Ptr(int):
    pass


class Kernel:
    """One bundle record, loaded and launched through the driver API."""

    def __init__(self, driver, record):
        self.driver, self.record = driver, record
        self.name = record["name"]
        self.kind = "cubin" if record["target"] == "sm90" else "ptx-jit"
        self.layout = layout(self.name)
        # The name drives the checks: it must agree with the bundle.
        if ((record["op"] == WGRAD_OP) != self.layout.wgrad or
                TORCH_DTYPE.get(record["dtype"]) != self.layout.dtype):
            raise ValueError(f"{self.name}: the name disagrees with the "
                             f"bundle ({record['op']}, dtype "
                             f"{record['dtype']})")
        image = record["binary"]
        if self.kind == "ptx-jit":
            image += b"\0"
        self.func = driver.load(image, record["entry"])
        # Dynamic shared memory past 48 KB needs an opt-in per function.
        driver.check(driver.lib.cuFuncSetAttribute(
            self.func, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            record["shared"]), "cuFuncSetAttribute")

    def __call__(self, a, b, offsets, c):
        """`b` is what Problem.b_arg made for this kernel; T is the rows of
        a (both ops)."""
        assert a.is_contiguous() and b.is_contiguous() and c.is_contiguous()
        r = self.record
        values = {"T": a.shape[0]}
        symbols = [values[s] for s in r["symbols"]]
        grid = tuple(-(-evaluate(d, symbols) // div)
                     for d, div in zip(r["grid"], r["grid_div"]))
        self.driver.launch(self.func, grid, r["block"], r["shared"],
                           [Ptr(a.data_ptr()), Ptr(b.data_ptr()),
                            Ptr(offsets.data_ptr()), Ptr(c.data_ptr()),
                            a.shape[0]])


def load_kernels(driver, bundles, major, make=None):
    """Per kernel name, the sm90 cubin on an sm_90 GPU, else the sm80 PTX;
    only that one is loaded (the driver JIT-compiles PTX, which takes
    time), as make(driver, record) (default: Kernel)."""
    preferred = ["sm90", "sm80"] if major == 9 else ["sm80"]
    best = {}
    for r in (r for path in bundles for r in read_bundle(path)):
        if r["target"] not in preferred:
            continue
        old = best.get(r["name"])
        if old is None or (preferred.index(r["target"]) <
                           preferred.index(old["target"])):
            best[r["name"]] = r
    make = make or Kernel
    return {name: make(driver, r) for name, r in sorted(best.items())}


def start(bundles, seed, make=None):
    """The common start of the checks and the benchmarks: fp32 references
    without TF32, a seeded generator, the driver and the bundles' kernels
    (the device line and the kernel count printed), each made by
    make(driver, record) (default: Kernel). Returns (gen, driver,
    kernels)."""
    torch.backends.cuda.matmul.allow_tf32 = False  # an fp32 reference
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    driver = Driver()
    print(device_line())
    major = torch.cuda.get_device_properties(0).major
    kernels = load_kernels(driver, bundles, major, make)
    print(f"kernels: {len(kernels)} from {', '.join(bundles) or '-'}")
    return gen, driver, kernels


def device_line():
    props = torch.cuda.get_device_properties(0)
    return (f"device: {props.name} (sm_{props.major}{props.minor}), "
            f"torch {torch.__version__}, CUDA {torch.version.cuda}, "
            f"{time.strftime('%Y-%m-%d %H:%M %Z')}")


class TesselTensor(ctypes.Structure):
    """tessel_tensor of runtime/include/tessel/runtime.h."""
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32),
                ("rank", ctypes.c_int32), ("shape", ctypes.c_int64 * 8)]


class Runtime:
    """libtessel_runtime.so (CUDA backend): one device, each bundle loaded
    once. Bundle validation, target choice, argument checks and the launch
    are the runtime's, not ours."""

    def __init__(self, path):
        self.lib = lib = ctypes.CDLL(path)
        lib.tessel_status_message.restype = ctypes.c_char_p
        lib.tessel_kernel_target.restype = ctypes.c_char_p
        for f in ("tessel_device_open", "tessel_bundle_load_file",
                  "tessel_bundle_find_kernel", "tessel_kernel_launch"):
            getattr(lib, f).restype = ctypes.c_void_p
        lib.tessel_kernel_target.argtypes = [ctypes.c_void_p]
        lib.tessel_status_message.argtypes = [ctypes.c_void_p]
        lib.tessel_bundle_load_file.argtypes = [
            ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        lib.tessel_bundle_find_kernel.argtypes = [
            ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        lib.tessel_kernel_launch.argtypes = [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
            ctypes.c_void_p]
        self.device = ctypes.c_void_p()
        self.check(lib.tessel_device_open(b"cuda", 0,
                                          ctypes.byref(self.device)))
        self.bundles = {}

    def check(self, status):
        if status:
            raise RuntimeError(self.lib.tessel_status_message(status).decode())

    def kernel(self, bundle_path, name, make=None):
        """Kernel `name` of the bundle, as make(runtime, bundle, name)
        (default: RuntimeKernel)."""
        if bundle_path not in self.bundles:
            bundle = ctypes.c_void_p()
            self.check(self.lib.tessel_bundle_load_file(
                self.device, bundle_path.encode(), ctypes.byref(bundle)))
            self.bundles[bundle_path] = bundle
        return (make or RuntimeKernel)(self, self.bundles[bundle_path], name)


class RuntimeKernel:
    """A kernel launched through the runtime's C API; called like Kernel."""

    def __init__(self, runtime, bundle, name):
        self.runtime, self.name = runtime, name
        self.layout = layout(name)
        self.kernel = ctypes.c_void_p()
        runtime.check(runtime.lib.tessel_bundle_find_kernel(
            bundle, name.encode(), ctypes.byref(self.kernel)))
        self.kind = ("runtime:" +
                     runtime.lib.tessel_kernel_target(self.kernel).decode())

    @staticmethod
    def tensor(t):
        shape = (ctypes.c_int64 * 8)(*t.shape)
        return TesselTensor(t.data_ptr(), TESSEL_DTYPE[t.dtype], t.dim(),
                            shape)

    def __call__(self, a, b, offsets, c):
        args = (TesselTensor * 4)(*[self.tensor(t) for t in (a, b, offsets,
                                                             c)])
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        self.runtime.check(self.runtime.lib.tessel_kernel_launch(
            self.kernel, args, 4, stream))


def prepare_b(kernel, w):
    """The b argument of ragged-M `kernel` for weights w [E, N, K]: the
    stacked tensor in its layout, or a table of the addresses of E
    separately allocated matrices (kept alive on the table tensor)."""
    mats = w if kernel.layout.trans_b else w.transpose(1, 2)
    if not kernel.layout.table:
        return mats.contiguous()
    keep = [m.contiguous().clone() for m in mats]
    table = torch.tensor([m.data_ptr() for m in keep], dtype=torch.int64,
                         device=w.device)
    table.keep = keep
    return table


def randn(shape, gen, dtype, scale=1.0):
    return (torch.randn(*shape, device="cuda", generator=gen) *
            scale).to(dtype)


class Problem:
    """Random inputs of one kernel layout with T rows, its output buffer c,
    and the fp32 reference.

    Ragged M: a [T, K], weights w [E, N, K] (the nn.Linear layout; each
    kernel gets them in its own layout from b_arg), c [T, N].
    Wgrad: a [T, M], b [T, N], c [E, M, N] f32."""

    def __init__(self, L, T, gen):
        self.L = L
        if L.wgrad:
            self.a = randn((T, L.M), gen, L.dtype)
            self.b = randn((T, L.N), gen, L.dtype)
            shape, dtype = (L.E, L.M, L.N), L.c_dtype
        else:
            self.a = randn((T, L.K), gen, L.dtype)
            # Scaled so that c is about N(0, 1) whatever K is.
            self.w = randn((L.E, L.N, L.K), gen, L.dtype, L.K ** -0.5)
            shape, dtype = (T, L.N), L.dtype
        self.c = torch.empty(shape, dtype=dtype, device="cuda")

    def b_arg(self, kernel):
        return self.b if self.L.wgrad else prepare_b(kernel, self.w)

    def reference(self, ends):
        """fp32 per group: a[rows] @ w[g].T (rows past the last end are
        zero), or a[rows].T @ b[rows] (zero for an empty group)."""
        out = torch.zeros(self.c.shape, dtype=torch.float32, device="cuda")
        start = 0
        for g, end in enumerate(ends):
            if end > start:
                rows = self.a[start:end].float()
                if self.L.wgrad:
                    out[g] = rows.T @ self.b[start:end].float()
                else:
                    out[start:end] = rows @ self.w[g].float().T
            start = end
        return out

    def compare(self, ends):
        """(max relative error, every element written, the parts that no
        group owns exactly zero) of c against the reference."""
        written = not torch.isnan(self.c).any().item()
        if self.c.numel() == 0:
            return 0.0, written, True
        ref = self.reference(ends)
        diff = (self.c.float() - ref).abs()
        if self.L.wgrad:
            # Per group: a 1-row group's c is ~100x smaller than a 10K-row
            # group's, and an error there must not hide under the latter.
            scale = ref.abs().amax(dim=(1, 2))
            err = (diff.amax(dim=(1, 2)) /
                   torch.where(scale > 0, scale, 1.0)).max().item()
            starts = [0] + ends[:-1]
            empty = [g for g, (s, e) in enumerate(zip(starts, ends))
                     if e <= s]
            zeros = not empty or not self.c[empty].any().item()
        else:
            err = diff.max().item() / (ref.abs().max().item() or 1.0)
            zeros = not self.c[ends[-1]:].any().item()
        return err, written, zeros


def report(kernel, how, T, sizes, tail, result):
    """Prints one check line; True if it passed."""
    err, written, zeros = result
    ok = written and zeros and err <= kernel.layout.tolerance  # NaN fails
    shown = sizes if len(sizes) <= 8 else (
        f"[{len(sizes)} of {min(sizes)}..{max(sizes)} rows, "
        f"{sizes.count(0)} empty]")
    print(f"  {'ok  ' if ok else 'FAIL'} {kernel.name:24s} [{kernel.kind}"
          f"{', ' + how if how else ''}] T={T:6d} tail={tail:3d} "
          f"groups={shown} max_rel_err={err:.2e} all_written={written} "
          f"unowned_zero={zeros}")
    return ok


def cumulative(sizes):
    """group_offsets: the cumulative ends of groups of these sizes."""
    return list(itertools.accumulate(sizes))


def check(kernel, sizes, tail, gen):
    """Runs `kernel` on groups of `sizes` rows plus `tail` unowned rows."""
    assert len(sizes) == kernel.layout.E
    T = sum(sizes) + tail
    p = Problem(kernel.layout, T, gen)
    ends = cumulative(sizes)
    offsets = torch.tensor(ends, dtype=torch.int32, device="cuda")
    p.c.fill_(float("nan"))
    kernel(p.a, p.b_arg(kernel), offsets, p.c)
    torch.cuda.synchronize()
    return report(kernel, "", T, sizes, tail, p.compare(ends))


def graph_check(kernel, routings, gen):
    """Captures one launch in a CUDA graph, then replays it after writing
    each routing's group offsets into the same buffer: the kernel must read
    the offsets on the device when it runs (nothing baked in at capture, no
    host synchronisation in the launch). Each routing has at most T rows;
    the rest are tail rows, which no group owns."""
    T = max(sum(sizes) for sizes in routings)
    p = Problem(kernel.layout, T, gen)
    b = p.b_arg(kernel)
    offsets = torch.zeros(kernel.layout.E, dtype=torch.int32, device="cuda")
    graph = torch.cuda.CUDAGraph()
    torch.cuda.synchronize()
    with torch.cuda.graph(graph):
        kernel(p.a, b, offsets, p.c)
    ok = True
    for sizes in routings:
        ends = cumulative(sizes)
        offsets.copy_(torch.tensor(ends, dtype=torch.int32))
        p.c.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        ok &= report(kernel, "graph replay", T, sizes, T - sum(sizes),
                     p.compare(ends))
    return ok


def routed_sizes(tokens, topk, E, gen):
    """Group sizes of a random top-k routing (as an MoE router gives)."""
    scores = torch.rand(tokens, E, device="cuda", generator=gen)
    ids = scores.topk(topk, dim=1).indices.flatten()
    return torch.bincount(ids, minlength=E).tolist()


def odd(sizes, tail):
    """`tail` or `tail + 1`, whichever makes T = sum(sizes) + tail odd:
    then T is no multiple of any tile."""
    return tail + 1 - (sum(sizes) + tail) % 2


# Explicit group sizes of E = 8 (0, 1, 7 and > 10K rows; groups just under,
# at and over tile sizes) and their tail rows.
E8_CASES = [([0, 1, 7, 10500, 0, 130, 129, 3], 37),
            ([0, 1, 7, 12001, 0, 255, 256, 3], 0),
            ([0, 1, 7, 10500, 0, 64, 65, 63], 9)]


def cases(L, gen):
    """(group sizes, tail rows) cases for a kernel of layout L."""
    E = L.E
    if E == 1:
        # (No T = 0: its grid has no blocks, which the driver refuses.)
        return [([1000], 0), ([1], 200), ([BIG], odd([BIG], 36)), ([7], 0),
                ([0], 5)]
    out = []
    # A random top-8 routing of 4096 tokens (top-2 of 8 experts) with
    # empty, 1-row and 7-row groups planted, the first one empty.
    routed = routed_sizes(4096, min(8, max(1, E // 4)), E, gen)
    routed[0], routed[E // 2], routed[-1] = 0, 1, 7
    out.append((routed, odd(routed, 37)))
    if E >= 5:
        # 0, 1, 7 and one > 10K rows first; random small groups; the last
        # group empty, so that the tail follows an empty group.
        rest = torch.randint(0, 300, (E - 5,), device="cuda",
                             generator=gen).tolist()
        explicit = [0, 1, 7, BIG] + rest + [0]
        out.append((explicit, odd(explicit, 9)))
    if E == 8:
        out += E8_CASES
    small = (L.M or L.K) * L.N <= 200 * 72
    if small:
        out += [([0] * E, 5), ([0] * E, 0)]  # every group empty; T = 0
    return out


def graph_routings(gen):
    """Three routings of E = 128 for one graph: two random top-8 routings
    of 4096 tokens, and one with 126 experts empty (2767 tail rows)."""
    E = 128
    skewed = [0] * E
    skewed[5], skewed[77] = 30000, 1
    return [routed_sizes(4096, 8, E, gen), routed_sizes(4096, 8, E, gen),
            skewed]


# Captured and replayed: the gate/up forward, the down dgrad, the gate/up
# weight gradient of the reference MoE shape.
GRAPH_KERNELS = ("gm_e128_n1024_k2048", "gmd_e128_n512_k2048",
                 "gmw_e128_m1024_n2048")


def guarded(fn, kernel, *args):
    """fn(kernel, *args), a failed check if it raises (a launch the driver
    or the runtime refuses, say): the other checks still run."""
    try:
        return fn(kernel, *args)
    except Exception as e:  # report, keep going
        print(f"  FAIL {kernel.name:24s} [{kernel.kind}] {fn.__name__} "
              f"raised {type(e).__name__}: {e}")
        return False


def bundle_parser(doc, runtime=False):
    """The command line of a check or benchmark (`doc`: its docstring):
    bundles and --seed, and with `runtime` the --runtime option."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("bundles", nargs="+")
    parser.add_argument("--seed", type=int, default=1234)
    if runtime:
        parser.add_argument("--runtime", help="libtessel_runtime.so: also "
                            "run every kernel through the runtime's C API")
    return parser


def main():
    args = bundle_parser(__doc__, runtime=True).parse_args()
    gen, driver, kernels = start(args.bundles, args.seed)
    if not any(k.layout.wgrad for k in kernels.values()):
        print("NOTE: no gmw_* kernels given: the weight gradient is not "
              "checked")

    print("correctness (fp32 reference; max relative error of the largest "
          "magnitude, per group for wgrad: at most 1e-2 for bf16/f16 c, "
          "1e-3 for wgrad's f32 c):")
    ok = True
    for name, k in kernels.items():
        for sizes, tail in cases(k.layout, gen):
            ok &= guarded(check, k, sizes, tail, gen)
    # The same small kernel from its PTX, JIT-compiled by the driver.
    jit = [r for path in args.bundles for r in read_bundle(path)
           if r["target"] == "sm80" and r["name"] == "gm_e8_n64_k64"]
    if jit:
        ok &= guarded(check, Kernel(driver, jit[0]), *E8_CASES[0], gen)

    runtime = Runtime(args.runtime) if args.runtime else None
    bundle_of = {}  # kernel name -> the first bundle that has it
    if runtime:
        print("the same through the runtime's C API:")
        for path in args.bundles:
            for r in read_bundle(path):
                bundle_of.setdefault(r["name"], path)
        for name, path in sorted(bundle_of.items()):
            rk = runtime.kernel(path, name)
            for sizes, tail in cases(rk.layout, gen):
                ok &= guarded(check, rk, sizes, tail, gen)

    print("CUDA graph capture and replay (new offsets before each replay):")
    routings = graph_routings(gen)
    for name in GRAPH_KERNELS:
        if name in kernels:
            ok &= guarded(graph_check, kernels[name], routings, gen)
        if name in bundle_of:
            ok &= guarded(graph_check, runtime.kernel(bundle_of[name], name),
                          routings, gen)

    print("ALL OK" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
