"""Reductions, row-wise kernels (softmax, layer norm written with reductions, and the composite
ops through their decomposition), matmul epilogues, and splitting rows across threads."""
from __future__ import annotations

import numpy as np
import pytest

from isa.builder import ModuleBuilder
from isa.ops import OPS
from jit import Jit
from jit.testing import assert_matches, reference_run, run_with_jit


@pytest.fixture(scope="module")
def jit(tmp_path_factory):
    # threshold 0: every kernel with 2+ rows is split across 2 threads, so splitting is tested
    return Jit(cache_dir=str(tmp_path_factory.mktemp("jitcache")), threads=2, parallel_threshold_us=0)


def compare(jit, m, args, tol_op="programs", expect_regions=1):
    got, runners = run_with_jit(m, "main", args, jit)
    assert len(runners) == expect_regions
    for r in runners:
        assert r.compiled_calls == 1, r.describe()
    ref = reference_run(m, "main", args)
    for g, r in zip(got, ref):
        assert_matches(g, r, tol_op)
    return runners


@pytest.mark.parametrize("op", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"])
@pytest.mark.parametrize("dtype", ["f32", "f64", "i32"])
def test_row_reductions(jit, op, dtype):
    if dtype == "i32" and op == "reduce_mean":
        pytest.skip("reduce_mean is float only")
    mb = ModuleBuilder("r")
    f = mb.function("main", [("x", f"{dtype}[N, 3, 40]")], [f"{dtype}[N, 3, 1]"])
    x = f.arg("x")
    y = getattr(f, op)(f.mul(x, x), axes=[2], keepdims=True)
    f.ret(f.add(y, 1))
    rng = np.random.default_rng(0)
    np_dtype = {"f32": np.float32, "f64": np.float64, "i32": np.int32}[dtype]
    x = (rng.standard_normal((5, 3, 40)) * (0.5 if op == "reduce_prod" else 3)).astype(np_dtype)
    x.flat[7] = np.nan if dtype != "i32" and op == "reduce_max" else x.flat[7]
    compare(jit, mb.finish(), [x], op)


def test_full_reduction_and_dropped_dims(jit):
    mb = ModuleBuilder("r")
    f = mb.function("main", [("x", "f64[N, 16]")], ["f64[]", "f64[N]"])
    x = f.arg("x")
    total = f.reduce_sum(f.exp(x))
    rows = f.reduce_max(f.neg(x), axes=[-1])
    f.ret(total, rows)
    x = np.random.default_rng(1).standard_normal((9, 16))
    compare(jit, mb.finish(), [x], "reduce_sum", expect_regions=2)


def softmax_layernorm_module():
    mb = ModuleBuilder("sl")
    f = mb.function("main", [("x", "f32[N, D]"), ("g", "f32[D]"), ("b", "f32[D]")],
                    ["f32[N, D]", "f32[N, D]"])
    x, g, b = f.args()
    m = f.reduce_max(x, axes=[-1], keepdims=True)
    e = f.exp(f.sub(x, m))
    s = f.reduce_sum(e, axes=[-1], keepdims=True)
    sm = f.div(e, s)
    f.transpose(sm, into="unfusible")           # separates the two regions
    mu = f.reduce_mean(x, axes=[1], keepdims=True)
    xc = f.sub(x, mu)
    v = f.reduce_mean(f.mul(xc, xc), axes=[1], keepdims=True)
    y = f.add(f.mul(f.mul(xc, f.rsqrt(f.add(v, 1e-5))), g), b)
    f.ret(sm, y)
    return mb.finish()


def test_softmax_and_layernorm_written_with_reductions(jit):
    rng = np.random.default_rng(2)
    args = [(rng.standard_normal((33, 70)) * 5).astype(np.float32),
            rng.standard_normal(70).astype(np.float32), rng.standard_normal(70).astype(np.float32)]
    runners = compare(jit, softmax_layernorm_module(), args, "softmax", expect_regions=2)
    assert all(r.describe()["threads"] == 2 for r in runners)
    assert "reduce_max" in runners[0].kernel_ir()


@pytest.mark.parametrize("op,attrs", [("softmax", {"axis": -1}), ("log_softmax", {"axis": -1}),
                                      ("layer_norm", {})])
def test_composite_ops_through_decompose(jit, op, attrs):
    if op not in OPS or OPS[op].decompose is None:
        pytest.skip(f"{op} has no decomposition in the op table yet")
    mb = ModuleBuilder("c")
    if op == "layer_norm":
        f = mb.function("main", [("x", "f32[N, 64]"), ("g", "f32[64]"), ("b", "f32[64]")], ["f32[N, 64]"])
        f.ret(getattr(f, op)(*f.args(), **attrs))
    else:
        f = mb.function("main", [("x", "f32[N, 64]")], ["f32[N, 64]"])
        f.ret(getattr(f, op)(f.arg("x"), **attrs))
    m = mb.finish()
    rng = np.random.default_rng(3)
    args = [rng.standard_normal((10, 64)).astype(np.float32)]
    if op == "layer_norm":
        args += [rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)]
    compare(jit, m, args, op)


def test_matmul_epilogue_in_place(jit):
    rng = np.random.default_rng(4)
    mb = ModuleBuilder("mlp")
    w = mb.constant("w", rng.standard_normal((32, 16)).astype(np.float32))
    bias = mb.constant("b", rng.standard_normal(16).astype(np.float32))
    f = mb.function("main", [("x", "f32[N, 32]")], ["f32[N, 16]"])
    h = f.matmul(f.arg("x"), w)
    h = f.relu(f.add(h, bias))
    f.ret(h)
    m = mb.finish()
    x = rng.standard_normal((8, 32)).astype(np.float32)
    runners = compare(jit, m, [x], "programs")
    assert "in place of in0" in runners[0].kernel_ir()


