"""Adjoint rules of the reductions and of matmul (see OpDef.vjp): written with dlvm ops through
the emitter `g`, so the code they produce fuses and tiers up like any other."""
from __future__ import annotations

import math

from .shapes import normalize_axes


def _axes(attrs, rank: int) -> list[int]:
    axes = attrs["axes"]
    return list(range(rank)) if axes is None else sorted(normalize_axes("reduce", axes, rank,
                                                                        scalar_ok=True))


def kept(g, attrs, x, v):
    """A reduction's result (or cotangent) with the reduced axes back as size 1."""
    axes = _axes(attrs, g.rank(x))
    if attrs["keepdims"] or not axes or g.rank(v) == g.rank(x):
        return v
    return g.expand_dims(v, axes=axes)


def count(g, attrs, x):
    """How many elements each output of the reduction saw: a number, or a scalar register."""
    axes = _axes(attrs, g.rank(x))
    dims = [g.type(x).shape[a] for a in axes]
    if all(isinstance(d, int) for d in dims):
        return float(math.prod(dims))
    n = g.reduce_prod(g.gather(g.shape_of(x), g.vector(axes)), axes=[0])
    return g.cast(n, to=g.dtype(x))


def sum_vjp(g, attrs, xs, y, ct):
    return [g.broadcast_like(kept(g, attrs, xs[0], ct), xs[0])]


def mean_vjp(g, attrs, xs, y, ct):
    return [g.broadcast_like(g.div(kept(g, attrs, xs[0], ct), count(g, attrs, xs[0])), xs[0])]


def extremum_vjp(g, attrs, xs, y, ct):
    """The cotangent goes to the elements equal to the extremum, split evenly among ties."""
    (x,) = xs
    hit = g.eq(x, kept(g, attrs, x, y))
    ties = g.reduce_sum(g.cast(hit, to=g.dtype(x)), axes=_axes(attrs, g.rank(x)), keepdims=True)
    share = g.div(kept(g, attrs, x, ct), ties)
    return [g.select(hit, g.broadcast_like(share, x), g.scalar(0, g.dtype(x)))]


def prod_vjp(g, attrs, xs, y, ct):
    """d prod / d x_i = prod / x_i (a zero element gives NaN here; see specs/autodiff.md)."""
    (x,) = xs
    return [g.div(g.mul(kept(g, attrs, x, ct), kept(g, attrs, x, y)), x)]


def unbroadcast_vjp(g, attrs, xs, y, ct):
    return [g.broadcast_like(ct, xs[0]), None]


def _swap_last(g, v):
    r = g.rank(v)
    return g.transpose(v, perm=list(range(r - 2)) + [r - 1, r - 2])


def matmul_vjp(g, attrs, xs, y, ct):
    a, b = xs
    ra, rb = g.rank(a), g.rank(b)
    if ra == 1 and rb == 1:
        return [g.mul(ct, b), g.mul(ct, a)]
    if ra == 1:      # a row: [K] @ [.., K, N] -> [.., N]
        row = g.expand_dims(ct, axes=[-2])
        return [g.matmul(row, _swap_last(g, b)), g.matmul(g.expand_dims(a, axes=[-1]), row)]
    if rb == 1:      # a column: [.., M, K] @ [K] -> [.., M]
        col = g.expand_dims(ct, axes=[-1])
        return [g.matmul(col, g.expand_dims(b, axes=[0])),
                g.squeeze(g.matmul(_swap_last(g, a), col), axes=[-1])]
    return [g.matmul(ct, _swap_last(g, b)), g.matmul(_swap_last(g, a), ct)]


def einsum_vjp(g, attrs, xs, y, ct):
    """Each operand's cotangent is an einsum of the output's cotangent with the other operands
    into that operand's letters; letters only that operand has (summed alone) are broadcast
    back. Repeated letters within one operand (diagonals) and `...` are not supported yet."""
    from ..errors import InvalidError
    from .einsum import parse_equation
    terms, out = parse_equation(attrs["equation"], len(xs))
    if "..." in attrs["equation"] or any(len(set(t)) != len(t) for t in terms):
        raise InvalidError("the adjoint of einsum with '...' or a repeated letter in one "
                           "operand is not supported in this version")
    result = []
    for i, (x, term) in enumerate(zip(xs, terms)):
        others = [(xs[j], terms[j]) for j in range(len(xs)) if j != i]
        seen = set(out) | {c for _, t in others for c in t}
        kept = "".join(c for c in term if c in seen)
        eq = ",".join([out] + [t for _, t in others]) + "->" + kept
        d = g.einsum(ct, *[o for o, _ in others], equation=eq)
        if kept != term:       # letters summed in this operand alone: broadcast back
            d = g.expand_dims(d, axes=[k for k, c in enumerate(term) if c not in seen])
            d = g.broadcast_like(d, x)
        result.append(d)
    return result

