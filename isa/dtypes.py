"""Element types of dlvm tensors.

Each dtype has a short name used in text (`f32`), a stable numeric code used in bytecode (never
reorder or reuse a code: old bytecode must keep its meaning), and the NumPy dtype the reference
interpreter computes with.
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

    @property
    def text(self) -> str:
        return self.value[0]

    @property
    def code(self) -> int:
        return self.value[1]

    @property
    def np(self) -> np.dtype:
        return _NP[self]

    @property
    def is_float(self) -> bool:
        return self in (DType.F16, DType.F32, DType.F64)

    @property
    def is_int(self) -> bool:
        return self in (DType.I8, DType.I16, DType.I32, DType.I64, DType.U8, DType.U16, DType.U32,
                        DType.U64)

    @property
    def is_signed(self) -> bool:
        return self in (DType.I8, DType.I16, DType.I32, DType.I64)

    @property
    def is_bool(self) -> bool:
        return self is DType.BOOL

    @property
    def itemsize(self) -> int:
        return _NP[self].itemsize

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"DType.{self.name}"


_NP = {d: np.dtype(d.value[2]) for d in DType}
BY_NAME: dict[str, DType] = {d.text: d for d in DType}
BY_CODE: dict[int, DType] = {d.code: d for d in DType}
_BY_NP = {v: k for k, v in _NP.items()}

FLOATS = tuple(d for d in DType if d.is_float)
INTS = tuple(d for d in DType if d.is_int)
NUMERIC = INTS + FLOATS
ALL = tuple(DType)


def dtype_from_name(name: str) -> DType | None:
    """The dtype called `name` in dlvm text (`f32`), or None."""
    return BY_NAME.get(name)


def dtype_from_numpy(dt: np.dtype | type) -> DType | None:
    """The dlvm dtype of a NumPy dtype, or None where dlvm has none (complex, bfloat16, strings ...)."""
    return _BY_NP.get(np.dtype(dt))
