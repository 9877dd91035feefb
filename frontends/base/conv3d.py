"""The 3-D convolution both importers emit (ONNX Conv on NCDHW, torch's `aten.convolution`
with three spatial dims), in dlvm's 2-D ops.

The kernel's depth taps become input channels: for output depth o, tap i reads the input's
depth o*stride + i*dilation (of the depth-padded input), so the kd strided depth slices, laid
side by side as channels (c major, tap minor: the weights' own [C, kd] order), with the output
depths folded into the batch, are one 2-D convolution of weights [M, C*kd, kH, kW]. One product
with kd times the reduction length, where a sum of kd convolutions wrote and re-read the whole
output kd times (a small video net ran 7x slower than onnxruntime).
"""
from __future__ import annotations

from collections.abc import Callable

from isa.types import Dim

from .values import Emitter, Value, reshape_named


def conv3d(e: Emitter, x: Value, w: Value, b: Value | None, *, strides: list[int],
           pads: list[int], dilations: list[int], groups: int, hint: str,
           fail: Callable[[str], Exception],
           fold: Callable[[Dim, int], Dim] | None = None) -> Value:
    """x: [N, C, D, H, W] (static but for the batch), w: [M, C/groups, kD, kH, kW] (static),
    pads [d, h, w begins, d, h, w ends] -> [N, M, Do, Ho, Wo]. `fold(n, do)` names the folded
    batch dim N*Do (default: the product when N is a size, else unknown)."""
    n, c, depth = x.shape[0], x.shape[1], x.shape[2]
    if not (isinstance(c, int) and isinstance(depth, int) and w.type.is_static):
        raise fail("3-D Conv needs static channels, depth and weights")
    m, cg, kd = w.shape[0], w.shape[1], w.shape[2]
    sd, dd = strides[0], dilations[0]
    p0, p1 = pads[0], pads[3]
    if p0 or p1:
        x = e.emit("pad", [x], pads=[0, 0, p0, 0, 0, 0, 0, p1, 0, 0])
    span = depth + p0 + p1 - (kd - 1) * dd - 1
    if span < 0:
        raise fail(f"the kernel's depth {kd} does not fit the padded input")
    out_d = span // sd + 1
    h, wd = x.shape[3], x.shape[4]
    taps = []
    for i in range(kd):
        start = i * dd
        xi = e.emit("slice", [x], starts=[start], ends=[start + (out_d - 1) * sd + 1], axes=[2],
                    steps=[sd])
        taps.append(e.emit("expand_dims", [xi], axes=[2]))               # [N, C, 1, Do, H, W]
    t = taps[0] if kd == 1 else e.emit("concat", taps, axis=2)          # [N, C, kd, Do, H, W]
    t = e.emit("transpose", [t], perm=[0, 3, 1, 2, 4, 5])                # [N, Do, C, kd, H, W]
    folded = fold(n, out_d) if fold is not None else (n * out_d if isinstance(n, int) else None)
    t = reshape_named(e, t, [folded, c * kd, h, wd])
    wk = e.emit("reshape", [w], shape=[m, cg * kd, w.shape[3], w.shape[4]])
    y = e.emit("conv2d", [t, wk], strides=strides[1:], pads=[pads[1], pads[2], pads[4], pads[5]],
               dilations=dilations[1:], groups=groups)                  # [N*Do, M, Ho, Wo]
    ho, wo = y.shape[2], y.shape[3]
    y = reshape_named(e, y, [n, out_d, m, ho, wo])
    y = e.emit("transpose", [y], perm=[0, 2, 1, 3, 4])
    if b is not None:
        return e.emit("add", [y, e.emit("reshape", [b], shape=[-1, 1, 1, 1])], hint)
    return e.emit("mov", [y], hint)

