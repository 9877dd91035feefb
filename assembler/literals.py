"""Literals in both directions: the parser's literal trees -> ndarrays of a declared dtype, and
ndarrays, scalars, strings and names -> the text that reads back to exactly the same value.

A literal tree is a leaf Token (INT, FLOAT, one of the NAMEs true/false/inf/nan, or a STRING
for str constants) or a list of trees (`[[1, 2], [3, 4]]`, `["a", "b"]`). Errors raise
LiteralError carrying the token to point at; the parser turns it into a MalformedError with a
location.
"""
from __future__ import annotations

from typing import Any, Union

import numpy as np

from isa.dtypes import DType
from isa.module import format_scalar

from .lexer import NAME_RE, SIGIL_NAME_RE, Token

LiteralTree = Union[Token, list["LiteralTree"]]
INT64 = np.iinfo(np.int64)
UINT64 = np.iinfo(np.uint64)
WORD_VALUES = {"true": True, "false": False, "inf": float("inf"), "nan": float("nan")}
# A module constant's fill is materialized; refuse sizes that would exhaust memory.
MAX_CONST_BYTES = 1 << 28


class LiteralError(Exception):
    def __init__(self, message: str, token: Token):
        super().__init__(message)
        self.message = message
        self.token = token


# ---- text -> values ---------------------------------------------------------------------------

def is_scalar_token(tok: Token) -> bool:
    return tok.kind in ("INT", "FLOAT") or (tok.kind == "NAME" and tok.value in WORD_VALUES)


def is_literal_token(tok: Token) -> bool:
    """A leaf of a constant's literal: a scalar, or a string (the elements of str constants)."""
    return is_scalar_token(tok) or tok.kind == "STRING"


def scalar_value(tok: Token) -> bool | int | float:
    """The Python value of a scalar literal token: `1` stays int, `1.0` stays float."""
    if tok.kind == "NAME":
        return WORD_VALUES[tok.value]
    # the union of i64 and u64: u64 needs up to 2^64 - 1 (as the printer writes it); the
    # operand's or constant's dtype decides whether the value fits
    if tok.kind == "INT" and not INT64.min <= tok.value <= UINT64.max:
        raise LiteralError(f"integer {tok.text} does not fit in 64 bits", tok)
    return tok.value


def tree_shape(tree: LiteralTree, first: Token) -> tuple[int, ...]:
    """The shape of a nested list literal; raise when its rows differ in length or depth."""
    if isinstance(tree, Token):
        return ()
    if not tree:
        return (0,)
    inner = [tree_shape(t, first) for t in tree]
    if any(s != inner[0] for s in inner):
        raise LiteralError("the rows of this list literal differ in length or depth", first)
    return (len(tree),) + inner[0]


def flatten(tree: LiteralTree) -> list[Token]:
    if isinstance(tree, Token):
        return [tree]
    return [tok for t in tree for tok in flatten(t)]


def convert_scalar(tok: Token, dtype: DType) -> Any:
    """Check that the literal `tok` is a value of `dtype`; return it as a Python value."""
    if dtype.is_str or tok.kind == "STRING":
        if not (dtype.is_str and tok.kind == "STRING"):
            raise LiteralError(f"{tok.text} is not a {dtype.text} literal" + (
                ' (write str elements as "text")' if dtype.is_str else ""), tok)
        return tok.value
    v = scalar_value(tok)
    if dtype.is_bool:
        if not isinstance(v, bool):
            raise LiteralError(f"{tok.text} is not a bool literal (write true or false)", tok)
        return v
    if isinstance(v, bool):
        raise LiteralError(f"{tok.text} is not a {dtype.text} literal", tok)
    if dtype.is_int:
        if not isinstance(v, int):
            raise LiteralError(f"{tok.text} is not an integer, so it is not a {dtype.text} "
                               f"literal", tok)
        lo, hi = dtype.int_range()
        if not lo <= v <= hi:
            raise LiteralError(f"{tok.text} is out of range for {dtype.text} "
                               f"({lo} to {hi})", tok)
        return v
    f = float(v)
    with np.errstate(over="ignore"):
        narrowed = dtype.np.type(f)
    if np.isinf(narrowed) and not np.isinf(f):
        raise LiteralError(f"{tok.text} overflows {dtype.text}", tok)
    return f


