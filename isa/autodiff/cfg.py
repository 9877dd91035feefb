"""A function's control flow as the reverse-mode transform sees it: trees of blocks.

A *head* is the entry block or a block with more (or fewer) than one incoming edge: loop
headers and the joins after branches. Every other block has exactly one predecessor, so the
blocks reachable from a head without passing another head form a tree. Inside a tree no two
paths meet, so the tree's code can be put in SSA form without phis; each tree becomes one
function of the adjoint, and an edge into a head becomes a call (the call stack is the tape).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..module import Block, Function, Reg


def successors(block: Block) -> list[str]:
    last = block.instrs[-1] if block.instrs else None
    if last is None:
        return []
    if last.op == "jmp":
        return [last.attrs["target"]]
    if last.op == "br":
        return [last.attrs["if_true"], last.attrs["if_false"]]
    return []


@dataclass
class Tree:
    head: str
    blocks: list[str] = field(default_factory=list)    # the head first, then the tree in order
    live_in: list[str] = field(default_factory=list)    # registers live on entry to the head


def reachable(func: Function) -> list[str]:
    by = {b.label: b for b in func.blocks}
    seen: list[str] = []
    todo = [func.blocks[0].label]
    while todo:
        lab = todo.pop()
        if lab in seen:
            continue
        seen.append(lab)
        todo.extend(reversed(successors(by[lab])))
    return seen


def heads_of(func: Function) -> set[str]:
    """The entry, and every reachable block whose incoming edge count is not one."""
    by = {b.label: b for b in func.blocks}
    live = reachable(func)
    edges: dict[str, int] = {lab: 0 for lab in live}
    for lab in live:
        for s in successors(by[lab]):
            edges[s] += 1
    return {func.blocks[0].label} | {lab for lab, n in edges.items() if n != 1}


def liveness(func: Function) -> dict[str, set[str]]:
    """Registers live on entry to each block (used before any assignment on some path)."""
    by = {b.label: b for b in func.blocks}
    use: dict[str, set[str]] = {}
    defs: dict[str, set[str]] = {}
    for b in func.blocks:
        u, d = set(), set()
        for ins in b.instrs:
            for o in ins.operands:
                if isinstance(o, Reg) and o.name not in d:
                    u.add(o.name)
            d.update(ins.results)
        use[b.label], defs[b.label] = u, d
    live_in = {b.label: set() for b in func.blocks}
    changed = True
    while changed:
        changed = False
        for b in reversed(func.blocks):
            out = set().union(*(live_in[s] for s in successors(by[b.label])))
            new = use[b.label] | (out - defs[b.label])
            if new != live_in[b.label]:
                live_in[b.label], changed = new, True
    return live_in


def trees(func: Function) -> dict[str, Tree]:
    by = {b.label: b for b in func.blocks}
    heads = heads_of(func)
    live = liveness(func)
    order = {p.name: i for i, p in enumerate(func.params)}
    out: dict[str, Tree] = {}
    for h in [lab for lab in reachable(func) if lab in heads]:
        t = Tree(h)
        todo = [h]
        while todo:
            lab = todo.pop(0)
            t.blocks.append(lab)
            todo.extend(s for s in successors(by[lab]) if s not in heads)
        # parameters first in their order, then the rest by name: a stable signature
        t.live_in = sorted(live[h], key=lambda r: (order.get(r, len(order)), r))
        out[h] = t
    return out
