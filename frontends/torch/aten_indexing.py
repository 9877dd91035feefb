"""Core ATen indexing, scattering and ordering ops: gather / scatter (all reductions),
index_select, index_put (`x[idx] = v`, `x[mask] = v`), copy and slice_scatter (what `x[:, 1] = v`
becomes), sort / argsort / topk / median / kthvalue, nonzero, masked_select, diagonal,
bucketize, embedding_bag and grid_sample."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from frontends.base.values import Value, known
from isa.dtypes import DType

from .aten import Lowerer, _axis, _same_shape, _used_outputs, lowers
from .errors import TorchImportError


def _broadcast(lo: Lowerer, v: Value, shape: tuple) -> Value:
    if tuple(v.shape) == tuple(shape):
        return v
    if any(d is None for d in shape):
        raise TorchImportError(f"broadcasting {v.type} to a shape known only at run time "
                               f"({shape}) is not supported")
    if v.rank < len(shape):
        v = lo.emit("reshape", [v], shape=[1] * (len(shape) - v.rank)
                    + [d if isinstance(d, int) else -1 for d in v.shape])
    return lo.emit("broadcast_to", [v], shape=list(shape))


# -- gather and scatter --------------------------------------------------------------------

@lowers("aten.gather.default")
def _gather(lo: Lowerer, x: Value, dim: int, index: Value, sparse_grad: bool = False) -> Value:
    if x.rank == 0:
        return lo.emit("reshape", [lo.emit("gather_elements", [
            lo.emit("reshape", [x], shape=[1]), lo.emit("reshape", [index], shape=[1])],
            axis=0)], shape=[])
    return lo.emit("gather_elements", [x, index], axis=_axis(dim, x.rank))


_REDUCE = {"sum": "add", "add": "add", "prod": "mul", "multiply": "mul", "amax": "max",
           "amin": "min"}


def _identity(kind: str, dt: DType) -> Any:
    if kind in ("sum", "add", "mean"):
        return 0
    if kind in ("prod", "multiply"):
        return 1
    big = math.inf if dt.is_float else (np.iinfo(dt.np).max if dt != DType.BOOL else 1)
    small = -math.inf if dt.is_float else (np.iinfo(dt.np).min if dt != DType.BOOL else 0)
    return small if kind == "amax" else big


def _updates(lo: Lowerer, src: Any, index: Value, dt: DType) -> Value:
    """scatter's updates with the index's shape: a scalar filled out, a larger src cut down to
    the index's extent (torch reads only the elements the index addresses)."""
    if not isinstance(src, Value):
        zero = lo.cast(lo.emit("mul", [index, known(np.array(0, index.dtype.np))]), dt)
        return lo.emit("add", [zero, lo.tensor(src, dt)])
    src = lo.cast(src, dt)
    if src.shape == index.shape:
        return src
    if not all(isinstance(n, int) for n in index.shape):
        raise TorchImportError("scatter from a src larger than its symbolic index is not "
                               "supported")
    return lo.emit("slice", [src], starts=[0] * index.rank, ends=list(index.shape),
                   axes=list(range(index.rank)))


@lowers("aten.scatter.src", "aten.scatter.value", "aten.scatter.reduce",
        "aten.scatter.value_reduce", "aten.scatter_add.default")
def _scatter(lo: Lowerer, x: Value, dim: int, index: Value, src: Any,
             reduce: str | None = None) -> Value:
    if "scatter_add" in lo.node.target.__name__:
        reduce = "add"
    if reduce is not None and reduce not in _REDUCE:
        raise TorchImportError(f"scatter's reduce='{reduce}' is not supported")
    upd = _updates(lo, src, index, x.dtype)
    return lo.emit("scatter_elements", [x, index, upd], axis=_axis(dim, x.rank),
                   reduction=_REDUCE.get(reduce or "", "none"))


