#!/usr/bin/env bash
# Configures the build folder (default: build/) with clang-22 + lld against
# Debian's LLVM/MLIR 22, and the Python package for $PYTHON (default: Debian's
# /usr/bin/python3, which has numpy, pytest and torch). Arguments are passed
# on to cmake. Re-running it is cheap.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TESSEL_BUILD_DIR:-build}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DLLVM_USE_LINKER=lld \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
  -DTESSEL_REQUIRE_TESTS=ON -DTESSEL_RUNTIME_TESTS=ON \
  -DPython_EXECUTABLE="${PYTHON:-/usr/bin/python3}" \
  "${launcher[@]}" "$@" >/dev/null
