"""Common-subexpression elimination, across blocks.

An expression (op, operands, attributes with their defaults, declared result type) is available
at a point when on every path to it an instruction computed it into a register and neither that
register nor any register operand has been reassigned since (a forward must-analysis, so it
works down dominator paths and through loops, with reassignment). A later instruction computing
an available expression becomes `mov` of the earlier result: ops are deterministic functions of
their operands and attributes, so the value is the same; and if the earlier one would have
trapped, the later one is never reached.

Not eliminated: control flow and calls, and `mov` itself (nothing to gain).
Copy propagation and dead-code elimination clean up the movs this leaves.
"""
from __future__ import annotations

from isa.module import Instr, Module, Reg
from isa.ops import OPS, Family

from .cfg import Fact, Facts, forward_facts, kill
from .common import attr_key, operand_key, regs_of


def expression_key(ins: Instr) -> tuple | None:
    """What the instruction computes, exactly; None for instructions CSE leaves alone."""
    op = OPS[ins.op]
    if op.family is Family.CONTROL or ins.op == "mov" or not ins.results or op.random:
        return None         # (two draws of random numbers are two different values)
    attrs = op.with_defaults(ins.attrs)
    return (ins.op, tuple(operand_key(o) for o in ins.operands),
            tuple(sorted((k, attr_key(v)) for k, v in attrs.items())),
            str(ins.result_type) if ins.result_type is not None else None, len(ins.results))


def _step(bi: int, ii: int, ins: Instr, facts: Facts) -> None:
    key = expression_key(ins)
    kill(facts, ins.results)
    # `%x = add %x, 1` overwrites its own operand: the expression is gone once it ran
    if key is not None and key not in facts and not (set(ins.results) & regs_of(ins)):
        facts[key] = Fact(tuple(ins.results), frozenset(regs_of(ins) | set(ins.results)))


def eliminate_common_subexpressions(module: Module) -> bool:
    """Replace recomputations by copies, in place; return whether anything changed."""
    changed = False
    for func in module.functions.values():
        entries = forward_facts(func, _step)
        for bi, block in enumerate(func.blocks):
            if entries[bi] is None:
                continue
            facts = Facts(entries[bi])
            out: list[Instr] = []
            for ii, ins in enumerate(block.instrs):
                key = expression_key(ins)
                hit = facts.get(key) if key is not None else None
                _step(bi, ii, ins, facts)
                if hit is None or len(hit.value) != 1:
                    out.append(ins)    # (several results would need several movs; calls only)
                    continue
                changed = True
                earlier: str = hit.value[0]
                if earlier == ins.results[0]:
                    continue           # the register already holds this very value
                out.append(Instr("mov", list(ins.results), [Reg(earlier)], {}, ins.result_type,
                                 ins.loc))
            block.instrs = out
    return changed
