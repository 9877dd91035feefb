"""String ops on str tensors (object arrays of Python str): concatenation, splitting,
normalization and regular-expression matching, with ONNX's semantics (StringConcat,
StringSplit, StringNormalizer, RegexFullMatch).

They are interpreted only (no compiled tier takes str). Regular expressions are Python's `re`
module, while ONNX names RE2: the common syntax (classes, groups, alternation, repetition,
anchors, `\\w \\d \\s \\b`) means the same in both; Python adds lookaround and backreferences
(RE2 has neither) and lacks RE2's `\\pN`-style Unicode classes and `\\C`. A pattern Python
cannot compile is refused by the type rule, so at import or verification, not at run time.
"""
from __future__ import annotations

import functools
import operator
import re

import numpy as np

from ..dtypes import BY_NAME
from ..errors import OpTypeError, Trap
from ..types import TensorType
from .opdef import NO_GRADIENT, AttrKind, AttrSpec, Family, OpDef
from .shapes import broadcast_shapes

STR = BY_NAME["str"]
BOOL = BY_NAME["bool"]
I64 = BY_NAME["i64"]


def _require_str(op: str, t: TensorType, what: str = "operand") -> None:
    if not t.dtype.is_str:
        raise OpTypeError(f"{op} takes a str {what}, got {t}")