def test_matmul_epilogue_keeps_product_when_it_is_read_later(jit):
    rng = np.random.default_rng(5)
    mb = ModuleBuilder("mm")
    f = mb.function("main", [("a", "f64[4, 5]"), ("b", "f64[5, 6]")], ["f64[4, 6]", "f64[4, 6]"])
    p = f.matmul(*f.args())
    q = f.tanh(f.mul(p, 2.0))
    f.ret(p, q)
    args = [rng.standard_normal((4, 5)), rng.standard_normal((5, 6))]
    compare(jit, mb.finish(), args, "tanh")


@pytest.mark.parametrize("op", ["reduce_sum", "reduce_prod", "reduce_mean"])
@pytest.mark.parametrize("shape", [(3, 1), (4, 255), (4, 256), (3, 257), (2, 1000), (3, 7, 300)])
def test_f32_chunked_accumulation(jit, op, shape):
    """f32 sums accumulate in f32 within chunks of 256 of the innermost axis, then in f64:
    rows shorter than, equal to and longer than a chunk, and two reduced axes."""
    axes = list(range(1, len(shape)))
    mb = ModuleBuilder("c")
    dims = ", ".join(["N"] + [str(d) for d in shape[1:]])
    f = mb.function("main", [("x", f"f32[{dims}]")], [f"f32[{', '.join(['N'] + ['1'] * len(axes))}]"])
    x = f.arg("x")
    y = getattr(f, op)(f.exp(f.mul(x, 0.01 if op == "reduce_prod" else 1.0)), axes=axes, keepdims=True)
    f.ret(f.add(y, 0.5))
    rng = np.random.default_rng(len(shape) * 1000 + shape[-1])
    x = rng.standard_normal(shape).astype(np.float32)
    compare(jit, mb.finish(), [x], op)


@pytest.mark.parametrize("ashape", [(2, 5, 16), (3, 1, 4, 16), (1, 16)])
def test_matmul_epilogue_stacked_rows(jit, ashape):
    """A stack of rows times one matrix runs as one 2-D product (reshaped views) in place."""
    batch = ["B", "C"][:len(ashape) - 2]
    dims, outd = ", ".join(batch + ["M", "16"]), ", ".join(batch + ["M", "8"])
    mb = ModuleBuilder("s")
    w = mb.constant("w", np.random.default_rng(2).standard_normal((16, 8)).astype(np.float32))
    f = mb.function("main", [("x", f"f32[{dims}]")], [f"f32[{outd}]"])
    f.ret(f.relu(f.add(f.matmul(f.arg("x"), w), 0.25)))
    x = np.random.default_rng(3).standard_normal(ashape).astype(np.float32)
    compare(jit, mb.finish(), [x])


def test_matmul_epilogue_in_place_is_vectorized_without_overlap_check(jit):
    """MiniLM's GELU epilogue, written in place of the product with a bias broadcast along rows:
    the store must use the same address expression as the load, or LLVM guards the vector loop
    with an overlap check that always fails on the shared buffer and runs the scalar loop."""
    rng = np.random.default_rng(6)
    mb = ModuleBuilder("ff")
    w = mb.constant("w", rng.standard_normal((24, 40)).astype(np.float32))
    bias = mb.constant("b", rng.standard_normal(40).astype(np.float32))
    f = mb.function("main", [("x", "f32[1, M, 24]")], ["f32[1, M, 40]"])
    h = f.add(f.matmul(f.arg("x"), w), bias)
    f.ret(f.mul(f.mul(h, f.add(f.erf(f.div(h, 1.4142135)), 1.0)), 0.5))
    x = rng.standard_normal((1, 7, 24)).astype(np.float32)
    (runner,) = compare(jit, mb.finish(), [x], "gelu")
    assert "in place of in0" in runner.kernel_ir()
    ir_text = runner.llvm_ir()
    assert "<16 x float>" in ir_text or "<8 x float>" in ir_text, "the store loop is not vectorized"
    assert "found.conflict" not in ir_text and "bound0" not in ir_text


@pytest.mark.parametrize("cols", [1, 15, 16, 17, 32, 47, 255, 256, 300])
def test_short_rows_variant(jit, cols):
    """Rows shorter than SHORT_ROW compile without interleaved vector loops (a 32-element row
    ran in the scalar remainder loop); either side of the bound and of the vector width."""
    from jit.targets.cpu.compiler import lower_to_llvm
    from jit.targets.cpu.runner import SHORT_ROW
    mb = ModuleBuilder("s")
    f = mb.function("main", [("x", f"f32[N, {cols}]")], [f"f32[N, {cols}]"])
    f.ret(f.mul(f.softmax(f.arg("x"), axis=-1), 3.0))
    x = np.random.default_rng(cols).standard_normal((6, cols)).astype(np.float32)
    x[1, :] = -np.inf if cols > 1 else x[1, :]
    x[2, 0] = np.nan
    (runner,) = compare(jit, mb.finish(), [x], "softmax")
    short = "short innermost axis" in runner.kernel_ir()
    assert short == (cols < SHORT_ROW)
    lowered, _ = lower_to_llvm(runner.kernel, runner._last_spec())
    assert ("llvm.loop.interleave.count" in lowered) == short
