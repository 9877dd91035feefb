"""Symbolic dim arithmetic for shape vectors computed from dynamic dims.

Exporters compute reshape targets from `Shape` of a dynamic tensor with integer arithmetic:
`batch * heads`, `seq - 1`, `numel / 64`. A `SymDim` is such an expression, a polynomial with
integer coefficients over named dims, closed under +, -, * and exact division. dlvm types
carry ints, names and `?`, so an expression that is not a plain size or name becomes a derived
name (`batch_x4`, `seq_m1`) that the importer remembers (`DerivedDims`): a later `Shape` of a
tensor with that dim gives the expression back, and a reshape can solve its `-1` by dividing
the input's element count by the other sizes. Derived names are never bound by the caller; the
VM checks only names bound at the call, so they only name what the importer proved.
"""
from __future__ import annotations

from dataclasses import dataclass

from isa.types import Dim

Monomial = tuple[str, ...]          # sorted names, repeated for powers


@dataclass(frozen=True)
class SymDim:
    terms: tuple[tuple[Monomial, int], ...]     # sorted, no zero coefficients

    @staticmethod
    def of(terms: dict[Monomial, int]) -> SymDim:
        return SymDim(tuple(sorted((m, c) for m, c in terms.items() if c)))

    @staticmethod
    def const(n: int) -> SymDim:
        return SymDim.of({(): int(n)})

    @staticmethod
    def name(n: str) -> SymDim:
        return SymDim.of({(n,): 1})

    def as_int(self) -> int | None:
        if not self.terms:
            return 0
        if len(self.terms) == 1 and self.terms[0][0] == ():
            return self.terms[0][1]
        return None

    def as_name(self) -> str | None:
        if len(self.terms) == 1 and len(self.terms[0][0]) == 1 and self.terms[0][1] == 1:
            return self.terms[0][0][0]
        return None

    def __add__(self, o: SymDim) -> SymDim:
        t = dict(self.terms)
        for m, c in o.terms:
            t[m] = t.get(m, 0) + c
        return SymDim.of(t)

    def __neg__(self) -> SymDim:
        return SymDim(tuple((m, -c) for m, c in self.terms))

    def __sub__(self, o: SymDim) -> SymDim:
        return self + (-o)

    def __mul__(self, o: SymDim) -> SymDim:
        t: dict[Monomial, int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in o.terms:
                m = tuple(sorted(m1 + m2))
                t[m] = t.get(m, 0) + c1 * c2
        return SymDim.of(t)

    def exact_div(self, o: SymDim) -> SymDim | None:
        """self / o when o is one term that divides every term of self, else None."""
        if len(o.terms) != 1 or o.terms[0][1] == 0:
            return None
        (dm, dc), = o.terms
        t: dict[Monomial, int] = {}
        for m, c in self.terms:
            rest = list(m)
            for n in dm:
                if n not in rest:
                    return None
                rest.remove(n)
            if c % dc:
                return None
            t[tuple(rest)] = t.get(tuple(rest), 0) + c // dc
        return SymDim.of(t)

    def text(self) -> str:
        """An identifier for this expression: batch*4 -> batch_x4, seq-1 -> seq_m1."""
        parts = []
        for i, (m, c) in enumerate(sorted(self.terms, key=lambda mc: (-len(mc[0]), mc[0]))):
            sign = "m" if c < 0 else ("" if i == 0 else "p")
            body = "_".join(m)
            mag = abs(c)
            if not m:
                body = str(mag)
            elif mag != 1:
                body += f"_x{mag}"
            parts.append(sign + body)
        return "_".join(parts)


class DerivedDims:
    """The expressions behind the derived dim names of one import."""

    def __init__(self) -> None:
        self.exprs: dict[str, SymDim] = {}

    def expr(self, d: Dim | SymDim) -> SymDim | None:
        """A dim (size, name, derived name) or expression as an expression; None for `?`."""
        if isinstance(d, SymDim):
            return d
        if d is None:
            return None
        if isinstance(d, int):
            return SymDim.const(d)
        return self.exprs.get(d) or SymDim.name(d)

    def dim(self, d: Dim | SymDim) -> Dim:
        """An expression as a dlvm dim: its size, its name, or a derived name."""
        if not isinstance(d, SymDim):
            return d
        n = d.as_int()
        if n is not None:
            return n
        name = d.as_name()
        if name is not None:
            return name
        name = d.text()
        self.exprs.setdefault(name, d)
        return name

    def entry(self, d: Dim | SymDim) -> Dim | SymDim:
        """An entry of a shape vector in its simplest form (a size or name when it is one)."""
        if isinstance(d, SymDim) and (d.as_int() is not None or d.as_name() is not None):
            return self.dim(d)
        return d

    def product(self, dims) -> SymDim | None:
        acc = SymDim.const(1)
        for d in dims:
            x = self.expr(d)
            if x is None:
                return None
            acc = acc * x
        return acc


def combine(derived: DerivedDims, op: str, a: Dim | SymDim, b: Dim | SymDim) -> Dim | SymDim:
    """One entry of an integer Add/Sub/Mul/Div of shape values; None when not expressible."""
    x, y = derived.expr(a), derived.expr(b)
    if x is None or y is None:
        return None
    if op == "add":
        r = x + y
    elif op == "sub":
        r = x - y
    elif op == "mul":
        r = x * y
    elif op == "div":
        xi, yi = x.as_int(), y.as_int()
        if xi is not None and yi is not None:
            if not yi:
                return None
            q = abs(xi) // abs(yi)           # ONNX integer Div truncates toward zero
            return q if (xi < 0) == (yi < 0) else -q
        r = x.exact_div(y)
        if r is None:
            return None
    else:
        return None
    return derived.entry(r)
