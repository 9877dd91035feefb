"""Explicit vector loops (jit/llvm/lower.py `_vloop`): rows of every length around the vector
width run their last, partial block of lanes on stack buffers, without a scalar remainder loop.

- loops with math functions run the partial block as one more trip of the loop (shared body),
  the others emit their body a second time for it (reductions must leave the padded lanes out);
- padded lanes repeat the last element, so they raise no integer trap of their own;
- an output written in place of its input (a matmul epilogue) stays correct in the partial block;
- the module takes the light pipeline and keeps no scalar copy of the math.
"""
from __future__ import annotations

import numpy as np
import pytest

from isa.builder import ModuleBuilder
from isa.verify import verify_module
from jit import Jit, form_regions
from jit.llvm import target
from jit.targets.cpu.compiler import lower_to_llvm, optimized_ir
from jit.testing import assert_matches, compare_with_reference, reference_run, run_with_jit

LANES_F32 = target.vector_bytes() // 4
LENGTHS = [1, 2, LANES_F32 - 1, LANES_F32, LANES_F32 + 1, 2 * LANES_F32 + 3, 100]


@pytest.fixture(scope="module")
def jit(tmp_path_factory):
    return Jit(cache_dir=str(tmp_path_factory.mktemp("jitcache")), threads=2, parallel_threshold_us=0)


compare = compare_with_reference


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("cols", LENGTHS)
def test_math_rows_with_partial_blocks(jit, dtype, cols):
    """gelu(x + b) with a broadcast bias: the shared-body loop."""
    mb = ModuleBuilder("g")
    t = f"{dtype}[N, {cols}]"
    f = mb.function("main", [("x", t), ("b", f"{dtype}[{cols}]")], [t])
    x, b = f.args()
    f.ret(f.gelu(f.add(x, b)))
    np_dt = np.float32 if dtype == "f32" else np.float64
    rng = np.random.default_rng(cols)
    args = [(rng.standard_normal((7, cols)) * 3).astype(np_dt), rng.standard_normal(cols).astype(np_dt)]
    compare(jit, mb.finish(), args, "gelu")


@pytest.mark.parametrize("n", [1, LANES_F32 - 1, 3 * LANES_F32 + 5, 1000])
def test_one_dimensional_chunks(jit, n):
    """A 1-D elementwise kernel loops from start to stop of each thread's chunk."""
    mb = ModuleBuilder("t")
    f = mb.function("main", [("x", "f32[N]")], ["f32[N]"])
    f.ret(f.tanh(f.mul(f.arg("x"), 0.5)))
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32) * 4
    compare(jit, mb.finish(), [x], "tanh")


@pytest.mark.parametrize("op", ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"])
@pytest.mark.parametrize("cols", LENGTHS)
def test_reductions_leave_padded_lanes_out(jit, op, cols):
    mb = ModuleBuilder("r")
    f = mb.function("main", [("x", f"f32[N, {cols}]")], ["f32[N, 1]"])
    f.ret(getattr(f, op)(f.abs(f.arg("x")), axes=[-1], keepdims=True))
    rng = np.random.default_rng(cols)
    x = rng.uniform(0.5, 1.5, (6, cols)).astype(np.float32)
    x[1, -1] = 100.0              # the element the padded lanes repeat: counted once
    x[2, -1] = np.nan             # NaN in the partial block
    x[3, 0] = -7.0
    compare(jit, mb.finish(), [x], "programs")


@pytest.mark.parametrize("cols", LENGTHS)
def test_softmax_and_layer_norm_rows(jit, cols):
    mb = ModuleBuilder("s")
    f = mb.function("main", [("x", f"f32[N, {cols}]"), ("g", f"f32[{cols}]"), ("b", f"f32[{cols}]")],
                    [f"f32[N, {cols}]", f"f32[N, {cols}]"])
    x, g, b = f.args()
    f.ret(f.softmax(x, axis=-1), f.layer_norm(x, g, b, axis=-1, epsilon=1e-5))
    rng = np.random.default_rng(cols)
    args = [(rng.standard_normal((5, cols)) * 2).astype(np.float32),
            rng.standard_normal(cols).astype(np.float32), rng.standard_normal(cols).astype(np.float32)]
    got, _ = run_with_jit(mb.finish(), "main", args, jit)
    ref = reference_run(mb.finish(), "main", args)
    assert_matches(got[0], ref[0], "softmax")
    assert_matches(got[1], ref[1], "layer_norm")


@pytest.mark.parametrize("cols", [1, LANES_F32 - 3, LANES_F32 + 2])
def test_padded_lanes_raise_no_trap(jit, cols):
    """Integer division in a partial block: padding repeats a real divisor (never a 0)."""
    mb = ModuleBuilder("d")
    f = mb.function("main", [("a", f"i32[N, {cols}]"), ("b", f"i32[N, {cols}]")], [f"i32[N, {cols}]"])
    a, b = f.args()
    f.ret(f.add(f.div(a, b), 1))
    m = mb.finish()
    run = jit.runner(m, form_regions(m, "main", verify_module(m)["main"])[0])
    a = np.arange(3 * cols, dtype=np.int32).reshape(3, cols) - cols
    b = np.full((3, cols), 3, np.int32)
    out = run([a, b])
    assert out is not None, run.describe()
    # out[0] is the division: it may trap, so the region computes it though nothing reads it
    assert np.array_equal(out[-1], np.trunc(a / 3).astype(np.int32) + 1)
    b[2, -1] = 0
    assert run([a, b]) is None and "trap" in run.describe()["last_fallback_reason"]


@pytest.mark.parametrize("cols", [40, 64, 77])
def test_in_place_epilogue_rows(jit, cols):
    """matmul + bias + gelu: the epilogue runs in place on the product, partial block included."""
    rng = np.random.default_rng(cols)
    mb = ModuleBuilder("e")
    w = mb.constant("w", rng.standard_normal((32, cols)).astype(np.float32) * 0.2)
    bias = mb.constant("bias", rng.standard_normal(cols).astype(np.float32))
    f = mb.function("main", [("x", "f32[N, 32]")], [f"f32[N, {cols}]"])
    f.ret(f.gelu(f.add(f.matmul(f.arg("x"), w), bias)))
    m = mb.finish()
    x = rng.standard_normal((9, 32)).astype(np.float32)
    got, _ = run_with_jit(m, "main", [x], jit)
    assert_matches(got[0], reference_run(m, "main", [x])[0], "programs")


def test_vector_module_has_no_scalar_math(jit):
    mb = ModuleBuilder("c")
    f = mb.function("main", [("x", "f32[N, 37]")], ["f32[N, 37]"])
    f.ret(f.exp(f.tanh(f.arg("x"))))
    x = np.random.default_rng(0).standard_normal((4, 37)).astype(np.float32)
    runner = compare(jit, mb.finish(), [x], "tanh")
    spec = runner._last_spec()
    if target.vector_lanes(runner.kernel, spec) is None:
        pytest.skip("no explicit vector loops on this host")
    text, _ = lower_to_llvm(runner.kernel, spec)
    assert "!" + target.VECTORIZED in text
    opt = optimized_ir(runner.kernel, spec, 3)
    assert "@llvm.fma.f32(" not in opt and f"@llvm.fma.v{LANES_F32}f32(" in opt
