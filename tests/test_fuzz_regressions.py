"""The minimal programs of the JIT's wrong results found by the differential fuzzer
(tests/test_fuzz_jit.py), each run with jit="off" and jit="always" and compared."""
from __future__ import annotations

import numpy as np
import pytest
from fuzzgen.compare import run_both

REDUCE_AFTER_REDUCE = """module t
func @main(%x: f32[5, 17, 17]) -> f32[17] {
  %a = reduce_sum %x {axes = [0]}
  %r = reduce_mean %a {axes = [1]}
  ret %r
}"""


def _reduce(op: str, dtype: str, shape: list[int], axes: list[int], keepdims: bool) -> str:
    return f"""module t
func @main(%x: {dtype}[{", ".join(map(str, shape))}]) -> {dtype}[?] {{
  %r = {op} %x {{axes = {axes}, keepdims = {str(keepdims).lower()}}}
  %f = reshape %r {{shape = [-1]}}
  ret %f
}}"""


@pytest.mark.parametrize("op", ["reduce_mean", "reduce_sum", "reduce_max"])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype,shape,axes", [
    ("f64", [2, 2], [1]),            # reduce_mean gave [3.5, 3.5] for [[-5, 6], [6, 1]]
    ("f32", [5, 1, 3], [2]),
    ("f32", [4, 1, 1, 6], [3]),
    ("f32", [3, 4, 5], [1, 2]),
    ("i32", [6, 3], [-1]),
])
def test_keepdims_false_reduction_rows(op, keepdims, dtype, shape, axes):
    # a keepdims=false reduction's later values (reduce_mean's division by the count) lined up
    # with the trailing axes of the domain instead of the rows: every row got the last value
    if dtype == "i32" and op == "reduce_mean":
        op = "reduce_min"           # reduce_mean takes floats only
    src = _reduce(op, dtype, shape, axes, keepdims)
    x = np.arange(np.prod(shape)).reshape(shape)[..., ::-1] * 1.5 - 4
    run_both(src, [x.astype(np.dtype({"f32": "float32", "f64": "float64", "i32": "int32"}[dtype]))])


def test_reduce_mean_after_non_trailing_reduction():
    x = np.random.default_rng(0).standard_normal((5, 17, 17)).astype(np.float32)
    run_both(REDUCE_AFTER_REDUCE, [x])


@pytest.mark.parametrize("a,b", [((3, 7, 0), (0, 2)), ((3, 0, 4), (4, 2)), ((2, 3, 4), (4, 0)),
                                 ((0, 3, 4), (4, 2))])
def test_batched_matmul_with_a_zero_dim(a, b):
    # a stack of rows times one matrix became a 2-D product through reshape(-1, K), which
    # cannot infer -1 when K = 0 ("cannot reshape array of size 0")
    src = f"""module t
func @main(%x: f32[{a[0]}, {a[1]}, {a[2]}], %y: f32[{b[0]}, {b[1]}]) -> f32[{a[0]}, {a[1]}, {b[1]}] {{
  %r = matmul %x, %y
  %r = add %r, 1.0
  ret %r
}}"""
    got = run_both(src, [np.ones(a, np.float32), np.ones(b, np.float32)])
    assert got[0].shape == (a[0], a[1], b[1])


@pytest.mark.parametrize("line", ["%u = pow %x, -3", "%u = div %x, %y", "%u = mod %x, %y",
                                  "%u = div %x, %y\n  %v = add %u, 1"])
def test_unread_trapping_instruction_traps_in_every_tier(line):
    # the kernel computes only what its outputs need, so an unread division by zero or
    # negative integer power did not trap compiled; it now stays interpreted
    src = f"""module t
func @main(%x: i32[4], %y: i32[4]) -> i32[4] {{
  {line}
  %r = add %x, 1
  %r = mul %r, %x
  ret %r
}}"""
    out = run_both(src, [np.arange(4, dtype=np.int32), np.zeros(4, np.int32)])
    assert isinstance(out, str) and "trap" in out


def test_read_trapping_instruction_still_compiles_and_traps():
    src = """module t
func @main(%x: i32[4], %y: i32[4]) -> i32[4] {
  %u = div %x, %y
  %r = add %u, 1
  ret %r
}"""
    assert run_both(src, [np.arange(4, dtype=np.int32), np.array([1, 2, 0, 3], np.int32)]) \
        .startswith("Trap")
    run_both(src, [np.arange(4, dtype=np.int32), np.array([1, 2, 5, 3], np.int32)])


