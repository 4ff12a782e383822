"""Fixtures of the tessel package tests.

ctest (python-tests) sets the environment: PYTHONPATH to the build tree's
package, TESSEL_TEST_BUNDLE to kernels.mlir compiled for the host,
TESSEL_TEST_DISPATCH_BUNDLE to examples/attention_dispatch.mlir compiled for
the host,
TESSEL_TEST_FAKE_CUDA to the runtime tests' fake libcuda.
"""

import os
import zlib

import numpy as np
import pytest

import tessel


def _env(name):
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run these tests through ctest "
                    f"(ctest -R python-tests), which sets it")
    return value


@pytest.fixture(scope="session")
def bundle_path():
    return _env("TESSEL_TEST_BUNDLE")


@pytest.fixture(scope="session")
def host():
    return tessel.Device("host")


@pytest.fixture(scope="session")
def bundle(host, bundle_path):
    return tessel.Bundle(host, bundle_path)


@pytest.fixture(scope="session")
def dispatch_bundle(host):
    return tessel.Bundle(host, _env("TESSEL_TEST_DISPATCH_BUNDLE"))


@pytest.fixture
def rng(request):
    # Fresh data per test, reproducible from the test's name.
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture
def fake_cuda(monkeypatch):
    """The fake CUDA driver: Device('cuda') opens it."""
    path = _env("TESSEL_TEST_FAKE_CUDA")
    monkeypatch.setenv("TESSEL_CUDA_LIBRARY", path)
    return path
