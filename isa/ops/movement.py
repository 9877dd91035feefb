"""Movement ops: change the shape or order of elements without arithmetic.

Shapes are symbolic: named and unknown dims flow through where the rule can carry them and become
unknown ('?') where the result depends on a size the verifier cannot see. What the verifier could
not check, the reference checks at run time and reports as a Trap.
"""
from __future__ import annotations

import math

import numpy as np

from ..dtypes import BY_NAME
from ..errors import OpTypeError, Trap
from ..types import Dim, TensorType, dim_text
from . import adjoints_movement as adj
from .opdef import NO_GRADIENT, AttrKind, AttrSpec, Family, OpDef
from .shapes import normalize_axes, normalize_axis, same_dtype

I64 = BY_NAME["i64"]


def _shape_text(shape) -> str:
    return "[" + ", ".join(dim_text(d) for d in shape) + "]"


# ---- reshape ---------------------------------------------------------------------------------

def _check_reshape_target(shape: list[int]) -> None:
    if sum(1 for d in shape if d == -1) > 1:
        raise OpTypeError(f"reshape shape {shape} has more than one -1")
    if any(d < -1 for d in shape):
        raise OpTypeError(f"reshape shape {shape} has a negative size")


def reshape_rule(types: list[TensorType], attrs) -> list[TensorType]:
    (t,) = types
    target = list(attrs["shape"])
    _check_reshape_target(target)
    known = math.prod(d for d in target if d != -1)
    if t.is_static:
        total = math.prod(t.shape)
        if -1 in target:
            if known == 0 or total % known:
                raise OpTypeError(f"reshape cannot fit {t} ({total} elements) into {target}")
            return [t.with_shape(tuple(total // known if d == -1 else d for d in target))]
        if known != total:
            raise OpTypeError(f"reshape of {t} ({total} elements) to {target} ({known} elements) "
                              f"changes the element count")
        return [t.with_shape(tuple(target))]
    # One named dim times sizes that equal the rest of the target: the -1 is that named dim
    # (e.g. f32[B, 4, 4, 4] to [-1, 64] gives f32[B, 64]). Anything else is unknown.
    hole: Dim = None
    symbolic = [d for d in t.shape if not isinstance(d, int)]
    if len(symbolic) == 1 and isinstance(symbolic[0], str):
        if math.prod(d for d in t.shape if isinstance(d, int)) == known:
            hole = symbolic[0]
    return [t.with_shape(tuple(hole if d == -1 else d for d in target))]


def reshape_ref(attrs, x: np.ndarray) -> np.ndarray:
    target = list(attrs["shape"])
    known = math.prod(d for d in target if d != -1)
    if -1 in target:
        if known == 0 or x.size % known:
            raise Trap(f"reshape cannot fit {list(x.shape)} ({x.size} elements) into {target}")
    elif known != x.size:
        raise Trap(f"reshape of {list(x.shape)} ({x.size} elements) to {target} ({known} "
                   f"elements) changes the element count")
    return np.reshape(x, target)


# ---- transpose -------------------------------------------------------------------------------

def _perm(attrs, rank: int) -> list[int]:
    perm = attrs["perm"]
    return list(range(rank - 1, -1, -1)) if perm is None else list(perm)


def transpose_rule(types: list[TensorType], attrs) -> list[TensorType]:
    (t,) = types
    perm = _perm(attrs, t.rank)
    if sorted(perm) != list(range(t.rank)):
        raise OpTypeError(f"perm {perm} is not a permutation of the axes")
    return [t.with_shape(tuple(t.shape[p] for p in perm))]


def transpose_ref(attrs, x: np.ndarray) -> np.ndarray:
    return np.transpose(x, _perm(attrs, x.ndim))


# ---- broadcast_to, expand_dims, squeeze ------------------------------------------------------

def broadcast_to_rule(types: list[TensorType], attrs) -> list[TensorType]:
    (t,) = types
    target = list(attrs["shape"])
    if any(isinstance(d, int) and d < 0 for d in target):
        raise OpTypeError(f"broadcast_to shape {_shape_text(target)} has a negative size")
    if len(target) < t.rank:
        raise OpTypeError(f"broadcast_to cannot lower the rank of {t} to {len(target)}")
    for d, want in zip(t.shape, target[len(target) - t.rank:]):
        if isinstance(d, int) and isinstance(want, int) and d not in (1, want):
            raise OpTypeError(f"broadcast_to cannot stretch {t} to {_shape_text(target)}")
    return [t.with_shape(tuple(target))]


def broadcast_to_ref(attrs, x: np.ndarray) -> np.ndarray:
    target = tuple(attrs["shape"])
    try:
        # a copy, not NumPy's read-only view: a register must be a value of its own
        return np.array(np.broadcast_to(x, target))
    except ValueError:
        raise Trap(f"broadcast_to cannot stretch {list(x.shape)} to {list(target)}") from None


def expand_dims_rule(types: list[TensorType], attrs) -> list[TensorType]:
    (t,) = types
    out_rank = t.rank + len(attrs["axes"])
    axes = normalize_axes("expand_dims", attrs["axes"], out_rank)
    rest = iter(t.shape)
    return [t.with_shape(tuple(1 if i in axes else next(rest) for i in range(out_rank)))]


def expand_dims_ref(attrs, x: np.ndarray) -> np.ndarray:
    return np.expand_dims(x, tuple(attrs["axes"]))


def squeeze_rule(types: list[TensorType], attrs) -> list[TensorType]:
    (t,) = types
    if attrs["axes"] is None:
        # which axes go must not depend on run-time sizes (a named dim bound to 1 would change
        # the rank), so without a static shape the axes must be listed
        if not all(isinstance(d, int) for d in t.shape):
            raise OpTypeError(f"squeeze without axes needs a static shape, got {t}; list the axes")
        axes = [i for i, d in enumerate(t.shape) if d == 1]
    else:
        axes = normalize_axes("squeeze", attrs["axes"], t.rank)
        for a in axes:
            if isinstance(t.shape[a], int) and t.shape[a] != 1:
                raise OpTypeError(f"squeeze: axis {a} of {t} has size {t.shape[a]}, not 1")
    return [t.with_shape(tuple(d for i, d in enumerate(t.shape) if i not in axes))]


def squeeze_ref(attrs, x: np.ndarray) -> np.ndarray:
    if attrs["axes"] is None:
        # the rule admits this only for a static shape, so every 1 here is a static 1
        return np.squeeze(x)
    axes = tuple(a % x.ndim for a in attrs["axes"])
    for a in axes:
        if x.shape[a] != 1:
            raise Trap(f"squeeze: axis {a} of {list(x.shape)} has size {x.shape[a]}, not 1")
    return np.squeeze(x, axis=axes)


# ---- concat ----------------------------------------------------------------------------------

def _agreed_dim(dims: list[Dim]) -> Dim:
    """The dim of r where every operand must agree: a size if any gives one, else the common
    name, else unknown."""
    sizes = {d for d in dims if isinstance(d, int)}
    if sizes:
        return sizes.pop()
    return dims[0] if all(d == dims[0] for d in dims) else None


def concat_rule(types: list[TensorType], attrs) -> list[TensorType]:
    dt = same_dtype("concat", types)
    rank = types[0].rank
    if rank == 0:
        raise OpTypeError("concat needs operands of rank 1 or more")
    if any(t.rank != rank for t in types):
        raise OpTypeError("concat operands have ranks " + ", ".join(str(t.rank) for t in types)
                          + "; they must be equal")
    axis = normalize_axis("concat", attrs["axis"], rank)
    shape: list[Dim] = []
    for i in range(rank):
        dims = [t.shape[i] for t in types]
        if i == axis:
            if all(isinstance(d, int) for d in dims):
                shape.append(sum(dims))
            else:
                shape.append(dims[0] if len(dims) == 1 else None)
            continue
        sizes = sorted({d for d in dims if isinstance(d, int)})
        if len(sizes) > 1:
            raise OpTypeError(f"concat operands differ in dim {i} ({sizes[0]} and {sizes[1]}), "
                              f"which is not the concatenation axis {axis}")
        shape.append(_agreed_dim(dims))
    return [TensorType(dt, tuple(shape))]


def concat_ref(attrs, *xs: np.ndarray) -> np.ndarray:
    axis = attrs["axis"] % xs[0].ndim
    for x in xs[1:]:
        for i, (a, b) in enumerate(zip(xs[0].shape, x.shape)):
            if i != axis and a != b:
                raise Trap(f"concat operands differ in dim {i} ({a} and {b})")
    return np.concatenate(xs, axis=axis)


# ---- slice (ONNX Slice) ----------------------------------------------------------------------

def _slice_axes(op_attrs, rank: int) -> tuple[list[int], list[int], list[int], list[int]]:
    starts, ends = list(op_attrs["starts"]), list(op_attrs["ends"])
    n = len(starts)
    if len(ends) != n:
        raise OpTypeError(f"slice has {n} starts but {len(ends)} ends")
    axes = list(range(n)) if op_attrs["axes"] is None else list(op_attrs["axes"])
    steps = [1] * n if op_attrs["steps"] is None else list(op_attrs["steps"])
    if len(axes) != n or len(steps) != n:
        raise OpTypeError(f"slice starts, ends, axes and steps must have one entry per sliced "
                          f"axis ({n})")
    if any(s == 0 for s in steps):
        raise OpTypeError("slice steps must not be 0")
    return starts, ends, normalize_axes("slice", axes, rank), steps


def slice_range(start: int, end: int, step: int, size: int) -> tuple[int, int]:
    """(first index, element count) of one sliced axis, by ONNX Slice: a negative start or end
    counts from the back once, then both are clamped into the axis ([0, size] going forward,
    [-1, size-1] going backward, where -1 stands for "before index 0")."""
    if start < 0:
        start += size
    if end < 0:
        end += size
    if step > 0:
        start = min(max(start, 0), size)
        end = min(max(end, 0), size)
        count = max(0, -(-(end - start) // step))
    else:
        start = min(max(start, -1), size - 1)
        end = min(max(end, -1), size - 1)
        count = max(0, -(-(start - end) // -step))
    return start, count


# an `ends` this large means "to the end of the axis" (ONNX importers write INT64_MAX)
_TO_END = 2**31 - 1


def slice_rule(types: list[TensorType], attrs) -> list[TensorType]:
    (t,) = types
    starts, ends, axes, steps = _slice_axes(attrs, t.rank)
    shape = list(t.shape)
    for start, end, axis, step in zip(starts, ends, axes, steps):
        d = t.shape[axis]
        if isinstance(d, int):
            shape[axis] = slice_range(start, end, step, d)[1]
        elif not (start == 0 and step == 1 and end >= _TO_END):
            shape[axis] = None
    return [t.with_shape(tuple(shape))]


def slice_ref(attrs, x: np.ndarray) -> np.ndarray:
    starts, ends, axes, steps = _slice_axes(attrs, x.ndim)
    index: list[slice] = [slice(None)] * x.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        first, count = slice_range(start, end, step, x.shape[axis])
        stop = first + count * step
        # a backward slice that reaches index 0 must stop at None: -1 would mean the last element
        index[axis] = slice(first, stop if stop >= 0 else None, step) if count else slice(0, 0)
    return x[tuple(index)]


# ---- gather (ONNX Gather) --------------------------------------------------------------------

def gather_rule(types: list[TensorType], attrs) -> list[TensorType]:
    data, idx = types
    if idx.dtype.text not in ("i32", "i64"):
        raise OpTypeError(f"gather indices must be i32 or i64, got {idx.dtype}")
    if data.rank == 0:
        raise OpTypeError("gather needs data of rank 1 or more")
    axis = normalize_axis("gather", attrs["axis"], data.rank)
    return [data.with_shape(data.shape[:axis] + idx.shape + data.shape[axis + 1:])]


def gather_ref(attrs, data: np.ndarray, indices: np.ndarray) -> np.ndarray:
    axis = attrs["axis"] % data.ndim
    size = data.shape[axis]
    if np.ndim(indices) == 0:      # one slice (a loop's step): plain indexing, no array work
        i = int(indices)
        if not -size <= i < size:
            raise Trap(f"gather index {i} is out of range for axis {axis} of size {size}")
        return np.array(data[(slice(None),) * axis + (i,)])
    idx = indices.astype(np.int64)
    bad = (idx < -size) | (idx >= size)
    if np.any(bad):
        first = int(idx[bad].flat[0])
        raise Trap(f"gather index {first} is out of range for axis {axis} of size {size}")
    return np.take(data, np.where(idx < 0, idx + size, idx), axis=axis)


# ---- pad (constant mode) ---------------------------------------------------------------------

def pad_rule(types: list[TensorType], attrs) -> list[TensorType]:
    (t,) = types
    pads = list(attrs["pads"])
    if len(pads) != 2 * t.rank:
        raise OpTypeError(f"pad needs {2 * t.rank} pads (begin and end of each axis) for {t}, "
                          f"got {len(pads)}")
    value = float(attrs["value"])
    if t.dtype.is_int:
        # the fill is known here: NaN, inf or a value outside the dtype has no integer to
        # truncate to, so it is rejected now rather than failing inside NumPy at run time
        lo, hi = t.dtype.int_range()
        if not math.isfinite(value) or not lo <= math.trunc(value) <= hi:
            raise OpTypeError(f"pad value {value} is not a value of {t.dtype} "
                              f"({lo} to {hi})")
    shape: list[Dim] = []
    for i, d in enumerate(t.shape):
        grow = pads[i] + pads[i + t.rank]
        if isinstance(d, int):
            if d + grow < 0:
                raise OpTypeError(f"pad crops axis {i} of {t} below size 0")
            shape.append(d + grow)
        else:
            shape.append(d if grow == 0 else None)
    return [t.with_shape(tuple(shape))]


def pad_ref(attrs, x: np.ndarray) -> np.ndarray:
    pads = list(attrs["pads"])
    rank = x.ndim
    begins, ends = pads[:rank], pads[rank:]
    if rank == 0:
        return x.copy()         # nothing to pad (pads is empty)
    # output index j of an axis holds x[j - begin] where that is inside x, else the fill, over
    # a size of n + begin + end (negative pads crop; a crop past the far pad is allowed while
    # the size stays >= 0: the far pad then starts earlier)
    shape, dst, src = [], [], []
    for i, (b, e) in enumerate(zip(begins, ends)):
        n = x.shape[i]
        m = n + b + e
        if m < 0:
            raise Trap(f"pad crops axis {i} of {list(x.shape)} below size 0")
        lo, hi = max(0, b), min(m, n + b)
        shape.append(m)
        dst.append(slice(lo, max(lo, hi)))
        src.append(slice(lo - b, max(lo, hi) - b))
    value = float(attrs["value"])
    # converted as `cast` converts a float: integers truncate toward zero, bool is value != 0
    fill = np.asarray(math.trunc(value) if x.dtype.kind in "iu" else value).astype(x.dtype)
    out = np.full(shape, fill, dtype=x.dtype)
    if all(d.stop > d.start for d in dst):
        out[tuple(dst)] = x[tuple(src)]
    return out


# ---- shape_of and iota -----------------------------------------------------------------------

def shape_of_rule(types: list[TensorType], attrs) -> list[TensorType]:
    return [TensorType(I64, (types[0].rank,))]


def iota_rule(types: list[TensorType], attrs) -> list[TensorType]:
    shape = list(attrs["shape"])
    if any(isinstance(d, int) and d < 0 for d in shape):
        raise OpTypeError(f"iota shape {_shape_text(shape)} has a negative size")
    dtype = attrs["dtype"]
    if dtype.is_bool:
        raise OpTypeError("iota dtype must be numeric, got bool")
    normalize_axis("iota", attrs["axis"], len(shape), scalar_ok=True)
    return [TensorType(dtype, tuple(shape))]


def iota_ref(attrs) -> np.ndarray:
    shape = tuple(attrs["shape"])
    if not shape:
        return np.zeros((), attrs["dtype"].np)
    axis = attrs["axis"] % len(shape)
    # computed in i64 then converted, so small integer dtypes wrap like `cast`
    ramp = np.arange(shape[axis], dtype=np.int64).astype(attrs["dtype"].np)
    view = ramp.reshape([-1 if i == axis else 1 for i in range(len(shape))])
    return np.array(np.broadcast_to(view, shape))


SHAPE_NOTE = ("; names in `shape` are dims bound by the function's parameters, and the VM "
              "passes the reference `shape` with every name replaced by its size")

OPS = [
    OpDef("reshape", 161, Family.MOVEMENT, (1, 1), reshape_rule, reshape_ref,
          "r := the elements of a in row-major order, in the given shape; one -1 stands for the "
          "size that keeps the element count; 0 is a size of zero (NumPy), not ONNX's \"copy "
          "this dim\"; traps when the element count would change",
          attrs=(AttrSpec("shape", AttrKind.INTS, doc="the new shape; at most one -1"),),
          dtypes="any", extra={"operands": ("a",)},
          vjp=adj.reshape_vjp,
          strings=True),
    OpDef("transpose", 160, Family.MOVEMENT, (1, 1), transpose_rule, transpose_ref,
          "r := a with its axes permuted: r's axis i is a's axis perm[i] (NumPy transpose)",
          attrs=(AttrSpec("perm", AttrKind.INTS, None,
                          "a permutation of 0..rank-1; absent: the axes reversed"),),
          dtypes="any", extra={"operands": ("a",)},
          vjp=adj.transpose_vjp,
          strings=True),
    OpDef("broadcast_to", 162, Family.MOVEMENT, (1, 1), broadcast_to_rule, broadcast_to_ref,
          "r := a stretched to `shape` by NumPy broadcasting (a's dims align to the right and "
          "each is 1 or equal to the target's); traps when a size does not fit" + SHAPE_NOTE,
          attrs=(AttrSpec("shape", AttrKind.SHAPE, doc="the result shape: sizes or dim names"),),
          dtypes="any", extra={"operands": ("a",)},
          vjp=adj.broadcast_vjp,
          strings=True),
    OpDef("expand_dims", 163, Family.MOVEMENT, (1, 1), expand_dims_rule, expand_dims_ref,
          "r := a with a size-1 dim inserted at each of `axes`, which index r's dims (NumPy "
          "expand_dims)",
          attrs=(AttrSpec("axes", AttrKind.INTS, doc="positions in the result, may be negative"),),
          dtypes="any", extra={"operands": ("a",)},
          vjp=adj.expand_dims_vjp,
          strings=True),
    OpDef("squeeze", 164, Family.MOVEMENT, (1, 1), squeeze_rule, squeeze_ref,
          "r := a without the size-1 dims at `axes`; absent: without every dim of size 1, and "
          "a's shape must then be static (a named or unknown dim is removed only when listed, "
          "and traps unless it is 1)",
          attrs=(AttrSpec("axes", AttrKind.INTS, None, "the dims to remove; absent: all size-1 "
                          "dims of a static shape"),),
          dtypes="any", extra={"operands": ("a",)},
          vjp=adj.squeeze_vjp,
          strings=True),
    OpDef("concat", 165, Family.MOVEMENT, (1, None), concat_rule, concat_ref,
          "r := the operands joined along `axis`; they share one dtype and rank, and all other "
          "dims must agree (traps when named or unknown dims differ at run time)",
          attrs=(AttrSpec("axis", AttrKind.INT, doc="the axis to join along, may be negative"),),
          dtypes="any, all operands of one dtype", extra={"operands": ("a", "b", "...")},
          vjp=adj.concat_vjp,
          strings=True),
    OpDef("slice", 166, Family.MOVEMENT, (1, 1), slice_rule, slice_ref,
          "r := a[starts:ends:steps] on `axes` (ONNX Slice): negative starts and ends count "
          "from the back, then clamp into the axis; a negative step walks backward; an empty "
          "range gives size 0",
          attrs=(AttrSpec("starts", AttrKind.INTS, doc="first index per sliced axis"),
                 AttrSpec("ends", AttrKind.INTS, doc="end index (exclusive) per sliced axis"),
                 AttrSpec("axes", AttrKind.INTS, None, "the sliced axes; absent: 0, 1, ..."),
                 AttrSpec("steps", AttrKind.INTS, None, "step per sliced axis, not 0; absent: "
                          "all 1")),
          dtypes="any", extra={"operands": ("a",)},
          vjp=adj.slice_vjp,
          strings=True),
    OpDef("gather", 167, Family.MOVEMENT, (2, 2), gather_rule, gather_ref,
          "r := a's slices along `axis` picked by `indices` (ONNX Gather, np.take): r's shape "
          "is a.shape[:axis] + indices.shape + a.shape[axis+1:]; a negative index counts from "
          "the back once; an index outside [-size, size) traps",
          attrs=(AttrSpec("axis", AttrKind.INT, 0, "the axis indexed, may be negative"),),
          dtypes="a: any; indices: i32 or i64",
          extra={"operands": ("a", "indices"), "immediates": {1: "i64"}},
          vjp=adj.gather_vjp,
          strings=True),
    OpDef("pad", 168, Family.MOVEMENT, (1, 1), pad_rule, pad_ref,
          "r := a with `value` added before and after each axis (constant mode); pads are in "
          "ONNX order [x1_begin, x2_begin, ..., x1_end, x2_end, ...]; a negative pad crops; "
          "`value` is converted to a's dtype as `cast` would (integers truncate; for an integer "
          "dtype it must be finite and truncate into its range)",
          attrs=(AttrSpec("pads", AttrKind.INTS, doc="2 * rank counts: all begins, then all "
                          "ends"),
                 AttrSpec("value", AttrKind.FLOAT, 0.0, "the fill value")),
          dtypes="any", extra={"operands": ("a",)},
          vjp=adj.pad_vjp),
    OpDef("shape_of", 169, Family.MISC, (1, 1), shape_of_rule,
          lambda attrs, x: np.array(x.shape, dtype=np.int64),
          "r := the sizes of a's dims as i64[rank]", dtypes="any", extra={"operands": ("a",)},
          vjp=NO_GRADIENT,
          strings=True),
    OpDef("iota", 170, Family.MISC, (0, 0), iota_rule, iota_ref,
          "r := a tensor of `shape` whose element at index (i0, i1, ...) is i_axis, i.e. "
          "0 .. n-1 along `axis`, repeated across the other axes; integer dtypes too small for "
          "n wrap" + SHAPE_NOTE,
          attrs=(AttrSpec("shape", AttrKind.SHAPE, doc="the result shape: sizes or dim names"),
                 AttrSpec("dtype", AttrKind.DTYPE, I64, "the result dtype (numeric)"),
                 AttrSpec("axis", AttrKind.INT, 0, "the axis that counts up")),
          dtypes="none (no operands)", extra={"operands": ()},
          vjp=NO_GRADIENT),
]
