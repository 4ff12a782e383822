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
# Only the host target exists so far; sm80, gfx942 and gfx950 join this list
# as their code generation lands.
"$build"/bin/tessel-aot --targets=host -o "$build"/tessel-default.tsb
echo "bundle: $(pwd)/$build/tessel-default.tsb"
