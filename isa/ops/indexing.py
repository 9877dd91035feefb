"""Indexing ops beyond `gather`: element-wise gathers and scatters (ONNX GatherElements,
ScatterElements, GatherND, ScatterND) and the data-dependent selections (NonZero, Compress).

Indices may be negative (counted from the back of their axis, once); an index outside
[-size, size) traps, as `gather` does. Scatters return a new tensor (registers are values);
where several updates hit one element without a reduction the last one wins (ONNX leaves it
undefined). The selections' result sizes depend on the values, so those dims are unknown.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import BY_NAME
from ..errors import OpTypeError, Trap
from ..types import TensorType
from . import adjoints_movement as adj
from .opdef import NO_GRADIENT, AttrKind, AttrSpec, Family, OpDef
from .shapes import normalize_axis, same_dtype

I64 = BY_NAME["i64"]
REDUCTIONS = ("none", "add", "mul", "max", "min")


def _index_dtype(op: str, t: TensorType) -> None:
    if t.dtype.text not in ("i32", "i64"):
        raise OpTypeError(f"{op} indices must be i32 or i64, got {t.dtype}")


def _wrap(op: str, idx: np.ndarray, size: int | np.ndarray) -> np.ndarray:
    """Indices with negative ones counted from the back; out-of-range ones trap."""
    idx = idx.astype(np.int64)
    bad = (idx < -size) | (idx >= size)
    if np.any(bad):
        raise Trap(f"{op} index {int(idx[bad].flat[0])} is out of range")
    return np.where(idx < 0, idx + size, idx)


def _check_reduction(op: str, attrs) -> None:
    if attrs["reduction"] not in REDUCTIONS:
        raise OpTypeError(f"{op} reduction must be one of {', '.join(REDUCTIONS)}")


_UFUNC = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


# ---- gather_elements, scatter_elements -------------------------------------------------------

def _check_within(op: str, a: TensorType, idx: TensorType, axis: int) -> None:
    """Off `axis`, indices may not be larger than a (static dims; the reference traps on the
    rest), else NumPy fails with an IndexError at run time."""
    for d, (n, m) in enumerate(zip(idx.shape, a.shape)):
        if d != axis and isinstance(n, int) and isinstance(m, int) and n > m:
            raise OpTypeError(f"{op}: indices {idx} exceed {a} on axis {d}")


def gather_elements_rule(types: list[TensorType], attrs) -> list[TensorType]:
    a, idx = types
    _index_dtype("gather_elements", idx)
    if a.rank == 0 or idx.rank != a.rank:
        raise OpTypeError(f"gather_elements needs indices of a's rank, got {a} and {idx}")
    _check_within("gather_elements", a, idx, normalize_axis("gather_elements", attrs["axis"],
                                                            a.rank))
    return [a.with_shape(idx.shape)]


def gather_elements_ref(attrs, a: np.ndarray, idx: np.ndarray) -> np.ndarray:
    ax = attrs["axis"] % a.ndim
    for d in range(a.ndim):
        if d != ax and idx.shape[d] > a.shape[d]:
            raise Trap(f"gather_elements: indices {list(idx.shape)} exceed data {list(a.shape)}")
    i = _wrap("gather_elements", idx, a.shape[ax])
    return np.take_along_axis(a[tuple(slice(0, n) if d != ax else slice(None)
                                      for d, n in enumerate(idx.shape))], i, axis=ax)


def scatter_elements_rule(types: list[TensorType], attrs) -> list[TensorType]:
    a, idx, upd = types
    _index_dtype("scatter_elements", idx)
    same_dtype("scatter_elements", [a, upd])
    if a.rank == 0 or idx.rank != a.rank or upd.rank != a.rank:
        # rank 0 has no axis to index (as for gather_elements)
        raise OpTypeError(f"scatter_elements needs indices and updates of a's rank (1 or more), "
                          f"got {a}, {idx} and {upd}")
    _check_within("scatter_elements", a, idx, normalize_axis("scatter_elements", attrs["axis"],
                                                              a.rank))
    if any(isinstance(n, int) and isinstance(m, int) and n != m
           for n, m in zip(idx.shape, upd.shape)):
        raise OpTypeError(f"scatter_elements: indices {idx} and updates {upd} differ")
    _check_reduction("scatter_elements", attrs)
    return [a]


def scatter_elements_ref(attrs, a: np.ndarray, idx: np.ndarray, upd: np.ndarray) -> np.ndarray:
    if idx.shape != upd.shape:
        raise Trap(f"scatter_elements: indices {list(idx.shape)} and updates "
                   f"{list(upd.shape)} differ")
    ax = attrs["axis"] % a.ndim
    for d in range(a.ndim):
        if d != ax and idx.shape[d] > a.shape[d]:
            raise Trap(f"scatter_elements: indices {list(idx.shape)} exceed data "
                       f"{list(a.shape)}")
    i = _wrap("scatter_elements", idx, a.shape[ax])
    out = a.copy()
    coords = list(np.indices(idx.shape, sparse=False))
    coords[ax] = i
    where = tuple(c.reshape(-1) for c in coords)
    if attrs["reduction"] == "none":
        out[where] = upd.reshape(-1)
    else:
        _UFUNC[attrs["reduction"]].at(out, where, upd.reshape(-1))
    return out


# ---- gather_nd, scatter_nd -------------------------------------------------------------------

def gather_nd_rule(types: list[TensorType], attrs) -> list[TensorType]:
    a, idx = types
    _index_dtype("gather_nd", idx)
    b = attrs["batch_dims"]
    if idx.rank < 1 or not isinstance(idx.shape[-1], int):
        raise OpTypeError(f"gather_nd indices need a static last dim, got {idx}")
    k = idx.shape[-1]
    if b < 0 or b >= min(a.rank, idx.rank) or b + k > a.rank:
        raise OpTypeError(f"gather_nd: batch_dims {b} and index length {k} do not fit {a}")
    return [a.with_shape(tuple(idx.shape[:-1]) + tuple(a.shape[b + k:]))]


def gather_nd_ref(attrs, a: np.ndarray, idx: np.ndarray) -> np.ndarray:
    b, k = attrs["batch_dims"], idx.shape[-1]
    if a.shape[:b] != idx.shape[:b]:
        raise Trap(f"gather_nd: batch dims of {list(a.shape)} and {list(idx.shape)} differ")
    batch = int(np.prod(a.shape[:b], dtype=np.int64))
    data = a.reshape((batch,) + a.shape[b:])
    # the tuple count is explicit: reshape(.., -1, 0) cannot infer it when k is 0
    n = int(np.prod(idx.shape[b:-1], dtype=np.int64))
    ind = idx.reshape((batch, n, k))
    i = _wrap("gather_nd", ind, np.array(a.shape[b:b + k], np.int64))
    # an empty index tuple addresses the whole slice (ONNX, NumPy), once per tuple
    rows = [data[j][tuple(i[j, :, d] for d in range(k))] if k else
            np.repeat(data[j][np.newaxis], n, axis=0) for j in range(batch)]
    out = np.stack(rows) if rows else np.zeros((0,) + a.shape[b + k:], a.dtype)
    return out.reshape(idx.shape[:-1] + a.shape[b + k:])


def scatter_nd_rule(types: list[TensorType], attrs) -> list[TensorType]:
    a, idx, upd = types
    _index_dtype("scatter_nd", idx)
    same_dtype("scatter_nd", [a, upd])
    if idx.rank < 1 or not isinstance(idx.shape[-1], int) or idx.shape[-1] > a.rank:
        raise OpTypeError(f"scatter_nd indices need a static last dim up to a's rank, got {idx}")
    # updates are one slice of a per index tuple: shape indices[:-1] + a[k:], checked where known
    want = tuple(idx.shape[:-1]) + tuple(a.shape[idx.shape[-1]:])
    if upd.rank != len(want) or any(isinstance(u, int) and isinstance(w, int) and u != w
                                    for u, w in zip(upd.shape, want)):
        raise OpTypeError(f"scatter_nd updates {upd} do not fit indices {idx} into {a}")
    _check_reduction("scatter_nd", attrs)
    return [a]


def scatter_nd_ref(attrs, a: np.ndarray, idx: np.ndarray, upd: np.ndarray) -> np.ndarray:
    k = idx.shape[-1]
    # shapes compared before any reshape (named dims may disagree at run time), and the tuple
    # count is explicit: reshape(-1, 0) cannot infer it when k is 0
    if upd.shape != idx.shape[:-1] + a.shape[k:]:
        raise Trap(f"scatter_nd: updates {list(upd.shape)} do not fit indices {list(idx.shape)} "
                   f"into {list(a.shape)}")
    n = int(np.prod(idx.shape[:-1], dtype=np.int64))
    ind = _wrap("scatter_nd", idx.reshape(n, k), np.array(a.shape[:k], np.int64))
    u = upd.reshape((n,) + a.shape[k:])
    out = np.array(a)     # an array even for a 0-d operand (a NumPy scalar has no item assignment)
    red = attrs["reduction"]
    if k == 0 or n == 0:
        for j in range(n):            # in order: the last of repeated indices wins
            at = tuple(int(v) for v in ind[j])
            out[at] = u[j] if red == "none" else _UFUNC[red](out[at], u[j])
        return out
    # all at once, with the loop's meaning (a Python loop per index was 91% of a SegNet whose
    # MaxUnpool the dynamo exporter writes as one ScatterND index per element): the last of
    # repeated indices wins; a reduction combines them in order (ufunc.at is unbuffered)
    at = tuple(ind.T)
    if red == "none":
        flat = np.ravel_multi_index(at, a.shape[:k])
        _, last_rev = np.unique(flat[::-1], return_index=True)
        keep = n - 1 - last_rev
        out[tuple(c[keep] for c in at)] = u[keep]
    else:
        _UFUNC[red].at(out, at, u)
    return out


# ---- nonzero, compress -----------------------------------------------------------------------

def nonzero_rule(types: list[TensorType], attrs) -> list[TensorType]:
    (a,) = types
    return [TensorType(I64, (max(a.rank, 1), None))]


def nonzero_ref(attrs, a: np.ndarray) -> np.ndarray:
    return np.array(np.nonzero(np.atleast_1d(a)), dtype=np.int64).reshape(max(a.ndim, 1), -1)


def compress_rule(types: list[TensorType], attrs) -> list[TensorType]:
    a, cond = types
    if not cond.dtype.is_bool or cond.rank != 1:
        raise OpTypeError(f"compress condition must be a 1-D bool vector, got {cond}")
    if attrs["axis"] is None:
        return [a.with_shape((None,))]
    ax = normalize_axis("compress", attrs["axis"], a.rank)
    return [a.with_shape(tuple(None if d == ax else n for d, n in enumerate(a.shape)))]


def compress_ref(attrs, a: np.ndarray, cond: np.ndarray) -> np.ndarray:
    ax = attrs["axis"]
    size = a.size if ax is None else a.shape[ax % a.ndim]
    if cond.size > size:
        raise Trap(f"compress: condition of length {cond.size} is longer than {size}")
    return np.compress(cond, a, axis=ax)


OPS = [
    OpDef("gather_elements", 182, Family.MOVEMENT, (2, 2), gather_elements_rule,
          gather_elements_ref,
          "r[i0, .., ik, ..] := a[i0, .., indices[i0, .., ik, ..], ..] with the index on `axis` "
          "(ONNX GatherElements, np.take_along_axis); r has indices' shape",
          attrs=(AttrSpec("axis", AttrKind.INT, 0, "the axis indexed"),),
          dtypes="a: any; indices: i32 or i64", extra={"operands": ("a", "indices")},
          vjp=adj.gather_elements_vjp,
          strings=True),
    OpDef("scatter_elements", 183, Family.MOVEMENT, (3, 3), scatter_elements_rule,
          scatter_elements_ref,
          "r := a with r[.., indices[i, ..], ..] := updates[i, ..] on `axis` (ONNX "
          "ScatterElements); reduction add/mul/max/min combines with the old value instead",
          attrs=(AttrSpec("axis", AttrKind.INT, 0, "the axis indexed"),
                 AttrSpec("reduction", AttrKind.STR, "none", "none, add, mul, max or min")),
          dtypes="a, updates: any, one dtype; indices: i32 or i64",
          extra={"operands": ("a", "indices", "updates")},
          vjp=adj.scatter_elements_vjp),
    OpDef("gather_nd", 184, Family.MOVEMENT, (2, 2), gather_nd_rule, gather_nd_ref,
          "r := the slices of a addressed by the last axis of indices (ONNX GatherND), after "
          "`batch_dims` leading dims shared by a and indices",
          attrs=(AttrSpec("batch_dims", AttrKind.INT, 0, "leading dims a and indices share"),),
          dtypes="a: any; indices: i32 or i64", extra={"operands": ("a", "indices")},
          vjp=adj.gather_nd_vjp,
          strings=True),
    OpDef("scatter_nd", 185, Family.MOVEMENT, (3, 3), scatter_nd_rule, scatter_nd_ref,
          "r := a with the slices addressed by the last axis of indices set to updates (ONNX "
          "ScatterND), in index order; reduction add/mul/max/min combines instead",
          attrs=(AttrSpec("reduction", AttrKind.STR, "none", "none, add, mul, max or min"),),
          dtypes="a, updates: any, one dtype; indices: i32 or i64",
          extra={"operands": ("a", "indices", "updates")},
          vjp=adj.scatter_nd_vjp),
    OpDef("nonzero", 186, Family.MOVEMENT, (1, 1), nonzero_rule, nonzero_ref,
          "r := the indices of a's non-zero elements as i64[rank, count], in row-major order "
          "(ONNX NonZero; a scalar counts as rank 1); count is unknown before the run",
          dtypes="any", extra={"operands": ("a",)},
          vjp=NO_GRADIENT),
    OpDef("compress", 187, Family.MOVEMENT, (2, 2), compress_rule, compress_ref,
          "r := the slices of a along `axis` whose entry in the bool vector cond is true "
          "(np.compress; absent axis: of the flattened a); a cond longer than the axis traps",
          attrs=(AttrSpec("axis", AttrKind.INT, None, "the axis selected; absent: flatten"),),
          dtypes="a: any; cond: bool", extra={"operands": ("a", "cond")},
          vjp=adj.compress_vjp,
          strings=True),
]


# ---- bitcast ---------------------------------------------------------------------------------

def bitcast_rule(types: list[TensorType], attrs) -> list[TensorType]:
    (a,) = types
    to = attrs["to"]
    if to.itemsize != a.dtype.itemsize:
        raise OpTypeError(f"bitcast keeps the element size: {a.dtype} ({a.dtype.itemsize} bytes) "
                          f"to {to} ({to.itemsize} bytes)")
    if to.is_bool:
        raise OpTypeError("bitcast to bool is not defined (only the bytes 0 and 1 are bools)")
    return [a.with_dtype(to)]


def bitcast_ref(attrs, a: np.ndarray) -> np.ndarray:
    # np.require keeps a 0-d array 0-d (ascontiguousarray would make it 1-d)
    return np.require(a, requirements="C").view(attrs["to"].np).copy()


OPS.append(
    OpDef("bitcast", 194, Family.MISC, (1, 1), bitcast_rule, bitcast_ref,
          "r := the bytes of a read as `to`, an element type of the same size (ONNX BitCast); "
          "no value conversion (bool reads as the byte 0 or 1)",
          attrs=(AttrSpec("to", AttrKind.DTYPE, doc="the result dtype, same element size"),),
          dtypes="any; to: not bool", extra={"operands": ("a",)},
          vjp=NO_GRADIENT))
