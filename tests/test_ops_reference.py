"""Op references against independent NumPy computations, and against their own type rules.

Three tables drive this file:
- a sweep over every row of the op table (op x dtype x shape) that checks the reference's
  result dtype and shape equal what the row's `infer` predicts for static operand types;
- value checks of each reference against a computation written another way (naive loops for
  conv2d and pooling, Python slicing, np.take, np.pad ...), including the run-time traps;
- decompositions (softmax, log_softmax, layer_norm, batch_norm) run through a tiny evaluator
  of the emitted instructions, compared with the op's own reference.
"""
from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from isa.dtypes import ALL, BY_NAME, DType, dtype_from_numpy
from isa.errors import OpTypeError, Trap
from isa.narrow import touches_narrow, widened
from isa.ops import OPS, Family
from isa.types import TensorType
from isa.verify import check_attrs

RNG = np.random.default_rng(1234)
F32, F64, F16, I32, I64 = (BY_NAME[n] for n in ("f32", "f64", "f16", "i32", "i64"))


def type_of(a: np.ndarray) -> TensorType:
    return TensorType(dtype_from_numpy(np.asarray(a).dtype), tuple(np.shape(a)))


def run(op: str, *arrays: np.ndarray, **attrs: Any) -> np.ndarray:
    """The reference's result, after checking it has the dtype and shape the type rule infers."""
    opdef = OPS[op]
    full = check_attrs(opdef, attrs)
    types = [type_of(a) for a in arrays]
    (want,) = opdef.infer(types, full)
    ref = opdef.reference
    if touches_narrow(types + [want]):      # as every stage runs it (isa/narrow.py)
        ref = widened(ref, [want.dtype])
    got = np.asarray(ref(full, *arrays))
    assert got.dtype == want.dtype.np, f"{op}: reference gives {got.dtype}, infer says {want}"
    assert got.shape == want.shape, f"{op}: reference gives {list(got.shape)}, infer says {want}"
    return got


def trap(op: str, *arrays: np.ndarray, **attrs: Any) -> str:
    opdef = OPS[op]
    with pytest.raises(Trap) as e:
        opdef.reference(check_attrs(opdef, attrs), *arrays)
    return e.value.message


def sample(dtype: DType, shape: tuple[int, ...]) -> np.ndarray:
    """Values no op traps on: integers in 1..5 (no zero divisor, no negative exponent)."""
    if dtype.is_bool:
        return RNG.random(shape) < 0.5
    if dtype.is_str:        # numbers as text, so that a cast from str parses them
        return RNG.integers(0, 2, shape).astype(str).astype(object)   # in range of i2 too
    if dtype.is_int:
        return RNG.integers(1, min(5, dtype.int_range()[1]) + 1, shape).astype(dtype.np)
    return RNG.uniform(0.5, 2.0, shape).astype(dtype.np)


# ---- sweep: every row's reference agrees with its type rule ---------------------------------

def _accepts(op: str, types: list[TensorType], attrs: dict) -> bool:
    try:
        OPS[op].infer(types, check_attrs(OPS[op], attrs))
        return True
    except OpTypeError:
        return False


def _generated_cases() -> list[tuple[str, list[np.ndarray], dict]]:
    """Elementwise, reduction and value rows: every dtype the rule accepts, a few shapes."""
    cases: list[tuple[str, list[np.ndarray], dict]] = []
    for op in OPS.values():
        fam = op.family
        for dt in ALL:
            if fam is Family.UNARY:
                shaped = [([(2, 3)], {}), ([()], {})]
                if op.name == "gelu":
                    shaped.append(([(4,)], {"approximate": "tanh"}))
            elif fam is Family.BINARY:
                shaped = [([(2, 3), (3,)], {}), ([(4, 1), (1, 5)], {}), ([(), ()], {})]
            elif fam is Family.SELECT:
                shaped = [([(2, 3), (2, 3), (3,)], {})]
            elif fam is Family.CAST:
                shaped = [([(2, 3)], {"to": to}) for to in ALL]
            elif fam is Family.REDUCE:
                shaped = [([(2, 3, 4)], {}), ([(2, 3, 4)], {"axes": [0, -1], "keepdims": True}),
                          ([(2, 3, 4)], {"axes": [1]}), ([(2, 3)], {"axes": []})]
            elif fam is Family.ARGREDUCE:
                shaped = [([(2, 3, 4)], {}), ([(2, 3, 4)], {"axis": -1, "keepdims": True})]
            elif op.name == "mov":
                shaped = [([(2, 3)], {})]
            else:
                continue
            for shapes, attrs in shaped:
                arrays = [sample(dt, s) for s in shapes]
                if fam is Family.SELECT:
                    arrays[0] = RNG.random(shapes[0]) < 0.5
                if _accepts(op.name, [type_of(a) for a in arrays], attrs):
                    cases.append((op.name, arrays, attrs))
    return cases


