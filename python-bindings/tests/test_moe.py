"""tessel.torch.moe_mlp, moe_mlp_unstacked and patch_deepseek_moe on the
host backend, against torch autograd of the per-expert loop (float64), with
the kernels of kernels.mlir's moe_k3_* (5 experts, H = 19, I = 11, top-3,
f32) and moe_k2_* (4 experts, H = 24, I = 10, top-2, bf16)."""

import copy
import os

import pytest
import torch

import tessel
import tessel.torch
from moe_reference import ToyConfig, ToyModel, loss_of, routed_experts_loop

K3 = dict(experts=5, hidden=19, intermediate=11, topk=3, dtype=torch.float32)
K2 = dict(experts=4, hidden=24, intermediate=10, topk=2, dtype=torch.bfloat16)


def rel(actual, expected):
    """Largest error relative to the largest magnitude of the reference."""
    scale = expected.abs().max().clamp(min=1e-30)
    return ((actual.double() - expected).abs().max() / scale).item()


def routing(gen, tokens, experts, topk, empty=None, dropped=()):
    """ids [T, k]: distinct experts a token (as top-k gives), never `empty`;
    `dropped` (token, slot, id) entries overwritten with ids out of range."""
    pool = [e for e in range(experts) if e != empty]
    ids = torch.stack([torch.tensor(pool)[torch.randperm(len(pool),
                                                         generator=gen)[:topk]]
                       for _ in range(tokens)]) if tokens else \
        torch.empty(0, topk, dtype=torch.int64)
    for t, j, bad in dropped:
        ids[t, j] = bad
    return ids


def problem(seed, tokens, experts, hidden, intermediate, topk, empty=None,
            dropped=()):
    """float64 x, ids, weights, w_gate_up, w_down and an upstream gradient."""
    gen = torch.Generator().manual_seed(seed)
    ids = routing(gen, tokens, experts, topk, empty, dropped)
    x = torch.randn(tokens, hidden, generator=gen, dtype=torch.float64)
    weights = torch.rand(tokens, topk, generator=gen, dtype=torch.float64)
    w_gate_up = torch.randn(experts, 2 * intermediate, hidden, generator=gen,
                            dtype=torch.float64) / hidden ** 0.5
    w_down = torch.randn(experts, hidden, intermediate, generator=gen,
                         dtype=torch.float64) / intermediate ** 0.5
    dout = torch.randn(tokens, hidden, generator=gen, dtype=torch.float64)
    return ids, (x, weights, w_gate_up, w_down), dout


def reference(ids, inputs, dout):
    """Output and gradients of x, weights, w_gate_up, w_down, in float64."""
    leaves = [t.clone().requires_grad_() for t in inputs]
    out = routed_experts_loop(leaves[0], ids, *leaves[1:])
    if out.requires_grad:  # else no token was routed: zero gradients
        (out * dout).sum().backward()
    return out.detach(), [torch.zeros_like(t) if t.grad is None else t.grad
                          for t in leaves]


def run_stacked(bundle, ids, inputs, dout, dtype):
    leaves = [t.to(dtype).requires_grad_() for t in inputs]
    x, weights, w_gate_up, w_down = leaves
    out = tessel.torch.moe_mlp(x, ids, weights, w_gate_up, w_down, bundle)
    (out.double() * dout).sum().backward()
    return out.detach(), [t.grad for t in leaves]


def run_unstacked(bundle, ids, inputs, dout, dtype):
    """moe_mlp_unstacked on per-expert copies (each its own allocation, as
    nn.Linear weights are); the weight gradients stacked back."""
    x, weights, w_gate_up, w_down = (t.to(dtype) for t in inputs)
    inter = w_down.shape[2]
    lists = [[w[:inter].clone() for w in w_gate_up],
             [w[inter:].clone() for w in w_gate_up],
             [w.clone() for w in w_down]]
    for t in (x, weights, *sum(lists, [])):
        t.requires_grad_()
    out = tessel.torch.moe_mlp_unstacked(x, ids, weights, *lists, bundle)
    (out.double() * dout).sum().backward()
    gate, up, down = ([w.grad for w in ws] for ws in lists)
    d_gate_up = torch.stack([torch.cat(pair) for pair in zip(gate, up)])
    return out.detach(), [x.grad, weights.grad, d_gate_up,
                          torch.stack(down)]


