"""Elementwise ONNX ops: direct dlvm ops where one exists, decompositions for the rest.

ONNX broadcasting is NumPy's, like dlvm's binary family, so binary ops map one to one. Activation
functions without a dlvm op are written in primitive ops with the same formula the ONNX spec
gives (in the value's dtype, like onnxruntime).
"""
from __future__ import annotations

import numpy as np

from frontends.base import mathfn
from isa.dtypes import BY_NAME

from ..registry import NodeCtx, onnx_op
from ..symdim import combine
from ..values import Value
from .common import cast, onnx_cast, scalar, where

BOOL, F32, I32 = BY_NAME["bool"], BY_NAME["f32"], BY_NAME["i32"]

_UNARY = {
    "Abs": "abs", "Neg": "neg", "Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Tanh": "tanh",
    "Sigmoid": "sigmoid", "Relu": "relu", "Erf": "erf", "Sin": "sin", "Cos": "cos",
    "Floor": "floor", "Ceil": "ceil", "Round": "round", "Sign": "sign", "Not": "not",
    "IsNaN": "isnan", "Reciprocal": "reciprocal", "BitwiseNot": "not",
}
_BINARY = {
    "Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "And": "and", "Or": "or",
    "Xor": "xor", "Equal": "eq", "Less": "lt", "LessOrEqual": "le", "Greater": "gt",
    "GreaterOrEqual": "ge", "BitwiseAnd": "and", "BitwiseOr": "or", "BitwiseXor": "xor",
}
_VARIADIC = {"Max": "max", "Min": "min", "Sum": "add"}


@onnx_op(*_UNARY)
def unary(ctx: NodeCtx) -> list[Value]:
    return [ctx.e.emit(_UNARY[ctx.node.op_type], [ctx.req(0)], ctx.node.output[0])]


@onnx_op(*_BINARY)
def binary(ctx: NodeCtx) -> list[Value]:
    op = _BINARY[ctx.node.op_type]
    a, b = ctx.req(0), ctx.req(1)
    out = ctx.e.emit(op, [a, b], ctx.node.output[0])
    if op in ("add", "sub", "mul", "div") and (a.sym is not None or b.sym is not None):
        out = _shape_arithmetic(ctx, op, a, b, out)
    elif op == "eq" and (a.sym is not None or b.sym is not None):
        out = _shape_equal(ctx, a, b, out)
    return [out]


def _entries(v: Value) -> list | None:
    """A shape vector's entries (sizes, names, expressions), or a small integer constant's"""
    if v.sym is not None:
        return list(v.sym)
    if v.const is not None and v.dtype.is_int and v.const.size <= 8:
        return [int(x) for x in v.const.reshape(-1)]
    return None


