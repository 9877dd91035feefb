"""Every elementwise op x dtype, compiled, against the op's NumPy reference with the tolerances
of specs/tolerances.md; casts; broadcasting; traps falling back to the interpreter."""
from __future__ import annotations

import numpy as np
import pytest

from isa.builder import ModuleBuilder
from isa.dtypes import BY_NAME
from isa.errors import OpTypeError
from isa.ops import OPS
from isa.types import TensorType
from isa.verify import verify_module
from jit import Jit, form_regions
from jit.testing import assert_matches, reference_run, run_with_jit

DTYPES = ["f32", "f64", "i8", "i32", "i64", "u8", "u16", "u32", "u64", "bool"]
ELEMENTWISE = sorted(n for n, op in OPS.items() if op.family.elementwise and n not in ("cast", "select"))


@pytest.fixture(scope="module")
def jit(tmp_path_factory):
    return Jit(cache_dir=str(tmp_path_factory.mktemp("jitcache")), threads=1)


def accepts(op: str, dtypes: list[str], attrs=None) -> bool:
    try:
        OPS[op].infer([TensorType(BY_NAME[d], (4,)) for d in dtypes], OPS[op].with_defaults(attrs or {}))
        return True
    except OpTypeError:
        return False


def values(dtype: str, n: int, rng, op: str = "", role: str = "a") -> np.ndarray:
    dt = BY_NAME[dtype].np
    if dtype == "bool":
        return rng.random(n) < 0.5
    if dt.kind == "f":
        special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.5, -2.5, 1e-40, 3e38])
        if op in ("sin", "cos"):
            special[-1] = 4e5           # beyond 2^19 the kernel declines (tested in test_jit_math)
        body = rng.standard_normal(n - special.size) * 4
        return np.concatenate([special, body]).astype(dt)
    info = np.iinfo(dt)
    lo, hi = max(info.min, -100), min(info.max, 100)
    if op == "pow" and role == "b":
        lo, hi = 0, 7
    v = rng.integers(lo, hi + 1, n).astype(dt)
    if op in ("div", "mod") and role == "b":
        v[v == 0] = 3
    if role == "a" and n > 4:
        v[:2] = [info.min, info.max]          # wrapping at the extremes
    return v


def program(op: str, dtypes: list[str], attrs=None):
    mb = ModuleBuilder("t")
    params = [(f"p{i}", f"{d}[N]") for i, d in enumerate(dtypes)]
    full = OPS[op].with_defaults(attrs or {})
    out_dt = OPS[op].infer([TensorType(BY_NAME[d], ("N",)) for d in dtypes], full)
    f = mb.function("main", params, [str(out_dt[0])])
    y = getattr(f, op)(*f.args(), **(attrs or {}))
    y = f.mov(y, "out")      # a second instruction, so that the region is worth compiling
    f.ret(y)
    return mb.finish()


def check(jit, module, args, op):
    got, runners = run_with_jit(module, "main", args, jit)
    assert runners and runners[0].compiled_calls == 1, runners[0].describe() if runners else "no region"
    ref = reference_run(module, "main", args)
    assert_matches(got[0], ref[0], op, f"{op} on {[str(a.dtype) for a in args]}")


@pytest.mark.parametrize("op", ELEMENTWISE)
def test_op_all_dtypes(jit, op):
    rng = np.random.default_rng(hash(op) % 2**32)
    arity = OPS[op].arity[0]
    tried = 0
    for d in DTYPES:
        if not accepts(op, [d] * arity):
            continue
        attrs = {"approximate": "tanh"} if op == "gelu" and d == "f64" else None
        args = [values(d, 64, rng, op, "ab"[i]) for i in range(arity)]
        check(jit, program(op, [d] * arity, attrs), args, op)
        tried += 1
    assert tried, f"{op} accepts none of {DTYPES}"