def run_split(bundle, ids, inputs, dout, dtype):
    """moe_mlp with (w_gate, w_up) apart; their gradients joined back."""
    x, weights, w_gate_up, w_down = (t.to(dtype) for t in inputs)
    inter = w_down.shape[2]
    w_gate = w_gate_up[:, :inter].clone()
    w_up = w_gate_up[:, inter:].clone()
    leaves = (x, weights, w_gate, w_up, w_down)
    for t in leaves:
        t.requires_grad_()
    out = tessel.torch.moe_mlp(x, ids, weights, (w_gate, w_up), w_down,
                               bundle)
    (out.double() * dout).sum().backward()
    return out.detach(), [x.grad, weights.grad,
                          torch.cat([w_gate.grad, w_up.grad], 1), w_down.grad]


RUNS = {"stacked": run_stacked, "unstacked": run_unstacked,
        "split": run_split}
CASES = {
    # 13 tokens, expert 2 never chosen.
    "empty_expert": (K3, dict(tokens=13, empty=2)),
    "one_token": (K3, dict(tokens=1)),
    # Dropped slots (ids outside [0, 5)), one token with two of them.
    "dropped_ids": (K3, dict(tokens=7, dropped=[(0, 1, -1), (3, 0, 5),
                                                (3, 2, 99), (6, 2, -7)])),
    "no_tokens": (K3, dict(tokens=0)),
    "top2_bf16": (K2, dict(tokens=9, empty=0)),
}


@pytest.mark.parametrize("form", RUNS)
@pytest.mark.parametrize("case", CASES)
def test_forward_and_gradients_match_the_loop(bundle, form, case):
    shape, routing_args = CASES[case]
    dims = {k: v for k, v in shape.items() if k != "dtype"}
    ids, inputs, dout = problem(len(case), **dims, **routing_args)
    out, grads = RUNS[form](bundle, ids, inputs, dout, shape["dtype"])
    ref, ref_grads = reference(ids, inputs, dout)
    # f32 kernels against float64; bf16 rounds inputs, h, act and y.
    tolerance = 1e-5 if shape["dtype"] == torch.float32 else 3e-2
    assert out.dtype == shape["dtype"] and out.shape == ref.shape
    if ref.numel():
        assert rel(out, ref) < tolerance
    names = ["x", "topk_weights", "w_gate_up", "w_down"]
    for name, grad, expected in zip(names, grads, ref_grads):
        assert grad.shape == expected.shape, name
        if expected.numel() and expected.abs().max() > 0:
            assert rel(grad, expected) < tolerance, name
        else:
            assert torch.count_nonzero(grad) == 0, name
    if "empty" in routing_args:
        e = routing_args["empty"]
        assert torch.count_nonzero(grads[2][e]) == 0
        assert torch.count_nonzero(grads[3][e]) == 0
    for t, j, _ in routing_args.get("dropped", ()):
        assert grads[1][t, j] == 0


def test_int32_ids_and_float32_weights_of_bf16_tokens(bundle):
    ids, inputs, dout = problem(11, tokens=6, experts=4, hidden=24,
                                intermediate=10, topk=2)
    x, weights, w_gate_up, w_down = inputs
    weights32 = weights.float().requires_grad_()
    out = tessel.torch.moe_mlp(x.bfloat16(), ids.to(torch.int32), weights32,
                               w_gate_up.bfloat16(), w_down.bfloat16(),
                               bundle)
    (out.double() * dout).sum().backward()
    ref, ref_grads = reference(ids, inputs, dout)
    assert rel(out, ref) < 3e-2
    assert weights32.grad.dtype == torch.float32
    assert rel(weights32.grad, ref_grads[1]) < 3e-2


