"""Elementwise ops: unary, binary (NumPy broadcasting), select and cast.

Each row is its semantics (a NumPy reference) and, for composite ops, a scalar expansion into
primitive ops that fusing backends lower (tinygrad-style decomposition). Rows without `expand`
are primitives every backend must lower itself.
"""
from __future__ import annotations

import math

import numpy as np

from ..dtypes import BY_NAME, dtype_from_numpy
from ..errors import OpTypeError, Trap
from ..module import Imm
from ..types import TensorType
from . import mathref
from .opdef import NO_FACTS, NO_GRADIENT, AttrKind, AttrSpec, Facts, Family, OpDef
from .shapes import (
    broadcast_shapes,
    is_float,
    is_int_or_bool,
    is_numeric,
    is_signed_or_float,
    require_dtype,
    same_dtype,
)
from .strcast import check_str_cast, str_cast

BOOL = BY_NAME["bool"]


# ---- type rules shared by the family -------------------------------------------------------

def unary_rule(ok=None, what: str = "", result_dtype=None, check=None):
    def rule(types: list[TensorType], attrs) -> list[TensorType]:
        (t,) = types
        if check is not None:
            check(attrs)
        if ok is not None:
            require_dtype(rule.op, t, ok, what)
        return [t.with_dtype(result_dtype) if result_dtype else t]
    return rule


def binary_rule(ok=None, what: str = "", result_dtype=None):
    def rule(types: list[TensorType], attrs) -> list[TensorType]:
        dt = same_dtype(rule.op, types)
        if ok is not None:
            require_dtype(rule.op, types[0], ok, what)
        shape = broadcast_shapes([t.shape for t in types], rule.op)
        return [TensorType(result_dtype or dt, shape)]
    return rule


def select_rule(types: list[TensorType], attrs) -> list[TensorType]:
    c, a, b = types
    if c.dtype is not BOOL:
        raise OpTypeError(f"select condition must be bool, got {c.dtype}")
    dt = same_dtype("select", [a, b])
    return [TensorType(dt, broadcast_shapes([c.shape, a.shape, b.shape], "select"))]


def cast_rule(types: list[TensorType], attrs) -> list[TensorType]:
    if types[0].dtype.is_str or attrs["to"].is_str:
        check_str_cast(types[0].dtype, attrs["to"])
    return [types[0].with_dtype(attrs["to"])]


# ---- references with dlvm semantics where NumPy's differ or are undefined ------------------

def _int_zero_check(b, what: str) -> None:
    if np.any(np.asarray(b) == 0):
        raise Trap(f"integer {what} by zero")


def div_ref(attrs, a, b):
    if a.dtype.kind in "iu":
        _int_zero_check(b, "division")
        if a.dtype.kind == "i":
            # truncate toward zero (C, LLVM sdiv, WebAssembly), not NumPy's floor
            q = np.floor_divide(a, b)
            fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
            return (q + fix.astype(q.dtype)).astype(a.dtype)
        return np.floor_divide(a, b)
    return np.divide(a, b)


def mod_ref(attrs, a, b):
    if a.dtype.kind in "iu":
        _int_zero_check(b, "modulo")
    return np.mod(a, b)          # the result takes the divisor's sign (NumPy, Python)


def pow_ref(attrs, a, b):
    if a.dtype.kind in "iu" and np.any(np.asarray(b) < 0):
        raise Trap("integer pow with a negative exponent")
    if np.asarray(a).dtype.kind == "f":
        # C99 / IEEE 754 pow everywhere (pow(-inf, 0.5) = +inf, pow(-0, 0.5) = +0), as the JIT
        # computes it: NumPy's loop takes sqrt for a broadcast exponent of 0.5, so the same
        # program gave NaN for an immediate exponent and +inf for a tensor one (fuzzer)
        shape = np.broadcast_shapes(np.shape(a), np.shape(b))
        a, b = np.array(np.broadcast_to(a, shape)), np.array(np.broadcast_to(b, shape))
    return np.power(a, b)


