#!/usr/bin/env bash
# The MoE layer's GPU checks and benchmark in one command, on a machine
# with NVIDIA GPUs, torch and no LLVM: installs the tessel package, then
# runs bench/moe_layer_check.py (fused layer vs the per-expert loop, a
# patched toy model's training), bench/moe_layer_bench.py (loop vs
# torch._grouped_mm vs Tessel) and, when two GPUs are visible,
# bench/moe_fsdp_check.py under torchrun (FSDP vs one GPU).
#
# The bundle is compiled on the development machine (the spec is written by
# bench/gen_moe_layer_kernels.py):
#
#   PATH=/usr/local/cuda/bin:$PATH build/bin/tessel-aot \
#       bench/moe_layer_kernels.mlir --targets=sm80,sm90 \
#       -o .carry/moe_layer.tsb --quiet
#
#   bash bench/moe_gpu_check.sh [BUNDLE]     # default .carry/moe_layer.tsb
#
# Each script's output is shown as it runs; a summary line per script at
# the end. Exits 1 if any script failed. TESSEL_PY_PREFIX (default
# /tmp/tessel-py) is where the package is installed.
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=$(realpath "${1:-.carry/moe_layer.tsb}")
prefix=${TESSEL_PY_PREFIX:-/tmp/tessel-py}
if [ ! -f "$bundle" ]; then
  echo "moe_gpu_check: no bundle at $bundle"
  exit 1
fi

echo "== install (scripts/install-python.sh --prefix $prefix)"
if ! log=$(bash scripts/install-python.sh --prefix "$prefix" 2>&1); then
  tail -n 40 <<<"$log"
  echo "moe_gpu_check: installing the tessel package failed"
  exit 1
fi
export PYTHONPATH=$prefix${PYTHONPATH:+:$PYTHONPATH}

status=0
summary=()
# Runs one script, showing its output; records its outcome.
run() {
  local name=$1
  shift
  echo "== $name"
  "$@"
  local rc=$?
  summary+=("$(printf '%-12s %s' "$name" \
    "$([ $rc -eq 0 ] && echo 'ALL PASS' || echo "FAILED (rc $rc)")")")
  [ $rc -eq 0 ] || status=1
}

run layer-check python3 bench/moe_layer_check.py "$bundle"
run layer-bench python3 bench/moe_layer_bench.py "$bundle"
gpus=$(python3 -c 'import torch; print(torch.cuda.device_count())')
if [ "$gpus" -ge 2 ]; then
  run fsdp-check torchrun --standalone --nproc_per_node=2 \
    bench/moe_fsdp_check.py "$bundle"
else
  summary+=("$(printf '%-12s %s' fsdp-check "SKIPPED ($gpus GPU visible; needs 2)")")
fi
echo "== summary"
printf '%s\n' "${summary[@]}"
exit $status
