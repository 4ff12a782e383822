#!/usr/bin/env python3
"""Check and time Tessel's sm80 grouped-matmul kernels on an NVIDIA GPU.

The kernels are compiled into a bundle on the development machine (no LLVM
is needed here):

  tessel-aot bench/grouped_matmul_kernels.mlir --targets=sm80,sm90 -o gm.tsb

This script reads the bundle (runtime/include/tessel/bundle_format.h), loads
each kernel through the CUDA driver API (ctypes on libcuda.so.1): the sm90
cubin on an sm_90 GPU, else the sm80 PTX, which the driver JIT-compiles (one
case also runs the PTX on purpose). It launches them with the bundle's
launch geometry and the runtime's parameter convention (the data pointers of
a, b, group_offsets, c, then T as int64) on torch's current stream, and
compares with an fp32 torch reference on fresh random data, outputs poisoned
with NaN before every run. Kernel names give the layout of b (gm: stacked
[E, N, K], trans_b; gmd: stacked [E, K, N]; gmp / gmpd: pointer tables of
[N, K] / [K, N] matrices) and E, N, K. Then it times every kernel of the
reference MoE gate/up shape (4096 tokens x top-8, E=128, H=2048,
N=2*I=1024) and of its two dgrads (b [E, K, N]: of down N=512 K=2048, of
gate/up N=2048 K=1024) beside torch._grouped_mm on the same layout and a
dense bf16 matmul of the same size (the ceiling).

  python3 bench/grouped_matmul_check.py gm.tsb [configs.tsb ...] \
      [--runtime build-rt/libtessel_runtime.so]

(bench/grouped_matmul_configs.mlir holds other tile configurations of the
gate/up shape; their bundle adds them to the timing table.)
"""
import argparse
import ctypes
import os
import re
import struct
import sys
import time

import torch

CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

HEADER = struct.Struct("<8sIIQIIIIQQQ")
KERNEL = struct.Struct("<IIIIIIQIIQQ" + "iiq" * 3 + "III" + "III" + "II" + "QQ")
ARG = struct.Struct("<IBBBBQ")
DIM = struct.Struct("<iiq")


def read_bundle(path):
    """The kernel records of a bundle: name, target, args, grid, block,
    binary."""
    data = open(path, "rb").read()
    (magic, version, _, size, _, count, record, _, kernels, strings,
     _) = HEADER.unpack_from(data, 0)
    assert magic == b"TESSELKB" and version == 1 and size == len(data), path
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
            name, _, rank, _, _, dims_at = ARG.unpack_from(
                data, f[6] + a * ARG.size)
            args.append((string(name), dims(dims_at, rank)))
        grid = [f[11 + 3 * d: 14 + 3 * d] for d in range(3)]
        out.append(dict(name=string(f[0]), target=string(f[2]),
                        entry=string(f[3]), args=args, grid=grid,
                        grid_div=f[20:23], block=f[23:26], shared=f[26],
                        binary=data[f[28]:f[28] + f[29]]))
    return out


