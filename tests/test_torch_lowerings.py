"""Every entry of the torch importer's lowering table against torch eager.

Most lowerings are reached by programs exported through torch.export or compiled through the
backend (tests/test_torch_ops.py, tests/test_torch_ops_more.py). The rest are overloads that
torch's decompositions do not emit today (aliases, Scalar forms, in-place and training forms,
SymInt arithmetic) but that other torch versions and other graph producers do; each gets a
small function calling that exact overload here, traced call by call (make_fx before
dispatch, so nothing is decomposed), run by the backend's importer (`module_from_graph`) and
compared with the function run eagerly.
`test_every_lowering_has_a_case` keeps the two together equal to the table.
Tolerances: specs/tolerances.md (torch frontend).
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import dlvmrt  # noqa: E402
from frontends.torch import import_torch  # noqa: E402
from frontends.torch.aten import LOWERINGS  # noqa: E402
from frontends.torch.backend import module_from_graph  # noqa: E402
from frontends.torch.importer import op_name  # noqa: E402

A = torch.ops.aten


def _read(e):
    """Something of e's shape and dtype computed from it, 0 whatever its values are."""
    return A._to_copy.default(A.ne.Tensor(e, e), dtype=e.dtype) * 0


def r(*shape, lo=-2.0, hi=2.0):
    return torch.rand(*shape) * (hi - lo) + lo


torch.manual_seed(0)
X, Y = r(3, 4), r(3, 4)
IMG, VOL = r(2, 3, 4, 4), r(1, 2, 4, 4, 4)
B = r(3, 4) > 0
IDX = torch.tensor([2, 0, 2])

