"""Dynamic shape ops: the shape, axes or sizes come from a tensor operand at run time.

The static ops (`reshape {shape}`, `broadcast_to {shape}`, `slice {starts, ends}` ...) take their
shape as an attribute, so the verifier knows every size. Frameworks also compute shapes at run
time (ONNX `Reshape(x, shape)` where `shape` is a graph input); these rows carry that case. The
result's *rank* is still fixed before the program runs: it comes from the static length of the
1-D shape operand (an `i64[3]` shape gives a rank-3 result). The result's dims are unknown (`?`)
where they depend on the operand's values, and the reference checks at run time what the
verifier could not, trapping on a bad shape.

Integer operands (shapes, axes, pads, counts) may be any integer dtype; they are read as i64.
"""
from __future__ import annotations

import numpy as np

from ..errors import OpTypeError, Trap
from ..types import Dim, TensorType
from . import adjoints_movement as adj
from .movement import slice_range
from .opdef import NO_GRADIENT, NOT_DIFFERENTIABLE, AttrKind, AttrSpec, Family, OpDef


def _vector_len(op: str, t: TensorType, what: str) -> int:
    """The static length of a 1-D integer operand (a shape, axes or pads vector)."""
    if not t.dtype.is_int:
        raise OpTypeError(f"{op} {what} must be an integer vector, got {t}")
    if t.rank != 1 or not isinstance(t.shape[0], int):
        raise OpTypeError(f"{op} {what} must be 1-D with a static length (it fixes the "
                          f"result's rank), got {t}")
    return t.shape[0]


def _scalar_int(op: str, t: TensorType, what: str) -> None:
    if not t.dtype.is_int or t.rank > 1 or (t.rank == 1 and t.shape[0] != 1):
        raise OpTypeError(f"{op} {what} must be an integer scalar, got {t}")


def _ints(a: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(a).reshape(-1)]


def _axes(op: str, a: np.ndarray, rank: int) -> list[int]:
    """Run-time axes, normalized; an out-of-range or repeated axis traps."""
    out = []
    for v in _ints(a):
        if not -rank <= v < max(rank, 1):
            raise Trap(f"{op}: axis {v} is out of range for rank {rank}")
        out.append(v % rank if rank else 0)
    if len(set(out)) != len(out):
        raise Trap(f"{op}: axes {_ints(a)} repeat an axis")
    return out


# ---- reshape_dyn -----------------------------------------------------------------------------

def reshape_dyn_rule(types: list[TensorType], attrs) -> list[TensorType]:
    t, s = types
    k = _vector_len("reshape_dyn", s, "shape")
    return [t.with_shape((None,) * k)]


