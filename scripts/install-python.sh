#!/usr/bin/env bash
# Builds the tessel Python package (the runtime and its pybind11 module: no
# LLVM/MLIR needed, so it works on the GPU machines) and installs it, without
# pip, into the interpreter's site-packages.
#
#   bash scripts/install-python.sh [--prefix DIR] [--with-compiler]
#
#   --prefix DIR     install into DIR/tessel instead, and print the PYTHONPATH
#                    line that makes it importable
#   --with-compiler  also build tessel-aot (needs LLVM/MLIR 22, as for
#                    scripts/build.sh) and put it in the package, for
#                    tessel.compile
#
# PYTHON=/path/to/python chooses the interpreter; by default the first of
# `python3` on PATH and /usr/bin/python3 that has torch, else `python3`.
# It needs the interpreter's headers and pybind11: its own `pybind11` module
# (pip) or the system's (Debian: python3-dev pybind11-dev). The build folder
# is build-python/ (TESSEL_PYTHON_BUILD_DIR changes it).
set -euo pipefail
cd "$(dirname "$0")/.."

prefix=""
with_compiler=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    --with-compiler) with_compiler=1; shift ;;
    *) echo "usage: $0 [--prefix DIR] [--with-compiler]" >&2; exit 2 ;;
  esac
done

python=${PYTHON:-}
if [ -z "$python" ]; then
  for candidate in python3 /usr/bin/python3; do
    if command -v "$candidate" >/dev/null &&
       "$candidate" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)' 2>/dev/null; then
      python=$(command -v "$candidate")
      break
    fi
  done
  python=${python:-$(command -v python3)}
fi
echo "Python: $python ($("$python" --version 2>&1))"

build=${TESSEL_PYTHON_BUILD_DIR:-build-python}
if [ "$with_compiler" = 1 ]; then
  # The full project, configured as for scripts/build.sh.
  scripts/install-deps.sh
  TESSEL_BUILD_DIR=$build PYTHON=$python scripts/configure.sh \
    -DTESSEL_REQUIRE_PYTHON=ON
  cmake --build "$build" --target tessel-python tessel-aot
else
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DTESSEL_BUILD_COMPILER=OFF -DTESSEL_RUNTIME_TESTS=OFF \
    -DTESSEL_BUILD_PYTHON=ON -DTESSEL_REQUIRE_PYTHON=ON \
    -DPython_EXECUTABLE="$python" >/dev/null
  cmake --build "$build" --target tessel-python
fi

dest=${prefix:-$("$python" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')}
mkdir -p "$dest"
rm -rf "$dest/tessel"
# -L: the build tree's bin/tessel-aot is a link to the compiler.
cp -rL "$build/python/tessel" "$dest/tessel"
echo "Installed the tessel package in $dest/tessel"

check='import tessel; print("tessel", tessel.__file__, "host target:", tessel.Device("host").target)'
if [ -n "$prefix" ]; then
  PYTHONPATH="$dest${PYTHONPATH:+:$PYTHONPATH}" "$python" -c "$check"
  echo "To use it: export PYTHONPATH=$dest\${PYTHONPATH:+:\$PYTHONPATH}"
else
  (cd / && "$python" -c "$check")
fi
