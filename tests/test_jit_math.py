"""The IR math library against the references over wide ranges: uniform and log-uniform over the
whole finite range, both signs, zeros, infinities, NaN and denormals (specs/tolerances.md)."""
from __future__ import annotations

import numpy as np
import pytest

from isa.builder import ModuleBuilder
from isa.ops import OPS
from isa.verify import verify_module
from jit import Jit, form_regions
from jit.testing import assert_matches

FUNCS = ["exp", "log", "tanh", "erf", "sin", "cos", "sigmoid", "gelu"]


@pytest.fixture(scope="module")
def jit(tmp_path_factory):
    return Jit(cache_dir=str(tmp_path_factory.mktemp("jitcache")), threads=1)


def runner(jit, op: str, dtype: str, attrs=None):
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", f"{dtype}[N]")], [f"{dtype}[N]"])
    y = getattr(f, op)(f.arg("x"), **(attrs or {}))
    f.ret(f.mov(y, "out"))
    m = mb.finish()
    return jit.runner(m, form_regions(m, "main", verify_module(m)["main"])[0])


def wide(dtype, rng, n=4000) -> np.ndarray:
    fi = np.finfo(dtype)
    logs = np.exp(rng.uniform(np.log(fi.smallest_subnormal) + 1, np.log(fi.max), n))
    parts = [rng.uniform(-1, 1, n), rng.uniform(-10, 10, n), rng.uniform(-100, 100, n),
             logs * rng.choice([-1.0, 1.0], n),
             np.array([0.0, -0.0, np.inf, -np.inf, np.nan, fi.tiny, fi.tiny / 4, -fi.tiny / 3,
                       fi.smallest_subnormal, fi.max, -fi.max, 1.0, -1.0, 0.3, -0.3, 2.0, -2.0])]
    return np.concatenate(parts).astype(dtype)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("op", FUNCS)
def test_math_wide_range(jit, op, dtype):
    rng = np.random.default_rng(7)
    x = wide(np.float32 if dtype == "f32" else np.float64, rng)
    if op in ("sin", "cos"):
        x = x[~(np.abs(x) >= 2.0 ** 19) | ~np.isfinite(x)]
    attrs = {"approximate": "tanh"} if op == "gelu" and dtype == "f32" else None
    run = runner(jit, op, dtype, attrs)
    got = run([x])
    assert got is not None, run.describe()
    with np.errstate(all="ignore"):
        ref = OPS[op].reference(OPS[op].with_defaults(attrs or {}), x)
    assert_matches(got[0], ref, op, f"{op} {dtype}")


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_pow_special_cases_and_range(jit, dtype):
    dt = np.float32 if dtype == "f32" else np.float64
    specials = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, np.inf, -np.inf, np.nan, 3.0, -3.0, 1e-3]
    a, b = np.meshgrid(np.array(specials), np.array(specials))
    rng = np.random.default_rng(3)
    xa = np.concatenate([a.ravel(), rng.uniform(0.01, 10, 2000), -rng.integers(1, 5, 200)]).astype(dt)
    xb = np.concatenate([b.ravel(), rng.uniform(-20, 20, 2000), rng.integers(-3, 4, 200)]).astype(dt)
    mb = ModuleBuilder("p")
    f = mb.function("main", [("a", f"{dtype}[N]"), ("b", f"{dtype}[N]")], [f"{dtype}[N]"])
    f.ret(f.mov(f.pow(*f.args()), "out"))
    m = mb.finish()
    run = jit.runner(m, form_regions(m, "main", verify_module(m)["main"])[0])
    got = run([xa, xb])
    assert got is not None, run.describe()
    with np.errstate(all="ignore"):
        ref = np.power(xa, xb)
    assert_matches(got[0], ref, "pow", f"pow {dtype}")


