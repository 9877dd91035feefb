"""Inlining calls of one-block functions: a module transform.

A call costs the VM a frame and argument checks, and it is a wall for the JIT's regions and, in
an adjoint, a second run of the callee's forward code (a call's adjoint recomputes it). A callee
of one block (straight-line code ending in `ret`, calls allowed; most models, and wrappers) is
copied into the caller instead:
its registers renamed apart, its parameters bound to the arguments by `mov`, its `ret` turned
into `mov`s to the call's results.
"""
from __future__ import annotations

from .module import Block, Function, Imm, Instr, Module, Reg


def _inlinable(f: Function) -> bool:
    if len(f.blocks) != 1:
        return False
    instrs = f.blocks[0].instrs
    return bool(instrs) and instrs[-1].op == "ret" and \
        all(i.op not in ("jmp", "br", "ret") for i in instrs[:-1])


def inline_calls(module: Module, func: str) -> Module:
    """A copy of `module` in which `func`'s calls of one-block functions are inlined, one level
    deep (calls the inlined code makes stay calls; a function never inlines itself)."""
    out = Module(module.name, dict(module.constants), dict(module.functions), module.source)
    f = module.functions[func]
    taken = {p.name for p in f.params} | {r for b in f.blocks for i in b.instrs
                                          for r in i.results}
    counter = [0]

    def fresh(name: str) -> str:
        while True:
            counter[0] += 1
            cand = f"{name}.i{counter[0]}"
            if cand not in taken:
                taken.add(cand)
                return cand

    blocks = []
    for b in f.blocks:
        instrs: list[Instr] = []
        for ins in b.instrs:
            callee = module.functions.get(ins.attrs.get("callee", "")) if ins.op == "call" \
                else None
            if callee is None or not _inlinable(callee) or callee.name == func:
                instrs.append(ins)
                continue
            names: dict[str, str] = {}
            for p, a in zip(callee.params, ins.operands):
                names[p.name] = fresh(p.name)
                instrs.append(Instr("mov", [names[p.name]], [a], loc=ins.loc))
            body = callee.blocks[0].instrs
            for c in body[:-1]:
                ops = [Reg(names[o.name]) if isinstance(o, Reg) else o for o in c.operands]
                res = []
                for r in c.results:
                    names[r] = fresh(r)
                    res.append(names[r])
                instrs.append(Instr(c.op, res, ops, dict(c.attrs), c.result_type, c.loc))
            for r, o in zip(ins.results, body[-1].operands):
                src = Reg(names[o.name]) if isinstance(o, Reg) else o
                if isinstance(src, Imm):
                    raise ValueError("a returned immediate")     # ret takes registers
                instrs.append(Instr("mov", [r], [src], loc=ins.loc))
        blocks.append(Block(b.label, instrs))
    out.functions[func] = Function(f.name, list(f.params), list(f.results), blocks, loc=f.loc)
    return out
