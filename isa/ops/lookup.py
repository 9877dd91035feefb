"""label_encoder: each element of x replaced by the value its key maps to (ONNX ai.onnx.ml
LabelEncoder), for numbers and strings alike.

The map is two vectors, keys (x's dtype) and values (the result's dtype), and a 0-d default
for elements that are no key; all three are operands, usually module constants. Float keys
compare by value, and a NaN key matches a NaN element (as ONNX says); when a key repeats, its
first value wins.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import OpTypeError, Trap
from ..types import TensorType
from .opdef import NO_GRADIENT, Family, OpDef


def label_encoder_rule(types: list[TensorType], attrs) -> list[TensorType]:
    x, keys, values, default = types
    if keys.dtype is not x.dtype:
        raise OpTypeError(f"label_encoder keys must be {x.dtype} like x, got {keys}")
    if keys.rank != 1 or values.rank != 1:
        raise OpTypeError(f"label_encoder keys and values must be vectors, got {keys} and {values}")
    if isinstance(keys.shape[0], int) and isinstance(values.shape[0], int) and \
            keys.shape[0] != values.shape[0]:
        raise OpTypeError(f"label_encoder has {keys.shape[0]} keys but {values.shape[0]} values")
    if default.rank != 0 or default.dtype is not values.dtype:
        raise OpTypeError(f"label_encoder default must be a {values.dtype} scalar, got {default}")
    return [x.with_dtype(values.dtype)]


def _is_nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


def label_encoder_ref(attrs, x: np.ndarray, keys: np.ndarray, values: np.ndarray,
                      default: np.ndarray) -> np.ndarray:
    if keys.shape != values.shape:
        raise Trap(f"label_encoder has {keys.size} keys but {values.size} values")
    table: dict = {}
    nan_value = None
    for k, v in zip(keys.tolist(), values.reshape(-1)):
        if _is_nan(k):
            nan_value = v if nan_value is None else nan_value
        else:
            table.setdefault(k, v)
    fallback = default[()]
    flat = [table.get(k, nan_value if _is_nan(k) and nan_value is not None else fallback)
            for k in x.reshape(-1).tolist()]
    out = np.empty(len(flat), dtype=values.dtype)
    out[:] = flat
    return out.reshape(x.shape)


OPS = [
    OpDef("label_encoder", 224, Family.MISC, (4, 4), label_encoder_rule, label_encoder_ref,
          "r := values[i] where x == keys[i] (the first such i; a NaN key matches NaN), else "
          "default, elementwise; r takes values' dtype (ONNX LabelEncoder)",
          dtypes="x, keys: any (one dtype); values, default: any (one dtype)",
          extra={"operands": ("x", "keys", "values", "default")}, vjp=NO_GRADIENT, strings=True),
]