def test_only_what_needs_a_gradient_gets_one(bundle):
    ids, inputs, dout = problem(5, tokens=8, experts=5, hidden=19,
                                intermediate=11, topk=3)
    x, weights, w_gate_up, w_down = (t.float() for t in inputs)
    x.requires_grad_()
    out = tessel.torch.moe_mlp(x, ids, weights, w_gate_up, w_down, bundle)
    (out.double() * dout).sum().backward()
    assert w_gate_up.grad is None and w_down.grad is None
    assert weights.grad is None
    assert rel(x.grad, reference(ids, inputs, dout)[1][0]) < 1e-5


def test_spec_is_what_the_test_bundle_holds():
    with open(os.environ["TESSEL_TEST_SPEC"]) as f:
        text = f.read()
    assert tessel.torch.moe_mlp_spec(5, 19, 11, 3, "f32", "moe_k3") in text
    assert tessel.torch.moe_mlp_spec(4, 24, 10, 2, "bf16", "moe_k2") in text


def test_spec_without_pointer_tables():
    text = tessel.torch.moe_mlp_spec(8, 64, 32, 2, name="m", unstacked=False)
    assert text.count("func.func") == 16
    assert "xi64>" not in text and "_ptrs" not in text
    assert "@m_gate_or_up(" in text and "@m_swiglu_parts(" in text
    assert "@m_unpermute_parts(" in text
    text = tessel.torch.moe_mlp_spec(8, 64, 32, 2, name="m", unstacked=False,
                                     split=False)
    # Stacked alone: gate/up writes act in its epilogue (no swiglu kernel).
    assert text.count("func.func") == 10
    assert "gate_or_up" not in text and "_parts" not in text
    assert "tessel.swiglu " not in text
    assert "act(%act : memref<?x32xbf16>)" in text


def test_split_gate_and_up_only_what_needs_a_gradient_gets_one(bundle):
    ids, inputs, dout = problem(5, tokens=6, **{k: v for k, v in K3.items()
                                                if k != "dtype"})
    x, weights, w_gate_up, w_down = (t.float() for t in inputs)
    w_gate, w_up = w_gate_up[:, :11].clone(), w_gate_up[:, 11:].clone()
    w_up.requires_grad_()
    out = tessel.torch.moe_mlp(x, ids, weights, [w_gate, w_up], w_down,
                               bundle)
    (out.double() * dout).sum().backward()
    expected = reference(ids, inputs, dout)[1][2][:, 11:]
    assert w_gate.grad is None and w_down.grad is None
    assert rel(w_up.grad, expected) < 1e-5


def test_missing_kernels_name_the_spec_to_write(bundle):
    ids, inputs, _ = problem(3, tokens=4, experts=5, hidden=19,
                             intermediate=11, topk=3)
    x, weights, w_gate_up, w_down = (t.float() for t in inputs)
    with pytest.raises(tessel.Error) as e:  # no f16 kernels
        tessel.torch.moe_mlp(x.half(), ids, weights, w_gate_up.half(),
                             w_down.half(), bundle)
    assert e.value.code == tessel.StatusCode.NOT_FOUND
    message = str(e.value)
    assert message.startswith(
        "tessel.torch.moe_mlp: the bundle has no kernel for 'unpermute' "
        "(E=5, H=19, I=11, top-3, f16); tessel.torch.moe_mlp_spec(5, 19, 11, "
        "3, 'f16') writes every kernel it needs. no kernel matches op "
        "'tessel.moe_unpermute', dtype f16")


