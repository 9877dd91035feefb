"""Shape-valued ONNX ops: Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Expand,
ConstantOfShape, Range, EyeLike.

Exporters compute shape operands with Shape -> Gather -> Concat chains; those fold at import
when the sizes are static, and keep named dims (`Value.sym`) when a dim is dynamic, so the
static ops (reshape {shape} ...) apply. A shape operand known only at run time maps to the
dynamic rows (reshape_dyn, broadcast_dyn, fill, range, squeeze_dyn, unsqueeze_dyn): its static
length fixes the result's rank, its values the sizes.
"""
from __future__ import annotations

import numpy as np

from isa.dtypes import BY_NAME
from isa.types import Dim, TensorType

from ..registry import NodeCtx, onnx_op
from ..values import Value, known
from .common import norm_axis
from .dynshape import is_dynamic, scalar_of, vector

I64 = BY_NAME["i64"]


def shape_entries(ctx: NodeCtx, i: int, what: str) -> list[Dim] | None:
    """Input i, a 1-D shape vector, as sizes and named dims (an expression of named dims gets
    a derived name, see symdim.py); None where absent."""
    v = ctx.input(i)
    if v is None:
        return None
    if v.const is not None:
        return [int(x) for x in v.const.reshape(-1)]
    if v.sym is not None:
        return [ctx.e.derived.dim(d) for d in v.sym]
    raise ctx.not_known(i, what)


def sym_value(e, entries: list, runtime: Value | None, dtype=I64, shape=None) -> Value:
    """A shape vector: known when every entry is a size, else the run-time value with `sym`
    (entries are sizes, names, expressions of names, or None)."""
    shape = (len(entries),) if shape is None else shape
    entries = [e.derived.entry(d) for d in entries]
    if all(isinstance(d, int) for d in entries):
        return known(np.array(entries, dtype=dtype.np).reshape(shape))
    assert runtime is not None
    return Value(runtime.type, runtime.operand, None, tuple(entries))


def _solve_minus_one(derived, dims: list[Dim], x: Value) -> list[Dim]:
    """Give -1 its size (or expression) when the input's element count divided by the other
    sizes is exact: [N, -1] of a [N, 2, 3] tensor is [N, 6]; [-1, 4, 8] of [6, N, 32] is
    [N_x6, 4, 8] (a derived name), so a later reshape back to [6, N, 32] is static again."""
    if -1 not in dims or dims.count(-1) > 1 or None in x.shape or None in dims:
        return dims
    total = derived.product(x.shape)
    rest = derived.product(d for d in dims if d != -1)
    q = total.exact_div(rest) if total is not None and rest is not None else None
    if q is None:
        return dims
    return [derived.dim(q) if d == -1 else d for d in dims]


def reshape(ctx: NodeCtx, x: Value, dims: list[Dim], hint: str, runtime=None,
            copy_zero: bool = True) -> Value:
    """A reshape to `dims` (sizes, names, -1, None): the static row when at most one size is
    open at import, else the dynamic row on the run-time shape vector `runtime()` with a result
    type that keeps the names."""
    dims = _solve_minus_one(ctx.e.derived, list(dims), x)
    open_dims = [d for d in dims if not isinstance(d, int) or d == -1]
    shown: list[Dim] = [None if d == -1 else d for d in dims]
    if len(open_dims) > 1:
        if runtime is None:
            raise ctx.fail(f"reshape to {dims}: more than one size is unknown at import")
        t = TensorType(x.dtype, tuple(shown))
        return ctx.e.emit("reshape_dyn", [x, runtime()], hint, copy_zero=copy_zero,
                          result_type=None if all(d is None for d in shown) else t)
    ints = [d if isinstance(d, int) else -1 for d in dims]
    if x.type.is_static:
        return ctx.e.emit("reshape", [x], hint, shape=ints)
    return ctx.e.emit("reshape", [x], hint, shape=ints,
                      result_type=TensorType(x.dtype, tuple(shown)))


