"""The transposed convolution both importers emit (ONNX ConvTranspose, torch's
`aten.convolution` with transposed=True), in dlvm ops.

A transposed convolution is a stride-1 convolution of the input with s-1 zeros inserted
between its elements, padded by (k_eff - 1 - pad) (plus output_padding at the end), with the
kernel flipped and its two channel axes swapped per group. When the stride is the kernel (and
nothing is padded) the windows do not overlap and it is one product and a reshuffle.
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
    c_out_g, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    if (g == 1 and (kh, kw) == (s0, s1) and (s0, s1) != (1, 1) and list(dilations) == [1, 1]
            and not any(pads) and not any(output_padding)):
        return _pixel_shuffle(e, x, w, b, batch_reshape, hint)
    if s0 > 1 or s1 > 1:
        t = batch_reshape(x, [c, h, 1, wd, 1])
        t = e.emit("pad", [t], pads=[0] * 6 + [0, 0, 0, s0 - 1, 0, s1 - 1])
        t = batch_reshape(t, [c, h * s0, wd * s1])
        x = e.emit("slice", [t], starts=[0, 0], ends=[(h - 1) * s0 + 1, (wd - 1) * s1 + 1],
                   axes=[2, 3])
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


def _pixel_shuffle(e: Emitter, x: Value, w: Value, b: Value | None, batch_reshape,
                   hint: str) -> Value:
    """A transposed convolution whose stride is its kernel (UNet's 2x2, stride-2 upsampling):
    the windows do not overlap, so each input pixel's C values times w [C, M*kH*kW] are the
    kH x kW output pixels it covers. One product and a reshuffle, where the general form
    convolves an input with zeros between its pixels (kH*kW times the work)."""
    n, c, h, wd = x.shape
    m, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    xt = e.emit("transpose", [x], perm=[0, 2, 3, 1])                       # [N, H, W, C]
    wm = e.emit("reshape", [w], shape=[c, m * kh * kw])
    prod = e.emit("matmul", [xt, wm])                                      # [N, H, W, M*kH*kW]
    t = batch_reshape(prod, [h, wd, m, kh, kw])
    t = e.emit("transpose", [t], perm=[0, 3, 1, 4, 2, 5])                 # [N, M, H, kH, W, kW]
    y = batch_reshape(t, [m, h * kh, wd * kw])
    if b is not None:
        y = e.emit("add", [y, e.emit("reshape", [b], shape=[m, 1, 1])], hint)
    return y
