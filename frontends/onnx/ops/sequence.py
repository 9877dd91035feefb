"""ONNX sequences whose elements share one shape, held as one stacked tensor [n, *element].

dlvm values are tensors, and the sequences exporters write are almost always of that kind: the
dynamo exporter's EmbeddingBag builds one reduced row per bag in a Loop (SequenceEmpty, then
SequenceInsert per iteration, then ConcatFromSequence), SplitToSequence cuts equal pieces, and
SequenceConstruct stacks same-shaped tensors. So a sequence is its elements stacked along a new
axis 0: SequenceInsert is a concat, SequenceAt a gather, SequenceLength the first dim, and
ConcatFromSequence a transpose and a reshape. A sequence whose elements differ in shape (a
ragged one) cannot be stacked and fails at import, naming the op.

SequenceEmpty has no element shape yet: it is an `EmptySequence` until the first insert, and a
Loop that carries one learns the element shape from its body (ops/control.py).
"""
from __future__ import annotations

import numpy as np

from isa.dtypes import BY_NAME
from isa.types import TensorType

from ..registry import NodeCtx, onnx_op
from ..values import Value, known
from .common import cast, norm_axis

I64 = BY_NAME["i64"]


class EmptySequence(Value):
    """SequenceEmpty's result: a sequence of `dtype` with no element (and no element shape)."""


def empty_sequence(dtype) -> EmptySequence:
    return EmptySequence(TensorType(dtype, (0,)), None, np.zeros(0, dtype.np))


def stacked_empty(ctx: NodeCtx, like: TensorType) -> Value:
    """An empty sequence of elements shaped as `like`'s element (dims after the first). An
    element dim not known at import is 0 here: the first append replaces the empty stack
    rather than concatenating to it (see _append)."""
    element = tuple(d if isinstance(d, int) else 0 for d in like.shape[1:])
    return known(np.zeros((0, *element), like.dtype.np))


def _append(ctx: NodeCtx, seq: Value, item: Value) -> Value:
    """seq with item ([1, *element]) after its last element. Where the element has dims the
    types do not fix, an empty seq may be a stand-in of other dims (stacked_empty), so a
    run-time branch takes the item alone when seq is empty."""
    e = ctx.e
    if all(isinstance(d, int) for d in seq.shape[1:]):
        return e.emit("concat", [seq, item], "seq", axis=0)
    from isa.module import Reg
    empty = e.emit("eq", [_length(ctx, seq), known(np.array(0, np.int64))], "isempty")
    out = Reg(e.regs.fresh("seq", "t"))
    l_first, l_more, l_join = e.label("seqfirst"), e.label("seqmore"), e.label("seqjoin")
    e.fb.br(e.materialize(empty), l_first, l_more)
    e.fb.label(l_first)
    e.mov(item, out.name)
    e.fb.jmp(l_join)
    e.fb.label(l_more)
    e.mov(e.emit("concat", [seq, item], "seq", axis=0), out.name)
    e.fb.jmp(l_join)
    e.fb.label(l_join)
    shape = (None,) + tuple(a if a == b else None for a, b in zip(seq.shape[1:], item.shape[1:]))
    return Value(seq.type.with_shape(shape), out)


def _stack(ctx: NodeCtx, items: list[Value]) -> Value:
    e = ctx.e
    first = items[0]
    for v in items[1:]:
        if v.dtype != first.dtype or v.rank != first.rank or any(
                isinstance(a, int) and isinstance(b, int) and a != b
                for a, b in zip(v.shape, first.shape)):
            raise ctx.fail(f"a sequence of {first.type} and {v.type}: dlvm holds sequences whose "
                           f"elements share one shape")
    parts = [e.emit("expand_dims", [v], axes=[0]) for v in items]
    return parts[0] if len(parts) == 1 else e.emit("concat", parts, "seq", axis=0)


def _element(ctx: NodeCtx, seq: Value, t: Value) -> None:
    if seq.dtype != t.dtype or seq.rank != t.rank + 1:
        raise ctx.fail(f"inserting {t.type} into a sequence of {seq.type.with_shape(seq.shape[1:])}"
                       f": dlvm holds sequences whose elements share one shape")


def _position(ctx: NodeCtx, i: int, default: int | None) -> int | None:
    v = ctx.input(i)
    if v is None:
        return default
    if v.const is None:
        raise ctx.not_known(i, "position")
    return int(np.asarray(v.const).reshape(-1)[0])


def _length(ctx: NodeCtx, seq: Value) -> Value:
    n = seq.shape[0]
    if isinstance(n, int):
        return known(np.array(n, np.int64))
    return ctx.e.emit("gather", [ctx.e.emit("shape_of", [seq]), known(np.array(0, np.int64))],
                      axis=0)


def _cut(ctx: NodeCtx, seq: Value, start: int, end: int | None) -> Value:
    n = seq.shape[0]
    stop = end if end is not None else (n if isinstance(n, int) else np.iinfo(np.int64).max)
    return ctx.e.emit("slice", [seq], starts=[start], ends=[stop], axes=[0])


@onnx_op("SequenceEmpty", since=11)
def sequence_empty(ctx: NodeCtx) -> list[Value]:
    from ..graph import onnx_dtype
    return [empty_sequence(onnx_dtype(int(ctx.attr("dtype", 1)), ctx.label))]


@onnx_op("SequenceConstruct", since=11)
def sequence_construct(ctx: NodeCtx) -> list[Value]:
    return [_stack(ctx, [ctx.req(i) for i in range(len(ctx.node.input))])]


