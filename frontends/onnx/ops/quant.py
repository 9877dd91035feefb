"""ONNX linear quantization, decomposed into dlvm arithmetic: QuantizeLinear, DequantizeLinear,
QLinearMatMul.

    quantize:    y = cast(clip(round_half_even(x / scale) + zero_point, lo, hi))
    dequantize:  y = (cast(x) - cast(zero_point)) * scale

Scales and zero points are per tensor (a scalar), per axis (a vector along `axis`) or blocked
(one per `block_size` elements along `axis`, spread by a gather). Integer targets (4- and 2-bit
ones included) round half to even and clip to their range; float8 targets are x / scale cast
with saturation (their zero point is 0 by the spec), float4 ones x / scale + zero_point cast
(the format has no infinity: it saturates). The `precision` attribute other than its default
is refused.
"""
from __future__ import annotations

import numpy as np

from isa.dtypes import BY_NAME, DType

from ..registry import NodeCtx, onnx_op
from ..values import Value, known
from .common import SATURATING_FLOAT8, cast, norm_axis, onnx_cast, scalar
from .integer_products import exact_conv, exact_matmul

F32 = BY_NAME["f32"]


def _spread(ctx: NodeCtx, p: Value, x: Value, axis: int, block: int) -> Value:
    """A scale or zero point shaped to broadcast against x."""
    e = ctx.e
    if p.rank == 0 or (p.rank == 1 and p.shape[0] == 1 and block == 0):
        return e.emit("reshape", [p], shape=[]) if p.rank else p
    if block:
        n = x.shape[axis]
        if not isinstance(n, int):
            raise ctx.fail("blocked quantization needs a static size on the quantized axis")
        return e.emit("gather", [p, known(np.arange(n, dtype=np.int64) // block)], axis=axis)
    shape = [1] * x.rank
    shape[axis] = -1
    return e.emit("reshape", [p], shape=shape)


def _params(ctx: NodeCtx, x: Value, has_block: bool) -> tuple[int, int]:
    axis = norm_axis(int(ctx.attr("axis", 1)), max(x.rank, 1))
    block = int(ctx.attr("block_size", 0)) if has_block else 0
    return axis, block


@onnx_op("QuantizeLinear", since=10)    # 13 added axis (default 1); later ones read below
def quantize_linear(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    axis, block = _params(ctx, x, ctx.version >= 21)
    saturate = int(ctx.attr("saturate", 1)) if ctx.version >= 19 else 1
    if ctx.version >= 25 and int(ctx.attr("precision", 0)) != 0:
        raise ctx.fail("the precision attribute is not supported")
    zp = ctx.input(2)
    out_attr = int(ctx.attr("output_dtype", 0)) if ctx.version >= 21 else 0
    if zp is not None:
        to = zp.dtype
    elif out_attr:
        from ..graph import onnx_dtype
        to = onnx_dtype(out_attr, ctx.label)
    else:
        to = BY_NAME["u8"]
    scale = _spread(ctx, ctx.req(1), x, axis, block)
    if to in SATURATING_FLOAT8:
        return [onnx_cast(e, e.emit("div", [x, scale]), to, bool(saturate))]
    if to.is_float and to.is_narrow and to.text != "f8e8m0fnu":      # float4
        q = e.emit("div", [x, scale])
        if zp is not None:
            q = e.emit("add", [q, cast(e, _spread(ctx, zp, x, axis, block), q.dtype)])
        return [cast(e, q, to)]
    if not to.is_int:
        raise ctx.fail(f"quantizing to {to} is not supported")
    q = e.emit("round", [e.emit("div", [x, scale])])
    if zp is not None:
        q = e.emit("add", [q, cast(e, _spread(ctx, zp, x, axis, block), q.dtype)])
    lo, hi = to.int_range()
    q = e.emit("max", [e.emit("min", [q, scalar(float(hi), q)]), scalar(float(lo), q)])
    return [e.emit("cast", [q], ctx.node.output[0], to=to)]


@onnx_op("DequantizeLinear", since=10)
def dequantize_linear(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    axis, block = _params(ctx, x, ctx.version >= 21)
    if ctx.version >= 23 and int(ctx.attr("output_dtype", 0)) not in (0,):
        from ..graph import onnx_dtype
        want = onnx_dtype(int(ctx.attr("output_dtype")), ctx.label)
        if want != ctx.req(1).dtype:
            raise ctx.fail("output_dtype other than the scale's dtype is not supported")
    scale = _spread(ctx, ctx.req(1), x, axis, block)
    ft: DType = scale.dtype
    # the difference is exact in f32 for every integer type up to 16 bits; i32 goes through f64
    wide = BY_NAME["f64"] if x.dtype.itemsize >= 4 else F32
    v = cast(e, x, wide)
    zp = ctx.input(2)
    if zp is not None:
        v = e.emit("sub", [v, cast(e, _spread(ctx, zp, x, axis, block), wide)])
    return [e.emit("mul", [cast(e, v, ft), scale], ctx.node.output[0])]


@onnx_op("QLinearMatMul", since=10)     # 21 added element types
def qlinear_matmul(ctx: NodeCtx) -> list[Value]:
    # the integer product exactly (integer_products.py), requantized in f64
    e = ctx.e
    a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp = (ctx.req(i) for i in range(8))
    f64 = BY_NAME["f64"]
    acc = exact_matmul(ctx, a, (a_zp, None), b, (b_zp, None), f64)
    s = e.emit("div", [e.emit("mul", [cast(e, a_s, f64), cast(e, b_s, f64)]), cast(e, y_s, f64)])
    q = e.emit("add", [e.emit("round", [e.emit("mul", [acc, s])]), cast(e, y_zp, f64)])
    lo, hi = y_zp.dtype.int_range()
    q = e.emit("max", [e.emit("min", [q, scalar(float(hi), q)]), scalar(float(lo), q)])
    return [e.emit("cast", [q], ctx.node.output[0], to=y_zp.dtype)]


@onnx_op("MatMulInteger", since=10)
def matmul_integer(ctx: NodeCtx) -> list[Value]:
    # (a - a_zero_point) @ (b - b_zero_point) in i32, computed exactly in float
    # (integer_products.py); a vector a_zero_point is one per row of a, a vector b_zero_point
    # one per column of b (it broadcasts along the rows as it is)
    a, b, a_zp, b_zp = ctx.req(0), ctx.req(1), ctx.input(2), ctx.input(3)
    a_shape = [-1, 1] if a_zp is not None and a_zp.rank == 1 and a.rank >= 2 else None
    return [exact_matmul(ctx, a, (a_zp, a_shape), b, (b_zp, None), BY_NAME["i32"])]


@onnx_op("ConvInteger", since=10)
def conv_integer(ctx: NodeCtx) -> list[Value]:
    # (x - x_zero_point) conv (w - w_zero_point) as i32, computed exactly in float
    return [exact_conv(ctx, ctx.req(0), ctx.input(2), ctx.req(1), ctx.input(3), BY_NAME["i32"])]


@onnx_op("QLinearConv", since=10)
def qlinear_conv(ctx: NodeCtx) -> list[Value]:
    # acc = (x - x_zp) conv (w - w_zp) + bias (i32), then requantized with x_s * w_s / y_s
    e = ctx.e
    f64 = BY_NAME["f64"]
    x_s, w_s, y_s, y_zp = ctx.req(1), ctx.req(4), ctx.req(6), ctx.req(7)
    acc = exact_conv(ctx, ctx.req(0), ctx.req(2), ctx.req(3), ctx.req(5), f64)
    b = ctx.input(8)
    if b is not None:
        acc = e.emit("add", [acc, e.emit("reshape", [cast(e, b, f64)],
                                         shape=[-1] + [1] * (acc.rank - 2))])
    ws = cast(e, w_s, f64)
    if ws.rank == 1:
        ws = e.emit("reshape", [ws], shape=[-1] + [1] * (acc.rank - 2))
    s = e.emit("div", [e.emit("mul", [cast(e, x_s, f64), ws]), cast(e, y_s, f64)])
    q = e.emit("add", [e.emit("round", [e.emit("mul", [acc, s])]), cast(e, y_zp, f64)])
    lo, hi = y_zp.dtype.int_range()
    q = e.emit("max", [e.emit("min", [q, scalar(float(hi), q)]), scalar(float(lo), q)])
    return [e.emit("cast", [q], ctx.node.output[0], to=y_zp.dtype)]
