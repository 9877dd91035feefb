"""Neural-network ONNX ops: MatMul, Gemm, Conv, pooling, normalizations, softmax family.

dlvm's conv2d and pools are 2-D NCHW; 1-D ONNX forms run as 2-D with a unit height. auto_pad and
ceil_mode become explicit pads computed from static spatial sizes.
"""
from __future__ import annotations

import numpy as np

from frontends.base.conv3d import conv3d
from frontends.base.conv_transpose import conv_transpose_2d, conv_transpose_3d
from frontends.base.maxpool_indices import maxpool2d_indices
from frontends.base.values import reshape_named
from isa.dtypes import BY_NAME

from ..registry import NodeCtx, onnx_op
from ..values import Value, known
from .common import norm_axis, scalar


@onnx_op("MatMul", since=13)
def matmul(ctx: NodeCtx) -> list[Value]:
    return [ctx.e.emit("matmul", [ctx.req(0), ctx.req(1)], ctx.node.output[0])]


@onnx_op("Gemm", since=13)
def gemm(ctx: NodeCtx) -> list[Value]:
    a, b, c, e = ctx.req(0), ctx.req(1), ctx.input(2), ctx.e
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    if ctx.attr("transA", 0):
        a = e.emit("transpose", [a], perm=[1, 0])
    if ctx.attr("transB", 0):
        b = e.emit("transpose", [b], perm=[1, 0])
    y = e.emit("matmul", [a, b], ctx.node.output[0])
    if alpha != 1.0:
        y = e.emit("mul", [y, scalar(alpha, y)])
    if c is not None and beta != 0.0:
        if beta != 1.0:
            c = e.emit("mul", [c, scalar(beta, c)])
        y = e.emit("add", [y, c], ctx.node.output[0])
    return [y]