# Each bad argument of moe_mlp (x, ids, weights, w_gate_up, w_down,
# replaced by the entry) and the start of the message that names it.
def _good():
    ids, inputs, _ = problem(2, tokens=4, experts=5, hidden=19,
                             intermediate=11, topk=3)
    x, weights, w_gate_up, w_down = (t.float() for t in inputs)
    return dict(x=x, topk_ids=ids, topk_weights=weights, w_gate_up=w_gate_up,
                w_down=w_down)


AGREE = (r"x \[T, H\], topk_ids \[T, k\] and topk_weights \[T, k\] must "
         r"agree on T and k")
BAD = [
    (dict(x=torch.randn(4, 19, 1)), ValueError,
     r"'x' must be \[T, H\] \(2-D\), got shape \[4, 19, 1\]"),
    (dict(x=torch.randn(4, 19, dtype=torch.float64)), TypeError,
     "'x' is torch.float64; the kernels take"),
    (dict(topk_ids=torch.zeros(4, 3)), TypeError,
     "'topk_ids' must be int32 or int64, got torch.float32"),
    (dict(topk_weights=torch.ones(4, 3, dtype=torch.int32)), TypeError,
     "'topk_weights' must be floating point"),
    (dict(topk_weights=torch.ones(4, 2)), ValueError,
     AGREE + r", got \[4, 19\], \[4, 3\] and \[4, 2\]"),
    (dict(x=torch.randn(5, 19)), ValueError, AGREE + r", got \[5, 19\]"),
    (dict(topk_ids=torch.zeros(4, 0, dtype=torch.int32),
          topk_weights=torch.ones(4, 0)), ValueError, "top-k is 0"),
    (dict(w_gate_up=torch.randn(5, 21, 19)), ValueError,
     r"'w_gate_up' must be \[E, 2I, H\] with H = 19"),
    (dict(w_gate_up=torch.randn(5, 22, 18)), ValueError,
     r"'w_gate_up' must be \[E, 2I, H\] with H = 19"),
    (dict(w_down=torch.randn(5, 11, 19)), ValueError,
     r"'w_down' must be \[E, H, I\] = \[5, 19, 11\]"),
    (dict(w_down=torch.randn(4, 19, 11)), ValueError,
     r"'w_down' must be \[E, H, I\] = \[5, 19, 11\]"),
    (dict(w_down=torch.randn(5, 19, 11, dtype=torch.float64)), TypeError,
     "'w_down' is torch.float64 but 'x' is torch.float32"),
    (dict(w_gate_up=torch.randn(5, 19, 22).transpose(1, 2)), ValueError,
     r"'w_gate_up' \[5, 22, 19\] must be contiguous"),
    (dict(topk_ids=torch.zeros(4, 3, dtype=torch.int32, device="meta")),
     ValueError, "'topk_ids' is on meta but 'x' is on cpu"),
    (dict(w_down=torch.randn(5, 19, 11, device="meta")), ValueError,
     "'w_down' is on meta but 'x' is on cpu"),
    (dict(w_down=[torch.randn(19, 11)] * 5), TypeError,
     "'w_down' must be a torch tensor"),
    # Gate and up apart.
    (dict(w_gate_up=[torch.randn(5, 11, 19)] * 3), TypeError,
     r"'w_gate_up' must be a tensor \[E, 2I, H\] or a pair \(w_gate, "
     r"w_up\) of \[E, I, H\] tensors, got 3 items"),
    (dict(w_gate_up=(torch.randn(5, 11, 18), torch.randn(5, 11, 18))),
     ValueError, r"'w_gate' must be \[E, I, H\] with H = 19"),
    (dict(w_gate_up=(torch.randn(5, 11, 19), torch.randn(5, 12, 19))),
     ValueError, r"'w_up' must be \[E, I, H\] = \[5, 11, 19\] \(as "
     r"w_gate\), got \[5, 12, 19\]"),
    (dict(w_gate_up=(torch.randn(5, 11, 19), torch.randn(5, 11))),
     ValueError, r"'w_up' must be \[E, I, H\] \(3-D\)"),
    (dict(w_gate_up=(torch.randn(5, 10, 19), torch.randn(5, 10, 19))),
     ValueError, r"'w_down' must be \[E, H, I\] = \[5, 19, 10\] \(from "
     r"w_gate"),
    (dict(w_gate_up=(torch.randn(5, 11, 19),
                     torch.randn(5, 11, 19, dtype=torch.float16))),
     TypeError, "'w_up' is torch.float16 but 'x' is torch.float32"),
]