def reshape_dyn_ref(attrs, x: np.ndarray, shape: np.ndarray) -> np.ndarray:
    target = _ints(shape)
    if attrs["copy_zero"]:
        # ONNX Reshape without allowzero: 0 copies the input's dim at that position
        for i, d in enumerate(target):
            if d == 0:
                if i >= x.ndim:
                    raise Trap(f"reshape_dyn: shape {_ints(shape)} copies dim {i} of a rank-"
                               f"{x.ndim} operand")
                target[i] = x.shape[i]
    if sum(d == -1 for d in target) > 1 or any(d < -1 for d in target):
        raise Trap(f"reshape_dyn: shape {target} has more than one -1 or a negative size")
    known = int(np.prod([d for d in target if d != -1], dtype=np.int64))
    if -1 in target:
        if known == 0 or x.size % known:
            raise Trap(f"reshape_dyn cannot fit {list(x.shape)} ({x.size} elements) into {target}")
        target = [x.size // known if d == -1 else d for d in target]
    elif known != x.size:
        raise Trap(f"reshape_dyn of {list(x.shape)} ({x.size} elements) to {target} changes the "
                   f"element count")
    return np.reshape(x, target)


# ---- broadcast_dyn (ONNX Expand) -------------------------------------------------------------

def broadcast_dyn_rule(types: list[TensorType], attrs) -> list[TensorType]:
    t, s = types
    k = _vector_len("broadcast_dyn", s, "shape")
    n = max(k, t.rank)
    padded: list[Dim] = [1] * (n - t.rank) + list(t.shape)
    # a dim of a larger than 1 is the result's dim (the target must be 1 or equal); others depend
    # on the target's values
    return [t.with_shape(tuple(d if isinstance(d, int) and d > 1 else None for d in padded))]


def broadcast_dyn_ref(attrs, x: np.ndarray, shape: np.ndarray) -> np.ndarray:
    target = _ints(shape)
    try:
        out = np.broadcast_shapes(x.shape, tuple(target))
        return np.array(np.broadcast_to(x, out))
    except ValueError:
        raise Trap(f"broadcast_dyn: {list(x.shape)} and {target} do not broadcast") from None


# ---- tile_dyn --------------------------------------------------------------------------------

def tile_dyn_rule(types: list[TensorType], attrs) -> list[TensorType]:
    t, r = types
    k = _vector_len("tile_dyn", r, "repeats")
    if k != t.rank:
        raise OpTypeError(f"tile_dyn needs one repeat per dim of {t}, got {k}")
    return [t.with_shape(tuple(0 if d == 0 else None for d in t.shape))]


def tile_dyn_ref(attrs, x: np.ndarray, reps: np.ndarray) -> np.ndarray:
    r = _ints(reps)
    if any(v < 0 for v in r):
        raise Trap(f"tile_dyn: repeats {r} has a negative count")
    return np.tile(x, r) if r else x.copy()


# ---- slice_dyn -------------------------------------------------------------------------------

def slice_dyn_rule(types: list[TensorType], attrs) -> list[TensorType]:
    # the vectors' length does not fix the result's rank (every dim becomes unknown), so it may
    # be unknown too (an exporter's start index sliced from a run-time offsets vector); equal
    # lengths are then checked when it runs
    t, starts, ends, axes, steps = types
    lengths = {}
    for what, v in (("starts", starts), ("ends", ends), ("axes", axes), ("steps", steps)):
        if not v.dtype.is_int or v.rank != 1:
            raise OpTypeError(f"slice_dyn {what} must be a 1-D integer vector, got {v}")
        if isinstance(v.shape[0], int):
            lengths[what] = v.shape[0]
    if len(set(lengths.values())) > 1:
        raise OpTypeError("slice_dyn " + ", ".join(f"{k} has {n}" for k, n in lengths.items()) +
                          " entries: they must be equal")
    if t.rank == 0:
        raise OpTypeError("slice_dyn needs an operand of rank 1 or more")
    return [t.with_shape((None,) * t.rank)]


def slice_dyn_ref(attrs, x: np.ndarray, starts, ends, axes, steps) -> np.ndarray:
    index: list[slice] = [slice(None)] * x.ndim
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise Trap(f"slice_dyn: starts, ends, axes and steps differ in length ({len(starts)}, "
                   f"{len(ends)}, {len(axes)}, {len(steps)})")
    st = _ints(steps)
    if any(s == 0 for s in st):
        raise Trap("slice_dyn: a step is 0")
    for start, end, axis, step in zip(_ints(starts), _ints(ends), _axes("slice_dyn", axes, x.ndim),
                                      st):
        first, count = slice_range(start, end, step, x.shape[axis])
        stop = first + count * step
        index[axis] = slice(first, stop if stop >= 0 else None, step) if count else slice(0, 0)
    return x[tuple(index)].copy()


# ---- pad_dyn ---------------------------------------------------------------------------------

PAD_MODES = ("constant", "edge", "reflect", "wrap")


def pad_dyn_rule(types: list[TensorType], attrs) -> list[TensorType]:
    t, pads, value = types
    if _vector_len("pad_dyn", pads, "pads") != 2 * t.rank:
        raise OpTypeError(f"pad_dyn needs {2 * t.rank} pads for {t}")
    if value.dtype != t.dtype or value.rank != 0:
        raise OpTypeError(f"pad_dyn value must be a scalar of {t.dtype}, got {value}")
    if attrs["mode"] not in PAD_MODES:
        raise OpTypeError(f"pad_dyn mode must be one of {', '.join(PAD_MODES)}")
    return [t.with_shape((None,) * t.rank)]


def pad_dyn_ref(attrs, x: np.ndarray, pads: np.ndarray, value: np.ndarray) -> np.ndarray:
    p = _ints(pads)
    r = x.ndim
    crop = []
    for i in range(r):
        if x.shape[i] + p[i] + p[i + r] < 0:
            raise Trap(f"pad_dyn crops axis {i} of {list(x.shape)} below size 0")
        crop.append(slice(max(-p[i], 0), x.shape[i] - max(-p[i + r], 0)))
    x = x[tuple(crop)] if crop else x
    widths = [(max(p[i], 0), max(p[i + r], 0)) for i in range(r)]
    mode = attrs["mode"]
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=value)
    if any(w for w in widths) and x.size == 0:
        raise Trap(f"pad_dyn: {mode} padding of an empty tensor")
    if mode == "reflect" and any(w[0] >= n or w[1] >= n for w, n in zip(widths, x.shape) if w != (0, 0)):
        raise Trap(f"pad_dyn: reflect pads {p} reach past the edge of {list(x.shape)}")
    return np.pad(x, widths, mode={"edge": "edge", "reflect": "reflect", "wrap": "wrap"}[mode])


