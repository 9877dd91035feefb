"""Values of an ONNX graph during import: the frontends' shared emitter
(`frontends.base.values`) with the ONNX importer's error.

Ops whose operands are all known are folded with the op table's own NumPy reference, so the
shape arithmetic exporters emit (Shape -> Gather -> Concat -> Reshape) disappears at import.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from frontends.base import values as _base
from frontends.base.values import FOLD_LIMIT, Value

from .errors import OnnxImportError
from .symdim import DerivedDims


def type_of_array(a: np.ndarray):
    return _base.type_of_array(a, OnnxImportError)


def known(a: Any, dtype: Any = None) -> Value:
    """A Value known at import time."""
    arr = np.require(np.asarray(a, dtype=dtype), requirements="C")
    return Value(type_of_array(arr), None, arr)


class Emitter(_base.Emitter):
    error = OnnxImportError

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.derived = DerivedDims()    # the expressions behind derived dim names (batch_x4)


__all__ = ["FOLD_LIMIT", "Emitter", "Value", "known", "type_of_array"]
