"""Shared shape and dtype rules used by the op type rules (broadcasting, axis normalization)."""
from __future__ import annotations

from ..dtypes import DType
from ..errors import OpTypeError
from ..types import Dim, TensorType, dim_text


def broadcast_dims(a: Dim, b: Dim, what: str) -> Dim:
    """NumPy broadcasting of one dim pair, with named and unknown dims.

    A size 1 yields the other dim; equal dims stay; a named dim against a size > 1 becomes that
    size (the name must bind to it or to 1); two different names, or an unknown, give unknown.
    """
    if a == b:
        return a
    if a == 1:
        return b
    if b == 1:
        return a
    if isinstance(a, int) and isinstance(b, int):
        raise OpTypeError(f"{what}: dims {a} and {b} do not broadcast")
    if isinstance(a, int) and a != 1 and b is not None:
        return a
    if isinstance(b, int) and b != 1 and a is not None:
        return b
    return None


def broadcast_shapes(shapes: list[tuple[Dim, ...]], what: str) -> tuple[Dim, ...]:
    first = tuple(shapes[0]) if shapes else ()
    if all(tuple(s) == first for s in shapes[1:]):
        return first        # the common case, as broadcast_dims gives it (a == b keeps a)
    rank = max((len(s) for s in shapes), default=0)
    out: list[Dim] = [1] * rank
    for s in shapes:
        padded = (1,) * (rank - len(s)) + tuple(s)
        try:
            out = [broadcast_dims(o, d, what) for o, d in zip(out, padded)]
        except OpTypeError:
            texts = " and ".join("[" + ", ".join(dim_text(d) for d in x) + "]" for x in shapes)
            raise OpTypeError(f"{what}: shapes {texts} do not broadcast") from None
    return tuple(out)


def same_dtype(op: str, types: list[TensorType]) -> DType:
    dts = {t.dtype for t in types}
    if len(dts) != 1:
        names = " and ".join(str(t.dtype) for t in types)
        raise OpTypeError(f"{op} operand dtypes {names} differ; insert a cast")
    return types[0].dtype


def normalize_axis(op: str, axis: int, rank: int, scalar_ok: bool = False) -> int:
    """A non-negative axis. With `scalar_ok` (reductions, as NumPy) a scalar accepts 0 and -1;
    ops that index a dim (squeeze, slice, concat ...) have no axis on a scalar."""
    if scalar_ok and rank == 0 and axis in (0, -1):
        return 0
    if not -rank <= axis < rank:
        raise OpTypeError(f"{op}: axis {axis} is out of range for rank {rank}")
    return axis % rank


def normalize_axes(op: str, axes: list[int], rank: int, scalar_ok: bool = False) -> list[int]:
    out = [normalize_axis(op, a, rank, scalar_ok) for a in axes]
    if len(set(out)) != len(out):
        raise OpTypeError(f"{op}: axes {list(axes)} repeat an axis")
    return out


def require_dtype(op: str, t: TensorType, ok, what: str) -> None:
    if not ok(t.dtype):
        raise OpTypeError(f"{op} takes {what} operands, got {t.dtype}")


def is_float(d: DType) -> bool:
    return d.is_float


def is_numeric(d: DType) -> bool:
    return not d.is_bool and not d.is_str


def is_int_or_bool(d: DType) -> bool:
    return d.is_int or d.is_bool


def is_signed_or_float(d: DType) -> bool:
    return d.is_signed or d.is_float
