"""ONNX DeformConv (2-D): a convolution whose taps read the input at learned fractional offsets.

Each tap (u, v) of output position (i, j) samples the input bilinearly (zero outside the image)
at (i * stride - pad + u * dilation + dy, j * stride - pad + v * dilation + dx), with (dy, dx)
from the `offset` input (one pair per offset group, tap and output position), times the `mask`
input where given; the weighted sum over channels and taps is the convolution.

Lowered with dlvm rows: one `grid_sample` per offset group reads every tap at once (its grid
holds the taps stacked along the rows: [N, taps * Ho, Wo, 2]), which gives the deformed patches
[N, C, taps, Ho, Wo]; a batched `matmul` with the weights (per convolution group) finishes it.
"""
from __future__ import annotations

import numpy as np

from ..registry import NodeCtx, onnx_op
from ..values import Value, known
from .common import cast


def _slice(e, v: Value, axis: int, start: int, stop: int) -> Value:
    return e.emit("slice", [v], starts=[start], ends=[stop], axes=[axis])


@onnx_op("DeformConv", since=19)
def deform_conv(ctx: NodeCtx) -> list[Value]:
    e = ctx.e
    x, w, offset = ctx.req(0), ctx.req(1), ctx.req(2)
    bias, mask = ctx.input(3), ctx.input(4)
    if x.rank != 4:
        raise ctx.fail("DeformConv is imported for 2-D images (NCHW) only")
    c, ih, iw = x.shape[1], x.shape[2], x.shape[3]
    oc, cg = w.shape[0], w.shape[1]
    kh, kw = (list(ctx.attr("kernel_shape", w.shape[2:])) + [None, None])[:2]
    if not all(isinstance(d, int) for d in (c, ih, iw, oc, cg, kh, kw)):
        raise ctx.fail("DeformConv needs static channels, image and kernel sizes")
    sh, sw = ctx.attr("strides", [1, 1])
    dh, dw = ctx.attr("dilations", [1, 1])
    pt, pl, _, _ = ctx.attr("pads", [0, 0, 0, 0])
    group = int(ctx.attr("group", 1))
    og = int(ctx.attr("offset_group", 1))
    taps = kh * kw
    if c != cg * group or oc % group or c % og:
        raise ctx.fail(f"DeformConv: {c} input channels do not split into group {group} "
                       f"(weights take {cg} each) and offset_group {og}")
    oh, ow = offset.shape[2], offset.shape[3]
    if not (isinstance(oh, int) and isinstance(ow, int)) or offset.shape[1] != og * taps * 2:
        raise ctx.fail(f"DeformConv offset {offset.type} does not hold {og} x {taps} x 2 "
                       f"offsets per output position")
    ft = x.dtype
    # tap positions before the offsets, [taps, Ho, Wo] per axis
    u, v = np.meshgrid(np.arange(kh), np.arange(kw), indexing="ij")
    i, j = np.arange(oh), np.arange(ow)
    base_y = (u.reshape(-1, 1, 1) * dh + i.reshape(1, -1, 1) * sh - pt).astype(ft.np)
    base_x = (v.reshape(-1, 1, 1) * dw + j.reshape(1, 1, -1) * sw - pl).astype(ft.np)
    base_y = np.broadcast_to(base_y, (taps, oh, ow)).copy()
    base_x = np.broadcast_to(base_x, (taps, oh, ow)).copy()
    # [N, og, taps, 2, Ho, Wo]
    off = e.emit("reshape", [cast(e, offset, ft)], shape=[-1, og, taps, 2, oh, ow])
    if mask is not None:
        mask = e.emit("reshape", [cast(e, mask, ft)], shape=[-1, og, taps, oh, ow])
    per_group = c // og
    columns = []
    for g in range(og):
        off_g = _slice(e, off, 1, g, g + 1)
        dy = e.emit("reshape", [_slice(e, off_g, 3, 0, 1)], shape=[-1, taps, oh, ow])
        dx = e.emit("reshape", [_slice(e, off_g, 3, 1, 2)], shape=[-1, taps, oh, ow])
        # pixel coordinates to grid_sample's [-1, 1] (align_corners off: (2p + 1) / size - 1,
        # defined for a size of 1 too)
        gy = _normalize(e, e.emit("add", [dy, known(base_y)]), ih, ft)
        gx = _normalize(e, e.emit("add", [dx, known(base_x)]), iw, ft)
        grid = e.emit("concat", [e.emit("expand_dims", [gx], axes=[-1]),
                                 e.emit("expand_dims", [gy], axes=[-1])], axis=-1)
        grid = e.emit("reshape", [grid], shape=[-1, taps * oh, ow, 2])
        xg = x if og == 1 else _slice(e, x, 1, g * per_group, (g + 1) * per_group)
        sampled = e.emit("grid_sample", [xg, grid], mode="linear", padding_mode="zeros",
                         align_corners=False)
        sampled = e.emit("reshape", [sampled], shape=[-1, per_group, taps, oh, ow])
        if mask is not None:
            sampled = e.emit("mul", [sampled, _slice(e, mask, 1, g, g + 1)])
        columns.append(sampled)
    cols = columns[0] if og == 1 else e.emit("concat", columns, axis=1)
    # [N, group, cg * taps, Ho * Wo] against the weights [group, oc / group, cg * taps]
    cols = e.emit("reshape", [cols], shape=[-1, group, cg * taps, oh * ow])
    wt = e.emit("reshape", [cast(e, w, ft)], shape=[group, oc // group, cg * taps])
    y = e.emit("matmul", [wt, cols])
    y = e.emit("reshape", [y], shape=[-1, oc, oh, ow])
    if bias is not None:
        y = e.emit("add", [y, e.emit("reshape", [cast(e, bias, ft)], shape=[oc, 1, 1])])
    return [e.emit("mov", [y], ctx.node.output[0])]


def _normalize(e, p: Value, size: int, ft) -> Value:
    two = known(np.asarray(2.0 / size, ft.np))
    shift = known(np.asarray(1.0 / size - 1.0, ft.np))
    return e.emit("add", [e.emit("mul", [p, two]), shift])