def evaluate(dim, symbols):
    sym, mul, add = dim
    return add if sym < 0 else symbols[sym] * mul + add


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
    def __init__(self, driver, record):
        self.driver, self.record = driver, record
        self.name = record["name"]
        self.kind = "cubin" if record["target"] == "sm90" else "ptx-jit"
        image = record["binary"]
        if self.kind == "ptx-jit":
            image += b"\0"
        self.E, self.N, self.K, self.trans_b, self.table = layout(self.name)
        self.func = driver.load(image, record["entry"])
        # Dynamic shared memory past 48 KB needs an opt-in per function.
        driver.check(driver.lib.cuFuncSetAttribute(
            self.func, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            record["shared"]), "cuFuncSetAttribute")

    def __call__(self, a, b, offsets, c):
        """`b` is what prepare_b made of the [E, N, K] weights."""
        T = a.shape[0]
        assert a.is_contiguous() and b.is_contiguous() and c.is_contiguous()
        r = self.record
        grid = tuple(-(-evaluate(d, [T]) // div)
                     for d, div in zip(r["grid"], r["grid_div"]))
        self.driver.launch(self.func, grid, r["block"], r["shared"],
                           [Ptr(a.data_ptr()), Ptr(b.data_ptr()),
                            Ptr(offsets.data_ptr()), Ptr(c.data_ptr()), T])


def layout(name):
    """E, N, K, trans_b, pointer table of a kernel of
    bench/grouped_matmul_kernels.mlir (or a config bundle), by its name:
    gm (stacked [E, N, K]), gmd (stacked [E, K, N]), gmp / gmpd (pointer
    tables of [N, K] / [K, N] matrices); other families are gm-like."""
    family, E, N, K = re.fullmatch(r"(\w+?)_e(\d+)_n(\d+)_k(\d+)",
                                   name).groups()
    return (int(E), int(N), int(K), family not in ("gmd", "gmpd"),
            family in ("gmp", "gmpd"))


def prepare_b(kernel, b):
    """The b argument of `kernel` for weights b [E, N, K]: the stacked
    tensor in its layout, or a table of the addresses of E separately
    allocated matrices (kept alive on the table tensor)."""
    mats = b if kernel.trans_b else b.transpose(1, 2)
    if not kernel.table:
        return mats.contiguous()
    keep = [m.contiguous().clone() for m in mats]
    table = torch.tensor([m.data_ptr() for m in keep], dtype=torch.int64,
                         device=b.device)
    table.keep = keep
    return table


class TesselTensor(ctypes.Structure):
    """tessel_tensor of runtime/include/tessel/runtime.h."""
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32),
                ("rank", ctypes.c_int32), ("shape", ctypes.c_int64 * 8)]


TESSEL_BF16, TESSEL_I32, TESSEL_I64 = 3, 4, 5


class RuntimeKernel:
    """The same kernel loaded and launched through the Tessel runtime's C
    API (libtessel_runtime.so, CUDA backend): bundle validation, target
    choice, argument checks and the launch are the runtime's, not ours."""

    def __init__(self, lib, bundle_path, name):
        self.lib, self.name, self.kind = lib, name, "runtime"
        self.E, self.N, self.K, self.trans_b, self.table = layout(name)
        self.device, self.bundle = ctypes.c_void_p(), ctypes.c_void_p()
        self.kernel = ctypes.c_void_p()
        self.check(lib.tessel_device_open(b"cuda", 0,
                                          ctypes.byref(self.device)))
        self.check(lib.tessel_bundle_load_file(
            self.device, bundle_path.encode(), ctypes.byref(self.bundle)))
        self.check(lib.tessel_bundle_find_kernel(
            self.bundle, name.encode(), ctypes.byref(self.kernel)))
        self.kind = "runtime:" + lib.tessel_kernel_target(self.kernel).decode()

    def check(self, status):
        if status:
            raise RuntimeError(self.lib.tessel_status_message(status).decode())

    @staticmethod
    def tensor(t, dtype):
        shape = (ctypes.c_int64 * 8)(*t.shape)
        return TesselTensor(t.data_ptr(), dtype, t.dim(), shape)

    def __call__(self, a, b, offsets, c):
        args = (TesselTensor * 4)(self.tensor(a, TESSEL_BF16),
                                  self.tensor(b, TESSEL_I64 if self.table
                                              else TESSEL_BF16),
                                  self.tensor(offsets, TESSEL_I32),
                                  self.tensor(c, TESSEL_BF16))
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        self.check(self.lib.tessel_kernel_launch(self.kernel, args, 4, stream))


