"""The semantics of instructions on the narrow storage formats (bf16, float8, float4, int4, int2),
and of the instructions that compute on f16.

An instruction that reads or writes a narrow format computes in the format's wide dtype (f32
for the float formats, i8 / u8 for the small integers: every narrow value is exact there) and
rounds each result back to its declared dtype, as hardware without native support does and as
ONNX's reference computes them. An instruction that computes on f16 (arithmetic, reductions,
products, the NN ops: not movement, casts or constants) does the same in f32: f16 products were
already summed in f32 and rounded once, as NumPy's and torch's CPU f16 kernels do, and so is
every other op now; for the correctly rounded elementwise ops this is what NumPy's f16 loops
compute anyway, and it runs at f32's speed (NumPy's f16 arithmetic converts element by element).
Every stage that runs a reference (the interpreter, constant folding in the passes and the
frontends, the trap probes) runs it through `widened` when `touches_narrow` says so, so they all
agree; instructions on other dtypes call the reference as before.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .dtypes import DType, dtype_from_numpy
from .types import TensorType


def touches_narrow(types: list[TensorType], op: Any = None) -> bool:
    """Whether an instruction with these operand and result types computes wide: it touches a
    narrow format, or `op` (its OpDef) computes and one of the types is f16."""
    if any(t.dtype.is_narrow for t in types):
        return True
    return op is not None and computes(op) and any(t.dtype is DType.F16 for t in types)


def computes(op: Any) -> bool:
    """Whether an op computes new values from its operands' (not a movement, a cast, a
    constant or control flow): the ops an f16 instruction of runs in f32."""
    from .ops.opdef import Family
    return op.family not in (Family.MOVEMENT, Family.MISC, Family.CONTROL, Family.CAST) and \
        not op.random


def widen(a: Any) -> Any:
    """`a` in the dtype its narrow format (or f16) computes in (anything else unchanged)."""
    dt = getattr(a, "dtype", None)
    if dt is None or dt.kind not in "Vf" or dt.itemsize > 2:      # ml_dtypes' kinds
        return a
    if dt == np.float16:
        return np.asarray(a).astype(np.float32)
    d = dtype_from_numpy(dt)
    return a if d is None or not d.is_narrow else np.asarray(a).astype(d.wide.np)


def widened(ref, out_dtypes: list[DType] | None):
    """A reference that takes and gives the narrow formats, computing in the wide ones (with
    `out_dtypes` None, its results stay wide: enough to learn whether it traps)."""
    if out_dtypes is None:
        def wide_only(attrs, *args):
            return ref(attrs, *[widen(a) for a in args])
        return wide_only
    outs = [d.np if d.is_narrow or d is DType.F16 else None for d in out_dtypes]

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
