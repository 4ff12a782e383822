#!/usr/bin/env bash
# Every attention kernel check and benchmark on an NVIDIA GPU, in one call:
# builds the runtime (bench/gpu-check.sh, unless already built), then runs
# the checks of the LSE merges and reshape_and_cache, paged decode (direct
# and split-KV), prefill, extend (prefill + context chunks + merge) and MLA
# decode, and the benchmarks beside SDPA and the copy ceiling.
#
# The bundles are compiled on the development machine (no LLVM here), with
# the sm80 templates' baselines that are timed beside the sm90a kernels:
#
#   bash scripts/prepare-gpu-bundles.sh .carry   # every bench/ bundle
#
#   bash bench/attention_gpu_check.sh .carry     # from the repository root
#
# Prints each script's failures and tables, then one summary line per
# script; exits 1 if any check failed.
set -uo pipefail
cd "$(dirname "$0")"
bundles=${1:-../.carry}
runtime=${TESSEL_GPU_BUILD_DIR:-/tmp/tessel-gpu-check}/libtessel_runtime.so
if [ ! -f "$runtime" ]; then
  bash gpu-check.sh >/dev/null 2>&1 || { echo "runtime build failed"; exit 1; }
fi
status=0
summary=()
# Runs one script; its `ok` lines are counted, everything else shown.
check() {
  local name=$1
  shift
  echo "== $name"
  local log
  log=$(python3 "$@" 2>&1)
  local rc=$?
  grep -v '^  ok ' <<<"$log"
  summary+=("$(printf '%-14s %4d ok lines, %s' "$name" \
    "$(grep -c '^  ok ' <<<"$log")" \
    "$([ $rc -eq 0 ] && echo 'ALL OK' || echo "FAILED (rc $rc)")")")
  [ $rc -eq 0 ] || status=1
}
check merge-cache attention_check.py "$bundles/attention.tsb" --runtime "$runtime"
check decode paged_decode_check.py "$bundles/paged_decode.tsb" --runtime "$runtime"
# --baseline <name>_sm80.tsb where that bundle exists.
baseline() {
  [ -f "$bundles/$1_sm80.tsb" ] && echo "--baseline $bundles/$1_sm80.tsb"
}
check prefill prefill_check.py "$bundles/prefill.tsb" --runtime "$runtime" \
  --bench $(baseline prefill)
check extend extend_check.py "$bundles/extend.tsb" --runtime "$runtime"
check mla-decode mla_decode_check.py "$bundles/mla_decode.tsb" --runtime "$runtime" \
  --bench $(baseline mla_decode)
check merge-bench attention_bench.py "$bundles/attention.tsb"
check decode-bench paged_decode_bench.py "$bundles/paged_decode.tsb" \
  "$bundles/attention.tsb" --runtime "$runtime"
echo "== summary"
printf '%s\n' "${summary[@]}"
exit $status
