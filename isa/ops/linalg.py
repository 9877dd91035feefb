"""Linear algebra beyond matmul: the determinant (ONNX Det)."""
from __future__ import annotations

import numpy as np

from ..errors import OpTypeError
from ..types import TensorType
from .opdef import NOT_DIFFERENTIABLE, Family, OpDef


def det_rule(types: list[TensorType], attrs) -> list[TensorType]:
    (t,) = types
    if not t.dtype.is_float or t.rank < 2:
        raise OpTypeError(f"det takes float matrices (rank 2 or more), got {t}")
    n, m = t.shape[-2:]
    if isinstance(n, int) and isinstance(m, int) and n != m:
        raise OpTypeError(f"det needs square matrices, got {t}")
    return [t.with_shape(t.shape[:-2])]


def det_ref(attrs, x: np.ndarray) -> np.ndarray:
    # LU in double precision, rounded once to the operand's dtype
    return np.asarray(np.linalg.det(x.astype(np.float64))).astype(x.dtype)


OPS = [
    OpDef("det", 153, Family.CONTRACTION, (1, 1), det_rule, det_ref,
          "r[..] := the determinant of the square matrix a[.., :, :] (ONNX Det), computed by LU "
          "decomposition in f64 and rounded to a's dtype",
          dtypes="float",
          vjp=NOT_DIFFERENTIABLE),
]
