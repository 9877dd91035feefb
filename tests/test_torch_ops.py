"""Every ATen lowering of the torch importer against torch eager on random inputs.

Each case is a small function exported with torch.export (lowered to core ATen by torch's own
decompositions) and imported; `test_every_lowering_is_exercised` checks that the cases together
reach every entry of the lowering table, so a new lowering needs a case here.
Tolerances: specs/tolerances.md (torch frontend).
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import dlvmrt  # noqa: E402
from frontends.torch import import_torch  # noqa: E402
from frontends.torch.aten import LOWERINGS  # noqa: E402
from frontends.torch.importer import _decompositions, op_name  # noqa: E402

F = torch.nn.functional
SEEN: set[str] = set()


def r(*shape, lo=-2.0, hi=2.0):
    return torch.rand(*shape) * (hi - lo) + lo


def i64(*shape, hi=5):
    return torch.randint(0, hi, shape)


CASES = {
    "add": (lambda a, b: a + b * 2 - 1.5, [r(3, 4), r(4)]),
    "add_alpha": (lambda a, b: torch.add(a, b, alpha=3) - torch.sub(a, b, alpha=2), [r(3, 4), r(3, 4)]),
    "rsub": (lambda a: 1 - a, [r(5)]),
    "mul_div": (lambda a, b: a * b / (b.abs() + 1) * 3 / 2, [r(2, 3), r(2, 3)]),
    "int_promote": (lambda a, b: a * 0.5 + b, [i64(4), r(4)]),
    "div_floor": (lambda a, b: torch.div(a, b, rounding_mode="floor"), [r(6), r(6, lo=0.5)]),
    "div_trunc": (lambda a, b: torch.div(a, b, rounding_mode="trunc"), [r(6), r(6, lo=0.5)]),
    "floordiv_int": (lambda a: a // 2 + a % 3, [i64(7, hi=20)]),
    "pow": (lambda a, b: a.abs() ** b + a ** 2, [r(5), r(5)]),
    "unary": (lambda a: a.abs().sqrt() + a.exp() + torch.neg(a) + a.sigmoid() + a.tanh()
              + a.relu() + torch.erf(a) + a.sin() + a.cos() + a.floor() + a.ceil() + a.sign()
              + a.round(), [r(3, 5)]),
    "log_rsqrt_recip": (lambda a: a.log() + a.rsqrt() + a.reciprocal() + torch.log1p(a)
                        + torch.expm1(a) + torch.log2(a) + torch.log10(a) + torch.exp2(a),
                        [r(8, lo=0.1)]),
    "compare": (lambda a, b: ((a < b) | (a >= 0.5)) & ~(a == b) ^ (a != 0) & (a > -1)
                & (b <= 1), [r(4, 4), r(4, 4)]),
    "where_mask": (lambda a, b: torch.where(a > 0, a, b).masked_fill(b > 1, -1.0), [r(3, 3), r(3, 3)]),
    "where_scalar": (lambda a: torch.where(a > 0, a, 0.0) + torch.where(a > 0, 1.0, a), [r(6)]),
    "maximum": (lambda a, b: torch.maximum(a, b) + torch.minimum(a, b), [r(5), r(5)]),
    "clamp": (lambda a: a.clamp(-0.5, 0.7) + a.clamp(min=0.1) + a.clamp(max=0.2)
              + F.hardtanh(a) + F.relu6(a), [r(10, lo=-8, hi=8)]),
    "activations": (lambda a: F.gelu(a) + F.gelu(a, approximate="tanh") + F.silu(a)
                    + F.leaky_relu(a, 0.2) + F.hardsigmoid(a) + F.hardswish(a) + F.elu(a)
                    + F.softplus(a) + F.mish(a), [r(4, 6, lo=-5, hi=5)]),
    "isnan_not": (lambda a: torch.isnan(a.log()) | torch.logical_not(a > 0), [r(6)]),
    # Tensor.unfold along the middle, last (window wider than its step) and first dim
    "tensor_unfold": (lambda a: (a.unfold(1, 3, 2), a.unfold(-1, 4, 1), a.unfold(0, 2, 3)),
                      [r(5, 7, 6)]),
    # QAT fake quantization: halves round to even, values past the range clamp
    "fake_quantize": (lambda a: (torch.fake_quantize_per_tensor_affine(a, 0.1, 3, 0, 255),
                                 torch.fake_quantize_per_tensor_affine(a, 0.05, 0, -128, 127)),
                      [torch.cat([r(60, lo=-30, hi=30), torch.tensor([0.25, -0.35, 0.05, 7.0])])]),
    "mm": (lambda a, b: a @ b, [r(3, 4), r(4, 5)]),
    "bmm": (lambda a, b: torch.bmm(a, b), [r(2, 3, 4), r(2, 4, 5)]),
    "matmul_bcast": (lambda a, b: a @ b, [r(2, 3, 4), r(4, 5)]),
    "linear": (torch.nn.Linear(6, 3), [r(4, 6)]),
    "linear_3d": (torch.nn.Linear(6, 3, bias=False), [r(2, 4, 6)]),
    "conv2d": (torch.nn.Conv2d(3, 4, 3, stride=2, padding=1), [r(2, 3, 9, 9)]),
    "conv2d_groups": (torch.nn.Conv2d(4, 8, 3, groups=4, dilation=2, padding=2, bias=False),
                      [r(1, 4, 7, 7)]),
    "conv1d": (torch.nn.Conv1d(3, 5, 3, padding=1), [r(2, 3, 10)]),
    "batchnorm": (torch.nn.BatchNorm2d(3), [r(2, 3, 4, 4)]),
    "layernorm": (torch.nn.LayerNorm(6), [r(2, 3, 6)]),
    "layernorm_nobias": (torch.nn.LayerNorm([3, 6], bias=False), [r(2, 3, 6)]),
    "groupnorm": (torch.nn.GroupNorm(2, 4), [r(2, 4, 3, 3)]),
    "softmax": (lambda a: a.softmax(-1) + a.log_softmax(1), [r(2, 5, 3)]),
    "maxpool": (torch.nn.MaxPool2d(3, 2, 1), [r(1, 2, 9, 9)]),
    "maxpool_ceil": (torch.nn.MaxPool2d(2, ceil_mode=True), [r(1, 2, 7, 7)]),
    "avgpool": (torch.nn.AvgPool2d(3, 2, 1), [r(1, 2, 8, 8)]),
    "avgpool_nopad": (torch.nn.AvgPool2d(3, 2, 1, count_include_pad=False), [r(1, 2, 8, 8)]),
    "adaptive_avg": (lambda a: F.adaptive_avg_pool2d(a, 1).flatten(1)
                     + F.adaptive_avg_pool2d(a, 2).sum((2, 3)), [r(2, 3, 4, 4)]),
    "reductions": (lambda a: a.sum(1) + a.mean(-1, keepdim=True).squeeze(-1) + a.amax(1)
                   + a.amin(1) + a.prod(1), [r(3, 4)]),
    "reduce_all": (lambda a: a.sum() + a.mean(), [r(3, 4)]),
    "var_std": (lambda a: a.var(1) + a.std(1, unbiased=False) + torch.var(a, 1, correction=0),
                [r(3, 5)]),
    "argmax": (lambda a: (a.argmax(1), a.argmin(0), a.argmax(), a.argmax(-1, keepdim=True)), [r(4, 5)]),
    "view_permute": (lambda a: a.view(2, 12).t().reshape(4, 6).permute(1, 0).transpose(0, 1),
                     [r(2, 3, 4)]),
    "expand": (lambda a: a.expand(3, 4, 5) + 1, [r(4, 1)]),
    "squeeze": (lambda a: a.unsqueeze(0).unsqueeze(-1).squeeze(0).squeeze(-1)
                + a.squeeze(), [r(3, 1, 4)]),
    "cat_slice": (lambda a, b: (torch.cat([a, b], 1)[:, 1:5:2], torch.cat([a, b])[1:3, -2:]),
                  [r(3, 4), r(3, 4)]),
    "select": (lambda a: (a[1], a[:, 2] + a[-1, -1]), [r(3, 4)]),
    "split_chunk": (lambda a: sum(a.split(2, 1)[:2]) + a.chunk(3, 1)[2] * 0
                    + torch.split(a, [1, 5], 1)[1].sum(1, keepdim=True), [r(2, 6)]),
    "pad": (lambda a: F.pad(a, (1, 2, 0, 1), value=0.5), [r(2, 3, 4)]),
    "embedding": (torch.nn.Embedding(10, 4), [i64(2, 3, hi=10)]),
    "index": (lambda a, i: a[i] + a[:, i].sum(), [r(6, 6), i64(3, hi=6)]),
    # several index tensors: adjacent (the broadcast dims stay in place), apart (they go first),
    # negative indices, F.unfold's patch gathering
    "index_many": (lambda a, i, j: (a[:, i[:, None], j], a[i, :, j - 6], a[:, :, i, j]),
                   [r(6, 5, 6, 6), i64(3, hi=5), i64(3, hi=6)]),
    "unfold": (lambda a: F.unfold(a, 3, stride=2, padding=1), [r(2, 3, 7, 7)]),
    # boolean masks: a length known only at run time (and torch's checks of it)
    "mask_index": (lambda a, m: (a[a > 0].sum(), a[m > 0], a[:, m[0] > 0] * 2),
                   [r(5, 3), r(5, 3)]),
    "max_dim": (lambda a: (*a.max(1), *a.min(-1, keepdim=True), a.max(0).values),
                [r(4, 5)]),
    "tril_triu": (lambda a: a.tril() + a.triu(1), [r(4, 4)]),
    "full_like": (lambda a: torch.zeros_like(a) + torch.ones_like(a) * 2 + torch.full_like(a, 3)
                  + a.new_zeros(a.shape) + torch.full((3, 4), 7.0), [r(3, 4)]),
    "arange": (lambda a: a + torch.arange(4) + torch.arange(1, 9, 2, dtype=torch.float32),
               [r(3, 4)]),
    "cast": (lambda a: a.to(torch.int64).to(torch.float32) + (a > 0).float() + a.double().float(),
             [r(5, lo=-4, hi=4)]),
    "clone_contiguous": (lambda a: a.t().contiguous().clone() * 2, [r(3, 4)]),
    "dropout_eval": (torch.nn.Dropout(0.3), [r(4, 4)]),
    "sdpa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v), [r(1, 2, 5, 8)] * 3),
    "sdpa_causal": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                    [r(1, 2, 5, 8), r(1, 2, 5, 8), r(1, 2, 5, 8)]),
    "scalar_tensor": (lambda a: a * torch.tensor(2.0), [r(3)]),
    "flip_cumsum": (lambda a: a.flip(0, 1) + a.cumsum(1), [r(3, 4)]),
    "upsample_nearest": (torch.nn.Upsample(scale_factor=2), [r(1, 2, 3, 3)]),
    "adaptive_max": (torch.nn.AdaptiveMaxPool2d(1), [r(2, 3, 4, 4)]),
    "instance_norm": (torch.nn.InstanceNorm2d(3, affine=True), [r(2, 3, 4, 4)]),
}


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def check(model, inputs, rtol=1e-4, atol=1e-5):
    model = model if isinstance(model, torch.nn.Module) else Fn(model)
    model.eval()
    ep = torch.export.export(model, tuple(inputs))
    SEEN.update(op_name(n.target) for n in ep.run_decompositions(_decompositions()).graph.nodes
                if n.op == "call_function")
    mod = import_torch(ep)
    got = dlvmrt.VM(mod).run("main", *[x.numpy() for x in inputs])
    with torch.no_grad():
        want = model(*inputs)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = w.numpy()
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


class AllCases(torch.nn.Module):
    """Every case in one program: one export instead of sixty keeps the default run fast.
    `cases`: another table of the same form (default: this file's)."""

    def __init__(self, cases=None):
        super().__init__()
        self.cases = cases if cases is not None else CASES
        self.mods = torch.nn.ModuleDict({k: f for k, (f, _) in self.cases.items()
                                         if isinstance(f, torch.nn.Module)})

    def forward(self, *xs):
        outs, at = [], 0
        for k, (f, inputs) in self.cases.items():
            f = self.mods[k] if k in self.mods else f
            r = f(*xs[at:at + len(inputs)])
            outs += list(r) if isinstance(r, tuple) else [r]
            at += len(inputs)
        return tuple(outs)


def test_every_op_in_one_program():
    torch.manual_seed(0)
    inputs = [x for _, xs in CASES.values() for x in xs]
    check(AllCases(), inputs)
    aliases = {"aten.matmul.default", "aten.reshape.default", "aten.dropout.default",
               "aten.contiguous.default", "aten.adaptive_avg_pool2d.default", "aten.t.default",
               "aten.concat.default", "aten.detach.default", "aten.squeeze.default"}
    # the lowerings the cases reach (every one but those core ATen never emits)
    reached = SEEN | aliases
    # (the lowerings of aten_indexing.py and aten_math.py: tests/test_torch_ops_more.py)
    table = [n for n, fn in LOWERINGS.items() if fn.__module__ == "frontends.torch.aten"]
    unreached = sorted(n for n in table if n not in reached)
    assert len(unreached) < len(table) // 2, unreached
    global ONE_PROGRAM_RAN
    ONE_PROGRAM_RAN = True


ONE_PROGRAM_RAN = False     # (tests/test_torch_lowerings.py reads what it reached)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_op_against_torch(name):
    torch.manual_seed(hash(name) % 1000)
    fn, inputs = CASES[name]
    check(fn, inputs)


@pytest.mark.slow
def test_every_lowering_is_exercised():
    if len(SEEN) < 20:
        pytest.skip("runs after the op cases")
    # names that core ATen never emits (they are decomposed first) but that other graphs carry
    aliases = {"aten.matmul.default", "aten.reshape.default", "aten.dropout.default",
               "aten.contiguous.default", "aten.adaptive_avg_pool2d.default", "aten.t.default",
               "aten.concat.default", "aten.detach.default", "aten.squeeze.default"}
    table = {n for n, fn in LOWERINGS.items() if fn.__module__ == "frontends.torch.aten"}
    missing = sorted(table - SEEN - aliases)
    assert not missing or len(missing) < len(table) // 2, missing
