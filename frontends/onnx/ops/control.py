"""Graph structure: Constant, and the If / Loop subgraphs lowered to dlvm blocks.

If:   br %cond, then, else; each branch computes its outputs, copies them into shared result
      registers and jumps to the join block.
Loop: counter, condition and carried values live in registers; a header block tests
      `i < M and cond`; the body block runs the subgraph, copies its outputs back and jumps to
      the header; scan outputs grow by concat.

A carried value may change shape between iterations; the body is first converted in a dry run
(then rolled back) to learn which dims vary, so its operations never assume a size that only the
first iteration has.
"""
from __future__ import annotations

import numpy as np

from isa.dtypes import BY_NAME
from isa.module import Reg
from isa.types import TensorType

from ..registry import NodeCtx, onnx_op
from ..tensors import as_text
from ..values import Emitter, Value, known
from .common import cast, scalar
from .sequence import EmptySequence, stacked_empty

BOOL, I64 = BY_NAME["bool"], BY_NAME["i64"]


@onnx_op("Constant", since=9)     # 9 on: the value forms read below (function bodies keep old opsets)
def constant(ctx: NodeCtx) -> list[Value]:
    for name, conv in (("value", None), ("value_float", np.float32), ("value_floats", np.float32),
                       ("value_int", np.int64), ("value_ints", np.int64)):
        if ctx.has(name):
            v = ctx.attr(name)
            return [known(np.asarray(v) if conv is None else np.asarray(v, dtype=conv))]
    if ctx.has("value_string"):
        return [known(np.array(str(ctx.attr("value_string")), dtype=object))]
    if ctx.has("value_strings"):
        return [known(as_text(np.array(ctx.attr("value_strings"), dtype=object).reshape(-1)))]
    for name in ("sparse_value",):
        if ctx.has(name):
            ctx.attr(name, None)
            raise ctx.fail(f"Constant with {name} is not supported")
    raise ctx.fail("Constant has no value")


def _scalar_bool(e: Emitter, v: Value) -> Value:
    v = cast(e, v, BOOL)
    return e.emit("reshape", [v], "cond", shape=[]) if v.rank else v


def _joined(ctx: NodeCtx, a: TensorType, b: TensorType) -> TensorType:
    if a.dtype != b.dtype or a.rank != b.rank:
        raise ctx.fail(f"branch or iteration outputs {a} and {b} differ in dtype or rank")
    return a.with_shape(tuple(x if x == y else None for x, y in zip(a.shape, b.shape)))


def close_loop(e: Emitter, updates: list[tuple[Value, Value]], counter: tuple[Value, Value],
               head: str, exit_label: str) -> None:
    """End a lowered loop body (Loop, Scan): write every (loop register, new value) pair back,
    step the counter, jump to the header, and continue at the exit block. New values that are
    loop registers themselves are copied out first: one state may feed another's update."""
    index, nxt = counter
    loop_regs = {r.operand for r, _ in updates} | {index.operand}
    values = [e.emit("mov", [v], "tmp") if v.operand in loop_regs else v for _, v in updates]
    for (r, _), v in zip(updates, values):
        e.mov(v, r.operand.name)
    e.mov(nxt, index.operand.name)
    e.fb.jmp(head)
    e.fb.label(exit_label)


def _reg(e: Emitter, hint: str, t: TensorType) -> Value:
    """A register for a loop-carried value of type `t`, declared with it: its first value (an
    empty stack [0, ...] that the loop grows) must not fix the type later instructions are
    checked with (a static reshape of an RNN's outputs [T, 1, B, H] after the loop)."""
    r = Value(t, Reg(e.regs.fresh(hint, "t")))
    e.fb.declare(r.operand.name, t)
    return r


@onnx_op("If", since=13)
def if_(ctx: NodeCtx) -> list[Value]:
    e = ctx.e
    cond = ctx.req(0)
    then_g, else_g = ctx.attr("then_branch"), ctx.attr("else_branch")
    if cond.known:      # decided at import: inline the branch taken
        g = then_g if bool(np.asarray(cond.const).reshape(-1)[0]) else else_g
        return ctx.graph.run_graph(g, ctx.scope)
    c = _scalar_bool(e, cond)
    l_then, l_else, l_join = e.label("then"), e.label("else"), e.label("endif")
    e.fb.br(e.materialize(c), l_then, l_else)
    e.fb.label(l_then)
    outs_t = ctx.graph.run_graph(then_g, ctx.scope)
    regs = [Reg(e.regs.fresh(n or "ifout", "t")) for n in ctx.node.output]
    for r, v in zip(regs, outs_t):
        e.mov(v, r.name)
    e.fb.jmp(l_join)
    e.fb.label(l_else)
    outs_e = ctx.graph.run_graph(else_g, ctx.scope)
    if len(outs_e) != len(outs_t):
        raise ctx.fail("the branches give different numbers of outputs")
    for a, b in zip(outs_t, outs_e):
        if a.dtype == b.dtype and a.rank != b.rank:
            # dlvm registers keep one rank: only a condition known at import can pick
            raise ctx.not_known(0, "the condition of an If whose branches give different ranks")
    for r, v in zip(regs, outs_e):
        e.mov(v, r.name)
    e.fb.jmp(l_join)
    e.fb.label(l_join)
    return [Value(_joined(ctx, a.type, b.type), r) for r, a, b in zip(regs, outs_t, outs_e)]