@lowers("aten.scatter_reduce.two")
def _scatter_reduce(lo: Lowerer, x: Value, dim: int, index: Value, src: Value, reduce: str,
                    include_self: bool = True) -> Value:
    """Every reduction of Tensor.scatter_reduce; without include_self the addressed elements
    start from the reduction's identity (mean: from the count of what lands there)."""
    if reduce not in ("sum", "prod", "amax", "amin", "mean"):
        raise TorchImportError(f"scatter_reduce's reduce='{reduce}' is not supported")
    ax = _axis(dim, x.rank)
    upd = _updates(lo, src, index, x.dtype)
    base = x
    if not include_self:
        fill = _updates(lo, _identity(reduce, x.dtype), index, x.dtype)
        base = lo.emit("scatter_elements", [x, index, fill], axis=ax, reduction="none")
    if reduce != "mean":
        return lo.emit("scatter_elements", [base, index, upd], axis=ax,
                       reduction=_REDUCE[reduce])
    total = lo.emit("scatter_elements", [base, index, upd], axis=ax, reduction="add")
    start = 1 if include_self else 0
    ones = _updates(lo, 1, index, x.dtype)
    zeros = lo.emit("mul", [x, lo.tensor(0, x.dtype)]) if x.dtype.is_float else \
        lo.emit("sub", [x, x])
    count = lo.emit("scatter_elements", [lo.emit("add", [zeros, lo.tensor(start, x.dtype)]),
                                         index, ones], axis=ax, reduction="add")
    safe = lo.emit("max", [count, lo.tensor(1, x.dtype)])
    mean = lo.emit("div", [total, safe])
    if not x.dtype.is_float:
        mean = lo.emit("floor", [lo.emit("div", [lo.cast(total, DType.F64),
                                                 lo.cast(safe, DType.F64)])])
        mean = lo.cast(mean, x.dtype)
    return lo.emit("select", [lo.emit("eq", [count, lo.tensor(0, x.dtype)]), x, mean])


@lowers("aten.index_select.default")
def _index_select(lo: Lowerer, x: Value, dim: int, index: Value) -> Value:
    if index.rank == 0:
        index = lo.emit("reshape", [index], shape=[1])
    if x.rank == 0:
        return x
    return _same_shape(lo, lo.emit("gather", [x, index], axis=_axis(dim, x.rank)))


def _wrapped(lo: Lowerer, idx: Value, n: Any) -> Value:
    """A negative index counted from the end of an axis of static size n, as torch does."""
    i = lo.cast(idx, DType.I64)
    if not isinstance(n, int):
        return i
    return lo.emit("select", [lo.emit("lt", [i, lo.tensor(0, DType.I64)]),
                              lo.emit("add", [i, lo.tensor(n, DType.I64)]), i])


