"""The one variant of each region kernel a library carries, and what its run time needs to call it.

The JIT compiles a variant per broadcast pattern it meets (jit/plan.py: make_plan). A library is
compiled before any shape is seen, so it takes the variant the static types imply: named and
unknown dims stand for sizes above 1 (only 1 against more changes a variant). make_plan merges the
broadcast domain's axes into groups; the library's runtime (dlvm_aot_rt.c: dlvm_rt_region) needs
to know which domain axes each group holds, to size the groups and stride the tensors from the
actual shapes, and checks there that no tensor is broadcast where the types said it varies.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jit.kernel_ir import Kernel
from jit.plan import Spec, domain_shapes, make_plan

MAX_RANK = 8


@dataclass
class Variant:
    spec: Spec
    domain_rank: int
    groups: list[list[int]]         # per compiled axis: the domain axes it merges


def representative(shape) -> tuple[int, ...]:
    """A static shape for the variant: named and unknown dims become 2 (any size above 1)."""
    return tuple(d if isinstance(d, int) else 2 for d in shape)


def ambiguous_axes(shapes: list) -> list[int]:
    """Right-aligned axes where a named or unknown dim lines up with a literal size above 1 in
    another input: at run time it is that size or 1 (a broadcast)."""
    rank = max((len(s) for s in shapes), default=0)
    literal = {rank - len(s) + i for s in shapes for i, d in enumerate(s) if isinstance(d, int) and d > 1}
    return sorted({rank - len(s) + i for s in shapes for i, d in enumerate(s)
                   if not isinstance(d, int) and rank - len(s) + i in literal})


def unknown_axes(shapes: list) -> dict[int, list[int]]:
    """Right-aligned axes where two or more inputs have a dim the types do not fix (unknown, or
    named differently) and no input a literal size above 1: at run time any of them may be 1
    against the others (an attention mask [?, ?, 8, 8] of [2, 1, 8, 8] against scores of
    [2, 12, 8, 8]). Per axis: the inputs that may be the broadcast one."""
    rank = max((len(s) for s in shapes), default=0)
    literal = set(ambiguous_axes(shapes)) | {rank - len(s) + i for s in shapes
                                              for i, d in enumerate(s)
                                              if isinstance(d, int) and d > 1}
    out: dict[int, list[int]] = {}
    for ax in range(rank):
        if ax in literal:
            continue
        dims = [(j, s[ax - (rank - len(s))]) for j, s in enumerate(shapes)
                if ax >= rank - len(s)]
        loose = [(j, d) for j, d in dims if not isinstance(d, int)]
        names = {d for _, d in loose}
        if len(loose) >= 2 and (None in names or len(names) > 1):
            out[ax] = [j for j, _ in loose]
    return out


def representatives(shapes: list, ones: frozenset[int] = frozenset(),
                    own_ones: dict[int, frozenset[int]] | None = None) -> list[tuple[int, ...]]:
    """Static shapes for a region's inputs together: a named or unknown dim on an ambiguous axis
    takes the literal size it lines up with (a ViT's class-token concat: [?, ?, 128] against
    [1, 65, 128]), or 1 on the axes in `ones` (a mask [?, ?, ?, 32] against [1, 1, 32, 1]);
    input j's unknown dims on the axes `own_ones[j]` are 1 (see unknown_axes); the others
    become 2. (Each shape on its own would give [2, 2, 128] against [1, 65, 128], which do not
    broadcast.)"""
    rank = max((len(s) for s in shapes), default=0)
    known: dict[int, int] = {}
    for s in shapes:
        for i, d in enumerate(s):
            if isinstance(d, int) and d > 1:
                known.setdefault(rank - len(s) + i, d)
    own_ones = own_ones or {}

    def pick(j: int, axis: int) -> int:
        if axis in own_ones.get(j, ()):
            return 1
        if axis not in known:
            return 2
        return 1 if axis in ones else known[axis]
    return [tuple(d if isinstance(d, int) else pick(j, rank - len(s) + i)
                  for i, d in enumerate(s)) for j, s in enumerate(shapes)]


def variant_for(kernel: Kernel, in_shapes: list[tuple[int, ...]]) -> Variant:
    """make_plan's variant for these shapes, with the domain axes of each merged axis."""
    plan = make_plan(kernel, in_shapes)
    m = kernel.inner
    shapes = domain_shapes(kernel, in_shapes)     # as make_plan aligns them
    domain = np.broadcast_shapes(*shapes)
    n = len(domain)
    if n > MAX_RANK:
        raise ValueError(f"a region of rank {n} (the library supports {MAX_RANK})")
    aligned = [(1,) * (n - len(s)) + tuple(s) for s in in_shapes]
    for o in kernel.outputs:
        s = shapes[o.node]
        aligned.append((1,) * (n - len(s)) + tuple(s))
    # the same grouping as make_plan: size-1 axes vanish, alike neighbours merge
    groups: list[tuple[int, tuple[bool, ...], list[int]]] = []
    for ax in range(n):
        if domain[ax] == 1:
            continue
        group = 0 if ax < n - m else 1
        bits = tuple(a[ax] != 1 for a in aligned)
        if groups and groups[-1][0] == group and groups[-1][1] == bits:
            groups[-1][2].append(ax)
        else:
            groups.append((group, bits, [ax]))
    if not any(g == 0 for g, _, _ in groups):
        groups.insert(0, (0, tuple(False for _ in aligned), []))
    axes = [g[2] for g in groups]
    assert len(axes) == plan.spec.rank, (axes, plan.spec)
    return Variant(plan.spec, n, axes)
