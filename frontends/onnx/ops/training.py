"""ai.onnx.preview.training optimizer steps (Adagrad, Momentum, Adam) as arithmetic: each
updates one or more tensors from their gradients and state, with the learning rate R and the
step count T as inputs. Computed in f64 (as ONNX's reference mixes the scalars in) and cast back
to each tensor's dtype."""
from __future__ import annotations

import numpy as np

from isa.dtypes import BY_NAME

from ..registry import NodeCtx, onnx_op
from ..values import Value, known
from .common import cast

TRAINING = "ai.onnx.preview.training"
F64 = BY_NAME["f64"]


def _c(v: float) -> Value:
    return known(np.array(v, np.float64))


def _groups(ctx: NodeCtx, per: int) -> list[list[Value]]:
    """The tensors after R and T, as `per` equal groups (X..., G..., state...)."""
    vals = [v for v in ctx.inputs[2:]]
    if len(vals) % per or any(v is None for v in vals):
        raise ctx.fail(f"expected R, T and {per} groups of tensors, got {len(ctx.inputs)} inputs")
    n = len(vals) // per
    return [vals[k * n:(k + 1) * n] for k in range(per)]


def _scalars(ctx: NodeCtx) -> tuple[Value, Value]:
    e = ctx.e
    r = cast(e, ctx.req(0), F64)
    t = cast(e, ctx.req(1), F64)
    if r.rank:
        r = e.emit("reshape", [r], shape=[])
    if t.rank:
        t = e.emit("reshape", [t], shape=[])
    return r, t


def _emit(e, op: str, *args: Value) -> Value:
    return e.emit(op, list(args))


@onnx_op("Adagrad", since=1, domain=TRAINING)
def adagrad(ctx: NodeCtx) -> list[Value]:
    e = ctx.e
    decay = float(ctx.attr("decay_factor", 0.0))
    eps = float(ctx.attr("epsilon", 0.0))
    norm = float(ctx.attr("norm_coefficient", 0.0))
    r, t = _scalars(ctx)
    rate = _emit(e, "div", r, _emit(e, "add", _c(1.0), _emit(e, "mul", t, _c(decay))))
    xs, gs, hs = _groups(ctx, 3)
    new_x, new_h = [], []
    for x, g, h in zip(xs, gs, hs):
        x64, g64, h64 = (cast(e, v, F64) for v in (x, g, h))
        greg = _emit(e, "add", _emit(e, "mul", _c(norm), x64), g64)
        h2 = _emit(e, "add", h64, _emit(e, "mul", greg, greg))
        step = _emit(e, "div", _emit(e, "mul", rate, greg),
                     _emit(e, "add", _emit(e, "sqrt", h2), _c(eps)))
        new_x.append(cast(e, _emit(e, "sub", x64, step), x.dtype))
        new_h.append(cast(e, h2, h.dtype))
    return new_x + new_h


@onnx_op("Momentum", since=1, domain=TRAINING)
def momentum(ctx: NodeCtx) -> list[Value]:
    e = ctx.e
    alpha, beta = float(ctx.attr("alpha")), float(ctx.attr("beta"))
    mode = str(ctx.attr("mode"))
    norm = float(ctx.attr("norm_coefficient"))
    if mode not in ("standard", "nesterov"):
        raise ctx.fail(f"mode {mode!r} (standard or nesterov)")
    r, t = _scalars(ctx)
    # beta applies from the second step on (T > 0); the first step takes the whole gradient
    b = e.emit("select", [_emit(e, "gt", t, _c(0.0)), _c(beta), _c(1.0)])
    xs, gs, vs = _groups(ctx, 3)
    new_x, new_v = [], []
    for x, g, v in zip(xs, gs, vs):
        x64, g64, v64 = (cast(e, a, F64) for a in (x, g, v))
        greg = _emit(e, "add", _emit(e, "mul", _c(norm), x64), g64)
        v2 = _emit(e, "add", _emit(e, "mul", _c(alpha), v64), _emit(e, "mul", b, greg))
        d = v2 if mode == "standard" else _emit(e, "add", greg, _emit(e, "mul", _c(alpha), v2))
        new_x.append(cast(e, _emit(e, "sub", x64, _emit(e, "mul", r, d)), x.dtype))
        new_v.append(cast(e, v2, v.dtype))
    return new_x + new_v


@onnx_op("Adam", since=1, domain=TRAINING)
def adam(ctx: NodeCtx) -> list[Value]:
    e = ctx.e
    alpha, beta = float(ctx.attr("alpha", 0.9)), float(ctx.attr("beta", 0.999))
    eps = float(ctx.attr("epsilon", 0.0))
    norm = float(ctx.attr("norm_coefficient", 0.0))
    post = float(ctx.attr("norm_coefficient_post", 0.0))
    r, t = _scalars(ctx)
    # bias correction from the second step on: r * sqrt(1 - beta^T) / (1 - alpha^T)
    corrected = _emit(e, "div", _emit(e, "mul", r, _emit(e, "sqrt", _emit(
        e, "sub", _c(1.0), _emit(e, "pow", _c(beta), t)))),
        _emit(e, "sub", _c(1.0), _emit(e, "pow", _c(alpha), t)))
    rate = e.emit("select", [_emit(e, "gt", t, _c(0.0)), corrected, r])
    xs, gs, vs, hs = _groups(ctx, 4)
    new_x, new_v, new_h = [], [], []
    for x, g, v, h in zip(xs, gs, vs, hs):
        x64, g64, v64, h64 = (cast(e, a, F64) for a in (x, g, v, h))
        greg = _emit(e, "add", _emit(e, "mul", _c(norm), x64), g64)
        v2 = _emit(e, "add", _emit(e, "mul", _c(alpha), v64), _emit(e, "mul", _c(1 - alpha), greg))
        h2 = _emit(e, "add", _emit(e, "mul", _c(beta), h64),
                   _emit(e, "mul", _c(1 - beta), _emit(e, "mul", greg, greg)))
        step = _emit(e, "div", v2, _emit(e, "add", _emit(e, "sqrt", h2), _c(eps)))
        x2 = _emit(e, "mul", _c(1 - post), _emit(e, "sub", x64, _emit(e, "mul", rate, step)))
        new_x.append(cast(e, x2, x.dtype))
        new_v.append(cast(e, v2, v.dtype))
        new_h.append(cast(e, h2, h.dtype))
    return new_x + new_v + new_h
