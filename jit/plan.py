"""Specialization of a kernel to actual input shapes: the iteration domain, each input's and
output's broadcast pattern over it, and the run-time sizes and strides.

The compiled code depends only on the `Spec` (which domain axes each tensor varies along, after
dropping size-1 axes and merging neighbours that every tensor treats alike), never on the sizes
themselves: sizes and strides travel in an i64 array, so one variant serves every batch size.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kernel_ir import REDUCE_KINDS, Kernel

Pattern = tuple[bool, ...]


class Decline(Exception):
    """These arguments cannot run compiled; the message says why (the interpreter runs them)."""


@dataclass(frozen=True)
class Spec:
    outer: int                           # loop axes over rows; axis 0 is split across threads
    inner: int                           # loop axes every reduction folds over
    inputs: tuple[Pattern, ...]          # per input: does it vary along each domain axis
    outputs: tuple[Pattern, ...]
    inplace: tuple[int, ...] = ()        # per output: input index whose buffer it overwrites, or -1
    short_rows: bool = False             # innermost axis shorter than SHORT_ROW (see jit/runner.py)

    def text(self) -> str:
        def pat(p: Pattern) -> str:
            return "[" + ", ".join("*" if b else "1" for b in p) + "]"
        lines = [f"variant: {self.outer} outer axes, {self.inner} inner axes"]
        lines += [f"  in{i} {pat(p)}" for i, p in enumerate(self.inputs)]
        for i, p in enumerate(self.outputs):
            alias = f" in place of in{self.inplace[i]}" if self.inplace and self.inplace[i] >= 0 else ""
            lines.append(f"  out{i} {pat(p)}{alias}")
        if self.short_rows:
            lines.append("  short innermost axis: vector loops without interleaving")
        return "\n".join(lines) + "\n"

    @property
    def rank(self) -> int:
        return self.outer + self.inner


@dataclass
class Plan:
    spec: Spec
    dims: np.ndarray                  # sizes of the domain axes, then per input and output strides
    out_shapes: list[tuple[int, ...]]
    rows: int                         # size of domain axis 0 (the thread split)
    elements: int                     # domain size
    inner_total: int                  # elements per row (scratch size of a cached value)


def _pad(shape: tuple[int, ...], n: int) -> tuple[int, ...]:
    return (1,) * (n - len(shape)) + tuple(shape)


def node_shapes(kernel: Kernel, in_shapes: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    m = kernel.inner
    shapes: list[tuple[int, ...]] = []
    for n in kernel.nodes:
        if n.op == "load":
            shapes.append(tuple(in_shapes[n.attr]))
        elif not n.args:
            shapes.append(())
        elif n.op in REDUCE_KINDS:
            s = shapes[n.args[0]]
            shapes.append(s[:len(s) - m] + (1,) * m if n.attr else s[:len(s) - m])
        else:
            try:
                shapes.append(np.broadcast_shapes(*(shapes[a] for a in n.args)))
            except ValueError:
                raise Decline(f"{n.op}: shapes {[list(shapes[a]) for a in n.args]} do not "
                              f"broadcast") from None
    return shapes


def row_nodes(kernel: Kernel, shapes: list[tuple[int, ...]]) -> set[int]:
    """Nodes that hold one value per row, without the reduced axes: keepdims=false reductions
    and what is computed from them and scalars (reduce_mean's division by the count). Their
    shapes are the domain's outer axes, so they line up with it from the left, not the right
    as NumPy broadcasting would: f32[2, 2] reduced over axis 1 is [2] along axis 0."""
    rows: set[int] = set()
    for i, nd in enumerate(kernel.nodes):
        if nd.op in REDUCE_KINDS and not nd.attr:
            rows.add(i)
        elif nd.op not in REDUCE_KINDS and any(a in rows for a in nd.args):
            if any(a not in rows and shapes[a] != () for a in nd.args):
                raise Decline(f"{nd.op} combines a reduced row with a full value")
            rows.add(i)
    return rows


def make_plan(kernel: Kernel, in_shapes: list[tuple[int, ...]], inplace: tuple[int, ...] = ()) -> Plan:
    """Plan a call of `kernel` on inputs of `in_shapes`; raise Decline when it cannot run."""
    m = kernel.inner
    shapes = node_shapes(kernel, in_shapes)
    dropped = row_nodes(kernel, shapes)
    try:
        domain = np.broadcast_shapes(*(s for i, s in enumerate(shapes) if i not in dropped))
    except ValueError:
        raise Decline("values of the region do not share one broadcast domain") from None
    n = len(domain)
    if m > n:
        raise Decline("a reduction reduces more axes than the domain has")
    for nd in kernel.nodes:
        if nd.op in REDUCE_KINDS:
            arg = _pad(shapes[nd.args[0]], n)
            if arg[n - m:] != domain[n - m:]:
                raise Decline(f"{nd.op} operand of shape {list(shapes[nd.args[0]])} is broadcast "
                              f"along the reduced axes of {list(domain)}")
            if nd.op in ("reduce_max", "reduce_min") and 0 in domain[n - m:]:
                raise Decline(f"{nd.op} over an empty axis traps")
    if 0 in domain:
        raise Decline("empty tensors are left to the interpreter")
    aligned: list[tuple[int, ...]] = [_pad(s, n) for s in in_shapes]
    out_shapes: list[tuple[int, ...]] = []
    for o in kernel.outputs:
        s = shapes[o.node]
        out_shapes.append(s)
        if o.node in dropped:       # a row value: the outer axes, then the reduced ones as 1
            aligned.append(_pad(s, n - m) + (1,) * m)
        else:
            aligned.append(_pad(s, n))
    # axes: (size, group, per-endpoint varies); size-1 axes vanish, alike neighbours merge
    axes: list[tuple[int, int, tuple[bool, ...]]] = []
    for ax in range(n):
        if domain[ax] == 1:
            continue
        group = 0 if ax < n - m else 1
        bits = tuple(a[ax] != 1 for a in aligned)
        if axes and axes[-1][1] == group and axes[-1][2] == bits:
            axes[-1] = (axes[-1][0] * domain[ax], group, bits)
        else:
            axes.append((domain[ax], group, bits))
    if not any(g == 0 for _, g, _ in axes):
        axes.insert(0, (1, 0, tuple(False for _ in aligned)))
    sizes = [s for s, _, _ in axes]
    n_in = len(in_shapes)
    patterns = [tuple(bits[e] for _, _, bits in axes) for e in range(len(aligned))]
    strides: list[int] = []
    for pat in patterns:
        run = 1
        st = [0] * len(sizes)
        for ax in reversed(range(len(sizes))):
            if pat[ax]:
                st[ax] = run
                run *= sizes[ax]
        strides.extend(st)
    outer = sum(1 for _, g, _ in axes if g == 0)
    spec = Spec(outer, len(axes) - outer, tuple(patterns[:n_in]), tuple(patterns[n_in:]),
                tuple(inplace))
    inner_total = int(np.prod(sizes[outer:], dtype=np.int64)) if len(sizes) > outer else 1
    return Plan(spec, np.array(sizes + strides, dtype=np.int64), out_shapes, sizes[0],
                int(np.prod(sizes, dtype=np.int64)), inner_total)
