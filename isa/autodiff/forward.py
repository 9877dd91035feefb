"""Forward mode (`jvp`) by transposing reverse mode.

For F's first result y(x), `grad` with a cotangent parameter gives the linear map u -> J^T u.
The map's own adjoint is t -> J t, the Jacobian-vector product: so `jvp` writes a scalar helper
H(x, u, t) = sum_i <(J^T u)_i, t_i>, differentiates H with respect to u (H is linear in u, so any
u works; zeros are used), and the result is J t. Every op whose adjoint rule is itself
differentiable gets a forward mode with no second table of rules (the trick JAX calls
"linearize and transpose", here "transpose twice"); the cost is about two reverse passes.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..callgraph import draws_random, unused_name
from ..module import Block, Function, Instr, Module, Param, Reg
from ..types import TensorType
from .api import _resolve, grad
from .emitter import GradError


def jvp(module: Module, func: str = "main", wrt: Sequence[str] | None = None, *,
        name: str | None = None) -> Module:
    """A copy of `module` with `@{func}_jvp` added: `func`'s parameters followed by one tangent
    per `wrt` name (default: every float parameter), returning `func`'s results followed by the
    directional derivative of its first result along those tangents."""
    if func not in module.functions:
        raise GradError(f"module {module.name} has no function @{func}")
    f = module.functions[func]
    if draws_random(module, func):
        # the tangent comes from a second run (a grad of the function), which would draw
        # other numbers than the run whose results are returned
        raise GradError(f"jvp of @{func}: it draws random numbers, and a forward-mode "
                        f"derivative here runs the function twice (use grad)")
    targets, _ = _resolve(module, f, wrt)
    names = [("%" if k == "param" else "@") + n for k, n in targets]
    vjp_name = _free(module, f"{func}.vjp_for_jvp")
    m1 = grad(module, func, names, cotangent=True, name=vjp_name)
    first = f.results[0]
    types = [f.params[[p.name for p in f.params].index(n)].type if k == "param"
             else module.constants[n].type for k, n in targets]

    # H(params, u, tangents) = sum over wrt of <(J^T u)_i, t_i>
    h_name = _free(m1, f"{func}.jvp_inner")
    taken = {p.name for p in f.params}
    u = _fresh("u", taken)
    tangents = [_fresh(f"t.{n}", taken) for _, n in targets]
    params = list(f.params) + [Param(u, first)] + \
        [Param(t, ty) for t, ty in zip(tangents, types)]
    n_res = len(f.results)
    outs = [f"o.{i}" for i in range(n_res + len(targets))]
    body = [Instr("call", outs, [Reg(p.name) for p in f.params] + [Reg(u)],
                  {"callee": vjp_name})]
    total = None
    for i, t in enumerate(tangents):
        prod, part = f"p.{i}", f"s.{i}"
        body.append(Instr("mul", [prod], [Reg(outs[n_res + i]), Reg(t)]))
        body.append(Instr("reduce_sum", [part], [Reg(prod)]))
        if total is None:
            total = part
        else:
            body.append(Instr("add", [f"acc.{i}"], [Reg(total), Reg(part)]))
            total = f"acc.{i}"
    scalar = TensorType(first.dtype, ())
    body.append(Instr("ret", [], [Reg(total)]))
    m1.functions[h_name] = Function(h_name, params, [scalar], [Block("entry", body)], loc=f.loc)

    inner_grad = _free(m1, f"{h_name}_grad")
    m2 = grad(m1, h_name, ["%" + u], name=inner_grad)

    # F_jvp(params, tangents) = F's results, then the inner gradient at u = 0
    jname = name or f"{func}_jvp"
    if jname in m2.functions:
        raise GradError(f"module {module.name} already has a function @{jname}")
    taken = {p.name for p in f.params} | set(tangents)
    res = [_fresh(f"y.{i}", taken) for i in range(n_res)]
    h, jt = _fresh("h.value", taken), _fresh("jt", taken)
    code = [Instr("call", res, [Reg(p.name) for p in f.params], {"callee": func})]
    zero = _zeros_like(code, Reg(res[0]), first, taken)
    code.append(Instr("call", [h, jt], [Reg(p.name) for p in f.params] + [zero] +
                      [Reg(t) for t in tangents], {"callee": inner_grad}))
    code.append(Instr("ret", [], [Reg(r) for r in res] + [Reg(jt)]))
    m2.functions[jname] = Function(jname, list(f.params) + [Param(t, ty) for t, ty in
                                                            zip(tangents, types)],
                                   list(f.results) + [first], [Block("entry", code)], loc=f.loc)
    from ..verify import verify_module
    verify_module(m2)
    return m2


def _zeros_like(code: list[Instr], v: Reg, t: TensorType, taken: set[str]) -> Reg:
    z = _fresh("zero", taken)
    if t.is_static:
        code.append(Instr("const", [z], [], {"value": np.zeros((), t.dtype.np), "type": t}))
    else:
        shape, value = _fresh("zero.shape", taken), _fresh("zero.v", taken)
        code.append(Instr("shape_of", [shape], [v]))
        code.append(Instr("const", [value], [], {"value": np.zeros((), t.dtype.np),
                                                 "type": TensorType(t.dtype, ())}))
        code.append(Instr("fill", [z], [Reg(shape), Reg(value)]))
    return Reg(z)


def _free(module: Module, base: str) -> str:
    return unused_name(module.functions, base)


def _fresh(base: str, taken: set[str]) -> str:
    name = base
    while name in taken:
        name += "_"
    taken.add(name)
    return name



