"""Movement ops: change the shape or order of elements without arithmetic.

Shapes are symbolic: named and unknown dims flow through where the rule can carry them and become
unknown ('?') where the result depends on a size the verifier cannot see.
"""
from __future__ import annotations

import numpy as np

from ..errors import OpTypeError
from ..types import TensorType
from .opdef import AttrKind, AttrSpec, Family, OpDef


def _perm(attrs, rank: int) -> list[int]:
    perm = attrs["perm"]
    return list(range(rank - 1, -1, -1)) if perm is None else list(perm)


def transpose_rule(types: list[TensorType], attrs) -> list[TensorType]:
    (t,) = types
    perm = _perm(attrs, t.rank)
    if sorted(perm) != list(range(t.rank)):
        raise OpTypeError(f"perm {perm} is not a permutation of the axes")
    return [t.with_shape(tuple(t.shape[p] for p in perm))]


def transpose_ref(attrs, x: np.ndarray) -> np.ndarray:
    return np.transpose(x, _perm(attrs, x.ndim))


OPS = [
    OpDef("transpose", 160, Family.MOVEMENT, (1, 1), transpose_rule, transpose_ref,
          "r := a with its axes permuted: r's axis i is a's axis perm[i] (NumPy transpose)",
          attrs=(AttrSpec("perm", AttrKind.INTS, None,
                          "a permutation of 0..rank-1; absent: the axes reversed"),),
          dtypes="any"),
]