CASTS = [("f32", "f64"), ("f64", "f32"), ("f32", "i32"), ("i32", "f32"), ("f64", "i64"), ("i64", "f64"),
         ("i32", "i8"), ("i8", "i32"), ("u8", "i32"), ("i32", "u8"), ("bool", "f32"), ("f32", "bool"),
         ("i32", "bool"), ("u8", "f64"), ("f64", "u8"), ("i64", "u64"), ("u64", "i64"),
         ("u64", "f64"), ("u64", "f32"), ("f32", "u64"), ("f64", "u32"), ("u32", "f32"),
         ("u16", "i32"), ("i32", "u16"), ("u64", "bool"),
         # f16 is held as a rounded float: casts round there, loads and stores convert
         ("f32", "f16"), ("f16", "f32"), ("f16", "f64"), ("f16", "i32"), ("i32", "f16"),
         ("f16", "u8"), ("f16", "i8"), ("i64", "f16"), ("bool", "f16"), ("f16", "bool")]


@pytest.mark.parametrize("src,to", CASTS)
def test_cast(jit, src, to):
    rng = np.random.default_rng(1)
    x = values(src, 64, rng)
    if BY_NAME[src].is_float and not BY_NAME[to].is_float and not BY_NAME[to].is_bool:
        # NaN, infinities and values beyond the range saturate alike in every tier
        x = np.concatenate([x, np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 300.7, -300.7],
                                        x.dtype)])
    check(jit, program("cast", [src], {"to": BY_NAME[to]}), [x], "cast")


@pytest.mark.parametrize("dtype", ["f32", "i32", "bool"])
def test_select(jit, dtype):
    rng = np.random.default_rng(2)
    args = [rng.random(64) < 0.5, values(dtype, 64, rng), values(dtype, 64, rng)]
    check(jit, program("select", ["bool", dtype, dtype]), args, "select")


@pytest.mark.parametrize("shapes", [
    [(3, 5), (5,)], [(4, 1), (1, 6)], [(2, 3, 4), (3, 1)], [(7,), ()], [(1, 1, 8), (2, 3, 1)], [(), ()]])
def test_broadcasting(jit, shapes):
    rng = np.random.default_rng(3)
    mb = ModuleBuilder("b")
    params = [(f"p{i}", "f32[" + ", ".join(map(str, s)) + "]") for i, s in enumerate(shapes)]
    out = np.broadcast_shapes(*shapes)
    f = mb.function("main", params, ["f32[" + ", ".join(map(str, out)) + "]"])
    a, b = f.args()
    y = f.mul(f.add(a, b), f.sub(b, 1.5))
    f.ret(f.max(y, a))
    m = mb.finish()
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    got, runners = run_with_jit(m, "main", args, jit)
    assert runners[0].compiled_calls == 1, runners[0].describe()
    assert_matches(got[0], reference_run(m, "main", args)[0], "programs")


def test_integer_division_by_zero_falls_back(jit):
    m = program("div", ["i32", "i32"])
    a = np.arange(8, dtype=np.int32)
    b = np.array([1, 2, 0, 3, 1, 1, 1, 1], dtype=np.int32)
    run = jit.runner(m, form_regions(m, "main", verify_module(m)["main"])[0])
    assert run([a, b]) is None
    assert "trap" in run.describe()["last_fallback_reason"]
    ok = run([a, b + (b == 0)])
    assert ok is not None and np.array_equal(ok[0], a // (b + (b == 0)))


def test_integer_division_truncates_and_wraps(jit):
    a = np.array([-7, 7, -7, 7, np.iinfo(np.int32).min, 5], np.int32)
    b = np.array([2, -2, -2, 2, -1, 7], np.int32)
    m = program("div", ["i32", "i32"])
    got, runners = run_with_jit(m, "main", [a, b], jit)
    assert runners[0].compiled_calls == 1
    assert got[0].tolist() == [-3, -3, 3, 3, np.iinfo(np.int32).min, 0]