def load_runtime(path):
    lib = ctypes.CDLL(path)
    lib.tessel_status_message.restype = ctypes.c_char_p
    lib.tessel_kernel_target.restype = ctypes.c_char_p
    for f in ("tessel_device_open", "tessel_bundle_load_file",
              "tessel_bundle_find_kernel", "tessel_kernel_launch"):
        getattr(lib, f).restype = ctypes.c_void_p
    lib.tessel_kernel_target.argtypes = [ctypes.c_void_p]
    lib.tessel_status_message.argtypes = [ctypes.c_void_p]
    lib.tessel_bundle_load_file.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                            ctypes.c_void_p]
    lib.tessel_bundle_find_kernel.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                              ctypes.c_void_p]
    lib.tessel_kernel_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                         ctypes.c_size_t, ctypes.c_void_p]
    return lib


def reference(a, b, ends):
    """fp32 per-group a[rows] @ b[g].T; rows past the last end are zero."""
    out = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float32,
                      device=a.device)
    start = 0
    for g, end in enumerate(ends):
        if end > start:
            out[start:end] = a[start:end].float() @ b[g].float().T
        start = end
    return out


def check(kernel, sizes, tail, gen):
    """Runs `kernel` on groups of `sizes` rows plus `tail` unowned rows."""
    E, N, K = kernel.E, kernel.N, kernel.K
    assert len(sizes) == E
    T = sum(sizes) + tail
    a = torch.randn(T, K, device="cuda", generator=gen).bfloat16()
    b = (torch.randn(E, N, K, device="cuda", generator=gen) /
         K ** 0.5).bfloat16()
    ends = torch.tensor(sizes).cumsum(0).tolist()
    offsets = torch.tensor(ends, dtype=torch.int32, device="cuda")
    c = torch.full((T, N), float("nan"), dtype=torch.bfloat16, device="cuda")
    kernel(a, prepare_b(kernel, b), offsets, c)
    torch.cuda.synchronize()
    ref = reference(a, b, ends)
    written = not torch.isnan(c).any().item()
    err = 0.0
    if T:
        scale = ref.abs().max().item() or 1.0
        err = (c.float() - ref).abs().max().item() / scale
    ok = written and err <= 1e-2
    shown = sizes if len(sizes) <= 8 else f"{len(sizes)} groups"
    print(f"  {'ok  ' if ok else 'FAIL'} {kernel.name:22s} [{kernel.kind}] "
          f"T={T:6d} tail={tail:3d} groups={shown} "
          f"max_rel_err={err:.2e} all_written={written}")
    return ok


def graph_check(kernel, routings, gen):
    """Captures one launch in a CUDA graph, then replays it after writing
    each routing's group offsets into the same buffer: the kernel must read
    the offsets on the device when it runs (nothing baked in at capture, no
    host synchronisation in the launch). Each routing has at most T rows;
    the rest are tail rows, which must come out zero."""
    E, N, K = kernel.E, kernel.N, kernel.K
    T = max(sum(sizes) for sizes in routings)
    a = torch.randn(T, K, device="cuda", generator=gen).bfloat16()
    b = (torch.randn(E, N, K, device="cuda", generator=gen) /
         K ** 0.5).bfloat16()
    b_arg = prepare_b(kernel, b)
    offsets = torch.zeros(E, dtype=torch.int32, device="cuda")
    c = torch.empty(T, N, dtype=torch.bfloat16, device="cuda")
    graph = torch.cuda.CUDAGraph()
    torch.cuda.synchronize()
    with torch.cuda.graph(graph):
        kernel(a, b_arg, offsets, c)
    ok = True
    for sizes in routings:
        ends = torch.tensor(sizes).cumsum(0).tolist()
        offsets.copy_(torch.tensor(ends, dtype=torch.int32))
        c.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        ref = reference(a, b, ends)
        written = not torch.isnan(c).any().item()
        err = (c.float() - ref).abs().max().item() / (
            ref.abs().max().item() or 1.0)
        good = written and err <= 1e-2
        ok &= good
        print(f"  {'ok  ' if good else 'FAIL'} {kernel.name:22s} "
              f"[{kernel.kind}, graph replay] T={T:6d} "
              f"rows={sum(sizes):6d} empty_groups={sizes.count(0):3d} "
              f"max_rel_err={err:.2e} all_written={written}")
    return ok


