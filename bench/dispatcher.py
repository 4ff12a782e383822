"""The attention dispatcher of runtime/include/tessel/runtime.h from Python,
through ctypes over paged_decode_check.Runtime (the runtime opened on the
host or a CUDA device), for bench/dispatch_check.py and
bench/continuous_batching.py.

    rt = Runtime(lib_path, "cuda")
    att = Dispatcher(rt, rt.bundle(path), routing="triple", num_q_heads=32,
                     num_kv_heads=8, head_dim=128, block_size=16)
    order = att.order(query_lens, context_lens)   # apply it to the batch
    plan = att.plan(max_requests=64)
    info = plan.build(query_lens, context_lens, max_blocks)
    plan.run(dict(q=q, k=k, ...), workspace)      # torch tensors
"""
import argparse
import ctypes
import os

import torch

from grouped_matmul_check import TesselTensor
from paged_decode_check import Runtime

ROUTINGS = {"auto": 0, "triple": 1, "unified": 2, "two_path": 3}
PHASES = ("decode", "extend", "prefill")
DTYPES = {torch.float16: 2, torch.bfloat16: 3}
LAYOUTS = {"nhd": 0, "shuffled": 1}
# tessel_attention_buffers, in the struct's order.
BUFFERS = ("q", "k", "v", "k_cache", "v_cache", "block_table", "seq_lens",
           "slot_mapping", "out", "q_latent", "latent_cache",
           "latent_block_table", "out_latent")

i32, i64, size_t = ctypes.c_int32, ctypes.c_int64, ctypes.c_size_t
ptr = ctypes.c_void_p
i32p = ctypes.POINTER(i32)


class Config(ctypes.Structure):
    """tessel_attention_config."""
    _fields_ = [("struct_size", ctypes.c_uint32), ("kind", i32),
                ("dtype", i32), ("num_q_heads", i32), ("num_kv_heads", i32),
                ("head_dim", i32), ("v_head_dim", i32), ("block_size", i32),
                ("kv_layout", i32), ("latent_dim", i32), ("rope_dim", i32),
                ("latent_block_size", i32), ("routing", i32),
                ("decode_threshold", i32), ("context_chunk_tokens", i64),
                ("max_kv_splits", i32), ("compute_units", i32),
                ("softmax_scale", ctypes.c_float)]


class PlanInfo(ctypes.Structure):
    """tessel_attention_plan_info."""
    _fields_ = [("num_decodes", size_t), ("num_extends", size_t),
                ("num_prefills", size_t), ("decode_tokens", i64),
                ("extend_tokens", i64), ("prefill_tokens", i64),
                ("kv_splits", i32), ("context_chunks", i32),
                ("context_chunks_parallel", i32),
                ("workspace_bytes", size_t)]

    def __repr__(self):
        return ", ".join(f"{n}={getattr(self, n)}" for n, _ in self._fields_)


class Buffers(ctypes.Structure):
    """tessel_attention_buffers."""
    _fields_ = [(n, TesselTensor) for n in BUFFERS]


def declare(lib):
    """The signatures of the dispatcher's entry points."""
    sigs = {
        "tessel_attention_config_init": (None, [ptr]),
        "tessel_attention_create": (ptr, [ptr, ptr, ptr]),
        "tessel_attention_release": (None, [ptr]),
        "tessel_attention_routing": (ctypes.c_int, [ptr]),
        "tessel_routing_name": (ctypes.c_char_p, [ctypes.c_int]),
        "tessel_attention_classify": (ctypes.c_int, [ptr, i32, i32]),
        "tessel_attention_order": (ptr, [ptr, i32p, i32p, size_t, i32p]),
        "tessel_permute_rows": (None, [i32p, size_t, ptr, size_t, ptr]),
        "tessel_attention_plan_create": (ptr, [ptr, size_t, ptr]),
        "tessel_attention_plan_release": (None, [ptr]),
        "tessel_attention_plan_build": (ptr, [ptr, i32p, i32p, size_t, i32]),
        "tessel_attention_plan_get_info": (None, [ptr, ptr]),
        "tessel_attention_plan_chunk": (ptr, [ptr, size_t, ptr, ptr]),
        "tessel_attention_run": (ptr, [ptr, ptr, ptr, size_t, ptr]),
        "tessel_attention_write_cache": (ptr, [ptr] * 7),
        "tessel_bundle_kernel_count": (size_t, [ptr]),
        "tessel_bundle_kernel_at": (ptr, [ptr, size_t]),
        "tessel_kernel_op": (ctypes.c_char_p, [ptr]),
        "tessel_kernel_dtype": (ctypes.c_int, [ptr]),
        "tessel_kernel_param": (ctypes.c_int, [ptr, ctypes.c_char_p,
                                               ctypes.POINTER(i64)]),
    }
    for name, (restype, argtypes) in sigs.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = restype, argtypes


def configs(rt, bundle):
    """The MHA configurations a bundle has decode kernels for, as keyword
    arguments of Dispatcher: dtype, layout and the head geometry."""
    declare(rt.lib)
    lib, found = rt.lib, []
    for i in range(lib.tessel_bundle_kernel_count(bundle)):
        kernel = lib.tessel_bundle_kernel_at(bundle, i)
        if lib.tessel_kernel_op(kernel) != b"tessel.decode_attention":
            continue
        params = {}
        for key in ("num_q_heads", "num_kv_heads", "head_dim", "block_size",
                    "layout"):
            value = i64()
            if lib.tessel_kernel_param(kernel, key.encode(),
                                       ctypes.byref(value)) == 0:
                params[key] = value.value
        dtype = {v: k for k, v in DTYPES.items()}.get(
            lib.tessel_kernel_dtype(kernel))
        layout = {v: k for k, v in LAYOUTS.items()}.get(params.pop("layout"))
        config = dict(dtype=dtype, layout=layout, **params)
        if dtype and layout and config not in found:
            found.append(config)
    return found