def _f(*shape: int, dtype=np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


# Cases for the rows written case by case; each also runs through `run`, so each checks infer.
LISTED_CASES: list[tuple[str, list[np.ndarray], dict]] = [
    ("matmul", [_f(2, 3), _f(3, 4)], {}),
    ("matmul", [_f(3), _f(3, 4)], {}),
    ("matmul", [_f(2, 3), _f(3)], {}),
    ("matmul", [_f(3), _f(3)], {}),
    ("matmul", [_f(5, 1, 2, 3, dtype=np.float64), _f(7, 3, 4, dtype=np.float64)], {}),
    ("matmul", [sample(I32, (2, 3)), sample(I32, (3, 2))], {}),
    ("matmul", [_f(2, 3, dtype=np.float16), _f(3, 2, dtype=np.float16)], {}),
    ("conv2d", [_f(2, 3, 6, 6), _f(4, 3, 3, 3)], {}),
    ("conv2d", [_f(1, 4, 7, 8), _f(6, 2, 3, 2), _f(6)],
     {"strides": [2, 1], "pads": [1, 0, 2, 1], "dilations": [1, 2], "groups": 2}),
    ("conv2d", [_f(1, 1, 5, 5, dtype=np.float64), _f(2, 1, 1, 1, dtype=np.float64)], {}),
    ("conv3d", [_f(2, 3, 4, 5, 5), _f(4, 3, 2, 3, 3)], {}),
    ("conv3d", [_f(1, 4, 5, 6, 4), _f(6, 2, 3, 2, 2), _f(6)],
     {"strides": [2, 1, 2], "pads": [1, 0, 1, 0, 1, 1], "dilations": [1, 2, 1], "groups": 2}),
    ("maxpool2d", [_f(2, 3, 6, 6)], {"kernel": [2, 2], "strides": [2, 2]}),
    ("maxpool2d", [sample(I32, (1, 2, 5, 5))], {"kernel": [3, 2], "pads": [1, 1, 0, 1]}),
    ("pool_grad", [_f(2, 3, 6, 6), _f(2, 3, 3, 3)], {"kernel": [2, 2], "strides": [2, 2]}),
    ("pool_grad", [_f(1, 2, 5, 5), _f(1, 2, 5, 5)], {"kernel": [3, 3], "pads": [1, 1, 1, 1],
                                                    "kind": "avg"}),
    ("unbroadcast", [_f(4, 2, 3), _f(2, 1)], {}),
    ("avgpool2d", [_f(1, 2, 5, 6)], {"kernel": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ("avgpool2d", [_f(1, 2, 5, 6, dtype=np.float64)],
     {"kernel": [2, 3], "pads": [1, 2, 0, 1], "count_include_pad": True}),
    ("softmax", [_f(2, 5)], {}),
    ("softmax", [_f(3, 4, 2, dtype=np.float16)], {"axis": 1}),
    ("log_softmax", [_f(2, 5, dtype=np.float64)], {"axis": 0}),
    ("layer_norm", [_f(2, 3, 4)], {}),
    ("layer_norm", [_f(2, 3, 4), _f(3, 4), _f(4)], {"axis": 1, "epsilon": 1e-3}),
    ("batch_norm", [_f(2, 3, 4, 4)] + [_f(3) for _ in range(3)] + [np.abs(_f(3)) + 0.1], {}),
    ("batch_norm", [_f(5, 3, dtype=np.float64)] + [_f(3, dtype=np.float64) for _ in range(3)]
     + [np.abs(_f(3, dtype=np.float64))], {"epsilon": 0.1}),
    ("reshape", [_f(2, 3, 4)], {"shape": [4, -1]}),
    ("reshape", [np.zeros((0, 3), np.int64)], {"shape": [3, 0]}),
    ("transpose", [_f(2, 3, 4)], {}),
    ("transpose", [sample(BY_NAME["u8"], (2, 3, 4))], {"perm": [1, 2, 0]}),
    ("broadcast_to", [_f(3, 1)], {"shape": [2, 3, 4]}),
    ("expand_dims", [_f(2, 3)], {"axes": [0, -1]}),
    ("squeeze", [_f(1, 3, 1)], {}),
    ("squeeze", [_f(1, 3, 1)], {"axes": [-1]}),
    ("concat", [_f(2, 3), _f(2, 1), _f(2, 0)], {"axis": 1}),
    ("concat", [sample(BY_NAME["bool"], (2,))], {"axis": 0}),
    ("slice", [_f(6, 7)], {"starts": [1, -1], "ends": [100, -8], "axes": [0, 1], "steps": [2, -2]}),
    ("gather", [_f(5, 3), np.array([[0, -1], [4, 2]], np.int32)], {}),
    ("gather", [_f(5, 3), np.array(2, np.int64)], {"axis": -1}),
    ("pad", [_f(2, 3)], {"pads": [1, 0, 2, 3], "value": 1.5}),
    ("pad", [sample(I64, (4, 5))], {"pads": [-1, 2, 0, -3]}),
    ("shape_of", [_f(2, 0, 4)], {}),
    ("iota", [], {"shape": [2, 3], "axis": 1, "dtype": F32}),
    ("iota", [], {"shape": []}),
    ("random_uniform", [_f(2, 3)], {"low": -1.0, "high": 1.0}),
    ("random_normal", [sample(I64, (4,))], {"dtype": BY_NAME["f64"], "seed": 3}),
    ("const", [], {"value": np.arange(6, dtype=np.float32).reshape(2, 3),
                   "type": TensorType(F32, (2, 3))}),
    ("const", [], {"value": np.array(2, np.int64), "type": TensorType(I64, (3,))}),
]

SWEEP = _generated_cases() + LISTED_CASES


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("op, arrays, attrs", SWEEP,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(SWEEP)])
def test_reference_agrees_with_type_rule(op, arrays, attrs):
    run(op, *arrays, **attrs)


def test_sweep_covers_every_row_with_a_reference():
    # rows whose results have unknown dims or several results are swept in test_ops_dynamic.py
    from test_ops_dynamic import COVERED as DYNAMIC_COVERED
    covered = {c[0] for c in SWEEP} | DYNAMIC_COVERED
    missing = sorted(op.name for op in OPS.values() if op.reference is not None and
                     op.name not in covered)
    assert not missing, f"add sweep cases for {missing}"


def test_new_rows_use_their_code_range():
    for op in OPS.values():
        if op.family in (Family.CONTRACTION, Family.NN, Family.MOVEMENT) or \
                op.name in ("shape_of", "iota"):
            assert 128 <= op.code <= 191, op.name


# ---- elementwise and reductions: spot checks of the written semantics -----------------------

def test_integer_division_truncates_and_traps():
    a = np.array([7, -7, 7, -7, -128], np.int8)
    b = np.array([2, 2, -2, -2, 1], np.int8)
    want = np.array([math.trunc(x / y) for x, y in zip(a.tolist(), b.tolist())], np.int8)
    np.testing.assert_array_equal(run("div", a, b), want)
    assert trap("div", a, np.array([1, 0, 1, 1, 1], np.int8)) == "integer division by zero"
    assert trap("mod", a, np.zeros(5, np.int8)) == "integer modulo by zero"
    np.testing.assert_array_equal(run("mod", a[:4], b[:4]), [1, 1, -1, -1])


def test_wrapping_rounding_nan_and_casts():
    np.testing.assert_array_equal(run("add", np.array([127], np.int8), np.array([1], np.int8)),
                                  [-128])
    np.testing.assert_array_equal(run("round", np.array([0.5, 1.5, 2.5, -0.5], np.float32)),
                                  [0.0, 2.0, 2.0, -0.0])
    nan = np.array([1.0, np.nan], np.float32)
    assert np.isnan(run("max", nan, np.array([np.nan, 0.0], np.float32))).all()
    assert np.isnan(run("reduce_max", nan))
    np.testing.assert_array_equal(run("cast", np.array([2.7, -2.7], np.float32), to=I32), [2, -2])
    np.testing.assert_array_equal(run("cast", np.array([0.0, -0.5, 3.0]), to=BY_NAME["bool"]),
                                  [False, True, True])


def test_reductions_defaults_and_empty_axes():
    x = _f(2, 3, 4)
    np.testing.assert_allclose(run("reduce_sum", x), x.sum(), rtol=1e-5)
    np.testing.assert_allclose(run("reduce_mean", x, axes=[1]), x.mean(axis=1), rtol=1e-5)
    np.testing.assert_array_equal(run("reduce_sum", np.zeros((2, 0), np.int32), axes=[1]), [0, 0])
    assert trap("reduce_max", np.zeros((2, 0), np.float32), axes=[1]) == "reduce_max over an empty axis"
    np.testing.assert_array_equal(run("argmax", np.array([[1, 5, 5], [7, 0, 7]], np.int32), axis=1),
                                  [1, 0])


def test_erf_and_gelu_against_math():
    x = np.linspace(-7, 7, 57)
    want = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(run("erf", x), want, rtol=1e-14, atol=1e-15)
    exact = np.array([v / 2 * (1 + math.erf(v / math.sqrt(2))) for v in x])
    np.testing.assert_allclose(run("gelu", x), exact, rtol=1e-13, atol=1e-15)


def test_erf_dense_grid_tails_and_specials():
    # every table cell of the reference (centers j/128 on [0, 6]) hit many times, both signs,
    # the tails past 6 and tiny and subnormal inputs, where erf(x) ~ 2x/sqrt(pi)
    x = np.concatenate([np.linspace(-6.5, 6.5, 200_001), RNG.uniform(-6.2, 6.2, 50_000),
                        [5.9999, 6.0, 6.0001, 26.0, 1e300, -1e-300, 5e-324, 1e-8, 0.5 / 128]])
    want = np.array([math.erf(v) for v in x])
    got = run("erf", x)
    np.testing.assert_allclose(got, want, rtol=4e-16, atol=2.3e-16)
    specials = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0])
    got = run("erf", specials)
    np.testing.assert_array_equal(got[:2], [1.0, -1.0])
    assert np.isnan(got[2]) and np.signbit(got[3]) and not np.signbit(got[4])


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_erf_low_precision_is_the_rounded_float64_value(dtype):
    x = np.concatenate([RNG.standard_normal(20_000) * 2, [np.nan, np.inf, -0.0]]).astype(dtype)
    got = run("erf", x)
    assert got.dtype == dtype
    want = np.array([math.erf(float(v)) if np.isfinite(v) else np.tanh(float(v)) for v in x])
    np.testing.assert_array_equal(got, want.astype(dtype))


