"""RNN, GRU and LSTM decomposed into a dlvm loop over time steps per direction.

The input projection X·Wᵀ (+ the input bias) of every step is one matmul before the loop; the
loop body gathers step t's rows, adds H·Rᵀ, applies the gate activations (ONNX's formulas, in
the input's dtype) and writes the new states. Per-step outputs grow by `concat` (prepended for
the reverse direction, so Y stays in time order). With `sequence_lens`, a batch entry whose
sequence has ended (t >= len) keeps its state and gets zeros in Y; for the reverse direction
this also starts each entry at its own last step, as ONNX defines.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from isa.dtypes import BY_NAME
from isa.types import TensorType

from ..registry import NodeCtx, onnx_op
from ..values import Emitter, Value, known
from .common import cast, scalar, where
from .control import _reg

I64 = BY_NAME["i64"]
Act = Callable[[Value], Value]

# activations that read alpha / beta, with ONNX's defaults
_PARAMS = {"Affine": (1.0, 0.0), "LeakyRelu": (0.01, None), "ThresholdedRelu": (1.0, None),
           "ScaledTanh": (1.0, 1.0), "HardSigmoid": (0.2, 0.5), "Elu": (1.0, None)}


def _activation(e: Emitter, name: str, alpha: float | None, beta: float | None) -> Act:
    def s(x: float, like: Value) -> Value:
        return scalar(x, like)

    simple = {"Sigmoid": "sigmoid", "Tanh": "tanh", "Relu": "relu"}
    if name in simple:
        return lambda v: e.emit(simple[name], [v], "act")
    if name == "Affine":
        return lambda v: e.emit("add", [e.emit("mul", [v, s(alpha, v)]), s(beta, v)], "act")
    if name == "LeakyRelu":
        return lambda v: where(e, e.emit("lt", [v, s(0, v)]), e.emit("mul", [v, s(alpha, v)]), v)
    if name == "ThresholdedRelu":
        return lambda v: where(e, e.emit("gt", [v, s(alpha, v)]), v, s(0, v))
    if name == "ScaledTanh":
        return lambda v: e.emit("mul", [e.emit("tanh", [e.emit("mul", [v, s(beta, v)])]),
                                        s(alpha, v)], "act")
    if name == "HardSigmoid":
        return lambda v: e.emit("max", [e.emit("min", [e.emit(
            "add", [e.emit("mul", [v, s(alpha, v)]), s(beta, v)]), s(1, v)]), s(0, v)], "act")
    if name == "Elu":
        return lambda v: where(e, e.emit("lt", [v, s(0, v)]), e.emit(
            "mul", [e.emit("sub", [e.emit("exp", [v]), s(1, v)]), s(alpha, v)]), v)
    if name == "Softsign":
        return lambda v: e.emit("div", [v, e.emit("add", [e.emit("abs", [v]), s(1, v)])], "act")
    if name == "Softplus":
        return lambda v: e.emit("log", [e.emit("add", [e.emit("exp", [v]), s(1, v)])], "act")
    raise ValueError(name)


def _activations(ctx: NodeCtx, defaults: list[str], n_dir: int) -> list[list[Act]]:
    """Per direction, the gate activations (f, g[, h]) with their alpha / beta."""
    names = [str(a) for a in ctx.attr("activations", defaults * n_dir)]
    if len(names) != len(defaults) * n_dir:
        raise ctx.fail(f"activations lists {len(names)} functions; {len(defaults) * n_dir} "
                       f"expected")
    alphas = list(ctx.attr("activation_alpha", []))
    betas = list(ctx.attr("activation_beta", []))
    out: list[Act] = []
    for name in names:
        canon = next((k for k in (*_PARAMS, "Sigmoid", "Tanh", "Relu", "Softsign", "Softplus")
                      if k.lower() == name.lower()), None)
        if canon is None:
            raise ctx.fail(f"activation {name} is not supported")
        alpha = beta = None
        if canon in _PARAMS:
            da, db = _PARAMS[canon]
            alpha = float(alphas.pop(0)) if alphas else da
            if db is not None:
                beta = float(betas.pop(0)) if betas else db
        out.append(_activation(ctx.e, canon, alpha, beta))
    k = len(defaults)
    return [out[d * k:(d + 1) * k] for d in range(n_dir)]


class _Cell:
    """One direction's weights, as Values the step function reads; or, with `d` None, both
    directions' stacked on a leading axis of 2 (states [2, B, H], products batched)."""

    def __init__(self, ctx: NodeCtx, d: int | None, gates: int, hidden: int):
        e = ctx.e
        self.e, self.hidden = e, hidden
        if d is None:
            pick = lambda v: v  # noqa: E731
            swap = [0, 2, 1]
        else:
            pick = lambda v: e.emit("gather", [v, scalar(d, I64)], "w", axis=0)  # noqa: E731
            swap = [1, 0]
        self.w_t = e.emit("transpose", [pick(ctx.req(1))], "wt", perm=swap)
        self.r_t = e.emit("transpose", [pick(ctx.req(2))], "rt", perm=swap)
        b = ctx.input(3)
        gh = gates * hidden
        if b is None:
            b = known(np.zeros((2, 2 * gh), ctx.req(0).dtype.np))
            b = b if d is None else pick(b)
        else:
            b = pick(b)
        if d is None:      # [2, 1, 2GH]: broadcasts against the stacked [2, B, GH]
            b = e.emit("expand_dims", [b], axes=[1])
        self.wb = e.emit("slice", [b], "wb", starts=[0], ends=[gh], axes=[-1])
        self.rb = e.emit("slice", [b], "rb", starts=[gh], ends=[2 * gh], axes=[-1])
        p = ctx.input(7) if ctx.node.op_type == "LSTM" else None
        if p is not None:
            p = pick(p) if d is not None else e.emit("expand_dims", [p], axes=[1])
        self.p = p

    def gate(self, v: Value, k: int, width: int = 1) -> Value:
        h = self.hidden
        return self.e.emit("slice", [v], "gate", starts=[k * h], ends=[(k + width) * h], axes=[-1])


