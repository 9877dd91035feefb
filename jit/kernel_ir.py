"""The kernel IR: one fused region as a DAG of scalar operations over a loop domain.

A kernel reads tensor inputs, computes scalar nodes and writes tensor outputs. Every node stands
for "this value at the current point of the iteration domain"; NumPy broadcasting is expressed by
the index maps of loads and stores, which the lowering decides per variant from actual shapes.
Reduction nodes (`reduce_sum` ...) fold their operand over the kernel's trailing `inner` axes and
yield one value per row. Nodes are primitive ops of the op table (composite ops were expanded
through their `expand`) plus:

    load i            element of input i            const v         a scalar literal
    reduce_K a        fold a over the inner axes    count           number of elements per row

The printed form (`Kernel.text()`) is what `dlvm compile --emit kernel-ir` writes; the code
cache keys on `Kernel.structure()`, the same text without the name and the registers' names.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from isa.dtypes import DType
from isa.module import format_scalar

REDUCE_KINDS = ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod")


@dataclass(frozen=True)
class Node:
    op: str
    dtype: DType
    args: tuple[int, ...] = ()
    attr: Any = None          # load: input index; const: value; cast: DType; reduce: keepdims

    def text(self, i: int) -> str:
        head = f"v{i} = {self.op}"
        parts = [f"v{a}" for a in self.args]
        if self.op == "load":
            parts = [f"in{self.attr}"]
        elif self.op == "const":
            parts = [format_scalar(self.attr)]
        elif self.op == "cast":
            parts.append(f"to {self.attr}")
        elif self.op in REDUCE_KINDS:
            parts.append("keepdims" if self.attr else "dropdims")
        return f"{head} {', '.join(parts)} : {self.dtype}"


def _cse_key(node: Node) -> Any:
    """What makes two nodes the same value: -0.0 == 0.0 in Python, but `x / -0.0` is not
    `x / 0.0` (found by the fuzzer: a division by the immediate -0.0 shared sign's 0.0)."""
    if node.op == "const" and isinstance(node.attr, (int, float)) and node.attr == 0:
        return node, math.copysign(1.0, float(node.attr))     # NumPy float scalars are floats
    return node


@dataclass(frozen=True)
class KInput:
    name: str          # the operand's text (%x, @w) or the product register of a matmul epilogue
    dtype: DType
    rank: int
    source: int        # index into the region's inputs; -1: the head's result (matmul, conv2d)


@dataclass(frozen=True)
class KOutput:
    name: str          # the register it becomes
    node: int
    dtype: DType
    rank: int


@dataclass
class Kernel:
    name: str
    inputs: list[KInput] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    outputs: list[KOutput] = field(default_factory=list)
    inner: int = 0           # trailing axes reduced by every reduction (0: purely elementwise)
    _index: dict[Any, int] = field(default_factory=dict, repr=False)

    def add(self, node: Node) -> int:
        """Append `node` unless an equal node exists (common subexpressions are shared)."""
        key = _cse_key(node)
        found = self._index.get(key)
        if found is not None:
            return found
        self.nodes.append(node)
        self._index[key] = len(self.nodes) - 1
        return len(self.nodes) - 1

    @property
    def reductions(self) -> list[int]:
        return [i for i, n in enumerate(self.nodes) if n.op in REDUCE_KINDS]

    def text(self) -> str:
        lines = [f"kernel @{self.name} (inner axes {self.inner})"]
        for i, t in enumerate(self.inputs):
            lines.append(f"  in{i} = {t.name} : {t.dtype} rank {t.rank}")
        for i, n in enumerate(self.nodes):
            lines.append("  " + n.text(i))
        for o in self.outputs:
            lines.append(f"  out %{o.name} = v{o.node} : {o.dtype} rank {o.rank}")
        return "\n".join(lines) + "\n"

    def structure(self) -> str:
        """text() without its name and its registers' names: all the compiled code depends on.
        Regions alike but for their registers (a loop an exporter unrolled: every step's gates
        are one kernel) share a compile through it."""
        lines = [f"kernel (inner axes {self.inner})"]
        lines += [f"  in{i} : {t.dtype} rank {t.rank}" for i, t in enumerate(self.inputs)]
        lines += ["  " + n.text(i) for i, n in enumerate(self.nodes)]
        lines += [f"  out = v{o.node} : {o.dtype} rank {o.rank}" for o in self.outputs]
        return "\n".join(lines) + "\n"

    def uses(self) -> list[list[int]]:
        users: list[list[int]] = [[] for _ in self.nodes]
        for i, n in enumerate(self.nodes):
            for a in n.args:
                users[a].append(i)
        return users