DIRECT = {
    "aten._assert_async.msg": (lambda x: (A._assert_async.msg(x.sum() > -1e9, "m"), x + 1)[1],
                               [X]),
    "aten._native_batch_norm_legit.default": (
        lambda x, w, b, m, v: A._native_batch_norm_legit.default(x, w, b, m, v, True, 0.1,
                                                                  1e-5)[0],
        [IMG, r(3), r(3), torch.zeros(3), torch.ones(3)]),
    "aten._native_batch_norm_legit_functional.default": (
        lambda x, w, b, m, v: A._native_batch_norm_legit_functional.default(
            x, w, b, m, v, True, 0.1, 1e-5)[0], [IMG, r(3), r(3), torch.zeros(3), torch.ones(3)]),
    "aten._unsafe_index_put.default": (
        lambda x, i, v: A._unsafe_index_put.default(x, [i], v, True),
        [X, torch.tensor([0, 2]), r(2, 4)]),
    "aten.index_put_.default": (
        lambda x, i, v: A.index_put_.default(x.clone(), [i], v), [X, torch.tensor([0, 2]),
                                                                  r(2, 4)]),
    "aten._unsafe_view.default": (lambda x: A._unsafe_view.default(x, [4, 3]), [X]),
    "aten.adaptive_avg_pool2d.default": (lambda x: A.adaptive_avg_pool2d.default(x, [2, 2]),
                                         [IMG]),
    "aten.add.Scalar": (lambda x: A.add.Scalar(x, 2.5), [X]),
    "aten.sub.Scalar": (lambda x: A.sub.Scalar(x, 2.5), [X]),
    "aten.rsub.Scalar": (lambda x: A.rsub.Scalar(x, 2.5), [X]),
    "aten.rsub.Tensor": (lambda x, y: A.rsub.Tensor(x, y, alpha=2), [X, Y]),
    "aten.mul.Scalar": (lambda x: A.mul.Scalar(x, 2.5), [X]),
    "aten.div.Scalar": (lambda x: A.div.Scalar(x, 2.5), [X]),
    "aten.div.Scalar_mode": (lambda x: A.div.Scalar_mode(x, 0.7, rounding_mode="floor"), [X]),
    # (torch.compile's graphs under dynamic=True carry these two)
    "aten.true_divide.Tensor": (lambda x, y: A.true_divide.Tensor(x, y), [X, r(3, 4, lo=0.5)]),
    "prims.convert_element_type.default": (
        lambda x: torch.ops.prims.convert_element_type.default(x, torch.float64), [X]),
    "aten.pow.Scalar": (lambda x: A.pow.Scalar(2.0, x), [X]),
    "aten.remainder.Tensor": (lambda x, y: A.remainder.Tensor(x, y), [X, r(3, 4, lo=0.5)]),
    "aten.alias.default": (lambda x: A.alias.default(x), [X]),
    "aten.contiguous.default": (lambda x: A.contiguous.default(x), [X]),
    "aten.detach.default": (lambda x: A.detach.default(x), [X]),
    "aten.lift_fresh_copy.default": (lambda x: A.lift_fresh_copy.default(x), [X]),
    "aten.all.default": (lambda b: A.all.default(b), [B]),
    "aten.all.dim": (lambda b: A.all.dim(b, 1), [B]),
    "aten.any.default": (lambda b: A.any.default(b), [B]),
    "aten.any.dims": (lambda b: A.any.dims(b, [0, 1], True), [B]),
    "aten.any.dim": (lambda b: A.any.dim(b, 0), [B]),
    "aten.arange.default": (lambda x: A.arange.default(5, dtype=torch.float32) + x[0, 0], [X]),
    "aten.arange.start": (lambda x: A.arange.start(2, 7, dtype=torch.float32) + x[0, 0], [X]),
    "aten.avg_pool3d.default": (lambda v: A.avg_pool3d.default(v, [2, 2, 2]), [VOL]),
    "aten.max_pool3d_with_indices.default": (
        lambda v: A.max_pool3d_with_indices.default(v, [2, 2, 2], [2, 2, 2])[0], [VOL]),
    "aten.clamp_max.default": (lambda x: A.clamp_max.default(x, 0.3), [X]),
    "aten.clamp_min.default": (lambda x: A.clamp_min.default(x, 0.3), [X]),
    "aten.concat.default": (lambda x, y: A.concat.default([x, y], 1), [X, Y]),
    "aten.copy_.default": (lambda x, y: A.copy_.default(x.clone(), y[:1]), [X, Y]),
    "aten.dropout.default": (lambda x: A.dropout.default(x, 0.5, False), [X]),
    "aten.native_dropout.default": (lambda x: A.native_dropout.default(x, 0.5, False)[0], [X]),
    # (an empty tensor's values are whatever the memory held, NaN and inf too: read only as
    # "is it NaN", times 0)
    "aten.empty_like.default": (lambda x: _read(A.empty_like.default(x)) + x, [X]),
    "aten.empty_strided.default": (lambda x: _read(A.empty_strided.default([3, 4], [4, 1])) + x,
                                   [X]),
    "aten.new_empty_strided.default": (
        lambda x: _read(A.new_empty_strided.default(x, [3, 4], [4, 1])) + x, [X]),
    "aten.new_empty.default": (lambda x: _read(A.new_empty.default(x, [3, 4])) + x, [X]),
    "aten.new_full.default": (lambda x: A.new_full.default(x, [2, 2], 3.5), [X]),
    "aten.new_ones.default": (lambda x: A.new_ones.default(x, [2, 2]), [X]),
    "aten.new_zeros.default": (lambda x: A.new_zeros.default(x, [2, 2]), [X]),
    "aten.ones.default": (lambda x: A.ones.default([2, 3]) + x[0, 0], [X]),
    "aten.zeros.default": (lambda x: A.zeros.default([2, 3]) + x[0, 0], [X]),
    "aten.ones_like.default": (lambda x: A.ones_like.default(x), [X]),
    "aten.zeros_like.default": (lambda x: A.zeros_like.default(x), [X]),
    "aten.ge.Tensor": (lambda x, y: A.ge.Tensor(x, y), [X, Y]),
    "aten.gt.Tensor": (lambda x, y: A.gt.Tensor(x, y), [X, Y]),
    "aten.le.Tensor": (lambda x, y: A.le.Tensor(x, y), [X, Y]),
    "aten.ne.Tensor": (lambda x, y: A.ne.Tensor(x, y), [X, Y]),
    "aten.lt.Scalar": (lambda x: A.lt.Scalar(x, 0.1), [X]),
    "aten.logical_and.default": (lambda a, b: A.logical_and.default(a, b), [B, ~B]),
    "aten.logical_or.default": (lambda a, b: A.logical_or.default(a, b), [B, X > 1]),
    "aten.logical_xor.default": (lambda a, b: A.logical_xor.default(a, b), [B, X > 1]),
    "aten.hardsigmoid.default": (lambda x: A.hardsigmoid.default(x), [r(3, 4, lo=-5, hi=5)]),
    "aten.hardswish.default": (lambda x: A.hardswish.default(x), [r(3, 4, lo=-5, hi=5)]),
    "aten.silu.default": (lambda x: A.silu.default(x), [X]),
    "aten.isneginf.default": (lambda x: A.isneginf.default(x.log()), [X]),
    "aten.isposinf.default": (lambda x: A.isposinf.default(1 / (x * 0)), [X]),
    "aten.matmul.default": (lambda x, y: A.matmul.default(x, y), [X, r(4, 5)]),
    "aten.reshape.default": (lambda x: A.reshape.default(x, [2, 6]), [X]),
    "aten.t.default": (lambda x: A.t.default(x), [X]),
    "aten.transpose.int": (lambda x: A.transpose.int(x, 0, 1), [X]),
    "aten.split.Tensor": (lambda x: A.split.Tensor(x, 3, 1), [X]),
    "aten.squeeze.default": (lambda x: A.squeeze.default(x), [r(3, 1, 4)]),
    "aten.squeeze.dim": (lambda x: A.squeeze.dim(x, 1), [r(3, 1, 4)]),
    "aten.sum.default": (lambda x: A.sum.default(x), [X]),
    "aten.prod.default": (lambda x: A.prod.default(x), [X]),
    "aten.var.dim": (lambda x: A.var.dim(x, [1], True), [X]),
    "aten.var_mean.dim": (lambda x: A.var_mean.dim(x, [1], False), [X]),
    "aten.nanmedian.dim": None,         # rejected: not supported (a clear import error)
    "aten.median.default": (lambda x: A.median.default(x), [X]),
    "aten.tril.default": (lambda x: A.tril.default(x, 1), [X]),
    "aten.triu.default": (lambda x: A.triu.default(x, -1), [X]),
    "aten.upsample_bilinear2d.default": (
        lambda x: A.upsample_bilinear2d.default(x, [6, 7], False), [IMG]),
    "aten.upsample_bilinear2d.vec": (
        lambda x: A.upsample_bilinear2d.vec(x, [6, 7], True, None), [IMG]),
    "aten.upsample_nearest2d.default": (lambda x: A.upsample_nearest2d.default(x, [8, 8]),
                                        [IMG]),
    "aten.where.Scalar": (lambda b: A.where.Scalar(b, 1.5, -2.0), [B]),
    "aten.where.ScalarOther": (lambda b, x: A.where.ScalarOther(b, x, -2.0), [B, X]),
    "aten.where.ScalarSelf": (lambda b, x: A.where.ScalarSelf(b, 1.5, x), [B, X]),
    "aten.scatter.reduce": (
        lambda x, i, s: A.scatter.reduce(x, 1, i, s, reduce="add"),
        [X, torch.tensor([[0, 1], [1, 1], [3, 0]]), r(3, 2)]),
    "aten.scatter.value_reduce": (
        lambda x, i: A.scatter.value_reduce(x, 1, i, 2.0, reduce="multiply"),
        [X, torch.tensor([[0, 1], [1, 1], [3, 0]])]),
    "aten.sort.stable": (lambda x: A.sort.stable(x, stable=True, dim=1, descending=True), [X]),
    "aten.rrelu_with_noise.default": (
        lambda x: A.rrelu_with_noise.default(x, torch.zeros(3, 4), 0.1, 0.3, False), [X]),
    "aten._embedding_bag.default": (
        lambda w, i, o: A._embedding_bag.default(w, i, o, False, 1)[0],
        [r(10, 4), torch.tensor([1, 2, 3, 4, 5]), torch.tensor([0, 2])]),
    "aten._embedding_bag_forward_only.default": (
        lambda w, i, o: A._embedding_bag_forward_only.default(w, i, o, False, 2)[0],
        [r(10, 4), torch.tensor([1, 2, 3, 4, 5]), torch.tensor([0, 2])]),
    "aten.index_select.default": (lambda x: A.index_select.default(x, 1, IDX), [X]),
    # torch's fused inference kernels (nn.MultiheadAttention's and nn.TransformerEncoderLayer's
    # fast paths): self-attention with head-averaged weights and a key padding mask (type 1),
    # distinct queries and keys with a bool [L, S] mask (type 0), an encoder layer with a
    # causal mask
    "aten._native_multi_head_attention.default": (
        lambda x, wq, bq, wo, bo, pad: A._native_multi_head_attention.default(
            x, x, x, 16, 4, wq, bq, wo, bo, pad, True, True, 1),
        [r(2, 5, 16), r(48, 16, lo=-0.3, hi=0.3), r(48), r(16, 16, lo=-0.3, hi=0.3), r(16),
         torch.tensor([[False] * 4 + [True], [False] * 5])]),
    "aten._native_multi_head_attention.cross": (
        lambda q, kv, wq, bq, wo, bo, m: A._native_multi_head_attention.default(
            q, kv, kv, 16, 2, wq, bq, wo, bo, m, False, True, 0)[0],
        [r(2, 5, 16), r(2, 5, 16), r(48, 16, lo=-0.3, hi=0.3), r(48),
         r(16, 16, lo=-0.3, hi=0.3), r(16), r(5, 5) > 1.0]),
    "aten._transformer_encoder_layer_fwd.default": (
        lambda x, wq, bq, wo, bo, l1, l2, f1, g1, f2, g2, m: A._transformer_encoder_layer_fwd(
            x, 16, 4, wq, bq, wo, bo, True, True, 1e-5, l1, bq[:16], l2, bo, f1, g1, f2, g2, m,
            0),
        [r(2, 5, 16), r(48, 16, lo=-0.3, hi=0.3), r(48), r(16, 16, lo=-0.3, hi=0.3), r(16),
         r(16), r(16), r(32, 16, lo=-0.3, hi=0.3), r(32), r(16, 32, lo=-0.3, hi=0.3), r(16),
         torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)]),
}


