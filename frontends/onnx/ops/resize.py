"""ONNX Resize as separable gathers: for each resized axis, output = sum over taps k of
gather(x, index_k, axis) * weight_k, where the indices and weights (1 tap for nearest, 2 for
linear, 4 for cubic) are computed at import from the static sizes, the coordinate transform and
the interpolation mode. Out-of-range taps are clamped to the edge, as the ONNX reference pads.
"""
from __future__ import annotations

import numpy as np

from ..registry import NodeCtx, onnx_op
from ..values import Value, known
from .common import norm_axis


def _original_coords(mode: str, out: int, n: int, scale: float) -> np.ndarray:
    x = np.arange(out, dtype=np.float64)
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        adjust = out / (scale * n)
        center = n / 2
        return center * (1 - adjust) + (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if out > 1 else np.zeros(out)
    if mode == "align_corners":
        # the ONNX reference divides by the unrounded resized length, scale * n
        length = scale * n
        return x * (n - 1) / (length - 1) if length > 1 else np.zeros(out)
    if mode == "asymmetric":
        return x / scale
    raise ValueError(mode)


def _nearest(xo: np.ndarray, how: str) -> np.ndarray:
    if how == "round_prefer_floor":
        return np.ceil(xo - 0.5)
    if how == "round_prefer_ceil":
        return np.floor(xo + 0.5)
    if how == "floor":
        return np.floor(xo)
    if how == "ceil":
        return np.ceil(xo)
    raise ValueError(how)


def _cubic_weights(t: np.ndarray, a: float) -> list[np.ndarray]:
    def w(d):     # the cubic convolution kernel at distance d
        d = np.abs(d)
        return np.where(d <= 1, ((a + 2) * d - (a + 3)) * d * d + 1,
                        np.where(d < 2, ((a * d - 5 * a) * d + 8 * a) * d - 4 * a, 0.0))
    return [w(t + 1), w(t), w(1 - t), w(2 - t)]


def _crop_coords(out: int, n: int, start: float, end: float) -> np.ndarray:
    """tf_crop_and_resize: the output spans [start, end] of the input, in units of n - 1."""
    if out == 1:
        return np.full(1, 0.5 * (start + end) * (n - 1))
    return start * (n - 1) + np.arange(out, dtype=np.float64) * (end - start) * (n - 1) / (out - 1)


def taps(ctx: NodeCtx, mode: str, out: int, n: int, scale: float,
         crop: tuple[float, float] | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """(indices, weights) per tap along one axis; with `crop` (tf_crop_and_resize), positions
    outside the input get zero weights (the caller adds the extrapolation value there)."""
    transform = ctx.attr("coordinate_transformation_mode", "half_pixel")
    if crop is not None:
        xo = _crop_coords(out, n, *crop)
        outside = (xo < 0) | (xo > n - 1)
        return [(i, np.where(outside, 0.0, w))
                for i, w in taps_at(ctx, mode, np.clip(xo, 0, n - 1), n)]
    try:
        xo = _original_coords(transform, out, n, scale)
    except ValueError:
        raise ctx.fail(f"coordinate_transformation_mode={transform} is not supported") from None
    return taps_at(ctx, mode, xo, n)


def taps_at(ctx: NodeCtx, mode: str, xo: np.ndarray, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    out = xo.size
    if mode == "nearest":
        how = ctx.attr("nearest_mode", "round_prefer_floor")
        idx = np.clip(_nearest(xo, how), 0, n - 1).astype(np.int64)
        return [(idx, np.ones(out))]
    base = np.floor(xo)
    t = xo - base
    if mode == "linear":
        offsets, weights = [0, 1], [1 - t, t]
    else:
        offsets, weights = [-1, 0, 1, 2], _cubic_weights(t, float(ctx.attr("cubic_coeff_a", -0.75)))
    raw = [base + o for o in offsets]
    if ctx.attr("exclude_outside", 0):
        weights = [np.where((r < 0) | (r > n - 1), 0.0, w) for r, w in zip(raw, weights)]
        total = sum(weights)
        weights = [w / total for w in weights]
    return [(np.clip(r, 0, n - 1).astype(np.int64), w) for r, w in zip(raw, weights)]


def _sizes(ctx: NodeCtx, x: Value, axes: list[int]) -> list | None:
    """The `sizes` input as one entry per resized axis: ints, or the input's own named dim
    where a shape computation keeps it (Shape(x)[:2] ++ [h, w] with a dynamic batch)."""
    v = ctx.input(3)
    if v is None:
        return None
    if v.const is not None:
        return [int(s) for s in v.const.reshape(-1)]
    if v.sym is not None:
        entries = [ctx.e.derived.dim(d) for d in v.sym]
        if all(isinstance(d, int) or d == x.shape[a] for d, a in zip(entries, axes)):
            return entries
    raise ctx.not_known(3, "sizes")


@onnx_op("Resize", since=13)
def resize(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    mode = ctx.attr("mode", "nearest")
    if mode not in ("nearest", "linear", "cubic"):
        raise ctx.fail(f"mode={mode} is not supported")
    if ctx.version >= 18 and ctx.attr("antialias", 0):
        raise ctx.fail("antialias is not supported")
    crop = ctx.attr("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize"
    extrapolation = float(ctx.attr("extrapolation_value", 0.0))
    # exporters write every mode's attributes; those of other modes have no effect
    for name in ("cubic_coeff_a", "nearest_mode", "exclude_outside"):
        ctx.attr(name, None)
    if mode != "nearest" and not x.dtype.is_float:
        raise ctx.fail(f"{mode} interpolation of {x.dtype} is not supported")
    axes = [norm_axis(a, x.rank) for a in ctx.attr("axes", list(range(x.rank)))] \
        if ctx.version >= 18 else list(range(x.rank))
    scales = ctx.const_input(2, "scales")
    in_sizes = [x.shape[a] for a in axes]
    sizes = _sizes(ctx, x, axes)
    if ctx.version >= 18:
        ctx.attr("keep_aspect_ratio_policy", "stretch")     # read: it applies to sizes only
    if scales is not None and scales.size and (sizes is None or not len(sizes)):
        # an axis scaled by 1 (the batch, the channels) may have a size unknown at import
        unknown = [a for a, n, sc in zip(axes, in_sizes, scales) if not isinstance(n, int)
                   and float(sc) != 1.0]
        if unknown:
            raise ctx.fail(f"Resize scales axes {unknown}, whose sizes are unknown at import")
    elif sizes is not None and not all(isinstance(n, int) for n, o in zip(in_sizes, sizes)
                                       if n != o):
        raise ctx.fail("Resize to given sizes needs static sizes on the resized axes")
    if sizes is not None and len(sizes):
        policy = ctx.attr("keep_aspect_ratio_policy", "stretch") if ctx.version >= 18 else "stretch"
        if policy == "stretch":
            # an axis kept at its (possibly named) size is scaled by 1
            scl = [1.0 if s == n else s / n for s, n in zip(sizes, in_sizes)]
        else:
            if not all(isinstance(n, int) for n in in_sizes):
                raise ctx.fail(f"keep_aspect_ratio_policy={policy} needs static input sizes")
            pick = min if policy == "not_larger" else max
            r = pick(s / n for s, n in zip(sizes, in_sizes))
            scl = [r] * len(axes)
            sizes = [int(r * n + 0.5) for n in in_sizes]
        outs = sizes
    elif scales is not None and scales.size:
        scl = [float(s) for s in scales]
        outs = [n if s == 1.0 else int(np.floor(n * s)) for n, s in zip(in_sizes, scl)]
    else:
        raise ctx.fail("Resize needs scales or sizes")
    roi = None
    if crop:
        roi = ctx.const_input(1, "roi")
        if roi is None or roi.size != 2 * len(axes):
            raise ctx.fail("tf_crop_and_resize needs a roi with a start and end per axis")
        roi = [float(v) for v in np.asarray(roi).reshape(-1)]
    y = x
    for k, (a, n, out, s) in enumerate(zip(axes, in_sizes, outs, scl)):
        box = (roi[k], roi[k + len(axes)]) if roi is not None else None
        if out == n and s == 1.0 and box is None:
            continue
        shape = [1] * x.rank
        shape[a] = out
        acc = None
        for idx, w in taps(ctx, mode, out, n, s, box):
            g = e.emit("gather", [y, known(idx)], axis=a)
            if mode != "nearest" or box is not None:
                g = e.emit("mul", [g, known(w.astype(x.dtype.np).reshape(shape))])
            acc = g if acc is None else e.emit("add", [acc, g])
        if box is not None:
            # positions outside the input take the fill value (a select, so an inf read by a
            # clamped tap cannot turn into NaN there)
            xo = _crop_coords(out, n, *box)
            outside = known(((xo < 0) | (xo > n - 1)).reshape(shape))
            acc = e.emit("select", [outside, known(np.asarray(extrapolation, x.dtype.np)), acc])
        y = acc
    return [y]
