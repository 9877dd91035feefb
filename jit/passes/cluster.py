"""Views up to the run boundary before them, so that the elementwise runs they split fuse.

A fused region is a contiguous run of elementwise instructions (jit/regions.py). Exporters
interleave the slices of a tensor with the arithmetic on them: an LSTM step is

    %pre = add %xt, %hr
    %i = slice %pre {..}      %ai = sigmoid %i
    %f = slice %pre {..}      %af = sigmoid %f
    %g = slice %pre {..}      %ag = tanh %g      %c = ... mul, mul, add
    %o = slice %pre {..}      %ao = sigmoid %o   %h = ... tanh, mul

four slices splitting the gates' arithmetic into four kernels, each call a few microseconds of a
step that computes little. A slice depends only on its operand, so it may run as soon as that
operand is made: moved up to the nearest point before it where no run is split (after %pre
above), the gates are one kernel.

Only ops that cannot trap move (a slice clamps its bounds; a transpose and an expand_dims of a
value whose type the verifier checked are always defined), so no trap changes place; a register
defined more than once in the function is left alone, and an instruction never moves above a
definition of its operands or a read of its result.
"""
from __future__ import annotations

from isa.module import Instr, Module, Reg

from .common import definition_counts, fuses_elementwise

# movement that never traps (see above)
MOVABLE = frozenset({"slice", "transpose", "expand_dims"})


def _fuses(ins: Instr) -> bool:
    return fuses_elementwise(ins.op)


def cluster_views(module: Module) -> bool:
    """Move each view that splits an elementwise run up to the nearest run boundary it may move
    to; return whether anything moved."""
    changed = False
    for func in module.functions.values():
        defs = definition_counts(func)
        for block in func.blocks:
            instrs = block.instrs
            for j in range(len(instrs)):
                ins = instrs[j]
                if ins.op not in MOVABLE or len(ins.results) != 1 or defs[ins.results[0]] != 1:
                    continue
                if not (0 < j < len(instrs) - 1 and _fuses(instrs[j - 1]) and _fuses(instrs[j + 1])):
                    continue        # not splitting a run
                to = _target(instrs, j)
                if to is not None:
                    instrs.insert(to, instrs.pop(j))
                    changed = True
    return changed


def _target(instrs: list[Instr], j: int) -> int | None:
    """The latest position p < j that the instruction at j may move to (nothing in [p, j)
    defines its operands or reads its result) where it splits no run, or None."""
    ins = instrs[j]
    reads = {o.name for o in ins.operands if isinstance(o, Reg)}
    result = ins.results[0]
    for p in range(j - 1, -1, -1):
        k = instrs[p]
        if reads & set(k.results) or any(isinstance(o, Reg) and o.name == result
                                         for o in k.operands):
            return None
        if p == 0 or not (_fuses(instrs[p - 1]) and _fuses(k)):
            return p
    return None
