"""Tensor types: a dtype and a shape whose dims are static (`4`), named (`N`) or unknown (`?`).

A named dim binds to a size when a function is entered and must agree everywhere it appears in
that call. Unknown dims are checked only at run time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from .dtypes import DType

# A dim is a size (int >= 0), a name (str), or None for unknown ('?').
Dim = Union[int, str, None]


def dim_text(d: Dim) -> str:
    return "?" if d is None else str(d)


@dataclass(frozen=True)
class TensorType:
    dtype: DType
    shape: tuple[Dim, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    def with_shape(self, shape: tuple[Dim, ...]) -> TensorType:
        return TensorType(self.dtype, tuple(shape))

    def with_dtype(self, dtype: DType) -> TensorType:
        return TensorType(dtype, self.shape)

    def __str__(self) -> str:
        return f"{self.dtype.text}[{', '.join(dim_text(d) for d in self.shape)}]"


def dims_conflict(a: Dim, b: Dim) -> bool:
    """True when two dims can never be equal: two different sizes, or two different names is
    not a conflict (names may bind to the same size)."""
    return isinstance(a, int) and isinstance(b, int) and a != b


def join_dim(a: Dim, b: Dim) -> Dim:
    """The dim a register has after two paths that gave it `a` and `b` meet."""
    return a if a == b else None


def refine_dim(declared: Dim, inferred: Dim) -> Dim:
    """The more precise of two compatible dims (a declared annotation refines an unknown)."""
    if inferred is None:
        return declared
    if isinstance(inferred, str) and isinstance(declared, int):
        return declared
    return inferred


def types_compatible(declared: TensorType, inferred: TensorType) -> bool:
    """Whether a value of the inferred type may stand where `declared` is expected statically.

    Dtypes and ranks must match exactly and two static dims must be equal; a named dim against
    another name or a size is allowed statically (names are bound and checked at run time), and
    unknown dims match anything.
    """
    if declared.dtype != inferred.dtype or declared.rank != inferred.rank:
        return False
    return not any(dims_conflict(d, i) for d, i in zip(declared.shape, inferred.shape))


def parse_type(text: str) -> TensorType:
    """Parse a type written as in dlvm text, e.g. `f32[N, 4]`, `i64[]`, `f32[?, 3]`.

    Meant for the builder API and tools; the assembler has its own lexer with source locations.
    Raises ValueError naming what is wrong.
    """
    from .dtypes import dtype_from_name

    s = text.strip()
    if not s.endswith("]") or "[" not in s:
        raise ValueError(f"type {text!r} must look like f32[N, 4]")
    name, dims_text = s[:-1].split("[", 1)
    dtype = dtype_from_name(name.strip())
    if dtype is None:
        raise ValueError(f"unknown dtype {name.strip()!r} in type {text!r}")
    dims: list[Dim] = []
    for part in filter(None, (p.strip() for p in dims_text.split(","))):
        if part == "?":
            dims.append(None)
        elif part.isdigit():
            dims.append(int(part))
        elif part.isidentifier():
            dims.append(part)
        else:
            raise ValueError(f"bad dim {part!r} in type {text!r}")
    return TensorType(dtype, tuple(dims))
