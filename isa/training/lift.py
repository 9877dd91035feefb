"""Constants to parameters: what makes a model's weights trainable.

A model reads its weights as module constants (`@w1`: the assembler's `file "..."`, an ONNX
model's initializers). Training passes them in and gets updated ones out, so `lift` writes a copy
of the model function (and of every function it calls that reads one of them) that takes the
named constants as trailing parameters instead.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..callgraph import constants_read
from ..module import Block, ConstRef, Function, Instr, Module, Param, Reg


def _reads(module: Module, names: set[str]) -> dict[str, list[str]]:
    """For each function, the named constants it reads, through its calls too (sorted)."""
    return {f: sorted(v) for f, v in constants_read(module, names).items()}


def lift(module: Module, func: str, names: Sequence[str], suffix: str = ".lifted"
         ) -> tuple[Module, str]:
    """A copy of `module` plus `@{func}{suffix}`: `func` with `names` as trailing parameters
    (in the given order). Returns the module and the new function's name."""
    order = list(names)
    reads = _reads(module, set(order))
    out = Module(module.name, dict(module.constants), dict(module.functions), module.source)
    made: dict[str, str] = {}

    def new_name(f: str) -> str:
        name, n = f + suffix, 1
        while name in out.functions:
            n += 1
            name = f"{f}{suffix}{n}"
        return name

    def rewrite(fname: str, params: list[str]) -> str:
        if fname in made:
            return made[fname]
        f = module.functions[fname]
        name = new_name(fname)
        made[fname] = name
        taken = {p.name for p in f.params} | {r for b in f.blocks for i in b.instrs
                                              for r in i.results}
        reg = {}
        for c in params:
            r = c
            while r in taken:
                r += "_"
            taken.add(r)
            reg[c] = r
        out.functions[name] = None  # reserve the name while callees are written
        blocks = []
        for b in f.blocks:
            instrs = []
            for ins in b.instrs:
                ops = [Reg(reg[o.name]) if isinstance(o, ConstRef) and o.name in reg else o
                       for o in ins.operands]
                attrs = dict(ins.attrs)
                if ins.op == "call" and reads[ins.attrs["callee"]]:
                    callee = ins.attrs["callee"]
                    attrs["callee"] = rewrite(callee, reads[callee])
                    ops = ops + [Reg(reg[c]) for c in reads[callee]]
                instrs.append(Instr(ins.op, list(ins.results), ops, attrs, ins.result_type,
                                    ins.loc))
            blocks.append(Block(b.label, instrs))
        extra = [Param(reg[c], module.constants[c].type) for c in params]
        out.functions[name] = Function(name, list(f.params) + extra, list(f.results), blocks,
                                       loc=f.loc)
        return name

    # the top function takes exactly `names`, in order, even those it does not read
    return out, rewrite(func, order)
