"""Dead-code elimination.

- Blocks no path from the entry reaches are dropped (they can never run).
- An instruction is dropped when no path from it reads any of its results before they are
  reassigned (liveness over the CFG, so a register reassigned in a loop is handled) and it cannot
  trap (see effects.py: a trap is observable, so a possibly-trapping instruction stays even when
  unused; control flow, asserts and calls always stay).
- Values that only feed themselves go too: an instruction is useful when it cannot go (it may
  trap, or is control flow, an assert or a call) or when a useful instruction reads a register
  it writes; the rest is dropped. Liveness alone keeps a loop-carried value that nothing after
  the loop reads (a recurrent layer's per-step outputs appended to a sequence when the model
  reads only the last state): each iteration reads the previous one's.
- Module constants that no instruction names any more are dropped (typically literals left over
  from folding); nothing else can observe them.

Removing one instruction can make the instructions feeding it dead, so it repeats to a fixed
point.
"""
from __future__ import annotations

from isa.module import ConstRef, Function, Instr, Module, Reg
from isa.verify import FunctionTypes, verify_module

from .cfg import live_after_each, liveness, reachable
from .common import instr_types_or_none
from .effects import kept_anyway, may_trap, removable_if_unused


def remove_unreachable_blocks(func: Function) -> bool:
    keep = reachable(func)
    if len(keep) == len(func.blocks):
        return False
    func.blocks = [b for bi, b in enumerate(func.blocks) if bi in keep]
    return True


def remove_dead_instructions(func: Function, types: FunctionTypes) -> bool:
    """One sweep over `func` (blocks must all be reachable and `types` current)."""
    _, live_out = liveness(func)
    changed = False
    for bi, block in enumerate(func.blocks):
        after = live_after_each(block, live_out[bi])
        kept = []
        for ii, ins in enumerate(block.instrs):
            unused = not (set(ins.results) & after[ii])
            if unused and removable_if_unused(ins, instr_types_or_none(types, bi, ii)):
                changed = True
                continue
            kept.append(ins)
        block.instrs = kept
    return changed


def remove_useless_instructions(func: Function, types: FunctionTypes) -> bool:
    """Drop every instruction no useful one depends on, cycles through a loop included (a read
    depends on every instruction that writes the register, wherever it is: conservative)."""
    writers: dict[str, list[Instr]] = {}
    useful: set[int] = set()
    work: list[Instr] = []
    rest: list[tuple[Instr, object]] = []

    def keep(ins: Instr) -> None:
        useful.add(id(ins))
        work.append(ins)
        while work:
            for o in work.pop().operands:
                for w in writers.get(o.name, ()) if isinstance(o, Reg) else ():
                    if id(w) not in useful:
                        useful.add(id(w))
                        work.append(w)

    for block in func.blocks:
        for ins in block.instrs:
            for name in ins.results:
                writers.setdefault(name, []).append(ins)
    for bi, block in enumerate(func.blocks):
        for ii, ins in enumerate(block.instrs):
            t = instr_types_or_none(types, bi, ii)
            if kept_anyway(ins, t):
                keep(ins)
            else:
                rest.append((ins, t))
    # whether an instruction may trap matters only where nothing kept reads it: the probes run
    # references (a small CNN's dce probed its convolutions 76 times, 11 of the 26 ms to its
    # first result); the instructions kept are the same as asking of every one
    for ins, t in rest:
        if id(ins) not in useful and may_trap(ins, t):
            keep(ins)
    changed = False
    for block in func.blocks:
        kept = [ins for ins in block.instrs if id(ins) in useful]
        changed |= len(kept) != len(block.instrs)
        block.instrs = kept
    return changed


def remove_unused_constants(module: Module) -> bool:
    named = {o.name for f in module.functions.values() for b in f.blocks for ins in b.instrs
             for o in ins.operands if isinstance(o, ConstRef)}
    unused = [name for name in module.constants if name not in named]
    for name in unused:
        del module.constants[name]
    return bool(unused)


def eliminate_dead_code(module: Module, table: dict | None = None) -> bool:
    """Remove unreachable blocks, unused instructions and constants in place; return whether
    anything changed. `table`: the module's verified types, where the caller has them."""
    changed = False
    for func in module.functions.values():
        changed |= remove_unreachable_blocks(func)
    if changed:
        table = None
    while True:
        table = table if table is not None else verify_module(module)
        swept = False
        for func in module.functions.values():
            # the second sweep reads the types by position: only while they are current
            swept |= (remove_dead_instructions(func, table[func.name])
                      or remove_useless_instructions(func, table[func.name]))
        if not swept:
            break
        changed = True
        table = None
    return remove_unused_constants(module) or changed