def test_epilogue_in_place_only_where_each_element_is_written_once():
    # fuzz seed 718: a dot product's epilogue (sin) shared a region with a dead use of a larger
    # value, which made the kernel's domain [17, 4, 3]; the scalar result was updated in place
    # at each of its 204 points, so sin was applied 204 times
    src = """module t
func @main(%p0: f32[17, 4, 3], %p1: f32[3], %p2: f32[3]) -> f32[] {
  %v1 = cast %p0 {to = i8}
  %v2 = max %v1, %v1
  %v3 = matmul %p1, %p2
  %v4 = cast %v2 {to = bool}
  %v5 = sin %v3
  ret %v5
}"""
    x = np.ones((17, 4, 3), np.float32)
    (got,) = run_both(src, [x, np.array([-3.75, 3, -1], np.float32), np.array([1, 2.25, -2.75], np.float32)])
    assert got == np.sin(np.float32(5.75))


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("body", ["%a = rsqrt %x\n  %r = neg %a", "%a = rsqrt %x\n  %r = mul %a, -1.0",
                                  "%a = rsqrt %x\n  %r = sub -0.0, %a",
                                  "%a = sqrt %x\n  %b = div %x, %a\n  %r = mul %b, -1.0",
                                  "%a = rsqrt %x\n  %b = neg %a\n  %r = erf %b"])
def test_negated_rsqrt_of_zero_and_inf(dtype, body):
    # fuzz seed 1428: -(1 / sqrt x) became one fdiv with the neg's `arcp`, which the x86
    # backend computes with the rsqrt estimate: NaN for 0, -0 and Inf instead of -inf, inf, -0
    src = f"module t\nfunc @main(%x: {dtype}[8]) -> {dtype}[8] {{\n  {body}\n  ret %r\n}}\n"
    x = np.array([0, -0.0, np.inf, -np.inf, np.nan, 1, 4, -1])
    run_both(src, [x.astype(np.float32 if dtype == "f32" else np.float64)])


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_division_by_negative_zero_immediate(dtype):
    # fuzz seed 3988: the kernel shared equal constant nodes, and -0.0 == 0.0 in Python, so
    # `div %s, -0.0` divided by sign's own 0.0: +inf where the interpreter gives -inf
    src = f"""module t
func @main(%x: {dtype}[3]) -> ({dtype}[3], {dtype}[3]) {{
  %s = sign %x
  %r = div %s, -0.0
  %q = sub %x, -0.0
  ret %r, %q
}}"""
    (r, q) = run_both(src, [np.array([1.5, -2.0, 0.0], np.float32 if dtype == "f32" else np.float64)])
    assert r[0] == -np.inf and r[1] == np.inf


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_pow_of_negative_infinity_and_zero_is_c99_in_every_tier(dtype):
    # fuzz seed 4281: the reference gave NaN for pow(-inf, 0.5) with an immediate exponent
    # (NumPy's loop takes sqrt for a broadcast 0.5) and +inf with a tensor one; the JIT gives
    # C99's +inf. Now the reference is C99's pow for every operand shape.
    src = f"""module t
func @main(%x: {dtype}[4], %y: {dtype}[4]) -> ({dtype}[4], {dtype}[4]) {{
  %c = ceil %x
  %a = pow %c, 0.5
  %a = sigmoid %a
  %b = pow %x, %y
  ret %a, %b
}}"""
    t = np.float32 if dtype == "f32" else np.float64
    x = np.array([-np.inf, -0.0, 4.0, -4.0], t)
    a, b = run_both(src, [x, np.full(4, 0.5, t)])
    assert a[0] == 1.0 and b[0] == np.inf and b[1] == 0 and not np.signbit(b[1])


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_sign_of_negative_zero_is_positive_zero(dtype):
    # fuzz seeds 8801 and 9240: sign's expansion kept -0 where np.sign (the reference) gives
    # +0, so rsqrt / reciprocal of it was -inf compiled and +inf interpreted
    src = f"""module t
func @main(%x: {dtype}[4]) -> ({dtype}[4], {dtype}[4]) {{
  %s = sign %x
  %r = reciprocal %s
  %q = mul %s, 1.0
  ret %r, %q
}}"""
    r, q = run_both(src, [np.array([-0.0, 0.0, np.nan, -3.0], np.float32 if dtype == "f32" else np.float64)])
    assert r[0] == np.inf and not np.signbit(q[0])


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_max_min_order_signed_zeros_in_every_tier(dtype):
    # fuzz seed 18085: np.minimum(-0, +0) is +0 (NumPy returns the second operand for equal
    # zeros), llvm.minimum gives -0: 1 / min was +inf interpreted, -inf compiled
    src = f"""module t
func @main(%x: {dtype}[4], %y: {dtype}[4]) -> ({dtype}[4], {dtype}[4]) {{
  %lo = min %x, %y
  %hi = max %x, %y
  %a = reciprocal %lo
  %b = reciprocal %hi
  ret %a, %b
}}"""
    t = np.float32 if dtype == "f32" else np.float64
    a, b = run_both(src, [np.array([-0.0, 0.0, -0.0, 0.0], t), np.array([0.0, -0.0, -0.0, 0.0], t)])
    assert a.tolist() == [-np.inf, -np.inf, -np.inf, np.inf]
    assert b.tolist() == [np.inf, np.inf, -np.inf, np.inf]
