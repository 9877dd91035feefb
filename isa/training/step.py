"""`train_step` as dlvm code: a model, a loss and an optimizer in one function.

    step(weights..., state..., lr, inputs..., labels) -> (new weights..., new state..., loss)

built from a model function whose weights are module constants: the weights are lifted to
parameters (lift.py), the loss is written after the model (losses below), `grad` gives its
gradient with respect to the weights, and the optimizer's update is written after that. All of
it is ordinary dlvm code: it verifies, serializes, runs in the interpreter and tiers up.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..builder import FunctionBuilder
from ..callgraph import unused_name
from ..dtypes import BY_NAME
from ..inline import inline_calls
from ..module import Function, Module, Param, Reg
from ..ops.shapes import is_float
from ..types import TensorType
from .lift import lift


class TrainingError(ValueError):
    """A model, loss or optimizer that cannot make a train step (with the reason)."""


@dataclass(frozen=True)
class SGD:
    """p -= lr * v with v = momentum * v + (g + weight_decay * p) (PyTorch's SGD)."""
    momentum: float = 0.0
    weight_decay: float = 0.0
    nesterov: bool = False

    def state(self, w: TensorType) -> list[TensorType]:
        return [w] if self.momentum else []

    shared: tuple = ()


@dataclass(frozen=True)
class Adam:
    """Adam with bias correction (Kingma and Ba; PyTorch's Adam, weight decay added to g)."""
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.0

    def state(self, w: TensorType) -> list[TensorType]:
        return [w, w]

    shared: tuple = ("step",)     # one step count for all weights


def cross_entropy(fb: FunctionBuilder, pred: Reg, labels: Reg) -> Reg:
    """Softmax cross-entropy of logits [N, C] against class indices [N], averaged over N."""
    logp = fb.log_softmax(pred, axis=-1)
    picked = fb.gather_elements(logp, fb.expand_dims(labels, axes=[1]), axis=1)
    return fb.neg(fb.reduce_mean(picked))


def mse(fb: FunctionBuilder, pred: Reg, target: Reg) -> Reg:
    """Mean squared error over every element."""
    d = fb.sub(pred, target)
    return fb.reduce_mean(fb.mul(d, d))


LOSSES = {"cross_entropy": cross_entropy, "mse": mse}


@dataclass
class TrainStep:
    """What the generated function takes and gives, for the Python API around it."""
    module: Module
    name: str
    weights: list[str]
    weight_types: list[TensorType]
    state_types: list[TensorType]      # per weight, then the shared ones, in parameter order
    inputs: list[Param]
    labels: TensorType
    loss_fn: str                       # @objective(inputs..., labels, weights...) -> loss
    model: str                         # the lifted model: (inputs..., weights...) -> outputs
    gradient: str = ""                 # (inputs..., labels, weights...) -> (loss, grads...)
    update: str = ""                   # (weights..., state..., lr, grads...) -> (weights..., state...)


def _fresh_function(module: Module, base: str) -> str:
    return unused_name(module.functions, base)


def build_train_step(module: Module, model: str = "main", weights: Sequence[str] | None = None,
                     loss: str = "cross_entropy", optimizer: SGD | Adam | None = None,
                     name: str = "train_step") -> TrainStep:
    from ..autodiff import grad
    from ..verify import verify_module
    if model not in module.functions:
        raise TrainingError(f"module {module.name} has no function @{model}")
    if loss not in LOSSES:
        raise TrainingError(f"unknown loss '{loss}' (losses: {', '.join(LOSSES)})")
    optimizer = optimizer or SGD()
    f = module.functions[model]
    if weights is None:
        used = {o.name for b in f.blocks for i in b.instrs for o in i.operands
                if type(o).__name__ == "ConstRef"}
        weights = [c for c in module.constants if c in used and
                   is_float(module.constants[c].type.dtype)]
    weights = list(weights)
    for w in weights:
        if w not in module.constants:
            raise TrainingError(f"'{w}' is not a constant of module {module.name}")
        if not is_float(module.constants[w].type.dtype):
            raise TrainingError(f"constant @{w} is {module.constants[w].type}: only float "
                                f"weights train")
    if not weights:
        raise TrainingError(f"@{model} reads no float constant to train")
    m, lifted = lift(module, model, weights)
    lf = m.functions[lifted]
    n_in = len(f.params)
    inputs, wparams = lf.params[:n_in], lf.params[n_in:]
    pred_t = f.results[0]
    dt = pred_t.dtype
    labels_t = TensorType(BY_NAME["i64"], pred_t.shape[:1]) if loss == "cross_entropy" \
        else pred_t

    # the objective: (inputs..., labels, weights...) -> loss
    obj = _fresh_function(m, f"{model}.objective")
    taken = {p.name for p in lf.params}
    label_name = "labels"
    while label_name in taken:
        label_name += "_"
    fn = Function(obj, list(inputs) + [Param(label_name, labels_t)] + list(wparams),
                  [TensorType(dt, ())])
    m.functions[obj] = fn
    fb = FunctionBuilder(fn, m)
    outs = fb.call(lifted, *[fb.arg(p.name) for p in inputs + wparams],
                   n_results=len(f.results))
    pred = outs[0] if isinstance(outs, list) else outs
    fb.ret(LOSSES[loss](fb, pred, fb.arg(label_name)))
    # a one-block model is inlined into the objective: its adjoint then needs no second run
    # of the model's forward (a call's adjoint recomputes the callee) and no call frames
    m = inline_calls(m, obj)
    g = grad(m, obj, ["%" + p.name for p in wparams], name=_fresh_function(m, f"{obj}_grad"))
    gname = [n for n in g.functions if n not in m.functions and n.startswith(obj + "_grad")][0]

    # the step: (weights..., state..., lr, inputs..., labels) -> (weights..., state..., loss)
    step_name = _fresh_function(g, name)
    wtypes = [p.type for p in wparams]
    state_types = [t for w in wtypes for t in optimizer.state(w)] + \
        [TensorType(dt, ()) for _ in optimizer.shared]
    names = {p.name for p in inputs} | {label_name}
    wnames = [_unique(f"w.{p.name}", names) for p in wparams]
    snames = [_unique(f"s.{i}", names) for i in range(len(state_types))]
    lr = _unique("lr", names)
    params = [Param(n, t) for n, t in zip(wnames, wtypes)] + \
        [Param(n, t) for n, t in zip(snames, state_types)] + [Param(lr, TensorType(dt, ()))] + \
        list(inputs) + [Param(label_name, labels_t)]
    results = wtypes + state_types + [TensorType(dt, ())]
    # the update alone: (weights..., state..., lr, grads...) -> (weights..., state...), for
    # data-parallel training, where the gradients are averaged between the two halves
    update_name = _fresh_function(g, f"{step_name}.update")
    gnames = [_unique(f"g.{p.name}", set(wnames) | set(snames) | {lr}) for p in wparams]
    uf = Function(update_name, [Param(n, t) for n, t in zip(wnames, wtypes)] +
                  [Param(n, t) for n, t in zip(snames, state_types)] +
                  [Param(lr, TensorType(dt, ()))] +
                  [Param(n, t) for n, t in zip(gnames, wtypes)], wtypes + state_types)
    g.functions[update_name] = uf
    ub = FunctionBuilder(uf, g)
    new_w, new_s = _update(ub, optimizer, [ub.arg(n) for n in wnames],
                           [ub.arg(n) for n in gnames], [ub.arg(n) for n in snames], ub.arg(lr))
    ub.ret(*new_w, *new_s)

    sf = Function(step_name, params, results)
    g.functions[step_name] = sf
    sb = FunctionBuilder(sf, g)
    got = sb.call(gname, *[sb.arg(p.name) for p in inputs], sb.arg(label_name),
                  *[sb.arg(n) for n in wnames], n_results=1 + len(wparams))
    loss_v, grads = got[0], got[1:]
    updated = sb.call(update_name, *[sb.arg(n) for n in wnames], *[sb.arg(n) for n in snames],
                      sb.arg(lr), *grads, n_results=len(wtypes) + len(state_types))
    updated = updated if isinstance(updated, list) else [updated]
    sb.ret(*updated, loss_v)
    g = inline_calls(g, step_name)        # the gradient's wrapper and the update: no frames
    verify_module(g)
    return TrainStep(g, step_name, weights, wtypes, state_types, list(inputs), labels_t, obj,
                     lifted, gradient=gname, update=update_name)


def _unique(base: str, taken: set[str]) -> str:
    while base in taken:
        base += "_"
    taken.add(base)
    return base


def _update(fb: FunctionBuilder, opt, ws, gs, state, lr):
    """The optimizer's update, as dlvm instructions."""
    new_w, new_s = [], []
    if isinstance(opt, SGD):
        for i, (w, g) in enumerate(zip(ws, gs)):
            if opt.weight_decay:
                g = fb.add(g, fb.mul(w, float(opt.weight_decay)))
            step = g
            if opt.momentum:
                v = fb.add(fb.mul(state[i], float(opt.momentum)), g)
                new_s.append(v)
                step = fb.add(g, fb.mul(v, float(opt.momentum))) if opt.nesterov else v
            new_w.append(fb.sub(w, fb.mul(step, lr)))
        return new_w, new_s
    if isinstance(opt, Adam):
        t = fb.add(state[-1], 1.0)
        bc1 = fb.sub(1.0, fb.pow(float(opt.beta1), t))
        bc2 = fb.sub(1.0, fb.pow(float(opt.beta2), t))
        step_size = fb.div(lr, bc1)
        root_bc2 = fb.sqrt(bc2)
        ms, vs = [], []
        for i, (w, g) in enumerate(zip(ws, gs)):
            if opt.weight_decay:
                g = fb.add(g, fb.mul(w, float(opt.weight_decay)))
            m = fb.add(fb.mul(state[2 * i], float(opt.beta1)), fb.mul(g, 1.0 - opt.beta1))
            v = fb.add(fb.mul(state[2 * i + 1], float(opt.beta2)),
                       fb.mul(fb.mul(g, g), 1.0 - opt.beta2))
            denom = fb.add(fb.div(fb.sqrt(v), root_bc2), float(opt.eps))
            new_w.append(fb.sub(w, fb.mul(fb.div(m, denom), step_size)))
            ms.append(m)
            vs.append(v)
        for m, v in zip(ms, vs):
            new_s += [m, v]
        new_s.append(t)
        return new_w, new_s
    raise TrainingError(f"unknown optimizer {opt!r} (SGD or Adam)")