@pytest.mark.parametrize("bad,exception,message", BAD)
def test_bad_arguments_of_moe_mlp(bundle, bad, exception, message):
    args = _good()
    args.update(bad)
    with pytest.raises(exception, match="tessel.torch.moe_mlp: " + message):
        tessel.torch.moe_mlp(**args, bundle=bundle)


def test_tensors_off_the_bundles_device(bundle):
    args = {k: v.to("meta") for k, v in _good().items()}
    with pytest.raises(ValueError, match="the tensors are on meta but the "
                       "bundle's kernels run on the host"):
        tessel.torch.moe_mlp(**args, bundle=bundle)


def _lists():
    args = _good()
    w_gate_up, w_down = args.pop("w_gate_up"), args.pop("w_down")
    args.update(gate_weights=[w[:11].clone() for w in w_gate_up],
                up_weights=[w[11:].clone() for w in w_gate_up],
                down_weights=[w.clone() for w in w_down])
    return args


def _misaligned():
    flat = torch.randn(11 * 19 + 1)
    return flat[1:].view(11, 19)  # 4 bytes past an aligned start


PER_EXPERT = (r"gate_weights, up_weights and down_weights must hold one "
              r"tensor per expert \(at least one\)")
BAD_LISTS = [
    (dict(gate_weights=torch.randn(5, 11, 19)), TypeError,
     "'gate_weights' must be a list of per-expert weight tensors"),
    (dict(down_weights=[torch.randn(19, 11)] * 4), ValueError,
     PER_EXPERT + ", got 5, 5 and 4"),
    (dict(gate_weights=[], up_weights=[], down_weights=[]), ValueError,
     PER_EXPERT + ", got 0, 0 and 0"),
    (dict(up_weights=[torch.randn(11, 19)] * 4 + [torch.randn(12, 19)]),
     ValueError, r"'up_weights\[4\]' must be \[I, H\] = \[11, 19\]"),
    (dict(down_weights=[torch.randn(19, 11)] * 4 + [torch.randn(19)]),
     ValueError, r"'down_weights\[4\]' must be \[H, I\] \(2-D\)"),
    (dict(gate_weights=[torch.randn(11, 19)] * 4 +
          [torch.randn(11, 19, dtype=torch.float16)]), TypeError,
     r"'gate_weights\[4\]' is torch.float16 but 'x' is torch.float32"),
    (dict(down_weights=[torch.randn(11, 19).T] * 5), ValueError,
     r"'down_weights\[0\]' \[19, 11\] must be contiguous"),
    (dict(gate_weights=[_misaligned()] * 5), ValueError,
     r"'gate_weights\[0\]' starts at an address that is not 16-byte "
     r"aligned"),
]


@pytest.mark.parametrize("bad,exception,message", BAD_LISTS)
def test_bad_arguments_of_moe_mlp_unstacked(bundle, bad, exception, message):
    args = _lists()
    args.update(bad)
    with pytest.raises(exception,
                       match="tessel.torch.moe_mlp_unstacked: " + message):
        tessel.torch.moe_mlp_unstacked(**args, bundle=bundle)


#===----------------------------------------------------------------------===#
# patch_deepseek_moe on the toy DeepSeek model
#===----------------------------------------------------------------------===#

def _toy(seed, **config):
    torch.manual_seed(seed)
    model = ToyModel(ToyConfig(**config))
    gen = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, 64, (3, 7), generator=gen)
    targets = torch.randint(0, 64, (3, 7), generator=gen)
    return model, tokens, targets


