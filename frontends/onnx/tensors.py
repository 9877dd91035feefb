"""ONNX TensorProtos as NumPy arrays, with STRING tensors as dlvm's str (object arrays of
Python str).

Depending on the onnx version, `numpy_helper.to_array` gives a STRING tensor's elements as
bytes or as str; ONNX strings are UTF-8, so bytes are decoded here once, and every later stage
sees str only.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .errors import OnnxImportError


def as_text(a: np.ndarray, what: str = "a STRING tensor") -> np.ndarray:
    """An object or unicode array as an object array of str (bytes decoded as UTF-8)."""
    out = np.empty(a.shape, dtype=object)
    flat = out.reshape(-1)
    for i, x in enumerate(np.asarray(a).reshape(-1)):
        if isinstance(x, bytes):
            try:
                x = x.decode("utf-8")
            except UnicodeDecodeError:
                raise OnnxImportError(f"{what}: element {i} is not UTF-8 text") from None
        if not isinstance(x, str):
            raise OnnxImportError(f"{what}: element {i} is a {type(x).__name__}, not a string")
        flat[i] = str(x)
    return out


def tensor_array(proto: Any, what: str = "a tensor") -> np.ndarray:
    """The array a TensorProto holds; STRING tensors as object arrays of str."""
    from onnx import numpy_helper
    a = numpy_helper.to_array(proto)
    return as_text(a, what) if a.dtype == object or a.dtype.kind in "US" else a
