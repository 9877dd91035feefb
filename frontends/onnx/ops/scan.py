"""Scan lowered to dlvm blocks, the way Loop is (see control.py).

Scan(states..., scan inputs...) runs its body once per slice of the scan inputs along their scan
axis. The lowering keeps the counter and the states in registers; a header block tests `i < T`
(T is the scan axis's length, a size known at import or read with `shape_of` at run time); the
body takes slice i (T-1-i for a reversed input) with `gather` of a scalar index, which drops the
axis. Scan outputs grow by `concat` along a new leading axis (prepended for a reversed output,
so no flip is needed) and are moved to their `scan_output_axes` by one transpose at the end.
"""
from __future__ import annotations

import numpy as np

from isa.dtypes import BY_NAME
from isa.types import TensorType

from ..registry import NodeCtx, onnx_op
from ..values import Value, known
from .common import norm_axis, scalar
from .control import _joined, _reg, _Rollback, close_loop

I64 = BY_NAME["i64"]


def _axes(ctx: NodeCtx, name: str, n: int, ranks: list[int]) -> list[int]:
    vals = list(ctx.attr(name, [0] * n))
    if len(vals) != n:
        raise ctx.fail(f"{name} has {len(vals)} entries for {n} values")
    return [norm_axis(int(a), r) for a, r in zip(vals, ranks)]


def _dirs(ctx: NodeCtx, name: str, n: int) -> list[bool]:
    vals = list(ctx.attr(name, [0] * n))
    if len(vals) != n or any(int(d) not in (0, 1) for d in vals):
        raise ctx.fail(f"{name} must hold 0 or 1 for each of the {n} values")
    return [bool(d) for d in vals]


def _trip_count(ctx: NodeCtx, xs: list[Value], axes: list[int]) -> Value:
    """T, the common length of the scan axes: a known size where one is static."""
    for x, ax in zip(xs, axes):
        if isinstance(x.shape[ax], int):
            return known(np.array(x.shape[ax], np.int64))
    x, ax = xs[0], axes[0]
    shape = ctx.e.emit("shape_of", [x], "shape")
    return ctx.e.emit("gather", [shape, scalar(ax, I64)], "trip", axis=0)


def _slice_types(xs: list[Value], axes: list[int]) -> list[TensorType]:
    return [x.type.with_shape(x.shape[:ax] + x.shape[ax + 1:]) for x, ax in zip(xs, axes)]


@onnx_op("Scan", since=9)      # Scan-9, -11 and -16 differ only in element types
def scan(ctx: NodeCtx) -> list[Value]:
    e = ctx.e
    body = ctx.attr("body")
    m = int(ctx.attr("num_scan_inputs"))
    vals = list(ctx.inputs)
    if any(v is None for v in vals) or m < 1 or m > len(vals):
        raise ctx.fail("Scan needs every state and at least one scan input")
    n = len(vals) - m
    inits, xs = vals[:n], vals[n:]
    in_axes = _axes(ctx, "scan_input_axes", m, [x.rank for x in xs])
    in_rev = _dirs(ctx, "scan_input_directions", m)
    b_in = [i.name for i in body.input]
    k_out = len(body.output) - n
    out_rev = _dirs(ctx, "scan_output_directions", k_out)
    out_axes_raw = list(ctx.attr("scan_output_axes", [0] * k_out))
    if len(out_axes_raw) != k_out:
        raise ctx.fail(f"scan_output_axes has {len(out_axes_raw)} entries for {k_out} outputs")
    slice_types = _slice_types(xs, in_axes)

    # state types: widen dims that change across an iteration (dry conversions, rolled back)
    types = [v.type for v in inits]
    for _ in range(4):
        snap = _Rollback(e)
        bound = {nm: Value(t, _reg(e, "dry", t).operand) for nm, t in zip(b_in, types + slice_types)}
        outs = ctx.graph.run_graph(body, ctx.scope, bound)
        snap.undo()
        new = [_joined(ctx, t, o.type) for t, o in zip(types, outs[:n])]
        scan_types = [o.type for o in outs[n:]]
        if new == types:
            break
        types = new
    for t in scan_types:
        if not t.is_static:
            raise ctx.fail("a scan output needs a static shape per iteration")

    trip = _trip_count(ctx, xs, in_axes)
    i = _reg(e, "iter", TensorType(I64, ()))
    e.mov(known(np.array(0, np.int64)), i.operand.name)
    states = []
    for k, (v, t) in enumerate(zip(inits, types)):
        r = _reg(e, ctx.node.output[k] if k < len(ctx.node.output) else "state", t)
        e.mov(v, r.operand.name)
        states.append(r)
    accs = []
    for t in scan_types:
        r = _reg(e, "scan", t.with_shape((None,) + t.shape))
        e.mov(known(np.zeros((0,) + t.shape, t.dtype.np)), r.operand.name)
        accs.append(r)

    l_head, l_body, l_exit = e.label("scan"), e.label("scanbody"), e.label("endscan")
    e.fb.jmp(l_head)
    e.fb.label(l_head)
    e.fb.br(e.materialize(e.emit("lt", [i, trip], "inrange")), l_body, l_exit)
    e.fb.label(l_body)
    last = e.emit("sub", [trip, scalar(1, I64)], "last")
    rev_i = e.emit("sub", [last, i], "revi")
    slices = [e.emit("gather", [x, rev_i if rev else i], "slice", axis=ax)
              for x, ax, rev in zip(xs, in_axes, in_rev)]
    bound = dict(zip(b_in, states + slices))
    outs = ctx.graph.run_graph(body, ctx.scope, bound)
    new_vals, per_step = outs[:n], outs[n:]
    grown = []
    for acc, s, rev in zip(accs, per_step, out_rev):
        s1 = e.emit("expand_dims", [s], axes=[0])
        grown.append(e.emit("concat", [s1, acc] if rev else [acc, s1], "scan", axis=0))
    nxt = e.emit("add", [i, scalar(1, I64)], "next")
    close_loop(e, [*zip(states, new_vals), *zip(accs, grown)], (i, nxt), l_head, l_exit)

    results = list(states)
    for acc, raw in zip(accs, out_axes_raw):
        ax = norm_axis(int(raw), acc.rank)
        if ax:
            perm = list(range(1, ax + 1)) + [0] + list(range(ax + 1, acc.rank))
            acc = e.emit("transpose", [acc], "scanout", perm=perm)
        results.append(acc)
    return results
