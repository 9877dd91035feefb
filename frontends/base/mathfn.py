"""Math functions dlvm has no op for, built from ops it has; shared by the ONNX and torch
importers (ONNX Tan/Sinh/.../Atan, torch's aten.tan/.../atan2).

atan: for |x| > 1, atan x = pi/2 - atan(1/|x|) (with x's sign), so the series only sees [0, 1];
two argument halvings, atan t = 2 atan(t / (1 + sqrt(1 + t^2))), bring t below tan(pi/16) ~ 0.2,
where the odd Taylor series to t^21 is exact to double precision (the first term left out is
below 0.2^23 / 23 ~ 4e-18). Each step rounds once, so results are a few ulps from the correctly
rounded value; f16 is computed in f32 and rounded once (by the callers).
asin x = atan(x / sqrt((1 - x)(1 + x))) and acos x = 2 atan(sqrt((1 - x) / (1 + x))) keep
precision near |x| = 1, and give pi/2 (or 0 and pi) exactly there through atan(inf).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .values import Emitter, Value, known

SERIES_TERMS = 11           # t - t^3/3 + ... - t^19/19 + t^21/21


def scalar(x: Any, like: Value) -> Value:
    """A 0-d known value of `like`'s dtype (it broadcasts against any shape)."""
    return known(np.asarray(x, dtype=like.dtype.np))


def _sel(e: Emitter, c: Value, a: Value, b: Value) -> Value:
    return e.emit("select", [c, a, b], "sel")


def atan(e: Emitter, x: Value) -> Value:
    ax = e.emit("abs", [x])
    big = e.emit("gt", [ax, scalar(1, x)])
    # 1 / max(|x|, 1) never divides by zero; it is only selected where |x| > 1 (1 / inf = 0)
    t = _sel(e, big, e.emit("reciprocal", [e.emit("max", [ax, scalar(1, x)])]), ax)
    for _ in range(2):
        root = e.emit("sqrt", [e.emit("add", [e.emit("mul", [t, t]), scalar(1, x)])])
        t = e.emit("div", [t, e.emit("add", [root, scalar(1, x)])])
    t2 = e.emit("mul", [t, t])
    acc = scalar((-1) ** (SERIES_TERMS - 1) / (2 * SERIES_TERMS - 1), x)
    for k in range(SERIES_TERMS - 2, -1, -1):
        acc = e.emit("add", [e.emit("mul", [acc, t2]), scalar((-1) ** k / (2 * k + 1), x)])
    r = e.emit("mul", [e.emit("mul", [acc, t]), scalar(4, x)])
    r = _sel(e, big, e.emit("sub", [scalar(math.pi / 2, x), r]), r)
    return _sel(e, e.emit("lt", [x, scalar(0, x)]), e.emit("neg", [r]), r)


def asin(e: Emitter, x: Value) -> Value:
    lo, hi = e.emit("sub", [scalar(1, x), x]), e.emit("add", [scalar(1, x), x])
    return atan(e, e.emit("div", [x, e.emit("sqrt", [e.emit("mul", [lo, hi])])]))


def acos(e: Emitter, x: Value) -> Value:
    lo, hi = e.emit("sub", [scalar(1, x), x]), e.emit("add", [scalar(1, x), x])
    return e.emit("mul", [atan(e, e.emit("sqrt", [e.emit("div", [lo, hi])])), scalar(2, x)])


def atan2(e: Emitter, y: Value, x: Value) -> Value:
    """The angle of (x, y) in (-pi, pi]: atan(y / x) moved by pi into the left half-plane; on the
    y axis (x = 0), +-pi/2 by y's sign (0 at the origin), as C's atan2 for finite values."""
    base = atan(e, e.emit("div", [y, _sel(e, e.emit("eq", [x, scalar(0, x)]), scalar(1, x), x)]))
    neg_y = e.emit("lt", [y, scalar(0, y)])
    shift = _sel(e, neg_y, scalar(-math.pi, x), scalar(math.pi, x))
    left = _sel(e, e.emit("lt", [x, scalar(0, x)]), e.emit("add", [base, shift]), base)
    axis = _sel(e, neg_y, scalar(-math.pi / 2, x),
                _sel(e, e.emit("gt", [y, scalar(0, y)]), scalar(math.pi / 2, x), scalar(0, x)))
    return _sel(e, e.emit("eq", [x, scalar(0, x)]), axis, left)


def tan(e: Emitter, x: Value) -> Value:
    return e.emit("div", [e.emit("sin", [x]), e.emit("cos", [x])])


def sinh(e: Emitter, x: Value) -> Value:
    a, b = e.emit("exp", [x]), e.emit("exp", [e.emit("neg", [x])])
    return e.emit("mul", [e.emit("sub", [a, b]), scalar(0.5, x)])


def cosh(e: Emitter, x: Value) -> Value:
    a, b = e.emit("exp", [x]), e.emit("exp", [e.emit("neg", [x])])
    return e.emit("mul", [e.emit("add", [a, b]), scalar(0.5, x)])


def asinh(e: Emitter, x: Value) -> Value:
    """ln(|x| + sqrt(x^2 + 1)) with x's sign (odd, so a large negative x does not cancel)."""
    ax = e.emit("abs", [x])
    r = e.emit("sqrt", [e.emit("add", [e.emit("mul", [ax, ax]), scalar(1, x)])])
    v = e.emit("log", [e.emit("add", [ax, r])])
    return _sel(e, e.emit("lt", [x, scalar(0, x)]), e.emit("neg", [v]), v)


def acosh(e: Emitter, x: Value) -> Value:
    r = e.emit("sqrt", [e.emit("sub", [e.emit("mul", [x, x]), scalar(1, x)])])
    return e.emit("log", [e.emit("add", [x, r])])


def atanh(e: Emitter, x: Value) -> Value:
    q = e.emit("div", [e.emit("add", [scalar(1, x), x]), e.emit("sub", [scalar(1, x), x])])
    return e.emit("mul", [e.emit("log", [q]), scalar(0.5, x)])


BY_NAME = {"atan": atan, "asin": asin, "acos": acos, "tan": tan, "sinh": sinh, "cosh": cosh,
           "asinh": asinh, "acosh": acosh, "atanh": atanh}