def int32s(values):
    """A ctypes int32 array of a Python sequence."""
    return (i32 * len(values))(*values)


def permute_rows(rt, order, rows):
    """tessel_permute_rows over a host torch tensor: row i of the result is
    row order[i] of `rows`."""
    rows = rows.contiguous()
    out = torch.empty_like(rows)
    row_bytes = rows[0].numel() * rows.element_size() if len(rows) else 0
    rt.lib.tessel_permute_rows(int32s(order), len(order), rows.data_ptr(),
                               row_bytes, out.data_ptr())
    return out


class Dispatcher:
    """A tessel_attention of one configuration: config fields by keyword,
    routing by name ("auto" follows TESSEL_ATTENTION)."""

    def __init__(self, rt, bundle, routing="auto", dtype=torch.bfloat16,
                 layout="nhd", **fields):
        self.rt = rt
        declare(rt.lib)
        config = Config()
        rt.lib.tessel_attention_config_init(ctypes.byref(config))
        config.dtype = DTYPES[dtype]
        config.kv_layout = LAYOUTS[layout]
        config.routing = ROUTINGS[routing]
        for name, value in fields.items():
            setattr(config, name, value)
        self.config = config
        self.handle = ptr()
        rt.check(rt.lib.tessel_attention_create(
            bundle, ctypes.byref(config), ctypes.byref(self.handle)))

    def __del__(self):
        if getattr(self, "handle", None):
            self.rt.lib.tessel_attention_release(self.handle)

    @property
    def routing(self):
        """The routing mode in use, by name (never "auto")."""
        lib = self.rt.lib
        return lib.tessel_routing_name(
            lib.tessel_attention_routing(self.handle)).decode()

    def classify(self, query_len, context_len):
        return PHASES[self.rt.lib.tessel_attention_classify(
            self.handle, query_len, context_len)]

    def order(self, query_lens, context_lens):
        """The [decode : extend : prefill] permutation of a batch."""
        order = int32s([0] * len(query_lens))
        self.rt.check(self.rt.lib.tessel_attention_order(
            self.handle, int32s(query_lens), int32s(context_lens),
            len(query_lens), order))
        return list(order)

    def plan(self, max_requests):
        return Plan(self, max_requests)

    def write_cache(self, k, v, k_cache, v_cache, slot_mapping):
        """tessel_attention_write_cache on the runtime's stream."""
        args = [ctypes.byref(Runtime.tensor(t, None))
                for t in (k, v, k_cache, v_cache, slot_mapping)]
        self.rt.check(self.rt.lib.tessel_attention_write_cache(
            self.handle, *args, self.rt.stream()))


class Plan:
    """A tessel_attention_plan; keeps its dispatcher alive."""

    def __init__(self, dispatcher, max_requests):
        self.dispatcher, self.rt = dispatcher, dispatcher.rt
        self.handle = ptr()
        self.rt.check(self.rt.lib.tessel_attention_plan_create(
            dispatcher.handle, max_requests, ctypes.byref(self.handle)))

    def __del__(self):
        if getattr(self, "handle", None):
            self.rt.lib.tessel_attention_plan_release(self.handle)

    def build(self, query_lens, context_lens, max_blocks):
        """Plans a batch in plan order; returns its PlanInfo."""
        self.rt.check(self.rt.lib.tessel_attention_plan_build(
            self.handle, int32s(query_lens), int32s(context_lens),
            len(query_lens), max_blocks))
        return self.info()

    def info(self):
        info = PlanInfo()
        self.rt.lib.tessel_attention_plan_get_info(self.handle,
                                                   ctypes.byref(info))
        return info

    def chunks(self):
        """The context-chunk schedule: [(start, width)] per chunk."""
        out = []
        for index in range(self.info().context_chunks):
            start, width = i64(), i64()
            self.rt.check(self.rt.lib.tessel_attention_plan_chunk(
                self.handle, index, ctypes.byref(start), ctypes.byref(width)))
            out.append((start.value, width.value))
        return out

    def run(self, tensors, workspace):
        """Launches on the runtime's stream; `tensors` maps BUFFERS names to
        torch tensors (missing: absent); `workspace` a uint8 tensor."""
        buffers = Buffers(*(Runtime.tensor(tensors.get(n), None)
                            for n in BUFFERS))
        self.rt.check(self.rt.lib.tessel_attention_run(
            self.handle, ctypes.byref(buffers), workspace.data_ptr(),
            workspace.numel(), self.rt.stream()))


def workspace(nbytes, device):
    """A workspace of at least `nbytes` (torch allocations are 64-byte
    aligned or better; the run asks 16)."""
    return torch.empty(max(nbytes, 16), dtype=torch.uint8, device=device)


def arguments(description):
    """The parser of the arguments every dispatcher script takes: the
    bundle, --device and --lib (default: this checkout's build folder)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    lib = os.path.join(root, os.environ.get("TESSEL_BUILD_DIR", "build"),
                       "runtime", "libtessel_runtime.so")
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("bundle")
    parser.add_argument("--device", choices=("cuda", "host"), default="cuda")
    parser.add_argument("--lib", default=lib,
                        help="libtessel_runtime.so (default: %(default)s)")
    return parser


def open_bundle(args):
    """(runtime, bundle, torch device) of the parsed arguments."""
    rt = Runtime(args.lib, args.device)
    return rt, rt.bundle(args.bundle), "cuda" if args.device == "cuda" \
        else "cpu"