def gelu_ref(attrs, x):
    if attrs["approximate"] == "tanh":
        inner = np.asarray(0.7978845608028654 * (x + 0.044715 * x * x * x), dtype=x.dtype)
        return (0.5 * x * (1 + np.tanh(inner))).astype(x.dtype)
    return (0.5 * x * (1 + mathref.erf(x / np.asarray(math.sqrt(2.0), x.dtype)))).astype(x.dtype)


def gelu_expand(s, attrs, x):
    half, one = s.const(0.5, x), s.const(1.0, x)
    if attrs["approximate"] == "tanh":
        x3 = s.mul(s.mul(x, x), x)
        inner = s.mul(s.add(x, s.mul(s.const(0.044715, x), x3)), s.const(0.7978845608028654, x))
        return s.mul(s.mul(half, x), s.add(one, s.tanh(inner)))
    return s.mul(s.mul(half, x), s.add(one, s.erf(s.mul(x, s.const(1 / math.sqrt(2.0), x)))))


def check_gelu_attrs(attrs) -> None:
    if attrs["approximate"] not in ("none", "tanh"):
        raise OpTypeError(f'gelu approximate must be "none" or "tanh", got "{attrs["approximate"]}"')


def sign_expand(s, attrs, x):
    zero = s.const(0, x)
    # -0 gives +0 as np.sign does (keeping x there gave -0, and 1 / sign(-0) was -inf compiled
    # and +inf interpreted: found by the fuzzer); NaN stays NaN (equal to nothing)
    rest = s.select(s.eq(x, zero), zero, x)
    neg = s.select(s.lt(x, zero), s.const(-1, x), rest)
    return s.select(s.gt(x, zero), s.const(1, x), neg)


def logical_not_ref(attrs, a):
    return np.logical_not(a) if a.dtype == np.bool_ else np.invert(a)


def cast_ref(attrs, a):
    to = attrs["to"]
    if to.is_str or a.dtype == object:
        return str_cast(a, to)
    if a.dtype.kind == "f" and to.is_int:
        return float_to_int_saturating(a, to.np)
    return a.astype(to.np)


def float_to_int_saturating(a: np.ndarray, to: np.dtype) -> np.ndarray:
    """Truncate toward zero, saturate to the range of `to`, NaN to 0: WebAssembly's `trunc_sat`
    and LLVM's `fptosi.sat` / `fptoui.sat`, so every tier gives the same answer. NumPy's own
    conversion of NaN and out-of-range values is undefined behaviour in C (INT_MIN on x86)."""
    lo, hi = dtype_from_numpy(to).int_range()      # narrow integers (int4 ...) included
    t = np.trunc(np.asarray(a, dtype=np.float64))     # exact for f16, f32 and f64 values
    # powers of two are exact in f64: the range test is exact at both ends
    big = float(hi) + 1.0
    over = t >= big
    under = t < float(lo)
    inside = np.where(np.isnan(t) | over | under, 0.0, t).astype(to)
    return np.where(over, to.type(hi), np.where(under, to.type(lo), inside)).astype(to)


def _u(name, code, ref, doc, ok=None, what="", result=None, expand=None, attrs=(), check=None,
       vjp=None, facts=NO_FACTS, steps=False):
    rule = unary_rule(ok, what, result, check)
    rule.op = name
    return OpDef(name, code, Family.UNARY, (1, 1), rule, ref, doc, attrs=attrs, expand=expand,
                 dtypes=what or "any", vjp=vjp, facts=facts, steps=steps)


def _b(name, code, ref, doc, ok=None, what="", result=None, expand=None, vjp=None,
       facts=NO_FACTS, strings=False):
    rule = binary_rule(ok, what, result)
    rule.op = name
    return OpDef(name, code, Family.BINARY, (2, 2), rule, ref, doc, expand=expand,
                 dtypes=what or "any", vjp=vjp, facts=facts, strings=strings)


