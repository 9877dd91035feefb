"""The parser's view of the token list, plus the small grammar pieces every part of the language
shares: types, operands, labels, literal trees and `loc(L:C)` suffixes.

Every error is a MalformedError at the offending token's line and column, with the source line
attached so that the diagnostic shows a caret.
"""
from __future__ import annotations

import difflib

from isa.dtypes import BY_NAME, DType
from isa.errors import MalformedError, SourceLoc
from isa.module import ConstRef, Imm, Operand, Reg
from isa.types import Dim, TensorType

from .lexer import Token
from .literals import INT64, LiteralError, LiteralTree, is_literal_token, is_scalar_token, scalar_value


def did_you_mean(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.65)
    return f"; did you mean '{close[0]}'?" if close else ""


class Cursor:
    def __init__(self, tokens: list[Token], filename: str, lines: list[str]):
        self.tokens = tokens
        self.i = 0
        self.filename = filename
        self.lines = lines
        # the file that entity locations name: the `source` directive's, else the filename
        self.loc_file = filename

    # ---- navigation -------------------------------------------------------------------------

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.tokens[min(self.i + k, len(self.tokens) - 1)]

    def advance(self) -> Token:
        tok = self.tokens[self.i]
        if tok.kind != "EOF":
            self.i += 1
        return tok

    def at(self, kind: str, text: str | None = None) -> bool:
        t = self.tok
        return t.kind == kind and (text is None or t.text == text)

    def at_punct(self, p: str) -> bool:
        return self.at("PUNCT", p)

    def at_word(self, w: str) -> bool:
        return self.at("NAME", w)

    def accept_punct(self, p: str) -> bool:
        if self.at_punct(p):
            self.advance()
            return True
        return False

    def expect_punct(self, p: str, what: str = "") -> Token:
        if not self.at_punct(p):
            raise self.fail(f"expected '{p}'{what}, got {self.tok.describe()}")
        return self.advance()

    def expect(self, kind: str, what: str) -> Token:
        if self.tok.kind != kind:
            raise self.fail(f"expected {what}, got {self.tok.describe()}")
        return self.advance()

    def expect_newline(self, after: str) -> None:
        if not self.at("NEWLINE"):
            raise self.fail(f"unexpected {self.tok.describe()} after {after}")
        self.advance()

    def skip_newlines(self) -> None:
        while self.at("NEWLINE"):
            self.advance()

    # ---- errors and locations ---------------------------------------------------------------

    def fail(self, message: str, tok: Token | None = None) -> MalformedError:
        t = tok or self.tok
        src = self.lines[t.line - 1] if 0 < t.line <= len(self.lines) else None
        return MalformedError(message, SourceLoc(self.filename, t.line, t.col), source_line=src)

    def literal_fail(self, e: LiteralError) -> MalformedError:
        return self.fail(e.message, e.token)

    def loc_of(self, tok: Token) -> SourceLoc:
        return SourceLoc(self.loc_file, tok.line, tok.col)

    def loc_suffix(self, natural: SourceLoc) -> SourceLoc:
        """An optional `loc(LINE:COL)` overrides where an entity says it came from."""
        if not (self.at_word("loc") and self.peek().kind == "PUNCT" and self.peek().text == "("):
            return natural
        self.advance()
        self.advance()
        line = self.expect("INT", "a line number in loc(LINE:COL)")
        self.expect_punct(":", " in loc(LINE:COL)")
        col = self.expect("INT", "a column number in loc(LINE:COL)")
        self.expect_punct(")", " to close loc(LINE:COL)")
        for t in (line, col):
            if not 1 <= t.value <= 0x7FFFFFFF:
                raise self.fail("loc line and column must be positive 32-bit numbers", t)
        return SourceLoc(self.loc_file, line.value, col.value)

    # ---- shared grammar ---------------------------------------------------------------------

    def dtype(self) -> DType:
        tok = self.expect("NAME", "a dtype such as f32")
        dt = BY_NAME.get(tok.value)
        if dt is None:
            raise self.fail(f"unknown dtype '{tok.text}'{did_you_mean(tok.text, BY_NAME)} "
                            f"(dtypes: {', '.join(BY_NAME)})", tok)
        return dt

    def type(self) -> TensorType:
        """`f32[N, 4]`, `i64[]`, `f32[?, 3]`."""
        dt = self.dtype()
        self.expect_punct("[", " after the dtype (a scalar is written f32[])")
        dims: list[Dim] = []
        while not self.at_punct("]"):
            dims.append(self.dim())
            if not self.accept_punct(",") and not self.at_punct("]"):
                raise self.fail(f"expected ',' or ']' in a type, got {self.tok.describe()}")
        self.advance()
        return TensorType(dt, tuple(dims))

    def dim(self) -> Dim:
        tok = self.advance()
        if tok.kind == "INT":
            if not 0 <= tok.value <= INT64.max:
                raise self.fail(f"a dim must be a size >= 0, a name or '?', got {tok.text}", tok)
            return tok.value
        if tok.kind == "NAME":
            return tok.value
        if tok.kind == "PUNCT" and tok.text == "?":
            return None
        raise self.fail(f"expected a dim (a size, a name or '?'), got {tok.describe()}", tok)

    def label(self, what: str = "a label") -> str:
        tok = self.tok
        if tok.kind in ("NAME", "STRING"):
            self.advance()
            return tok.value
        raise self.fail(f"expected {what}, got {tok.describe()}")

    def at_operand(self) -> bool:
        t = self.tok
        return t.kind in ("REG", "GLOBAL") or is_scalar_token(t)

    def operand(self) -> Operand:
        """`%reg`, `@const` or an immediate (`1` int, `1.0` float, `true` bool)."""
        tok = self.tok
        if tok.kind == "REG":
            self.advance()
            return Reg(tok.value)
        if tok.kind == "GLOBAL":
            self.advance()
            return ConstRef(tok.value)
        if is_scalar_token(tok):
            self.advance()
            try:
                return Imm(scalar_value(tok))
            except LiteralError as e:
                raise self.literal_fail(e) from None
        raise self.fail(f"expected an operand (%register, @constant or a number), "
                        f"got {tok.describe()}")

    def operand_list(self, closer: str | None = None) -> list[Operand]:
        """Comma-separated operands up to `closer` (a punct) or to the first non-operand."""
        ops: list[Operand] = []
        if closer is not None and self.at_punct(closer):
            return ops
        if closer is None and not self.at_operand():
            return ops
        ops.append(self.operand())
        while True:
            if self.accept_punct(","):
                ops.append(self.operand())
            elif self.at_operand():
                raise self.fail("missing ',' between operands")
            else:
                return ops

    def literal_tree(self) -> LiteralTree:
        """A scalar literal or a nested list of them."""
        tok = self.tok
        if is_literal_token(tok):
            return self.advance()
        if not self.at_punct("["):
            raise self.fail(f"expected a literal (a number, true, false, a \"string\" or a [list]), "
                            f"got {tok.describe()}")
        self.advance()
        items: list[LiteralTree] = []
        while not self.at_punct("]"):
            if items:
                if not self.at_punct(","):
                    raise self.fail(f"expected ',' or ']' in a list literal, got "
                                    f"{self.tok.describe()}")
                self.advance()
            items.append(self.literal_tree())
        self.advance()
        return items
