"""ONNX ops with a dlvm row each: GatherElements, ScatterElements, GatherND, ScatterND, NonZero,
Compress, TopK, Einsum and BitCast."""
from __future__ import annotations

from ..registry import NodeCtx, onnx_op
from ..values import Value
from .common import norm_axis

_REDUCTIONS = {"none": "none", "add": "add", "mul": "mul", "max": "max", "min": "min"}


def _reduction(ctx: NodeCtx) -> str:
    red = ctx.attr("reduction", "none")
    if red not in _REDUCTIONS:
        raise ctx.fail(f"reduction '{red}' is not supported")
    return red


@onnx_op("GatherElements", since=13)
def gather_elements(ctx: NodeCtx) -> list[Value]:
    x, idx = ctx.req(0), ctx.req(1)
    axis = norm_axis(int(ctx.attr("axis", 0)), x.rank)
    return [ctx.e.emit("gather_elements", [x, idx], ctx.node.output[0], axis=axis)]


@onnx_op("ScatterElements", since=13)
def scatter_elements(ctx: NodeCtx) -> list[Value]:
    x, idx, upd = ctx.req(0), ctx.req(1), ctx.req(2)
    axis = norm_axis(int(ctx.attr("axis", 0)), x.rank)
    red = _reduction(ctx) if ctx.version >= 16 else "none"
    return [ctx.e.emit("scatter_elements", [x, idx, upd], ctx.node.output[0], axis=axis,
                       reduction=red)]


@onnx_op("GatherND", since=13)
def gather_nd(ctx: NodeCtx) -> list[Value]:
    return [ctx.e.emit("gather_nd", [ctx.req(0), ctx.req(1)], ctx.node.output[0],
                       batch_dims=int(ctx.attr("batch_dims", 0)))]


@onnx_op("ScatterND", since=13)
def scatter_nd(ctx: NodeCtx) -> list[Value]:
    red = _reduction(ctx) if ctx.version >= 16 else "none"
    return [ctx.e.emit("scatter_nd", [ctx.req(0), ctx.req(1), ctx.req(2)], ctx.node.output[0],
                       reduction=red)]


@onnx_op("NonZero", since=13)
def nonzero(ctx: NodeCtx) -> list[Value]:
    return [ctx.e.emit("nonzero", [ctx.req(0)], ctx.node.output[0])]


@onnx_op("Compress")
def compress(ctx: NodeCtx) -> list[Value]:
    x, cond = ctx.req(0), ctx.req(1)
    axis = ctx.attr("axis", None)
    if axis is not None:
        axis = norm_axis(int(axis), x.rank)
    return [ctx.e.emit("compress", [x, cond], ctx.node.output[0], axis=axis)]


@onnx_op("TopK", since=11)
def top_k(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    axis = norm_axis(int(ctx.attr("axis", -1)), x.rank)
    values, indices = ctx.e.emit("topk", [x, ctx.req(1)], ctx.node.output[0], n_results=2,
                                 axis=axis, largest=bool(ctx.attr("largest", 1)),
                                 sorted=bool(ctx.attr("sorted", 1)))
    return [values, indices]


@onnx_op("Einsum")
def einsum(ctx: NodeCtx) -> list[Value]:
    vals = [v for v in ctx.inputs if v is not None]
    return [ctx.e.emit("einsum", vals, ctx.node.output[0], equation=str(ctx.attr("equation")))]


@onnx_op("BitCast")
def bit_cast(ctx: NodeCtx) -> list[Value]:
    from ..graph import onnx_dtype
    to = onnx_dtype(int(ctx.attr("to")), ctx.label)
    return [ctx.e.emit("bitcast", [ctx.req(0)], ctx.node.output[0], to=to)]