@lowers("aten.index_put.default", "aten.index_put_.default", "aten._unsafe_index_put.default")
def _index_put(lo: Lowerer, x: Value, indices: list, values: Value,
               accumulate: bool = False) -> Value:
    """x[indices] = values (+= with accumulate): a boolean mask as a select (values one element)
    or through its true positions; integer index tensors as one scatter_nd over the indexed
    axes moved to the front, the broadcast index tensors stacked on a last axis."""
    values = lo.cast(values, x.dtype)
    used = [(a, v) for a, v in enumerate(indices) if v is not None]
    if not used:
        raise TorchImportError("index_put without an index tensor")
    if any(v.dtype == DType.BOOL for _, v in used):
        if len(used) != 1:
            raise TorchImportError("index_put with a boolean mask beside other indices is not "
                                   "supported")
        return _mask_put(lo, x, *used[0], values, accumulate)
    axes = [a for a, _ in used]
    others = [a for a in range(x.rank) if a not in axes]
    perm = axes + others
    moved = lo.emit("transpose", [x], perm=perm) if perm != list(range(x.rank)) else x
    idx = [_wrapped(lo, v, x.shape[a]) for a, v in used]
    bshape = np.broadcast_shapes(*[tuple(1 if not isinstance(d, int) else d for d in v.shape)
                                   for v in idx])
    if any(not isinstance(d, int) for v in idx for d in v.shape):
        if _one_index_of_values_shape(lo, axes):
            # x[i] = v, v already of i's shape then x's other dims (a flat scatter such as
            # torch's max_unpool2d decomposes to): one scatter_nd, nothing to broadcast
            r = lo.emit("scatter_nd", [moved, lo.emit("expand_dims", [idx[0]], axes=[idx[0].rank]),
                                       values], reduction="add" if accumulate else "none")
            if perm != list(range(x.rank)):
                r = lo.emit("transpose", [r], perm=[int(i) for i in np.argsort(perm)])
            return r
        raise TorchImportError("index_put with symbolic index shapes is not supported")
    idx = [lo.emit("expand_dims", [_broadcast(lo, v, bshape)], axes=[len(bshape)]) for v in idx]
    stacked = idx[0] if len(idx) == 1 else lo.emit("concat", idx, axis=len(bshape))
    rest = tuple(x.shape[a] for a in others)
    # torch lays x[indices] out with the broadcast dims first, except that adjacent indexed
    # axes keep their place (then the dims before them come first)
    adjacent = axes == list(range(axes[0], axes[0] + len(axes)))
    nb = len(bshape)
    if adjacent and axes[0] > 0:
        lead = axes[0]
        want = tuple(rest[:lead]) + tuple(bshape) + tuple(rest[lead:])
        v = _broadcast(lo, values, want)
        vperm = list(range(lead, lead + nb)) + list(range(lead)) + \
            list(range(lead + nb, len(want)))
        v = lo.emit("transpose", [v], perm=vperm)
    else:
        v = _broadcast(lo, values, tuple(bshape) + rest)
    r = lo.emit("scatter_nd", [moved, stacked, v], reduction="add" if accumulate else "none")
    if perm != list(range(x.rank)):
        r = lo.emit("transpose", [r], perm=[int(i) for i in np.argsort(perm)])
    return r


def _one_index_of_values_shape(lo: Lowerer, axes: list) -> bool:
    """index_put with one index tensor, at axis 0, whose values are exactly the index's shape
    then x's other dims (compared as torch's size expressions)."""
    x_n, idx_n, values_n = lo.node.args[0], lo.node.args[1], lo.node.args[2]
    if axes != [0] or not all(hasattr(n, "meta") and "val" in n.meta
                              for n in (x_n, values_n, idx_n[0])):
        return False
    def sizes(n):
        return [str(d) for d in n.meta["val"].shape]
    return sizes(values_n) == sizes(idx_n[0]) + sizes(x_n)[1:]


def _mask_put(lo: Lowerer, x: Value, ax: int, mask: Value, values: Value,
              accumulate: bool) -> Value:
    full = tuple(x.shape)
    m = mask
    if ax or m.rank < x.rank:      # the mask covers axes ax .. ax + rank - 1
        m = lo.emit("reshape", [m], shape=[1] * ax + [d if isinstance(d, int) else -1
                                                      for d in m.shape]
                    + [1] * (x.rank - ax - m.rank))
    if values.rank == 0 or all(d == 1 for d in values.shape):
        v = lo.emit("reshape", [values], shape=[]) if values.rank else values
        if accumulate:
            v = lo.emit("add", [x, v])
        return lo.emit("select", [m, v, x])
    raise TorchImportError(f"x[mask] = values with {values.type} values (one per true position) "
                           f"is not supported; a single value is ({full})")


@lowers("aten.copy.default", "aten.copy_.default")
def _copy_into(lo: Lowerer, x: Value, src: Value, non_blocking: bool = False) -> Value:
    """x's shape and dtype with src's values (broadcast): what an in-place write becomes."""
    src = lo.cast(src, x.dtype) if isinstance(src, Value) else lo.tensor(src, x.dtype)
    if tuple(src.shape) == tuple(x.shape):
        return src
    if all(d is not None for d in x.shape):
        return _broadcast(lo, src, tuple(x.shape))
    return lo.emit("broadcast_dyn", [src, lo.emit("shape_of", [x])])


