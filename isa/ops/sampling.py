"""Sampling an image at computed positions: grid_sample (ONNX GridSample).

Every output point reads the input at a position the grid gives in normalized coordinates
[-1, 1] (x first, as ONNX and PyTorch order them). The reference is vectorized: per spatial dim
it finds the taps (1 nearest, 2 linear, 4 cubic) and their weights, then sums weight products
over every combination of taps, reading each tap through the padding mode.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..errors import OpTypeError
from ..types import TensorType
from .opdef import NOT_DIFFERENTIABLE, AttrKind, AttrSpec, Family, OpDef

MODES = ("linear", "nearest", "cubic")
PADDINGS = ("zeros", "border", "reflection")
CUBIC_A = -0.75      # Keys' cubic convolution parameter (ONNX, PyTorch)


def grid_sample_rule(types: list[TensorType], attrs) -> list[TensorType]:
    x, g = types
    nd = x.rank - 2
    if not x.dtype.is_float or not g.dtype.is_float or nd < 1 or g.rank != x.rank:
        raise OpTypeError(f"grid_sample takes a float (N, C, D1..Dk) tensor and a float "
                          f"(N, O1..Ok, k) grid, got {x} and {g}")
    if g.shape[-1] not in (nd, None):
        raise OpTypeError(f"grid_sample: the grid's last dim must be {nd}, got {g}")
    if attrs["mode"] not in MODES or attrs["padding_mode"] not in PADDINGS:
        raise OpTypeError(f"grid_sample: mode must be one of {MODES} and padding_mode one of "
                          f"{PADDINGS}")
    n = x.shape[0] if x.shape[0] is not None else g.shape[0]
    return [x.with_shape((n, x.shape[1]) + g.shape[1:-1])]


def _reflect(v: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Fold positions outside [lo, hi] back in by repeated reflection at the borders."""
    span = hi - lo
    if span <= 0:
        return np.full_like(v, lo)
    below, above = v < lo, v > hi
    d = np.where(below, lo - v, v - hi)
    k = np.floor(d / span)
    r = d - k * span
    even = k % 2 == 0
    from_lo, from_hi = lo + r, hi - r
    out = np.where(below, np.where(even, from_lo, from_hi), v)
    return np.where(above, np.where(even, from_hi, from_lo), out)


def _cubic_weights(t: np.ndarray) -> list[np.ndarray]:
    """Weights of taps at offsets -1, 0, 1, 2 for a fraction t in [0, 1)."""
    a = CUBIC_A

    def near(s):      # |s| <= 1
        return ((a + 2) * s - (a + 3)) * s * s + 1

    def far(s):       # 1 < |s| < 2
        return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _taps(v: np.ndarray, mode: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """(index, weight) pairs of one dim for positions v."""
    if mode == "nearest":
        return [(np.trunc(v).astype(np.int64), np.ones_like(v))]
    base = np.floor(v)
    t = v - base
    i0 = base.astype(np.int64)
    if mode == "linear":
        return [(i0, 1 - t), (i0 + 1, t)]
    return [(i0 + k - 1, w) for k, w in enumerate(_cubic_weights(t))]


def grid_sample_ref(attrs, x: np.ndarray, grid: np.ndarray) -> np.ndarray:
    mode, padding, corners = attrs["mode"], attrs["padding_mode"], attrs["align_corners"]
    dims = x.shape[2:]
    g = grid.astype(np.float64)[..., ::-1]          # (x, y[, z]) -> dims order
    per_dim, bounds = [], []
    for k, d in enumerate(dims):
        v = g[..., k]
        v = (v + 1) / 2 * (d - 1) if corners else ((v + 1) * d - 1) / 2
        if mode == "nearest":
            v = np.rint(v)                          # half to even
        lo, hi = (0.0, d - 1.0) if corners else (-0.5, d - 0.5)
        # border: each tap's index is clamped below. For linear and nearest that equals
        # clamping the position; for cubic it is what onnxruntime and PyTorch compute (ONNX's
        # Python reference clamps the position, which moves the cubic taps)
        if padding == "reflection":
            v = _reflect(v, lo, hi)
        per_dim.append(_taps(v, mode))
        bounds.append((lo, hi))
    xt = np.moveaxis(x, 1, -1).astype(np.float64)   # (N, D1..Dk, C)
    batch = np.arange(x.shape[0]).reshape((-1,) + (1,) * (grid.ndim - 2))
    out = np.zeros(grid.shape[:-1] + (x.shape[1],), np.float64)
    for combo in itertools.product(*per_dim):
        weight = np.ones(grid.shape[:-1], np.float64)
        index, inside = [], np.ones(grid.shape[:-1], bool)
        for (i, w), d, (lo, hi) in zip(combo, dims, bounds):
            weight = weight * w
            if padding == "zeros":
                inside &= (i >= 0) & (i < d)
            elif padding == "reflection":
                i = np.trunc(_reflect(i.astype(np.float64), lo, hi)).astype(np.int64)
            index.append(np.clip(i, 0, d - 1))
        vals = xt[(batch, *index)]
        out += np.where(inside, weight, 0.0)[..., None] * vals
    return np.moveaxis(out, -1, 1).astype(x.dtype)


OPS = [
    OpDef("grid_sample", 151, Family.NN, (2, 2), grid_sample_rule, grid_sample_ref,
          "r[n, c, o..] := a[n, c] read at grid[n, o..] (ONNX GridSample): grid holds normalized "
          "positions in [-1, 1], x first; mode linear / nearest (half to even) / cubic (Keys, "
          "A = -0.75); padding_mode zeros / border (clamp) / reflection for taps outside; "
          "align_corners maps -1 and 1 to the corner pixels' centers, else to their outer edges",
          attrs=(AttrSpec("mode", AttrKind.STR, "linear", "linear, nearest or cubic"),
                 AttrSpec("padding_mode", AttrKind.STR, "zeros", "zeros, border or reflection"),
                 AttrSpec("align_corners", AttrKind.BOOL, False, "-1 and 1 are pixel centers")),
          dtypes="float",
          vjp=NOT_DIFFERENTIABLE),
]
