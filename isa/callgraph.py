"""Facts about a module's functions and calls that several transforms need (autodiff, training,
inlining): which constants a function reads through its calls, and names not yet taken."""
from __future__ import annotations

from collections.abc import Container

from .module import ConstRef, Module


def constants_read(module: Module, names: set[str]) -> dict[str, set[str]]:
    """For each function, the constants among `names` it reads, directly or through its calls
    (a fixed point over the call graph, so recursion is fine)."""
    out = {f.name: {o.name for b in f.blocks for i in b.instrs for o in i.operands
                    if isinstance(o, ConstRef) and o.name in names}
           for f in module.functions.values()}
    calls = {f.name: {i.attrs["callee"] for b in f.blocks for i in b.instrs if i.op == "call"}
             for f in module.functions.values()}
    changed = True
    while changed:
        changed = False
        for f, cs in calls.items():
            for c in cs:
                if not out[c] <= out[f]:
                    out[f] |= out[c]
                    changed = True
    return out


def unused_name(taken: Container[str], base: str, sep: str = "") -> str:
    """`base`, or `base{sep}2`, `base{sep}3`, ...: the first that `taken` does not hold."""
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}{sep}{n}"
    return name


def draws_random(module: Module, fname: str, seen: set[str] | None = None) -> bool:
    """Whether `fname`, or a function it calls, has a random op (isa/ops/random.py)."""
    from .ops import OPS
    seen = set() if seen is None else seen
    if fname in seen:
        return False
    seen.add(fname)
    for b in module.functions[fname].blocks:
        for i in b.instrs:
            if OPS[i.op].random or (i.op == "call" and
                                    draws_random(module, i.attrs["callee"], seen)):
                return True
    return False