def _clip(e: Emitter, v: Value, clip: float | None) -> Value:
    if clip is None:
        return v
    return e.emit("min", [e.emit("max", [v, scalar(-clip, v)]), scalar(clip, v)], "clip")


def _run_direction(ctx: NodeCtx, x: Value, cell: _Cell, acts: list[Act], states: list[Value],
                   reverse: bool, lens: Value | None, clip: float | None) -> tuple[Value, list]:
    """One direction's loop; returns Y_d [T, B, H] and the final states. The reverse direction
    reads the input projections reversed in time and its outputs are reversed once at the end
    (prepending each step's output copied all of them per step)."""
    e, op = ctx.e, ctx.node.op_type
    # every step's input projection at once: [T, B, I] @ [I, G*H]
    xw = e.emit("add", [e.emit("matmul", [x, cell.w_t], "xw"), cell.wb], "xw")
    if op != "GRU":
        xw = e.emit("add", [xw, cell.rb], "xw")
    if reverse:
        xw = _reverse_time(e, xw, 0)

    def valid(i: Value, trip: Value) -> Value:               # [B, 1]
        t = e.emit("sub", [e.emit("sub", [trip, scalar(1, I64)]), i], "t") if reverse else i
        return e.emit("expand_dims", [e.emit("lt", [t, lens], "valid")], axes=[1])

    acc, regs = _time_loop(ctx, x, xw, 0, cell, acts, states,
                           valid if lens is not None else None, clip)
    return (_reverse_time(e, acc, 0) if reverse else acc), regs


def _reverse_time(e: Emitter, v: Value, axis: int) -> Value:
    return e.emit("slice", [v], "rev", starts=[-1], ends=[-(2 ** 62)], axes=[axis], steps=[-1])