# ---- contraction ---------------------------------------------------------------------------

def _loop_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros((a.shape[0], b.shape[1]), a.dtype)
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            out[i, j] = sum(a[i, k] * b[k, j] for k in range(a.shape[1]))
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8])
def test_matmul_values(dtype):
    a = RNG.integers(0, 4, (3, 4)).astype(dtype)
    b = RNG.integers(0, 4, (4, 2)).astype(dtype)
    np.testing.assert_array_equal(run("matmul", a, b), _loop_matmul(a, b))
    np.testing.assert_array_equal(run("matmul", a[0], b), _loop_matmul(a[:1], b)[0])
    np.testing.assert_array_equal(run("matmul", a, b[:, 0]), _loop_matmul(a, b[:, :1])[:, 0])
    batch_a = RNG.integers(0, 4, (2, 1, 3, 4)).astype(dtype)
    batch_b = RNG.integers(0, 4, (5, 4, 2)).astype(dtype)
    got = run("matmul", batch_a, batch_b)
    for i in range(2):
        for j in range(5):
            np.testing.assert_array_equal(got[i, j], _loop_matmul(batch_a[i, 0], batch_b[j]))


def test_matmul_traps_when_named_dims_clash_at_run_time():
    assert trap("matmul", _f(2, 4), _f(5, 3)) == "matmul inner dimensions 4 and 5 differ"
    assert "do not broadcast" in trap("matmul", _f(2, 2, 3), _f(3, 3, 4))


