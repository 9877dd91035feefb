"""ONNX ops with a dlvm row each: GatherElements, ScatterElements, GatherND, ScatterND, NonZero,
Compress, TopK, Einsum, BitCast and Unique; ReverseSequence as a gather_elements."""
from __future__ import annotations

import numpy as np

from frontends.base.einsum import einsum_lowered
from isa.dtypes import BY_NAME

from ..registry import NodeCtx, onnx_op
from ..values import Value, known
from .common import cast, norm_axis, scalar, where

I64 = BY_NAME["i64"]

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
    equation = str(ctx.attr("equation"))
    return [einsum_lowered(ctx.e, vals, equation, ctx.node.output[0])]


@onnx_op("BitCast")
def bit_cast(ctx: NodeCtx) -> list[Value]:
    from ..graph import onnx_dtype
    to = onnx_dtype(int(ctx.attr("to")), ctx.label)
    return [ctx.e.emit("bitcast", [ctx.req(0)], ctx.node.output[0], to=to)]


@onnx_op("Unique", since=11)
def unique(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    axis = ctx.attr("axis", None)
    if axis is not None:
        axis = norm_axis(int(axis), x.rank)
    outs = ctx.e.emit("unique", [x], ctx.node.output[0], n_results=4, axis=axis,
                      sorted=bool(ctx.attr("sorted", 1)))
    return outs[:len(ctx.node.output)]


@onnx_op("ReverseSequence", since=10)
def reverse_sequence(ctx: NodeCtx) -> list[Value]:
    # one gather_elements along the time axis: element t of batch b reads len_b - 1 - t while
    # t < len_b, else itself
    e, x = ctx.e, ctx.req(0)
    t_ax, b_ax = int(ctx.attr("time_axis", 0)), int(ctx.attr("batch_axis", 1))
    if not x.type.is_static or {t_ax, b_ax} != {0, 1}:
        raise ctx.fail("ReverseSequence needs a static input with time and batch axes 0 and 1")
    lens = cast(e, ctx.req(1), I64)
    shape = [1] * x.rank
    shape[t_ax] = x.shape[t_ax]
    t = known(np.arange(x.shape[t_ax], dtype=np.int64).reshape(shape))
    shape = [1] * x.rank
    shape[b_ax] = x.shape[b_ax]
    n = e.emit("reshape", [lens], "lens", shape=shape)
    rev = e.emit("sub", [e.emit("sub", [n, scalar(1, I64)]), t], "rev")
    idx = where(e, e.emit("lt", [t, n]), rev, t)
    idx = e.emit("broadcast_to", [idx], "idx", shape=list(x.shape))
    return [e.emit("gather_elements", [x, idx], ctx.node.output[0], axis=t_ax)]


@onnx_op("TensorScatter", since=24)
def tensor_scatter(ctx: NodeCtx) -> list[Value]:
    # a scatter_elements along the sequence axis: update row i of batch b goes to position
    # write_indices[b] + i (modulo the cache length in circular mode)
    e, past, upd = ctx.e, ctx.req(0), ctx.req(1)
    axis = norm_axis(int(ctx.attr("axis", -2)), past.rank)
    mode = str(ctx.attr("mode", "linear"))
    if mode not in ("linear", "circular") or axis == 0:
        raise ctx.fail(f"mode {mode} on axis {axis} is not supported")
    if not upd.type.is_static or not isinstance(past.shape[axis], int):
        raise ctx.fail("TensorScatter needs a static update and cache length")
    shape = [1] * upd.rank
    shape[axis] = upd.shape[axis]
    pos = known(np.arange(upd.shape[axis], dtype=np.int64).reshape(shape))
    start = ctx.input(2)
    if start is not None:
        bshape = [1] * upd.rank
        bshape[0] = upd.shape[0]
        pos = e.emit("add", [e.emit("reshape", [cast(e, start, I64)], "start", shape=bshape), pos])
    if mode == "circular":
        pos = e.emit("mod", [pos, scalar(past.shape[axis], I64)], "pos")
    idx = e.emit("broadcast_to", [pos], "idx", shape=list(upd.shape))
    return [e.emit("scatter_elements", [past, idx, upd], ctx.node.output[0], axis=axis)]