@lowers("aten.slice_scatter.default")
def _slice_scatter(lo: Lowerer, x: Value, src: Value, dim: int = 0, start: Any = None,
                   end: Any = None, step: int = 1) -> Value:
    """x with x[start:end:step] along dim replaced by src: a concat of the parts around it for
    a step of 1, else a scatter of src's slices to their positions."""
    dim = _axis(dim, x.rank)
    n = x.shape[dim]
    start = 0 if start is None else start
    big = 1 << 62
    end = big if end is None else end
    if not isinstance(start, int) or not isinstance(end, int):
        raise TorchImportError("slice_scatter with symbolic bounds is not supported")
    src = lo.cast(src, x.dtype)
    if isinstance(n, int):
        start = max(0, min(n, start + n if start < 0 else start))
        end = max(start, min(n, end + n if end < 0 else end))
    elif start < 0 or end < 0:
        raise TorchImportError("slice_scatter from the end of a symbolic dim is not supported")
    if step == 1:
        parts = []
        if start > 0:
            parts.append(lo.emit("slice", [x], starts=[0], ends=[start], axes=[dim]))
        parts.append(src)
        if end < big and (not isinstance(n, int) or end < n):
            parts.append(lo.emit("slice", [x], starts=[end], ends=[big], axes=[dim]))
        return parts[0] if len(parts) == 1 else lo.emit("concat", parts, axis=dim)
    if not isinstance(n, int):
        raise TorchImportError("slice_scatter with a step over a symbolic dim is not supported")
    pos = np.arange(start, end, step, dtype=np.int64).reshape(-1, 1)
    perm = [dim] + [a for a in range(x.rank) if a != dim]
    moved = lo.emit("transpose", [x], perm=perm)
    r = lo.emit("scatter_nd", [moved, known(pos), lo.emit("transpose", [src], perm=perm)])
    return lo.emit("transpose", [r], perm=[int(i) for i in np.argsort(perm)])


# -- ordering ------------------------------------------------------------------------------

def _axis_size(lo: Lowerer, x: Value, ax: int) -> Any:
    """An axis's size as topk's k: the int, or a run-time scalar for a symbolic dim."""
    n = x.shape[ax]
    if isinstance(n, int):
        return known(np.array(n, np.int64))
    s = lo.emit("gather", [lo.emit("shape_of", [x]), known(np.array(ax, np.int64))], axis=0)
    return s


@lowers("aten.sort.default", "aten.sort.stable")
def _sort(lo: Lowerer, x: Value, *args: Any, stable: Any = None, dim: int = -1,
          descending: bool = False) -> tuple:
    """A stable sort (equal elements keep their order, as torch with stable=True) by topk of
    the whole axis."""
    if args:                # sort.default(self, dim, descending)
        dim = args[0]
        descending = args[1] if len(args) > 1 else descending
    if x.rank == 0:
        return x, known(np.array(0, np.int64))
    ax = _axis(dim, x.rank)
    values, idx = lo.emit("topk", [x, _axis_size(lo, x, ax)], n_results=2, axis=ax,
                          largest=bool(descending))
    return values, idx


@lowers("aten.topk.default")
def _topk(lo: Lowerer, x: Value, k: int, dim: int = -1, largest: bool = True,
          sorted: bool = True) -> tuple:  # noqa: A002
    if not isinstance(k, int):
        raise TorchImportError("topk with a symbolic k is not supported")
    ax = _axis(dim, x.rank)
    values, idx = lo.emit("topk", [x, known(np.array(k, np.int64))], n_results=2, axis=ax,
                          largest=bool(largest))
    return values, idx


def _kth_smallest(lo: Lowerer, x: Value, k: Any, dim: int, keepdim: bool) -> tuple:
    """The k-th smallest along dim (k an int or a run-time i64 scalar) and its index."""
    ax = _axis(dim, x.rank)
    kv = k if isinstance(k, Value) else known(np.array(k, np.int64))
    values, idx = lo.emit("topk", [x, kv], n_results=2, axis=ax, largest=False)
    pick = lo.emit("sub", [kv, known(np.array(1, np.int64))])
    v = lo.emit("gather", [values, pick], axis=ax)
    i = lo.emit("gather", [idx, pick], axis=ax)
    if keepdim:
        v = lo.emit("expand_dims", [v], axes=[ax])
        i = lo.emit("expand_dims", [i], axes=[ax])
    return v, i


