"""Small helpers shared by the handler files: scalars of a value's dtype, casts, axes."""
from __future__ import annotations

from typing import Any

import numpy as np

from isa.dtypes import DType

from ..values import Emitter, Value, known


def scalar(x: Any, like: Value | DType) -> Value:
    """A 0-d known value of `like`'s dtype (it broadcasts against any shape)."""
    dt = like if isinstance(like, DType) else like.dtype
    return known(np.asarray(x, dtype=dt.np))


def cast(e: Emitter, v: Value, dtype: DType) -> Value:
    return v if v.dtype == dtype else e.emit("cast", [v], "cast", to=dtype)


def norm_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def static_dims(v: Value) -> bool:
    return all(isinstance(d, int) for d in v.shape)


def where(e: Emitter, c: Value, a: Value, b: Value) -> Value:
    return e.emit("select", [c, a, b], "sel")
