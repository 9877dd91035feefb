"""einsum: a sum of products over labelled axes (ONNX Einsum, np.einsum).

The equation names each operand's axes with letters (`ij,jk->ik`); letters that do not reach
the output are summed over. `...` stands for the same leading dims in every operand, broadcast
as NumPy does. Without `->` the output is every letter used once, in alphabetical order, after
the broadcast dims. The type rule checks that each letter has one size (or a size of 1 against
`...` broadcasting) and gives the output's dims.
"""
from __future__ import annotations

import re

import numpy as np

from ..errors import OpTypeError, Trap
from ..types import Dim, TensorType
from .adjoints_reduce import einsum_vjp
from .opdef import AttrKind, AttrSpec, Family, OpDef
from .shapes import broadcast_shapes, same_dtype

_TERM = re.compile(r"^[A-Za-z]*(\.\.\.)?[A-Za-z]*$")


def parse_equation(eq: str, n: int) -> tuple[list[str], str]:
    """(input terms, output term) with the implicit output made explicit; raises OpTypeError."""
    eq = eq.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != n:
        raise OpTypeError(f"einsum equation '{eq}' has {len(terms)} operand terms, got {n} operands")
    for t in terms + [rhs]:
        if not _TERM.match(t):
            raise OpTypeError(f"einsum equation '{eq}': term '{t}' is not letters with at most one "
                              f"'...'")
    if not arrow:
        letters = "".join(terms).replace(".", "")
        once = sorted(c for c in set(letters) if letters.count(c) == 1)
        rhs = ("..." if any("..." in t for t in terms) else "") + "".join(once)
    for c in rhs.replace("...", ""):
        if c not in lhs or rhs.count(c) > 1:
            raise OpTypeError(f"einsum equation '{eq}': output letter '{c}' is not an input letter "
                              f"or repeats")
    return terms, rhs


def _check_diagonals(term: str, labelled, t) -> None:
    """A letter repeated in one term takes a diagonal: its dims must be equal (np.einsum does
    not broadcast a 1 there, unlike across operands)."""
    seen: dict[str, Dim] = {}
    for c, d in labelled:
        if c in seen and isinstance(d, int) and isinstance(seen[c], int) and d != seen[c]:
            raise OpTypeError(f"einsum term '{term}' repeats letter '{c}' on dims of sizes "
                              f"{seen[c]} and {d} of {t}; a diagonal needs equal sizes")
        seen.setdefault(c, d)


def _labelled_sizes(term: str, shape: tuple[int, ...]) -> list[tuple[str, int]]:
    head, _, tail = term.partition("...")
    return list(zip(head, shape[:len(head)])) + list(zip(tail, shape[len(shape) - len(tail):]))


def einsum_rule(types: list[TensorType], attrs) -> list[TensorType]:
    dt = same_dtype("einsum", types)
    if dt.is_bool:
        raise OpTypeError("einsum takes numeric operands")
    terms, rhs = parse_equation(attrs["equation"], len(types))
    sizes: dict[str, Dim] = {}
    ell: list[tuple[Dim, ...]] = []
    for term, t in zip(terms, types):
        head, dots, tail = term.partition("...")
        n_ell = t.rank - len(head) - len(tail)
        if n_ell < 0 or (not dots and n_ell):
            raise OpTypeError(f"einsum term '{term}' does not fit {t}")
        dims = list(t.shape)
        labelled = list(zip(head, dims[:len(head)])) + list(zip(tail, dims[len(dims) - len(tail):]))
        ell.append(tuple(dims[len(head):len(dims) - len(tail)]))
        _check_diagonals(term, labelled, t)
        for c, d in labelled:
            old = sizes.get(c)
            if old is None or old == 1:
                sizes[c] = d if old is None or d != 1 else old
            elif isinstance(old, int) and isinstance(d, int) and d not in (1, old):
                raise OpTypeError(f"einsum letter '{c}' has sizes {old} and {d}")
    head, dots, tail = rhs.partition("...")
    mid = broadcast_shapes(ell, "einsum") if dots else ()
    out = tuple(sizes[c] for c in head) + tuple(mid) + tuple(sizes[c] for c in tail)
    return [TensorType(dt, out)]


def einsum_ref(attrs, *xs: np.ndarray) -> np.ndarray:
    terms, rhs = parse_equation(attrs["equation"], len(xs))
    eq = ",".join(terms) + "->" + rhs
    # named dims are only bound at run time: sizes the rule could not compare trap here, as
    # they would inside np.einsum (a diagonal needs equal sizes, operands broadcast a 1)
    sizes: dict[str, int] = {}
    for term, x in zip(terms, xs):
        own: dict[str, int] = {}
        for c, d in _labelled_sizes(term, x.shape):
            if own.setdefault(c, d) != d:
                raise Trap(f"einsum term '{term}' repeats letter '{c}' on dims of sizes "
                           f"{own[c]} and {d} of {list(x.shape)}")
        for c, d in own.items():
            old = sizes.setdefault(c, d)
            if d not in (1, old) and old != 1:
                raise Trap(f"einsum letter '{c}' has sizes {old} and {d}")
            sizes[c] = d if old == 1 else old
    # integers sum in their own dtype (wrapping), as matmul does
    return np.asarray(np.einsum(eq, *xs, dtype=xs[0].dtype), dtype=xs[0].dtype)


OPS = [
    OpDef("einsum", 188, Family.CONTRACTION, (1, None), einsum_rule, einsum_ref,
          "r := the sum over the letters missing from the output of the products of the "
          "operands' elements, axes named by `equation` (np.einsum / ONNX Einsum; `...` "
          "broadcasts; no `->`: the letters used once, sorted)",
          attrs=(AttrSpec("equation", AttrKind.STR, doc="e.g. 'bij,bjk->bik'"),),
          dtypes="numeric, all operands of one dtype", extra={"operands": ("a", "b", "...")},
          vjp=einsum_vjp),
]
