"""tessel.Attention, the dispatcher from Python, on the host backend: mixed
batches in every routing mode against float64 causal attention over each
request's cached context and new tokens, and its errors. The kernels are
examples/attention_dispatch.mlir (bf16, 4 query heads, 2 KV heads, head dim
64, NHD blocks of 16, scale 1/8)."""

import pytest
import torch

import tessel
from attention_reference import Step

HQ, HKV, D, BS = 4, 2, 64, 16


def step_of(att, requests, seed):
    return Step(att, requests, torch.Generator().manual_seed(seed), HQ, HKV,
                D, BS)


def attention(bundle, **overrides):
    config = dict(num_q_heads=HQ, num_kv_heads=HKV, head_dim=D, block_size=BS,
                  dtype=torch.bfloat16)
    config.update(overrides)
    return tessel.Attention(bundle, **config)


MIXED = [(17, 0), (1, 15), (5, 200), (1, 0), (40, 33), (1, 300), (3, 0),
         (9, 1), (1, 16)]


@pytest.mark.parametrize("routing", ["triple", "unified", "two_path"])
def test_mixed_batch_matches_reference(dispatch_bundle, routing):
    att = attention(dispatch_bundle, routing=routing,
                    context_chunk_tokens=64, compute_units=64)
    assert att.routing == routing
    step = step_of(att, MIXED, len(routing))
    plan = att.plan(step.ql, step.cl, step.max_blocks)
    info = plan.info
    assert (info["num_decodes"], info["num_extends"],
            info["num_prefills"]) == (4, 3, 2)
    if routing == "unified":
        # One kernel over each request's whole sequence: no chunks.
        assert info["context_chunks"] == len(plan.chunks) == 0
    else:
        assert info["context_chunks"] == len(plan.chunks) >= 2
        assert info["context_chunks_parallel"] == 0
        assert [start for start, _ in plan.chunks][0] == 0
    plan.run(**step.buffers())
    # The run wrote the new tokens into the cache (the reference reads them
    # from there, so check the write itself).
    assert step.cache_written()
    err = step.error()
    assert err < 2e-2, f"{routing}: max error {err:.3g}"


@pytest.mark.parametrize("routing", ["triple", "unified", "two_path"])
def test_each_dispatcher_runs_its_own_scale(dispatch_bundle, routing):
    """The kernels take the softmax scale at launch: two dispatchers of one
    bundle with different scales give the answers of their own scales (far
    apart, so a kernel that ignored the scale would fail)."""
    for scale, other in ((None, 0.3), (0.3, None)):
        att = attention(dispatch_bundle, routing=routing, softmax_scale=scale,
                        compute_units=64)
        step = step_of(att, MIXED, 21)
        att.plan(step.ql, step.cl, step.max_blocks).run(**step.buffers())
        assert step.error(scale) < 2e-2
        assert step.error(other) > 5e-2


def test_plan_rebuilds_and_keeps_its_workspace(dispatch_bundle):
    att = attention(dispatch_bundle)
    first = step_of(att, [(1, 40), (6, 0)], 5)
    plan = att.plan(first.ql, first.cl, first.max_blocks, capacity=8)
    plan.run(**first.buffers())
    second = step_of(att, [(3, 70), (1, 2), (8, 0)], 6)
    plan.build(second.ql, second.cl, second.max_blocks)
    workspace = torch.empty(plan.info["workspace_bytes"], dtype=torch.uint8)
    plan.run(workspace=workspace, **second.buffers())
    for step in (first, second):
        assert step.error() < 2e-2


def test_refusals(dispatch_bundle):
    with pytest.raises(tessel.Error) as e:
        attention(dispatch_bundle, head_dim=96)
    assert e.value.code == tessel.StatusCode.UNSUPPORTED
    assert "needs a kernel for the decode split-KV partials" in str(e.value)
    assert "head_dim=96" in str(e.value)
    with pytest.raises(ValueError, match="routing 'fastest' is not one of "
                                         "auto, triple, unified, two_path"):
        attention(dispatch_bundle, routing="fastest")
    att = attention(dispatch_bundle)
    with pytest.raises(tessel.Error, match="request 1 has query length 0"):
        att.order([1, 0], [3, 3])
    with pytest.raises(tessel.Error, match="is a decode after an extend"):
        att.plan([5, 1], [2, 9], 4)
    step = step_of(att, [(1, 20), (4, 0)], 9)
    plan = att.plan(step.ql, step.cl, step.max_blocks)
    buffers = step.buffers()
    with pytest.raises(TypeError, match="no buffer 'query'"):
        plan.run(query=step.q, **buffers)
    del buffers["k"]
    with pytest.raises(tessel.Error, match="buffers.k is missing"):
        plan.run(**buffers)
    buffers = step.buffers()
    buffers["q"] = step.q[:, :, ::2]
    with pytest.raises(ValueError, match="'q'"):
        plan.run(**buffers)
    with pytest.raises(TypeError, match="'workspace' must be a contiguous "
                                        "torch tensor"):
        plan.run(workspace=bytearray(64), **step.buffers())
    needed = plan.info["workspace_bytes"]
    assert needed > 0  # the prefill's cu_seqlens
    with pytest.raises(tessel.Error, match=f"the plan needs {needed} bytes "
                                           f"of workspace, got {needed - 1}"):
        plan.run(workspace=torch.empty(needed - 1, dtype=torch.uint8),
                 **step.buffers())


