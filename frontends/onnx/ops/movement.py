"""ONNX ops that move elements: Transpose, Concat, Split, Slice, Gather, Tile, Pad,
Trilu, OneHot, DepthToSpace, SpaceToDepth, CumSum, CumProd.

Where dlvm has no op, the decomposition uses sizes known at import (slices and concats for Tile
and the non-constant Pad modes), and the import fails with the
reason when a needed size is dynamic. Shape-like operands computed at run time (Slice's starts,
Tile's repeats, Pad's pads, Split's sizes, Trilu's k, OneHot's depth, CumSum's axis) map to the
dynamic rows (see dynshape.py).
"""
from __future__ import annotations

import numpy as np

from isa.dtypes import BY_NAME
from isa.types import Dim

from ..registry import NodeCtx, onnx_op
from ..values import Value, known
from .common import cast, norm_axis, scalar, where
from .dynshape import is_dynamic, pad_dyn, scalar_of, slice_dyn, split_dyn, vector
from .shape import reshape, shape_entries, sym_value

I64 = BY_NAME["i64"]


@onnx_op("Transpose", since=13)
def transpose(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    perm = ctx.attr("perm", None)
    return [ctx.e.emit("transpose", [x], ctx.node.output[0],
                       perm=None if perm is None else list(perm))]


@onnx_op("Concat", since=13)
def concat(ctx: NodeCtx) -> list[Value]:
    vals = [v for v in ctx.inputs if v is not None]
    axis = norm_axis(int(ctx.attr("axis")), vals[0].rank)
    # drop empty pieces: they add nothing, and a known empty piece would otherwise become a const
    nonempty = [v for v in vals if not (isinstance(v.shape[axis], int) and v.shape[axis] == 0)]
    if not nonempty:
        nonempty = vals[:1]
    out = nonempty[0] if len(nonempty) == 1 else \
        ctx.e.emit("concat", nonempty, ctx.node.output[0], axis=axis)
    if vals[0].rank == 1 and any(v.sym is not None for v in vals) and \
            all(v.sym is not None or v.known for v in vals):
        entries: list[Dim] = []
        for v in vals:
            entries += list(v.sym) if v.sym is not None else [int(x) for x in v.const]
        out = sym_value(ctx.e, entries, out, out.dtype)
    return [out]


def slice_axis(e, x: Value, axis: int, start: int, end: int, step: int = 1) -> Value:
    return e.emit("slice", [x], starts=[start], ends=[end], axes=[axis], steps=[step])


def _slice_to_named(ctx: NodeCtx, x: Value) -> Value:
    """A Slice whose bounds are named dims (`position_ids[:, :seq]` of a dynamic sequence):
    the run-time slice, whose result keeps the name where the slice is [0, name) by step 1."""
    from isa.types import TensorType

    def entries(i: int, default: list) -> list:
        v = ctx.input(i)
        if v is None:
            return default
        if v.const is not None:
            return [int(a) for a in v.const.reshape(-1)]
        return [ctx.e.derived.dim(d) for d in v.sym]
    starts = entries(1, [])
    ends = entries(2, [])
    axes = [norm_axis(a, x.rank) if isinstance(a, int) else None
            for a in entries(3, list(range(len(starts))))]
    steps = entries(4, [1] * len(starts))
    out = slice_dyn(ctx, x)
    shape = list(out.shape)
    for a, st, en, sp in zip(axes, starts, ends, steps):
        if a is not None and st == 0 and sp == 1 and isinstance(en, str):
            shape[a] = en
    if shape != list(out.shape):
        out = Value(TensorType(out.dtype, tuple(shape)), out.operand)
    return out


@onnx_op("Slice", since=13)
def slice_(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    if any(is_dynamic(ctx.input(i)) for i in range(1, 5)):
        return [slice_dyn(ctx, x)]
    if any(ctx.input(i) is not None and ctx.input(i).const is None for i in range(1, 5)):
        return [_slice_to_named(ctx, x)]
    starts = ctx.const_ints(1, "starts")
    ends = ctx.const_ints(2, "ends")
    axes = ctx.const_ints(3, "axes")
    steps = ctx.const_ints(4, "steps")
    if axes is not None:
        axes = [norm_axis(a, x.rank) for a in axes]
    out = ctx.e.emit("slice", [x], ctx.node.output[0], starts=starts, ends=ends, axes=axes,
                     steps=steps)
    if x.sym is not None and x.rank == 1:
        st = 1 if steps is None else steps[0]
        out = sym_value(ctx.e, list(x.sym)[slice(starts[0], ends[0], st)], out)
    return [out]


@onnx_op("Split", since=13)
def split(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    axis = norm_axis(int(ctx.attr("axis", 0)), x.rank)
    n_out = len(ctx.node.output)
    if is_dynamic(ctx.input(1)):
        return split_dyn(ctx, x, axis)
    sizes = ctx.const_ints(1, "split")
    num = ctx.attr("num_outputs", None) if ctx.version >= 18 else None
    dim = x.shape[axis]
    if sizes is None:
        if not isinstance(dim, int):
            raise ctx.fail("an even split needs a static size on the split axis")
        n = num or n_out
        chunk = -(-dim // n)
        sizes = [min(chunk, dim - i * chunk) for i in range(n)]
    outs, pos = [], 0
    for k, s in enumerate(sizes):
        outs.append(ctx.e.emit("slice", [x], ctx.node.output[k] if k < n_out else "split",
                               starts=[pos], ends=[pos + s], axes=[axis]))
        pos += s
    return outs


@onnx_op("Gather", since=13)
def gather(ctx: NodeCtx) -> list[Value]:
    x, idx = ctx.req(0), ctx.req(1)
    axis = norm_axis(int(ctx.attr("axis", 0)), x.rank)
    out = ctx.e.emit("gather", [x, idx], ctx.node.output[0], axis=axis)
    if x.sym is not None and idx.known:
        picked = [x.sym[int(i)] for i in idx.const.reshape(-1)]
        out = sym_value(ctx.e, picked, out, out.dtype, shape=idx.const.shape)
    return [out]


@onnx_op("Tile", since=13)
def tile(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    if is_dynamic(ctx.input(1)):
        return [ctx.e.emit("tile_dyn", [x, vector(ctx, 1, "repeats")], ctx.node.output[0])]
    reps = shape_entries(ctx, 1, "repeats")
    if reps is None:
        raise ctx.fail("repeats (input 1) is missing")
    if len(reps) != x.rank:
        raise ctx.fail(f"repeats has {len(reps)} entries for an input of type {x.type}; "
                       f"one per dim expected")
    src = x
    for axis, r in enumerate(reps):
        if isinstance(r, int) and r > 1 and isinstance(x.shape[axis], str):
            # a named dim repeated: batch_x2, where concat's rule knows only sizes
            dims = list(x.shape)
            dims[axis] = ctx.e.derived.dim(ctx.e.derived.product([r, dims[axis]]))
            x = ctx.e.emit("concat", [x] * r, "tile", axis=axis,
                           result_type=x.type.with_shape(tuple(dims)))
        elif isinstance(r, int) and r != 1:
            x = ctx.e.emit("concat", [x] * r, "tile", axis=axis) if r > 0 else \
                slice_axis(ctx.e, x, axis, 0, 0)
    if all(isinstance(r, int) for r in reps):
        return [x]
    return [_tile_by_sizes(ctx, src, x, reps)]


def _tile_by_sizes(ctx: NodeCtx, src: Value, x: Value, reps: list[Dim]) -> Value:
    """The axes of x repeated by counts known as named dims or expressions of them (a learned
    constant repeated over the batch: repeats [batch, 1]), the static counts already applied:
    a broadcast, where a dim of 1 grows to the count; another dim d gets a new axis of 1 before
    it that grows, then merges into count * d. The result's type keeps the names."""
    from isa.types import TensorType
    e = ctx.e
    k = len(reps)
    # per dim of the broadcast: which repeats entry it grows to (k: none, stays), and its dim
    pick: list[int] = []
    grown: list[Dim] = []
    new_axes: list[int] = []
    merged: list[Dim] = []
    for i, (d, r) in enumerate(zip(x.shape, reps)):
        if isinstance(r, int):
            pick.append(k)
            grown.append(d)
            merged.append(d)
        elif d == 1:
            pick.append(i)
            grown.append(r)
            merged.append(r)
        else:
            new_axes.append(len(pick))
            pick += [i, k]
            grown += [r, d]
            prod = e.derived.product([r, d])
            merged.append(None if prod is None else e.derived.dim(prod))
    counts = vector(ctx, 1, "repeats")
    padded = e.emit("concat", [counts, known(np.ones(1, np.int64))], "reps", axis=0)
    target = e.emit("gather", [padded, known(np.array(pick, np.int64))], "reps", axis=0)
    y = e.emit("expand_dims", [x], "tile", axes=new_axes) if new_axes else x
    y = e.emit("broadcast_dyn", [y, target], "tile",
               result_type=TensorType(x.dtype, tuple(grown)))
    if not new_axes:
        return y
    return reshape(ctx, y, merged, ctx.node.output[0],
                   lambda: e.emit("mul", [e.emit("shape_of", [src], "shape"), counts], "shape"))


def _pad_axis(ctx: NodeCtx, x: Value, axis: int, before: int, after: int, mode: str) -> Value:
    e = ctx.e
    n = x.shape[axis]
    parts = []
    if mode == "edge":
        parts = [slice_axis(e, x, axis, 0, 1)] * before + [x] + [slice_axis(e, x, axis, -1, n + 1)] * after
    elif mode == "reflect":
        if before:
            parts.append(slice_axis(e, x, axis, before, 0, -1))
        parts.append(x)
        if after:
            parts.append(slice_axis(e, x, axis, -2, -2 - after, -1))
    elif mode == "wrap":
        if before:
            parts.append(slice_axis(e, x, axis, -before, 1 << 62))
        parts.append(x)
        if after:
            parts.append(slice_axis(e, x, axis, 0, after))
    else:
        raise ctx.fail(f"pad mode '{mode}' is not supported")
    return parts[0] if len(parts) == 1 else e.emit("concat", parts, "pad", axis=axis)


@onnx_op("Pad", since=13)
def pad(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    mode = ctx.attr("mode", "constant")
    if is_dynamic(ctx.input(1)) or is_dynamic(ctx.input(2)):
        return [pad_dyn(ctx, x, mode)]
    pads = ctx.const_ints(1, "pads")
    cval = ctx.const_input(2, "constant_value")
    axes = ctx.const_ints(3, "axes") if ctx.version >= 18 else None
    r = x.rank
    full = [0] * (2 * r)
    axes = list(range(r)) if axes is None else [norm_axis(a, r) for a in axes]
    k = len(axes)
    for j, a in enumerate(axes):
        full[a], full[a + r] = pads[j], pads[j + k]
    if mode == "constant":
        value = 0.0 if cval is None or cval.size == 0 else cval.reshape(-1)[0].item()
        if isinstance(value, bool):
            value = float(value)
        return [ctx.e.emit("pad", [x], ctx.node.output[0], pads=full, value=value)]
    if any(p < 0 for p in full):
        # crop first (a constant pad with negative amounts), then pad the rest
        x = ctx.e.emit("pad", [x], pads=[min(p, 0) for p in full])
        full = [max(p, 0) for p in full]
    for a in range(r):
        if full[a] or full[a + r]:
            x = _pad_axis(ctx, x, a, full[a], full[a + r], mode)
    return [x]


@onnx_op("Trilu")
def trilu(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    upper = bool(ctx.attr("upper", 1))
    n, m = x.shape[-2], x.shape[-1]
    if x.rank < 2:
        raise ctx.fail(f"Trilu needs at least 2 dims, got {x.type}")
    static = isinstance(n, int) and isinstance(m, int)
    if is_dynamic(ctx.input(1)) or not static:
        # keep (i, j) where j - i >= k (upper) or j - i <= k (lower); k or the sizes (a causal
        # mask over a dynamic sequence) known at run time
        e = ctx.e
        if is_dynamic(ctx.input(1)):
            k = cast(e, scalar_of(ctx, 1, "k"), I64)
        else:
            ks = ctx.const_ints(1, "k")
            k = known(np.array(0 if ks is None else ks[0], np.int64))
        if static:
            diff = known(np.arange(m)[None, :] - np.arange(n)[:, None])
        else:
            shape = e.emit("shape_of", [x], "shape")
            zero, one = known(np.array(0, np.int64)), known(np.array(1, np.int64))

            def steps(axis: int) -> Value:
                size = e.emit("gather", [shape, known(np.array(axis % x.rank, np.int64))],
                              axis=0)
                return e.emit("range", [zero, size, one], "idx")
            rows = e.emit("expand_dims", [steps(-2)], axes=[1])
            cols = e.emit("expand_dims", [steps(-1)], axes=[0])
            diff = e.emit("sub", [cols, rows], "diff")
        keep = e.emit("ge" if upper else "le", [diff, k])
        return [where(e, keep, x, scalar(0, x))]
    k = ctx.const_ints(1, "k")
    k = 0 if k is None else k[0]
    ones = np.ones((n, m), dtype=bool)
    mask = np.triu(ones, k) if upper else np.tril(ones, k)
    return [where(ctx.e, known(mask), x, scalar(0, x))]


@onnx_op("OneHot")
def one_hot(ctx: NodeCtx) -> list[Value]:
    idx, values, e = ctx.req(0), ctx.req(2), ctx.e
    axis = norm_axis(int(ctx.attr("axis", -1)), idx.rank + 1)
    shape: list = [1] * (idx.rank + 1)
    if is_dynamic(ctx.input(1)):
        # depth at run time: the classes are range(0, depth), reshaped onto the new axis
        d = cast(e, scalar_of(ctx, 1, "depth"), I64)
        classes = e.emit("range", [known(np.array(0, np.int64)), d, known(np.array(1, np.int64))])
        shape[axis] = -1
        classes = e.emit("reshape", [classes], shape=shape)
        depth: Value | int = d
    else:
        depth = int(np.asarray(ctx.const_input(1, "depth")).reshape(-1)[0])
        shape[axis] = depth
        classes = known(np.arange(depth, dtype=np.int64).reshape(shape))
    i = cast(e, idx, I64)
    shift = depth if isinstance(depth, Value) else scalar(depth, i)
    i = where(e, e.emit("lt", [i, scalar(0, i)]), e.emit("add", [i, shift]), i)
    i = e.emit("expand_dims", [i], axes=[axis])
    hit = e.emit("eq", [i, classes])
    off = e.emit("reshape", [e.emit("slice", [values], starts=[0], ends=[1])], shape=[])
    on = e.emit("reshape", [e.emit("slice", [values], starts=[1], ends=[2])], shape=[])
    return [where(e, hit, on, off)]


def _depth_space_named_batch(ctx: NodeCtx, x: Value, b: int) -> Value:
    """DepthToSpace / SpaceToDepth of a batch named at import: the same reshapes with the
    batch as the one -1 (and its name kept in the result type)."""
    from isa.types import TensorType
    e = ctx.e
    n, c, h, w = x.shape

    def rs(v: Value, dims: list[int], hint: str = "t") -> Value:
        return e.emit("reshape", [v], hint, shape=[-1, *dims],
                      result_type=TensorType(v.dtype, (n, *dims)))
    if ctx.node.op_type == "DepthToSpace":
        if ctx.attr("mode", "DCR") == "DCR":
            t = e.emit("transpose", [rs(x, [b, b, c // (b * b), h, w])], perm=[0, 3, 4, 1, 5, 2])
        else:
            t = e.emit("transpose", [rs(x, [c // (b * b), b, b, h, w])], perm=[0, 1, 4, 2, 5, 3])
        return rs(t, [c // (b * b), h * b, w * b], ctx.node.output[0])
    t = rs(x, [c, h // b, b, w // b, b])
    crd = ctx.attr("mode", "DCR") == "CRD" if ctx.version >= 28 else False
    t = e.emit("transpose", [t], perm=[0, 1, 3, 5, 2, 4] if crd else [0, 3, 5, 1, 2, 4])
    return rs(t, [c * b * b, h // b, w // b], ctx.node.output[0])


@onnx_op("DepthToSpace", "SpaceToDepth", since=13)
def depth_space(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    b = int(ctx.attr("blocksize"))
    if x.rank != 4 or not all(isinstance(d, int) for d in x.shape[1:]):
        raise ctx.fail("needs a 4-D input, static but for the batch")
    n, c, h, w = x.shape
    if not isinstance(n, int):
        return [_depth_space_named_batch(ctx, x, b)]
    if ctx.node.op_type == "DepthToSpace":
        if ctx.attr("mode", "DCR") == "DCR":
            t = e.emit("reshape", [x], shape=[n, b, b, c // (b * b), h, w])
            t = e.emit("transpose", [t], perm=[0, 3, 4, 1, 5, 2])
        else:
            t = e.emit("reshape", [x], shape=[n, c // (b * b), b, b, h, w])
            t = e.emit("transpose", [t], perm=[0, 1, 4, 2, 5, 3])
        return [e.emit("reshape", [t], ctx.node.output[0], shape=[n, c // (b * b), h * b, w * b])]
    t = e.emit("reshape", [x], shape=[n, c, h // b, b, w // b, b])
    crd = ctx.attr("mode", "DCR") == "CRD" if ctx.version >= 28 else False
    t = e.emit("transpose", [t], perm=[0, 1, 3, 5, 2, 4] if crd else [0, 3, 5, 1, 2, 4])
    return [e.emit("reshape", [t], ctx.node.output[0], shape=[n, c * b * b, h // b, w // b])]


@onnx_op("CumSum", "CumProd")
def cumulative(ctx: NodeCtx) -> list[Value]:
    # the axis is an operand of the dlvm rows, so a run-time axis needs nothing special
    x = ctx.req(0)
    axis = cast(ctx.e, scalar_of(ctx, 1, "axis"), I64)
    op = "cumsum" if ctx.node.op_type == "CumSum" else "cumprod"
    return [ctx.e.emit(op, [x, axis], ctx.node.output[0],
                       exclusive=bool(ctx.attr("exclusive", 0)), reverse=bool(ctx.attr("reverse", 0)))]
