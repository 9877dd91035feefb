"""Einsums as transposes, reshapes and products, where they are ones (`einsum_lowered`).

`einsum` is an op of its own (isa/ops/einsum.py, np.einsum's semantics), which the fused and
native tiers do not compile: a model with one attention written as `torch.einsum` ran
interpreted whole. An einsum of two operands whose labels each occur once per operand, where a
label of only one operand is kept in the output, is a batched product: batch labels (both
operands and the output), contracted labels (both operands, not the output), and each operand's
own labels. A and B are transposed to [batch, own, contracted] and [batch, contracted, own],
folded to 3-D, multiplied, unfolded and transposed to the output's order. Shapes must be static
but for one named dim outside the contracted labels (a dynamic batch). Two operands with no
label to contract are a broadcast multiply. A label of one operand alone that nothing else
reads is summed first. More operands are contracted a pair at a time, the cheapest pair first
(np.einsum's optimize does the same; the op itself follows np.einsum without it, which loops
over every label at once: linear attention's "bhnd,bhde,bhn->bhne" ran 20x slower than as two
steps). Anything else stays an einsum.
"""
from __future__ import annotations

from .values import Emitter, Value, reshape_named


def _product(dims) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def einsum_lowered(e: Emitter, operands: list[Value], equation: str, hint: str) -> Value:
    """The einsum as products where it is made of them (see the module), else the einsum op."""
    y = _pairwise(e, operands, equation, hint)
    if y is not None:
        return y
    return e.emit("einsum", operands, hint, equation=equation)


def _pairwise(e: Emitter, operands: list[Value], equation: str, hint: str) -> Value | None:
    eq = equation.replace(" ", "")
    if "..." in eq or "->" not in eq:
        return None
    ins, out = eq.split("->")
    terms = ins.split(",")
    if len(terms) != len(operands) or len(set(out)) != len(out):
        return None
    if any(len(set(t)) != len(t) or len(t) != v.rank for t, v in zip(terms, operands)):
        return None
    size: dict[str, object] = {}
    for t, v in zip(terms, operands):
        for c, d in zip(t, v.shape):
            if size.setdefault(c, d) != d:
                return None                          # broadcasting or unknown: the op decides
    if set(out) - set(size):
        return None
    items = list(zip(terms, operands))
    # a label of one operand alone, not in the output: summed out of that operand first
    for k, (t, v) in enumerate(items):
        others = out + "".join(u for j, (u, _) in enumerate(items) if j != k)
        alone = [i for i, c in enumerate(t) if c not in others]
        if alone and len(items) > 1:
            items[k] = ("".join(c for c in t if c in others),
                        e.emit("reduce_sum", [v], axes=alone, keepdims=False))
    while len(items) > 2:
        best = None
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                rest = out + "".join(u for k, (u, _) in enumerate(items) if k not in (i, j))
                both = "".join(dict.fromkeys(items[i][0] + items[j][0]))
                # the pair's multiplies (a named dim counted as 64)
                cost = _product(size[c] if isinstance(size[c], int) else 64 for c in both)
                if best is None or cost < best[0]:
                    best = (cost, i, j, "".join(c for c in both if c in rest))
        _, i, j, keep = best
        v = _two(e, [items[i][1], items[j][1]], f"{items[i][0]},{items[j][0]}->{keep}", hint)
        items = [it for k, it in enumerate(items) if k not in (i, j)] + [(keep, v)]
    if len(items) == 1:
        return None
    (ta, a), (tb, b) = items
    return _two(e, [a, b], f"{ta},{tb}->{out}", hint)


def _two(e: Emitter, operands: list[Value], equation: str, hint: str) -> Value:
    y = einsum_as_matmul(e, operands, equation, hint)
    return y if y is not None else e.emit("einsum", operands, hint, equation=equation)


def _aligned(e: Emitter, v: Value, labels: list[str], out: str) -> Value:
    """v's axes in the output's order, with unit axes for the output's labels v lacks."""
    order = sorted(labels, key=out.index)
    if order != labels:
        v = e.emit("transpose", [v], perm=[labels.index(c) for c in order])
    missing = [i for i, c in enumerate(out) if c not in labels]
    return e.emit("expand_dims", [v], axes=missing) if missing else v


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
    if not contract:        # nothing summed: a multiply that broadcasts each operand's axes
        return e.emit("mul", [_aligned(e, a, list(a_lab), out), _aligned(e, b, list(b_lab), out)],
                      hint)
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
