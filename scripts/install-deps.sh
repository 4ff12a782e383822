#!/usr/bin/env bash
# Installs the Debian 12 packages Tessel builds and tests with, if missing.
# Runs as root (CI and fresh machines); a no-op when everything is present.
set -euo pipefail

packages=(
  cmake ninja-build ccache
  clang-22 lld-22 libclang-rt-22-dev        # compiler, linker, libFuzzer
  llvm-22-dev llvm-22-tools                 # LLVM 22, FileCheck, lit
  libmlir-22-dev mlir-22-tools              # MLIR 22, mlir-tblgen
  libgtest-dev                              # C++ tests
  libamdhip64-5                             # HIP 5.2: HIP backend test, no GPU
  python3
  python3-dev pybind11-dev                  # the Python module
  python3-numpy python3-pytest python3-torch  # its tests (CPU torch)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "Installing: ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
