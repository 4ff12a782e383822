#!/usr/bin/env bash
# Compiles every kernel spec of bench/ into the bundles the GPU scripts
# read, on the development machine (the GPU machine has no LLVM/MLIR):
#
#   bash scripts/prepare-gpu-bundles.sh [OUT_DIR]   # default .carry
#
# OUT_DIR/<name>.tsb for bench/<name>_kernels.mlir with sm80, sm90 and
# sm_90a code, and OUT_DIR/<name>_sm80.tsb without sm_90a for the specs
# whose checks compare the Hopper kernels with the sm80 template
# (--baseline). Needs a build (build/bin/tessel-aot, or $TESSEL_AOT) and,
# for cubins, ptxas (/usr/local/cuda/bin is added to PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.carry}
aot=${TESSEL_AOT:-build/bin/tessel-aot}
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$out"
for spec in bench/*_kernels.mlir; do
  name=$(basename "$spec" _kernels.mlir)
  "$aot" "$spec" --targets=sm80,sm90,sm90a -o "$out/$name.tsb" --quiet
done
# sm80-template baselines on the same GPU.
for name in prefill mla_decode dispatch; do
  "$aot" "bench/${name}_kernels.mlir" --targets=sm80,sm90 \
    -o "$out/${name}_sm80.tsb" --quiet
done
