"""Small helpers shared by the handler files: scalars of a value's dtype, casts, axes."""
from __future__ import annotations

from typing import Any

import numpy as np

from isa.dtypes import BY_NAME, DType

from ..values import Emitter, Value, known


def scalar(x: Any, like: Value | DType) -> Value:
    """A 0-d known value of `like`'s dtype (it broadcasts against any shape)."""
    dt = like if isinstance(like, DType) else like.dtype
    return known(np.asarray(x, dtype=dt.np))


def cast(e: Emitter, v: Value, dtype: DType) -> Value:
    return v if v.dtype == dtype else e.emit("cast", [v], "cast", to=dtype)


# float8 formats whose ONNX casts saturate by default (e8m0 rounds by round_mode instead)
SATURATING_FLOAT8 = frozenset(BY_NAME[n] for n in ("f8e4m3fn", "f8e4m3fnuz", "f8e5m2",
                                                    "f8e5m2fnuz"))


def onnx_cast(e: Emitter, v: Value, to: DType, saturate: bool = True) -> Value:
    """ONNX's Cast: a float8 target saturates (out-of-range values and infinities to the largest
    finite value) unless `saturate` is off; a float to a 2- or 4-bit integer keeps the low bits
    of the truncated value, as ONNX's reference (ml_dtypes) does, where dlvm's own cast to an
    integer saturates."""
    if v.dtype == to:
        return v
    if to in SATURATING_FLOAT8 and saturate and v.dtype.is_float:
        big = min(to.float_max(), v.dtype.float_max())
        v = e.emit("max", [e.emit("min", [v, scalar(big, v)]), scalar(-big, v)])
    elif to.is_narrow and to.is_int and v.dtype.is_float:
        v = cast(e, v, BY_NAME["i32"])
    return cast(e, v, to)


def norm_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def static_dims(v: Value) -> bool:
    return all(isinstance(d, int) for d in v.shape)


def where(e: Emitter, c: Value, a: Value, b: Value) -> Value:
    return e.emit("select", [c, a, b], "sel")