def test_sin_beyond_range_reduction_falls_back(jit):
    run = runner(jit, "sin", "f32")
    assert run([np.array([1.0, 3e6], np.float32)]) is None
    assert "sin/cos argument" in run.describe()["last_fallback_reason"]
    got = run([np.array([1.0, np.inf, np.nan, 5e5], np.float32)])
    assert got is not None
    assert np.isnan(got[0][1]) and np.isnan(got[0][2])


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_square_by_pow_is_one_product(dtype, tmp_path):
    # pow(x, 2) lowers to x*x (one rounding, what pow gives for it), the exponent an immediate
    # or a one-element constant (jit/build.py embeds those): bit-equal to x*x with infinities,
    # NaN and signed zeros; another exponent keeps pow
    import assembler
    import dlvmrt
    m = assembler.parse(f"""module sq
const @two : {dtype}[] = 2.0
func @main(%x: {dtype}[N]) -> ({dtype}[N], {dtype}[N], {dtype}[N]) {{
entry:
  %y = pow %x, 2.0
  %z = pow %x, 3.0
  %w = pow %x, @two
  ret %y, %z, %w
}}
""")
    rng = np.random.default_rng(16)
    x = np.concatenate([rng.standard_normal(200) * 1e3, [np.inf, -np.inf, np.nan, -0.0, 0.0,
                                                         1e30, -1e-30]]).astype(dtype.replace(
                                                             "f", "float"))
    vm = dlvmrt.VM(m, jit="always")
    y, z, w = vm.run("main", x)
    np.testing.assert_array_equal(y, x * x)
    np.testing.assert_array_equal(w, x * x)       # a model's constant exponent too
    np.testing.assert_allclose(z, dlvmrt.VM(m, jit="off").run("main", x)[1], rtol=1e-6)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_small_integer_powers_are_products(dtype):
    # pow(x, 3), (x, 4), (x, -1), (x, -2) lower to products (f32 in f64): tanh-GELU's cube as
    # exported; within the pow row of specs/tolerances.md of the reference over normal values,
    # overflow, underflow, infinities, NaN and signed zeros (f32 bit-equal to pow in f64 here)
    import assembler
    import dlvmrt
    m = assembler.parse(f"""module small
func @main(%x: {dtype}[N]) -> ({dtype}[N], {dtype}[N], {dtype}[N], {dtype}[N]) {{
entry:
  %a = pow %x, 3.0
  %b = pow %x, 4.0
  %c = pow %x, -1.0
  %d = pow %x, -2.0
  ret %a, %b, %c, %d
}}
""")
    rng = np.random.default_rng(17)
    np_dt = np.float32 if dtype == "f32" else np.float64
    x = np.concatenate([rng.standard_normal(300) * 10, rng.standard_normal(50) * 1e-3,
                        [np.inf, -np.inf, np.nan, -0.0, 0.0, 1e30, -1e30, 1e-30, -1e-30,
                         3e38 if dtype == "f32" else 1e300, 1e-45 if dtype == "f32" else 5e-324,
                         1e155 if dtype == "f64" else 1e19]
                        ]).astype(np_dt)
    got = dlvmrt.VM(m, jit="always").run("main", x)
    want = dlvmrt.VM(m, jit="off").run("main", x)
    tiny = np.finfo(np_dt).tiny
    for g, w, e in zip(got, want, (3, 4, -1, -2)):
        with np.errstate(all="ignore"):
            exact = np.power(x.astype(np.float64), float(e))
        np.testing.assert_allclose(g, w, rtol=1e-6 if dtype == "f32" else 2e-13, atol=tiny,
                                   err_msg=f"x ** {e}")
        assert np.array_equal(np.signbit(g), np.signbit(w)) or e in (-1, -2), f"x ** {e}"
        if dtype == "f32":
            with np.errstate(all="ignore"):
                np.testing.assert_array_equal(g, exact.astype(np.float32), err_msg=f"x ** {e}")


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_sigmoid_and_silu_take_the_bounded_exp(jit, dtype):
    """sigmoid's expansion 1 / (1 + exp(-x)) lowers to sigmoid_of (a bounded exp, no overflow or
    NaN branches), alone and inside SiLU's x * sigmoid(x); its extremes stay within the table's
    tolerance: 1 and 0 past the clamp, NaN kept, denormal results within atol tiny."""
    from jit.targets.cpu.compiler import lower_to_llvm
    from jit.testing import compare_with_reference
    np_dt = np.float32 if dtype == "f32" else np.float64
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, -100, -88.5, -88, -87, -20, -1e-30,
                        1e-30, 20, 88, 100, 1e38, -1e38], np_dt)
    x = np.concatenate([special, (np.random.default_rng(4).standard_normal(500) * 30)]).astype(np_dt)
    # SiLU is a chain (the "programs" row): x times a sigmoid flushed below x = -88 is 0 where
    # the reference's product of a denormal is a tiny normal number (-3e-37 at x = -88.5)
    for name, body, tol in (("sigmoid", lambda f, v: f.sigmoid(v), "sigmoid"),
                            ("silu", lambda f, v: f.mul(v, f.sigmoid(v)), "programs")):
        mb = ModuleBuilder(name)
        f = mb.function("main", [("x", f"{dtype}[N]")], [f"{dtype}[N]"])
        f.ret(body(f, f.arg("x")))
        r = compare_with_reference(jit, mb.finish(), [x], tol)
        text, _ = lower_to_llvm(r.kernel, r._last_spec())
        assert f"dlvm.sigmoid_of.{dtype}" in text
