"""Shape-like operands that are only known when the program runs.

ONNX lets a graph compute the shape of a Reshape, the axes of a reduction or the repeats of a
Tile at run time (or take them as graph inputs). dlvm fixes ranks before a program runs but not
sizes, so such an operand maps to the dynamic rows of `isa/ops/dynamic.py`: the operand's static
length gives the result's rank and the result's dims are unknown (`?`). Only what a rank depends
on (the number of entries of a shape vector; the axes of a Pad, which say which dims grow) must
still be known at import.
"""
from __future__ import annotations

import numpy as np

from isa.dtypes import BY_NAME

from ..registry import NodeCtx
from ..values import Value, known
from .common import cast, scalar

I64 = BY_NAME["i64"]


def is_dynamic(v: Value | None) -> bool:
    """A present operand known neither as an array nor as a vector of (named) dims."""
    return v is not None and v.const is None and v.sym is None


def vector(ctx: NodeCtx, i: int, what: str, any_length: bool = False) -> Value:
    """Input i as a run-time i64 vector of static length (its length fixes a rank), or of any
    length where the op takes that."""
    v = ctx.req(i)
    if v.rank == 0:
        v = ctx.e.emit("reshape", [v], shape=[1])
    if v.rank != 1 or not (any_length or isinstance(v.shape[0], int)):
        raise ctx.fail(f"{what} (input {i}) must be a 1-D vector of static length, got {v.type}")
    if not v.dtype.is_int:
        raise ctx.fail(f"{what} (input {i}) must be an integer vector, got {v.type}")
    return cast(ctx.e, v, I64)


def scalar_of(ctx: NodeCtx, i: int, what: str) -> Value:
    """Input i, a scalar or one-element vector, as a 0-d run-time value."""
    v = ctx.req(i)
    if v.rank == 1 and v.shape[0] == 1:
        v = ctx.e.emit("reshape", [v], shape=[])
    if v.rank != 0:
        raise ctx.fail(f"{what} (input {i}) must be a scalar, got {v.type}")
    return v


def vec_or_known(ctx: NodeCtx, i: int, what: str, default: list[int],
                 any_length: bool = False) -> Value:
    """Input i as an i64 vector (run time or known), or `default` when it is absent."""
    if ctx.input(i) is None:
        return known(np.array(default, np.int64))
    v = ctx.input(i)
    if v.const is not None:
        return known(np.asarray(v.const, np.int64).reshape(-1))
    return vector(ctx, i, what, any_length)


def slice_dyn(ctx: NodeCtx, x: Value) -> Value:
    """ONNX Slice with starts, ends, axes or steps computed at run time (their length may be
    unknown too: a start sliced from a run-time offsets vector)."""
    e = ctx.e
    starts = vec_or_known(ctx, 1, "starts", [], any_length=True)
    n = starts.shape[0]
    ends = vec_or_known(ctx, 2, "ends", [], any_length=True)
    if isinstance(n, int):
        axes = vec_or_known(ctx, 3, "axes", list(range(n)), any_length=True)
        steps = vec_or_known(ctx, 4, "steps", [1] * n, any_length=True)
    else:       # defaults as long as starts is when it runs: 0, 1, ... and ones
        count = e.emit("gather", [e.emit("shape_of", [starts]), known(np.array(0, np.int64))],
                       axis=0)
        upto = e.emit("range", [known(np.array(0, np.int64)), count, known(np.array(1, np.int64))])
        axes = vec_or_known(ctx, 3, "axes", [], any_length=True) if ctx.input(3) else upto
        steps = vec_or_known(ctx, 4, "steps", [], any_length=True) if ctx.input(4) else \
            e.emit("add", [e.emit("mul", [upto, known(np.array(0, np.int64))]),
                           known(np.array(1, np.int64))])
    return e.emit("slice_dyn", [x, starts, ends, axes, steps], ctx.node.output[0])


def pad_dyn(ctx: NodeCtx, x: Value, mode: str) -> Value:
    """ONNX Pad with run-time pads (or a run-time constant value). The axes input, which says
    which dims grow, must be known; the pads are spread over every dim by a gather."""
    e = ctx.e
    r = x.rank
    pads = vec_or_known(ctx, 1, "pads", [])
    axes_in = ctx.const_ints(3, "axes") if ctx.version >= 18 else None
    if axes_in is not None:
        axes = [a + r if a < 0 else a for a in axes_in]
        k = len(axes)
        # position j of the full [begins..., ends...] vector reads pads[...] or the zero at k*2
        src = [2 * k] * (2 * r)
        for j, a in enumerate(axes):
            src[a], src[a + r] = j, j + k
        padded = e.emit("concat", [pads, known(np.zeros(1, np.int64))], axis=0)
        pads = e.emit("gather", [padded, known(np.array(src, np.int64))], axis=0)
    cv = ctx.input(2)
    if cv is None or (cv.const is not None and cv.const.size == 0):
        value = scalar(0, x)
    else:
        value = cast(e, scalar_of(ctx, 2, "constant_value"), x.dtype)
    return e.emit("pad_dyn", [x, pads, value], ctx.node.output[0], mode=mode)


def split_dyn(ctx: NodeCtx, x: Value, axis: int) -> list[Value]:
    """ONNX Split with run-time sizes: each piece is a slice_dyn from the running sum."""
    e = ctx.e
    sizes = vector(ctx, 1, "split")
    ends = e.emit("cumsum", [sizes, known(np.array(0, np.int64))])
    starts = e.emit("sub", [ends, sizes])
    axes, steps = known(np.array([axis], np.int64)), known(np.array([1], np.int64))
    outs = []
    for k in range(sizes.shape[0]):
        pick = known(np.array([k], np.int64))
        s = e.emit("gather", [starts, pick], axis=0)
        t = e.emit("gather", [ends, pick], axis=0)
        name = ctx.node.output[k] if k < len(ctx.node.output) else "split"
        outs.append(e.emit("slice_dyn", [x, s, t, axes, steps], name))
    return outs


def reduce_dyn(ctx: NodeCtx, x: Value, kind: str, keep: bool, noop: bool) -> Value:
    """A reduction over axes given at run time (input 1)."""
    axes = vector(ctx, 1, "axes")
    return ctx.e.emit("reduce_dyn", [x, axes], ctx.node.output[0], kind=kind, keepdims=keep,
                      noop_with_empty_axes=noop)
