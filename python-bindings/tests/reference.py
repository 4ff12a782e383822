"""float64 references of the ops the tests launch (the semantics of
docs/dialect.md), in numpy."""

import numpy as np


def prefill_attention(q, k, v, cu_seqlens, scale, causal=True):
    """out [T, Hq, Dv], lse [Hq, T] of varlen (causal) attention with GQA."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    tokens, q_heads, _ = q.shape
    group = q_heads // k.shape[1]
    out = np.zeros((tokens, q_heads, v.shape[2]))
    lse = np.full((q_heads, tokens), -np.inf)
    for start, end in zip(cu_seqlens[:-1], cu_seqlens[1:]):
        n = end - start
        if n == 0:
            continue
        for h in range(q_heads):
            kv = h // group
            scores = scale * q[start:end, h] @ k[start:end, kv].T
            if causal:
                scores[np.triu_indices(n, 1)] = -np.inf
            peak = scores.max(axis=1, keepdims=True)
            p = np.exp(scores - peak)
            total = p.sum(axis=1)
            out[start:end, h] = (p @ v[start:end, kv]) / total[:, None]
            lse[h, start:end] = peak[:, 0] + np.log(total)
    return out, lse


def lse_merge(o_a, lse_a, o_b, lse_b):
    """out [T, H, D], lse [H, T]: two partials merged by log-sum-exp, +inf
    counting as -inf (an empty partial)."""
    o_a, o_b = np.asarray(o_a, np.float64), np.asarray(o_b, np.float64)
    a = np.where(np.isposinf(lse_a), -np.inf, lse_a).astype(np.float64)
    b = np.where(np.isposinf(lse_b), -np.inf, lse_b).astype(np.float64)
    m = np.maximum(a, b)
    empty = np.isneginf(m)
    safe = np.where(empty, 0.0, m)
    wa = np.where(np.isneginf(a), 0.0, np.exp(a - safe))
    wb = np.where(np.isneginf(b), 0.0, np.exp(b - safe))
    total = np.where(empty, 1.0, wa + wb)
    # [H, T] weights against [T, H, D] rows; an empty partial's rows may
    # hold anything (NaN), and are never read into the result.
    ta, tb = (wa / total).T[:, :, None], (wb / total).T[:, :, None]
    with np.errstate(invalid="ignore"):
        out = np.where(ta > 0, o_a * ta, 0.0) + np.where(tb > 0, o_b * tb, 0.0)
    out = np.where(empty.T[:, :, None], o_a, out)
    lse = np.where(empty, -np.inf, safe + np.log(total))
    return out, lse


def grouped_matmul(a, b, group_offsets, trans_b):
    """c [T, N] = a[rows_g] . op(b[g]) per group; rows past the last offset
    are zero."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    n = b.shape[1] if trans_b else b.shape[2]
    c = np.zeros((a.shape[0], n))
    start = 0
    for g, end in enumerate(group_offsets):
        w = b[g].T if trans_b else b[g]
        c[start:end] = a[start:end] @ w
        start = end
    return c


def group_offsets(sizes):
    return np.cumsum(sizes).astype(np.int32)
