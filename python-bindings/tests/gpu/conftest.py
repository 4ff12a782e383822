"""The GPU suite: tessel's kernels through the tessel package on an NVIDIA
GPU, on fresh random data, outputs checked against float64 (or float32)
references computed with torch on the same device.

Kernels come from a kernel cache (tessel.KernelCache), so the GPU machine
needs no compiler. On the development machine, one command compiles every
kernel the suite needs for sm_90a into DIR, running each test on the host
backend on the way (the same references: a check of the tests and of the
host kernels):

    TESSEL_GPU_PREPARE=DIR PYTHONPATH=build/python \\
        python3 -m pytest python-bindings/tests/gpu -q

On the GPU machine, with the tessel package installed
(scripts/install-python.sh) and DIR copied there:

    TESSEL_CACHE_DIR=DIR python3 -m pytest python-bindings/tests/gpu -q

(With tessel-aot on the GPU machine, a missing kernel is compiled there.)
Without a CUDA GPU and without TESSEL_GPU_PREPARE, every test is skipped
with the reason "no CUDA GPU" (ctest's gpu-tests reports Skipped).
"""

import os
import zlib

import pytest
import torch

import tessel
import tessel.cache

PREPARE_DIR = os.environ.get("TESSEL_GPU_PREPARE")
# The target the cache is prepared for: the H100 / H200 kernels.
PREPARE_TARGET = os.environ.get("TESSEL_GPU_PREPARE_TARGET", "sm90a")


class _PreparingCache(tessel.KernelCache):
    """Compiles each kernel's spec for PREPARE_TARGET too, then hands out
    the host kernel, so the test runs on the host backend."""

    def kernel(self, device, name, spec):
        self.prepare(spec, PREPARE_TARGET)
        return super().kernel(device, name, spec)


def pytest_configure(config):
    if PREPARE_DIR:
        tessel.cache._default = _PreparingCache(PREPARE_DIR)


def pytest_collection_modifyitems(config, items):
    if PREPARE_DIR or torch.cuda.is_available():
        return
    skip = pytest.mark.skip(
        reason="no CUDA GPU: the GPU suite runs on an NVIDIA GPU, or on the "
        "host backend with TESSEL_GPU_PREPARE=DIR")
    for item in items:
        item.add_marker(skip)


@pytest.fixture(scope="session")
def device():
    """'cuda', or 'cpu' (the host backend) while preparing."""
    return "cpu" if PREPARE_DIR else "cuda"


@pytest.fixture(scope="session")
def on_gpu(device):
    return device == "cuda"


@pytest.fixture
def gen(device, request):
    """A generator on the device, seeded from the test's name: fresh data
    per test, reproducible."""
    return torch.Generator(device=device).manual_seed(
        zlib.crc32(request.node.nodeid.encode()))
