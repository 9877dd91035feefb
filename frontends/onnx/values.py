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
from isa.module import Reg
from isa.types import Dim, TensorType

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

    # -- tensors of a type whose dims the call does not bind ---------------------------------

    def _param_dims(self) -> dict[str, tuple[Value, int]]:
        """Each dim name the function's parameters bind, with a parameter and axis holding it."""
        out: dict[str, tuple[Value, int]] = {}
        for p in self.fb.func.params:
            for axis, d in enumerate(p.type.shape):
                if isinstance(d, str):
                    out.setdefault(d, (Value(p.type, Reg(p.name)), axis))
        return out

    def _unbound(self, t: TensorType) -> bool:
        bound = self._param_dims()
        return any(isinstance(d, str) and d not in bound for d in t.shape)

    def dim_value(self, d: Dim) -> Value:
        """The size `d` (a size, a name the call binds, or a derived name) as an i64 scalar
        computed when the program runs."""
        if isinstance(d, int):
            return known(np.array(d, np.int64))
        bound = self._param_dims()
        expr = self.derived.exprs.get(d) if isinstance(d, str) else None
        if isinstance(d, str) and d in bound:
            p, axis = bound[d]
            return self.emit("gather", [self.emit("shape_of", [p], "shape"),
                                        known(np.array(axis, np.int64))], "dim", axis=0)
        if expr is None or any(n not in bound for m, _ in expr.terms for n in m):
            raise self.error(f"dim {'?' if d is None else d} is neither a size nor computed "
                             f"from the graph inputs' dims")
        total: Value | None = None
        for names, coef in expr.terms:
            term = known(np.array(coef, np.int64))
            for n in names:
                term = self.emit("mul", [term, self.dim_value(n)], "dim")
            total = term if total is None else self.emit("add", [total, term], "dim")
        return total if total is not None else known(np.array(0, np.int64))

    def shape_vector(self, dims: tuple[Dim, ...]) -> Value:
        """A run-time i64 shape vector of `dims` (see dim_value)."""
        if not dims:
            return known(np.zeros(0, np.int64))
        parts = [self.emit("reshape", [self.dim_value(d)], "dim", shape=[1]) for d in dims]
        return parts[0] if len(parts) == 1 else self.emit("concat", parts, "shape", axis=0)

    def emit_const_fill(self, value: Any, t: TensorType, hint: str = "fill") -> Value:
        """As the base emitter's; a type with a dim no parameter binds (a derived name such as
        batch_x4, which a `const` may not name) is filled at run time from its sizes."""
        if not self._unbound(t):
            return super().emit_const_fill(value, t, hint)
        fill = known(np.asarray(value, dtype=t.dtype.np))
        return self.emit("fill", [self.shape_vector(t.shape), fill], hint, result_type=t)

    def emit_shape_like(self, t: TensorType, hint: str = "like") -> Value:
        if not self._unbound(t):
            return super().emit_shape_like(t, hint)
        return self.emit_const_fill(0, t, hint)


__all__ = ["FOLD_LIMIT", "Emitter", "Value", "known", "type_of_array"]
