#!/usr/bin/env bash
# The main job: install what is missing, build Tessel, and compile the
# embedded default kernel set for every target this build supports, printing
# the kernels produced and the bundle path.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/configure.sh
build=${TESSEL_BUILD_DIR:-build}
ninja -C "$build" tessel-opt tessel-aot tessel_runtime
# host and sm80 (PTX) need nothing beyond LLVM; sm90 cubins need ptxas (CUDA).
# gfx942/gfx950 join when the ROCDL lowering lands. Kernels of the default set
# without a GPU template yet are listed as skipped for the GPU targets.
targets=host,sm80
if command -v ptxas >/dev/null || [ -x /usr/local/cuda/bin/ptxas ]; then
  targets=$targets,sm90
else
  echo "note: ptxas not found (CUDA toolkit): no sm90 cubins in this bundle"
fi
"$build"/bin/tessel-aot --targets=$targets -o "$build"/tessel-default.tsb
echo "bundle: $(pwd)/$build/tessel-default.tsb"
