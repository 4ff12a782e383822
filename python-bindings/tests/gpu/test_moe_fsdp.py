"""tessel.torch.patch_deepseek_moe under FSDP: the toy DeepSeek-style
model patched (its experts read in place, or stacked) and trained 5 AdamW
steps under FullyShardedDataParallel (FULL_SHARD, use_orig_params=True,
one unit per transformer block) against the same model patched on one GPU
(fsdp_worker.py, under torchrun with one process per rank). Every step's
loss within 4e-3 relative of the one-GPU run's: about one bf16 rounding,
what reducing bf16 gradients in another order may change.

Two ranks shard the weights for real and need two CUDA GPUs (skipped,
saying how many there are, on fewer). One rank runs FSDP's machinery (the
flat parameter, the experts' weights as views of it, gathered for the
forward and again for the backward) without sharding, on one GPU. Skipped
while preparing (its kernels are test_moe.py::test_patched_training's,
the same toy model). (conftest.py: how to run it.)
"""

import json
import os
import subprocess
import sys

import pytest
import torch

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "fsdp_worker.py")
LOSS_REL = 4e-3


@pytest.mark.parametrize("stack", [False, True])
@pytest.mark.parametrize("ranks", [1, 2])
def test_fsdp_matches_one_gpu(ranks, stack, on_gpu, tmp_path):
    if not on_gpu:
        pytest.skip("FSDP runs on CUDA GPUs; its kernels are prepared by "
                    "test_moe.py::test_patched_training")
    gpus = torch.cuda.device_count()
    if gpus < ranks:
        pytest.skip(f"FSDP over {ranks} ranks needs {ranks} CUDA GPUs, "
                    f"{gpus} visible: run the suite on a machine with "
                    f"{ranks}")
    out = tmp_path / "losses.json"
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone",
         f"--nproc_per_node={ranks}", WORKER, "--out", str(out)] +
        (["--stack-experts"] if stack else []),
        capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, \
        f"torchrun failed ({result.returncode}):\n{result.stdout[-3000:]}" \
        f"\n{result.stderr[-3000:]}"
    losses = json.loads(out.read_text())
    assert len(losses["fsdp"]) == len(losses["one_gpu"]) == 5
    for step, (one, sharded) in enumerate(zip(losses["one_gpu"],
                                              losses["fsdp"]), 1):
        diff = abs(sharded - one) / abs(one)
        assert diff <= LOSS_REL, f"step {step}: FSDP loss {sharded:.6f}, " \
            f"one GPU {one:.6f} ({diff:.2e} apart, at most {LOSS_REL})"
