"""Adjoint rules of the movement and value ops (see OpDef.vjp).

Movement ops only move elements, so their adjoints move the cotangent back: a reshape reshapes
it, a transpose applies the inverse permutation, a slice or pad pads or slices it, a gather
scatters it (adding where an index repeats). Shapes the verifier could not see are taken from
the operand at run time (`shape_of`), so named and unknown dims differentiate too.
"""
from __future__ import annotations

from ..errors import InvalidError
from .shapes import normalize_axes, normalize_axis


def _unsupported(what: str):
    return InvalidError(f"the adjoint of {what} is not supported in this version")


def reshape_vjp(g, attrs, xs, y, ct):
    return [g.reshape_like(ct, xs[0])] + [None] * (len(xs) - 1)


def broadcast_vjp(g, attrs, xs, y, ct):
    return [ct] + [None] * (len(xs) - 1)     # the transform sums ct back to the operand


def transpose_vjp(g, attrs, xs, y, ct):
    perm = attrs["perm"]
    rank = g.rank(xs[0])
    if perm is None:
        return [g.transpose(ct)]
    perm = [p % rank for p in perm]
    inverse = [0] * rank
    for i, p in enumerate(perm):
        inverse[p] = i
    return [g.transpose(ct, perm=inverse)]


def expand_dims_vjp(g, attrs, xs, y, ct):
    return [g.squeeze(ct, axes=list(attrs["axes"]))]


def squeeze_vjp(g, attrs, xs, y, ct):
    t = g.type(xs[0])
    if attrs["axes"] is None:
        axes = [i for i, d in enumerate(t.shape) if d == 1]
    else:
        axes = sorted(normalize_axes("squeeze", attrs["axes"], t.rank))
    return [g.expand_dims(ct, axes=axes) if axes else ct]


def concat_vjp(g, attrs, xs, y, ct):
    rank = g.rank(ct)
    axis = normalize_axis("concat", attrs["axis"], rank)
    sizes = [g.type(x).shape[axis] if not _is_imm(x) else None for x in xs]
    out = []
    if all(isinstance(s, int) for s in sizes):
        at = 0
        for s in sizes:
            out.append(g.slice(ct, starts=[at], ends=[at + s], axes=[axis]))
            at += s
        return out
    at = g.vector([0])
    axes, steps = g.vector([axis]), g.vector([1])
    for x in xs:
        end = g.add(at, g.gather(g.shape_of(x), g.vector([axis])))
        out.append(g.slice_dyn(ct, at, end, axes, steps))
        at = end
    return out


def _is_imm(x) -> bool:
    return type(x).__name__ == "Imm"


def _place(g, ct, axis: int, first: int, count: int, step: int, size: int):
    """ct (count entries along axis) put back at first, first + step, ... of a zero axis of
    `size` entries."""
    rank = g.rank(ct)
    if step < 0:      # walk the picked positions forward: reverse ct, start at the last one
        ct = g.slice(ct, starts=[-1], ends=[-(2**31)], axes=[axis], steps=[-1])
        first, step = first + (count - 1) * step, -step
    if step > 1:      # spread the entries step apart: append step-1 zeros to each, then trim
        spread = g.expand_dims(ct, axes=[axis + 1])
        pads = [0] * (2 * (rank + 1))
        pads[rank + 1 + axis + 1] = step - 1
        spread = g.pad(spread, pads=pads)
        shape = g.type(spread).shape
        merged = [d if isinstance(d, int) else -1 for d in shape[:axis]] + [count * step] + \
            [d if isinstance(d, int) else -1 for d in shape[axis + 2:]]
        if sum(1 for d in merged if d == -1) > 1:
            raise _unsupported("a strided slice of a tensor with several unknown dims")
        ct = g.slice(g.reshape(spread, shape=merged), starts=[0], ends=[(count - 1) * step + 1],
                     axes=[axis])
    pads = [0] * (2 * rank)
    pads[axis] = first
    pads[rank + axis] = size - (first + (count - 1) * step + 1)
    return g.pad(ct, pads=pads) if any(pads) else ct


def slice_vjp(g, attrs, xs, y, ct):
    from .movement import _TO_END, _slice_axes, slice_range
    (x,) = xs
    t = g.type(x)
    starts, ends, axes, steps = _slice_axes(attrs, t.rank)
    for start, end, axis, step in zip(starts, ends, axes, steps):
        size = t.shape[axis]
        if not isinstance(size, int):
            if start >= 0 and step == 1 and end >= _TO_END:
                pads = [0] * (2 * t.rank)
                pads[axis] = start
                ct = g.pad(ct, pads=pads) if start else ct
                continue
            raise _unsupported("a slice of an axis of unknown size (other than a[k:])")
        first, count = slice_range(start, end, step, size)
        if count == 0:
            return [g.zeros_like(x)]
        ct = _place(g, ct, axis, first, count, step, size)
    return [ct]


def pad_vjp(g, attrs, xs, y, ct):
    rank = g.rank(xs[0])
    pads = list(attrs["pads"])
    begins, ends = pads[:rank], pads[rank:]
    if any(p < 0 for p in pads):     # cropped parts get no cotangent: restore them as zeros
        ct = g.pad(ct, pads=[max(-p, 0) for p in pads])
    starts = [max(b, 0) for b in begins]
    stops = [-max(e, 0) if e > 0 else 2**31 - 1 for e in ends]
    if not any(starts) and all(e <= 0 for e in ends):
        return [ct]
    return [g.slice(ct, starts=starts, ends=stops, axes=list(range(rank)))]


