"""Image ops built from sliding windows and bilinear samples: col2im (ONNX Col2Im) and
roi_align (ONNX RoiAlign).

col2im is the adjoint of the patch extraction a convolution does: each column holds one
window's values, which are summed back into the image. The reference loops over the block's
taps only, adding one strided view per tap, like the pooling rows.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..dtypes import BY_NAME
from ..errors import OpTypeError, Trap
from ..types import TensorType
from .opdef import NOT_DIFFERENTIABLE, AttrKind, AttrSpec, Family, OpDef

I64 = BY_NAME["i64"]


# ---- col2im ------------------------------------------------------------------------------------

def _col2im_geometry(attrs) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    img, blk = list(attrs["image_shape"]), list(attrs["block_shape"])
    nd = len(img)
    s = list(attrs["strides"]) or [1] * nd
    p = list(attrs["pads"]) or [0] * (2 * nd)
    d = list(attrs["dilations"]) or [1] * nd
    if len(blk) != nd or len(s) != nd or len(p) != 2 * nd or len(d) != nd or nd == 0:
        raise OpTypeError(f"col2im: image_shape, block_shape, strides, dilations (k entries) "
                          f"and pads (2k) disagree: {img}, {blk}, {s}, {d}, {p}")
    if min(img + blk + s + d) < 1 or min(p) < 0:
        raise OpTypeError("col2im: sizes, strides and dilations must be >= 1, pads >= 0")
    return img, blk, s, p, d


def _blocks(img, blk, s, p, d) -> list[int]:
    nd = len(img)
    return [(img[i] + p[i] + p[i + nd] - (d[i] * (blk[i] - 1) + 1)) // s[i] + 1 for i in range(nd)]


def col2im_rule(types: list[TensorType], attrs) -> list[TensorType]:
    (t,) = types
    img, blk, s, p, d = _col2im_geometry(attrs)
    if t.rank != 3 or t.dtype.is_bool:
        raise OpTypeError(f"col2im takes a numeric (N, C * prod(block), L) tensor, got {t}")
    k = int(np.prod(blk))
    outs = _blocks(img, blk, s, p, d)
    if min(outs) < 1:
        raise OpTypeError(f"col2im: the block {blk} does not fit the padded image {img}")
    c = t.shape[1]
    if isinstance(c, int) and c % k:
        raise OpTypeError(f"col2im: dim 1 of {t} is not a multiple of prod(block) = {k}")
    if isinstance(t.shape[2], int) and t.shape[2] != int(np.prod(outs)):
        raise OpTypeError(f"col2im: {t} has {t.shape[2]} blocks; the image holds "
                          f"{int(np.prod(outs))}")
    return [t.with_shape((t.shape[0], c // k if isinstance(c, int) else None) + tuple(img))]


def col2im_ref(attrs, x: np.ndarray) -> np.ndarray:
    img, blk, s, p, d = _col2im_geometry(attrs)
    nd, n = len(img), x.shape[0]
    outs = _blocks(img, blk, s, p, d)
    k = int(np.prod(blk))
    if x.shape[1] % k or x.shape[2] != int(np.prod(outs)):
        raise Trap(f"col2im: operand shape {x.shape} does not fit block {blk} and image {img}")
    c = x.shape[1] // k
    cols = x.reshape((n, c) + tuple(blk) + tuple(outs))
    padded = np.zeros((n, c) + tuple(img[i] + p[i] + p[i + nd] for i in range(nd)), x.dtype)
    for pos in itertools.product(*(range(b) for b in blk)):
        view = tuple(slice(q * d[i], q * d[i] + s[i] * (outs[i] - 1) + 1, s[i])
                     for i, q in enumerate(pos))
        padded[(slice(None), slice(None)) + view] += cols[(slice(None), slice(None)) + pos]
    crop = tuple(slice(p[i], p[i] + img[i]) for i in range(nd))
    return np.ascontiguousarray(padded[(slice(None), slice(None)) + crop])


# ---- roi_align ---------------------------------------------------------------------------------

def roi_align_rule(types: list[TensorType], attrs) -> list[TensorType]:
    x, rois, idx = types
    if x.rank != 4 or not x.dtype.is_float or rois.dtype != x.dtype or rois.rank != 2 or \
            rois.shape[1] not in (4, None) or idx.rank != 1 or not idx.dtype.is_int:
        raise OpTypeError(f"roi_align takes a float (N, C, H, W) tensor, (R, 4) rois of its "
                          f"dtype and (R,) integer batch indices, got {x}, {rois}, {idx}")
    if attrs["mode"] not in ("avg", "max") or attrs["output_height"] < 1 or \
            attrs["output_width"] < 1:
        raise OpTypeError("roi_align: mode is avg or max; output sizes are >= 1")
    return [x.with_shape((rois.shape[0], x.shape[1], attrs["output_height"],
                          attrs["output_width"]))]


def _axis_samples(start: float, size: float, bins: int, grid: int, limit: int):
    """Sample positions of one axis (bins x grid), their low/high taps and weights, and
    whether they fall inside [-1, limit]."""
    pos = start + (np.arange(bins)[:, None] + (np.arange(grid)[None, :] + 0.5) / grid) * \
        (size / bins)
    valid = (pos >= -1.0) & (pos <= limit)
    v = np.maximum(pos, 0.0)
    low = np.floor(v).astype(np.int64)
    at_end = low >= limit - 1
    low = np.where(at_end, limit - 1, low)
    high = np.where(at_end, limit - 1, low + 1)
    v = np.where(at_end, low, v)
    frac = v - low
    return low, high, 1.0 - frac, frac, valid


def roi_align_ref(attrs, x: np.ndarray, rois: np.ndarray, idx: np.ndarray) -> np.ndarray:
    oh, ow, ratio = attrs["output_height"], attrs["output_width"], attrs["sampling_ratio"]
    scale, half = attrs["spatial_scale"], attrs["half_pixel"]
    n, c, h, w = x.shape
    out = np.zeros((rois.shape[0], c, oh, ow), np.float64)
    off = 0.5 if half else 0.0
    for r in range(rois.shape[0]):
        b = int(idx[r])
        if not 0 <= b < n:
            raise Trap(f"roi_align: batch index {b} is outside [0, {n})")
        x0, y0, x1, y1 = (float(v) * scale - off for v in rois[r])
        rw, rh = x1 - x0, y1 - y0
        if not half:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        gh = ratio if ratio > 0 else int(np.ceil(rh / oh))
        gw = ratio if ratio > 0 else int(np.ceil(rw / ow))
        ylo, yhi, wy0, wy1, vy = _axis_samples(y0, rh, oh, gh, h)
        xlo, xhi, wx0, wx1, vx = _axis_samples(x0, rw, ow, gw, w)
        img = x[b].astype(np.float64)                         # (C, H, W)
        # corner terms, each (C, oh, gh, ow, gw); invalid samples weigh zero
        valid = (vy[:, :, None, None] & vx[None, None, :, :])
        terms = []
        for yi, wy in ((ylo, wy0), (yhi, wy1)):
            for xi, wx in ((xlo, wx0), (xhi, wx1)):
                vals = img[:, yi[:, :, None, None], xi[None, None, :, :]]
                weight = np.where(valid, wy[:, :, None, None] * wx[None, None, :, :], 0.0)
                terms.append(weight * vals)
        if attrs["mode"] == "avg":
            out[r] = sum(terms).sum(axis=(2, 4)) / max(gh * gw, 1)
        else:
            # onnxruntime's max: the largest weighted corner over the samples of a bin
            out[r] = np.max(np.maximum.reduce(terms), axis=(2, 4))
    return out.astype(x.dtype)


OPS = [
    OpDef("col2im", 154, Family.NN, (1, 1), col2im_rule, col2im_ref,
          "r[n, c, ..] := sum of the column entries of x that the sliding blocks place at each "
          "image position (ONNX Col2Im): x is (N, C * prod(block_shape), L), block l's values "
          "laid out C-major then by block position; strides, pads (begins, ends) and "
          "dilations as in conv2d; empty lists mean 1, 0 and 1",
          attrs=(AttrSpec("image_shape", AttrKind.INTS, doc="the spatial sizes of r"),
                 AttrSpec("block_shape", AttrKind.INTS, doc="the sliding block's sizes"),
                 AttrSpec("strides", AttrKind.INTS, [], "block step per dim"),
                 AttrSpec("pads", AttrKind.INTS, [], "image padding, begins then ends"),
                 AttrSpec("dilations", AttrKind.INTS, [], "spacing of a block's taps")),
          dtypes="numeric",
          vjp=NOT_DIFFERENTIABLE),
    OpDef("roi_align", 155, Family.NN, (3, 3), roi_align_rule, roi_align_ref,
          "r[k, c] := the (output_height, output_width) bins of region rois[k] = (x1, y1, x2, y2) "
          "* spatial_scale of x[batch[k], c] (ONNX RoiAlign): each bin averages (avg) bilinear "
          "samples on a sampling_ratio grid (0: ceil(bin size)); max takes the largest weighted "
          "corner, as onnxruntime; half_pixel shifts the region by -0.5",
          attrs=(AttrSpec("output_height", AttrKind.INT, 1, "bins along y"),
                 AttrSpec("output_width", AttrKind.INT, 1, "bins along x"),
                 AttrSpec("sampling_ratio", AttrKind.INT, 0, "samples per bin and axis; 0: adaptive"),
                 AttrSpec("spatial_scale", AttrKind.FLOAT, 1.0, "roi coordinates to pixels"),
                 AttrSpec("mode", AttrKind.STR, "avg", "avg or max"),
                 AttrSpec("half_pixel", AttrKind.BOOL, True, "shift the region by -0.5")),
          dtypes="float; batch indices integer", extra={"operands": ("x", "rois", "batch")},
          vjp=NOT_DIFFERENTIABLE),
]
