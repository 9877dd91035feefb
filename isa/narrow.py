"""The semantics of instructions on the narrow storage formats (bf16, float8, float4, int4, int2).

An instruction that reads or writes one computes in the format's wide dtype (f32 for the float
formats, i8 / u8 for the small integers: every narrow value is exact there) and rounds each
result back to its declared dtype, as hardware without native support does and as ONNX's
reference computes them. Every stage that runs a reference (the interpreter, constant folding
in the passes and the frontends, the trap probes) runs it through `widened` when a type is
narrow, so they all agree; instructions on other dtypes call the reference as before.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .dtypes import DType, dtype_from_numpy
from .types import TensorType


def touches_narrow(types: list[TensorType]) -> bool:
    return any(t.dtype.is_narrow for t in types)


def widen(a: Any) -> Any:
    """`a` in the dtype its narrow format computes in (anything else unchanged)."""
    dt = getattr(a, "dtype", None)
    if dt is None or dt.kind not in "Vf" or dt.itemsize > 2:      # ml_dtypes' kinds
        return a
    d = dtype_from_numpy(dt)
    return a if d is None or not d.is_narrow else np.asarray(a).astype(d.wide.np)


def widened(ref, out_dtypes: list[DType] | None):
    """A reference that takes and gives the narrow formats, computing in the wide ones (with
    `out_dtypes` None, its results stay wide: enough to learn whether it traps)."""
    if out_dtypes is None:
        def wide_only(attrs, *args):
            return ref(attrs, *[widen(a) for a in args])
        return wide_only
    outs = [d.np if d.is_narrow else None for d in out_dtypes]

    def narrow_back(v, to):
        return v if to is None or v.dtype == to else np.asarray(v).astype(to)

    if len(outs) == 1:
        to = outs[0]

        def one(attrs, *args):
            return narrow_back(ref(attrs, *[widen(a) for a in args]), to)
        return one

    def many(attrs, *args):
        return tuple(narrow_back(v, t) for v, t in zip(ref(attrs, *[widen(a) for a in args]), outs))
    return many
