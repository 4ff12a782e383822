#!/usr/bin/env bash
# The attention dispatcher on an NVIDIA GPU, in one call: builds the runtime
# and runs its tests (bench/gpu-check.sh), then the dispatcher's end-to-end
# check (bench/dispatch_check.py: random mixed batches in every routing mode
# against torch, and decodes replayed from a CUDA graph) and the
# continuous-batching benchmark (bench/continuous_batching.py: tokens/s per
# routing mode for three mixes).
#
# The bundle is compiled on the development machine (no LLVM here):
#
#   python3 bench/gen_dispatch_kernels.py     # after changing the generator
#   tessel-aot bench/dispatch_kernels.mlir --targets=sm80,sm90 \
#       -o .carry/dispatch.tsb --quiet
#
#   bash bench/dispatch_gpu_check.sh [BUNDLE]  # default .carry/dispatch.tsb
#
# Logs go to $OUT when it is set, else /tmp/tessel-dispatch-check. Exits 1
# if the build, a runtime test, the check or the benchmark failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
bundle=${1:-.carry/dispatch.tsb}
runtime=${TESSEL_GPU_BUILD_DIR:-/tmp/tessel-gpu-check}/libtessel_runtime.so
logs=${OUT:-/tmp/tessel-dispatch-check}
mkdir -p "$logs"
status=0

echo "== runtime build and tests (bench/gpu-check.sh)"
OUT=$logs bash bench/gpu-check.sh >"$logs/gpu-check.log" 2>&1
gpu_check=$?
tail -n 12 "$logs/gpu-check.log"
[ $gpu_check -eq 0 ] || status=1
if [ ! -f "$runtime" ]; then
  echo "dispatch-gpu-check: no runtime at $runtime"
  exit 1
fi

# Runs one script with its output shown and kept in $logs/<name>.log.
run() {
  local name=$1
  shift
  echo "== $name"
  python3 "$@" 2>&1 | tee "$logs/$name.log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || status=1
  results+=("$(printf '%-20s %s' "$name" \
    "$([ "$rc" -eq 0 ] && echo PASS || echo "FAIL (rc $rc)")")")
}
results=("$(printf '%-20s %s' gpu-check \
  "$([ $gpu_check -eq 0 ] && echo PASS || echo "FAIL (rc $gpu_check)")")")
run dispatch_check bench/dispatch_check.py "$bundle" --device cuda \
  --lib "$runtime"
run continuous_batching bench/continuous_batching.py "$bundle" \
  --device cuda --lib "$runtime"

echo "== summary"
command -v nvidia-smi >/dev/null && echo "gpu: $(nvidia-smi \
  --query-gpu=name,driver_version --format=csv,noheader | head -n 1)"
printf '%s\n' "${results[@]}"
sed -n '/^max error per mode/,$p' "$logs/dispatch_check.log"
grep '^|' "$logs/continuous_batching.log"
echo "logs: $logs"
exit $status
