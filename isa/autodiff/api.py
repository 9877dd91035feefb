"""`grad` and `jvp`: the module transforms users call.

    m2 = grad(module, "main", wrt=["w1", "b1"])    # adds @main_grad
    m3 = jvp(module, "main", wrt=["x"])            # adds @main_jvp

Both return a new module (the input is not changed) holding every original function plus the
new entry and the adjoint functions it calls. The generated code is ordinary dlvm: it verifies,
serializes, disassembles, runs in the interpreter and tiers up like any other.
"""
from __future__ import annotations

import copy
import difflib
from collections.abc import Sequence

import numpy as np

from ..errors import InvalidError
from ..module import Block, ConstRef, Function, Instr, Module, Param, Reg
from ..types import TensorType
from ..verify import verify_module
from .emitter import GradError, NameGen
from .reverse import ReverseBuilder, _is_float


def _resolve(module: Module, func: Function, wrt: Sequence[str] | None
             ) -> tuple[list[tuple[str, str]], set[str]]:
    """wrt names -> [(kind, name)] with kind "param" or "const"; `%x` and `@w` force a kind."""
    params = {p.name: p for p in func.params}
    if wrt is None:
        picked = [("param", p.name) for p in func.params if _is_float(p.type)]
        if not picked:
            raise GradError(f"@{func.name} has no float parameter to differentiate with respect "
                            f"to; name constants with wrt")
        return picked, set()
    out: list[tuple[str, str]] = []
    for raw in wrt:
        name = raw.strip()
        kinds = ["param", "const"]
        if name.startswith("%"):
            name, kinds = name[1:], ["param"]
        elif name.startswith("@"):
            name, kinds = name[1:], ["const"]
        if "param" in kinds and name in params:
            t = params[name].type
            what = f"parameter %{name}"
        elif "const" in kinds and name in module.constants:
            t = module.constants[name].type
            what = f"constant @{name}"
        else:
            known = list(params) + list(module.constants)
            close = difflib.get_close_matches(name, known, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise GradError(f"'{raw}' is neither a parameter of @{func.name} nor a module "
                            f"constant{hint}")
        if not _is_float(t):
            raise GradError(f"cannot differentiate with respect to {what}: it is {t}, and "
                            f"integer, boolean and index values carry no gradient")
        kind = "param" if what.startswith("parameter") else "const"
        if (kind, name) in out:
            raise GradError(f"'{raw}' is named twice in wrt")
        out.append((kind, name))
    return out, {n for k, n in out if k == "const"}


def grad(module: Module, func: str = "main", wrt: Sequence[str] | None = None, *,
         cotangent: bool | None = None, name: str | None = None) -> Module:
    """A copy of `module` with `@{func}_grad` added: the same parameters (plus, when the first
    result is not a scalar or `cotangent` is true, a last parameter holding the first result's
    cotangent), returning `func`'s results followed by the gradient of the first result with
    respect to each name in `wrt` (parameters and constants; default: every float parameter)."""
    if func not in module.functions:
        close = difflib.get_close_matches(func, list(module.functions), n=3)
        hint = f" (did you mean {', '.join('@' + c for c in close)}?)" if close else ""
        raise GradError(f"module {module.name} has no function @{func}{hint}")
    out = copy.copy(module)
    out.functions = dict(module.functions)
    out.constants = dict(module.constants)
    tables = verify_module(out)
    f = out.functions[func]
    targets, wrt_consts = _resolve(out, f, wrt)
    if not f.results:
        raise GradError(f"@{func} returns nothing to differentiate")
    first = f.results[0]
    if not _is_float(first):
        raise GradError(f"the first result of @{func} is {first}: only a float result has a "
                        f"gradient")
    if cotangent is None:
        cotangent = first.rank != 0
    rb = ReverseBuilder(out, tables, wrt_consts)
    varied = frozenset(n for k, n in targets if k == "param")
    v = rb.variant(func, (0,), varied)
    rb.run()

    gname = name or f"{func}_grad"
    if gname in out.functions:
        raise GradError(f"module {module.name} already has a function @{gname}")
    taken = {p.name for p in f.params}
    seed_name = "d_out"
    while seed_name in taken:
        seed_name += "_"
    params = list(f.params) + ([Param(seed_name, first)] if cotangent else [])
    names = NameGen(taken | {seed_name})
    head = f.blocks[0].label
    _, entry_results = rb.signature(v, head)
    instrs: list[Instr] = []
    if cotangent:
        seed = Reg(seed_name)
    else:
        seed = Reg(names.fresh("seed"))
        instrs.append(Instr("const", [seed.name], [], {
            "value": np.array(1, dtype=first.dtype.np), "type": TensorType(first.dtype, ())}))
    n = len(f.results)
    res = [names.fresh("r") for _ in entry_results]
    instrs.append(Instr("call", res, [Reg(r) for r in v.trees[head].live_in] + [seed],
                        {"callee": rb.entry_name(v)}))
    by_param = dict(zip(v.ct_live_in(head), res[n:]))
    by_const = dict(zip(v.consts, res[n + len(by_param):]))
    grads: list = []
    zeros = 0
    results = list(f.results)
    for kind, nm in targets:
        got = by_param.get(nm) if kind == "param" else by_const.get(nm)
        t = out.functions[func].params[[p.name for p in f.params].index(nm)].type \
            if kind == "param" else out.constants[nm].type
        if got is None:     # the result does not depend on it: a zero gradient
            zeros += 1
            z = names.fresh("zero")
            src = Reg(nm) if kind == "param" else ConstRef(nm)
            if t.is_static:
                instrs.append(Instr("const", [z], [], {"value": np.zeros((), t.dtype.np),
                                                       "type": t}))
            else:
                shape, value = names.fresh("zero_shape"), names.fresh("zero_value")
                instrs.append(Instr("shape_of", [shape], [src]))
                instrs.append(Instr("const", [value], [], {"value": np.zeros((), t.dtype.np),
                                                           "type": TensorType(t.dtype, ())}))
                instrs.append(Instr("fill", [z], [Reg(shape), Reg(value)]))
            got = z
        grads.append(Reg(got))
        results.append(t)
    instrs.append(Instr("ret", [], [Reg(r) for r in res[:n]] + grads))
    out.functions[gname] = Function(gname, params, results, [Block("entry", instrs)], loc=f.loc)
    try:
        verify_module(out)
    except InvalidError as e:   # our bug: say so plainly rather than blame the user's program
        raise GradError(f"internal error: the adjoint of @{func} does not verify: {e}") from e
    return out
