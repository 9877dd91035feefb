"""Element types of dlvm tensors.

Each dtype has a short name used in text (`f32`), a stable numeric code used in bytecode (never
reorder or reuse a code: old bytecode must keep its meaning), and the NumPy dtype the reference
interpreter computes with.

The narrow formats (bf16, the float8 and float4 formats, 4- and 2-bit integers) are storage
types: a tensor holds them one element per byte (two for bf16), the interpreter computes each
instruction on them in a wide dtype (`DType.wide`) and rounds the result back, and no compiled
tier takes them. Their NumPy dtypes come from the `ml_dtypes` package (which `onnx` installs);
without it a program that names one gets a clear error, and every other dtype works as before.

`str` holds text: a NumPy array of dtype `object` whose elements are Python `str` (Unicode,
written as UTF-8 in bytecode). It is neither a number nor narrow: only the ops whose records
say they take strings accept it (movement, comparisons for equality, casts, the string ops),
and only the interpreter runs them (no compiled tier takes a str value). Its `itemsize` is
a pointer's (8 bytes), which is what an element of such an array takes in memory besides its
string.
"""
from __future__ import annotations

import enum

import numpy as np


class DType(enum.Enum):
    # value = (text name, bytecode code, numpy dtype string)
    BOOL = ("bool", 0, "bool")
    I8 = ("i8", 1, "int8")
    I16 = ("i16", 2, "int16")
    I32 = ("i32", 3, "int32")
    I64 = ("i64", 4, "int64")
    U8 = ("u8", 5, "uint8")
    F16 = ("f16", 6, "float16")
    F32 = ("f32", 7, "float32")
    F64 = ("f64", 8, "float64")
    # added later, so their codes follow the first nine (a code is never reused or renumbered)
    U16 = ("u16", 9, "uint16")
    U32 = ("u32", 10, "uint32")
    U64 = ("u64", 11, "uint64")
    # narrow storage formats (numpy dtypes from ml_dtypes, see the module docstring)
    BF16 = ("bf16", 12, "bfloat16")
    F8E4M3FN = ("f8e4m3fn", 13, "float8_e4m3fn")
    F8E4M3FNUZ = ("f8e4m3fnuz", 14, "float8_e4m3fnuz")
    F8E5M2 = ("f8e5m2", 15, "float8_e5m2")
    F8E5M2FNUZ = ("f8e5m2fnuz", 16, "float8_e5m2fnuz")
    F8E8M0FNU = ("f8e8m0fnu", 17, "float8_e8m0fnu")
    F4E2M1FN = ("f4e2m1fn", 18, "float4_e2m1fn")
    I4 = ("i4", 19, "int4")
    U4 = ("u4", 20, "uint4")
    I2 = ("i2", 21, "int2")
    U2 = ("u2", 22, "uint2")
    # text: NumPy object arrays of Python str (see the module docstring)
    STR = ("str", 23, "object")

    @property
    def text(self) -> str:
        return self.value[0]

    @property
    def code(self) -> int:
        return self.value[1]

    @property
    def np(self) -> np.dtype:
        dt = _NP.get(self)
        if dt is None:
            raise NarrowDTypeUnavailable(
                f"dtype {self.text} needs the ml_dtypes package (pip install ml_dtypes)")
        return dt

    @property
    def is_float(self) -> bool:
        return self in _FLOATS

    @property
    def is_int(self) -> bool:
        return self in _INTS

    @property
    def is_signed(self) -> bool:
        return self in _SIGNED

    @property
    def is_narrow(self) -> bool:
        """A storage format computed in `wide` (no compiled tier takes it)."""
        return self in _WIDE

    @property
    def wide(self) -> DType:
        """The dtype the interpreter computes this one in (itself unless narrow)."""
        return _WIDE.get(self, self)

    @property
    def is_bool(self) -> bool:
        return self is DType.BOOL

    @property
    def is_str(self) -> bool:
        """Text (an object array of Python str): interpreted only, never compiled."""
        return self is DType.STR

    @property
    def itemsize(self) -> int:
        return self.np.itemsize

    def int_range(self) -> tuple[int, int]:
        """(min, max) of an integer dtype, narrow ones included."""
        info = _iinfo(self.np)
        return int(info.min), int(info.max)

    def finfo(self):
        """np.finfo of a float dtype (ml_dtypes.finfo for the narrow ones)."""
        return _finfo(self.np)

    def float_max(self) -> float:
        """The largest finite value of a float dtype, narrow ones included."""
        return float(self.finfo().max)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"DType.{self.name}"


class NarrowDTypeUnavailable(ImportError):
    """A narrow dtype was used where the ml_dtypes package is not installed."""


_FLOATS = frozenset({DType.F16, DType.F32, DType.F64, DType.BF16, DType.F8E4M3FN,
                     DType.F8E4M3FNUZ, DType.F8E5M2, DType.F8E5M2FNUZ, DType.F8E8M0FNU,
                     DType.F4E2M1FN})
_SIGNED = frozenset({DType.I8, DType.I16, DType.I32, DType.I64, DType.I4, DType.I2})
_INTS = _SIGNED | {DType.U8, DType.U16, DType.U32, DType.U64, DType.U4, DType.U2}
# every value of a narrow format is exact in its wide dtype
_WIDE = {DType.BF16: DType.F32, DType.F8E4M3FN: DType.F32, DType.F8E4M3FNUZ: DType.F32,
         DType.F8E5M2: DType.F32, DType.F8E5M2FNUZ: DType.F32, DType.F8E8M0FNU: DType.F32,
         DType.F4E2M1FN: DType.F32, DType.I4: DType.I8, DType.U4: DType.U8, DType.I2: DType.I8,
         DType.U2: DType.U8}


def _numpy_dtypes() -> dict[DType, np.dtype]:
    out = {d: np.dtype(d.value[2]) for d in DType if d not in _WIDE}
    try:
        import ml_dtypes
    except ImportError:
        return out
    for d in _WIDE:
        out[d] = np.dtype(getattr(ml_dtypes, d.value[2]))
    return out


def _iinfo(dt: np.dtype):
    if dt.kind in "iu":
        return np.iinfo(dt)
    import ml_dtypes
    return ml_dtypes.iinfo(dt)


def _finfo(dt: np.dtype):
    if dt.kind == "f" and dt.itemsize >= 2:
        return np.finfo(dt)
    import ml_dtypes
    return ml_dtypes.finfo(dt)


_NP = _numpy_dtypes()
BY_NAME: dict[str, DType] = {d.text: d for d in DType}
BY_CODE: dict[int, DType] = {d.code: d for d in DType}
_BY_NP = {v: k for k, v in _NP.items()}

FLOATS = tuple(d for d in DType if d.is_float)
INTS = tuple(d for d in DType if d.is_int)
NARROW = tuple(d for d in DType if d.is_narrow)
NUMERIC = INTS + FLOATS
ALL = tuple(DType)


def dtype_from_name(name: str) -> DType | None:
    """The dtype called `name` in dlvm text (`f32`), or None."""
    return BY_NAME.get(name)


def dtype_from_numpy(dt: np.dtype | type) -> DType | None:
    """The dlvm dtype of a NumPy dtype, or None where dlvm has none (complex, strings ...)."""
    return _BY_NP.get(np.dtype(dt))