# ---- nn --------------------------------------------------------------------------------------

def _loop_conv2d(x, w, bias, strides, pads, dilations, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    top, left, bottom, right = pads
    ho = (h + top + bottom - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    wo = (wd + left + right - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, o, ho, wo), np.float64)
    per_group = o // groups
    for b in range(n):
        for oc in range(o):
            g = oc // per_group
            for i in range(ho):
                for j in range(wo):
                    acc = 0.0 if bias is None else float(bias[oc])
                    for ci in range(cg):
                        for p in range(kh):
                            for q in range(kw):
                                y = i * strides[0] + p * dilations[0] - top
                                z = j * strides[1] + q * dilations[1] - left
                                if 0 <= y < h and 0 <= z < wd:
                                    acc += float(x[b, g * cg + ci, y, z]) * float(w[oc, ci, p, q])
                    out[b, oc, i, j] = acc
    return out


@pytest.mark.parametrize("xs, ws, bias, strides, pads, dilations, groups", [
    ((1, 1, 4, 4), (1, 1, 3, 3), False, [1, 1], [0, 0, 0, 0], [1, 1], 1),
    ((2, 3, 5, 6), (4, 3, 3, 2), True, [2, 1], [1, 0, 2, 1], [1, 1], 1),
    ((1, 4, 7, 7), (6, 2, 2, 3), True, [1, 2], [0, 1, 1, 0], [2, 1], 2),
    ((1, 3, 5, 5), (3, 1, 3, 3), False, [1, 1], [1, 1, 1, 1], [1, 1], 3),
    # depthwise with a channel multiplier (2 outputs per input channel), batch of 2
    ((2, 2, 6, 5), (4, 1, 3, 2), True, [2, 1], [1, 0, 0, 2], [1, 2], 2),
    # grouped, batch of 3 (the patch matrix's columns span n), no padding, 1x1 kernel
    ((3, 4, 5, 4), (6, 2, 1, 1), True, [2, 2], [0, 0, 0, 0], [1, 1], 2),
    # dilation and stride larger than the kernel, uneven pads
    ((2, 3, 9, 8), (2, 3, 2, 3), False, [3, 2], [2, 0, 1, 3], [3, 2], 1),
])
def test_conv2d_against_loops(xs, ws, bias, strides, pads, dilations, groups):
    x, w = _f(*xs, dtype=np.float64), _f(*ws, dtype=np.float64)
    b = _f(ws[0], dtype=np.float64) if bias else None
    attrs = {"strides": strides, "pads": pads, "dilations": dilations, "groups": groups}
    got = run("conv2d", *([x, w] + ([b] if bias else [])), **attrs)
    np.testing.assert_allclose(got, _loop_conv2d(x, w, b, strides, pads, dilations, groups),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-5), (np.float16, 2e-2)])
@pytest.mark.parametrize("groups, ws", [(1, (4, 4, 3, 3)), (2, (4, 2, 3, 1)), (4, (8, 1, 3, 3))])
def test_conv2d_low_precision_against_loops(dtype, tol, groups, ws):
    x, w, b = _f(2, 4, 7, 6, dtype=dtype), _f(*ws, dtype=dtype), _f(ws[0], dtype=dtype)
    attrs = {"strides": [2, 1], "pads": [1, 2, 0, 1], "dilations": [1, 2], "groups": groups}
    got = run("conv2d", x, w, b, **attrs)
    assert got.dtype == dtype and got.flags.c_contiguous
    want = _loop_conv2d(x, w, b, attrs["strides"], attrs["pads"], attrs["dilations"], groups)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_conv2d_reads_strided_inputs():
    x = _f(1, 6, 8, 10, dtype=np.float64)[:, ::2, :, ::2]      # not contiguous
    w = _f(3, 3, 3, 3, dtype=np.float64).transpose(0, 1, 3, 2)
    got = run("conv2d", x, w, pads=[1, 1, 1, 1])
    np.testing.assert_allclose(got, _loop_conv2d(x, w, None, [1, 1], [1, 1, 1, 1], [1, 1], 1),
                               rtol=1e-12, atol=1e-12)


