"""The row-kernel paths that make softmax fast, each against the op references:

- float reduce_max/min as maxnum plus a per-row NaN flag (NaN anywhere in a row, in the vector
  body or the scalar remainder, must still give NaN);
- exp(a - reduce_max(a)) through the cheaper exp_le0 (special rows: NaN, -inf entries, all -inf,
  +inf, spreads wider than the f32 exponent range);
- a cached row (softmax's exp) kept in its output row instead of scratch;
- prefetching the next row of row-wise kernels.
"""
from __future__ import annotations

import numpy as np
import pytest

from isa.builder import ModuleBuilder
from jit import Jit
from jit.targets.cpu.compiler import lower_to_llvm
from jit.testing import compare_with_reference, run_with_jit


@pytest.fixture(scope="module")
def jit(tmp_path_factory):
    return Jit(cache_dir=str(tmp_path_factory.mktemp("jitcache")), threads=2, parallel_threshold_us=0)


compare = compare_with_reference


def special_rows(rows: int, cols: int, dtype, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, cols)) * 3).astype(dtype)
    x[0, cols // 2] = np.nan                       # NaN in the vector body
    x[1, cols - 1] = np.nan                        # NaN in the remainder
    x[2, :] = -np.inf                              # all -inf: NaN row
    x[3, ::3] = -np.inf                            # -inf entries: exact zeros
    x[4, 1] = np.inf                               # +inf: NaN at it, the others 0 / NaN
    x[5, :] = rng.uniform(-300, 0, cols)           # spread beyond exp's range: flushed zeros
    x[6, :] = 0.0                                  # uniform row
    x[7, :] = np.nan
    return x


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("cols", [5, 37, 300, 1000])
def test_softmax_special_rows(jit, op, dtype, cols):
    mb = ModuleBuilder("s")
    f = mb.function("main", [("x", f"{dtype}[N, {cols}]")], [f"{dtype}[N, {cols}]"])
    f.ret(getattr(f, op)(f.arg("x"), axis=-1))
    np_dt = np.float32 if dtype == "f32" else np.float64
    x = special_rows(11, cols, np_dt, cols)
    runner = compare(jit, mb.finish(), [x], op)
    got = run_with_jit(runner.module, "main", [x], jit)[0][0]
    assert np.isnan(got[[0, 1, 2, 7]]).all()
    if op == "softmax" and cols % 3:
        assert (got[3, ::3] == 0).all()


@pytest.mark.parametrize("op", ["reduce_max", "reduce_min"])
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_max_min_nan_flag(jit, op, dtype):
    """maxnum ignores NaN; the per-row flag must turn the row's result into NaN wherever the
    NaN sits, and leave rows without NaN exact (+-inf, all -inf, -0.0)."""
    cols = 203
    mb = ModuleBuilder("r")
    f = mb.function("main", [("x", f"{dtype}[N, {cols}]")], [f"{dtype}[N, 1]"])
    f.ret(getattr(f, op)(f.mul(f.arg("x"), 1.0), axes=[-1], keepdims=True))
    np_dt = np.float32 if dtype == "f32" else np.float64
    x = np.random.default_rng(7).standard_normal((9, cols)).astype(np_dt)
    x[0, 0] = np.nan
    x[1, 100] = np.nan
    x[2, cols - 1] = np.nan
    x[3, :] = np.nan
    x[4, :] = -np.inf
    x[5, :] = np.inf
    x[6, 17] = np.inf
    x[6, 18] = -np.inf
    x[7, :] = -0.0
    runner = compare(jit, mb.finish(), [x], op)
    got = run_with_jit(runner.module, "main", [x], jit)[0][0]
    assert np.isnan(got[:4, 0]).all() and not np.isnan(got[4:, 0]).any()


def test_exp_le0_only_for_own_row_maximum(jit):
    """exp(x - max(y)) with another y may be positive: it keeps the general exp (overflow to inf
    included); exp(x - max(x)) takes exp_le0."""
    mb = ModuleBuilder("e")
    f = mb.function("main", [("x", "f32[N, 40]"), ("y", "f32[N, 40]")], ["f32[N, 40]"])
    x, y = f.args()
    e = f.exp(f.sub(x, f.reduce_max(y, axes=[-1], keepdims=True)))
    f.ret(f.div(e, f.reduce_sum(e, axes=[-1], keepdims=True)))
    rng = np.random.default_rng(8)
    xa = rng.uniform(-5, 100, (6, 40)).astype(np.float32)
    ya = rng.uniform(-5, 5, (6, 40)).astype(np.float32)
    runner = compare(jit, mb.finish(), [xa, ya], "softmax")
    text, _ = lower_to_llvm(runner.kernel, runner._last_spec())
    assert "exp_le0" not in text and "dlvm.exp.f32" in text

    mb = ModuleBuilder("s")
    f = mb.function("main", [("x", "f32[N, 40]")], ["f32[N, 40]"])
    f.ret(f.softmax(f.arg("x"), axis=-1))
    runner = compare(jit, mb.finish(), [xa], "softmax")
    text, slots = lower_to_llvm(runner.kernel, runner._last_spec())
    assert "dlvm.exp_le0.f32" in text and "llvm.prefetch" in text
    assert slots == 0, "softmax's exp row should live in its output row, not in scratch"


def test_cached_row_in_output_read_by_two_outputs(jit):
    """The exp row lives in output 0 until the store loop; output 1 reads it in the same
    iteration before output 0 is overwritten."""
    mb = ModuleBuilder("two")
    f = mb.function("main", [("x", "f32[N, 300]")], ["f32[N, 300]", "f32[N, 300]"])
    x = f.arg("x")
    e = f.exp(f.sub(x, f.reduce_max(x, axes=[-1], keepdims=True)))
    s = f.reduce_sum(e, axes=[-1], keepdims=True)
    f.ret(f.div(e, s), f.mul(e, 2.0))
    xa = special_rows(9, 300, np.float32, 3)
    runner = compare(jit, mb.finish(), [xa], "softmax")
    assert lower_to_llvm(runner.kernel, runner._last_spec())[1] == 0


def test_cached_row_without_a_home_uses_scratch(jit):
    """An output that does not cover the domain (a row total) cannot hold the row: scratch."""
    mb = ModuleBuilder("lse")
    f = mb.function("main", [("x", "f32[N, 64]")], ["f32[N, 1]"])
    x = f.arg("x")
    e = f.exp(f.mul(x, 0.5))
    s = f.reduce_sum(e, axes=[-1], keepdims=True)
    f.ret(f.reduce_sum(f.div(e, s), axes=[-1], keepdims=True))
    xa = np.random.default_rng(9).standard_normal((5, 64)).astype(np.float32)
    runner = compare(jit, mb.finish(), [xa], "programs")
    assert lower_to_llvm(runner.kernel, runner._last_spec())[1] == 1