# ---- neutral elements (Facts.neutral): the value per dtype that leaves the other operand ----

LEFT, RIGHT = "left", "right"


def zero(d) -> object:
    # x + 0 is exact for integers and bool (logical or); for floats only -0.0 is neutral
    return -0.0 if d.is_float else 0


def plus_zero(d) -> object:
    return 0.0 if d.is_float else 0     # x - (+0.0) == x for every float x, -0.0 included


def one(d) -> object:
    return True if d.is_bool else 1


def all_ones(d) -> object:
    if d.is_bool:
        return True
    return np.iinfo(d.np).max if not d.is_signed else -1


# ---- adjoint rules (g emits dlvm instructions; see OpDef.vjp) --------------------------------
# A unary rule gets (g, attrs, [x], y, ct); a binary one (g, attrs, [a, b], y, ct) and may
# return cotangents of the broadcast shape: the transform sums them back to each operand's.

def _d1(f):
    """A unary rule from the derivative: ct * f(g, x, y)."""
    return lambda g, attrs, xs, y, ct: [g.mul(ct, f(g, xs[0], y))]


def _gelu_vjp(g, attrs, xs, y, ct):
    (x,) = xs
    if attrs["approximate"] == "tanh":
        c, k = 0.7978845608028654, 0.044715
        x2 = g.mul(x, x)
        t = g.tanh(g.mul(g.mul(x, g.add(g.mul(x2, k), 1.0)), c))
        dt = g.mul(g.sub(1.0, g.mul(t, t)), g.mul(g.add(g.mul(x2, 3 * k), 1.0), c))
        d = g.add(g.mul(g.add(t, 1.0), 0.5), g.mul(g.mul(x, dt), 0.5))
    else:
        cdf = g.mul(g.add(g.erf(g.mul(x, 1 / math.sqrt(2.0))), 1.0), 0.5)
        pdf = g.mul(g.exp(g.mul(g.mul(x, x), -0.5)), 1 / math.sqrt(2 * math.pi))
        d = g.add(cdf, g.mul(x, pdf))
    return [g.mul(ct, d)]


def _select_mask(g, cond, ct):
    """ct where cond holds, 0 elsewhere."""
    return g.select(cond, ct, g.scalar(0, g.dtype(ct)))


def _max_vjp(pick):
    """max / min: the cotangent goes to the operand that won; a tie splits it evenly (as
    PyTorch's maximum does)."""
    def rule(g, attrs, xs, y, ct):
        half = g.mul(ct, 0.5)
        out = []
        for me, other in ((xs[0], xs[1]), (xs[1], xs[0])):
            if isinstance(me, Imm):
                out.append(None)
                continue
            wins = g.emit(pick, [me, other])
            tie = g.eq(me, other)
            out.append(g.select(wins, ct, _select_mask(g, tie, half)))
        return out
    return rule


def _pow_vjp(g, attrs, xs, y, ct):
    a, b = xs
    da = g.mul(ct, g.mul(b, g.pow(a, g.sub(b, 1.0) if not isinstance(b, Imm) else b.value - 1)))
    if isinstance(b, Imm):
        return [da, None]
    zero = g.scalar(0, g.dtype(ct))
    # d/db a^b = a^b ln a; where a is 0 the limit is 0 (PyTorch too), not 0 * -inf
    db = g.mul(ct, g.select(g.eq(a, 0.0), zero, g.mul(y, g.log(a))))
    return [da, db]


def _div_vjp(g, attrs, xs, y, ct):
    a, b = xs
    return [g.div(ct, b), None if isinstance(b, Imm) else g.neg(g.div(g.mul(ct, y), b))]


def _mod_vjp(g, attrs, xs, y, ct):
    a, b = xs
    return [ct, None if isinstance(b, Imm) else g.neg(g.mul(ct, g.floor(g.div(a, b))))]


def _select_vjp(g, attrs, xs, y, ct):
    c = xs[0]
    zero = g.scalar(0, g.dtype(ct))
    return [None, g.select(c, ct, zero), g.select(c, zero, ct)]