@lowers("aten.kthvalue.default")
def _kthvalue(lo: Lowerer, x: Value, k: int, dim: int = -1, keepdim: bool = False) -> tuple:
    return _kth_smallest(lo, x, k, dim, keepdim)


@lowers("aten.median.dim", "aten.median.default", "aten.nanmedian.dim")
def _median(lo: Lowerer, x: Value, dim: Any = None, keepdim: bool = False) -> Any:
    """The lower of the two middle values (torch's median), with its index."""
    if "nanmedian" in lo.node.target.__name__:
        raise TorchImportError("nanmedian is not supported")
    whole = dim is None
    if whole:
        x, dim = lo.emit("reshape", [x], shape=[-1]), 0
    ax = _axis(dim, x.rank)
    n = x.shape[ax]
    if isinstance(n, int):
        k: Any = (n + 1) // 2
    else:        # (n + 1) // 2 at run time
        k = lo.emit("div", [lo.emit("add", [_axis_size(lo, x, ax), known(np.array(1, np.int64))]),
                            known(np.array(2, np.int64))])
    v, i = _kth_smallest(lo, x, k, dim, keepdim)
    return v if whole else (v, i)


@lowers("aten.nonzero.default")
def _nonzero(lo: Lowerer, x: Value) -> Value:
    """[count, rank] positions, row-major (dlvm's nonzero gives [rank, count])."""
    if x.rank == 0:
        x = lo.emit("reshape", [x], shape=[1])
        return lo.emit("transpose", [lo.emit("slice", [lo.emit("nonzero", [x])], starts=[0],
                                                ends=[0], axes=[0])], perm=[1, 0])
    return lo.emit("transpose", [lo.emit("nonzero", [x])], perm=[1, 0])


@lowers("aten.masked_select.default")
def _masked_select(lo: Lowerer, x: Value, mask: Value) -> Value:
    shape = np.broadcast_shapes(*[tuple(d if isinstance(d, int) else -1 for d in v.shape)
                                  for v in (x, mask)]) if all(
        isinstance(d, int) for v in (x, mask) for d in v.shape) else None
    if shape is None and tuple(x.shape) != tuple(mask.shape):
        raise TorchImportError("masked_select with symbolic shapes that differ is not supported")
    if shape is not None:
        x, mask = _broadcast(lo, x, shape), _broadcast(lo, lo.cast(mask, DType.BOOL), shape)
    flat = lo.emit("reshape", [x], shape=[-1])
    return lo.emit("compress", [flat, lo.emit("reshape", [mask], shape=[-1])], axis=0)


