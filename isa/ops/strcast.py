"""cast between str and the numbers (ONNX Cast's rules for STRING).

To str, each element is written as NumPy prints a scalar of its dtype: the fewest digits that
read back to the same value of that dtype (f32 0.1 gives "0.1", not 0.10000000149011612), "nan",
"inf" and "-inf", integers in decimal, bools as "True" / "False" (ONNX's reference does
`x.astype(str)`, which is this).

From str, an element is parsed as Python parses a number: surrounding whitespace is ignored,
"1e-5", "1E8", "nan", "inf", "-Infinity" are accepted. To an integer dtype, an integer literal
is taken exactly and must fit the dtype (else a trap); any other number is converted as a float
is (truncated toward zero and saturated), so "100.5" gives 100. To bool, a number is true
when it is not 0. Text that is no number is a trap naming it.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import DType
from ..errors import OpTypeError, Trap


def check_str_cast(src: DType, to: DType) -> None:
    """Casts that touch str go between str and a number or bool (or str to str)."""
    if src.is_str and to.is_str:
        return
    other = to if src.is_str else src
    if not (other.is_float or other.is_int or other.is_bool):
        raise OpTypeError(f"cast between str and {other} is not supported (numbers and bool only)")


def to_str(a: np.ndarray) -> np.ndarray:
    """Each element as text (see the module docstring)."""
    out = np.empty(a.shape, dtype=object)
    flat = out.reshape(-1)
    for i, v in enumerate(np.asarray(a).reshape(-1)):
        flat[i] = str(v)          # a NumPy scalar prints the shortest round-trip text
    return out


def _number(s: object) -> int | float:
    if not isinstance(s, str):
        raise Trap(f"cast: element {s!r} is not a string")
    text = s.strip()
    try:
        return int(text, 10)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise Trap(f"cast: {s!r} is not a number") from None


def from_str(a: np.ndarray, to: DType) -> np.ndarray:
    """Each element parsed as a number of dtype `to` (see the module docstring)."""
    from .elementwise import float_to_int_saturating
    values = [_number(s) for s in np.asarray(a).reshape(-1)]
    if to.is_bool:
        return np.array([v != 0 for v in values], dtype=np.bool_).reshape(a.shape)
    if to.is_float:
        with np.errstate(over="ignore"):
            return np.array([float(v) for v in values], dtype=to.np).reshape(a.shape)
    lo, hi = to.int_range()
    out = np.empty(len(values), dtype=to.np)
    for i, v in enumerate(values):
        if isinstance(v, int):
            if not lo <= v <= hi:
                raise Trap(f"cast: {v} is out of range for {to} ({lo} to {hi})")
            out[i] = v
        else:
            out[i] = float_to_int_saturating(np.array(v), to.np)
    return out.reshape(a.shape)


def str_cast(a: np.ndarray, to: DType) -> np.ndarray:
    """The reference of a cast where the operand or the result is str."""
    if to.is_str:
        if a.dtype == object:
            return np.array(a, dtype=object, copy=True)
        return to_str(a)
    return from_str(a, to)