def _spatial_pads(ctx: NodeCtx, x: Value, kernel: list[int], strides: list[int],
                  dilations: list[int], ceil_mode: bool = False) -> list[int]:
    """Explicit pads [begins..., ends...] from pads / auto_pad / ceil_mode."""
    n = len(kernel)
    auto = ctx.attr("auto_pad", "NOTSET")
    pads = list(ctx.attr("pads", [0] * (2 * n)))
    sizes = x.shape[2:]
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        if not all(isinstance(s, int) for s in sizes):
            raise ctx.fail(f"auto_pad={auto} needs static spatial sizes")
        pads = [0] * (2 * n)
        for i in range(n):
            out = -(-sizes[i] // strides[i])
            total = max((out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - sizes[i], 0)
            small, big = total // 2, total - total // 2
            pads[i], pads[i + n] = (small, big) if auto == "SAME_UPPER" else (big, small)
    elif auto == "VALID":
        pads = [0] * (2 * n)
    elif auto != "NOTSET":
        raise ctx.fail(f"auto_pad={auto} is not supported")
    if ceil_mode:
        if not all(isinstance(s, int) for s in sizes):
            raise ctx.fail("ceil_mode needs static spatial sizes")
        for i in range(n):
            span = sizes[i] + pads[i] + pads[i + n] - ((kernel[i] - 1) * dilations[i] + 1)
            out = -(-span // strides[i]) + 1
            if (out - 1) * strides[i] >= sizes[i] + pads[i]:
                out -= 1          # the last window must start inside the input or left pad
            need = (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1
            pads[i + n] += max(need - (sizes[i] + pads[i] + pads[i + n]), 0)
    return pads


def _to_2d(ctx: NodeCtx, x: Value, nd: int) -> Value:
    if nd == 1:
        return ctx.e.emit("expand_dims", [x], axes=[2])
    if nd != 2:
        raise ctx.fail(f"{nd}-D {ctx.node.op_type} is not supported (dlvm has 2-D NCHW ops)")
    return x


def _pads_2d(pads: list[int], nd: int) -> list[int]:
    return [0, pads[0], 0, pads[1]] if nd == 1 else pads


@onnx_op("Conv")
def conv(ctx: NodeCtx) -> list[Value]:
    return [emit_conv(ctx, ctx.req(0), ctx.req(1), ctx.input(2), ctx.node.output[0])]


def emit_conv(ctx: NodeCtx, x: Value, w: Value, b: Value | None, hint: str) -> Value:
    """ONNX Conv's attributes (kernel, strides, dilations, group, pads) on x and w."""
    e = ctx.e
    nd = x.rank - 2
    kernel = list(ctx.attr("kernel_shape", w.shape[2:]))
    strides = list(ctx.attr("strides", [1] * nd))
    dil = list(ctx.attr("dilations", [1] * nd))
    group = int(ctx.attr("group", 1))
    pads = _spatial_pads(ctx, x, kernel, strides, dil)
    if nd == 3:
        return conv3d(ctx.e, x, w, b, strides=strides, pads=pads, dilations=dil, groups=group,
                      hint=hint, fail=ctx.fail)
    x2, w2 = _to_2d(ctx, x, nd), _to_2d(ctx, w, nd)
    if nd == 1:
        strides, dil = [1] + strides, [1] + dil
    args = [x2, w2] + ([b] if b is not None else [])
    y = e.emit("conv2d", args, hint, strides=strides, pads=_pads_2d(pads, nd),
               dilations=dil, groups=group)
    return e.emit("squeeze", [y], axes=[2]) if nd == 1 else y


@onnx_op("MaxPool", "AveragePool")
def pool(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    want_indices = len(ctx.node.output) > 1 and bool(ctx.node.output[1])
    nd = x.rank - 2
    kernel = list(ctx.attr("kernel_shape"))
    strides = list(ctx.attr("strides", [1] * nd))
    dil = list(ctx.attr("dilations", [1] * nd))
    is_max = ctx.node.op_type == "MaxPool"
    if is_max:
        storage_order = int(ctx.attr("storage_order", 0))
        extra = {}
    else:
        extra = {"count_include_pad": bool(ctx.attr("count_include_pad", 0))}
    if not 1 <= nd <= 3:
        raise ctx.fail(f"{nd}-D pooling is not supported (1 to 3 spatial dims)")
    # the rows take ceil_mode themselves: the overhang it adds never counts in an average
    pads = _spatial_pads(ctx, x, kernel, strides, dil)
    ceil = bool(ctx.attr("ceil_mode", 0))
    y = e.emit("maxpool2d" if is_max else "avgpool2d", [x], ctx.node.output[0],
               kernel=kernel, strides=strides, pads=pads, dilations=dil, ceil_mode=ceil, **extra)
    if not (is_max and want_indices):
        return [y]
    full = _spatial_pads(ctx, x, kernel, strides, dil, ceil)
    if x.rank != 4 or not all(isinstance(d, int) for d in x.shape[1:]):
        raise ctx.fail("MaxPool's Indices output needs a 2-D input, static but for the batch")
    return [y, maxpool2d_indices(e, x, kernel, strides, dil, full, storage_order=storage_order,
                                 hint=ctx.node.output[1])]


@onnx_op("MaxUnpool")
def max_unpool(ctx: NodeCtx) -> list[Value]:
    # scatter x's values to the flat positions Indices names, in a zero tensor of the pooling's
    # input size ((in - 1) * stride - pads + kernel: what the indices count in); a larger
    # output_shape holds that tensor at its start, zeros after (as ONNX's reference)
    x, idx, e = ctx.req(0), ctx.req(1), ctx.e
    nd = x.rank - 2
    kernel = list(ctx.attr("kernel_shape"))
    strides = list(ctx.attr("strides", [1] * nd))
    pads = list(ctx.attr("pads", [0] * (2 * nd)))
    if not x.type.is_static:
        raise ctx.fail("MaxUnpool needs a static input")
    inferred = list(x.shape[:2]) + [(x.shape[2 + i] - 1) * strides[i] - pads[i] - pads[i + nd]
                                    + kernel[i] for i in range(nd)]
    out_shape = ctx.const_ints(2, "output_shape") or inferred
    if len(out_shape) != x.rank or any(o < i for o, i in zip(out_shape, inferred)):
        raise ctx.fail(f"output_shape {out_shape} is smaller than the unpooled size {inferred}")
    zeros = known(np.zeros(int(np.prod(inferred)), x.dtype.np))
    flat_i = e.emit("reshape", [e.emit("cast", [idx], to=BY_NAME["i64"])], shape=[-1])
    flat_x = e.emit("reshape", [x], shape=[-1])
    out = e.emit("scatter_elements", [zeros, flat_i, flat_x], axis=0)
    if out_shape == inferred:
        return [e.emit("reshape", [out], ctx.node.output[0], shape=list(out_shape))]
    out = e.emit("reshape", [out], shape=inferred)
    grow = [o - i for o, i in zip(out_shape, inferred)]
    return [e.emit("pad", [out], ctx.node.output[0], pads=[0] * x.rank + grow)]


@onnx_op("GlobalAveragePool", "GlobalMaxPool")
def global_pool(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    op = "reduce_mean" if ctx.node.op_type == "GlobalAveragePool" else "reduce_max"
    return [ctx.e.emit(op, [x], ctx.node.output[0], axes=list(range(2, x.rank)), keepdims=True)]


def _channel_shape(x: Value) -> list[int]:
    return [-1] + [1] * (x.rank - 2)


@onnx_op("BatchNormalization", since=9)
def batch_norm(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    eps = float(ctx.attr("epsilon", 1e-5))
    momentum = float(ctx.attr("momentum", 0.9))     # only used in training mode
    # before 14 the training form was the one with the statistics outputs
    training = ctx.attr("training_mode", 0) if ctx.version >= 14 else \
        any(ctx.node.output[1:])
    if training:
        return _batch_norm_training(ctx, x, eps, momentum)
    args = [ctx.req(i) for i in range(1, 5)]
    if x.rank == 4:
        return [e.emit("batch_norm", [x] + args, ctx.node.output[0], epsilon=eps)]
    scale, bias, mean, var = [e.emit("reshape", [a], shape=_channel_shape(x)) for a in args]
    inv = e.emit("div", [scale, e.emit("sqrt", [e.emit("add", [var, scalar(eps, var)])])])
    return [e.emit("add", [e.emit("mul", [e.emit("sub", [x, mean]), inv]), bias])]


def _batch_norm_training(ctx: NodeCtx, x: Value, eps: float, momentum: float) -> list[Value]:
    """training_mode=1: normalize with the batch's own mean and (population) variance over
    every axis but the channels, and return the running statistics moved toward them."""
    e = ctx.e
    scale, bias, mean, var = (ctx.req(i) for i in range(1, 5))
    axes = [a for a in range(x.rank) if a != 1]
    b_mean = e.emit("reduce_mean", [x], axes=axes, keepdims=True)
    d = e.emit("sub", [x, b_mean])
    b_var = e.emit("reduce_mean", [e.emit("mul", [d, d])], axes=axes, keepdims=True)
    inv = e.emit("div", [e.emit("reshape", [scale], shape=_channel_shape(x)),
                         e.emit("sqrt", [e.emit("add", [b_var, scalar(eps, b_var)])])])
    y = e.emit("add", [e.emit("mul", [d, inv]), e.emit("reshape", [bias], shape=_channel_shape(x))],
               ctx.node.output[0])

    def moved(running: Value, batch: Value) -> Value:
        batch = e.emit("reshape", [batch], shape=[-1])
        return e.emit("add", [e.emit("mul", [running, scalar(momentum, running)]),
                              e.emit("mul", [batch, scalar(1.0 - momentum, batch)])])
    outs = [y, moved(mean, b_mean), moved(var, b_var)]
    return outs[:max(1, len(ctx.node.output))]


def _normalize(e, x: Value, axes: list[int], eps: float) -> Value:
    mean = e.emit("reduce_mean", [x], axes=axes, keepdims=True)
    d = e.emit("sub", [x, mean])
    var = e.emit("reduce_mean", [e.emit("mul", [d, d])], axes=axes, keepdims=True)
    return e.emit("div", [d, e.emit("sqrt", [e.emit("add", [var, scalar(eps, var)])])])


@onnx_op("InstanceNormalization")
def instance_norm(ctx: NodeCtx) -> list[Value]:
    x, scale, bias, e = ctx.req(0), ctx.req(1), ctx.req(2), ctx.e
    eps = float(ctx.attr("epsilon", 1e-5))
    y = _normalize(e, x, list(range(2, x.rank)), eps)
    y = e.emit("mul", [y, e.emit("reshape", [scale], shape=_channel_shape(x))])
    return [e.emit("add", [y, e.emit("reshape", [bias], shape=_channel_shape(x))])]


@onnx_op("LayerNormalization", since=17)
def layer_norm(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    axis = norm_axis(int(ctx.attr("axis", -1)), x.rank)
    eps = float(ctx.attr("epsilon", 1e-5))
    if ctx.attr("stash_type", 1) != 1:
        raise ctx.fail("stash_type other than float is not supported")
    if any(o for o in ctx.node.output[1:]):
        # the statistics are wanted too: spell the normalization out
        axes = list(range(axis, x.rank))
        mean = e.emit("reduce_mean", [x], axes=axes, keepdims=True)
        d = e.emit("sub", [x, mean])
        var = e.emit("reduce_mean", [e.emit("mul", [d, d])], axes=axes, keepdims=True)
        inv = e.emit("rsqrt", [e.emit("add", [var, scalar(eps, var)])])
        y = e.emit("mul", [e.emit("mul", [d, inv]), ctx.req(1)])
        if ctx.input(2) is not None:
            y = e.emit("add", [y, ctx.input(2)])
        return [y, mean, inv]
    args = [x, ctx.req(1)] + ([ctx.input(2)] if ctx.input(2) is not None else [])
    return [e.emit("layer_norm", args, ctx.node.output[0], axis=axis, epsilon=eps)]


@onnx_op("GroupNormalization", since=18)
def group_norm(ctx: NodeCtx) -> list[Value]:
    x, scale, bias, e = ctx.req(0), ctx.req(1), ctx.req(2), ctx.e
    g = int(ctx.attr("num_groups"))
    eps = float(ctx.attr("epsilon", 1e-5))
    if ctx.version >= 21 and ctx.attr("stash_type", 1) != 1:
        raise ctx.fail("stash_type other than float is not supported")
    if not all(isinstance(d, int) for d in x.shape[1:]):
        raise ctx.fail("GroupNormalization needs static shapes but for the batch")
    n, c = x.shape[0], x.shape[1]
    if ctx.version < 21 and c != g:
        # GroupNormalization-18 scales and shifts per group: spread each over its channels
        spread = known(np.arange(c, dtype=np.int64) // (c // g))
        scale = e.emit("gather", [scale, spread], axis=0)
        bias = e.emit("gather", [bias, spread], axis=0)
    rest = int(np.prod(x.shape[1:], dtype=np.int64)) // g
    y = _normalize(e, reshape_named(e, x, [n, g, rest]), [2], eps)
    y = reshape_named(e, y, list(x.shape))
    y = e.emit("mul", [y, e.emit("reshape", [scale], shape=_channel_shape(x))])
    return [e.emit("add", [y, e.emit("reshape", [bias], shape=_channel_shape(x))])]


@onnx_op("RMSNormalization", since=23)
def rms_norm(ctx: NodeCtx) -> list[Value]:
    x, scale, e = ctx.req(0), ctx.req(1), ctx.e
    axis = norm_axis(int(ctx.attr("axis", -1)), x.rank)
    eps = float(ctx.attr("epsilon", 1e-5))
    if ctx.attr("stash_type", 1) != 1:
        raise ctx.fail("stash_type other than float is not supported")
    ms = e.emit("reduce_mean", [e.emit("mul", [x, x])], axes=list(range(axis, x.rank)), keepdims=True)
    y = e.emit("div", [x, e.emit("sqrt", [e.emit("add", [ms, scalar(eps, ms)])])])
    return [e.emit("mul", [y, scale])]


@onnx_op("Softmax", "LogSoftmax", since=13)
def softmax(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    op = "softmax" if ctx.node.op_type == "Softmax" else "log_softmax"
    axis = norm_axis(int(ctx.attr("axis", -1)), x.rank)
    return [ctx.e.emit(op, [x], ctx.node.output[0], axis=axis)]


@onnx_op("Hardmax", since=13)
def hardmax(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    axis = norm_axis(int(ctx.attr("axis", -1)), x.rank)
    n = x.shape[axis]
    if not isinstance(n, int):
        raise ctx.fail("Hardmax needs a static size on its axis")
    i = e.emit("argmax", [x], axis=axis, keepdims=True)
    shape = [1] * x.rank
    shape[axis] = n
    hit = e.emit("eq", [i, known(np.arange(n, dtype=np.int64).reshape(shape))])
    return [e.emit("select", [hit, scalar(1, x), scalar(0, x)])]


@onnx_op("LpNormalization")
def lp_norm(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    axis = norm_axis(int(ctx.attr("axis", -1)), x.rank)
    p = int(ctx.attr("p", 2))
    if p == 1:
        n = e.emit("reduce_sum", [e.emit("abs", [x])], axes=[axis], keepdims=True)
    elif p == 2:
        n = e.emit("sqrt", [e.emit("reduce_sum", [e.emit("mul", [x, x])], axes=[axis], keepdims=True)])
    else:
        raise ctx.fail(f"p={p} is not defined by ONNX")
    # a slice whose norm is 0 is all zeros and stays zeros (ONNX), not 0/0 = NaN
    q = e.emit("div", [x, n])
    return [e.emit("select", [e.emit("eq", [n, scalar(0, n)]), scalar(0, x), q])]


@onnx_op("MeanVarianceNormalization", since=13)
def mvn(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    axes = [norm_axis(a, x.rank) for a in ctx.attr("axes", [0, 2, 3])]
    mean = e.emit("reduce_mean", [x], axes=axes, keepdims=True)
    d = e.emit("sub", [x, mean])
    var = e.emit("reduce_mean", [e.emit("mul", [d, d])], axes=axes, keepdims=True)
    return [e.emit("div", [d, e.emit("add", [e.emit("sqrt", [var]), scalar(1e-9, var)])])]




@onnx_op("LpPool", since=11)      # 18 added ceil_mode (read with its default)
def lp_pool(ctx: NodeCtx) -> list[Value]:
    # (sum of |x|^p over the window)^(1/p): an average pool with padding counted, times the size
    x, e = ctx.req(0), ctx.e
    nd = x.rank - 2
    p = float(ctx.attr("p", 2))
    kernel = list(ctx.attr("kernel_shape"))
    strides = list(ctx.attr("strides", [1] * nd))
    dil = list(ctx.attr("dilations", [1] * nd))
    if not 1 <= nd <= 3:
        raise ctx.fail(f"{nd}-D pooling is not supported (1 to 3 spatial dims)")
    # ceil mode as explicit end pads: zeros that add nothing to the sum, while the divisor
    # (count_include_pad) stays the full window, which the product below undoes
    pads = _spatial_pads(ctx, x, kernel, strides, dil, bool(ctx.attr("ceil_mode", 0)))
    ax = e.emit("pow", [e.emit("abs", [x]), scalar(p, x)])
    y = e.emit("avgpool2d", [ax], kernel=kernel, strides=strides, pads=pads, dilations=dil,
               count_include_pad=True)
    y = e.emit("mul", [y, scalar(float(np.prod(kernel)), y)])
    return [e.emit("pow", [y, scalar(1.0 / p, y)], ctx.node.output[0])]


def _conv_transpose_pads(ctx: NodeCtx, sizes, kernel, strides, dil, out_pad) -> list[int]:
    n = len(kernel)
    auto = ctx.attr("auto_pad", "NOTSET")
    out_shape = ctx.attr("output_shape", None)
    pads = list(ctx.attr("pads", [0] * (2 * n)))
    if out_shape is None and auto not in ("SAME_UPPER", "SAME_LOWER"):
        if auto not in ("NOTSET", "VALID"):
            raise ctx.fail(f"auto_pad={auto} is not supported")
        return pads if auto == "NOTSET" else [0] * (2 * n)
    targets = list(out_shape)[-n:] if out_shape is not None else [s * st for s, st in zip(sizes, strides)]
    for i in range(n):
        total = strides[i] * (sizes[i] - 1) + out_pad[i] + (kernel[i] - 1) * dil[i] + 1 - targets[i]
        small, big = total // 2, total - total // 2
        pads[i], pads[i + n] = (small, big) if auto == "SAME_UPPER" else (big, small)
    return pads


def _conv_transpose_3d(ctx: NodeCtx, x: Value, w: Value, b: Value | None) -> Value:
    """A 3-D transposed convolution (frontends/base/conv_transpose.py)."""
    nd = 3
    kernel = list(ctx.attr("kernel_shape", w.shape[2:]))
    strides = list(ctx.attr("strides", [1] * nd))
    dil = list(ctx.attr("dilations", [1] * nd))
    out_pad = list(ctx.attr("output_padding", [0] * nd))
    pads = _conv_transpose_pads(ctx, list(x.shape[2:]), kernel, strides, dil, out_pad)
    return conv_transpose_3d(ctx.e, x, w, b, strides=strides, dilations=dil, pads=pads,
                             output_padding=out_pad, groups=int(ctx.attr("group", 1)),
                             fail=ctx.fail, hint=ctx.node.output[0])


@onnx_op("ConvTranspose")
def conv_transpose(ctx: NodeCtx) -> list[Value]:
    # a transposed convolution is a stride-1 convolution of the input with s-1 zeros inserted
    # between its elements, padded by (k_eff - 1 - pad), with the kernel flipped and its two
    # channel axes swapped (per group)
    x, w, b, e = ctx.req(0), ctx.req(1), ctx.input(2), ctx.e
    nd = x.rank - 2
    if nd == 3 and all(isinstance(d, int) for d in x.shape[1:]) and w.type.is_static:
        return [_conv_transpose_3d(ctx, x, w, b)]
    if nd not in (1, 2) or not (isinstance(x.shape[1], int) and w.type.is_static):
        raise ctx.fail("ConvTranspose needs a 1-D or 2-D input with static channels (a 3-D "
                       "one static but for the batch) and static weights")
    if not all(isinstance(d, int) for d in x.shape[2:]) and (
            ctx.attr("output_shape", None) is not None or
            ctx.attr("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER")):
        raise ctx.fail("ConvTranspose with output_shape or auto_pad=SAME needs static sizes "
                       "(its pads are computed from them at import)")
    kernel = list(ctx.attr("kernel_shape", w.shape[2:]))
    strides = list(ctx.attr("strides", [1] * nd))
    dil = list(ctx.attr("dilations", [1] * nd))
    out_pad = list(ctx.attr("output_padding", [0] * nd))
    g = int(ctx.attr("group", 1))
    sizes = list(x.shape[2:])
    pads = _conv_transpose_pads(ctx, sizes, kernel, strides, dil, out_pad)
    x2, w2 = _to_2d(ctx, x, nd), _to_2d(ctx, w, nd)
    if nd == 1:
        kernel, strides, dil, out_pad, sizes = ([1] + kernel, [1] + strides, [1] + dil,
                                                [0] + out_pad, [1] + sizes)
        pads = [0, pads[0], 0, pads[1]]
    y = conv_transpose_2d(e, x2, w2, b, strides=strides, dilations=dil, pads=pads,
                          output_padding=out_pad, groups=g, hint=ctx.node.output[0])
    return [e.emit("squeeze", [y], axes=[2]) if nd == 1 else y]


@onnx_op("LRN", since=13)
def lrn(ctx: NodeCtx) -> list[Value]:
    # the sum of squares over `size` neighbouring channels is an average pool over the channel
    # axis (as a height) with padding counted, times size
    x, e = ctx.req(0), ctx.e
    size = int(ctx.attr("size"))
    alpha, beta = float(ctx.attr("alpha", 1e-4)), float(ctx.attr("beta", 0.75))
    bias = float(ctx.attr("bias", 1.0))
    if x.rank < 3 or not all(isinstance(d, int) for d in x.shape[1:]):
        raise ctx.fail("LRN needs an (N, C, ...) input, static but for the batch")
    n, c = x.shape[0], x.shape[1]
    rest = int(np.prod(x.shape[2:]))
    sq = reshape_named(e, e.emit("mul", [x, x]), [n, 1, c, rest])
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    pooled = e.emit("avgpool2d", [sq], kernel=[size, 1], strides=[1, 1], pads=[lo, 0, hi, 0],
                    count_include_pad=True)
    sums = e.emit("mul", [pooled, scalar(float(size), x)])
    sums = reshape_named(e, sums, list(x.shape))
    den = e.emit("add", [e.emit("mul", [sums, scalar(alpha / size, x)]), scalar(bias, x)])
    return [e.emit("div", [x, e.emit("pow", [den, scalar(beta, x)])], ctx.node.output[0])]


@onnx_op("Det")
def det(ctx: NodeCtx) -> list[Value]:
    return [ctx.e.emit("det", [ctx.req(0)], ctx.node.output[0])]