def _index_in_range(g, idx, x, axis: int):
    """Indices with negative ones counted from the back (as gather reads them)."""
    size = g.type(x).shape[axis]
    if isinstance(size, int):
        return g.select(g.lt(idx, 0), g.add(idx, size), idx)
    n = g.cast(g.gather(g.shape_of(x), g.vector([axis])), to=g.dtype(idx))
    return g.select(g.lt(idx, 0), g.add(idx, n), idx)


def gather_vjp(g, attrs, xs, y, ct):
    """Scatter-add the cotangent rows back to the positions they were read from."""
    a, idx = xs
    ta, ti = g.type(a), g.type(idx)
    axis = normalize_axis("gather", attrs["axis"], ta.rank)
    idx = _index_in_range(g, idx, a, axis)
    if ti.rank == 0:            # one slice: its axis is back as size 1
        rows = g.expand_dims(ct, axes=[axis])
    elif ti.rank == 1:
        rows = ct
    else:                       # the index dims flattened into one
        flat = [d if isinstance(d, int) else -1 for d in ta.shape[:axis]] + [-1] + \
            [d if isinstance(d, int) else -1 for d in ta.shape[axis + 1:]]
        if sum(1 for d in flat if d == -1) > 1:
            raise _unsupported("gather with a multi-dim index from a tensor with unknown dims "
                               "beside the gathered axis")
        rows = g.reshape(ct, shape=flat)
    where = g.reshape(idx, shape=[1] * axis + [-1] + [1] * (ta.rank - axis - 1))
    where = g.broadcast_like(where, rows)
    return [g.scatter_elements(g.zeros_like(a), where, rows, axis=axis, reduction="add"), None]


def gather_elements_vjp(g, attrs, xs, y, ct):
    a, idx = xs
    axis = normalize_axis("gather_elements", attrs["axis"], g.rank(a))
    idx = _index_in_range(g, idx, a, axis)
    return [g.scatter_elements(g.zeros_like(a), idx, ct, axis=axis, reduction="add"), None]


def topk_vjp(g, attrs, xs, ys, cts):
    a = xs[0]
    values_ct = cts[0]
    if values_ct is None:
        return [None, None]
    axis = normalize_axis("topk", attrs["axis"], g.rank(a))
    return [g.scatter_elements(g.zeros_like(a), ys[1], values_ct, axis=axis, reduction="add"),
            None]


def cumsum_vjp(g, attrs, xs, y, ct):
    return [g.cumsum(ct, xs[1], exclusive=attrs["exclusive"], reverse=not attrs["reverse"]),
            None]


def mov_vjp(g, attrs, xs, y, ct):
    return [ct]


def fill_vjp(g, attrs, xs, y, ct):
    return [None, g.reduce_sum(ct)]


def _scatter_vjp(gather_op: str, scatter_op: str):
    """scatter_*: the cotangent of the updates is read back where they were written; the data's
    is the cotangent with overwritten positions cleared (reduction "none") or untouched
    ("add")."""
    def rule(g, attrs, xs, y, ct):
        a, idx, upd = xs
        red = attrs["reduction"]
        if red not in ("none", "add"):
            raise _unsupported(f"{scatter_op} with reduction {red}")
        axis = {"axis": attrs["axis"]} if "axis" in attrs else {}
        d_upd = g.emit(gather_op, [ct, idx], axis)
        d_a = ct if red == "add" else g.emit(scatter_op, [ct, idx, g.zeros_like(upd)], axis)
        return [d_a, None, d_upd]
    return rule


scatter_elements_vjp = _scatter_vjp("gather_elements", "scatter_elements")
scatter_nd_vjp = _scatter_vjp("gather_nd", "scatter_nd")


def gather_nd_vjp(g, attrs, xs, y, ct):
    a, idx = xs
    if attrs["batch_dims"]:
        raise _unsupported("gather_nd with batch_dims")
    return [g.scatter_nd(g.zeros_like(a), idx, ct, reduction="add"), None]


def cumprod_vjp(g, attrs, xs, y, ct):
    """d y_j / d x_i = y_j / x_i for the j whose product holds x_i: the cotangent-weighted
    products summed the other way along the axis, divided by x (an x of 0 gives NaN here, as
    reduce_prod's adjoint; see specs/autodiff.md)."""
    x, axis = xs
    s = g.cumsum(g.mul(ct, y), axis, exclusive=attrs["exclusive"], reverse=not attrs["reverse"])
    return [g.div(s, x), None]


def compress_vjp(g, attrs, xs, y, ct):
    """The kept slices' cotangents go back to their positions (a gather's adjoint at the
    positions where cond is true)."""
    a, cond = xs
    if attrs["axis"] is None:
        raise _unsupported("compress without an axis (of the flattened tensor)")
    where = g.reshape(g.nonzero(cond), shape=[-1])
    return [gather_vjp(g, {"axis": attrs["axis"]}, [a, where], y, ct)[0], None]
