"""ONNX reductions. Axes moved from an attribute to an input (ReduceSum at opset 13, the others at
18); both forms are read here. Known axes give the static reduce_* ops; axes computed at run time
give reduce_dyn (the rank still follows from the axes vector's static length). ONNX keeps reduced
dims by default; dlvm does not, so keepdims is always passed."""
from __future__ import annotations

import numpy as np

from isa.dtypes import BY_NAME

from ..registry import NodeCtx, onnx_op
from ..values import Value, known
from .common import norm_axis, scalar
from .dynshape import is_dynamic, reduce_dyn

_DIRECT = {"ReduceSum": "reduce_sum", "ReduceMean": "reduce_mean", "ReduceMax": "reduce_max",
           "ReduceMin": "reduce_min", "ReduceProd": "reduce_prod"}
_COMPOSED = ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")


def _axes(ctx: NodeCtx) -> list[int] | None:
    input_form = ctx.version >= (13 if ctx.node.op_type == "ReduceSum" else 18)
    if input_form:
        return ctx.const_ints(1, "axes")
    a = ctx.attr("axes", None)
    return None if a is None else list(a)


def _spec(ctx: NodeCtx) -> tuple[list[int] | None, bool] | None:
    """(axes or None for all, keepdims), or None when the node is the identity."""
    axes = _axes(ctx)
    keep = bool(ctx.attr("keepdims", 1))
    noop = bool(ctx.attr("noop_with_empty_axes", 0)) if ctx.has("noop_with_empty_axes") or \
        ctx.version >= 13 else False
    if not axes:
        if noop:
            return None
        axes = None
    return axes, keep


def _dynamic(ctx: NodeCtx, x: Value) -> Value:
    """A reduction whose axes input is known only at run time."""
    e, op = ctx.e, ctx.node.op_type
    keep = bool(ctx.attr("keepdims", 1))
    noop = bool(ctx.attr("noop_with_empty_axes", 0))
    if 0 in x.shape and op in ("ReduceMax", "ReduceMin", "ReduceLogSumExp"):
        # x has no element, so every result entry reduces an empty set: ONNX's identity there
        # (dlvm's reduce_max traps on empty sets). A sum (never trapping) gives the result's
        # shape, which depends on the run-time axes.
        zeros = e.emit("cast", [x], to=BY_NAME["f32"]) if not x.dtype.is_float else x
        shaped = reduce_dyn(ctx, zeros, "sum", keep, noop)
        if x.dtype.is_bool:
            ident = np.array(op == "ReduceMin")
        elif x.dtype.is_int:
            lo, hi = x.dtype.int_range()
            ident = np.array(hi if op == "ReduceMin" else lo, x.dtype.np)
        else:
            ident = np.array(np.inf if op == "ReduceMin" else -np.inf, x.dtype.np)
        base = e.emit("cast", [shaped], to=x.dtype) if shaped.dtype != x.dtype else shaped
        if x.dtype.is_bool:
            return e.emit("or" if op == "ReduceMin" else "and", [base, known(ident)],
                          ctx.node.output[0])
        return e.emit("add", [e.emit("mul", [base, known(np.zeros((), x.dtype.np))]),
                              known(ident)], ctx.node.output[0])
    if op in ("ReduceMax", "ReduceMin") and x.dtype.is_bool:
        # on bools max is any and min is all: reduce 0/1 bytes
        b = reduce_dyn(ctx, e.emit("cast", [x], to=BY_NAME["u8"]), op[len("Reduce"):].lower(),
                       keep, noop)
        return e.emit("cast", [b], ctx.node.output[0], to=x.dtype)
    if op in _DIRECT and not x.dtype.is_bool:
        return reduce_dyn(ctx, x, _DIRECT[op][len("reduce_"):], keep, noop)
    if op == "ReduceL1":
        return reduce_dyn(ctx, e.emit("abs", [x]), "sum", keep, noop)
    if op == "ReduceSumSquare":
        return reduce_dyn(ctx, e.emit("mul", [x, x]), "sum", keep, noop)
    if op == "ReduceL2" and x.dtype.is_float:
        return e.emit("sqrt", [reduce_dyn(ctx, e.emit("mul", [x, x]), "sum", keep, noop)])
    if op == "ReduceLogSum":
        return e.emit("log", [reduce_dyn(ctx, x, "sum", keep, noop)])
    if op == "ReduceLogSumExp" and x.dtype.is_float:
        m = reduce_dyn(ctx, x, "max", True, noop)
        m = e.emit("select", [e.emit("isnan", [e.emit("sub", [m, m])]), scalar(0, x), m])
        s = reduce_dyn(ctx, e.emit("exp", [e.emit("sub", [x, m])]), "sum", keep, noop)
        m_out = m if keep else reduce_dyn(ctx, m, "max", False, noop)
        return e.emit("add", [e.emit("log", [s]), m_out])
    raise ctx.not_known(1, "axes")


