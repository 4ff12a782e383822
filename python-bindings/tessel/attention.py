"""The attention dispatcher (docs/dispatcher.md) from Python: one mixed
batch of decodes, extends and prefills per engine step, each phase on the
kernels made for it.

    att = tessel.Attention(bundle, num_q_heads=32, num_kv_heads=8,
                           head_dim=128, block_size=16)   # dtype="bf16"
    order = att.order(query_lens, context_lens)  # apply to your batch
    plan = att.plan(query_lens, context_lens, max_blocks)  # in that order
    plan.run(q=q, k=k, v=v, k_cache=kc, v_cache=vc, block_table=bt,
             seq_lens=seq_lens, slot_mapping=slots, out=out)

q, k, v and out hold the step's new tokens in plan order; context_lens are
the tokens cached before the step, seq_lens (on the device) context + new;
with slot_mapping the run first writes the new tokens into the cache
(or write them yourself with `att.write_cache(k, v, k_cache, v_cache,
slot_mapping)` and leave slot_mapping out). `tessel.permute_rows(order,
rows)` applies the order to your per-request state. The run needs a
workspace of `plan.info["workspace_bytes"]`: pass one, or the plan
allocates it (next to q, with torch) and keeps it for later runs.
Every refusal of the runtime is a tessel.Error with its message.
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _buffers, _tessel, specs
from .cache import default_cache
from .runtime import Bundle

_KINDS = {"mha": 0, "mla": 1}
_ROUTINGS = {"auto": 0, "triple": 1, "unified": 2, "two_path": 3}
_LAYOUTS = {"nhd": 0, "shuffled": 1}
_BUFFERS = ("q", "k", "v", "k_cache", "v_cache", "block_table", "seq_lens",
            "slot_mapping", "out", "q_latent", "latent_cache",
            "latent_block_table", "out_latent")
_OUTPUTS = {"out", "out_latent", "k_cache", "v_cache"}


def _choice(name: str, value, choices: Dict[str, int]) -> int:
    if value not in choices:
        raise ValueError(f"tessel.Attention: {name} {value!r} is not one of "
                         f"{', '.join(choices)}")
    return choices[value]


class Attention:
    """A dispatcher for one attention configuration of a bundle's kernels
    (found by shape parameters; a configuration the bundle cannot serve is
    refused here with a message listing what it has). Given a tessel.Device
    instead of a bundle, an MHA/GQA dispatcher gets its kernel set
    (tessel.specs.dispatch_set) from the kernel cache: compiled on the
    first miss where tessel-aot is installed (`cache`: default, the
    process's)."""

    def __init__(self, bundle, *, num_q_heads: int,
                 num_kv_heads: int, head_dim: int, block_size: int,
                 v_head_dim: int = 0, dtype="bf16", kind: str = "mha",
                 kv_layout: str = "nhd", routing: str = "auto",
                 decode_threshold: int = 1,
                 context_chunk_tokens: int = 32768, max_kv_splits: int = 32,
                 compute_units: int = 0, latent_dim: int = 0,
                 rope_dim: int = 0, latent_block_size: int = 0,
                 softmax_scale: Optional[float] = None, cache=None):
        """`softmax_scale`: the scale of q.k in every phase (the kernels take
        it at launch); None or 0: 1/sqrt(head_dim)."""
        if isinstance(bundle, _tessel.Device):
            bundle = _cached_set(bundle, kind, dtype, num_q_heads,
                                 num_kv_heads, head_dim, v_head_dim,
                                 block_size, kv_layout, cache)
        config = dict(
            kind=_choice("kind", kind, _KINDS),
            dtype=_tessel.DTYPES[_buffers.dtype_name(dtype)],
            num_q_heads=num_q_heads, num_kv_heads=num_kv_heads,
            head_dim=head_dim, v_head_dim=v_head_dim, block_size=block_size,
            kv_layout=_choice("kv_layout", kv_layout, _LAYOUTS),
            routing=_choice("routing", routing, _ROUTINGS),
            decode_threshold=decode_threshold,
            context_chunk_tokens=context_chunk_tokens,
            max_kv_splits=max_kv_splits, compute_units=compute_units,
            latent_dim=latent_dim, rope_dim=rope_dim,
            latent_block_size=latent_block_size)
        self._bundle = bundle
        self._handle = _tessel.Attention(
            bundle._handle, config,
            0.0 if softmax_scale is None else float(softmax_scale))
        device = bundle.device
        self._device = (device.kind, device.ordinal)

    @property
    def routing(self) -> str:
        """The routing mode in use: 'triple', 'unified' or 'two_path'."""
        return self._handle.routing

    def order(self, query_lens: Sequence[int],
              context_lens: Sequence[int]) -> List[int]:
        """order[i]: the index in your batch of the request that goes to
        position i ([decode : extend : prefill], stable)."""
        return self._handle.order(list(query_lens), list(context_lens))

    def write_cache(self, k, v, k_cache, v_cache, slot_mapping, *,
                    stream=None) -> None:
        """Writes the new tokens' keys and values k, v [T, num_kv_heads,
        head_dim] into the caches: token t to slot slot_mapping[t] (int32
        [T]; block slot // block_size, offset slot % block_size); a negative
        slot is skipped (padding). Asynchronous on `stream` as Plan.run."""
        given = dict(k=k, v=v, k_cache=k_cache, v_cache=v_cache,
                     slot_mapping=slot_mapping)
        raw, handle = _raw_buffers("tessel.Attention.write_cache", given,
                                   self._device, stream)
        self._handle.write_cache(*(raw[n] for n in given), handle)

    def plan(self, query_lens: Sequence[int], context_lens: Sequence[int],
             max_blocks: int, capacity: int = 0) -> "Plan":
        """A plan of this batch (already in plan order); rebuild it for the
        next step with Plan.build. `capacity`: the most requests it will
        plan (default: this batch's)."""
        plan = Plan(self, max(capacity, len(query_lens)))
        plan.build(query_lens, context_lens, max_blocks)
        return plan


def _cached_set(device, kind, dtype, num_q_heads, num_kv_heads, head_dim,
                v_head_dim, block_size, kv_layout, cache) -> Bundle:
    """The bundle of dispatch_set's kernels for the configuration, from the
    kernel cache."""
    if kind != "mha" or (v_head_dim and v_head_dim != head_dim):
        raise ValueError("tessel.Attention: only MHA/GQA configurations with "
                         "v_head_dim = head_dim are compiled on demand; pass "
                         "a bundle with the kernels of this one")
    e = _buffers.dtype_name(dtype)
    prefix = (f"dispatch_{e}_q{num_q_heads}_kv{num_kv_heads}_d{head_dim}"
              f"_bs{block_size}_{kv_layout}")
    spec = specs.dispatch_set(prefix, num_q_heads, num_kv_heads, head_dim,
                              block_size, [kv_layout], e)
    tag = prefix if kv_layout == "nhd" else f"{prefix}_{kv_layout}"
    return (cache or default_cache()).kernel(device, f"{tag}_decode",
                                             spec).bundle


class Plan:
    """One batch's decisions: phase counts, split-KV factor, context
    chunks, workspace size (`info`, `chunks`)."""

    def __init__(self, attention: Attention, capacity: int):
        self._attention = attention
        self._handle = _tessel.AttentionPlan(attention._handle, capacity)
        self._workspace = None

    def build(self, query_lens: Sequence[int], context_lens: Sequence[int],
              max_blocks: int) -> None:
        self._handle.build(list(query_lens), list(context_lens), max_blocks)

    @property
    def info(self) -> Dict[str, int]:
        return self._handle.info

    @property
    def chunks(self) -> List[Tuple[int, int]]:
        """(start, width) of each context chunk of the extends."""
        return self._handle.chunks

    def run(self, *, workspace=None, stream=None, **buffers) -> None:
        """Launches the plan on the buffers named as in
        tessel_attention_buffers (q, k, v, k_cache, v_cache, block_table,
        seq_lens, slot_mapping, out; MLA: q_latent, latent_cache,
        latent_block_table, out_latent), asynchronously on `stream` (None:
        torch's current stream when the buffers are torch tensors)."""
        for name in buffers:
            if name not in _BUFFERS:
                raise TypeError(f"tessel.Plan.run: no buffer '{name}' (takes "
                                f"{', '.join(_BUFFERS)})")
        given = {n: t for n, t in buffers.items() if t is not None}
        device = self._attention._device
        raw, handle = _raw_buffers("tessel.Plan.run", given, device, stream)
        needed = self.info["workspace_bytes"]
        if workspace is None and needed:
            workspace = self._grown_workspace(needed, given)
        data, size = _workspace(workspace, device)
        self._handle.run(raw, data, size, handle)

    def _grown_workspace(self, needed, given):
        """The plan's own workspace, grown to `needed` bytes, on the device
        of the buffers (torch tensors)."""
        import torch
        like = next(t for t in given.values() if isinstance(t, torch.Tensor))
        if self._workspace is None or self._workspace.numel() < needed:
            self._workspace = torch.empty(needed, dtype=torch.uint8,
                                          device=like.device)
        return self._workspace


def _raw_buffers(fn: str, given: Dict[str, Any], device,
                 stream) -> Tuple[Dict[str, Tuple], int]:
    """The runtime's (data, dtype, shape) of each named buffer, and the
    stream handle: `stream` (a torch stream or a handle), else torch's
    current stream of the buffers on a GPU."""
    on_gpu = device[0] != "host"
    handle = 0
    if stream is not None:
        handle = getattr(stream, "cuda_stream", stream)
    elif on_gpu:
        handle = _buffers.torch_stream(list(given.values())) or 0
    dlpack_stream = (handle or 1) if on_gpu else None
    raw = {}
    for name, value in given.items():
        b = _buffers.to_buffer(value, f"{fn}: '{name}'", device,
                               name in _OUTPUTS, dlpack_stream)
        raw[name] = (b.data, b.dtype, b.shape)
    return raw, handle


def permute_rows(order: Sequence[int], rows):
    """rows reordered as the dispatcher's order says: result[i] =
    rows[order[i]] (tessel_permute_rows). `rows`: a list or tuple (a list
    back), or a numpy array or torch tensor indexed along its first
    dimension (on its own device: block tables and per-request arrays)."""
    order = [int(i) for i in order]
    if sorted(order) != list(range(len(order))):
        raise ValueError(f"tessel.permute_rows: order {order} is not a "
                         f"permutation of 0..{len(order) - 1}")
    if len(rows) != len(order):
        raise ValueError(f"tessel.permute_rows: order has {len(order)} "
                         f"entries but rows has {len(rows)}")
    if isinstance(rows, (list, tuple)):
        return [rows[i] for i in order]
    if type(rows).__module__.startswith("torch"):
        import torch
        return rows.index_select(0, torch.tensor(order, dtype=torch.int64)
                                 .to(rows.device, non_blocking=True))
    return rows[order]


def shuffle_kv_caches(k_cache, v_cache):
    """NHD caches (torch tensors) k [blocks, BS, H, D] and v [blocks, BS, H,
    Dv] in the CDNA pre-shuffled layout (docs/dispatcher.md), as new
    contiguous tensors: with x = 16 / element size, k [blocks, H, D/x, BS,
    x] and v [blocks, H, BS/x, Dv, x]."""
    nb, bs, h, d = k_cache.shape
    x = 16 // k_cache.element_size()
    dv = v_cache.shape[3]
    return (k_cache.view(nb, bs, h, d // x, x).permute(0, 2, 3, 1, 4)
            .contiguous(),
            v_cache.view(nb, bs // x, x, h, dv).permute(0, 3, 1, 4, 2)
            .contiguous())


def nhd_kv_caches(k_cache, v_cache):
    """Pre-shuffled caches back in the NHD layout (shuffle_kv_caches'
    inverse), as views."""
    nb, h, _, bs, _ = k_cache.shape
    return (k_cache.permute(0, 3, 1, 2, 4).reshape(nb, bs, h, -1),
            v_cache.permute(0, 2, 4, 1, 3).reshape(nb, bs, h, -1))


def _workspace(workspace, device) -> Tuple[int, int]:
    """(address, bytes) of a workspace: a dense torch tensor of any dtype
    on the plan's device, or None."""
    if workspace is None:
        return 0, 0
    import torch
    if not isinstance(workspace, torch.Tensor) or \
            not workspace.is_contiguous():
        raise TypeError("tessel.Plan.run: 'workspace' must be a contiguous "
                        "torch tensor")
    kind, ordinal = device
    where = workspace.device
    if (where.type == "cpu") != (kind == "host") or (
            kind != "host" and where.index != ordinal):
        raise ValueError(f"tessel.Plan.run: 'workspace' is on {where}, not "
                         f"on the plan's device ({kind}:{ordinal})")
    return workspace.data_ptr(), workspace.numel() * workspace.element_size()


__all__ = ["Attention", "Plan", "permute_rows", "shuffle_kv_caches",
           "nhd_kv_caches"]