def _loss_and_grads(model, tokens, targets):
    model.zero_grad(set_to_none=True)
    loss = loss_of(model, tokens, targets)
    loss.backward()
    return loss.detach(), {n: p.grad for n, p in model.named_parameters()}


def _per_expert(tensors, experts):
    """`experts.gate_up_proj` / `experts.down_proj` entries (stack_experts)
    as each expert's `gate_proj` / `up_proj` / `down_proj` weights."""
    out = {}
    for name, t in tensors.items():
        prefix, _, leaf = name.rpartition(".")
        if leaf == "gate_up_proj":
            for e in range(experts):
                gate, up = t[e].chunk(2)
                out[f"{prefix}.{e}.gate_proj.weight"] = gate
                out[f"{prefix}.{e}.up_proj.weight"] = up
        elif leaf == "down_proj" and t.dim() == 3:
            out.update({f"{prefix}.{e}.down_proj.weight": t[e]
                        for e in range(experts)})
        else:
            out[name] = t
    return out


def _assert_same_training_step(patched, naive, tokens, targets):
    loss, grads = _loss_and_grads(patched, tokens, targets)
    ref_loss, ref_grads = _loss_and_grads(naive, tokens, targets)
    grads = _per_expert(grads, naive.layers[0].mlp.config.n_routed_experts)
    assert abs(loss.item() - ref_loss.item()) < 1e-5 * abs(ref_loss.item())
    assert grads.keys() == ref_grads.keys()
    for name, grad in grads.items():
        assert grad is not None, name
        assert rel(grad, ref_grads[name].double()) < 1e-4, name


@pytest.mark.parametrize("config", [
    dict(),  # shared experts and the aux loss
    dict(n_shared_experts=None, aux_loss_alpha=0.0, num_layers=3),
])
@pytest.mark.parametrize("stack", [False, True])
def test_patched_model_trains_like_the_loop(bundle, config, stack):
    naive, tokens, targets = _toy(7, **config)
    patched = copy.deepcopy(naive)
    layers = range(len(naive.layers))
    assert tessel.torch.patch_deepseek_moe(
        patched, bundle, stack_experts=stack) == [
            f"layers.{i}.mlp" for i in layers]
    _assert_same_training_step(patched, naive, tokens, targets)
    # The gate learns through the routing weights' gradient.
    assert patched.layers[0].mlp.gate.weight.grad.abs().max() > 0


def _stacked_toy(seed, bundle):
    model, tokens, targets = _toy(seed)
    tessel.torch.patch_deepseek_moe(model, bundle, stack_experts=True)
    return model, tokens, targets


def test_stacked_experts_replace_the_per_expert_parameters(bundle):
    naive, _, _ = _toy(5)
    patched, _, _ = _stacked_toy(5, bundle)
    experts = patched.layers[0].mlp.experts
    stacked = dict(patched.named_parameters())
    assert experts.gate_up_proj.shape == (5, 22, 19)
    assert experts.down_proj.shape == (5, 19, 11)
    assert not any(".gate_proj." in n or ".up_proj." in n for n in stacked
                   if ".experts." in n)
    assert _per_expert(stacked, 5).keys() == \
        dict(naive.named_parameters()).keys()
    for name, param in _per_expert(stacked, 5).items():
        assert torch.equal(param, dict(naive.named_parameters())[name]), name
    # Patching again keeps the stacked parameters.
    tessel.torch.patch_deepseek_moe(patched, bundle, stack_experts=True)
    assert experts.gate_up_proj is stacked["layers.0.mlp.experts.gate_up_proj"]