def _cast_vjp(g, attrs, xs, y, ct):
    (x,) = xs
    if isinstance(x, Imm) or not is_float(g.dtype(x)) or not is_float(attrs["to"]):
        return [None]
    return [g.cast(ct, to=g.dtype(x))]


ZERO_GRADIENT = NO_GRADIENT   # piecewise constant: the derivative is 0 wherever it exists


def _np1(f):
    def ref(attrs, a):
        return f(a)
    ref.ufunc = f   # the reference IS this ufunc: the interpreter may call it directly
    return ref


def _signed_zero_extreme(f, negative_wins: bool):
    """np.maximum / np.minimum with IEEE 754-2019's order of zeros (-0 < +0), as the compiled
    tiers compute them (llvm.maximum / llvm.minimum): NumPy returns its second operand for two
    equal zeros, so min(-0, +0) was +0 interpreted and -0 compiled (found by the fuzzer)."""
    def ref(attrs, a, b):
        r = f(a, b)
        if r.dtype.kind != "f":
            return r
        both = (a == 0) & (b == 0)
        if not np.any(both):
            return r
        sa, sb = np.signbit(a), np.signbit(b)
        neg = (sa | sb) if negative_wins else (sa & sb)
        return np.where(both, np.where(neg, r.dtype.type(-0.0), r.dtype.type(0.0)), r)
    return ref


def _np2(f):
    def ref(attrs, a, b):
        return f(a, b)
    ref.ufunc = f
    return ref


FLT = (is_float, "float")
NUM = (is_numeric, "numeric")
SGN = (is_signed_or_float, "signed or float")
LOG = (is_int_or_bool, "bool or integer")

