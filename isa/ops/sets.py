"""Set operations on tensors: unique (ONNX Unique).

How many distinct elements (or slices) a tensor holds is known only at run time, so the result's
size along the deduplicated axis is unknown (`?`); the rank is fixed.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import BY_NAME
from ..errors import OpTypeError
from ..types import TensorType
from .opdef import NOT_DIFFERENTIABLE, AttrKind, AttrSpec, Family, OpDef

I64 = BY_NAME["i64"]


def unique_rule(types: list[TensorType], attrs) -> list[TensorType]:
    (t,) = types
    axis = attrs["axis"]
    if axis is None:
        n_in = int(np.prod(t.shape)) if t.is_static else None
        return [t.with_shape((None,)), TensorType(I64, (None,)), TensorType(I64, (n_in,)),
                TensorType(I64, (None,))]
    if not -t.rank <= axis < t.rank:
        raise OpTypeError(f"unique: axis {axis} is out of range for {t}")
    axis %= t.rank
    shape = list(t.shape)
    shape[axis] = None
    return [t.with_shape(tuple(shape)), TensorType(I64, (None,)), TensorType(I64, (t.shape[axis],)),
            TensorType(I64, (None,))]


def unique_ref(attrs, x: np.ndarray):
    axis = attrs["axis"]
    if axis is not None:
        axis %= x.ndim
    flat = x.reshape(-1) if axis is None else x
    y, first, inverse, counts = np.unique(flat, return_index=True, return_inverse=True,
                                          return_counts=True, axis=axis)
    inverse = inverse.reshape(-1)
    if not attrs["sorted"]:
        # order of first occurrence: permute the outputs and renumber the inverse map
        order = np.argsort(first, kind="stable")
        y = np.take(y, order, axis=0 if axis is None else axis)
        first, counts = first[order], counts[order]
        new_pos = np.empty_like(order)
        new_pos[order] = np.arange(order.size)
        inverse = new_pos[inverse]
    return (np.ascontiguousarray(y), first.astype(np.int64), inverse.astype(np.int64),
            counts.astype(np.int64))


OPS = [
    OpDef("unique", 152, Family.MOVEMENT, (1, 1), unique_rule, unique_ref,
          "r, first, inverse, counts := the distinct elements of a (flattened), or its distinct "
          "slices along `axis` (ONNX Unique); sorted ascending (slices lexicographically) or in "
          "order of first occurrence; first: the index of each one's first occurrence; inverse: "
          "for each element (slice) of a, its position in r; counts: occurrences",
          attrs=(AttrSpec("axis", AttrKind.INT, None, "the axis of the slices; absent: elements"),
                 AttrSpec("sorted", AttrKind.BOOL, True, "ascending (true) or first occurrence")),
          n_results=4, dtypes="numeric or bool",
          vjp=NOT_DIFFERENTIABLE),
]