@pytest.mark.parametrize("name", sorted(n for n, c in DIRECT.items() if c is not None))
def test_lowering_against_eager(name):
    fn, inputs = DIRECT[name]
    run_direct(fn, inputs, name if name in LOWERINGS else name.rsplit(".", 1)[0] + ".default")


def run_direct(fn, inputs, name):
    """`fn` on placeholders, traced call by call (each ATen overload it calls is one node)."""
    from torch.fx.experimental.proxy_tensor import make_fx
    gm = make_fx(fn, tracing_mode="real", pre_dispatch=True)(*inputs)
    called = {op_name(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    assert name in called, f"the case does not call {name}: {sorted(called)}"
    module, tensor_inputs, spec = module_from_graph(gm)
    got = dlvmrt.VM(module).run("main", *[inputs[i].numpy() for i in tensor_inputs])
    with torch.no_grad():
        want = fn(*inputs)
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    want = [w for w in want if isinstance(w, torch.Tensor)]
    assert len(got) >= 1
    for g, w in zip(got, want):
        w = w.numpy()
        assert g.shape == w.shape and g.dtype == w.dtype, (g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


class SizeArithmetic(torch.nn.Module):
    """Sizes computed from a dynamic batch (SymInt nodes: sym_size, *, +, -, %, /, sym_max,
    sym_float), which the importer evaluates by reading torch's own symbolic values."""

    def forward(self, x):
        n = x.size(0)
        a = x.reshape(n * 2, -1).sum()
        b = x.new_zeros(n + 1, 2).sum()
        c = x.reshape(-1)[: torch.sym_max(n % 2, 1)].sum()
        d = torch.full((1,), torch.sym_float(n) / 2).sum()
        e = x.reshape(-1)[: x.numel() - 1].sum()
        return a + b + c + d + e


def test_size_arithmetic_over_a_dynamic_batch():
    from frontends.torch import import_torch
    from frontends.torch.importer import _decompositions
    m = SizeArithmetic()
    ep = torch.export.export(m, (r(6, 4),),
                             dynamic_shapes=({0: torch.export.Dim("b", min=2, max=64)},))
    SIZE_OPS.update(op_name(n.target) for n in ep.run_decompositions(_decompositions()).graph.nodes
                    if n.op == "call_function")
    vm = dlvmrt.VM(import_torch(ep))
    for n in (3, 8):
        x = r(n, 4)
        (got,) = vm.run("main", x.numpy())
        np.testing.assert_allclose(got, m(x).numpy(), rtol=1e-5, atol=1e-5)


class PatchEmbedding(torch.nn.Module):
    """PatchTST's patching: unfold, then a reshape that merges the batch with the channels
    (a size, 3 * batch, that no input dim names) before a Linear, whose bias torch.export
    expands to that size."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(4, 8)

    def forward(self, x):                   # [B, 3, 20]
        p = x.unfold(2, 4, 2)               # [B, 3, 9, 4]
        return self.embed(p.reshape(x.shape[0] * 3, 9, 4))


def test_unfold_and_an_expand_to_a_derived_size():
    ep = torch.export.export(PatchEmbedding(), (r(2, 3, 20),),
                             dynamic_shapes=({0: torch.export.Dim("b", min=1, max=64)},))
    vm = dlvmrt.VM(import_torch(ep))
    m = PatchEmbedding()
    m.load_state_dict(ep.module().state_dict())
    for n in (1, 5):
        x = r(n, 3, 20)
        (got,) = vm.run("main", x.numpy())
        with torch.no_grad():
            np.testing.assert_allclose(got, m(x).numpy(), rtol=1e-5, atol=1e-5)


def test_unfold_of_a_symbolic_dim():
    # the windows' index table made at run time: (length - size) // step + 1 windows
    class Windows(torch.nn.Module):
        def forward(self, x):
            return x.unfold(0, 3, 2) * 2, x.unfold(1, 2, 1)
    ep = torch.export.export(Windows(), (r(6, 3),),
                             dynamic_shapes=({0: torch.export.Dim("b", min=5, max=64)},))
    vm = dlvmrt.VM(import_torch(ep))
    for n in (5, 8, 9):
        x = r(n, 3)
        for g, w in zip(vm.run("main", x.numpy()), Windows()(x)):
            np.testing.assert_array_equal(g, w.numpy())


class PoolUnpool(torch.nn.Module):
    """SegNet's encoder-decoder step: max pool indices (padded, ceil mode, dilated) and
    max_unpool2d, which torch decomposes to an arange over batch x channels and an index_put
    of the flattened planes (sizes no input dim names under a dynamic batch)."""

    def forward(self, x):                   # [B, 3, 9, 10]
        y, i = torch.nn.functional.max_pool2d(x, 2, return_indices=True)
        up = torch.nn.functional.max_unpool2d(y, i, 2, output_size=x.shape[2:])
        z, j = torch.nn.functional.max_pool2d(x, 3, 2, padding=1, ceil_mode=True,
                                              return_indices=True)
        w, k = torch.nn.functional.max_pool2d(x, 2, 1, dilation=2, return_indices=True)
        return up, j, z, k, w


def test_max_pool_indices_and_unpooling_over_a_dynamic_batch():
    m = PoolUnpool()
    ep = torch.export.export(m, (r(2, 3, 9, 10),),
                             dynamic_shapes=({0: torch.export.Dim("b", min=1, max=64)},))
    vm = dlvmrt.VM(import_torch(ep))
    for n in (1, 3):
        x = r(n, 3, 9, 10)
        x[0, 0, :3, :3] = -torch.inf        # windows whose input values are all the lowest
        got = vm.run("main", x.numpy())
        for g, w in zip(got, m(x)):
            np.testing.assert_array_equal(g, w.numpy())


SIZE_OPS: set[str] = set()
# draws whose numbers are not torch's (dlvm's generator is its own): tests/test_random_ops.py
# runs each of them and checks its distribution
RANDOM_LOWERINGS = {"aten.rand.default", "aten.rand_like.default", "aten.randn.default",
                    "aten.randn_like.default", "aten.bernoulli.default", "aten.bernoulli.p"}


def test_every_lowering_has_a_case():
    """Every name in the table is reached by an exported program or a direct case here; the
    SymInt operators (torch's comparisons and arithmetic of sizes) share lowerings that read
    torch's own value, so a name of theirs none of the programs emits is covered by the others."""
    import test_torch_ops
    import test_torch_ops_more
    if not test_torch_ops.ONE_PROGRAM_RAN:       # (this file run without them)
        test_torch_ops.test_every_op_in_one_program()
    if not test_torch_ops_more.ONE_PROGRAM_RAN:
        test_torch_ops_more.test_every_case_in_one_program()
    if not SIZE_OPS:
        test_size_arithmetic_over_a_dynamic_batch()
    reached = test_torch_ops.SEEN | SIZE_OPS | {n for n, c in DIRECT.items() if c is not None} | \
        RANDOM_LOWERINGS
    reached &= set(LOWERINGS)        # (a second case of one op has a name of its own)
    rejected = {n for n, c in DIRECT.items() if c is None}
    sizes = {LOWERINGS[n] for n in ("aten.sym_size.int", "_operator.ge",
                                    "aten._assert_scalar.default")}
    missing = sorted(n for n in LOWERINGS
                     if n not in reached | rejected and LOWERINGS[n] not in sizes)
    assert not missing, missing
    assert all(any(LOWERINGS[n] is fn for n in reached) for fn in sizes)
