#!/usr/bin/env bash
# Builds the runtime alone (no LLVM/MLIR needed) and runs its tests on a GPU
# machine, where the CUDA smoke test (CudaSmoke.*) runs real kernels instead
# of skipping.
#
#   bash bench/gpu-check.sh          # from the repository root
#
# Needs CMake >= 3.20, a C++17 compiler and GoogleTest (the GPU machine's
# image has all three). Logs go to $OUT when it is set, else to the build
# directory ($TESSEL_GPU_BUILD_DIR, default /tmp/tessel-gpu-check). Exits 1
# if the build or a test fails, 2 if the smoke test did not run (no GPU).
# The kernels themselves are checked by the GPU test suite
# (python-bindings/tests/gpu) and timed by bench/peer_table.py, through the
# tessel package (scripts/install-python.sh builds it the same way); the
# README gives the commands.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${TESSEL_GPU_BUILD_DIR:-/tmp/tessel-gpu-check}
logs=${OUT:-$build/logs}
mkdir -p "$logs"

# Runs a step with its output in $logs/<name>.log; on failure shows its end.
step() {
  local name=$1
  shift
  echo "== $name"
  if ! "$@" >"$logs/$name.log" 2>&1; then
    tail -n 40 "$logs/$name.log"
    echo "gpu-check: $name failed (log: $logs/$name.log)"
    exit 1
  fi
}

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

step configure cmake -S runtime -B "$build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo
step build cmake --build "$build" -j "$(nproc)"
if [ ! -x "$build/test/tessel-runtime-tests" ]; then
  echo "gpu-check: no test binary (no GoogleTest?); see $logs/configure.log"
  exit 1
fi

echo "== test"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" \
  >"$logs/ctest.log" 2>&1
ctest_rc=$?
"$build/test/tessel-runtime-tests" --gtest_filter='CudaSmoke.*' \
  >"$logs/cuda_smoke.log" 2>&1
smoke_rc=$?

echo "== summary"
if command -v nvidia-smi >/dev/null; then
  echo "gpu:      $(nvidia-smi --query-gpu=name,compute_cap,driver_version \
    --format=csv,noheader 2>/dev/null | head -n 1)"
fi
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
echo "compiler: $("${cxx:-c++}" --version | head -n 1)"
echo "cmake:    $(cmake --version | head -n 1)"
echo "ctest:    $(grep -E 'tests (passed|failed)' "$logs/ctest.log")"
grep -E '^\s+[0-9]+ - .*\((Failed|Skipped|Not Run|Timeout)\)' \
  "$logs/ctest.log" | sed 's/^\s*/          /'
grep -E '^\[ +(OK|FAILED|SKIPPED) +\] CudaSmoke\.[A-Za-z0-9]+ \(|\[ INFO' \
  "$logs/cuda_smoke.log" | sed 's/^/smoke:    /'
echo "logs:     $logs"

if [ "$ctest_rc" -ne 0 ] || [ "$smoke_rc" -ne 0 ]; then
  echo "gpu-check: FAILED"
  exit 1
fi
if grep -q 'SKIPPED' "$logs/cuda_smoke.log"; then
  grep -m 1 -A 1 'Skipped' "$logs/cuda_smoke.log"
  echo "gpu-check: the CUDA smoke test did not run"
  exit 2
fi
echo "gpu-check: OK"
