"""ONNX Resize as separable gathers: for each resized axis, output = sum over taps k of
gather(x, index_k, axis) * weight_k, where the indices and weights (1 tap for nearest, 2 for
linear, 4 for cubic) are computed at import from the static sizes, the coordinate transform and
the interpolation mode (the tap math of `isa/ops/resize.py`). Scales or sizes known only at run
time map to that file's `resize` op, which computes the same taps when the program runs.
"""
from __future__ import annotations

import numpy as np

from isa.dtypes import BY_NAME
from isa.ops.resize import TRANSFORMS, crop_coords, original_coords, taps_at
from isa.types import TensorType

from ..registry import NodeCtx, onnx_op
from ..values import Value, known
from .common import cast, norm_axis
from .dynshape import vector

I64, F32 = BY_NAME["i64"], BY_NAME["f32"]


def taps(ctx: NodeCtx, mode: str, out: int, n: int, scale: float,
         crop: tuple[float, float] | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """(indices, weights) per tap along one axis; with `crop` (tf_crop_and_resize), positions
    outside the input get zero weights (the caller adds the extrapolation value there)."""
    transform = ctx.attr("coordinate_transformation_mode", "half_pixel")
    if crop is not None:
        xo = crop_coords(out, n, *crop)
        outside = (xo < 0) | (xo > n - 1)
        return [(i, np.where(outside, 0.0, w))
                for i, w in _taps_at(ctx, mode, np.clip(xo, 0, n - 1), n)]
    try:
        xo = original_coords(transform, out, n, scale)
    except ValueError:
        raise ctx.fail(f"coordinate_transformation_mode={transform} is not supported") from None
    return _taps_at(ctx, mode, xo, n, scale)


def _antialias(ctx: NodeCtx) -> bool:
    return ctx.version >= 18 and bool(ctx.attr("antialias", 0))


def _taps_at(ctx: NodeCtx, mode: str, xo: np.ndarray, n: int, scale: float = 1.0
             ) -> list[tuple[np.ndarray, np.ndarray]]:
    return taps_at(mode, xo, n, ctx.attr("nearest_mode", "round_prefer_floor"),
                   float(ctx.attr("cubic_coeff_a", -0.75)), bool(ctx.attr("exclude_outside", 0)),
                   _antialias(ctx), scale)


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


def _runtime_resize(ctx: NodeCtx, x: Value, axes: list[int], mode: str, crop: bool
                    ) -> Value | None:
    """The `resize` op when the scales or sizes are known only at run time, else None."""
    sc, sz = ctx.input(2), ctx.input(3)
    dyn_sizes = sz is not None and sz.const is None
    if dyn_sizes and sz.sym is not None:
        entries = [ctx.e.derived.dim(d) for d in sz.sym]
        dyn_sizes = not all(isinstance(d, int) or d == x.shape[a] for d, a in zip(entries, axes))
    dyn_scales = sc is not None and sc.const is None and sz is None
    if not (dyn_sizes or dyn_scales):
        return None
    transform = ctx.attr("coordinate_transformation_mode", "half_pixel")
    if crop or transform not in TRANSFORMS:
        return None      # tf_crop_and_resize needs its roi and sizes at import
    if dyn_sizes:
        by, target = "sizes", cast(ctx.e, vector(ctx, 3, "sizes"), I64)
    else:
        target = ctx.req(2)
        if target.rank != 1 or not target.dtype.is_float:
            raise ctx.fail(f"scales (input 2) must be a float vector, got {target.type}")
        by, target = "scales", cast(ctx.e, target, F32)
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch") if ctx.version >= 18 else "stretch"
    return ctx.e.emit("resize", [x, target], ctx.node.output[0], axes=axes, by=by, mode=mode,
                      transform=transform,
                      nearest_mode=ctx.attr("nearest_mode", "round_prefer_floor"),
                      cubic_coeff_a=float(ctx.attr("cubic_coeff_a", -0.75)),
                      exclude_outside=bool(ctx.attr("exclude_outside", 0)), policy=policy,
                      antialias=_antialias(ctx))


def _one_pass(ctx: NodeCtx, x: Value, axes: list[int], mode: str, in_sizes: list, outs: list,
              scl: list[float], sizes: list | None, roi) -> Value | None:
    """The `resize` op with a constant target where the native library resamples in one pass
    (f32, the input's last one or two axes resized, static sizes there: dlvm_rt_resample, with
    tables from the same tap math): the separable gathers and products below wrote and read
    every intermediate (an HRNet's bilinear upsampling was 40% of its time at batch 1). None
    where the gathers stay."""
    if roi is not None or x.dtype != F32 or not isinstance(x.shape[-1], int):
        return None
    active = [a for a, n, out, s in zip(axes, in_sizes, outs, scl) if not (out == n and s == 1.0)]
    if not active or not set(active) <= {x.rank - 2, x.rank - 1} or \
            not all(isinstance(x.shape[a], int) for a in active):
        return None
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch") if ctx.version >= 18 else "stretch"
    if sizes is not None and len(sizes):
        given = ctx.input(3).const
        if given is None and (policy != "stretch" or not all(isinstance(d, int) for d in sizes)):
            return None     # (`sizes` was rewritten by the policy: the op would apply it twice)
        by, target = "sizes", known(np.array(given if given is not None else sizes,
                                             np.int64).reshape(-1))
    else:
        by, target = "scales", known(np.asarray(ctx.const_input(2, "scales"), np.float32))
    shape = list(x.shape)
    for a, out in zip(axes, outs):
        shape[a] = out
    return ctx.e.emit("resize", [x, target], ctx.node.output[0], axes=axes, by=by, mode=mode,
                      transform=ctx.attr("coordinate_transformation_mode", "half_pixel"),
                      nearest_mode=ctx.attr("nearest_mode", "round_prefer_floor"),
                      cubic_coeff_a=float(ctx.attr("cubic_coeff_a", -0.75)),
                      exclude_outside=bool(ctx.attr("exclude_outside", 0)), policy=policy,
                      antialias=_antialias(ctx), result_type=TensorType(x.dtype, tuple(shape)))


@onnx_op("Resize", since=13)
def resize(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    mode = ctx.attr("mode", "nearest")
    if mode not in ("nearest", "linear", "cubic"):
        raise ctx.fail(f"mode={mode} is not supported")
    if _antialias(ctx) and mode == "nearest":
        raise ctx.fail("antialias applies to linear and cubic modes only")
    crop = ctx.attr("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize"
    extrapolation = float(ctx.attr("extrapolation_value", 0.0))
    # exporters write every mode's attributes; those of other modes have no effect
    for name in ("cubic_coeff_a", "nearest_mode", "exclude_outside"):
        ctx.attr(name, None)
    if mode != "nearest" and not x.dtype.is_float:
        raise ctx.fail(f"{mode} interpolation of {x.dtype} is not supported")
    axes = [norm_axis(a, x.rank) for a in ctx.attr("axes", list(range(x.rank)))] \
        if ctx.version >= 18 else list(range(x.rank))
    runtime = _runtime_resize(ctx, x, axes, mode, crop)
    if runtime is not None:
        return [runtime]
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
    one_pass = _one_pass(ctx, x, axes, mode, in_sizes, outs, scl, sizes, roi)
    if one_pass is not None:
        return [one_pass]
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
            xo = crop_coords(out, n, *box)
            outside = known(((xo < 0) | (xo > n - 1)).reshape(shape))
            acc = e.emit("select", [outside, known(np.asarray(extrapolation, x.dtype.np)), acc])
        y = acc
    return [y]