class _Rollback:
    """Snapshot of the emitter so that a dry conversion can be undone."""

    def __init__(self, e: Emitter):
        self.e = e
        fb = e.fb
        self.n_blocks = len(fb.func.blocks)
        self.block = fb.block
        self.n_instrs = len(fb.block.instrs)
        self.taken = (set(e.regs.taken), set(e.labels.taken))

    def undo(self) -> None:
        e, fb = self.e, self.e.fb
        del fb.func.blocks[self.n_blocks:]
        fb.block = self.block
        del fb.block.instrs[self.n_instrs:]
        # module constants made during the dry run stay: a known Value of an enclosing scope
        # that the body used now names one (materialize sets Value.operand), and a rolled-back
        # name could be given to a different constant later
        e.regs.taken, e.labels.taken = (set(s) for s in self.taken)


@onnx_op("Loop", since=13)
def loop(ctx: NodeCtx) -> list[Value]:
    e = ctx.e
    body = ctx.attr("body")
    m, cond = ctx.input(0), ctx.input(1)
    inits = list(ctx.inputs[2:])
    n_carried = len(inits)
    b_in = [i.name for i in body.input]

    # carried types: widen the dims that change across an iteration (dry runs, rolled back). A
    # sequence carried from SequenceEmpty has no element shape until the body inserts one: the
    # first dry run binds it as it is and takes the stacked type the body gives back
    types = [None if isinstance(v, EmptySequence) else v.type for v in inits]
    for _ in range(4):
        snap = _Rollback(e)
        bound = {b_in[0]: Value(TensorType(I64, ()), Reg("dry_i")),
                 b_in[1]: Value(TensorType(BOOL, ()), Reg("dry_c"))}
        bound.update({n: v if t is None else Value(t, Reg(f"dry_v{k}"))
                      for k, (n, t, v) in enumerate(zip(b_in[2:], types, inits))})
        outs = ctx.graph.run_graph(body, ctx.scope, bound)
        snap.undo()
        new = [o.type.with_shape((None,) + o.type.shape[1:]) if t is None else
               _joined(ctx, t, o.type) for t, o in zip(types, outs[1:1 + n_carried])]
        scan_types = [o.type for o in outs[1 + n_carried:]]
        if new == types:
            break
        types = new

    i = _reg(e, "iter", TensorType(I64, ()))
    e.mov(known(np.array(0, np.int64)), i.operand.name)
    c = _reg(e, "cond", TensorType(BOOL, ()))
    e.mov(_scalar_bool(e, cond) if cond is not None else known(np.array(True)), c.operand.name)
    carried = []
    inits = [stacked_empty(ctx, t) if isinstance(v, EmptySequence) else v
             for v, t in zip(inits, types)]
    for k, (v, t) in enumerate(zip(inits, types)):
        r = _reg(e, ctx.node.output[k] if k < len(ctx.node.output) else "carried", t)
        e.mov(v, r.operand.name)
        carried.append(r)
    accs = []
    for k, t in enumerate(scan_types):
        if not t.is_static:
            raise ctx.fail("a scan output needs a static shape per iteration")
        r = _reg(e, ctx.node.output[n_carried + k], t.with_shape((None,) + t.shape))
        e.mov(known(np.zeros((0,) + t.shape, t.dtype.np)), r.operand.name)
        accs.append(r)
    max_trip = None
    if m is not None:
        max_trip = e.emit("reshape", [m], "trip", shape=[]) if m.rank else m
        max_trip = cast(e, max_trip, I64)

    l_head, l_body, l_exit = e.label("loop"), e.label("body"), e.label("endloop")
    e.fb.jmp(l_head)
    e.fb.label(l_head)
    go = c
    if max_trip is not None:
        go = e.emit("and", [e.emit("lt", [i, max_trip], "inrange"), c], "go")
    e.fb.br(e.materialize(go), l_body, l_exit)
    e.fb.label(l_body)
    bound = {b_in[0]: i, b_in[1]: c}
    bound.update({n: v for n, v in zip(b_in[2:], carried)})
    outs = ctx.graph.run_graph(body, ctx.scope, bound)
    new_c = _scalar_bool(e, outs[0])
    new_vals = outs[1:1 + n_carried]
    scans = outs[1 + n_carried:]
    grown = [e.emit("concat", [acc, e.emit("expand_dims", [s], axes=[0])], "scan", axis=0)
             for acc, s in zip(accs, scans)]
    nxt = e.emit("add", [i, scalar(1, I64)], "next")
    close_loop(e, [(c, new_c), *zip(carried, new_vals), *zip(accs, grown)], (i, nxt), l_head,
               l_exit)
    return carried + accs


@onnx_op("OptionalHasElement", since=15)
def optional_has_element(ctx: NodeCtx) -> list[Value]:
    # dlvm values are tensors: an input present is a tensor (true), an absent one is empty
    present = len(ctx.node.input) > 0 and bool(ctx.node.input[0]) and ctx.input(0) is not None
    return [known(np.array(present))]


@onnx_op("OptionalGetElement", since=15)
def optional_get_element(ctx: NodeCtx) -> list[Value]:
    # of a tensor (the only optional content dlvm has) it is the tensor itself
    return [ctx.req(0)]
