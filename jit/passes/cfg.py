"""Control-flow and dataflow helpers shared by the passes.

Registers may be reassigned, so the passes never assume SSA. Two analyses cover them all:

- `liveness`: which registers may still be read (backward, union over successors);
- `forward_facts`: facts that hold on every path into a block (forward, intersection over
  predecessors), e.g. "%r holds the constant 3", "%r = mov %x", "add %a, %b is in %t". Each fact
  names the registers it mentions; redefining any of them kills it (that is what makes the
  analyses correct under reassignment).

Successors are read from the op table (attributes of kind LABEL), not from op names.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from isa.module import Block, Function, Instr, Reg
from isa.ops import OPS, AttrKind


def successors(block: Block) -> list[str]:
    """Labels the block may jump to (from its terminator's LABEL attributes)."""
    last = block.instrs[-1]
    op = OPS[last.op]
    return [last.attrs[a.name] for a in op.attrs if a.kind is AttrKind.LABEL]


def cfg_edges(func: Function) -> tuple[list[list[int]], list[list[int]]]:
    """(successors, predecessors) of each block, by block index."""
    index = {b.label: i for i, b in enumerate(func.blocks)}
    succs = [[index[lab] for lab in successors(b)] for b in func.blocks]
    preds: list[list[int]] = [[] for _ in func.blocks]
    for bi, ss in enumerate(succs):
        for s in ss:
            if bi not in preds[s]:
                preds[s].append(bi)
    return succs, preds


def reachable(func: Function) -> set[int]:
    """Indices of the blocks reachable from the entry block (block 0)."""
    succs, _ = cfg_edges(func)
    seen, stack = {0}, [0]
    while stack:
        for s in succs[stack.pop()]:
            if s not in seen:
                seen.add(s)
                stack.append(s)
    return seen


def uses(ins: Instr) -> set[str]:
    return {o.name for o in ins.operands if isinstance(o, Reg)}


def liveness(func: Function) -> tuple[list[set[str]], list[set[str]]]:
    """(live_in, live_out) register sets of each block.

    A register is live at a point when some path from there reads it before reassigning it.
    """
    succs, _ = cfg_edges(func)
    gen: list[set[str]] = []
    kill: list[set[str]] = []
    for b in func.blocks:
        g: set[str] = set()
        k: set[str] = set()
        for ins in b.instrs:
            g |= uses(ins) - k
            k |= set(ins.results)
        gen.append(g)
        kill.append(k)
    live_in: list[set[str]] = [set() for _ in func.blocks]
    live_out: list[set[str]] = [set() for _ in func.blocks]
    changed = True
    while changed:
        changed = False
        for bi in reversed(range(len(func.blocks))):
            out: set[str] = set()
            for s in succs[bi]:
                out |= live_in[s]
            new_in = gen[bi] | (out - kill[bi])
            if out != live_out[bi] or new_in != live_in[bi]:
                live_out[bi], live_in[bi] = out, new_in
                changed = True
    return live_in, live_out


def live_after_each(block: Block, live_out: set[str]) -> list[set[str]]:
    """The registers live just after each instruction of the block."""
    after: list[set[str]] = [set() for _ in block.instrs]
    live = set(live_out)
    for ii in reversed(range(len(block.instrs))):
        after[ii] = set(live)
        ins = block.instrs[ii]
        live = (live - set(ins.results)) | uses(ins)
    return after


# ---- forward must-facts ------------------------------------------------------------------------

@dataclass(frozen=True)
class Fact:
    value: Any
    mentions: frozenset[str]     # registers whose redefinition makes the fact false


class Facts(dict):
    """Facts by key, with an index from each register to the keys whose facts mention it, so
    that a redefinition kills its facts without a scan of them all (the scan made the passes
    quadratic in a block's length: an unrolled recurrence of 400 instructions spent most of the
    pipeline in it). The index may name keys whose fact is gone or changed: kill checks."""

    __slots__ = ("by_reg",)

    def __init__(self, *args: Any):
        super().__init__(*args)
        self.by_reg: dict[str, set] = {}
        for key, fact in self.items():
            self._index(key, fact)

    def _index(self, key: Hashable, fact: Fact) -> None:
        for r in fact.mentions:
            self.by_reg.setdefault(r, set()).add(key)

    def __setitem__(self, key: Hashable, fact: Fact) -> None:
        super().__setitem__(key, fact)
        self._index(key, fact)

    def copy(self) -> Facts:
        return Facts(self)


Same = Callable[[Any, Any], bool]
# step(block_index, instr_index, instr, facts): update `facts` in place for one instruction
Step = Callable[[int, int, Instr, Facts], None]


def kill(facts: Facts, regs: list[str] | set[str]) -> None:
    """Drop every fact that mentions one of `regs` (they are being reassigned)."""
    for r in regs:
        keys = facts.by_reg.pop(r, None)
        if not keys:
            continue
        for key in keys:
            fact = facts.get(key)
            if fact is not None and r in fact.mentions:
                del facts[key]


def _meet(states: list[Facts], same: Same) -> Facts:
    first, rest = states[0], states[1:]
    out = Facts()
    for key, fact in first.items():
        if all(key in s and s[key].mentions == fact.mentions and same(s[key].value, fact.value)
               for s in rest):
            out[key] = fact
    return out


def forward_facts(func: Function, step: Step, same: Same = lambda a, b: a == b,
                  blocks: set[int] | None = None) -> list[Facts | None]:
    """Facts true on entry to each block on every path from the function's entry.

    Optimistic iteration to a fixed point: a predecessor not yet visited is ignored (facts only
    shrink as more paths are seen, so this terminates). Blocks outside `blocks` (default: the
    reachable ones) are not analysed and get None.
    """
    _, preds = cfg_edges(func)
    live_blocks = reachable(func) if blocks is None else blocks
    outs: list[Facts | None] = [None] * len(func.blocks)
    entries: list[Facts | None] = [None] * len(func.blocks)
    changed = True
    while changed:
        changed = False
        for bi in sorted(live_blocks):
            ins_states = [outs[p] for p in preds[bi] if p in live_blocks and outs[p] is not None]
            if bi == 0:
                ins_states = [Facts()] + ins_states    # the function's entry: nothing known
            if not ins_states:
                continue
            entry = _meet(ins_states, same)
            facts = Facts(entry)
            for ii, ins in enumerate(func.blocks[bi].instrs):
                step(bi, ii, ins, facts)
            if outs[bi] is None or not _same_facts(outs[bi], facts, same):
                outs[bi] = facts
                changed = True
            entries[bi] = entry
    return entries


def _same_facts(a: Facts, b: Facts, same: Same) -> bool:
    return a.keys() == b.keys() and all(
        a[k].mentions == b[k].mentions and same(a[k].value, b[k].value) for k in a)