def tree_to_array(tree: LiteralTree, dtype: DType, shape: tuple | None, first: Token) -> np.ndarray:
    """The ndarray a literal denotes: 0-d for a scalar, the list's shape for a list.

    `shape` is the declared shape when it is static (else None): an empty list literal takes it
    when it has no elements either, since `[]` cannot spell a shape like (0, 3) by itself.
    """
    lit_shape = tree_shape(tree, first)
    values = [convert_scalar(tok, dtype) for tok in flatten(tree)]
    arr = np.array(values, dtype=dtype.np)
    if not values and shape is not None and int(np.prod(shape, dtype=np.int64)) == 0:
        return arr.reshape(shape)
    return arr.reshape(lit_shape)


def fill_array(value: np.ndarray, shape: tuple[int, ...], tok: Token) -> np.ndarray:
    """Broadcast a 0-d literal to `shape`, refusing absurd sizes."""
    size = 1
    for d in shape:
        size *= d
    if size * value.dtype.itemsize > MAX_CONST_BYTES:
        raise LiteralError(f"a constant of shape {list(shape)} would take "
                           f"{size * value.dtype.itemsize} bytes; the limit is {MAX_CONST_BYTES}",
                           tok)
    if value.dtype == object:     # str: every element the same Python str
        full = np.empty(shape, dtype=object)
        full.fill(value[()])
        return full
    return np.full(shape, value, dtype=value.dtype)


# ---- values -> text ---------------------------------------------------------------------------

def element_text(x: Any) -> str:
    """The shortest text that reads back to the same element of the array's dtype."""
    if isinstance(x, (bool, np.bool_)):
        return "true" if x else "false"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, str):
        return quote(x)
    # NumPy prints each float type with the fewest digits that round-trip in that type
    return str(x)


def array_text(arr: np.ndarray) -> str:
    """Nested-list text of an array (a 0-d array prints as its scalar)."""
    if arr.ndim == 0:
        return element_text(arr[()])
    if arr.ndim == 1:
        return "[" + ", ".join(element_text(x) for x in arr) + "]"
    return "[" + ", ".join(array_text(sub) for sub in arr) + "]"


def uniform_value(arr: np.ndarray) -> np.ndarray | None:
    """The 0-d element when every element of `arr` has the same bytes, else None."""
    if arr.size == 0:
        return None
    flat = np.ascontiguousarray(arr).reshape(-1)
    if flat.dtype == object:      # str: compare the texts (the bytes are pointers)
        return flat[0:1].reshape(()) if all(x == flat[0] for x in flat) else None
    rows = flat.view(np.uint8).reshape(flat.size, flat.dtype.itemsize)
    if (rows == rows[0]).all():
        return flat[0:1].reshape(())
    return None


def imm_text(v: Any) -> str:
    """An immediate: ints as ints, floats as repr (always with '.' or an exponent)."""
    return format_scalar(v)


def quote(s: str) -> str:
    """A string literal that the lexer decodes back to `s`."""
    out = ['"']
    for c in s:
        if c == "\\":
            out.append("\\\\")
        elif c == '"':
            out.append('\\"')
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif c == "\r":
            out.append("\\r")
        elif not c.isprintable():
            out.append(f"\\u{{{ord(c):x}}}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def sigil_name(sigil: str, name: str) -> str:
    """`%x` / `@w`, quoting names the lexer would not read back bare."""
    return sigil + (name if SIGIL_NAME_RE.fullmatch(name) else quote(name))


def word(name: str) -> str:
    """A label or module name: bare when it is a plain word, else quoted."""
    return name if NAME_RE.fullmatch(name) else quote(name)