def _run_both(ctx: NodeCtx, x: Value, cell: _Cell, acts: list[Act], states: list[Value],
              lens: Value | None, clip: float | None) -> tuple[Value, list]:
    """Both directions of a bidirectional layer in one loop: step i runs the forward direction
    at time i and the reverse one at time T-1-i on states stacked [2, B, H], so each step is one
    batched product (the two directions' on two threads) and one set of gate kernels, where two
    loops ran twice the steps of half the work. Y grows by appending (the reverse direction's
    outputs in step order, reversed in time once at the end). Returns Y [T, 2, B, H] and the
    final states [2, B, H]."""
    e, op = ctx.e, ctx.node.op_type
    # the input projections, the reverse direction's over the input reversed in time: the
    # inputs stacked [2, T, B, I] times the weights [2, 1, I, GH], one batched product
    xs = e.emit("concat", [e.emit("expand_dims", [x], axes=[0]),
                           e.emit("expand_dims", [_reverse_time(e, x, 0)], axes=[0])], "x", axis=0)
    bias = cell.wb if op == "GRU" else e.emit("add", [cell.wb, cell.rb], "b")
    xw = e.emit("add", [e.emit("matmul", [xs, e.emit("expand_dims", [cell.w_t], axes=[1])], "xw"),
                        e.emit("expand_dims", [bias], axes=[1])], "xw")   # [2, T, B, GH]

    def valid(i: Value, trip: Value) -> Value:               # [2, B, 1]
        # the forward direction is at time i, the reverse one at T-1-i
        back = e.emit("sub", [e.emit("sub", [trip, scalar(1, I64)]), i], "t")
        ts = e.emit("concat", [e.emit("expand_dims", [i], axes=[0]),
                               e.emit("expand_dims", [back], axes=[0])], "t", axis=0)
        both = e.emit("lt", [e.emit("expand_dims", [ts], axes=[1]),
                             e.emit("expand_dims", [lens], axes=[0])], "valid")
        return e.emit("expand_dims", [both], axes=[2])

    acc, regs = _time_loop(ctx, x, xw, 1, cell, acts, states,
                           valid if lens is not None else None, clip)
    fwd = e.emit("slice", [acc], "y", starts=[0], ends=[1], axes=[1])
    back = _reverse_time(e, e.emit("slice", [acc], "y", starts=[1], ends=[2], axes=[1]), 0)
    return e.emit("concat", [fwd, back], "y", axis=1), regs


def _time_loop(ctx: NodeCtx, x: Value, xw: Value, step_axis: int, cell: _Cell, acts: list[Act],
               states: list[Value], valid, clip: float | None) -> tuple[Value, list]:
    """The loop over x's T time steps: step i takes xw's index i along `step_axis`, runs the
    cell, and appends its output (zeros and the states kept where `valid(i, trip)` says the
    sequence has ended). Returns the outputs [T, *state] and the final states' registers."""
    e, op = ctx.e, ctx.node.op_type
    t_len = x.shape[0]
    if isinstance(t_len, int):
        trip = known(np.array(t_len, np.int64))
    else:
        trip = e.emit("gather", [e.emit("shape_of", [x]), scalar(0, I64)], "trip", axis=0)
    i = _reg(e, "step", TensorType(I64, ()))
    e.mov(known(np.array(0, np.int64)), i.operand.name)
    regs = []
    for st in states:
        r = _reg(e, "state", st.type)
        e.mov(st, r.operand.name)
        regs.append(r)
    h_t = states[0].type
    if None in h_t.shape:
        raise ctx.fail(f"RNN states of type {h_t} need a static or named batch size")
    acc = _reg(e, "ys", h_t.with_shape((None,) + h_t.shape))
    # no step yet: [0, *state] (a named batch binds when the program runs)
    e.mov(e.emit_const_fill(0, h_t.with_shape((0,) + h_t.shape), "ys"), acc.operand.name)

    l_head, l_body, l_exit = e.label("rnn"), e.label("rnnstep"), e.label("endrnn")
    e.fb.jmp(l_head)
    e.fb.label(l_head)
    e.fb.br(e.materialize(e.emit("lt", [i, trip], "inrange")), l_body, l_exit)
    e.fb.label(l_body)
    x_t = e.emit("gather", [xw, i], "xt", axis=step_axis)
    new = _step(e, op, ctx, cell, acts, x_t, regs, clip)
    y = new[0]
    if valid:
        ok = valid(i, trip)
        new = [where(e, ok, n, r) for n, r in zip(new, regs)]
        y = where(e, ok, new[0], scalar(0, y))
    grown = e.emit("concat", [acc, e.emit("expand_dims", [y], axes=[0])], "ys", axis=0)
    for r, v in zip(regs, new):
        e.mov(v, r.operand.name)
    e.mov(grown, acc.operand.name)
    e.mov(e.emit("add", [i, scalar(1, I64)], "next"), i.operand.name)
    e.fb.jmp(l_head)
    e.fb.label(l_exit)
    if t_len is not None:
        # the register grows from [0, ...]; after the loop it holds T steps, a size or name the
        # layers after it keep (a Reshape [0, 0, -1] of Y, the next layer's states' batch)
        acc = e.emit("mov", [acc], "ys", result_type=acc.type.with_shape((t_len,) + h_t.shape))
    return acc, regs