def _broadcast_entries(ea: list, eb: list) -> tuple[list, list] | None:
    n = max(len(ea), len(eb))
    if len(ea) not in (1, n) or len(eb) not in (1, n):
        return None
    return ea * (n // len(ea)), eb * (n // len(eb))


def _shape_equal(ctx: NodeCtx, a: Value, b: Value, out: Value) -> Value:
    """Equal of a shape vector and constants, decided where it can be: a size against a size,
    and a dim (never negative) against a negative number. The TorchScript exporter writes
    expand(-1, B, -1) and bucketize's broadcast as Where(Equal(shape, -1), 1, shape): decided,
    the Where keeps the shape's names and the Expand its batch."""
    ea, eb = _entries(a), _entries(b)
    pair = _broadcast_entries(ea, eb) if ea is not None and eb is not None else None
    if pair is None or out.rank > 1 or not all(isinstance(d, int) for d in out.shape):
        return out
    derived = ctx.e.derived

    def nonnegative(d) -> bool:
        expr = derived.expr(d) if d is not None else None
        return expr is not None and all(c > 0 for _, c in expr.terms)

    res = []
    for x, y in zip(*pair):
        if isinstance(x, int) and isinstance(y, int):
            res.append(x == y)
        elif isinstance(y, int) and y < 0 and nonnegative(x) or \
                isinstance(x, int) and x < 0 and nonnegative(y):
            res.append(False)
        else:
            return out
    from ..values import known
    return known(np.array(res, dtype=bool).reshape(out.shape))


def _shape_arithmetic(ctx: NodeCtx, op: str, a: Value, b: Value, out: Value) -> Value:
    """Integer arithmetic on shape values (batch * heads, seq - 1) keeps their entries as
    expressions of the named dims, so the reshape they feed keeps its names."""
    from .shape import sym_value
    ea, eb = _entries(a), _entries(b)
    if ea is None or eb is None or out.rank > 1 or not out.dtype.is_int or \
            not all(isinstance(d, int) for d in out.shape):
        return out
    pair = _broadcast_entries(ea, eb)
    if pair is None:
        return out
    derived = ctx.e.derived
    res = [combine(derived, op, x, y) for x, y in zip(*pair)]
    return sym_value(ctx.e, res, out, out.dtype, shape=out.shape)


@onnx_op(*_VARIADIC, "Mean")
def variadic(ctx: NodeCtx) -> list[Value]:
    op = _VARIADIC.get(ctx.node.op_type, "add")
    vals = [v for v in ctx.inputs if v is not None]
    acc = vals[0]
    for v in vals[1:]:
        acc = ctx.e.emit(op, [acc, v], ctx.node.output[0])
    if ctx.node.op_type == "Mean":
        acc = ctx.e.emit("div", [acc, scalar(len(vals), acc)], ctx.node.output[0])
    if len(vals) == 1:
        acc = ctx.e.emit("mov", [acc], ctx.node.output[0])
    return [acc]


@onnx_op("Pow")
def pow_(ctx: NodeCtx) -> list[Value]:
    # the result has the base's dtype; the exponent may be of another type
    x, y = ctx.req(0), ctx.req(1)
    e = ctx.e
    if x.dtype.is_int and y.dtype.is_float:
        r = e.emit("pow", [cast(e, x, y.dtype), y], "pow")
        return [cast(e, r, x.dtype)]
    return [e.emit("pow", [x, cast(e, y, x.dtype)], ctx.node.output[0])]


@onnx_op("Mod")
def mod(ctx: NodeCtx) -> list[Value]:
    a, b = ctx.req(0), ctx.req(1)
    e = ctx.e
    r = e.emit("mod", [a, b], "mod")
    fmod = ctx.attr("fmod", 0)
    if not fmod:            # the divisor's sign, as dlvm's mod (NumPy)
        return [r]
    # C fmod takes the sign of the dividend: shift mod's result by b where the signs differ
    zero = scalar(0, a)
    fix = e.emit("and", [e.emit("ne", [r, zero]),
                         e.emit("ne", [e.emit("lt", [r, zero]), e.emit("lt", [a, zero])])])
    return [where(e, fix, e.emit("sub", [r, b]), r)]


@onnx_op("Where")
def where_(ctx: NodeCtx) -> list[Value]:
    c, a, b = ctx.req(0), ctx.req(1), ctx.req(2)
    out = where(ctx.e, c, a, b)
    if c.const is not None and c.const.size <= 8 and (a.sym is not None or b.sym is not None):
        # a decided condition over shape vectors (see _shape_equal): the entries it picks
        from .shape import sym_value
        ea, eb = _entries(a), _entries(b)
        pair = _broadcast_entries(ea, eb) if ea is not None and eb is not None else None
        conds = [bool(v) for v in c.const.reshape(-1)]
        if pair is not None and out.rank <= 1 and len(conds) in (1, len(pair[0])) and \
                all(isinstance(d, int) for d in out.shape) and int(np.prod(out.shape)) == len(pair[0]):
            conds = conds * (len(pair[0]) // len(conds))
            out = sym_value(ctx.e, [x if k else y for k, x, y in zip(conds, *pair)], out,
                            out.dtype, shape=out.shape)
    return [out]


def _cast_to(ctx: NodeCtx, x: Value, to) -> Value:
    saturate = bool(ctx.attr("saturate", 1))      # float8 targets only
    round_mode = ctx.attr("round_mode", "up") if ctx.version >= 24 else "up"
    if to.text == "f8e8m0fnu" and x.dtype != to and x.dtype.is_float:
        return _to_e8m0(ctx, x, to, round_mode, saturate)
    return onnx_cast(ctx.e, x, to, saturate)


def _to_e8m0(ctx: NodeCtx, x: Value, to, round_mode: str, saturate: bool) -> Value:
    """ONNX's cast to float8e8m0 (a power of two, 2^(e - 127)): e is the f32 exponent field
    of |x|, rounded by round_mode on the fraction bits ("up": any fraction adds one; "nearest":
    the guard bit and any bit below it or a nonzero exponent; "down": none), not past 254 when
    saturating; NaN and infinities give NaN (onnx.numpy_helper.to_float8e8m0). dlvm's cast of a
    float rounds to the nearest power of two instead, so the exponent is computed here and the
    exact power of two is cast."""
    if round_mode not in ("up", "down", "nearest"):
        raise ctx.fail(f"round_mode {round_mode!r} is not one of up, down, nearest")
    e = ctx.e
    bits = e.emit("bitcast", [onnx_cast(e, x, F32, True)], "bits", to=I32)
    bits = e.emit("and", [bits, scalar(0x7FFFFFFF, I32)], "bits")          # |x|
    exp = e.emit("div", [bits, scalar(1 << 23, I32)], "exp")
    frac = e.emit("and", [bits, scalar(0x7FFFFF, I32)], "frac")

    def has(mask: int) -> Value:
        return e.emit("ne", [e.emit("and", [frac, scalar(mask, I32)]), scalar(0, I32)])
    special = e.emit("eq", [exp, scalar(255, I32)])
    up = None
    if round_mode == "up":
        up = e.emit("gt", [frac, scalar(0, I32)])
    elif round_mode == "nearest":
        rest = e.emit("or", [e.emit("or", [has(0x200000), has(0x1FFFFF)]),
                             e.emit("gt", [exp, scalar(0, I32)])])
        up = e.emit("and", [has(0x400000), rest])
    if up is not None:
        up = e.emit("and", [up, e.emit("not", [special])])
        if saturate:
            up = e.emit("and", [up, e.emit("ne", [exp, scalar(254, I32)])])
        exp = e.emit("add", [exp, cast(e, up, I32)], "exp")
    power = e.emit("bitcast", [e.emit("mul", [exp, scalar(1 << 23, I32)])], "pow2", to=F32)
    power = where(e, e.emit("eq", [exp, scalar(0, I32)]), scalar(2.0 ** -127, F32), power)
    power = where(e, e.emit("eq", [exp, scalar(255, I32)]), scalar(np.nan, F32), power)
    return onnx_cast(e, power, to, saturate)


@onnx_op("Cast", since=6)      # 6 on: the same semantics, more element types later
def cast_(ctx: NodeCtx) -> list[Value]:
    from ..graph import onnx_dtype
    to = onnx_dtype(ctx.attr("to"), ctx.label)
    x = ctx.req(0)
    out = _cast_to(ctx, x, to)
    if x.sym is not None and x.dtype.is_int and (to.is_int or to.is_float) and out.sym is None:
        out = Value(out.type, out.operand, out.const, x.sym)     # shape arithmetic goes on
    return [out]


@onnx_op("CastLike")
def cast_like(ctx: NodeCtx) -> list[Value]:
    return [_cast_to(ctx, ctx.req(0), ctx.req(1).dtype)]


@onnx_op("Identity")
def identity(ctx: NodeCtx) -> list[Value]:
    return [ctx.req(0)]


@onnx_op("Dropout", since=13)
def dropout(ctx: NodeCtx) -> list[Value]:
    """Inference, or a ratio of 0: the identity with an all-true mask. Training mode: each
    element is kept where a uniform draw is at or above the ratio, and scaled by
    1 / (1 - ratio) (ops/random.py draws it). Where training_mode is known only at run time,
    both are computed and the flag selects."""
    from .random import seed_of, uniform_mask
    seed_of(ctx)                # read (and checked) even where nothing is drawn
    t, ratio, x, e = ctx.input(2), ctx.input(1), ctx.req(0), ctx.e
    zero_ratio = ratio is not None and ratio.known and float(ratio.const) == 0.0
    training = t is not None and (t.const is None or bool(t.const))
    want_mask = len(ctx.node.output) > 1 and bool(ctx.node.output[1])
    all_kept = e.emit_const_fill(True, x.type.with_dtype(BOOL), "mask") if want_mask else None
    if not training or zero_ratio:
        return [x, all_kept] if want_mask else [x]
    if not x.dtype.is_float:
        raise ctx.fail(f"Dropout in training mode takes a float tensor, got {x.dtype.name}")
    ratio = scalar(0.5, x) if ratio is None else cast(e, ratio, x.dtype)
    keep = uniform_mask(ctx, x, ratio)
    scale = e.emit("div", [scalar(1, x), e.emit("sub", [scalar(1, x), ratio])])
    y = where(e, keep, e.emit("mul", [x, scale]), scalar(0, x))
    if t.const is None:         # training_mode given at run time
        on = cast(e, t, BOOL)
        y = where(e, on, y, x)
        keep = e.emit("or", [keep, e.emit("not", [on])]) if want_mask else keep
    return [y, keep] if want_mask else [y]


@onnx_op("Clip", since=11)     # 11 on: min and max are inputs
def clip(ctx: NodeCtx) -> list[Value]:
    x, lo, hi = ctx.req(0), ctx.input(1), ctx.input(2)
    e = ctx.e
    if lo is not None:
        x = e.emit("max", [x, lo], "clip")
    if hi is not None:
        x = e.emit("min", [x, hi], "clip")
    return [x]


# ---- activations without a dlvm op ------------------------------------------------------

def _act(ctx: NodeCtx, name: str, default: float) -> float:
    return float(ctx.attr(name, default))


@onnx_op("LeakyRelu")
def leaky_relu(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    alpha = _act(ctx, "alpha", 0.01)
    return [where(e, e.emit("lt", [x, scalar(0, x)]), e.emit("mul", [x, scalar(alpha, x)]), x)]


@onnx_op("PRelu")
def prelu(ctx: NodeCtx) -> list[Value]:
    x, slope, e = ctx.req(0), ctx.req(1), ctx.e
    return [where(e, e.emit("lt", [x, scalar(0, x)]), e.emit("mul", [x, slope]), x)]


@onnx_op("Elu")
def elu(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    alpha = _act(ctx, "alpha", 1.0)
    neg = e.emit("mul", [e.emit("sub", [e.emit("exp", [x]), scalar(1, x)]), scalar(alpha, x)])
    return [where(e, e.emit("lt", [x, scalar(0, x)]), neg, x)]


@onnx_op("Celu")
def celu(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    alpha = _act(ctx, "alpha", 1.0)
    ex = e.emit("exp", [e.emit("div", [x, scalar(alpha, x)])])
    neg = e.emit("min", [scalar(0, x), e.emit("mul", [scalar(alpha, x), e.emit("sub", [ex, scalar(1, x)])])])
    return [e.emit("add", [e.emit("max", [x, scalar(0, x)]), neg])]


@onnx_op("Selu")
def selu(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    alpha = _act(ctx, "alpha", 1.67326319217681884765625)
    gamma = _act(ctx, "gamma", 1.05070102214813232421875)
    neg = e.emit("sub", [e.emit("mul", [e.emit("exp", [x]), scalar(alpha, x)]), scalar(alpha, x)])
    r = where(e, e.emit("gt", [x, scalar(0, x)]), x, neg)
    return [e.emit("mul", [r, scalar(gamma, x)])]


@onnx_op("ThresholdedRelu")
def thresholded_relu(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    alpha = _act(ctx, "alpha", 1.0)
    return [where(e, e.emit("gt", [x, scalar(alpha, x)]), x, scalar(0, x))]


@onnx_op("HardSigmoid")
def hard_sigmoid(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    alpha, beta = _act(ctx, "alpha", 0.2), _act(ctx, "beta", 0.5)
    y = e.emit("add", [e.emit("mul", [x, scalar(alpha, x)]), scalar(beta, x)])
    return [e.emit("min", [e.emit("max", [y, scalar(0, x)]), scalar(1, x)])]


@onnx_op("HardSwish")
def hard_swish(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    y = e.emit("add", [e.emit("mul", [x, scalar(1 / 6, x)]), scalar(0.5, x)])
    y = e.emit("min", [e.emit("max", [y, scalar(0, x)]), scalar(1, x)])
    return [e.emit("mul", [x, y])]


def _softplus(e, x: Value) -> Value:
    # log(1 + e^x) = max(x, 0) + log(1 + e^-|x|): no overflow for large x
    t = e.emit("log", [e.emit("add", [scalar(1, x), e.emit("exp", [e.emit("neg", [e.emit("abs", [x])])])])])
    return e.emit("add", [e.emit("max", [x, scalar(0, x)]), t])


@onnx_op("Softplus")
def softplus(ctx: NodeCtx) -> list[Value]:
    return [_softplus(ctx.e, ctx.req(0))]


@onnx_op("Softsign")
def softsign(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    return [e.emit("div", [x, e.emit("add", [scalar(1, x), e.emit("abs", [x])])])]


@onnx_op("Mish")
def mish(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    return [e.emit("mul", [x, e.emit("tanh", [_softplus(e, x)])])]


@onnx_op("Swish")
def swish(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    alpha = _act(ctx, "alpha", 1.0)
    return [e.emit("mul", [x, e.emit("sigmoid", [e.emit("mul", [x, scalar(alpha, x)])])])]


@onnx_op("Gelu", since=20)
def gelu(ctx: NodeCtx) -> list[Value]:
    approx = ctx.attr("approximate", "none")
    return [ctx.e.emit("gelu", [ctx.req(0)], ctx.node.output[0], approximate=approx)]


@onnx_op("Shrink")
def shrink(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    lambd, bias = _act(ctx, "lambd", 0.5), _act(ctx, "bias", 0.0)
    lo = e.emit("add", [x, scalar(bias, x)])
    hi = e.emit("sub", [x, scalar(bias, x)])
    r = where(e, e.emit("gt", [x, scalar(lambd, x)]), hi, scalar(0, x))
    return [where(e, e.emit("lt", [x, scalar(-lambd, x)]), lo, r)]


@onnx_op("IsInf")
def is_inf(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    pos, neg = ctx.attr("detect_positive", 1), ctx.attr("detect_negative", 1)
    inf = float("inf")
    r = e.emit_const_fill(False, x.type.with_dtype(BOOL)) if not (pos or neg) else None
    if pos:
        r = e.emit("eq", [x, scalar(inf, x)])
    if neg:
        n = e.emit("eq", [x, scalar(-inf, x)])
        r = n if r is None else e.emit("or", [r, n])
    return [r]


@onnx_op("Tan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh")
def hyperbolic_and_tan(ctx: NodeCtx) -> list[Value]:
    return [mathfn.BY_NAME[ctx.node.op_type.lower()](ctx.e, ctx.req(0))]


@onnx_op("BitShift")
def bit_shift(ctx: NodeCtx) -> list[Value]:
    # x << y is x * 2^y and x >> y is floor(x / 2^y), with the integer wrap of dlvm's mul. A
    # shift by `width` or more (or a negative one, which ONNX reads as a huge unsigned count)
    # shifts every bit out: 0, or the sign fill for a right shift of a signed value. For signed
    # right shifts 2^(width-1) wraps negative, so that count is also a sign fill (exactly
    # x >> (width-1)).
    x, y, e = ctx.req(0), ctx.req(1), ctx.e
    left = ctx.attr("direction") == "LEFT"
    width = 8 * x.dtype.itemsize
    limit = width - 1 if x.dtype.is_signed and not left else width
    out = e.emit("ge", [y, scalar(limit, y)])
    if y.dtype.is_signed:
        out = e.emit("or", [out, e.emit("lt", [y, scalar(0, y)])])
    y = where(e, out, scalar(0, y), y)
    p = e.emit("pow", [scalar(2, x), y])
    if left:
        r = e.emit("mul", [x, p])
        return [where(e, out, scalar(0, x), r)]
    q = e.emit("div", [x, p])
    if not x.dtype.is_signed:
        return [where(e, out, scalar(0, x), q)]
    # dlvm's div truncates toward zero; an arithmetic shift floors
    inexact = e.emit("ne", [e.emit("mul", [q, p]), x])
    neg = e.emit("lt", [x, scalar(0, x)])
    fix = e.emit("and", [inexact, neg])
    r = where(e, fix, e.emit("sub", [q, scalar(1, x)]), q)
    return [where(e, out, where(e, neg, scalar(-1, x), scalar(0, x)), r)]