@lowers("aten.diagonal.default")
def _diagonal(lo: Lowerer, x: Value, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Value:
    """The diagonal of dims (dim1, dim2) as a last dim: one gather of the flattened pair."""
    d1, d2 = _axis(dim1, x.rank), _axis(dim2, x.rank)
    n, m = x.shape[d1], x.shape[d2]
    if not isinstance(n, int) or not isinstance(m, int):
        raise TorchImportError("the diagonal of symbolic dims is not supported")
    rows = np.arange(max(0, -offset), min(n, m - offset)) if offset < m else np.arange(0)
    flat_idx = (rows * m + rows + offset).astype(np.int64)
    others = [a for a in range(x.rank) if a not in (d1, d2)]
    moved = lo.emit("transpose", [x], perm=others + [d1, d2])
    lead = [x.shape[a] if isinstance(x.shape[a], int) else -1 for a in others]
    if lead.count(-1) > 1:
        raise TorchImportError("the diagonal beside more than one symbolic dim is not supported")
    flat = lo.emit("reshape", [moved], shape=lead + [n * m])
    return lo.emit("gather", [flat, known(flat_idx)], axis=len(others))


@lowers("aten.bucketize.Tensor", "aten.searchsorted.Tensor")
def _bucketize(lo: Lowerer, *args: Any, out_int32: bool = False, right: bool = False,
               side: Any = None, sorter: Any = None) -> Value:
    """The index of each value's bucket in sorted 1-D boundaries: how many boundaries lie below
    it (at or below it with right=True)."""
    if "searchsorted" in lo.node.target.__name__:
        bounds, x = args[0], args[1]
        right = right or side == "right"
        if sorter is not None or bounds.rank != 1:
            raise TorchImportError("searchsorted with a sorter or N-d boundaries is not supported")
    else:
        x, bounds = args[0], args[1]
    if not isinstance(x, Value):
        x = lo.tensor(x, bounds.dtype)
    below = lo.emit("le" if right else "lt", [bounds, lo.emit("expand_dims", [x],
                                                              axes=[x.rank])])
    out = DType.I32 if out_int32 else DType.I64
    return lo.emit("reduce_sum", [lo.cast(below, out)], axes=[x.rank], keepdims=False)


_GRID_MODES = {0: "linear", 1: "nearest", 2: "cubic"}
_GRID_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


@lowers("aten.grid_sampler_2d.default")
def _grid_sampler(lo: Lowerer, x: Value, grid: Value, mode: int, padding_mode: int,
                  align_corners: bool) -> Value:
    return lo.emit("grid_sample", [x, lo.cast(grid, x.dtype)], mode=_GRID_MODES[int(mode)],
                   padding_mode=_GRID_PADDING[int(padding_mode)],
                   align_corners=bool(align_corners))


@lowers("aten._embedding_bag.default", "aten._embedding_bag_forward_only.default")
def _embedding_bag(lo: Lowerer, w: Value, indices: Value, offsets: Value,
                   scale_grad_by_freq: bool = False, mode: int = 0, sparse: bool = False,
                   per_sample_weights: Value | None = None, include_last_offset: bool = False,
                   padding_idx: int = -1) -> tuple:
    """Sums, means or maxima of bags of embedding rows (nn.EmbeddingBag): bag b holds the
    indices from offsets[b] to the next offset; each index's bag is how many offsets are at or
    before its position, and one scatter_nd reduces the rows into their bags. An empty bag
    (and a max bag of padding only) is zeros, as torch."""
    if _used_outputs(lo) - {0}:
        raise TorchImportError("embedding_bag's offset2bag / bag_size / max_indices outputs are "
                               "not supported")
    n_idx = indices.shape[0]
    off = lo.cast(offsets, DType.I64)
    if include_last_offset:
        off = lo.emit("slice", [off], starts=[0], ends=[-1], axes=[0])
    bags = off.shape[0]
    pos = lo.emit("iota", [], shape=[n_idx], axis=0, dtype=DType.I64) if isinstance(n_idx, int) \
        else lo.emit("range", [known(np.array(0, np.int64)),
                               lo.emit("gather", [lo.emit("shape_of", [indices]),
                                                  known(np.array(0, np.int64))], axis=0),
                               known(np.array(1, np.int64))])
    started = lo.emit("le", [lo.emit("expand_dims", [off], axes=[0]),
                             lo.emit("expand_dims", [pos], axes=[1])])
    bag = lo.emit("sub", [lo.emit("reduce_sum", [lo.cast(started, DType.I64)], axes=[1],
                                  keepdims=True), known(np.array(1, np.int64))])

    def filled(value: float, *tail: int) -> Value:
        """[bags, *tail] of value (the number of bags may be known only at run time)."""
        if isinstance(bags, int):
            return known(np.full((bags, *tail), value, w.dtype.np))
        n = lo.emit("slice", [lo.emit("shape_of", [off])], starts=[0], ends=[1], axes=[0])
        shape = lo.emit("concat", [n, known(np.array(tail, np.int64))], axis=0) if tail else n
        return lo.emit("fill", [shape, known(np.array(value, w.dtype.np))])
    rows = lo.emit("gather", [w, indices], axis=0)
    keep = None
    if padding_idx is not None and padding_idx >= 0:
        keep = lo.emit("ne", [lo.cast(indices, DType.I64), known(np.array(padding_idx,
                                                                           np.int64))])
    if per_sample_weights is not None:
        rows = lo.emit("mul", [rows, lo.emit("expand_dims", [lo.cast(per_sample_weights,
                                                                     w.dtype)], axes=[1])])
    d = w.shape[1]
    kind = {0: "sum", 1: "mean", 2: "max"}[int(mode)]
    zero = filled(0.0, d)
    if kind == "max":
        if keep is not None:
            rows = lo.emit("select", [lo.emit("expand_dims", [keep], axes=[1]), rows,
                                      lo.tensor(-math.inf, w.dtype)])
        lowest = filled(-np.inf, d)
        r = lo.emit("scatter_nd", [lowest, bag, rows], reduction="max")
        return (lo.emit("select", [lo.emit("eq", [r, lo.tensor(-math.inf, w.dtype)]),
                                   lo.tensor(0, w.dtype), r]), None, None, None)
    if keep is not None:
        rows = lo.emit("mul", [rows, lo.emit("expand_dims", [lo.cast(keep, w.dtype)], axes=[1])])
    r = lo.emit("scatter_nd", [zero, bag, rows], reduction="add")
    if kind == "mean":
        ones = lo.cast(keep, w.dtype) if keep is not None else \
            lo.cast(lo.emit("ge", [pos, known(np.array(0, np.int64))]), w.dtype)
        count = lo.emit("scatter_nd", [filled(0.0), bag, ones],
                        reduction="add")
        r = lo.emit("div", [r, lo.emit("expand_dims", [lo.emit("max", [
            count, lo.tensor(1, w.dtype)])], axes=[1])])
    return (r, None, None, None)


@lowers("aten.cummax.default", "aten.cummin.default")
def _cummax(lo: Lowerer, x: Value, dim: int) -> tuple:
    """Running maxima (minima) and where each was reached: a log-step scan (Hillis-Steele),
    each step combining every position with the one `shift` before it; on ties the later index
    wins and a NaN, once seen, stays (as torch)."""
    big = "cummax" in lo.node.target.__name__
    ax = _axis(dim, x.rank) if x.rank else 0
    if x.rank == 0:
        return x, known(np.array(0, np.int64))
    n = x.shape[ax]
    if not isinstance(n, int):
        raise TorchImportError("cummax/cummin along a symbolic dim is not supported")
    if x.dtype == DType.BOOL:
        x = lo.cast(x, DType.U8)
    fill = _identity("amax" if big else "amin", x.dtype)
    shape = [d for d in x.shape]
    v = x
    i = lo.emit("iota", [], shape=shape, axis=ax, dtype=DType.I64) \
        if all(d is not None for d in shape) else None
    if i is None:
        raise TorchImportError("cummax/cummin of a shape known only at run time is not supported")
    shift = 1
    while shift < n:
        prev_v = _shifted(lo, v, ax, shift, fill)
        prev_i = _shifted(lo, i, ax, shift, -1)
        take = lo.emit("gt" if big else "lt", [prev_v, v])
        if x.dtype.is_float:     # a NaN before wins over a number here
            take = lo.emit("or", [take, lo.emit("and", [
                lo.emit("isnan", [prev_v]), lo.emit("not", [lo.emit("isnan", [v])])])])
        v = lo.emit("select", [take, prev_v, v])
        i = lo.emit("select", [take, prev_i, i])
        shift *= 2
    return lo.cast(v, lo.out_type(0).dtype), i


def _shifted(lo: Lowerer, v: Value, ax: int, shift: int, fill: Any) -> Value:
    """v moved `shift` places later along ax, the first places `fill`."""
    pads = [0] * (2 * v.rank)
    pads[ax] = shift
    padded = lo.emit("pad", [v], pads=pads, value=float(fill))
    return lo.emit("slice", [padded], starts=[0], ends=[v.shape[ax]], axes=[ax])