def _step(e: Emitter, op: str, ctx: NodeCtx, cell: _Cell, acts: list[Act], x_t: Value,
          regs: list[Value], clip: float | None) -> list[Value]:
    h = regs[0]
    hr = e.emit("matmul", [h, cell.r_t], "hr")
    if op == "RNN":
        return [acts[0](_clip(e, e.emit("add", [x_t, hr]), clip))]
    if op == "GRU":
        f, g = acts
        zr = e.emit("add", [e.emit("add", [cell.gate(x_t, 0, 2), cell.gate(hr, 0, 2)]),
                            cell.gate(cell.rb, 0, 2)])
        z = f(_clip(e, cell.gate(zr, 0), clip))
        r = f(_clip(e, cell.gate(zr, 1), clip))
        rbh = cell.gate(cell.rb, 2)
        if ctx.attr("linear_before_reset", 0):
            rh = e.emit("mul", [r, e.emit("add", [cell.gate(hr, 2), rbh])])
        else:
            rh_mat = e.emit("matmul", [e.emit("mul", [r, h]), cell.gate(cell.r_t, 2)])
            rh = e.emit("add", [rh_mat, rbh])
        hh = g(_clip(e, e.emit("add", [cell.gate(x_t, 2), rh]), clip))
        one_minus_z = e.emit("sub", [scalar(1, z), z])
        return [e.emit("add", [e.emit("mul", [one_minus_z, hh]), e.emit("mul", [z, h])], "h")]
    # LSTM: gates i, o, f, c; peepholes i, o, f
    f, g, hact = acts
    c = regs[1]
    pre = e.emit("add", [x_t, hr], "pre")

    def peep(v: Value, k: int, state: Value) -> Value:
        if cell.p is None:
            return v
        return e.emit("add", [v, e.emit("mul", [cell.gate(cell.p, k), state])])

    ig = f(_clip(e, peep(cell.gate(pre, 0), 0, c), clip))
    if ctx.attr("input_forget", 0):
        fg = e.emit("sub", [scalar(1, ig), ig])
    else:
        fg = f(_clip(e, peep(cell.gate(pre, 2), 2, c), clip))
    cc = g(_clip(e, cell.gate(pre, 3), clip))
    c_new = e.emit("add", [e.emit("mul", [fg, c]), e.emit("mul", [ig, cc])], "c")
    og = f(_clip(e, peep(cell.gate(pre, 1), 1, c_new), clip))
    return [e.emit("mul", [og, hact(c_new)], "h"), c_new]


def _initial_state(ctx: NodeCtx, init: Value | None, d: int | None, dtype, batch,
                   hidden: int) -> Value:
    """Direction d's initial state [B, H] (zeros without one), or with d None both directions'
    [2, B, H]."""
    e = ctx.e
    if init is not None:
        return init if d is None else e.emit("gather", [init, scalar(d, I64)], "h0", axis=0)
    if batch is None:
        raise ctx.fail("initial states need a static or named batch size")
    shape = (batch, hidden) if d is not None else (2, batch, hidden)
    return e.emit_const_fill(0, TensorType(dtype, shape), "h0")