def _taps_conv3d(x, w, bias, strides, pads, dilations, groups):
    """conv3d summed tap by tap over shifted views of the padded input (not the reference's
    depth-taps-as-channels layout)."""
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + 3]) for i in range(3)])
    out_size = [(xp.shape[2 + i] - dilations[i] * (w.shape[2 + i] - 1) - 1) // strides[i] + 1
                for i in range(3)]
    out = np.zeros((n, o, *out_size))
    og = o // groups
    for u, p, q in np.ndindex(*w.shape[2:]):
        view = xp[:, :, u * dilations[0]::strides[0], p * dilations[1]::strides[1],
                  q * dilations[2]::strides[2]][:, :, :out_size[0], :out_size[1], :out_size[2]]
        for g in range(groups):
            out[:, g * og:(g + 1) * og] += np.einsum(
                "ncdhw,oc->nodhw", view[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og, :, u, p, q])
    return out if bias is None else out + bias.reshape(1, o, 1, 1, 1)


@pytest.mark.parametrize("xs, ws, bias, strides, pads, dilations, groups", [
    ((2, 3, 4, 5, 5), (4, 3, 3, 3, 3), True, [1, 1, 1], [1, 1, 1, 1, 1, 1], [1, 1, 1], 1),
    ((1, 4, 6, 5, 7), (6, 2, 2, 3, 2), False, [2, 1, 3], [0, 2, 1, 1, 0, 2], [2, 1, 2], 2),
    ((3, 2, 3, 4, 4), (2, 2, 1, 1, 1), True, [1, 1, 1], [0] * 6, [1, 1, 1], 1),
])
def test_conv3d_against_taps(xs, ws, bias, strides, pads, dilations, groups):
    x, w = _f(*xs, dtype=np.float64), _f(*ws, dtype=np.float64)
    b = _f(ws[0], dtype=np.float64) if bias else None
    attrs = {"strides": strides, "pads": pads, "dilations": dilations, "groups": groups}
    got = run("conv3d", *([x, w] + ([b] if bias else [])), **attrs)
    np.testing.assert_allclose(got, _taps_conv3d(x, w, b, strides, pads, dilations, groups),
                               rtol=1e-12, atol=1e-12)


def test_conv3d_traps():
    assert "3 channels" in trap("conv3d", _f(1, 3, 4, 5, 5), _f(4, 2, 3, 3, 3))
    assert "larger than the padded input" in trap("conv3d", _f(1, 3, 2, 5, 5), _f(4, 3, 3, 3, 3))
    assert "bias has shape [3]" in trap("conv3d", _f(1, 3, 4, 5, 5), _f(4, 3, 3, 3, 3), _f(3))


def test_conv2d_traps():
    assert "3 channels" in trap("conv2d", _f(1, 3, 5, 5), _f(4, 2, 3, 3))
    assert "larger than the padded input" in trap("conv2d", _f(1, 3, 2, 2), _f(4, 3, 3, 3))
    assert "bias has shape [3]" in trap("conv2d", _f(1, 3, 5, 5), _f(4, 3, 3, 3), _f(3))


def _loop_pool(x, kernel, strides, pads, kind, include_pad=False):
    n, c, h, w = x.shape
    top, left, bottom, right = pads
    ho = (h + top + bottom - kernel[0]) // strides[0] + 1
    wo = (w + left + right - kernel[1]) // strides[1] + 1
    out = np.zeros((n, c, ho, wo), x.dtype)
    for b in range(n):
        for ch in range(c):
            for i in range(ho):
                for j in range(wo):
                    vals = [x[b, ch, y, z]
                            for y in range(i * strides[0] - top, i * strides[0] - top + kernel[0])
                            for z in range(j * strides[1] - left, j * strides[1] - left + kernel[1])
                            if 0 <= y < h and 0 <= z < w]
                    if kind == "max":
                        out[b, ch, i, j] = max(vals)
                    else:
                        count = kernel[0] * kernel[1] if include_pad else len(vals)
                        out[b, ch, i, j] = sum(float(v) for v in vals) / count
    return out