@onnx_op(*_DIRECT, *_COMPOSED)
def reduce(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    if ctx.version >= (13 if ctx.node.op_type == "ReduceSum" else 18) and is_dynamic(ctx.input(1)):
        return [_dynamic(ctx, x)]
    spec = _spec(ctx)
    op = ctx.node.op_type
    if spec is None:
        # the identity still applies the elementwise part of composed reductions
        if op == "ReduceL1":
            return [e.emit("abs", [x])]
        if op == "ReduceSumSquare":
            return [e.emit("mul", [x, x])]
        if op == "ReduceL2":
            return [e.emit("abs", [x])]
        if op == "ReduceLogSum":
            return [e.emit("log", [x])]
        return [x]
    axes, keep = spec
    if axes is not None:
        axes = [norm_axis(a, x.rank) for a in axes]
    empty = _empty_result(ctx, x, axes, keep)
    if empty is not None:
        return [empty]
    if x.dtype.is_bool and op in ("ReduceMax", "ReduceMin"):
        # on bools max is any and min is all: reduce 0/1 bytes
        b = e.emit(_DIRECT[op], [e.emit("cast", [x], to=BY_NAME["u8"])], axes=axes, keepdims=keep)
        return [e.emit("cast", [b], ctx.node.output[0], to=x.dtype)]
    if op in _DIRECT:
        return [e.emit(_DIRECT[op], [x], ctx.node.output[0], axes=axes, keepdims=keep)]
    if op == "ReduceL1":
        return [e.emit("reduce_sum", [e.emit("abs", [x])], axes=axes, keepdims=keep)]
    if op == "ReduceSumSquare":
        return [e.emit("reduce_sum", [e.emit("mul", [x, x])], axes=axes, keepdims=keep)]
    if op == "ReduceL2":
        s = e.emit("reduce_sum", [e.emit("mul", [x, x])], axes=axes, keepdims=keep)
        if x.dtype.is_int:
            f = e.emit("sqrt", [e.emit("cast", [s], to=BY_NAME["f64"])])
            return [e.emit("cast", [e.emit("round", [f])], to=x.dtype)]
        return [e.emit("sqrt", [s])]
    if op == "ReduceLogSum":
        return [e.emit("log", [e.emit("reduce_sum", [x], axes=axes, keepdims=keep)])]
    # ReduceLogSumExp, shifted by the maximum so large inputs do not overflow
    m = e.emit("reduce_max", [x], axes=axes, keepdims=True)
    m = e.emit("select", [e.emit("isnan", [e.emit("sub", [m, m])]), scalar(0, x), m])
    s = e.emit("reduce_sum", [e.emit("exp", [e.emit("sub", [x, m])])], axes=axes, keepdims=keep)
    if not keep:
        m = e.emit("squeeze", [m], axes=list(range(x.rank)) if axes is None else axes)
    return [e.emit("add", [e.emit("log", [s]), m])]


# the value of each reduction over an empty set (ONNX 18+): its identity element
_EMPTY = {"ReduceSum": 0, "ReduceMean": float("nan"), "ReduceMax": "min", "ReduceMin": "max",
          "ReduceProd": 1, "ReduceL1": 0, "ReduceL2": 0, "ReduceLogSum": float("-inf"),
          "ReduceLogSumExp": float("-inf"), "ReduceSumSquare": 0}


def _empty_result(ctx: NodeCtx, x: Value, axes: list[int] | None, keep: bool) -> Value | None:
    """A reduction over a statically empty axis: a fill of the op's identity element."""

    from isa.types import TensorType
    red = range(x.rank) if axes is None else axes
    if not any(x.shape[a] == 0 for a in red):
        return None
    fill = _EMPTY[ctx.node.op_type]
    if fill in ("min", "max"):
        if x.dtype.is_float:
            fill = float("-inf") if fill == "min" else float("inf")
        elif x.dtype.is_bool:
            fill = fill == "max"
        else:
            lo, hi = x.dtype.int_range()
            fill = lo if fill == "min" else hi
    shape = tuple(1 if i in red else d for i, d in enumerate(x.shape)) if keep else \
        tuple(d for i, d in enumerate(x.shape) if i not in red)
    return ctx.e.emit_const_fill(fill, TensorType(x.dtype, shape), "empty")


@onnx_op("ArgMax", "ArgMin")
def arg_reduce(ctx: NodeCtx) -> list[Value]:
    x, e = ctx.req(0), ctx.e
    axis = norm_axis(int(ctx.attr("axis", 0)), x.rank)
    keep = bool(ctx.attr("keepdims", 1))
    last = bool(ctx.attr("select_last_index", 0))
    op = "argmax" if ctx.node.op_type == "ArgMax" else "argmin"
    if not last:
        return [e.emit(op, [x], ctx.node.output[0], axis=axis, keepdims=keep)]
    # the last extremum is the first one of the reversed axis, counted from the back
    n = x.shape[axis]
    if not isinstance(n, int):
        raise ctx.fail("select_last_index needs a static size on the reduced axis")
    rev = e.emit("slice", [x], starts=[-1], ends=[-(n + 1)], axes=[axis], steps=[-1])
    i = e.emit(op, [rev], axis=axis, keepdims=keep)
    return [e.emit("sub", [scalar(n - 1, i), i])]