def _same_activations(ctx: NodeCtx, k: int) -> bool:
    """Whether both directions apply the same gate activations (the defaults, or halves equal
    in name and in alpha / beta): then one loop runs both."""
    names = [str(a).lower() for a in ctx.attr("activations", [])]
    if names and names[:k] != names[k:]:
        return False
    for attr in ("activation_alpha", "activation_beta"):
        vals = list(ctx.attr(attr, []))
        if vals and (len(vals) % 2 or vals[:len(vals) // 2] != vals[len(vals) // 2:]):
            return False
    return True


def _check_shapes(ctx: NodeCtx, x: Value, gates: int, hidden: int, n_dir: int,
                 layout: int) -> None:
    """Each weight and initial state against hidden_size and the directions: a model whose
    shapes disagree (torch's dynamo exporter writes an LSTM with proj_size as a plain LSTM of
    the projected size, keeping the unprojected weights and cell state) gets an error naming
    the input, not a broadcast failure deep in the step's arithmetic."""
    size = x.shape[0 if layout else 1], x.shape[2]
    want = {1: ("W", (n_dir, gates * hidden, size[1])), 2: ("R", (n_dir, gates * hidden, hidden)),
            3: ("B", (n_dir, 2 * gates * hidden)),
            5: ("initial_h", (size[0], n_dir, hidden) if layout else (n_dir, size[0], hidden)),
            6: ("initial_c", (size[0], n_dir, hidden) if layout else (n_dir, size[0], hidden)),
            7: ("P", (n_dir, 3 * hidden))}
    if ctx.node.op_type != "LSTM":
        del want[6], want[7]
    for k, (name, shape) in want.items():
        v = ctx.input(k)
        if v is None:
            continue
        if v.rank != len(shape) or any(isinstance(a, int) and isinstance(b, int) and a != b
                                       for a, b in zip(v.shape, shape)):
            shown = ", ".join("?" if d is None else str(d) for d in shape)
            raise ctx.fail(f"input {name} has type {v.type}, where hidden_size {hidden}, "
                           f"{n_dir} direction(s) and X of type {x.type} need shape [{shown}]")


_GATES = {"RNN": (1, ["Tanh"]), "GRU": (3, ["Sigmoid", "Tanh"]),
          "LSTM": (4, ["Sigmoid", "Tanh", "Tanh"])}


@onnx_op("RNN", "GRU", "LSTM", since=7)     # 14 added layout (read with its default)
def recurrent(ctx: NodeCtx) -> list[Value]:
    e, op = ctx.e, ctx.node.op_type
    gates, default_acts = _GATES[op]
    x = ctx.req(0)
    hidden = int(ctx.attr("hidden_size"))
    direction = str(ctx.attr("direction", "forward"))
    if direction not in ("forward", "reverse", "bidirectional"):
        raise ctx.fail(f"direction {direction} is not supported")
    n_dir = 2 if direction == "bidirectional" else 1
    layout = int(ctx.attr("layout", 0))
    clip = ctx.attr("clip", None)
    clip = None if clip is None else float(clip)
    acts = _activations(ctx, default_acts, n_dir)
    if op == "LSTM":
        ctx.attr("input_forget", 0)
    if op == "GRU":
        ctx.attr("linear_before_reset", 0)
    if x.rank != 3:
        raise ctx.fail(f"X must have rank 3, got {x.type}")
    _check_shapes(ctx, x, gates, hidden, n_dir, layout)
    if layout:
        x = e.emit("transpose", [x], "x", perm=[1, 0, 2])
    batch = x.shape[1]
    lens = ctx.input(4)
    if lens is not None:
        lens = cast(e, lens, I64)
    inits = []
    for k in (5, 6):
        v = ctx.input(k) if (k == 5 or op == "LSTM") else None
        if v is not None and layout:
            v = e.emit("transpose", [v], "init", perm=[1, 0, 2])
        inits.append(v)
    n_states = 2 if op == "LSTM" else 1
    if n_dir == 2 and _same_activations(ctx, len(default_acts)):
        cell = _Cell(ctx, None, gates, hidden)
        states = [_initial_state(ctx, inits[k], None, x.dtype, batch, hidden)
                  for k in range(n_states)]
        y, fin = _run_both(ctx, x, cell, acts[0], states, lens, clip)
        outs = [y, *fin]
        if layout:
            outs = [e.emit("transpose", [outs[0]], "y", perm=[2, 0, 1, 3])] + \
                   [e.emit("transpose", [v], "yh", perm=[1, 0, 2]) for v in outs[1:]]
        return outs[:max(1, len(ctx.node.output))]
    ys, finals = [], []
    for d in range(n_dir):
        cell = _Cell(ctx, d, gates, hidden)
        states = [_initial_state(ctx, inits[k], d, x.dtype, batch, hidden)
                  for k in range(n_states)]
        reverse = direction == "reverse" or d == 1
        y, fin = _run_direction(ctx, x, cell, acts[d], states, reverse, lens, clip)
        ys.append(e.emit("expand_dims", [y], axes=[1]))
        finals.append([e.emit("expand_dims", [f], axes=[0]) for f in fin])
    y = ys[0] if n_dir == 1 else e.emit("concat", ys, "y", axis=1)
    outs = [y] + [finals[0][k] if n_dir == 1 else
                  e.emit("concat", [f[k] for f in finals], "yh", axis=0) for k in range(n_states)]
    if layout:
        outs = [e.emit("transpose", [outs[0]], "y", perm=[2, 0, 1, 3])] + \
               [e.emit("transpose", [v], "yh", perm=[1, 0, 2]) for v in outs[1:]]
    return outs[:max(1, len(ctx.node.output))]
