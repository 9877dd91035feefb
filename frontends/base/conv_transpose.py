"""The transposed convolution both importers emit (ONNX ConvTranspose, torch's
`aten.convolution` with transposed=True), in dlvm ops.

A transposed convolution is a stride-1 convolution of the input with s-1 zeros inserted
between its elements, padded by (k_eff - 1 - pad) (plus output_padding at the end), with the
kernel flipped and its two channel axes swapped per group.
"""
from __future__ import annotations

from isa.types import TensorType

from .values import Emitter, Value


def conv_transpose_2d(e: Emitter, x: Value, w: Value, b: Value | None, *, strides: list[int],
                      dilations: list[int], pads: list[int], output_padding: list[int],
                      groups: int, hint: str = "t") -> Value:
    """x: [N, C, H, W] (static but for the batch), w: [C, M/groups, kH, kW] (static), pads
    [top, left, bottom, right] -> [N, M, Ho, Wo]."""
    n, c, h, wd = x.shape
    s0, s1 = strides
    g = groups

    def batch_reshape(v: Value, dims: list[int]) -> Value:
        # a named batch is the one -1 of the target, and stays named in the result type
        if isinstance(n, int):
            return e.emit("reshape", [v], shape=[n, *dims])
        return e.emit("reshape", [v], shape=[-1, *dims],
                      result_type=TensorType(v.dtype, (n, *dims)))
    if s0 > 1 or s1 > 1:
        t = batch_reshape(x, [c, h, 1, wd, 1])
        t = e.emit("pad", [t], pads=[0] * 6 + [0, 0, 0, s0 - 1, 0, s1 - 1])
        t = batch_reshape(t, [c, h * s0, wd * s1])
        x = e.emit("slice", [t], starts=[0, 0], ends=[(h - 1) * s0 + 1, (wd - 1) * s1 + 1],
                   axes=[2, 3])
    c_out_g, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    wt = e.emit("reshape", [w], shape=[g, c // g, c_out_g, kh, kw])
    wt = e.emit("transpose", [wt], perm=[0, 2, 1, 3, 4])
    wt = e.emit("reshape", [wt], shape=[g * c_out_g, c // g, kh, kw])
    wt = e.emit("slice", [wt], starts=[-1, -1], ends=[-(kh + 1), -(kw + 1)], axes=[2, 3],
                steps=[-1, -1])
    full = []
    for i, k in enumerate((kh, kw)):
        k_eff = (k - 1) * dilations[i] + 1
        full.append((k_eff - 1 - pads[i], k_eff - 1 - pads[i + 2] + output_padding[i]))
    x = e.emit("pad", [x], pads=[0, 0, full[0][0], full[1][0], 0, 0, full[0][1], full[1][1]])
    args = [x, wt] + ([b] if b is not None else [])
    return e.emit("conv2d", args, hint, strides=[1, 1], pads=[0, 0, 0, 0],
                  dilations=list(dilations), groups=g)
