"""resize: ONNX Resize whose scales or sizes are known only when the program runs.

Resizing is separable: along each resized axis the output is a sum over taps k of
gather(x, index_k, axis) * weight_k (1 tap for nearest, 2 for linear, 4 for cubic), the
indices and weights coming from the coordinate transform and the interpolation mode. The tap
math below is the one definition: the ONNX importer calls it at import when the sizes are
known (and emits gathers and products), this op's reference calls it at run time otherwise.
Out-of-range taps are clamped to the edge, as the ONNX reference pads.
"""
from __future__ import annotations

import numpy as np

from ..errors import InvalidError, OpTypeError, Trap
from ..types import TensorType
from .opdef import REQUIRED, AttrKind, AttrSpec, Family, OpDef

TRANSFORMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
              "asymmetric")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def original_coords(transform: str, out: int, n: int, scale: float) -> np.ndarray:
    """The input coordinate each of the `out` output positions samples (ONNX's formulas)."""
    x = np.arange(out, dtype=np.float64)
    if transform == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if transform == "half_pixel_symmetric":
        adjust = out / (scale * n)
        center = n / 2
        return center * (1 - adjust) + (x + 0.5) / scale - 0.5
    if transform == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if out > 1 else np.zeros(out)
    if transform == "align_corners":
        # the ONNX reference divides by the unrounded resized length, scale * n
        length = scale * n
        return x * (n - 1) / (length - 1) if length > 1 else np.zeros(out)
    if transform == "asymmetric":
        return x / scale
    raise ValueError(transform)


def crop_coords(out: int, n: int, start: float, end: float) -> np.ndarray:
    """tf_crop_and_resize: the output spans [start, end] of the input, in units of n - 1."""
    if out == 1:
        return np.full(1, 0.5 * (start + end) * (n - 1))
    return start * (n - 1) + np.arange(out, dtype=np.float64) * (end - start) * (n - 1) / (out - 1)


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


def _cubic(d: np.ndarray, a: float) -> np.ndarray:
    """The cubic convolution kernel at distance d."""
    d = np.abs(d)
    return np.where(d <= 1, ((a + 2) * d - (a + 3)) * d * d + 1,
                    np.where(d < 2, ((a * d - 5 * a) * d + 8 * a) * d - 4 * a, 0.0))


def _cubic_weights(t: np.ndarray, a: float) -> list[np.ndarray]:
    return [_cubic(t + 1, a), _cubic(t, a), _cubic(1 - t, a), _cubic(2 - t, a)]