@pytest.mark.parametrize("shape, kernel, strides, pads", [
    ((1, 1, 4, 4), [2, 2], [2, 2], [0, 0, 0, 0]),
    ((2, 3, 5, 6), [3, 2], [1, 2], [1, 1, 2, 0]),
    ((1, 2, 3, 3), [3, 3], [1, 1], [2, 2, 2, 2]),
    ((2, 2, 9, 7), [3, 3], [2, 3], [1, 0, 1, 2]),     # ResNet's stem pool, uneven
    ((1, 3, 8, 8), [1, 1], [3, 2], [0, 0, 0, 0]),
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pools_against_loops(shape, kernel, strides, pads, dtype):
    x = _f(*shape, dtype=dtype) - 3.0     # all negative: zero padding would win a max
    attrs = {"kernel": kernel, "strides": strides, "pads": pads}
    np.testing.assert_array_equal(run("maxpool2d", x, **attrs),
                                  _loop_pool(x, kernel, strides, pads, "max"))
    xi = RNG.integers(-100, -1, shape).astype(np.int32)
    np.testing.assert_array_equal(run("maxpool2d", xi, **attrs),
                                  _loop_pool(xi, kernel, strides, pads, "max"))
    for include in (False, True):
        np.testing.assert_allclose(run("avgpool2d", x, count_include_pad=include, **attrs),
                                   _loop_pool(x, kernel, strides, pads, "avg", include),
                                   rtol=1e-12 if dtype == np.float64 else 1e-6)


def test_maxpool_propagates_nan():
    x = np.zeros((1, 1, 2, 2), np.float32)
    x[0, 0, 1, 1] = np.nan
    assert np.isnan(run("maxpool2d", x, kernel=[2, 2])).all()


def _softmax64(x, axis):
    e = np.exp(x.astype(np.float64) - x.astype(np.float64).max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-13), (np.float32, 1e-6), (np.float16, 2e-3)])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_values(dtype, tol, axis):
    x = (RNG.standard_normal((3, 4, 5)) * 4).astype(dtype)
    want = _softmax64(x, axis)
    np.testing.assert_allclose(run("softmax", x, axis=axis), want, rtol=tol, atol=tol)
    np.testing.assert_allclose(run("log_softmax", x, axis=axis), np.log(want), rtol=tol,
                               atol=tol * 10)