def test_a_stacked_expert_is_still_a_module_of_its_own(bundle):
    naive, _, _ = _toy(4)
    patched, _, _ = _stacked_toy(4, bundle)
    x = torch.randn(6, 19)
    expert = patched.layers[1].mlp.experts[3]
    assert torch.equal(expert(x), naive.layers[1].mlp.experts[3](x))
    expert(x).sum().backward()
    grad = patched.layers[1].mlp.experts.gate_up_proj.grad
    assert grad[3].abs().max() > 0
    assert grad[torch.arange(5) != 3].abs().max() == 0


def test_stacked_experts_load_a_per_expert_checkpoint(bundle):
    checkpoint, tokens, targets = _toy(8)
    patched, _, _ = _stacked_toy(9, bundle)
    patched.load_state_dict(checkpoint.state_dict())
    _assert_same_training_step(patched, checkpoint, tokens, targets)
    # And their own state dict, with the stacked keys.
    again, _, _ = _stacked_toy(10, bundle)
    again.load_state_dict(patched.state_dict())
    for name, param in patched.state_dict().items():
        assert torch.equal(param, again.state_dict()[name]), name


def test_stacked_experts_refuse_part_of_a_per_expert_checkpoint(bundle):
    checkpoint, _, _ = _toy(8)
    patched, _, _ = _stacked_toy(9, bundle)
    state = checkpoint.state_dict()
    del state["layers.1.mlp.experts.2.up_proj.weight"]
    with pytest.raises(RuntimeError, match=r"tessel.torch.patch_deepseek_moe"
                       r": the state dict has 14 of the 15 per-expert weights "
                       r"of 'layers.1.mlp.experts.\*'"):
        patched.load_state_dict(state)


@pytest.mark.parametrize("change,message", [
    (lambda moe: moe.experts[1].up_proj.double(),
     r"'layers.0.mlp.experts' mixes torch.float64 on cpu \(requires_grad="
     r"True\) with torch.float32 on cpu \(requires_grad=True\)"),
    (lambda moe: moe.experts[2].down_proj.requires_grad_(False),
     r"'layers.0.mlp.experts' mixes torch.float32 on cpu \(requires_grad="
     r"False\) with torch.float32 on cpu \(requires_grad=True\); "
     r"stack_experts=True needs one dtype, device and requires_grad"),
    (lambda moe: setattr(moe.experts[0], "gate_proj", type(
        "MyLinear", (torch.nn.Linear,), {})(19, 11, bias=False)),
     "'layers.0.mlp.experts.0' has a MyLinear; stack_experts=True takes "
     "plain nn.Linear layers"),
])
def test_stack_experts_refuses(bundle, change, message):
    model, _, _ = _toy(1, num_layers=1)
    change(model.layers[0].mlp)
    with pytest.raises(ValueError, match="tessel.torch.patch_deepseek_moe: " +
                       message):
        tessel.torch.patch_deepseek_moe(model, bundle, stack_experts=True)


def _as_flat_views(model):
    """Each expert's weights replaced by views of one flat parameter per
    MoE block, as FSDP with use_orig_params=True presents them."""
    for block in model.layers:
        linears = [layer for expert in block.mlp.experts
                   for layer in (expert.gate_proj, expert.up_proj,
                                 expert.down_proj)]
        flat = torch.nn.Parameter(torch.cat([l.weight.detach().reshape(-1)
                                             for l in linears]))
        block.mlp.flat = flat
        start = 0
        for layer in linears:
            shape = layer.weight.shape
            del layer.weight
            layer.weight = flat[start:start + shape.numel()].view(shape)
            start += shape.numel()


def test_patched_model_reads_weights_that_are_views(bundle):
    # H = 24, I = 10, E = 4, top-2: every view starts 16-byte aligned.
    naive, tokens, targets = _toy(3, hidden_size=24, moe_intermediate_size=10,
                                  n_routed_experts=4, num_experts_per_tok=2)
    naive = naive.to(torch.bfloat16)
    patched = copy.deepcopy(naive)
    _as_flat_views(naive)
    _as_flat_views(patched)
    tessel.torch.patch_deepseek_moe(patched, bundle)
    loss, grads = _loss_and_grads(patched, tokens, targets)
    ref_loss, ref_grads = _loss_and_grads(naive, tokens, targets)
    assert abs(loss.item() - ref_loss.item()) < 1e-2 * abs(ref_loss.item())
    flat, ref_flat = grads["layers.0.mlp.flat"], ref_grads["layers.0.mlp.flat"]
    assert rel(flat, ref_flat.double()) < 5e-2