def _antialias_taps(mode: str, xo: np.ndarray, scale: float, cubic_a: float
                    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Downsampling with antialias: the kernel stretched by 1 / scale, so every input position
    within its support contributes (linear: |d| < 1 / scale; cubic: < 2 / scale), weights
    normalized to sum 1. Tap k sits at base + k with base = ceil(xo) - 1 (ratio in (0, 1])."""
    base = np.ceil(xo) - 1
    ratio = xo - base
    reach = 1 if mode == "linear" else 2
    start = int(np.floor(-reach / scale) + 1)
    offsets = range(start, 2 - start if mode == "cubic" else start + 2 - 2 * start)
    if mode == "linear":
        weights = [np.clip(1 - np.abs((k - ratio) * scale), 0, 1) for k in offsets]
    else:
        weights = [_cubic((k - ratio) * scale, cubic_a) for k in offsets]
    total = sum(weights)
    return [base + k for k in offsets], [w / total for w in weights]


def taps_at(mode: str, xo: np.ndarray, n: int, nearest_mode: str = "round_prefer_floor",
            cubic_a: float = -0.75, exclude_outside: bool = False, antialias: bool = False,
            scale: float = 1.0) -> list[tuple[np.ndarray, np.ndarray]]:
    """(indices, weights) per tap for sampling positions `xo` of an axis of size n; with
    `antialias`, a downsampling `scale` < 1 widens linear and cubic kernels."""
    out = xo.size
    if mode == "nearest":
        idx = np.clip(_nearest(xo, nearest_mode), 0, n - 1).astype(np.int64)
        return [(idx, np.ones(out))]
    if antialias and scale < 1:
        raw, weights = _antialias_taps(mode, xo, scale, cubic_a)
        if exclude_outside:
            weights = [np.where((r < 0) | (r > n - 1), 0.0, w) for r, w in zip(raw, weights)]
            total = sum(weights)
            total = np.where(total == 0, 1.0, total)
            weights = [w / total for w in weights]
        return [(np.clip(r, 0, n - 1).astype(np.int64), w) for r, w in zip(raw, weights)]
    base = np.floor(xo)
    t = xo - base
    if mode == "linear":
        offsets, weights = [0, 1], [1 - t, t]
    else:
        offsets, weights = [-1, 0, 1, 2], _cubic_weights(t, cubic_a)
    raw = [base + o for o in offsets]
    if exclude_outside:
        weights = [np.where((r < 0) | (r > n - 1), 0.0, w) for r, w in zip(raw, weights)]
        total = sum(weights)
        weights = [w / total for w in weights]
    return [(np.clip(r, 0, n - 1).astype(np.int64), w) for r, w in zip(raw, weights)]


def resize_rule(types: list[TensorType], attrs) -> list[TensorType]:
    x, target = types
    axes = [a % x.rank if x.rank else a for a in attrs["axes"]] if x.rank else []
    if not x.dtype.is_float and attrs["mode"] != "nearest":
        raise OpTypeError(f"resize: {attrs['mode']} interpolation of {x.dtype}")
    if any(not -x.rank <= a < max(x.rank, 1) for a in attrs["axes"]) or len(set(axes)) != len(axes):
        raise OpTypeError(f"resize: axes {list(attrs['axes'])} do not fit rank {x.rank}")
    if target.rank != 1 or (isinstance(target.shape[0], int) and target.shape[0] != len(axes)):
        raise OpTypeError(f"resize: the target must be a vector of {len(axes)} entries, got "
                          f"{target}")
    by = attrs["by"]
    if (by == "sizes" and not target.dtype.is_int) or (by == "scales" and not target.dtype.is_float):
        raise OpTypeError(f"resize: {by} must be {'an integer' if by == 'sizes' else 'a float'} "
                          f"vector, got {target}")
    if by not in ("sizes", "scales") or attrs["mode"] not in ("nearest", "linear", "cubic") or \
            attrs["transform"] not in TRANSFORMS or attrs["nearest_mode"] not in NEAREST_MODES or \
            attrs["policy"] not in ("stretch", "not_larger", "not_smaller"):
        raise OpTypeError("resize: unknown by, mode, transform, nearest_mode or policy")
    return [x.with_shape(tuple(None if i in axes else d for i, d in enumerate(x.shape)))]


def resize_plan(attrs, shape: tuple[int, ...], target: np.ndarray) -> list[tuple[int, int, int, float]]:
    """(axis, input size, output size, scale) per resized axis."""
    axes = [a % len(shape) for a in attrs["axes"]]
    ins = [shape[a] for a in axes]
    t = np.asarray(target, np.float64).reshape(-1)
    if t.size != len(axes):
        raise Trap(f"resize: {t.size} {attrs['by']} for {len(axes)} axes")
    if attrs["by"] == "scales":
        if not np.all(t > 0):
            raise Trap(f"resize: scales must be positive, got {t.tolist()}")
        return [(a, n, int(np.floor(n * s)), float(s)) for a, n, s in zip(axes, ins, t)]
    if not np.all(t >= 0):
        raise Trap(f"resize: sizes must not be negative, got {t.tolist()}")
    if any(n == 0 for n in ins):
        raise Trap("resize: an axis of size 0 cannot be resized to given sizes")
    sizes = [int(s) for s in t]
    if attrs["policy"] == "stretch":
        return [(a, n, s, s / n) for a, n, s in zip(axes, ins, sizes)]
    r = (min if attrs["policy"] == "not_larger" else max)(s / n for s, n in zip(sizes, ins))
    return [(a, n, int(r * n + 0.5), r) for a, n in zip(axes, ins)]


def resize_ref(attrs, x: np.ndarray, target: np.ndarray) -> np.ndarray:
    y = x
    for a, n, out, s in resize_plan(attrs, x.shape, target):
        if out == n and s == 1.0:
            continue
        if n == 0 or out == 0:
            shape = list(y.shape)
            shape[a] = out
            y = np.zeros(shape, x.dtype)
            continue
        xo = original_coords(attrs["transform"], out, n, s)
        bshape = [1] * x.ndim
        bshape[a] = out
        acc = None
        for idx, w in taps_at(attrs["mode"], xo, n, attrs["nearest_mode"], attrs["cubic_coeff_a"],
                              attrs["exclude_outside"], attrs["antialias"], s):
            g = np.take(y, idx, axis=a)
            if attrs["mode"] != "nearest":
                g = g * w.astype(x.dtype).reshape(bshape)
            acc = g if acc is None else acc + g
        y = acc
    return np.ascontiguousarray(y, dtype=x.dtype)


def constant_plan(attrs, shape: tuple, target) -> list[tuple[int, int, int, float]]:
    """(axis, input size, output size, scale) of each axis a resize with a constant target
    changes, for the stages that work them out before it runs (its adjoint, the native
    library). `shape` may hold named or unknown dims where the target leaves the axis as it
    is (scaled by 1); elsewhere, and for an empty axis, ValueError says why not."""
    value = np.asarray(target, np.float64).reshape(-1)
    for k, a in enumerate(a % len(shape) for a in attrs["axes"]):
        d = shape[a]
        if d == 0 or (not isinstance(d, int) and not (attrs["by"] == "scales" and
                                                      k < value.size and value[k] == 1.0)):
            raise ValueError("an axis whose size is known only at run time, or is 0")
    try:
        plan = resize_plan(attrs, tuple(d if isinstance(d, int) else 1 for d in shape), value)
    except Trap as e:
        raise ValueError(str(e)) from None
    return [p for p in plan if not (p[2] == p[1] and p[3] == 1.0)]


def axis_taps(attrs, n: int, out: int, scale: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """(indices, weights) per tap of one resized axis, as the reference samples it."""
    xo = original_coords(attrs["transform"], out, n, scale)
    return taps_at(attrs["mode"], xo, n, attrs["nearest_mode"], attrs["cubic_coeff_a"],
                   attrs["exclude_outside"], attrs["antialias"], scale)


def resize_matrix(attrs, n: int, out: int, scale: float) -> np.ndarray:
    """The resize of one axis as a matrix M [out, n] (output o = sum over i of M[o, i] x[i])."""
    m = np.zeros((out, n))
    for idx, w in axis_taps(attrs, n, out, scale):
        np.add.at(m, (np.arange(out), idx), w)
    return m


def resize_vjp(g, attrs, xs, y, ct):
    """A resize with a constant target is linear and separable: per resized axis the output is
    M x along that axis, so the cotangent goes back through M's transpose, a product with a
    constant matrix [out, n] over that axis (taken last and back). A target known only at run
    time, or an axis of unknown size it changes, has no adjoint here."""
    from ..module import ConstRef
    x, target = xs
    tx = g.type(x)
    if not isinstance(target, ConstRef):
        raise InvalidError("the adjoint of resize needs a constant target (scales or sizes)")
    try:
        plan = constant_plan(attrs, tx.shape, g.module.constants[target.name].value)
    except ValueError as e:
        raise InvalidError(f"the adjoint of resize needs static sizes on the axes it changes "
                           f"({e})") from None
    for a, n, out, s in reversed(plan):
        m = resize_matrix(attrs, n, out, s).astype(tx.dtype.np)
        mt = g.emit("const", [], {"value": m, "type": TensorType(tx.dtype, m.shape)}, hint="c")
        perm = [d for d in range(tx.rank) if d != a] + [a]
        back = [perm.index(d) for d in range(tx.rank)]
        ct = g.transpose(g.matmul(g.transpose(ct, perm=perm), mt), perm=back)
    return [ct, None]


OPS = [
    OpDef("resize", 190, Family.NN, (2, 2), resize_rule, resize_ref,
          "r := x resized along `axes` to a target known at run time: `by` = scales (float, out "
          "= floor(size * scale)) or sizes (integer, with keep_aspect_ratio `policy`); each "
          "output position samples the input coordinate of `transform` by `mode` (nearest, "
          "linear, cubic), taps clamped to the edge (ONNX Resize)",
          attrs=(AttrSpec("axes", AttrKind.INTS, REQUIRED, "the resized axes"),
                 AttrSpec("by", AttrKind.STR, "scales", "scales or sizes"),
                 AttrSpec("mode", AttrKind.STR, "nearest", "nearest, linear or cubic"),
                 AttrSpec("transform", AttrKind.STR, "half_pixel",
                          "ONNX coordinate_transformation_mode (not tf_crop_and_resize)"),
                 AttrSpec("nearest_mode", AttrKind.STR, "round_prefer_floor", "nearest rounding"),
                 AttrSpec("cubic_coeff_a", AttrKind.FLOAT, -0.75, "the cubic kernel's a"),
                 AttrSpec("exclude_outside", AttrKind.BOOL, False,
                          "outside taps get weight 0, the rest renormalized"),
                 AttrSpec("policy", AttrKind.STR, "stretch",
                          "keep_aspect_ratio_policy for sizes: stretch, not_larger, not_smaller"),
                 AttrSpec("antialias", AttrKind.BOOL, False,
                          "downsampling widens the linear / cubic kernel by 1 / scale")),
          dtypes="x: float (nearest: any); target: float scales or integer sizes",
          extra={"operands": ("x", "target")},
          vjp=resize_vjp),
]
