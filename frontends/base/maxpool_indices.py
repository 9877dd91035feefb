"""The indices output of a 2-D max pool, which both importers emit (ONNX MaxPool's Indices,
torch's max_pool2d_with_indices), in dlvm ops.

The window's taps are strided slices of the input padded with the lowest value; argmax over
the stacked taps picks each window's first maximum, and the tap's (h, w) is arithmetic on the
output position (a window with NaNs names its first NaN; torch's kernel names its last). ONNX
counts the index over the whole tensor (n, c, h, w flattened; `storage_order` 1 takes w before
h); torch counts it within each (n, c) plane.
"""
from __future__ import annotations

import numpy as np

from isa.dtypes import DType

from .values import Emitter, Value, known


def _scalar(v: int) -> Value:
    return known(np.asarray(v, dtype=np.int64))


def maxpool2d_indices(e: Emitter, x: Value, kernel: list[int], strides: list[int],
                      dilations: list[int], pads: list[int], *, storage_order: int = 0,
                      per_plane: bool = False, hint: str = "indices") -> Value:
    """x: [N, C, H, W] (C, H, W static), pads [top, left, bottom, right] including any
    ceil-mode overhang -> i64 [N, C, Ho, Wo]: the flat index of each window's first maximum
    (within its plane when `per_plane`)."""
    if x.rank != 4 or not all(isinstance(d, int) for d in x.shape[1:]):
        raise e.error("a max pool's indices need a 2-D input, static but for the batch")
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilations
    low = -np.inf if x.dtype.is_float else float(x.dtype.int_range()[0])
    xp = e.emit("pad", [x], pads=[0, 0, pads[0], pads[1], 0, 0, pads[2], pads[3]], value=low)
    ho = (h + pads[0] + pads[2] - ((kh - 1) * dh + 1)) // sh + 1
    wo = (w + pads[1] + pads[3] - ((kw - 1) * dw + 1)) // sw + 1
    taps = []
    for i in range(kh):
        for j in range(kw):
            t = e.emit("slice", [xp], starts=[i * dh, j * dw],
                       ends=[i * dh + (ho - 1) * sh + 1, j * dw + (wo - 1) * sw + 1],
                       axes=[2, 3], steps=[sh, sw])
            taps.append(e.emit("expand_dims", [t], axes=[0]))
    stacked = taps[0] if len(taps) == 1 else e.emit("concat", taps, axis=0)
    tap = e.emit("argmax", [stacked], axis=0, keepdims=False)            # [n, c, ho, wo]
    if tap.dtype != DType.I64:
        tap = e.emit("cast", [tap], to=DType.I64)
    rows = known((np.arange(ho) * sh - pads[0]).reshape(ho, 1).astype(np.int64))
    cols = known((np.arange(wo) * sw - pads[1]).reshape(1, wo).astype(np.int64))
    hh = e.emit("add", [rows, e.emit("mul", [e.emit("div", [tap, _scalar(kw)]), _scalar(dh)])])
    ww = e.emit("add", [cols, e.emit("mul", [e.emit("mod", [tap, _scalar(kw)]), _scalar(dw)])])
    # a window whose maximum is the padding's value (every input value in it the lowest) names
    # its first tap inside the input, as torch does, not a padded one
    first_h = known(np.maximum(np.arange(ho) * sh - pads[0], 0).reshape(ho, 1).astype(np.int64))
    first_w = known(np.maximum(np.arange(wo) * sw - pads[1], 0).reshape(1, wo).astype(np.int64))
    low_max = e.emit("eq", [e.emit("reduce_max", [stacked], axes=[0], keepdims=False),
                            known(np.asarray(low, dtype=x.dtype.np))])
    hh = e.emit("select", [low_max, first_h, hh])
    ww = e.emit("select", [low_max, first_w, ww])
    if storage_order:
        within = e.emit("add", [e.emit("mul", [ww, _scalar(h)]), hh])
    else:
        within = e.emit("add", [e.emit("mul", [hh, _scalar(w)]), ww])
    if per_plane:
        return within
    plane_n = e.emit("iota", [], shape=[n, c, 1, 1], dtype=DType.I64, axis=0)
    plane_c = e.emit("iota", [], shape=[n, c, 1, 1], dtype=DType.I64, axis=1)
    plane = e.emit("add", [e.emit("mul", [plane_n, _scalar(c)]), plane_c])
    base = e.emit("mul", [plane, _scalar(h * w)])
    return e.emit("add", [base, within], hint)
