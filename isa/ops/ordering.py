"""Ops that follow the order of elements along an axis: running sums and products, top-k.

The axis of `cumsum` / `cumprod` and the count of `topk` are operands (ONNX gives them as
tensors), so one row covers both an axis known when the program is written (a constant operand)
and one computed at run time. `topk`'s searched axis has k elements, a value the verifier does
not see, so that dim is unknown (`?`).
"""
from __future__ import annotations

import numpy as np

from ..dtypes import BY_NAME
from ..errors import OpTypeError, Trap
from ..types import TensorType
from . import adjoints_movement as adj
from .opdef import AttrKind, AttrSpec, Family, OpDef

I64 = BY_NAME["i64"]


def _int_scalar(op: str, t: TensorType, what: str) -> None:
    if not t.dtype.is_int or t.rank > 1 or (t.rank == 1 and t.shape[0] not in (1, None)):
        raise OpTypeError(f"{op} {what} must be an integer scalar (or one-element vector), got {t}")


def _one(a: np.ndarray) -> int:
    flat = np.asarray(a).reshape(-1)
    if flat.size != 1:
        raise Trap(f"expected one value, got {flat.size}")
    return int(flat[0])


def _axis(op: str, a: np.ndarray, rank: int) -> int:
    v = _one(a)
    if not -rank <= v < rank:
        raise Trap(f"{op}: axis {v} is out of range for rank {rank}")
    return v % rank


# ---- cumsum, cumprod -------------------------------------------------------------------------

def cumulative_rule(op: str):
    def rule(types: list[TensorType], attrs) -> list[TensorType]:
        t, axis = types
        if t.dtype.is_bool:
            raise OpTypeError(f"{op} takes numeric operands, got {t.dtype}")
        if t.rank == 0:
            raise OpTypeError(f"{op} needs an operand of rank 1 or more")
        _int_scalar(op, axis, "axis")
        return [t]
    return rule


def cumulative_ref(op: str, f):
    def ref(attrs, x: np.ndarray, axis: np.ndarray) -> np.ndarray:
        ax = _axis(op, axis, x.ndim)
        if attrs["reverse"]:
            x = np.flip(x, ax)
        y = f(x, axis=ax, dtype=x.dtype)
        if attrs["exclusive"] and y.shape[ax]:
            # shift by one along the axis; the first element is the identity (0 or 1)
            ident = np.full_like(np.take(y, [0], axis=ax), 0 if f is np.cumsum else 1)
            y = np.concatenate([ident, np.take(y, np.arange(y.shape[ax] - 1), axis=ax)], axis=ax)
        # an empty axis stays empty: there is no first element to take the identity's place
        return np.flip(y, ax).copy() if attrs["reverse"] else y
    return ref


# ---- topk ------------------------------------------------------------------------------------

def topk_rule(types: list[TensorType], attrs) -> list[TensorType]:
    t, k = types
    _int_scalar("topk", k, "k")
    if t.rank == 0 or t.dtype.is_bool:
        raise OpTypeError(f"topk needs a numeric operand of rank 1 or more, got {t}")
    axis = attrs["axis"]
    if not -t.rank <= axis < t.rank:
        raise OpTypeError(f"topk: axis {axis} is out of range for rank {t.rank}")
    shape = list(t.shape)
    shape[axis % t.rank] = None
    return [t.with_shape(tuple(shape)), TensorType(I64, tuple(shape))]


def topk_ref(attrs, x: np.ndarray, k: np.ndarray):
    ax = attrs["axis"] % x.ndim
    n = _one(k)
    if not 0 <= n <= x.shape[ax]:
        raise Trap(f"topk: k = {n} is outside [0, {x.shape[ax]}]")
    if attrs["largest"]:
        # order-reversing keys without overflow: ~v for integers, -v for floats; the stable
        # sort keeps equal elements in index order (ONNX: the lower index first)
        key = -x if x.dtype.kind == "f" else ~x
    else:
        key = x
    idx = np.take(np.argsort(key, axis=ax, kind="stable"), np.arange(n), axis=ax)
    return np.take_along_axis(x, idx, axis=ax), idx.astype(np.int64)


OPS = [
    OpDef("cumsum", 179, Family.MOVEMENT, (2, 2), cumulative_rule("cumsum"),
          cumulative_ref("cumsum", np.cumsum),
          "r := running sums of a along the axis given by the integer scalar `axis` (ONNX "
          "CumSum); exclusive leaves out the element itself (r starts at 0), reverse runs from "
          "the end; integers wrap",
          attrs=(AttrSpec("exclusive", AttrKind.BOOL, False, "sum of the elements before"),
                 AttrSpec("reverse", AttrKind.BOOL, False, "run from the last element")),
          dtypes="a: numeric; axis: integer",
          extra={"operands": ("a", "axis"), "immediates": {1: "i64"}}, vjp=adj.cumsum_vjp),
    OpDef("cumprod", 180, Family.MOVEMENT, (2, 2), cumulative_rule("cumprod"),
          cumulative_ref("cumprod", np.cumprod),
          "r := running products of a along the axis given by the integer scalar `axis` (ONNX "
          "CumProd); exclusive starts at 1, reverse runs from the end; integers wrap",
          attrs=(AttrSpec("exclusive", AttrKind.BOOL, False, "product of the elements before"),
                 AttrSpec("reverse", AttrKind.BOOL, False, "run from the last element")),
          dtypes="a: numeric; axis: integer",
          extra={"operands": ("a", "axis"), "immediates": {1: "i64"}},
          vjp=adj.cumprod_vjp),
    OpDef("topk", 181, Family.MOVEMENT, (2, 2), topk_rule, topk_ref,
          "r, i := the k largest (or smallest) elements of a along `axis`, in order, and their "
          "i64 indices (ONNX TopK); equal elements keep index order; k outside [0, size] traps",
          attrs=(AttrSpec("axis", AttrKind.INT, -1, "the axis searched"),
                 AttrSpec("largest", AttrKind.BOOL, True, "largest (true) or smallest"),
                 AttrSpec("sorted", AttrKind.BOOL, True, "results in sorted order (always)")),
          n_results=2, steps=True, dtypes="a: numeric; k: integer",
          extra={"operands": ("a", "k"), "immediates": {1: "i64"}},
          vjp=adj.topk_vjp),
]
