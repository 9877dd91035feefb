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


# Innermost axes shorter than this get a variant whose vector loops are not interleaved (see
# _KernelLowering._no_interleave): 4 interleaved 16-wide f32 iterations need 64 elements, and
# the scalar remainder of a 100-element row is then 36 elements.
SHORT_ROW = 256


@dataclass(frozen=True)
class Spec:
    outer: int                           # loop axes over rows; axis 0 is split across threads
    inner: int                           # loop axes every reduction folds over
    inputs: tuple[Pattern, ...]          # per input: does it vary along each domain axis
    outputs: tuple[Pattern, ...]
    inplace: tuple[int, ...] = ()        # per output: input index whose buffer it overwrites, or -1
    short_rows: bool = False             # innermost axis shorter than SHORT_ROW (targets/cpu/runner.py)

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


def node_shapes(kernel: Kernel, in_shapes: list[tuple[int, ...]],
                keep_reduced: bool = False) -> list[tuple[int, ...]]:
    """Each node's shape as NumPy would compute it. With `keep_reduced`, in the coordinates of
    the iteration domain instead: a keepdims=false reduction keeps its reduced axes as size 1,
    so that it and the values computed from it (reduce_mean's division by the count) line up
    with the outer axes of the domain, not with its trailing axes as NumPy broadcasting of the
    dropped shape would."""
    m = kernel.inner
    shapes: list[tuple[int, ...]] = []
    for n in kernel.nodes:
        if n.op == "load":
            shapes.append(tuple(in_shapes[n.attr]))
        elif not n.args:
            shapes.append(())
        elif n.op in REDUCE_KINDS:
            s = shapes[n.args[0]]
            shapes.append(s[:len(s) - m] + (1,) * m if n.attr or keep_reduced else s[:len(s) - m])
        else:
            try:
                shapes.append(np.broadcast_shapes(*(shapes[a] for a in n.args)))
            except ValueError:
                raise Decline(f"{n.op}: shapes {[list(shapes[a]) for a in n.args]} do not "
                              f"broadcast") from None
    return shapes


def domain_shapes(kernel: Kernel, in_shapes: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Node shapes in the domain's coordinates (`node_shapes` with `keep_reduced`)."""
    return node_shapes(kernel, in_shapes, keep_reduced=True)


def _check_dropped_alignment(kernel: Kernel, shapes: list[tuple[int, ...]],
                             dshapes: list[tuple[int, ...]], n: int) -> None:
    """Values computed from a keepdims=false reduction must mean the same in both coordinate
    systems (the region former ends a region after such a reduction, so only its own
    decomposition follows it); decline anything else rather than compute it wrongly."""
    m = kernel.inner
    derived: set[int] = set()
    for i, nd in enumerate(kernel.nodes):
        if (nd.op in REDUCE_KINDS and not nd.attr) or any(a in derived for a in nd.args):
            derived.add(i)
            if _pad(shapes[i], n - m) != _pad(dshapes[i], n)[:n - m]:
                raise Decline(f"{nd.op} mixes a keepdims=false reduction with values over the "
                              f"reduced axes")


def make_plan(kernel: Kernel, in_shapes: list[tuple[int, ...]], inplace: tuple[int, ...] = ()) -> Plan:
    """Plan a call of `kernel` on inputs of `in_shapes`; raise Decline when it cannot run."""
    m = kernel.inner
    shapes = node_shapes(kernel, in_shapes)
    dshapes = domain_shapes(kernel, in_shapes)
    try:
        domain = np.broadcast_shapes(*dshapes)
    except ValueError:
        raise Decline("values of the region do not share one broadcast domain") from None
    n = len(domain)
    if m > n:
        raise Decline("a reduction reduces more axes than the domain has")
    _check_dropped_alignment(kernel, shapes, dshapes, n)
    for nd in kernel.nodes:
        if nd.op in REDUCE_KINDS:
            arg = _pad(dshapes[nd.args[0]], n)
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
        out_shapes.append(shapes[o.node])
        aligned.append(_pad(dshapes[o.node], n))
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