def test_softmax_is_stable_and_traps_on_an_empty_axis():
    x = np.array([[1000.0, 1000.0, -np.inf], [-1000.0, 0.0, 1000.0]], np.float32)
    np.testing.assert_array_equal(run("softmax", x), [[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    assert run("log_softmax", x)[0, 2] == -np.inf
    assert trap("softmax", np.zeros((2, 0), np.float32)) == "softmax over an empty axis"


def test_layer_norm_and_batch_norm_values():
    x = _f(2, 3, 4, dtype=np.float64)
    scale, bias = _f(3, 4, dtype=np.float64), _f(4, dtype=np.float64)
    mu = x.mean(axis=(1, 2), keepdims=True)
    var = x.var(axis=(1, 2), keepdims=True)
    want = (x - mu) / np.sqrt(var + 1e-5) * scale + bias
    np.testing.assert_allclose(run("layer_norm", x, scale, bias, axis=1), want, rtol=1e-12)
    last = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 0.5)
    np.testing.assert_allclose(run("layer_norm", x, epsilon=0.5), last, rtol=1e-12)
    x4 = _f(2, 3, 2, 2, dtype=np.float64)
    s, b, m = (_f(3, dtype=np.float64) for _ in range(3))
    v = np.abs(_f(3, dtype=np.float64))
    got = run("batch_norm", x4, s, b, m, v)
    for c in range(3):
        np.testing.assert_allclose(got[:, c], (x4[:, c] - m[c]) / math.sqrt(v[c] + 1e-5) * s[c] + b[c],
                                   rtol=1e-12)
    assert "mean has shape [2]" in trap("batch_norm", x4, s, b, m[:2], v)


# ---- movement --------------------------------------------------------------------------------

def test_reshape_transpose_and_broadcast_values():
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    np.testing.assert_array_equal(run("reshape", x, shape=[4, -1]), np.arange(24).reshape(4, 6))
    assert "changes the element count" in trap("reshape", x, shape=[5, 5])
    assert "cannot fit" in trap("reshape", x, shape=[5, -1])
    assert "cannot fit" in trap("reshape", np.zeros((0, 3)), shape=[0, -1])
    np.testing.assert_array_equal(run("transpose", x), x.T)
    np.testing.assert_array_equal(run("transpose", x, perm=[2, 0, 1]), np.moveaxis(x, 2, 0))
    b = run("broadcast_to", np.array([1, 2, 3], np.int32), shape=[2, 3])
    np.testing.assert_array_equal(b, [[1, 2, 3], [1, 2, 3]])
    b[0, 0] = 9          # a register of its own, not a read-only view of the operand
    assert "cannot stretch [2]" in trap("broadcast_to", np.zeros(2), shape=[3])


def test_expand_squeeze_concat_values():
    x = _f(2, 3)
    assert run("expand_dims", x, axes=[0, -1]).shape == (1, 2, 3, 1)
    assert run("expand_dims", x, axes=[1]).shape == (2, 1, 3)
    assert run("squeeze", _f(1, 2, 1), axes=[0]).shape == (2, 1)
    assert "has size 2, not 1" in trap("squeeze", _f(1, 2), axes=[1])
    a, b = _f(2, 3), _f(4, 3)
    np.testing.assert_array_equal(run("concat", a, b, axis=-2), np.vstack([a, b]))
    assert "differ in dim 1 (3 and 2)" in trap("concat", a, _f(4, 2), axis=0)


def test_slice_matches_python_slicing():
    x = np.arange(5)
    for step in (-3, -2, -1, 1, 2, 3):
        for start in range(-8, 9):
            for end in range(-8, 9):
                got = run("slice", x, starts=[start], ends=[end], steps=[step])
                np.testing.assert_array_equal(got, x[start:end:step], err_msg=f"{start}:{end}:{step}")
    big = 2**63 - 1
    np.testing.assert_array_equal(run("slice", x, starts=[-1], ends=[-big], steps=[-1]), x[::-1])
    m = np.arange(42).reshape(6, 7)
    np.testing.assert_array_equal(
        run("slice", m, starts=[5, 1], ends=[0, 100], axes=[1, 0], steps=[-2, 3]), m[1::3, 5:0:-2])


def test_gather_matches_take_and_traps():
    data = _f(5, 3)
    for idx in (np.array([0, 4, -1, -5], np.int64), np.array([[1, 2], [-2, 0]], np.int32),
                np.array(3, np.int32)):
        for axis in (0, -2):
            np.testing.assert_array_equal(run("gather", data, idx, axis=axis),
                                          np.take(data, idx, axis=axis))
    np.testing.assert_array_equal(run("gather", data, np.array([2, -3]), axis=1), data[:, [2, 0]])
    assert trap("gather", data, np.array([1, 5])) == "gather index 5 is out of range for axis 0 of size 5"
    assert trap("gather", data, np.array([-4]), axis=1) == \
        "gather index -4 is out of range for axis 1 of size 3"
    assert "size 0" in trap("gather", np.zeros((0, 2)), np.array([0]))


def test_pad_matches_np_pad_and_crops():
    x = RNG.integers(-9, 9, (3, 4)).astype(np.int32)
    np.testing.assert_array_equal(run("pad", x, pads=[1, 0, 2, 3], value=7.9),
                                  np.pad(x, ((1, 2), (0, 3)), constant_values=7))
    np.testing.assert_array_equal(run("pad", x, pads=[-1, 2, 0, -3]),
                                  np.pad(x[1:, :1], ((0, 0), (2, 0))))
    f = _f(2, 2)
    np.testing.assert_array_equal(run("pad", f, pads=[0, 1, 0, 1], value=-np.inf),
                                  np.pad(f, ((0, 0), (1, 1)), constant_values=-np.inf))
    np.testing.assert_array_equal(run("pad", np.array([True]), pads=[1, 0], value=0.5),
                                  [True, True])
    assert "below size 0" in trap("pad", x, pads=[-2, 0, -2, 0])


def test_shape_of_and_iota_values():
    np.testing.assert_array_equal(run("shape_of", _f(2, 0, 4)), [2, 0, 4])
    assert run("shape_of", np.float32(1)).shape == (0,)
    got = run("iota", shape=[2, 3, 4], axis=1)
    np.testing.assert_array_equal(got, np.indices((2, 3, 4))[1])
    np.testing.assert_array_equal(run("iota", shape=[300], dtype=BY_NAME["u8"]),
                                  np.arange(300) % 256)


# ---- decompositions ------------------------------------------------------------------------

class Evaluator:
    """Runs emitted instructions one at a time through the op references and type rules."""

    def __init__(self, env: dict[str, np.ndarray]):
        self.env = dict(env)
        self.ops: list[str] = []

    def emit(self, op: str, operands: list, attrs: dict) -> str:
        opdef = OPS[op]
        full = check_attrs(opdef, attrs)
        regs = [self.env[o] for o in operands if isinstance(o, str)]
        if len(regs) != len(operands):
            # immediates, only where the family allows them, take their peer's dtype
            assert opdef.family in (Family.BINARY, Family.SELECT), f"{op} got an immediate"
            assert isinstance(regs[0], np.ndarray)
        values = [self.env[o] if isinstance(o, str) else np.asarray(o, dtype=regs[0].dtype)
                  for o in operands]
        (want,) = opdef.infer([type_of(v) for v in values], full)
        out = np.asarray(opdef.reference(full, *values))
        assert out.dtype == want.dtype.np and out.shape == want.shape, op
        name = f"t{len(self.env)}"
        self.env[name] = out
        self.ops.append(op)
        return name


DECOMPOSE_CASES = [
    ("softmax", [(2, 3, 5)], {}),
    ("softmax", [(4, 6)], {"axis": 0}),
    ("log_softmax", [(3, 5)], {}),
    ("log_softmax", [(2, 3, 4)], {"axis": -2}),
    ("layer_norm", [(2, 3, 4)], {}),
    ("layer_norm", [(2, 3, 4), (3, 4)], {"axis": 1}),
    ("layer_norm", [(2, 3, 4), (4,), (4,)], {"epsilon": 0.01}),
    ("batch_norm", [(2, 3, 4, 5), (3,), (3,), (3,), (3,)], {}),
    ("batch_norm", [(4, 3), (3,), (3,), (3,), (3,)], {"epsilon": 0.1}),
]


@pytest.mark.parametrize("dtype, tol", [(np.float32, 2e-6), (np.float64, 1e-14), (np.float16, 2e-3)])
@pytest.mark.parametrize("op, shapes, attrs", DECOMPOSE_CASES)
def test_decomposition_matches_reference(op, shapes, attrs, dtype, tol):
    arrays = [(RNG.standard_normal(s) * 3).astype(dtype) for s in shapes]
    if op == "batch_norm":
        arrays[4] = np.abs(arrays[4])           # a variance
    names = [f"in{i}" for i in range(len(arrays))]
    ev = Evaluator(dict(zip(names, arrays)))
    opdef = OPS[op]
    full = check_attrs(opdef, attrs)
    result = opdef.decompose(ev.emit, names, full, [type_of(a) for a in arrays])
    want = run(op, *arrays, **attrs)
    got = ev.env[result]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert op not in ev.ops and all(OPS[o].decompose is None for o in ev.ops)


def test_every_decomposition_is_tested():
    tested = {c[0] for c in DECOMPOSE_CASES}
    assert tested == {op.name for op in OPS.values() if op.decompose is not None}


# ---- N-d, dilated and ceil-mode pooling: against PyTorch and a loop over windows -------------

POOL_ND = [
    ((2, 3, 11), [3], [2], [1, 1], [2], False),
    ((1, 2, 9, 8), [3, 2], [2, 3], [1, 0, 1, 1], [2, 3], True),
    ((1, 2, 7, 6), [2, 2], [2, 2], [0, 0, 0, 0], [1, 1], True),
    ((1, 2, 6, 7, 5), [2, 3, 2], [1, 2, 2], [1, 1, 0, 0, 1, 1], [2, 1, 2], False),
    ((1, 1, 7, 7, 7), [3, 3, 3], [2, 2, 2], [1, 1, 1, 1, 1, 1], [1, 1, 1], True),
]


def _loop_pool_nd(x, kernel, strides, pads, dil, ceil, kind, include_pad):
    """Each window by explicit index arithmetic (ceil mode: ONNX's rule for the last window)."""
    nd = x.ndim - 2
    outs = []
    for i in range(nd):
        span = dil[i] * (kernel[i] - 1) + 1
        room = x.shape[2 + i] + pads[i] + pads[i + nd] - span
        o = (-(-room // strides[i]) if ceil else room // strides[i]) + 1
        if ceil and (o - 1) * strides[i] >= x.shape[2 + i] + pads[i]:
            o -= 1
        outs.append(o)
    out = np.zeros(x.shape[:2] + tuple(outs))
    for pos in itertools.product(*(range(o) for o in outs)):
        vals, count = [], 0
        for tap in itertools.product(*(range(k) for k in kernel)):
            idx = [pos[i] * strides[i] - pads[i] + tap[i] * dil[i] for i in range(nd)]
            inside = all(0 <= idx[i] < x.shape[2 + i] for i in range(nd))
            in_pads = all(-pads[i] <= idx[i] < x.shape[2 + i] + pads[i + nd] for i in range(nd))
            count += inside or (include_pad and in_pads)
            if inside:
                vals.append(x[(slice(None), slice(None)) + tuple(idx)])
        stacked = np.stack(vals)
        out[(slice(None), slice(None)) + pos] = stacked.max(0) if kind == "max" else \
            stacked.sum(0) / count
    return out.astype(x.dtype)


@pytest.mark.parametrize("shape, kernel, strides, pads, dil, ceil", POOL_ND)
def test_nd_dilated_ceil_pools_against_loops_and_torch(shape, kernel, strides, pads, dil, ceil):
    x = _f(*shape, dtype=np.float64) - 3.0
    attrs = {"kernel": kernel, "strides": strides, "pads": pads, "dilations": dil,
             "ceil_mode": ceil}
    got = run("maxpool2d", x, **attrs)
    np.testing.assert_array_equal(got, _loop_pool_nd(x, kernel, strides, pads, dil, ceil, "max",
                                                     False))
    for include in (False, True):
        np.testing.assert_allclose(run("avgpool2d", x, count_include_pad=include, **attrs),
                                   _loop_pool_nd(x, kernel, strides, pads, dil, ceil, "avg",
                                                 include), rtol=1e-12)
    torch = pytest.importorskip("torch")
    nd = len(kernel)
    symmetric = pads[:nd] == pads[nd:]
    if symmetric:
        fn = getattr(torch.nn.functional, f"max_pool{nd}d")
        want = fn(torch.tensor(x), kernel, strides, pads[:nd], dil, ceil_mode=ceil).numpy()
        np.testing.assert_array_equal(got, want)
    if symmetric and dil == [1] * nd:
        fn = getattr(torch.nn.functional, f"avg_pool{nd}d")
        for include in (False, True):
            want = fn(torch.tensor(x), kernel, strides, pads[:nd], ceil_mode=ceil,
                      count_include_pad=include).numpy()
            np.testing.assert_allclose(run("avgpool2d", x, count_include_pad=include, **attrs),
                                       want, rtol=1e-12)


def test_pool_attribute_lengths_follow_the_kernel():
    from isa.types import parse_type

    def type_error(op: str, t: str, **attrs: Any) -> str:
        with pytest.raises(OpTypeError) as e:
            OPS[op].infer([parse_type(t)], check_attrs(OPS[op], attrs))
        return str(e.value)
    assert "strides must have 3 entries" in type_error("maxpool2d", "f32[1, 1, 4, 4, 4]",
                                                       kernel=[2, 2, 2])
    assert "needs an (N, C, D1..D2) input" in type_error("avgpool2d", "f32[1, 1, 4]",
                                                         kernel=[2, 2])
