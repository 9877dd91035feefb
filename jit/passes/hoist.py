"""Constants to the top of their block.

Constant folding leaves small results as `const` instructions where the folded instruction was,
often in the middle of a run of elementwise ops (a batch_norm's per-channel vectors between the
ops on its input). A fused region is a contiguous run of instructions, so such a `const` split
one kernel into two, each reading and writing the whole tensor.

A `const` reads no register and always makes the same value, so it may run earlier in its
block; it moves to the block's top when its register has no other definition in the function
(then every read, in this block or a later one, or around a loop, sees the same value).
"""
from __future__ import annotations

from isa.module import Module

from .common import definition_counts


def hoist_constants(module: Module) -> bool:
    """Move single-definition `const` instructions to the top of their block, in their order;
    return whether anything moved."""
    changed = False
    for func in module.functions.values():
        defs = definition_counts(func)
        for block in func.blocks:
            consts, rest = [], []
            for ins in block.instrs:
                movable = ins.op == "const" and len(ins.results) == 1 and \
                    defs[ins.results[0]] == 1
                (consts if movable else rest).append(ins)
            new = consts + rest
            if any(a is not b for a, b in zip(new, block.instrs)):
                block.instrs[:] = new
                changed = True
    return changed
