"""Atan, Asin and Acos, which dlvm has no op for, from sqrt, division and a short series.

atan: for |x| > 1, atan x = pi/2 - atan(1/|x|) (with x's sign), so the series only sees [0, 1];
two argument halvings, atan t = 2 atan(t / (1 + sqrt(1 + t^2))), bring t below tan(pi/16) ~ 0.2,
where the odd Taylor series to t^21 is exact to double precision (the first term left out is
below 0.2^23 / 23 ~ 4e-18). Each step rounds once, so results are a few ulps from the correctly
rounded value; f16 is computed in f32 and rounded once.
asin x = atan(x / sqrt((1 - x)(1 + x))) and acos x = 2 atan(sqrt((1 - x) / (1 + x))) keep
precision near |x| = 1, and give pi/2 (or 0 and pi) exactly there through atan(inf).
"""
from __future__ import annotations

import math

from isa.dtypes import BY_NAME

from ..registry import NodeCtx, onnx_op
from ..values import Emitter, Value
from .common import cast, scalar, where

F16, F32 = BY_NAME["f16"], BY_NAME["f32"]
SERIES_TERMS = 11           # t - t^3/3 + ... - t^19/19 + t^21/21


def _atan(e: Emitter, x: Value) -> Value:
    ax = e.emit("abs", [x])
    big = e.emit("gt", [ax, scalar(1, x)])
    # 1 / max(|x|, 1) never divides by zero; it is only selected where |x| > 1 (1 / inf = 0)
    t = where(e, big, e.emit("reciprocal", [e.emit("max", [ax, scalar(1, x)])]), ax)
    for _ in range(2):
        root = e.emit("sqrt", [e.emit("add", [e.emit("mul", [t, t]), scalar(1, x)])])
        t = e.emit("div", [t, e.emit("add", [root, scalar(1, x)])])
    t2 = e.emit("mul", [t, t])
    acc = scalar((-1) ** (SERIES_TERMS - 1) / (2 * SERIES_TERMS - 1), x)
    for k in range(SERIES_TERMS - 2, -1, -1):
        acc = e.emit("add", [e.emit("mul", [acc, t2]), scalar((-1) ** k / (2 * k + 1), x)])
    r = e.emit("mul", [e.emit("mul", [acc, t]), scalar(4, x)])
    r = where(e, big, e.emit("sub", [scalar(math.pi / 2, x), r]), r)
    return where(e, e.emit("lt", [x, scalar(0, x)]), e.emit("neg", [r]), r)


def _one_minus_plus(e: Emitter, x: Value) -> tuple[Value, Value]:
    return e.emit("sub", [scalar(1, x), x]), e.emit("add", [scalar(1, x), x])


@onnx_op("Atan", "Asin", "Acos")
def inverse_trig(ctx: NodeCtx) -> list[Value]:
    e, x0 = ctx.e, ctx.req(0)
    if not x0.dtype.is_float:
        raise ctx.fail(f"{ctx.node.op_type} of {x0.dtype} is not supported")
    x = cast(e, x0, F32) if x0.dtype == F16 else x0
    op = ctx.node.op_type
    if op == "Atan":
        r = _atan(e, x)
    elif op == "Asin":
        lo, hi = _one_minus_plus(e, x)
        r = _atan(e, e.emit("div", [x, e.emit("sqrt", [e.emit("mul", [lo, hi])])]))
    else:
        lo, hi = _one_minus_plus(e, x)
        r = e.emit("mul", [_atan(e, e.emit("sqrt", [e.emit("div", [lo, hi])])), scalar(2, x)])
    return [cast(e, r, x0.dtype)]
