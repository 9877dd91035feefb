"""Reductions over axes and arg-reductions.

`axes` absent means every axis; `axes = []` reduces nothing (NumPy). `keepdims` defaults to false
(NumPy), not ONNX's true.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import BY_NAME
from ..errors import OpTypeError, Trap
from ..types import TensorType
from . import adjoints_reduce as adj
from .opdef import NO_GRADIENT, AttrKind, AttrSpec, Facts, Family, OpDef
from .shapes import is_float, is_numeric, normalize_axes, normalize_axis, require_dtype

I64 = BY_NAME["i64"]

REDUCE_ATTRS = (
    AttrSpec("axes", AttrKind.INTS, None, "axes to reduce; absent: all axes"),
    AttrSpec("keepdims", AttrKind.BOOL, False, "keep reduced axes as size 1"),
)
ARG_ATTRS = (
    AttrSpec("axis", AttrKind.INT, 0, "the axis to search"),
    AttrSpec("keepdims", AttrKind.BOOL, False, "keep the axis as size 1"),
)


def reduced_axes(op: str, attrs, rank: int) -> list[int]:
    axes = attrs["axes"]
    return list(range(rank)) if axes is None else normalize_axes(op, axes, rank, scalar_ok=True)


def reduce_rule(op: str, ok, what: str):
    def rule(types: list[TensorType], attrs) -> list[TensorType]:
        (t,) = types
        require_dtype(op, t, ok, what)
        axes = reduced_axes(op, attrs, t.rank)
        if attrs["keepdims"]:
            shape = tuple(1 if i in axes else d for i, d in enumerate(t.shape))
        else:
            shape = tuple(d for i, d in enumerate(t.shape) if i not in axes)
        return [t.with_shape(shape)]
    return rule


def _axes_arg(attrs, a):
    axes = attrs["axes"]
    return None if axes is None else tuple(ax % a.ndim for ax in axes) if a.ndim else ()


def _extremum(f, name):
    def ref(attrs, a):
        axes = _axes_arg(attrs, a)
        reduced = a.shape if axes is None else [a.shape[i] for i in axes]
        if any(n == 0 for n in reduced):
            raise Trap(f"{name} over an empty axis")
        return f(a, axis=axes, keepdims=attrs["keepdims"])
    return ref


def _sum_like(f):
    def ref(attrs, a):
        return f(a, axis=_axes_arg(attrs, a), keepdims=attrs["keepdims"], dtype=a.dtype)
    return ref


def arg_rule(op: str):
    def rule(types: list[TensorType], attrs) -> list[TensorType]:
        (t,) = types
        require_dtype(op, t, is_numeric, "numeric")
        if t.rank == 0:
            raise OpTypeError(f"{op} needs an operand of rank 1 or more")
        ax = normalize_axis(op, attrs["axis"], t.rank)
        shape = tuple(1 if i == ax else d for i, d in enumerate(t.shape)) if attrs["keepdims"] \
            else tuple(d for i, d in enumerate(t.shape) if i != ax)
        return [TensorType(I64, shape)]
    return rule


def _arg(f, name):
    def ref(attrs, a):
        ax = attrs["axis"] % a.ndim
        if a.shape[ax] == 0:
            raise Trap(f"{name} over an empty axis")
        return f(a, axis=ax, keepdims=attrs["keepdims"]).astype(np.int64)
    return ref


def _reduce(name, code, ref, doc, ok=is_numeric, what="numeric", vjp=None, combine=None,
            mean=False):
    return OpDef(name, code, Family.REDUCE, (1, 1), reduce_rule(name, ok, what), ref, doc,
                 attrs=REDUCE_ATTRS, dtypes=what, vjp=vjp, facts=Facts(combine=combine, mean=mean))


OPS = [
    _reduce("reduce_sum", 64, _sum_like(np.sum), "r := sum of a over axes (integers wrap)",
            vjp=adj.sum_vjp, combine="add"),
    _reduce("reduce_mean", 65, _sum_like(np.mean), "r := mean of a over axes", is_float, "float",
            vjp=adj.mean_vjp, combine="add", mean=True),
    _reduce("reduce_max", 66, _extremum(np.max, "reduce_max"),
            "r := maximum of a over axes (NaN if any is NaN); traps on an empty axis",
            vjp=adj.extremum_vjp, combine="max"),
    _reduce("reduce_min", 67, _extremum(np.min, "reduce_min"),
            "r := minimum of a over axes (NaN if any is NaN); traps on an empty axis",
            vjp=adj.extremum_vjp, combine="min"),
    _reduce("reduce_prod", 68, _sum_like(np.prod), "r := product of a over axes (integers wrap)",
            vjp=adj.prod_vjp, combine="mul"),
    OpDef("argmax", 69, Family.ARGREDUCE, (1, 1), arg_rule("argmax"), _arg(np.argmax, "argmax"),
          "r := i64 index of the first maximum along axis (a NaN counts as the maximum)",
          attrs=ARG_ATTRS, dtypes="numeric", vjp=NO_GRADIENT, steps=True),
    OpDef("argmin", 70, Family.ARGREDUCE, (1, 1), arg_rule("argmin"), _arg(np.argmin, "argmin"),
          "r := i64 index of the first minimum along axis (a NaN counts as the minimum)",
          attrs=ARG_ATTRS, dtypes="numeric", vjp=NO_GRADIENT, steps=True),
]


# ---- unbroadcast: the adjoint of broadcasting ----------------------------------------------

def unbroadcast_rule(types: list[TensorType], attrs) -> list[TensorType]:
    a, like = types
    if like.rank > a.rank:
        raise OpTypeError(f"unbroadcast: {like} has more dims than {a}")
    return [TensorType(a.dtype, like.shape)]


def unbroadcast_ref(attrs, a: np.ndarray, like: np.ndarray) -> np.ndarray:
    lead = a.ndim - like.ndim
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(like.shape)
                                      if d == 1 and a.shape[lead + i] != 1)
    for i, d in enumerate(like.shape):
        if d != 1 and a.shape[lead + i] != d:
            raise Trap(f"unbroadcast: {list(like.shape)} does not broadcast to "
                       f"{list(a.shape)}")
    out = np.sum(a, axis=axes, keepdims=True, dtype=a.dtype) if axes else a
    return np.ascontiguousarray(out.reshape(like.shape)).astype(a.dtype, copy=False)


OPS.append(
    OpDef("unbroadcast", 144, Family.MOVEMENT, (2, 2), unbroadcast_rule, unbroadcast_ref,
          "r := a summed over the axes NumPy broadcasting added or stretched to reach a's shape "
          "from like's (leading axes, and like's size-1 dims): r has like's shape and a's dtype "
          "(the adjoint of broadcasting; like's values are not read)",
          dtypes="a: numeric; like: any", extra={"operands": ("a", "like")},
          vjp=adj.unbroadcast_vjp))