@onnx_op("SequenceInsert", since=11)
def sequence_insert(ctx: NodeCtx) -> list[Value]:
    seq, t = ctx.req(0), ctx.req(1)
    if isinstance(seq, EmptySequence):
        if seq.dtype != t.dtype:
            raise ctx.fail(f"inserting {t.type} into a sequence of {seq.dtype}")
        _position(ctx, 2, None)
        return [ctx.e.emit("expand_dims", [t], "seq", axes=[0])]
    _element(ctx, seq, t)
    item = ctx.e.emit("expand_dims", [t], axes=[0])
    pos = _position(ctx, 2, None)
    if pos is None:
        return [_append(ctx, seq, item)]
    n = seq.shape[0]
    if pos < 0:
        if not isinstance(n, int):
            raise ctx.fail("a negative position in a sequence of unknown length")
        pos += n
    parts = [_cut(ctx, seq, 0, pos), item, _cut(ctx, seq, pos, None)]
    return [ctx.e.emit("concat", parts, "seq", axis=0)]


@onnx_op("SequenceErase", since=11)
def sequence_erase(ctx: NodeCtx) -> list[Value]:
    seq = ctx.req(0)
    pos = _position(ctx, 1, -1)
    n = seq.shape[0]
    if pos < 0:
        if not isinstance(n, int):
            raise ctx.fail("a negative position in a sequence of unknown length")
        pos += n
    return [ctx.e.emit("concat", [_cut(ctx, seq, 0, pos), _cut(ctx, seq, pos + 1, None)], "seq",
                       axis=0)]


@onnx_op("SequenceAt", since=11)
def sequence_at(ctx: NodeCtx) -> list[Value]:
    seq, pos = ctx.req(0), ctx.req(1)
    if isinstance(seq, EmptySequence):
        raise ctx.fail("SequenceAt of an empty sequence")
    idx = ctx.e.emit("reshape", [cast(ctx.e, pos, I64)], shape=[])
    return [ctx.e.emit("gather", [seq, idx], ctx.node.output[0], axis=0)]


@onnx_op("SequenceLength", since=11)
def sequence_length(ctx: NodeCtx) -> list[Value]:
    return [_length(ctx, ctx.req(0))]


@onnx_op("ConcatFromSequence", since=11)
def concat_from_sequence(ctx: NodeCtx) -> list[Value]:
    seq, e = ctx.req(0), ctx.e
    if isinstance(seq, EmptySequence):
        raise ctx.fail("ConcatFromSequence of an empty sequence (no element shape)")
    new_axis = int(ctx.attr("new_axis", 0))
    rank = seq.rank - 1                      # an element's rank
    axis = norm_axis(int(ctx.attr("axis")), rank + 1 if new_axis else rank)
    # the sequence axis moved to `axis`: stacking there (new_axis) is the result, and merging
    # it with the element's axis after it concatenates
    perm = list(range(1, seq.rank))
    perm.insert(axis, 0)
    moved = seq if perm == list(range(seq.rank)) else e.emit("transpose", [seq], perm=perm)
    if new_axis:
        return [e.emit("mov", [moved], ctx.node.output[0])]
    dims = list(moved.shape)
    if all(isinstance(d, int) for i, d in enumerate(dims) if i not in (axis, axis + 1)):
        shape = dims[:axis] + [-1] + dims[axis + 2:]
        return [e.emit("reshape", [moved], ctx.node.output[0], shape=shape)]
    # elements of dims the types do not fix: the merged shape computed when it runs
    s = e.emit("shape_of", [moved])
    pair = e.emit("slice", [s], starts=[axis], ends=[axis + 2], axes=[0])
    merged = e.emit("reduce_prod", [pair], axes=[0], keepdims=True)
    parts = [e.emit("slice", [s], starts=[0], ends=[axis], axes=[0]), merged,
             e.emit("slice", [s], starts=[axis + 2], ends=[seq.rank], axes=[0])]
    return [e.emit("reshape_dyn", [moved, e.emit("concat", parts, axis=0)], ctx.node.output[0])]


@onnx_op("SplitToSequence", since=11)
def split_to_sequence(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    axis = norm_axis(int(ctx.attr("axis", 0)), x.rank)
    keepdims = int(ctx.attr("keepdims", 1))
    n = x.shape[axis]
    split = ctx.input(1)
    if split is None:
        pieces = e.emit("transpose", [x], perm=[axis] + [i for i in range(x.rank) if i != axis]) \
            if axis else x
        if keepdims:
            pieces = e.emit("expand_dims", [pieces], axes=[axis + 1])
        return [e.emit("mov", [pieces], ctx.node.output[0])]
    sizes = [int(s) for s in np.asarray(ctx.const_input(1, "split")).reshape(-1)]
    if not isinstance(n, int):
        raise ctx.fail("SplitToSequence by sizes needs a static split axis")
    if len(sizes) == 1:                      # pieces of one size, the last maybe shorter
        size = sizes[0]
        sizes = [size] * (n // size) + ([n % size] if n % size else [])
    if len(set(sizes)) != 1 or sum(sizes) != n:
        raise ctx.fail(f"SplitToSequence into pieces of sizes {sizes}: dlvm holds sequences whose "
                       f"elements share one shape")
    size = sizes[0]
    shape = [d if isinstance(d, int) else 0 for d in x.shape]
    if any(not isinstance(d, int) for d in x.shape):
        raise ctx.fail("SplitToSequence by sizes needs static dims")
    shape[axis:axis + 1] = [len(sizes), size]
    cut = e.emit("reshape", [x], shape=shape)
    perm = [axis] + [i for i in range(len(shape)) if i != axis]
    return [e.emit("transpose", [cut], ctx.node.output[0], perm=perm)]