@onnx_op("Shape", since=13)
def shape_(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    r = x.rank
    start = ctx.attr("start", 0)
    end = ctx.attr("end", r)
    start = min(max(norm_axis(start, r), 0), r)
    end = min(max(norm_axis(end, r), 0), r)
    dims = list(x.shape[start:end])
    if all(isinstance(d, int) for d in dims):
        return [known(np.array(dims, dtype=np.int64))]
    full = ctx.e.emit("shape_of", [x], "shape")
    if (start, end) != (0, r):
        full = ctx.e.emit("slice", [full], "shape", starts=[start], ends=[end])
    return [sym_value(ctx.e, [None if d is None else d for d in dims], full)]


@onnx_op("Size", since=13)
def size(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    if x.type.is_static:
        return [known(np.array(int(np.prod(x.shape)), dtype=np.int64))]
    return [ctx.e.emit("reduce_prod", [ctx.e.emit("shape_of", [x])], "size")]


@onnx_op("Reshape", since=13)
def reshape_(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    allowzero = ctx.attr("allowzero", 0) if ctx.version >= 14 else 0
    if is_dynamic(ctx.input(1)):
        return [ctx.e.emit("reshape_dyn", [x, vector(ctx, 1, "shape")], ctx.node.output[0],
                           copy_zero=not allowzero)]
    dims = shape_entries(ctx, 1, "shape")
    if not allowzero:
        # ONNX 0 copies the input's dim; dlvm's 0 is a size of zero
        dims = [x.shape[i] if d == 0 else d for i, d in enumerate(dims)]
    out = reshape(ctx, x, dims, ctx.node.output[0], lambda: vector(ctx, 1, "shape"),
                  copy_zero=not allowzero)
    if x.sym is not None and out.rank <= 1:
        # a shape value (or one entry of it) reshaped to a scalar or vector keeps its entries in
        # order: the dynamo exporter makes batch*4 a 1-D [batch*4] by Reshape(.., [1])
        out = sym_value(ctx.e, list(x.sym), out, out.dtype, shape=out.shape)
    return [out]


@onnx_op("Flatten", since=13)
def flatten(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    axis = norm_axis(int(ctx.attr("axis", 1)), x.rank)

    def prod(ds: tuple[Dim, ...]) -> Dim:
        p = ctx.e.derived.product(ds)
        return -1 if p is None else ctx.e.derived.dim(p)
    a, b = prod(x.shape[:axis]), prod(x.shape[axis:])
    if a == -1 and b == -1:
        raise ctx.fail("both sides of the flatten have sizes unknown at import")
    return [reshape(ctx, x, [a, b], ctx.node.output[0])]


def _axes_input_or_attr(ctx: NodeCtx) -> list[int] | None:
    if ctx.version >= 13:
        return ctx.const_ints(1, "axes") if not is_dynamic(ctx.input(1)) else None
    a = ctx.attr("axes", None)
    return None if a is None else list(a)


@onnx_op("Squeeze", since=13)
def squeeze(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    if ctx.version >= 13 and is_dynamic(ctx.input(1)):
        return [ctx.e.emit("squeeze_dyn", [x, vector(ctx, 1, "axes")], ctx.node.output[0])]
    axes = _axes_input_or_attr(ctx)
    if axes is not None:
        axes = [norm_axis(a, x.rank) for a in axes]
    elif not x.type.is_static:
        # ONNX drops every dim that is 1 at run time, but a dlvm type has one rank: drop the
        # static 1s and trap where a dim unknown here turns out to be 1 (the rank would differ)
        axes = [i for i, d in enumerate(x.type.shape) if d == 1]
        open_dims = [i for i, d in enumerate(x.type.shape) if not isinstance(d, int)]
        dims = ctx.e.emit("gather", [ctx.e.emit("shape_of", [x]), known(open_dims, np.int64)])
        not_one = ctx.e.emit("ne", [dims, known(1, np.int64)])
        ctx.e.fb.assert_(ctx.e.materialize(not_one),
                         f"{ctx.label}: Squeeze without axes met a dim of size 1 that was "
                         "unknown at import (give the axes)")
    out = ctx.e.emit("squeeze", [x], ctx.node.output[0], axes=axes)
    if x.sym is not None and x.rank == 1 and out.rank == 0:
        out.sym = x.sym
    return [out]


@onnx_op("Unsqueeze", since=13)
def unsqueeze(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    if ctx.version >= 13 and is_dynamic(ctx.input(1)):
        return [ctx.e.emit("unsqueeze_dyn", [x, vector(ctx, 1, "axes")], ctx.node.output[0])]
    axes = _axes_input_or_attr(ctx)
    rank = x.rank + len(axes)
    axes = sorted(norm_axis(a, rank) for a in axes)
    out = ctx.e.emit("expand_dims", [x], ctx.node.output[0], axes=axes)
    if x.sym is not None and out.rank == 1:
        out.sym = x.sym
    return [out]


def broadcast_target(ctx: NodeCtx, a: tuple[Dim, ...], b: list[Dim]) -> list[Dim]:
    """ONNX Expand's result shape: the two shapes broadcast both ways."""
    n = max(len(a), len(b))
    a2 = [1] * (n - len(a)) + list(a)
    b2 = [1] * (n - len(b)) + list(b)
    out: list[Dim] = []
    for x, y in zip(a2, b2):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        elif isinstance(x, int) and isinstance(y, int):
            raise ctx.fail(f"shapes {list(a)} and {b} do not broadcast")
        else:
            out.append(y if isinstance(y, int) else x)
    return out


@onnx_op("Expand", since=13)
def expand(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    if is_dynamic(ctx.input(1)):
        return [ctx.e.emit("broadcast_dyn", [x, vector(ctx, 1, "shape")], ctx.node.output[0])]
    dims = shape_entries(ctx, 1, "shape")
    target = broadcast_target(ctx, x.shape, dims)
    if any(d is None for d in target):
        # some sizes are computed at run time: the dynamic row, typed with the sizes and names
        # that are certain (x's named dim against a run-time size may be 1 and grow)
        n = len(target)
        xs = [1] * (n - x.rank) + list(x.shape)
        ys = [1] * (n - len(dims)) + list(dims)
        target = [None if b is None and isinstance(a, str) else d
                  for a, b, d in zip(xs, ys, target)]
        t = TensorType(x.dtype, tuple(target))
        return [ctx.e.emit("broadcast_dyn", [x, vector(ctx, 1, "shape")], ctx.node.output[0],
                           result_type=None if all(d is None for d in target) else t)]
    if list(x.shape) == target:
        return [x]
    if _derived(ctx, target):
        # a shape attribute names only dims the call binds: the run-time vector, typed
        return [ctx.e.emit("broadcast_dyn", [x, vector(ctx, 1, "shape")], ctx.node.output[0],
                           result_type=TensorType(x.dtype, tuple(target)))]
    return [ctx.e.emit("broadcast_to", [x], ctx.node.output[0], shape=target)]


def _derived(ctx: NodeCtx, dims: list) -> bool:
    """Whether dims name a derived dim (batch_x4: an expression no call binds)."""
    return any(isinstance(d, str) and d in ctx.e.derived.exprs for d in dims)


@onnx_op("ConstantOfShape")
def constant_of_shape(ctx: NodeCtx) -> list[Value]:
    value = ctx.attr("value", None)
    fill = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)
    from isa.dtypes import dtype_from_numpy
    dt = dtype_from_numpy(fill.dtype)
    if dt is None:
        raise ctx.fail(f"value dtype {fill.dtype} has no dlvm equivalent")
    if is_dynamic(ctx.input(0)):
        return [ctx.e.emit("fill", [vector(ctx, 0, "shape"), known(fill.reshape(()))],
                           ctx.node.output[0])]
    dims = shape_entries(ctx, 0, "shape")
    if _derived(ctx, dims):
        return [ctx.e.emit("fill", [vector(ctx, 0, "shape"), known(fill.reshape(()))],
                           ctx.node.output[0], result_type=TensorType(dt, tuple(dims)))]
    if any(d is None for d in dims):
        # some entries are computed at run time: the dynamic row takes the whole vector, its
        # result typed with the entries that are known (a [?, 32] vector gives [?, 32])
        t = TensorType(dt, tuple(dims))
        return [ctx.e.emit("fill", [vector(ctx, 0, "shape"), known(fill.reshape(()))],
                           ctx.node.output[0],
                           result_type=None if all(d is None for d in dims) else t)]
    return [ctx.e.emit_const_fill(fill[0], TensorType(dt, tuple(dims)), ctx.node.output[0])]


@onnx_op("Range")
def range_(ctx: NodeCtx) -> list[Value]:
    if any(is_dynamic(ctx.input(i)) or (ctx.input(i) is not None and ctx.input(i).sym is not None)
           for i in range(3)):
        args = [scalar_of(ctx, i, what) for i, what in enumerate(("start", "limit", "delta"))]
        return [ctx.e.emit("range", args, ctx.node.output[0])]
    # function bodies (AffineGrid) feed one-element vectors where the schema says scalars
    start, limit, delta = (np.asarray(ctx.const_input(i, what)).reshape(())
                           for i, what in enumerate(("start", "limit", "delta")))
    n = max(int(np.ceil((limit - start) / delta)), 0)
    out = (start + np.arange(n, dtype=np.float64) * delta).astype(np.asarray(start).dtype) \
        if np.asarray(start).dtype.kind == "f" else \
        (start + np.arange(n, dtype=np.int64) * delta).astype(np.asarray(start).dtype)
    return [known(out)]


@onnx_op("EyeLike")
def eye_like(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    k = int(ctx.attr("k", 0))
    dtype_attr = ctx.attr("dtype", None)
    if not x.type.is_static or x.rank != 2:
        raise ctx.fail("EyeLike needs a static 2-D input")
    from ..graph import onnx_dtype
    dt = x.dtype if dtype_attr is None else onnx_dtype(dtype_attr, ctx.label)
    return [known(np.eye(x.shape[0], x.shape[1], k, dtype=dt.np))]
