"""The 3-D convolution both importers emit (ONNX Conv on NCDHW, torch's `aten.convolution`
with three spatial dims, and the stride-1 convolution of a 3-D transposed one): the ISA's
conv3d (isa/ops/conv3d.py), which the native library multiplies straight from its input."""
from __future__ import annotations

from collections.abc import Callable

from .values import Emitter, Value


def conv3d(e: Emitter, x: Value, w: Value, b: Value | None, *, strides: list[int],
           pads: list[int], dilations: list[int], groups: int, hint: str,
           fail: Callable[[str], Exception]) -> Value:
    """x: [N, C, D, H, W], w: [M, C/groups, kD, kH, kW], pads [d, h, w begins, d, h, w ends]
    -> [N, M, Do, Ho, Wo]."""
    if len(strides) != 3 or len(dilations) != 3 or len(pads) != 6:
        raise fail(f"a 3-D convolution takes 3 strides and dilations and 6 pads, got "
                   f"{list(strides)}, {list(dilations)} and {list(pads)}")
    args = [x, w] + ([b] if b is not None else [])
    return e.emit("conv3d", args, hint, strides=list(strides), pads=list(pads),
                  dilations=list(dilations), groups=groups)
