"""The per-stage device-time profile of one MoE layer method (used by
moe_layer_bench.py): where a fwd+bwd step spends its GPU time, so each
change to the layer is predicted and then measured.

The step is run under torch.profiler (CUDA activity: every kernel, whoever
launched it, with its device time). Kernels are sorted into stages by name:
Tessel's are named `<shape>_<role>` by the spec (moe_layer_kernels.mlir),
so the role is the stage; torch's are classed by what their CUDA names say
(grouped GEMM, sort/scan, gather/scatter, reduction, elementwise). The
forward is profiled alone too: a stage's backward time is its fwd+bwd time
less its forward time. "idle" is the step's wall time (CUDA events) less
the summed kernel time: launch gaps and host work the GPU waits for.
"""
import collections
import re
from typing import Callable, Dict, List, Tuple

import torch
from torch.profiler import ProfilerActivity, profile

# Tessel kernel roles (specs.moe_kernels), longest first so that
# "gate_up_dgrad" is not taken for "gate_up".
_ROLES = sorted(("histogram", "sort", "permute", "unpermute",
                 "unpermute_parts", "gate_up",
                 "gate_up_dgrad", "gate_up_wgrad", "down", "down_dgrad",
                 "down_wgrad", "gate_or_up", "gate_or_up_dgrad",
                 "gate_or_up_wgrad", "gate_or_up_ptrs",
                 "gate_or_up_dgrad_ptrs", "down_ptrs", "down_dgrad_ptrs",
                 "swiglu_backward", "swiglu_parts",
                 "swiglu_parts_backward"),
                key=len, reverse=True)
_TESSEL = re.compile(r"^mlp_[a-z0-9]+_(%s)$" % "|".join(_ROLES))

# torch kernels by their CUDA names, first match wins.
_TORCH_CLASSES: List[Tuple[str, re.Pattern]] = [
    ("torch grouped GEMM", re.compile(r"gemm|cutlass|xmma|grouped", re.I)),
    ("torch sort/scan/histogram",
     re.compile(r"sort|radix|scan|cumsum|histogram", re.I)),
    ("torch gather/scatter", re.compile(r"index|gather|scatter", re.I)),
    ("torch reduction", re.compile(r"reduce", re.I)),
    ("torch elementwise",
     re.compile(r"elementwise|silu|mul|fill|copy|where|cast", re.I)),
]


def stage_of(kernel: str) -> str:
    """The stage a CUDA kernel name belongs to."""
    m = _TESSEL.match(kernel)
    if m:
        return "tessel " + m.group(1)
    for stage, pattern in _TORCH_CLASSES:
        if pattern.search(kernel):
            return stage
    return "other: " + kernel[:40]


def device_ms_by_stage(fn: Callable[[], object], steps: int) -> Dict[str,
                                                                     float]:
    """Mean device milliseconds per call of `fn`, by stage."""
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    totals: Dict[str, float] = collections.defaultdict(float)
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            totals[stage_of(event.name)] += event.device_time_total / 1e3
    return {stage: ms / steps for stage, ms in totals.items()}


def print_profile(title: str, method: str, forward: Callable[[], object],
                  step: Callable[[], object], step_ms: float,
                  steps: int = 5):
    """One table: each stage's forward and backward device ms, then the
    kernel total and the idle remainder of the step's `step_ms`."""
    fwd = device_ms_by_stage(forward, steps)
    both = device_ms_by_stage(step, steps)
    print(f"\nprofile: {title}, {method} (device ms per fwd+bwd step, "
          f"mean of {steps})")
    print(f"  {'stage':34s} {'fwd':>7s} {'bwd':>7s} {'total':>7s}")
    for stage in sorted(both, key=both.get, reverse=True):
        f = min(fwd.get(stage, 0.0), both[stage])
        print(f"  {stage:34s} {f:7.3f} {both[stage] - f:7.3f} "
              f"{both[stage]:7.3f}")
    kernels = sum(both.values())
    print(f"  {'all kernels':34s} {sum(fwd.values()):7.3f} "
          f"{kernels - sum(fwd.values()):7.3f} {kernels:7.3f}")
    print(f"  {'idle (step time - kernels)':34s} {'':7s} {'':7s} "
          f"{step_ms - kernels:7.3f}")
