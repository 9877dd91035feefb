"""Atan, Asin and Acos, which dlvm has no op for: the shared formulas of
`frontends.base.mathfn` (see there for their precision)."""
from __future__ import annotations

from frontends.base import mathfn
from isa.dtypes import BY_NAME

from ..registry import NodeCtx, onnx_op
from ..values import Value
from .common import cast

F16, F32 = BY_NAME["f16"], BY_NAME["f32"]


@onnx_op("Atan", "Asin", "Acos")
def inverse_trig(ctx: NodeCtx) -> list[Value]:
    e, x0 = ctx.e, ctx.req(0)
    if not x0.dtype.is_float:
        raise ctx.fail(f"{ctx.node.op_type} of {x0.dtype} is not supported")
    x = cast(e, x0, F32) if x0.dtype == F16 else x0
    r = mathfn.BY_NAME[ctx.node.op_type.lower()](e, x)
    return [cast(e, r, x0.dtype)]