def test_patch_finds_nothing_to_patch(bundle):
    with pytest.raises(ValueError, match="no DeepSeek-style MoE module .* "
                       "in Linear"):
        tessel.torch.patch_deepseek_moe(torch.nn.Linear(3, 3), bundle)


@pytest.mark.parametrize("change,message", [
    (lambda moe: setattr(moe.config, "hidden_act", "gelu"),
     "'layers.0.mlp' uses hidden_act 'gelu'; the kernels compute silu"),
    (lambda moe: setattr(moe.experts[1], "up_proj",
                         torch.nn.Linear(19, 11, bias=True)),
     "'layers.0.mlp.experts.1' has a bias"),
    (lambda moe: setattr(moe.experts[2], "down_proj",
                         torch.nn.Linear(12, 19, bias=False)),
     r"'layers.0.mlp.experts.2' has weights \[\(11, 19\), \(11, 19\), "
     r"\(19, 12\)\]"),
    (lambda moe: setattr(moe.experts[0], "gate_proj", torch.nn.Identity()),
     "'layers.0.mlp.experts.0' needs gate_proj, up_proj and down_proj "
     "nn.Linear layers"),
    (lambda moe: delattr(moe, "num_experts_per_tok") or setattr(
        moe, "config", object()),
     "'layers.0.mlp' has no num_experts_per_tok"),
])
def test_patch_rejects_what_the_kernels_cannot_run(bundle, change, message):
    model, _, _ = _toy(1, num_layers=1)
    change(model.layers[0].mlp)
    with pytest.raises(ValueError, match="tessel.torch.patch_deepseek_moe: " +
                       message):
        tessel.torch.patch_deepseek_moe(model, bundle)


def test_patched_gate_must_route_num_experts_per_tok(bundle):
    model, tokens, targets = _toy(2, num_layers=1)
    tessel.torch.patch_deepseek_moe(model, bundle)
    model.layers[0].mlp.gate.top_k = 2
    with pytest.raises(ValueError, match="routed each token to 2 experts, "
                       "but num_experts_per_tok is 3"):
        loss_of(model, tokens, targets)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("kernel-cache")


@pytest.mark.parametrize("form", RUNS)
def test_without_a_bundle_the_kernels_are_compiled_on_miss(cache_dir, form):
    """A shape no bundle has: every kernel of it compiled together into the
    cache on the first miss (one bundle for all forms), each form against
    the loop."""
    dims = dict(experts=3, hidden=16, intermediate=8, topk=2)
    ids, inputs, dout = problem(9, tokens=6, **dims)
    cache = tessel.KernelCache(cache_dir)
    out, grads = RUNS[form](cache, ids, inputs, dout, torch.float32)
    ref, ref_grads = reference(ids, inputs, dout)
    assert rel(out, ref) < 1e-5
    for grad, expected in zip(grads, ref_grads):
        assert rel(grad, expected) < 1e-5
    assert len(list(cache_dir.glob("host-*.tsb"))) == 1


def test_pointer_tables_are_kept_per_weight_set():
    from tessel import moe
    ws = [torch.randn(4, 8) for _ in range(3)]
    table = moe._pointer_tables(ws)
    assert table.tolist() == [w.data_ptr() for w in ws]
    assert moe._pointer_tables(list(ws)) is table
    others = [torch.randn(4, 8) for _ in range(3)]
    other = moe._pointer_tables(others)
    assert other is not table
    assert other.tolist() == [w.data_ptr() for w in others]