# ---- range and fill --------------------------------------------------------------------------

def range_rule(types: list[TensorType], attrs) -> list[TensorType]:
    if len({t.dtype for t in types}) != 1 or any(t.rank != 0 for t in types):
        raise OpTypeError("range takes three scalars of one dtype, got "
                          + ", ".join(str(t) for t in types))
    if types[0].dtype.is_bool:
        raise OpTypeError("range takes numeric scalars")
    return [TensorType(types[0].dtype, (None,))]


def range_ref(attrs, start, limit, delta) -> np.ndarray:
    if delta == 0:
        raise Trap("range: delta is 0")
    n = max(int(np.ceil((float(limit) - float(start)) / float(delta))), 0)
    # start + i * delta in the operand dtype, as ONNX Range defines it
    return (start + np.arange(n).astype(start.dtype) * delta).astype(start.dtype)


def fill_rule(types: list[TensorType], attrs) -> list[TensorType]:
    s, value = types
    k = _vector_len("fill", s, "shape")
    if value.rank != 0:
        raise OpTypeError(f"fill value must be a scalar, got {value}")
    return [TensorType(value.dtype, (None,) * k)]


def fill_ref(attrs, shape: np.ndarray, value: np.ndarray) -> np.ndarray:
    dims = _ints(shape)
    if any(d < 0 for d in dims):
        raise Trap(f"fill: shape {dims} has a negative size")
    return np.full(dims, value, dtype=value.dtype)


# ---- axes given at run time: reduce_dyn, squeeze_dyn, unsqueeze_dyn --------------------------

REDUCE_KINDS = ("sum", "mean", "max", "min", "prod")


def _reduction(kind: str) -> OpDef:
    """The static reduce_KIND row: reduce_dyn reuses its type rule and reference."""
    from . import reduce as _reduce
    return next(op for op in _reduce.OPS if op.name == "reduce_" + kind)


