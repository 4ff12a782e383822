#!/usr/bin/env bash
# Builds everything and runs every test (lit, C++ runtime and numerical
# tests, the bundle fuzzer) through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/configure.sh
build=${TESSEL_BUILD_DIR:-build}
ninja -C "$build"
ctest --test-dir "$build" --output-on-failure -j2
