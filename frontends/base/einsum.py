"""A two-operand einsum as transposes, reshapes and one product, where it is one.

`einsum` is an op of its own (isa/ops/einsum.py, np.einsum's semantics), which the fused and
native tiers do not compile: a model with one attention written as `torch.einsum` ran
interpreted whole. An einsum of two operands whose labels each occur once per operand, where a
label of only one operand is kept in the output, is a batched product: batch labels (both
operands and the output), contracted labels (both operands, not the output), and each operand's
own labels. A and B are transposed to [batch, own, contracted] and [batch, contracted, own],
folded to 3-D, multiplied, unfolded and transposed to the output's order. Shapes must be static
but for one named dim outside the contracted labels (a dynamic batch). Anything else stays an
einsum.
"""
from __future__ import annotations

from .values import Emitter, Value, reshape_named


def _product(dims) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def einsum_as_matmul(e: Emitter, operands: list[Value], equation: str, hint: str) -> Value | None:
    """The einsum as a product (see the module), or None where it is not one."""
    eq = equation.replace(" ", "")
    if len(operands) != 2 or "..." in eq or "->" not in eq:
        return None
    ins, out = eq.split("->")
    parts = ins.split(",")
    if len(parts) != 2:
        return None
    a_lab, b_lab = parts
    a, b = operands
    if len(a_lab) != a.rank or len(b_lab) != b.rank:
        return None
    if any(len(set(s)) != len(s) for s in (a_lab, b_lab, out)) or set(out) - set(a_lab + b_lab):
        return None
    batch = [c for c in a_lab if c in b_lab and c in out]
    contract = [c for c in a_lab if c in b_lab and c not in out]
    a_own = [c for c in a_lab if c not in b_lab]
    b_own = [c for c in b_lab if c not in a_lab]
    if any(c not in out for c in a_own + b_own):     # a label summed within one operand
        return None
    size = {c: a.shape[a_lab.index(c)] for c in a_lab}
    for c in b_lab:
        d = b.shape[b_lab.index(c)]
        if c in size and d != size[c]:
            return None                              # broadcasting or unknown: the op decides
        size[c] = d
    named = [c for c, d in size.items() if not isinstance(d, int)]
    if len(named) > 1 or (named and named[0] in contract):
        return None

    def group(labels: list[str]) -> int | None:     # the folded size; None holds the named dim
        return None if named and named[0] in labels else _product(size[c] for c in labels)

    a_t = e.emit("transpose", [a], perm=[a_lab.index(c) for c in batch + a_own + contract])
    b_t = e.emit("transpose", [b], perm=[b_lab.index(c) for c in batch + contract + b_own])
    lead = [group(batch)] if batch else []
    m, k, n = group(a_own), group(contract), group(b_own)
    prod = e.emit("matmul", [reshape_named(e, a_t, lead + [m, k]),
                             reshape_named(e, b_t, lead + [k, n])])
    order = batch + a_own + b_own
    y = reshape_named(e, prod, [size[c] for c in order])
    return e.emit("transpose", [y], hint, perm=[order.index(c) for c in out])