def reduce_dyn_rule(types: list[TensorType], attrs) -> list[TensorType]:
    t, axes = types
    k = _vector_len("reduce_dyn", axes, "axes")
    if attrs["kind"] not in REDUCE_KINDS:
        raise OpTypeError(f"reduce_dyn kind must be one of {', '.join(REDUCE_KINDS)}")
    if k > t.rank and t.rank:
        raise OpTypeError(f"reduce_dyn: {k} axes for {t}")
    # the reduction op's own type rule checks the dtype (reduce_mean takes floats only)
    _reduction(attrs["kind"]).infer([t], {"axes": None, "keepdims": True})
    if k == 0:
        # empty axes: everything, or nothing when noop_with_empty_axes
        if attrs["noop_with_empty_axes"]:
            return [t]
        return [t.with_shape((1,) * t.rank if attrs["keepdims"] else ())]
    if attrs["keepdims"]:
        return [t.with_shape(tuple(1 if d == 1 else None for d in t.shape))]
    return [t.with_shape((None,) * (t.rank - k))]


def reduce_dyn_ref(attrs, x: np.ndarray, axes: np.ndarray) -> np.ndarray:
    ax = _axes("reduce_dyn", axes, x.ndim)
    if not ax and attrs["noop_with_empty_axes"]:
        return x.copy()
    return _reduction(attrs["kind"]).reference({"axes": ax or None, "keepdims": attrs["keepdims"]}, x)


def squeeze_dyn_rule(types: list[TensorType], attrs) -> list[TensorType]:
    t, axes = types
    k = _vector_len("squeeze_dyn", axes, "axes")
    if k > t.rank:
        raise OpTypeError(f"squeeze_dyn: {k} axes for {t}")
    return [t.with_shape((None,) * (t.rank - k))]


def squeeze_dyn_ref(attrs, x: np.ndarray, axes: np.ndarray) -> np.ndarray:
    ax = _axes("squeeze_dyn", axes, x.ndim)
    for a in ax:
        if x.shape[a] != 1:
            raise Trap(f"squeeze_dyn: axis {a} of {list(x.shape)} has size {x.shape[a]}, not 1")
    return np.squeeze(x, axis=tuple(ax)).copy()


def unsqueeze_dyn_rule(types: list[TensorType], attrs) -> list[TensorType]:
    t, axes = types
    k = _vector_len("unsqueeze_dyn", axes, "axes")
    return [t.with_shape((None,) * (t.rank + k))]


def unsqueeze_dyn_ref(attrs, x: np.ndarray, axes: np.ndarray) -> np.ndarray:
    ax = _axes("unsqueeze_dyn", axes, x.ndim + axes.size)
    return np.expand_dims(x, tuple(ax)).copy()


SHAPE_VEC = "the shape: a 1-D integer vector of static length (the result's rank)"

