"""vLLM's Triton unified attention as a peer of Tessel's attention, for the
benchmarks. vLLM's kernel is not part of Tessel and vLLM is not installed on
the GPU machine (no PyPI there), so the benchmark loads a copy of its 2D
kernel from a file given on the command line, kept outside the sources
(e.g. .carry/peers/vllm_unified_attention_2d.py: vLLM's
vllm/attention/ops/triton_unified_attention.py with its vllm imports
replaced by triton's, and a function `unified_attention_2d(q, k, v, out,
cu_seqlens_q, seqused_k, block_table, softmax_scale)` that launches the 2D
kernel as vLLM's unified_attention() does for a batch with any query longer
than one token).
"""
import importlib.util

import torch


def load(path):
    """The peer's module, or a clear error naming what is missing."""
    try:
        import triton  # noqa: F401
    except ImportError as e:
        raise SystemExit(f"--vllm needs triton: {e}")
    spec = importlib.util.spec_from_file_location("vllm_unified_peer", path)
    if spec is None:
        raise SystemExit(f"--vllm: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not hasattr(module, "unified_attention_2d"):
        raise SystemExit(f"--vllm: {path} has no unified_attention_2d()")
    return module


def runner(module, batch, scale):
    """A closure that runs the peer on `batch` (a PagedBatch whose cache
    already holds the new tokens), and its output tensor."""
    ql = torch.tensor([0] + batch.ql, device="cuda").cumsum(0).int()
    out = torch.empty_like(batch.q)

    def run():
        module.unified_attention_2d(batch.q, batch.k_cache, batch.v_cache,
                                    out, ql, batch.seq_lens, batch.table,
                                    scale)

    return run, out
