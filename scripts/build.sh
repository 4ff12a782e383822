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
# host, sm80 (PTX) and gfx942/gfx950 (hsaco) need nothing beyond LLVM; sm90
# and sm90a (Hopper's wgmma/TMA main loops) cubins need ptxas (CUDA). The default set's composite extend kernels are
# listed as skipped for the GPU targets: there, extend is composed from the
# <model>_extend_new / _extend_context / _lse_merge_n kernels.
targets=host,sm80,gfx942,gfx950
if command -v ptxas >/dev/null || [ -x /usr/local/cuda/bin/ptxas ]; then
  targets=$targets,sm90,sm90a
else
  echo "note: ptxas not found (CUDA toolkit): no sm90/sm90a cubins in this bundle"
fi
"$build"/bin/tessel-aot --targets=$targets -o "$build"/tessel-default.tsb
echo "bundle: $(pwd)/$build/tessel-default.tsb"