OPS = [
    OpDef("reshape_dyn", 171, Family.MOVEMENT, (2, 2), reshape_dyn_rule, reshape_dyn_ref,
          "r := the elements of a in row-major order, in the shape given by the vector `shape` at "
          "run time; one -1 keeps the element count; with copy_zero, 0 copies a's dim at that "
          "position (ONNX Reshape); rank = len(shape), dims unknown; traps on a bad shape",
          attrs=(AttrSpec("copy_zero", AttrKind.BOOL, False,
                          "0 in shape copies a's dim (ONNX) instead of meaning size 0"),),
          dtypes="a: any; shape: integer", extra={"operands": ("a", "shape")},
          vjp=adj.reshape_vjp,
          strings=True),
    OpDef("broadcast_dyn", 172, Family.MOVEMENT, (2, 2), broadcast_dyn_rule, broadcast_dyn_ref,
          "r := a broadcast with the run-time shape vector (ONNX Expand: both ways, so a dim of "
          "a may be larger than the target's 1); traps when they do not broadcast",
          dtypes="a: any; shape: integer", extra={"operands": ("a", "shape")},
          vjp=adj.broadcast_vjp,
          strings=True),
    OpDef("tile_dyn", 173, Family.MOVEMENT, (2, 2), tile_dyn_rule, tile_dyn_ref,
          "r := a repeated repeats[i] times along each dim i (np.tile); repeats is a run-time "
          "vector with one count per dim; a negative count traps",
          dtypes="a: any; repeats: integer", extra={"operands": ("a", "repeats")},
          vjp=NOT_DIFFERENTIABLE,
          strings=True),
    OpDef("slice_dyn", 174, Family.MOVEMENT, (5, 5), slice_dyn_rule, slice_dyn_ref,
          "r := a[starts:ends:steps] on `axes` as `slice`, with all four vectors given at run "
          "time (equal static lengths); a zero step or a bad axis traps",
          dtypes="a: any; the rest: integer",
          extra={"operands": ("a", "starts", "ends", "axes", "steps")},
          vjp=NOT_DIFFERENTIABLE,
          strings=True),
    OpDef("pad_dyn", 175, Family.MOVEMENT, (3, 3), pad_dyn_rule, pad_dyn_ref,
          "r := a padded by the run-time vector `pads` (ONNX order: all begins, then all ends; "
          "negative pads crop) with the scalar `value` (mode constant) or by edge, reflect or "
          "wrap padding (value unused)",
          attrs=(AttrSpec("mode", AttrKind.STR, "constant", "constant, edge, reflect or wrap"),),
          dtypes="a, value: any, one dtype; pads: integer",
          extra={"operands": ("a", "pads", "value")},
          vjp=NOT_DIFFERENTIABLE),
    OpDef("range", 192, Family.MISC, (3, 3), range_rule, range_ref,
          "r := [start, start + delta, ...] below limit (above it for a negative delta): "
          "max(ceil((limit - start) / delta), 0) elements of the scalars' dtype (ONNX Range); a "
          "zero delta traps",
          dtypes="numeric scalars of one dtype", extra={"operands": ("start", "limit", "delta")},
          vjp=NO_GRADIENT),
    OpDef("fill", 193, Family.MISC, (2, 2), fill_rule, fill_ref,
          "r := a tensor of the run-time shape vector `shape`, every element the scalar `value` "
          "(ONNX ConstantOfShape); a negative size traps",
          dtypes="shape: integer; value: any", extra={"operands": ("shape", "value")},
          vjp=adj.fill_vjp),
    OpDef("reduce_dyn", 176, Family.MOVEMENT, (2, 2), reduce_dyn_rule, reduce_dyn_ref,
          "r := reduce_KIND a over the axes in the run-time vector `axes` (as the reduce_* ops; "
          "empty axes reduce every axis, or none with noop_with_empty_axes); a bad or repeated "
          "axis traps",
          attrs=(AttrSpec("kind", AttrKind.STR, doc="sum, mean, max, min or prod"),
                 AttrSpec("keepdims", AttrKind.BOOL, False, "keep reduced dims as size 1"),
                 AttrSpec("noop_with_empty_axes", AttrKind.BOOL, False,
                          "empty axes leave a unchanged")),
          dtypes="a: as the reduce_KIND op; axes: integer", extra={"operands": ("a", "axes")},
          vjp=NOT_DIFFERENTIABLE),
    OpDef("squeeze_dyn", 177, Family.MOVEMENT, (2, 2), squeeze_dyn_rule, squeeze_dyn_ref,
          "r := a without the dims in the run-time vector `axes`; each must have size 1 (traps "
          "otherwise)",
          dtypes="a: any; axes: integer", extra={"operands": ("a", "axes")},
          vjp=adj.reshape_vjp,
          strings=True),
    OpDef("unsqueeze_dyn", 178, Family.MOVEMENT, (2, 2), unsqueeze_dyn_rule, unsqueeze_dyn_ref,
          "r := a with a size-1 dim inserted at each position of the run-time vector `axes`, "
          "which index r's dims (ONNX Unsqueeze)",
          dtypes="a: any; axes: integer", extra={"operands": ("a", "axes")},
          vjp=adj.reshape_vjp,
          strings=True),
]
