"""Contractions: matmul with NumPy semantics (1-D promotion, batched, broadcast batch dims).

The type rule is symbolic: an inner-dim clash is an error only when both dims are sizes; named
and unknown dims pass (the run time checks them) and the result keeps a's rows and b's columns.
"""
from __future__ import annotations

import numpy as np

from ..errors import OpTypeError, Trap
from ..types import Dim, TensorType
from .adjoints_reduce import matmul_vjp
from .opdef import Family, OpDef
from .shapes import broadcast_shapes, is_numeric, require_dtype, same_dtype


def matmul_rule(types: list[TensorType], attrs) -> list[TensorType]:
    a, b = types
    dt = same_dtype("matmul", types)
    require_dtype("matmul", a, is_numeric, "numeric")
    if a.rank == 0 or b.rank == 0:
        raise OpTypeError(f"matmul needs operands of rank 1 or more, got {a} and {b}")
    # NumPy's 1-D promotion: a vector a is a row [1, K], a vector b a column [K, 1]; the added
    # dim is dropped from the result again.
    a_shape: tuple[Dim, ...] = (1,) + a.shape if a.rank == 1 else a.shape
    b_shape: tuple[Dim, ...] = b.shape + (1,) if b.rank == 1 else b.shape
    k_a, k_b = a_shape[-1], b_shape[-2]
    if isinstance(k_a, int) and isinstance(k_b, int) and k_a != k_b:
        raise OpTypeError(f"matmul inner dimensions {k_a} and {k_b} differ")
    batch = broadcast_shapes([a_shape[:-2], b_shape[:-2]], "matmul batch dims")
    rows: tuple[Dim, ...] = (a_shape[-2],) if a.rank > 1 else ()
    cols: tuple[Dim, ...] = (b_shape[-1],) if b.rank > 1 else ()
    return [TensorType(dt, batch + rows + cols)]


def matmul_ref(attrs, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # Named and unknown dims are checked here, at run time (the verifier let them pass).
    k_a = a.shape[-1]
    k_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if k_a != k_b:
        raise Trap(f"matmul inner dimensions {k_a} and {k_b} differ")
    try:
        if a.dtype == np.float16:
            # f16 products are summed in f32 and rounded once, as NumPy's own f16 matmul does,
            # but through sgemm: NumPy's f16 loop has no BLAS kernel (a [32, 128] x [128, 512]
            # product took 8 ms, a transformer in f16 ran 70-140x onnxruntime's time)
            out = np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
        else:
            out = np.matmul(a, b)
    except ValueError:
        raise Trap(f"matmul batch dims of shapes {list(a.shape)} and {list(b.shape)} do not "
                   f"broadcast") from None
    return np.asarray(out, dtype=a.dtype)


OPS = [
    OpDef("matmul", 128, Family.CONTRACTION, (2, 2), matmul_rule, matmul_ref,
          "r := a @ b as NumPy matmul: the last dim of a contracts with the second-to-last of b "
          "(a 1-D a acts as a row, a 1-D b as a column, and that dim is dropped from r); leading "
          "batch dims broadcast; integers wrap",
          dtypes="numeric, both operands of one dtype", vjp=matmul_vjp),
]
