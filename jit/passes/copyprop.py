"""Copy propagation.

After `%r = mov %x`, reads of %r may read %x instead, for as long as on every path neither %r
nor %x has been reassigned (a forward must-analysis over the CFG). Module constants propagate
the same way (`%r = mov @w` lets later reads name @w). The movs left without readers are then
removed by dead-code elimination. Values are unchanged: a mov is a copy, and both registers hold
the same value wherever the fact holds. A mov with a declared result type is a type
assertion as well as a copy, and is kept.
"""
from __future__ import annotations

from isa.module import Instr, Module, Operand, Reg

from .cfg import Fact, Facts, forward_facts, kill


def _resolve(o: Operand, facts: Facts) -> Operand:
    if isinstance(o, Reg):
        fact = facts.get(o.name)
        if fact is not None:
            return fact.value
    return o


def _step(bi: int, ii: int, ins: Instr, facts: Facts) -> None:
    # a mov with a declared type says more than its operand's type (the importer's
    # `%y = mov %ys : f32[20, batch, 64]` after a loop that grew %ys from [0, ...]): its readers
    # keep reading it, so that what follows is typed from it (a row split, a kernel's variant)
    copies = ins.op == "mov" and ins.result_type is None
    src = _resolve(ins.operands[0], facts) if copies else None
    kill(facts, ins.results)
    if src is None:
        return
    r = ins.results[0]
    if isinstance(src, Reg) and src.name == r:
        return                   # `%r = mov %r` says nothing
    mentions = {r} | ({src.name} if isinstance(src, Reg) else set())
    facts[r] = Fact(src, frozenset(mentions))


def propagate_copies(module: Module) -> bool:
    """Rewrite reads of copies to read the original, in place; return whether anything changed."""
    changed = False
    for func in module.functions.values():
        entries = forward_facts(func, _step)
        for bi, block in enumerate(func.blocks):
            if entries[bi] is None:
                continue
            facts = Facts(entries[bi])
            for ii, ins in enumerate(block.instrs):
                new_operands = [_resolve(o, facts) for o in ins.operands]
                if new_operands != ins.operands:
                    ins.operands = new_operands
                    changed = True
                _step(bi, ii, ins, facts)
    return changed
