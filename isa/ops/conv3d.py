"""conv3d: the 3-D convolution (NCDHW input, OIDHW weights), one op rather than 2-D ops.

The importers once wrote a 3-D convolution as 2-D ops (the kernel's depth taps laid out as
input channels: slices, a concat and two transposes around one conv2d). Those copies were half
of a 3-D UNet's time in the native library and onnxruntime ran it 1.2-1.7x faster; one op lets
the native library multiply straight from the input (dlvm_rt_conv3d).

The reference is that same layout in NumPy: the depth taps of the padded input as channels
(c major, tap minor: the weights' own [C, kD] order) with the output depths folded into the
batch, one conv2d reference call, and the output depths moved back.
"""
from __future__ import annotations

import numpy as np

from ..errors import OpTypeError, Trap
from ..types import TensorType
from . import adjoints_nn as adj
from .nn import check_conv_channels, conv2d_ref, window_out
from .opdef import AttrKind, AttrSpec, Family, OpDef
from .shapes import is_float, require_dtype, same_dtype

SPATIAL = 3


def conv3d_rule(types: list[TensorType], attrs) -> list[TensorType]:
    x, w = types[0], types[1]
    dt = same_dtype("conv3d", types)
    require_dtype("conv3d", x, is_float, "float")
    if x.rank != 5 or w.rank != 5:
        raise OpTypeError(f"conv3d needs an NCDHW input and OIDHW weights (rank 5), got {x} and {w}")
    for name, want, lowest in (("strides", 3, 1), ("pads", 6, 0), ("dilations", 3, 1)):
        v = attrs[name]
        if len(v) != want:
            raise OpTypeError(f"conv3d {name} must have {want} entries, got {list(v)}")
        if any(e < lowest for e in v):
            raise OpTypeError(f"conv3d {name} must be >= {lowest}, got {list(v)}")
    o = check_conv_channels("conv3d", types, attrs["groups"])
    s, p, d = attrs["strides"], attrs["pads"], attrs["dilations"]
    out = [window_out(x.shape[2 + i], w.shape[2 + i], s[i], p[i] + p[i + SPATIAL], d[i], "conv3d",
                      "kernel") for i in range(SPATIAL)]
    return [TensorType(dt, (x.shape[0], o, *out))]


def conv3d_ref(attrs, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    g = attrs["groups"]
    n, c = x.shape[:2]
    o, cg, kd, kh, kw = w.shape
    if c != cg * g:
        raise Trap(f"conv3d input has {c} channels, but the weights take {cg} per group x {g} "
                   f"groups = {cg * g}")
    if bias is not None and bias.shape != (o,):
        raise Trap(f"conv3d bias has shape {list(bias.shape)}, not [{o}]")
    s, p, d = attrs["strides"], attrs["pads"], attrs["dilations"]
    padded = [x.shape[2 + i] + p[i] + p[i + SPATIAL] for i in range(SPATIAL)]
    spans = [d[i] * (k - 1) + 1 for i, k in enumerate((kd, kh, kw))]
    if any(size < span for size, span in zip(padded, spans)):
        raise Trap(f"conv3d: the window ({'x'.join(map(str, spans))}) is larger than the padded "
                   f"input ({'x'.join(map(str, padded))})")
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p[i], p[i + SPATIAL]) for i in range(SPATIAL)])
    out_d = (padded[0] - spans[0]) // s[0] + 1
    taps = np.stack([xp[:, :, i * d[0]:i * d[0] + (out_d - 1) * s[0] + 1:s[0]] for i in range(kd)],
                    axis=2)                                             # [N, C, kD, Do, Hp, Wp]
    planes = taps.transpose(0, 3, 1, 2, 4, 5).reshape(n * out_d, c * kd, padded[1], padded[2])
    flat = {"strides": list(s[1:]), "pads": [0, 0, 0, 0], "dilations": list(d[1:]), "groups": g}
    y = conv2d_ref(flat, planes, w.reshape(o, cg * kd, kh, kw))       # [N*Do, O, Ho, Wo]
    y = np.ascontiguousarray(y.reshape(n, out_d, o, *y.shape[2:]).transpose(0, 2, 1, 3, 4))
    if bias is not None:
        y += bias.reshape(1, o, 1, 1, 1)
    return y.astype(x.dtype, copy=False)


OPS = [
    OpDef("conv3d", 145, Family.NN, (2, 3), conv3d_rule, conv3d_ref,
          "r[n, o, t, i, j] := bias[o] + sum over c, u, p, q of x[n, g*C/groups + c, "
          "t*s0 + u*d0 - front, i*s1 + p*d1 - top, j*s2 + q*d2 - left] * w[o, c, u, p, q], "
          "where g = o's group; NCDHW input, OIDHW weights with C/groups input channels per "
          "group, zero padding, floor output size",
          attrs=(AttrSpec("strides", AttrKind.INTS, [1, 1, 1], "step [depth, height, width]"),
                 AttrSpec("pads", AttrKind.INTS, [0, 0, 0, 0, 0, 0],
                          "[front, top, left, back, bottom, right] (ONNX order: begins, then ends)"),
                 AttrSpec("dilations", AttrKind.INTS, [1, 1, 1], "kernel spacing [depth, height, width]"),
                 AttrSpec("groups", AttrKind.INT, 1, "channel groups; C and O divide by it")),
          dtypes="float, all operands of one dtype", extra={"operands": ("x", "w", "bias")},
          vjp=adj.conv3d_vjp),
]