def routed_sizes(tokens, topk, E, gen):
    """Group sizes of a random top-k routing (as an MoE router gives)."""
    scores = torch.rand(tokens, E, device="cuda", generator=gen)
    ids = scores.topk(topk, dim=1).indices.flatten()
    return torch.bincount(ids, minlength=E).tolist()


def time_ms(fn, iters=50):
    for _ in range(5):
        fn()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) / iters


def timing(kernels, gen, title, N, K, trans_b):
    """Times the kernels of shape E=128 x N x K with trans_b (stacked or
    table) beside torch._grouped_mm on the same layout and a dense bf16
    matmul of the same size (the ceiling), 4096 tokens x top-8."""
    E = 128
    print(f"timing: {title}, 4096 tokens x top-8, E={E}, N={N}, K={K} "
          "(bf16, fp32 accumulate)")
    ok = True
    sizes = routed_sizes(4096, 8, E, gen)
    T = sum(sizes)
    a = torch.randn(T, K, device="cuda", generator=gen).bfloat16()
    b = (torch.randn(E, N, K, device="cuda", generator=gen) /
         K ** 0.5).bfloat16()
    offsets = torch.tensor(sizes, device="cuda").cumsum(0).to(torch.int32)
    c = torch.empty(T, N, dtype=torch.bfloat16, device="cuda")
    flops = 2.0 * T * N * K
    rows = []
    # torch._grouped_mm takes b as [E, K, N] (any strides): the transposed
    # view of the [E, N, K] weights for trans_b, else a [E, K, N] tensor.
    bt = b.transpose(-2, -1) if trans_b else b.transpose(-2, -1).contiguous()
    try:
        peer = torch._grouped_mm(a, bt, offs=offsets)
        rows.append(("torch._grouped_mm",
                     time_ms(lambda: torch._grouped_mm(a, bt, offs=offsets))))
    except Exception as e:  # report, keep going
        print(f"  torch._grouped_mm unavailable: {e}")
        peer = reference(a, b, torch.cumsum(torch.tensor(sizes), 0).tolist())
    for name, k in sorted(kernels.items()):
        if (k.E, k.N, k.K) != (E, N, K) or k.trans_b != trans_b:
            continue
        barg = prepare_b(k, b)
        c.fill_(float("nan"))
        k(a, barg, offsets, c)
        diff = ((c.float() - peer.float()).abs().max() /
                peer.float().abs().max()).item()
        good = diff <= 1e-2  # NaN (a row not written) fails too
        ok &= good
        ms = time_ms(lambda: k(a, barg, offsets, c))
        rows.append((f"tessel {name} [{k.kind}] "
                     f"{'' if good else 'WRONG '}diff={diff:.1e}", ms))
    dense_b = b[0].T.contiguous()
    rows.append(("dense bf16 matmul (ceiling)",
                 time_ms(lambda: a @ dense_b)))
    for label, ms in rows:
        print(f"  {label:48s} {ms * 1e3:9.1f} us  {flops / ms / 1e9:7.1f} TFLOP/s")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundles", nargs="+")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--runtime", help="libtessel_runtime.so: also run "
                        "every kernel of the first bundle through the "
                        "runtime's C API")
    args = parser.parse_args()
    gen = torch.Generator(device="cuda")
    gen.manual_seed(args.seed)
    driver = Driver()
    props = torch.cuda.get_device_properties(0)
    print(f"device: {props.name} (sm_{props.major}{props.minor}), "
          f"torch {torch.__version__}, {time.strftime('%Y-%m-%d %H:%M %Z')}")

    # Per kernel name, the sm90 cubin on an sm_90 GPU, else the sm80 PTX.
    preferred = ["sm90", "sm80"] if props.major == 9 else ["sm80"]
    records = [r for path in args.bundles for r in read_bundle(path)]
    kernels = {}
    for target in reversed(preferred):
        for r in records:
            if r["target"] == target:
                kernels[r["name"]] = Kernel(driver, r)
    jit = Kernel(driver, next(r for r in records if r["target"] == "sm80"
                              and r["name"] == "gm_e8_n64_k64"))

    print(f"kernels: {len(kernels)} from {', '.join(args.bundles)}")
    print("correctness (fp32 reference, bf16 output, tolerance 1e-2 of max):")
    ok = True
    small = [0, 1, 7, 10500, 0, 130, 129, 3]
    cases = [
        ("gm_e8_n64_k64", small, 37),
        ("gm_e8_n64_k64", [0] * 8, 5),          # every group empty
        ("gm_e8_n64_k64", [0] * 8, 0),          # T = 0
        ("gm_e1_n64_k64", [1000], 0),
        ("gm_e1_n64_k64", [1], 200),
        ("gm_e8_n200_k72", small, 11),          # N, K not tile multiples
        ("gm_e8_n1024_k2048", [0, 1, 7, 12001, 0, 255, 256, 3], 0),
        ("gm_e128_n64_k64", None, 3),
        ("gm_e128_n1024_k2048", None, 0),
        ("gm_e128_n2048_k512", None, 50),
        # The dgrad shapes (gmd, gmpd): of down, of gate/up.
        ("gm_e128_n512_k2048", None, 50),
        ("gm_e128_n2048_k1024", None, 0),
        ("gm_e8_n64_k64", [0, 1, 7, 10500, 0, 64, 65, 63], 9),
    ]
    # The cases run for every family of kernels: gm_* is the default
    # configuration; a bundle may add others (say alt_*, another tile).
    families = sorted({n.split("_e")[0] for n in kernels})
    for family in families:
        for name, sizes, tail in cases:
            name = family + name[len("gm"):]
            if name not in kernels:
                continue
            k = kernels[name]
            if sizes is None:
                sizes = routed_sizes(4096, 8, k.E, gen)
                sizes[3], sizes[5], sizes[9] = 0, 1, 7  # keep edge cases
            ok &= check(k, sizes, tail, gen)
    ok &= check(jit, small, 37, gen)
    if args.runtime:
        lib = load_runtime(args.runtime)
        first = {r["name"] for r in read_bundle(args.bundles[0])}
        for family in ("gm", "gmd", "gmp", "gmpd"):
            for name, sizes, tail in cases:
                name = family + name[len("gm"):]
                if name not in first:
                    continue
                rk = RuntimeKernel(lib, args.bundles[0], name)
                if sizes is None:
                    sizes = routed_sizes(4096, 8, rk.E, gen)
                ok &= check(rk, sizes, tail, gen)
        # CUDA graphs: capture once, replay with new routings, directly and
        # through the runtime.
        print("CUDA graph capture and replay (new offsets before each "
              "replay):")
        E = 128
        skewed = [0] * E
        skewed[5], skewed[77] = 30000, 1
        routings = [routed_sizes(4096, 8, E, gen), routed_sizes(4096, 8, E, gen),
                    skewed]
        for name in ("gm_e128_n1024_k2048", "gmd_e128_n512_k2048"):
            if name in kernels:
                ok &= graph_check(kernels[name], routings, gen)
            if name in first:
                ok &= graph_check(RuntimeKernel(lib, args.bundles[0], name),
                                  routings, gen)

    ok &= timing(kernels, gen, "reference MoE gate/up", 1024, 2048, True)
    ok &= timing(kernels, gen, "dgrad of down (b [E, K, N])", 512, 2048,
                 False)
    ok &= timing(kernels, gen, "dgrad of gate/up (b [E, K, N])", 2048, 1024,
                 False)
    print("ALL OK" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