def test_write_cache_then_run_without_slots(dispatch_bundle):
    """The engine writes the cache itself (a padding slot -1 skipped), then
    runs the plan without slot_mapping."""
    att = attention(dispatch_bundle)
    step = step_of(att, [(1, 20), (3, 40), (6, 0)], 11)
    padded = torch.cat([step.slots, torch.tensor([-1], dtype=torch.int32)])
    k = torch.cat([step.k, torch.randn(1, HKV, D).bfloat16()])
    v = torch.cat([step.v, torch.randn(1, HKV, D).bfloat16()])
    untouched = torch.ones(step.k_cache.shape[:2], dtype=torch.bool)
    untouched[step.slots.long() // BS, step.slots.long() % BS] = False
    k_before = step.k_cache[untouched].clone()
    att.write_cache(k, v, step.k_cache, step.v_cache, padded)
    assert step.cache_written()
    assert torch.equal(step.k_cache[untouched], k_before)
    buffers = step.buffers()
    del buffers["slot_mapping"]
    att.plan(step.ql, step.cl, step.max_blocks).run(**buffers)
    assert step.error() < 2e-2


def test_write_cache_refusals(dispatch_bundle):
    att = attention(dispatch_bundle)
    step = step_of(att, [(2, 5)], 12)
    with pytest.raises(tessel.Error, match="tessel_attention_write_cache: .*"
                       "arg 'k' dim 1 is 1, expected 2"):
        att.write_cache(step.k[:, :1].contiguous(), step.v, step.k_cache,
                        step.v_cache, step.slots)
    with pytest.raises(ValueError, match="write_cache: 'k_cache'"):
        att.write_cache(step.k, step.v, step.k_cache[:, :, :, ::2],
                        step.v_cache, step.slots)


def test_permute_rows_applies_the_order(dispatch_bundle):
    att = attention(dispatch_bundle)
    ql, cl = [7, 1, 3, 1], [0, 9, 4, 0]
    order = att.order(ql, cl)
    assert tessel.permute_rows(order, ql) == [1, 1, 3, 7]
    table = torch.arange(8, dtype=torch.int32).view(4, 2)
    assert torch.equal(tessel.permute_rows(order, table),
                       table[torch.tensor(order)])
    import numpy as np
    assert tessel.permute_rows(order, np.array(cl)).tolist() == \
        [cl[i] for i in order]
    with pytest.raises(ValueError, match=r"order \[0, 0\] is not a "
                                         r"permutation of 0..1"):
        tessel.permute_rows([0, 0], [5, 6])
    with pytest.raises(ValueError, match="order has 2 entries but rows has 3"):
        tessel.permute_rows([1, 0], [5, 6, 7])


def test_a_device_instead_of_a_bundle_compiles_the_set_on_miss(tmp_path):
    """Head dim 48, 6 query heads: no bundle has them; the dispatcher's
    kernel set is compiled into the cache and serves a mixed batch."""
    att = tessel.Attention(tessel.Device("host"), num_q_heads=6,
                           num_kv_heads=2, head_dim=48, block_size=BS,
                           dtype=torch.bfloat16, compute_units=64,
                           cache=tessel.KernelCache(tmp_path))
    step = Step(att, MIXED, torch.Generator().manual_seed(13), 6, 2, 48, BS)
    att.plan(step.ql, step.cl, step.max_blocks).run(**step.buffers())
    assert step.cache_written()
    assert step.error() < 2e-2
    assert len(list(tmp_path.glob("host-*.tsb"))) == 1
    with pytest.raises(ValueError, match="only MHA/GQA configurations with "
                                         "v_head_dim = head_dim"):
        tessel.Attention(tessel.Device("host"), num_q_heads=6,
                         num_kv_heads=2, head_dim=48, v_head_dim=32,
                         block_size=BS, cache=tessel.KernelCache(tmp_path))


def test_shuffle_kv_caches():
    """The pre-shuffled layout, element by element, and back."""
    gen = torch.Generator().manual_seed(7)
    k = torch.randn(3, 16, 2, 64, generator=gen).bfloat16()
    v = torch.randn(3, 16, 2, 32, generator=gen).bfloat16()
    ks, vs = tessel.shuffle_kv_caches(k, v)
    assert ks.shape == (3, 2, 8, 16, 8) and vs.shape == (3, 2, 2, 32, 8)
    for b, t, h, d in [(0, 0, 0, 0), (2, 13, 1, 61), (1, 7, 0, 9)]:
        assert ks[b, h, d // 8, t, d % 8] == k[b, t, h, d]
        assert vs[b, h, t // 8, d % 32, t % 8] == v[b, t, h, d % 32]
    kn, vn = tessel.nhd_kv_caches(ks, vs)
    assert torch.equal(kn, k) and torch.equal(vn, v)