def _object_array(value, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """`value` as an object array (np.frompyfunc gives a bare str for 0-d operands)."""
    out = np.empty((), dtype=object) if shape == () else None
    if out is not None:
        out[()] = value if not isinstance(value, np.ndarray) else value[()]
        return out
    return np.asarray(value, dtype=object)


# ---- string_concat ----------------------------------------------------------------------------

def concat_rule(types: list[TensorType], attrs) -> list[TensorType]:
    for t in types:
        _require_str("string_concat", t)
    return [TensorType(STR, broadcast_shapes([t.shape for t in types], "string_concat"))]


_ADD = np.frompyfunc(operator.add, 2, 1)


def concat_ref(attrs, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    shape = np.broadcast_shapes(a.shape, b.shape)
    return _object_array(_ADD(a, b), shape)


# ---- string_split -----------------------------------------------------------------------------

def split_rule(types: list[TensorType], attrs) -> list[TensorType]:
    (x,) = types
    _require_str("string_split", x)
    if attrs["maxsplit"] < -1:
        raise OpTypeError(f"string_split maxsplit must be -1 (no limit) or >= 0, got "
                          f"{attrs['maxsplit']}")
    # the padded width is the most pieces any element splits into: known only at run time
    return [TensorType(STR, (*x.shape, None)), TensorType(I64, x.shape)]


def split_ref(attrs, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # an empty delimiter splits at runs of whitespace and drops the ends (Python's split())
    sep = attrs["delimiter"] or None
    limit = attrs["maxsplit"]
    pieces = [s.split(sep, limit) for s in x.reshape(-1)]
    width = max((len(p) for p in pieces), default=0)
    out = np.full((len(pieces), width), "", dtype=object)
    for i, p in enumerate(pieces):
        out[i, :len(p)] = p
    counts = np.array([len(p) for p in pieces], dtype=np.int64)
    return out.reshape(*x.shape, width), counts.reshape(x.shape)


# ---- string_normalizer ------------------------------------------------------------------------

_CASES = ("NONE", "LOWER", "UPPER")


def normalizer_rule(types: list[TensorType], attrs) -> list[TensorType]:
    x, stopwords = types
    _require_str("string_normalizer", x)
    _require_str("string_normalizer", stopwords, "stopwords operand")
    if stopwords.rank != 1:
        raise OpTypeError(f"string_normalizer stopwords must be a vector, got {stopwords}")
    if attrs["case_change_action"] not in _CASES:
        raise OpTypeError(f"string_normalizer case_change_action must be one of "
                          f"{', '.join(_CASES)}, got {attrs['case_change_action']!r}")
    if x.rank == 1:
        return [TensorType(STR, (None,))]
    if x.rank == 2 and (not isinstance(x.shape[0], int) or x.shape[0] == 1):
        return [TensorType(STR, (1, None))]
    raise OpTypeError(f"string_normalizer takes [C] or [1, C] strings, got {x}")


def normalizer_ref(attrs, x: np.ndarray, stopwords: np.ndarray) -> np.ndarray:
    if x.ndim == 2 and x.shape[0] != 1:
        raise Trap(f"string_normalizer takes [C] or [1, C] strings, got {x.shape[0]} rows")
    sensitive = attrs["is_case_sensitive"]
    # case-insensitive stop words compare by Unicode case folding ("Monday" == "monday")
    fold = (lambda s: s) if sensitive else str.casefold
    stops = {fold(w) for w in stopwords.reshape(-1)}
    change = {"LOWER": str.lower, "UPPER": str.upper}.get(attrs["case_change_action"])
    kept = [s for s in x.reshape(-1) if fold(s) not in stops]
    if change is not None:
        kept = [change(s) for s in kept]
    if not kept:
        kept = [""]         # ONNX: everything filtered out leaves one empty string
    out = np.empty(len(kept), dtype=object)
    out[:] = kept
    return out if x.ndim == 1 else out.reshape(1, -1)


# ---- regex_full_match -------------------------------------------------------------------------

@functools.lru_cache(maxsize=64)
def compiled(pattern: str) -> re.Pattern:
    """The pattern compiled by Python's re; OpTypeError naming it when it does not compile."""
    try:
        return re.compile(pattern)
    except re.error as e:
        raise OpTypeError(f"regex_full_match: pattern {pattern!r} is not a regular expression "
                          f"Python's re can compile ({e})") from None


def regex_rule(types: list[TensorType], attrs) -> list[TensorType]:
    (x,) = types
    _require_str("regex_full_match", x)
    compiled(attrs["pattern"])
    return [x.with_dtype(BOOL)]


def regex_ref(attrs, x: np.ndarray) -> np.ndarray:
    rx = compiled(attrs["pattern"])
    out = np.fromiter((rx.fullmatch(s) is not None for s in x.reshape(-1)), dtype=np.bool_,
                      count=x.size)
    return out.reshape(x.shape)


OPS = [
    OpDef("string_concat", 220, Family.MISC, (2, 2), concat_rule, concat_ref,
          "r := a + b, the strings joined elementwise, the two broadcast together",
          dtypes="str", vjp=NO_GRADIENT, strings=True),
    OpDef("string_split", 221, Family.MISC, (1, 1), split_rule, split_ref,
          "r, n := each string of x split at `delimiter` (empty: at runs of whitespace, the ends "
          "dropped), at most `maxsplit` times (-1: no limit); r[.., j] is piece j, padded with "
          "\"\" to the most pieces of any element, n[..] the count of pieces (ONNX StringSplit)",
          attrs=(AttrSpec("delimiter", AttrKind.STR, "", "where to split (empty: whitespace)"),
                 AttrSpec("maxsplit", AttrKind.INT, -1, "the most splits per string (-1: all)")),
          n_results=2, dtypes="str", extra={"operands": ("x",)}, vjp=NO_GRADIENT, strings=True),
    OpDef("string_normalizer", 222, Family.MISC, (2, 2), normalizer_rule, normalizer_ref,
          "r := the strings of x ([C] or [1, C]) not among the stop words (compared by case "
          "folding unless is_case_sensitive), then lower- or upper-cased as case_change_action "
          "says; [\"\"] (or [[\"\"]]) when none is left (ONNX StringNormalizer; the locale is "
          "Python's Unicode case mapping)",
          attrs=(AttrSpec("case_change_action", AttrKind.STR, "NONE", "NONE, LOWER or UPPER"),
                 AttrSpec("is_case_sensitive", AttrKind.BOOL, False,
                          "stop words match only in the same case")),
          dtypes="str", extra={"operands": ("x", "stopwords")}, vjp=NO_GRADIENT, strings=True),
    OpDef("regex_full_match", 223, Family.MISC, (1, 1), regex_rule, regex_ref,
          "r := the whole of each string of x matches `pattern` (Python's re; ONNX names RE2, "
          "whose common syntax is the same), a bool result",
          attrs=(AttrSpec("pattern", AttrKind.STR, doc="the regular expression"),),
          dtypes="str", extra={"operands": ("x",)}, vjp=NO_GRADIENT, strings=True),
]