OPS = [
    # -- unary --------------------------------------------------------------------------------
    _u("neg", 1, _np1(np.negative), "r := -a (integers wrap)", *SGN,
       facts=Facts(involution=True),
       vjp=lambda g, attrs, xs, y, ct: [g.neg(ct)]),
    _u("abs", 2, _np1(np.abs), "r := |a| (integers wrap at the minimum)", *NUM,
       vjp=_d1(lambda g, x, y: g.sign(x))),
    _u("exp", 3, _np1(np.exp), "r := e^a", *FLT,
       facts=Facts(mathfn="exp", costly=True),
       vjp=_d1(lambda g, x, y: y)),
    _u("log", 4, _np1(np.log), "r := ln a (log 0 = -inf, log of a negative = NaN)", *FLT,
       facts=Facts(mathfn="log", costly=True),
       vjp=lambda g, attrs, xs, y, ct: [g.div(ct, xs[0])]),
    _u("sqrt", 5, _np1(np.sqrt), "r := sqrt a (NaN for a < 0)", *FLT,
       facts=Facts(mathfn="sqrt"),
       vjp=lambda g, attrs, xs, y, ct: [g.div(g.mul(ct, 0.5), y)]),
    _u("rsqrt", 6, lambda attrs, a: (1 / np.sqrt(a)).astype(a.dtype), "r := 1 / sqrt a", *FLT,
       expand=lambda s, attrs, x: s.div(s.const(1.0, x), s.sqrt(x)),
       vjp=_d1(lambda g, x, y: g.mul(g.mul(g.mul(y, y), y), -0.5))),
    _u("reciprocal", 7, lambda attrs, a: (1 / a).astype(a.dtype), "r := 1 / a", *FLT,
       expand=lambda s, attrs, x: s.div(s.const(1.0, x), x),
       vjp=_d1(lambda g, x, y: g.neg(g.mul(y, y)))),
    _u("tanh", 8, _np1(np.tanh), "r := tanh a", *FLT,
       facts=Facts(mathfn="tanh", costly=True),
       vjp=_d1(lambda g, x, y: g.sub(1.0, g.mul(y, y)))),
    _u("sigmoid", 9, lambda attrs, a: (1 / (1 + np.exp(-a))).astype(a.dtype),
       "r := 1 / (1 + e^-a)", *FLT,
       expand=lambda s, attrs, x: s.div(s.const(1.0, x), s.add(s.const(1.0, x), s.exp(s.neg(x)))),
       vjp=_d1(lambda g, x, y: g.mul(y, g.sub(1.0, y)))),
    _u("relu", 10, lambda attrs, a: np.maximum(a, a.dtype.type(0)), "r := max(a, 0) (NaN stays NaN)",
       *NUM, expand=lambda s, attrs, x: s.max(x, s.const(0, x)),
       vjp=lambda g, attrs, xs, y, ct: [_select_mask(g, g.gt(xs[0], 0), ct)]),
    _u("gelu", 11, gelu_ref, "r := a/2 * (1 + erf(a / sqrt 2)); approximate = \"tanh\": "
       "a/2 * (1 + tanh(sqrt(2/pi) * (a + 0.044715 a^3)))", *FLT, expand=gelu_expand,
       attrs=(AttrSpec("approximate", AttrKind.STR, "none", 'one of "none", "tanh"'),),
       check=check_gelu_attrs,
       vjp=_gelu_vjp),
    _u("erf", 12, lambda attrs, a: mathref.erf(a), "r := erf a", *FLT,
       facts=Facts(mathfn="erf", costly=True),
       vjp=_d1(lambda g, x, y: g.mul(g.exp(g.neg(g.mul(x, x))), 2 / math.sqrt(math.pi)))),
    _u("sin", 13, _np1(np.sin), "r := sin a", *FLT,
       facts=Facts(mathfn="sin", costly=True),
       vjp=_d1(lambda g, x, y: g.cos(x))),
    _u("cos", 14, _np1(np.cos), "r := cos a", *FLT,
       facts=Facts(mathfn="cos", costly=True),
       vjp=_d1(lambda g, x, y: g.neg(g.sin(x)))),
    _u("floor", 15, _np1(np.floor), "r := the largest integer <= a", *FLT,
       facts=Facts(mathfn="floor"),
       vjp=ZERO_GRADIENT, steps=True),
    _u("ceil", 16, _np1(np.ceil), "r := the smallest integer >= a", *FLT,
       facts=Facts(mathfn="ceil"),
       vjp=ZERO_GRADIENT, steps=True),
    _u("round", 17, _np1(np.rint), "r := a rounded to the nearest integer, halves to even", *FLT,
       facts=Facts(mathfn="rint"),
       vjp=ZERO_GRADIENT, steps=True),
    _u("sign", 18, _np1(np.sign), "r := -1, 0 or 1 by the sign of a (NaN stays NaN)", *NUM,
       expand=sign_expand,
       vjp=ZERO_GRADIENT),
    _u("not", 19, logical_not_ref, "r := logical not (bool), bitwise not (integers)", *LOG,
       facts=Facts(involution=True),
       vjp=NO_GRADIENT),
    _u("isnan", 20, _np1(np.isnan), "r := a is NaN (bool result)", *FLT, result=BOOL,
       expand=lambda s, attrs, x: s.ne(x, x),
       vjp=NO_GRADIENT),
    # -- binary (NumPy broadcasting; both operands of one dtype) ------------------------------
    _b("add", 32, _np2(np.add), "r := a + b (integers wrap)",
       facts=Facts(neutral=((LEFT, RIGHT), zero)),
       vjp=lambda g, attrs, xs, y, ct: [ct, ct]),
    _b("sub", 33, _np2(np.subtract), "r := a - b (integers wrap)", *NUM,
       facts=Facts(neutral=((RIGHT,), plus_zero)),
       vjp=lambda g, attrs, xs, y, ct: [ct, g.neg(ct)]),
    _b("mul", 34, _np2(np.multiply), "r := a * b (integers wrap)",
       facts=Facts(neutral=((LEFT, RIGHT), one)),
       vjp=lambda g, attrs, xs, y, ct: [g.mul(ct, xs[1]), g.mul(ct, xs[0])]),
    _b("div", 35, div_ref, "r := a / b; integers truncate toward zero and trap on a zero divisor",
       *NUM,
       facts=Facts(neutral=((RIGHT,), one)),
       vjp=_div_vjp),
    _b("pow", 36, pow_ref, "r := a ^ b; integers trap on a negative exponent", *NUM,
       facts=Facts(mathfn="pow", costly=True, neutral=((RIGHT,), one)),
       vjp=_pow_vjp),
    _b("max", 37, _signed_zero_extreme(np.maximum, negative_wins=False),
       "r := the larger of a, b (NaN if either is NaN; -0 < +0)",
       vjp=_max_vjp("gt")),
    _b("min", 38, _signed_zero_extreme(np.minimum, negative_wins=True),
       "r := the smaller of a, b (NaN if either is NaN; -0 < +0)",
       vjp=_max_vjp("lt")),
    _b("mod", 39, mod_ref, "r := a - floor(a / b) * b, the sign of b (NumPy); integers trap on "
       "a zero divisor", *NUM,
       vjp=_mod_vjp),
    _b("and", 40, _np2(np.bitwise_and), "r := a and b (logical for bool, bitwise for integers)",
       *LOG,
       facts=Facts(neutral=((LEFT, RIGHT), all_ones)),
       vjp=NO_GRADIENT),
    _b("or", 41, _np2(np.bitwise_or), "r := a or b (logical for bool, bitwise for integers)", *LOG,
       facts=Facts(neutral=((LEFT, RIGHT), zero)),
       vjp=NO_GRADIENT),
    _b("xor", 42, _np2(np.bitwise_xor), "r := a xor b (logical for bool, bitwise for integers)",
       *LOG,
       facts=Facts(neutral=((LEFT, RIGHT), zero)),
       vjp=NO_GRADIENT),
    _b("eq", 43, _np2(np.equal), "r := a == b (bool result; str: the same text)", result=BOOL,
       vjp=NO_GRADIENT, strings=True),
    _b("ne", 44, _np2(np.not_equal), "r := a != b (bool result; NaN != NaN)", result=BOOL,
       vjp=NO_GRADIENT, strings=True),
    _b("lt", 45, _np2(np.less), "r := a < b (bool result)", *NUM, result=BOOL,
       vjp=NO_GRADIENT),
    _b("le", 46, _np2(np.less_equal), "r := a <= b (bool result)", *NUM, result=BOOL,
       vjp=NO_GRADIENT),
    _b("gt", 47, _np2(np.greater), "r := a > b (bool result)", *NUM, result=BOOL,
       vjp=NO_GRADIENT),
    _b("ge", 48, _np2(np.greater_equal), "r := a >= b (bool result)", *NUM, result=BOOL,
       vjp=NO_GRADIENT),
    # -- select and cast ----------------------------------------------------------------------
    OpDef("select", 56, Family.SELECT, (3, 3), select_rule,
          lambda attrs, c, a, b: np.where(c, a, b),
          "r := c ? a : b elementwise, the three broadcast together", dtypes="c: bool; a, b: any",
          extra={"operands": ("c", "a", "b")},  # named as in the doc line, for specs/ops.md
          vjp=_select_vjp,
          strings=True),
    OpDef("cast", 57, Family.CAST, (1, 1), cast_rule, cast_ref,
          "r := a converted to dtype `to`; float to integer truncates toward zero and saturates "
          "(out-of-range values and infinities give the nearest integer of the range, NaN gives "
          "0); to bool is a != 0; str to a number parses it (\"1e-5\", \"nan\"; \"100.5\" to an "
          "integer gives 100; text that is no number traps), a number to str prints the fewest "
          "digits that read back (ONNX Cast)",
          attrs=(AttrSpec("to", AttrKind.DTYPE, doc="the result dtype"),), dtypes="any",
          vjp=_cast_vjp,
          strings=True),
]

