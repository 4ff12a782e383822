#!/usr/bin/env bash
# Compiles every kernel spec of bench/ into the bundles the benchmarks read
# (bench/peer_table.py runs them all), on the development machine (the GPU
# machine has no LLVM/MLIR):
#
#   bash scripts/prepare-gpu-bundles.sh [OUT_DIR]   # default .carry
#
# OUT_DIR/<name>.tsb for bench/<name>_kernels.mlir with sm80, sm90 and
# sm_90a code, and OUT_DIR/<name>_sm80.tsb without sm_90a for the specs
# whose benchmarks time the Hopper kernels beside the sm80 template
# (prefill_bench.py, mla_decode_bench.py; dispatch_sm80.tsb for running
# the dispatcher's benchmarks on it). TESSEL_BUNDLE_TARGETS replaces the
# targets (bench/peer_table.py --smoke compiles for `host`; there the
# baselines are copies). Needs a build (build/bin/tessel-aot, or
# $TESSEL_AOT) and, for cubins, ptxas (/usr/local/cuda/bin is added to
# PATH). The specs compile in parallel; the GPU suite's kernels are
# prepared apart (python-bindings/tests/gpu/conftest.py).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.carry}
aot=${TESSEL_AOT:-build/bin/tessel-aot}
targets=${TESSEL_BUNDLE_TARGETS:-sm80,sm90,sm90a}
baselines=(prefill mla_decode dispatch)
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$out"

pids=()
compile() {  # SPEC TARGETS OUTPUT, in the background
  "$aot" "$1" --targets="$2" -o "$3" --quiet &
  pids+=($!)
}
for spec in bench/*_kernels.mlir; do
  name=$(basename "$spec" _kernels.mlir)
  compile "$spec" "$targets" "$out/$name.tsb"
done
# The sm80-template baselines on the same GPU.
if [[ $targets == *sm90a* ]]; then
  for name in "${baselines[@]}"; do
    compile "bench/${name}_kernels.mlir" sm80,sm90 "$out/${name}_sm80.tsb"
  done
fi
failed=0
for pid in "${pids[@]}"; do
  wait "$pid" || failed=1
done
if [ $failed -ne 0 ]; then
  echo "prepare-gpu-bundles: a spec did not compile (see above)" >&2
  exit 1
fi
if [[ $targets != *sm90a* ]]; then
  for name in "${baselines[@]}"; do
    cp "$out/$name.tsb" "$out/${name}_sm80.tsb"
  done
fi
