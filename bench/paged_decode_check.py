#!/usr/bin/env python3
"""Check Tessel's paged decode kernels on an NVIDIA GPU, through the runtime.

  tessel-aot bench/paged_decode_kernels.mlir --targets=sm80,sm90 -o dec.tsb
  python3 bench/paged_decode_check.py dec.tsb \
      --runtime /tmp/tessel-gpu-check/libtessel_runtime.so

Every kernel of the bundle (names from bench/gen_attention_kernels.py spell
heads, head dim, block size, layout, dtype, split and LSE) runs through the
runtime's C API (bundle validation, target choice, argument checks and the
launch are the runtime's) on a ragged batch of fresh random data: context
lengths 0, 1, 18, 463, 1328 and 33000 (and 131072 for a few kernels), block
tables that are random permutations of the cache's blocks with garbage
past each request's blocks, outputs poisoned with NaN. The reference is
fp32 torch over the same paged data: bf16/f16 outputs must be within 1e-2
of the largest reference magnitude, LSEs within 1e-3 (absolute, natural
log), a request with no context must give zeros and LSE -inf. Split-KV
kernels (decsplit_*) write per-split partials, which are checked merged by
the reference LSE merge and one by one for the -inf identity. Decode
kernels also run from a captured CUDA graph replayed with new lengths.
Exits 1 unless every check passed (then it prints ALL OK last).
"""
import argparse
import ctypes
import math
import re
import sys

import torch

from grouped_matmul_check import (TESSEL_DTYPE, TesselTensor, device_line,
                                  read_bundle)

NAME = re.compile(r"dec(?P<split>split)?_q(?P<hq>\d+)_kv(?P<hkv>\d+)_d(?P<d>\d+)"
                  r"_bs(?P<bs>\d+)_(?P<layout>nhd|shuf)(?P<f16>_f16)?"
                  r"(?P<lse>_lse)?$")
CONTEXTS = [0, 1, 18, 463, 1328, 33000]
LONG = 131072


class TesselError(RuntimeError):
    """A failed call of the runtime: `code` is its status code's name
    (e.g. "TESSEL_UNSUPPORTED"), the text its message."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class Runtime:
    """libtessel_runtime.so on device 0 of `backend` ("cuda" or "host");
    kernels by name."""

    def __init__(self, path, backend="cuda"):
        self.lib = lib = ctypes.CDLL(path)
        lib.tessel_status_message.restype = ctypes.c_char_p
        lib.tessel_status_message.argtypes = [ctypes.c_void_p]
        lib.tessel_kernel_target.restype = ctypes.c_char_p
        lib.tessel_kernel_target.argtypes = [ctypes.c_void_p]
        lib.tessel_status_get_code.argtypes = [ctypes.c_void_p]
        lib.tessel_status_code_name.restype = ctypes.c_char_p
        lib.tessel_status_free.argtypes = [ctypes.c_void_p]
        for f in ("tessel_device_open", "tessel_bundle_load_file",
                  "tessel_bundle_find_kernel", "tessel_kernel_launch"):
            getattr(lib, f).restype = ctypes.c_void_p
        lib.tessel_bundle_load_file.argtypes = [
            ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        lib.tessel_bundle_find_kernel.argtypes = [
            ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        lib.tessel_kernel_launch.argtypes = [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
            ctypes.c_void_p]
        self.backend = backend
        self.device = ctypes.c_void_p()
        self.check(lib.tessel_device_open(backend.encode(), 0,
                                          ctypes.byref(self.device)))

    def check(self, status):
        """Raises TesselError for a failed tessel_status (and frees it)."""
        if status:
            lib = self.lib
            code = lib.tessel_status_code_name(
                lib.tessel_status_get_code(status)).decode()
            message = lib.tessel_status_message(status).decode()
            lib.tessel_status_free(status)
            raise TesselError(code, message)

    def bundle(self, path):
        bundle = ctypes.c_void_p()
        self.check(self.lib.tessel_bundle_load_file(
            self.device, path.encode(), ctypes.byref(bundle)))
        return bundle

    def kernel(self, bundle, name):
        k = ctypes.c_void_p()
        self.check(self.lib.tessel_bundle_find_kernel(bundle, name.encode(),
                                                      ctypes.byref(k)))
        return k

    def kernels(self, paths, keep):
        """{name: kernel} of the bundles at `paths` whose names `keep`
        accepts (the first bundle holding a name wins)."""
        found = {}
        for path in paths:
            bundle = self.bundle(path)
            for r in read_bundle(path):
                if keep(r["name"]) and r["name"] not in found:
                    found[r["name"]] = self.kernel(bundle, r["name"])
        return found

    @staticmethod
    def tensor(t, keep):
        """The tessel_tensor of a dense torch tensor; NULL data for None; a
        Python float is a scalar argument (the softmax scale): rank 0, data
        pointing to an f32 that `keep` holds until the launch returns."""
        if t is None:
            return TesselTensor()
        if isinstance(t, float):
            keep.append(ctypes.c_float(t))
            return TesselTensor(ctypes.addressof(keep[-1]), 1, 0)
        assert t.is_contiguous()
        return TesselTensor(t.data_ptr(), TESSEL_DTYPE[t.dtype], t.dim(),
                            (ctypes.c_int64 * 8)(*t.shape))

    def stream(self):
        """torch's current stream on CUDA; NULL (all the host takes)."""
        if self.backend != "cuda":
            return ctypes.c_void_p()
        return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

    def launch(self, kernel, tensors):
        keep = []
        args = (TesselTensor * len(tensors))(
            *[self.tensor(t, keep) for t in tensors])
        self.check(self.lib.tessel_kernel_launch(kernel, args, len(tensors),
                                                 self.stream()))


