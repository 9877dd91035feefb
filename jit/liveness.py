"""Register liveness over a function's control-flow graph.

Registers may be reassigned, so "is this value read later?" is a question about the value a
register holds at a point, not about the name: a later write kills it. Region outputs are the
registers written in a region whose value at the region's end is live (read later in the block
before being overwritten, or live out of the block along some path).
"""
from __future__ import annotations

from isa.module import Function, Reg


def successors(func: Function, bi: int) -> list[int]:
    last = func.blocks[bi].instrs[-1]
    labels = [b.label for b in func.blocks]
    targets = [last.attrs[k] for k in ("target", "if_true", "if_false") if k in last.attrs]
    return [labels.index(t) for t in targets if t in labels]


def _use_def(func: Function, bi: int) -> tuple[set[str], set[str]]:
    uses: set[str] = set()
    defs: set[str] = set()
    for ins in func.blocks[bi].instrs:
        for o in ins.operands:
            if isinstance(o, Reg) and o.name not in defs:
                uses.add(o.name)
        defs.update(ins.results)
    return uses, defs


class Liveness:
    """Live-in / live-out register sets of every block, by the usual backward fixed point."""

    def __init__(self, func: Function):
        self.func = func
        n = len(func.blocks)
        self.succs = [successors(func, bi) for bi in range(n)]
        ud = [_use_def(func, bi) for bi in range(n)]
        self.live_in: list[set[str]] = [set() for _ in range(n)]
        self.live_out: list[set[str]] = [set() for _ in range(n)]
        changed = True
        while changed:
            changed = False
            for bi in reversed(range(n)):
                out = set().union(*(self.live_in[s] for s in self.succs[bi])) if self.succs[bi] else set()
                uses, defs = ud[bi]
                inn = uses | (out - defs)
                if out != self.live_out[bi] or inn != self.live_in[bi]:
                    self.live_out[bi], self.live_in[bi] = out, inn
                    changed = True

    def live_after(self, bi: int, ii: int) -> set[str]:
        """Registers whose value just after instruction `ii` of block `bi` is read later."""
        live = set(self.live_out[bi])
        instrs = self.func.blocks[bi].instrs
        for ins in reversed(instrs[ii + 1:]):
            live.difference_update(ins.results)
            live.update(o.name for o in ins.operands if isinstance(o, Reg))
        return live