def session(parser, seed):
    """The start of every runtime-driven GPU check: the common arguments
    (bundles, --runtime, --seed) parsed, a seeded CUDA generator, fp32
    references without TF32, the device line printed, the runtime opened.
    Returns (args, generator, runtime)."""
    parser.add_argument("bundles", nargs="+")
    parser.add_argument("--runtime", required=True)
    parser.add_argument("--seed", type=int, default=seed)
    args = parser.parse_args()
    gen = torch.Generator(device="cuda")
    gen.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = False
    print(device_line())
    return args, gen, Runtime(args.runtime)


class Case:
    """One kernel's configuration, parsed from its name."""

    def __init__(self, name):
        m = NAME.match(name)
        if not m:
            raise ValueError(f"not a decode kernel name: {name}")
        self.name = name
        self.split = bool(m["split"])
        self.hq, self.hkv = int(m["hq"]), int(m["hkv"])
        self.d, self.bs = int(m["d"]), int(m["bs"])
        self.shuffled = m["layout"] == "shuf"
        self.dtype = torch.float16 if m["f16"] else torch.bfloat16
        self.lse = bool(m["lse"]) or self.split
        self.scale = self.d ** -0.5


class Batch:
    """A paged batch: q [B, Hq, D], NHD caches, block table, lengths."""

    def __init__(self, c, lens, gen):
        self.lens = lens
        B = len(lens)
        per = [max(1, -(-n // c.bs)) for n in lens]
        self.mb = max(per)
        nb = sum(per) + 3  # spare blocks nobody owns
        dev = "cuda"
        self.q = torch.randn(B, c.hq, c.d, device=dev, generator=gen).to(c.dtype)
        self.k = torch.randn(nb, c.bs, c.hkv, c.d, device=dev,
                             generator=gen).to(c.dtype)
        self.v = torch.randn(nb, c.bs, c.hkv, c.d, device=dev,
                             generator=gen).to(c.dtype)
        perm = torch.randperm(nb, device=dev, generator=gen).to(torch.int32)
        # Past a request's blocks: garbage ids (negative, out of range).
        self.bt = torch.randint(-5, 2 * nb, (B, self.mb), device=dev,
                                generator=gen, dtype=torch.int32)
        at = 0
        for b, n in enumerate(per):
            self.bt[b, :n] = perm[at:at + n]
            at += n
        self.sl = torch.tensor(lens, dtype=torch.int32, device=dev)

    def caches(self, c):
        """The caches in the kernel's layout."""
        if not c.shuffled:
            return self.k, self.v
        nb, bs, h, d = self.k.shape
        k = self.k.view(nb, bs, h, d // 8, 8).permute(0, 2, 3, 1, 4)
        v = self.v.view(nb, bs // 8, 8, h, d).permute(0, 3, 1, 4, 2)
        return k.contiguous(), v.contiguous()

    def reference(self, c, windows=None):
        """fp32 out [B, Hq, D] and lse [Hq, B]; `windows[b]` = (start, end)
        restricts request b's keys."""
        B = len(self.lens)
        out = torch.zeros(B, c.hq, c.d, device="cuda")
        lse = torch.full((c.hq, B), -math.inf, device="cuda")
        g = c.hq // c.hkv
        for b, n in enumerate(self.lens):
            s, e = windows[b] if windows else (0, n)
            if e <= s:
                continue
            tokens = torch.arange(s, e, device="cuda")
            blocks = self.bt[b, tokens // c.bs].long()
            k = self.k[blocks, tokens % c.bs].float()  # [n, Hkv, D]
            v = self.v[blocks, tokens % c.bs].float()
            k = k.repeat_interleave(g, dim=1)
            v = v.repeat_interleave(g, dim=1)
            s_ = torch.einsum("hd,nhd->hn", self.q[b].float(), k) * c.scale
            lse[:, b] = torch.logsumexp(s_, dim=1)
            out[b] = torch.einsum("hn,nhd->hd", torch.softmax(s_, dim=1), v)
        return out, lse


def compare(c, out, lse, ref_out, ref_lse, lens):
    """(relative error of out, max |lse error|, problems)."""
    problems = []
    if torch.isnan(out).any():
        problems.append("NaN in out (unwritten or computed)")
    empty = [b for b, n in enumerate(lens) if n == 0]
    if empty and out[empty].float().abs().max().item() != 0:
        problems.append("empty request: out not zero")
    err = ((out.float() - ref_out).abs().max().item() /
           (ref_out.abs().max().item() or 1.0))
    lse_err = 0.0
    if lse is not None:
        finite = torch.isfinite(ref_lse)
        if not torch.equal(torch.isfinite(lse), finite) or (
                (~finite).any() and
                not (lse[~finite] == -math.inf).all().item()):
            problems.append("LSE: -inf where (and only where) no key")
        if finite.any():
            lse_err = (lse[finite] - ref_lse[finite]).abs().max().item()
    if err > 1e-2:
        problems.append(f"out error {err:.2e} > 1e-2")
    if lse_err > 1e-3:
        problems.append(f"LSE error {lse_err:.2e} > 1e-3")
    return err, lse_err, problems


def run_decode(rt, kernel, c, batch, splits=None):
    """Launches; returns (out [B, Hq, D], lse or None), merged for splits."""
    kc, vc = batch.caches(c)
    B = len(batch.lens)
    if c.split:
        out = torch.full((splits, B, c.hq, c.d), math.nan, device="cuda")
        lse = torch.full((splits, c.hq, B), math.nan, device="cuda")
        rt.launch(kernel, [batch.q, kc, vc, batch.bt, batch.sl, out, lse,
                           c.scale])
        return out, lse
    out = torch.full((B, c.hq, c.d), math.nan, device="cuda", dtype=c.dtype)
    lse = (torch.full((c.hq, B), math.nan, device="cuda") if c.lse else None)
    rt.launch(kernel, [batch.q, kc, vc, batch.bt, batch.sl, out] +
              ([lse] if c.lse else []) + [c.scale])
    return out, lse


def merge(parts, lses):
    """The reference N-way LSE merge (DESIGN.md) of [P, B, H, D] partials."""
    m = lses.amax(dim=0)
    m_safe = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    w = torch.exp(lses - m_safe)  # [P, H, B]; -inf -> 0
    total = w.sum(dim=0)
    o = torch.einsum("phb,pbhd->bhd", w, torch.nan_to_num(parts, nan=0.0))
    o = o / torch.where(total > 0, total, 1.0).T[:, :, None]
    return o, torch.where(total > 0, m_safe + torch.log(total), -math.inf)


def check(rt, kernel, c, lens, gen, splits=1):
    batch = Batch(c, lens, gen)
    out, lse = run_decode(rt, kernel, c, batch, splits)
    torch.cuda.synchronize()
    problems = []
    if c.split:
        per = -(-batch.mb // splits) * c.bs
        # Each partial against its own window, then their merge.
        for p in range(splits):
            windows = [(min(p * per, n), min((p + 1) * per, n))
                       for n in lens]
            ro, rl = batch.reference(c, windows)
            *_, probs = compare(c, out[p], lse[p], ro, rl,
                                [e - s for s, e in windows])
            problems += [f"split {p}: {x}" for x in probs]
        out, lse = merge(out, lse)
    ro, rl = batch.reference(c)
    err, lse_err, probs = compare(c, out, lse, ro, rl, lens)
    problems += probs
    tag = f"B={len(lens)} ctx={','.join(map(str, lens))}"
    if c.split:
        tag += f" P={splits}"
    print(f"  {'ok  ' if not problems else 'FAIL'} {c.name:36s} {tag:48s} "
          f"err {err:.1e} lse {lse_err:.1e}" +
          ("".join(f"\n       {p}" for p in problems)))
    return not problems


def graph_check(rt, kernel, c, gen):
    """Captures one launch, then replays it with new q, lengths and block
    tables written into the captured buffers."""
    lens = [1328, 18, 0, 463]
    batch = Batch(c, lens, gen)
    kc, vc = batch.caches(c)
    B = len(lens)
    out = torch.full((B, c.hq, c.d), math.nan, device="cuda", dtype=c.dtype)
    lse = torch.full((c.hq, B), math.nan, device="cuda")
    args = [batch.q, kc, vc, batch.bt, batch.sl, out] + \
        ([lse] if c.lse else []) + [c.scale]
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        rt.launch(kernel, args)  # warm up outside capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            rt.launch(kernel, args)
    ok = True
    for new_lens in ([5, 1327, 200, 0], [463, 1, 1328, 1000]):
        fresh = Batch(c, new_lens, gen)
        if fresh.mb > batch.mb or fresh.k.shape[0] > batch.k.shape[0]:
            continue
        batch.q.copy_(fresh.q)
        batch.sl.copy_(fresh.sl)
        batch.bt.zero_()
        batch.bt[:, :fresh.mb].copy_(fresh.bt)
        nb = fresh.k.shape[0]
        batch.k[:nb].copy_(fresh.k)
        batch.v[:nb].copy_(fresh.v)
        fk, fv = batch.caches(c)
        kc.copy_(fk)
        vc.copy_(fv)
        batch.lens = new_lens
        out.fill_(math.nan)
        graph.replay()
        torch.cuda.synchronize()
        ro, rl = batch.reference(c)
        err, lse_err, probs = compare(c, out, lse if c.lse else None, ro, rl,
                                      new_lens)
        print(f"  {'ok  ' if not probs else 'FAIL'} {c.name:36s} graph replay "
              f"ctx={','.join(map(str, new_lens))} err {err:.1e}" +
              "".join(f"\n       {p}" for p in probs))
        ok &= not probs
    return ok


def main():
    args, gen, rt = session(
        argparse.ArgumentParser(description=__doc__.splitlines()[0]), 1234)
    ok = True
    for name, kernel in sorted(rt.kernels(args.bundles, NAME.match).items()):
        c = Case(name)
        try:
            ok &= check(rt, kernel, c, CONTEXTS, gen)
            ok &= check(rt, kernel, c, [7, 0, 1], gen)
            if c.split:
                for p in (2, 5, 33):
                    ok &= check(rt, kernel, c, CONTEXTS, gen, splits=p)
                ok &= check(rt, kernel, c, [LONG, 3, LONG - 1, 0], gen,
                            splits=64)
            elif c.hq == 32 and c.d == 128:
                ok &= check(rt, kernel, c, [LONG, 5], gen)
            if not c.split:
                ok &= graph_check(rt, kernel, c, gen)
        except Exception as e:  # report, keep going
            print(f"  FAIL {name}: {type(e).__name__}: {e}")
            ok = False
    print("ALL OK" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
