"""The `.dlasm` lexer: text -> a list of tokens, each with its 1-based line and column.

The language is line oriented: a NEWLINE token ends every constant, header and instruction.
Inside `(` and `[` newlines are insignificant, so a long parameter list or a literal may span
lines. Brackets of every kind are matched here, so an unclosed `[` is reported where it opens
rather than wherever the parser happens to notice.

Token kinds:
  NAME     bare word: op names, keywords, labels, dtypes, dim names (`reduce_sum`, `f32`, `N`)
  REG      `%x`, `%0`, `%"any text"`          value: the name without the sigil
  GLOBAL   `@w`, `@"any text"`                value: the name without the sigil
  INT      `42`, `-1`                          value: int
  FLOAT    `0.5`, `1e-5`, `-2.0`, `-inf`       value: float (`inf`/`nan` alone are NAMEs)
  STRING   `"text"` with \\ \" \n \t \r \\u{hex} escapes     value: the decoded text
  PUNCT    one of  = , : ( ) [ ] { } -> ?
  NEWLINE  end of a logical line (also emitted before EOF)
  EOF
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from isa.errors import MalformedError, SourceLoc

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
# names after a sigil may also start with a digit (`%0`), as SSA-style frontends like to emit
SIGIL_NAME_RE = re.compile(r"[A-Za-z0-9_.]+")
NUMBER_RE = re.compile(r"-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?")
SPECIAL_FLOAT_RE = re.compile(r"-(?:inf|nan)(?![A-Za-z0-9_.])")
PUNCTS = ("->", "=", ",", ":", "(", ")", "[", "]", "{", "}", "?")
OPENERS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = {v: k for k, v in OPENERS.items()}
ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "r": "\r"}


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    value: Any
    line: int
    col: int

    def describe(self) -> str:
        """How an error message names this token."""
        if self.kind == "NEWLINE":
            return "end of line"
        if self.kind == "EOF":
            return "end of file"
        return f"'{self.text}'"


class Lexer:
    def __init__(self, text: str, filename: str):
        self.text = text
        self.filename = filename
        self.lines = [ln.rstrip("\r") for ln in text.split("\n")]
        self.tokens: list[Token] = []
        self.pos = 0
        self.line = 1
        self.line_start = 0
        self.brackets: list[Token] = []   # open brackets, innermost last
        self.comment_col: int | None = None   # where a comment began on this line

    def fail(self, message: str, line: int, col: int) -> MalformedError:
        src = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        return MalformedError(message, SourceLoc(self.filename, line, col), source_line=src)

    @property
    def col(self) -> int:
        return self.pos - self.line_start + 1

    def add(self, kind: str, text: str, value: Any, col: int) -> Token:
        tok = Token(kind, text, value, self.line, col)
        self.tokens.append(tok)
        return tok

    def run(self) -> list[Token]:
        text = self.text
        while self.pos < len(text):
            c = text[self.pos]
            if c == "\n":
                self.newline()
            elif c in " \t\r\f\v":
                self.pos += 1
            elif c == ";":
                self.comment_col = self.col
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif c == '"':
                s, n = self.string(self.pos)
                self.add("STRING", text[self.pos:self.pos + n], s, self.col)
                self.pos += n
            elif c in "%@":
                self.sigil_name(c)
            elif c.isdigit() or (c in "-." and self.starts_number()):
                self.number()
            elif c == "-" and SPECIAL_FLOAT_RE.match(text, self.pos):
                word = SPECIAL_FLOAT_RE.match(text, self.pos).group()
                self.add("FLOAT", word, float(word), self.col)
                self.pos += len(word)
            elif NAME_RE.match(text, self.pos):
                word = NAME_RE.match(text, self.pos).group()
                self.add("NAME", word, word, self.col)
                self.pos += len(word)
            else:
                self.punct(c)
        if self.brackets:
            b = self.brackets[-1]
            raise self.fail(f"'{b.text}' is never closed", b.line, b.col)
        if not self.tokens or self.tokens[-1].kind != "NEWLINE":
            self.add("NEWLINE", "", None, self.col)
        self.add("EOF", "", None, self.col)
        return self.tokens

    def newline(self) -> None:
        # newlines inside ( ) and [ ] continue the logical line
        if not self.brackets or self.brackets[-1].text == "{":
            if self.tokens and self.tokens[-1].kind != "NEWLINE":
                # "expected ..., got end of line" points before a trailing comment
                self.add("NEWLINE", "", None, self.comment_col or self.col)
        self.comment_col = None
        self.pos += 1
        self.line += 1
        self.line_start = self.pos

    def starts_number(self) -> bool:
        m = NUMBER_RE.match(self.text, self.pos)
        return m is not None and any(ch.isdigit() for ch in m.group())

    def number(self) -> None:
        col = self.col
        m = NUMBER_RE.match(self.text, self.pos)
        word = m.group()
        end = m.end()
        if end < len(self.text) and (self.text[end].isalnum() or self.text[end] in "_."):
            bad = re.compile(r"[A-Za-z0-9_.]*").match(self.text, end).group()
            raise self.fail(f"malformed number '{word}{bad}'", self.line, col)
        if any(ch in word for ch in ".eE"):
            self.add("FLOAT", word, float(word), col)
        else:
            self.add("INT", word, int(word), col)
        self.pos = end

    def sigil_name(self, sigil: str) -> None:
        col = self.col
        start = self.pos + 1
        kind = "REG" if sigil == "%" else "GLOBAL"
        if start < len(self.text) and self.text[start] == '"':
            name, n = self.string(start)
            self.add(kind, self.text[self.pos:start + n], name, col)
            self.pos = start + n
            return
        m = SIGIL_NAME_RE.match(self.text, start)
        if m is None:
            what = "register" if sigil == "%" else "constant or function"
            raise self.fail(f"expected a {what} name after '{sigil}'", self.line, col)
        self.add(kind, sigil + m.group(), m.group(), col)
        self.pos = m.end()

    def string(self, start: int) -> tuple[str, int]:
        """Decode the string literal opening at `start`; return (value, length in the text)."""
        text = self.text
        out: list[str] = []
        i = start + 1
        while True:
            if i >= len(text) or text[i] == "\n":
                raise self.fail("unterminated string (a string must end on its line)",
                                self.line, start - self.line_start + 1)
            c = text[i]
            if c == '"':
                return "".join(out), i + 1 - start
            if c != "\\":
                if "\ud800" <= c <= "\udfff":   # only from a str built in Python, never UTF-8
                    raise self.fail("a surrogate code point (D800 to DFFF) is not a character",
                                    self.line, i - self.line_start + 1)
                out.append(c)
                i += 1
                continue
            esc = text[i + 1] if i + 1 < len(text) else ""
            if esc in ESCAPES:
                out.append(ESCAPES[esc])
                i += 2
            elif esc == "u":
                m = re.compile(r"u\{([0-9A-Fa-f]{1,6})\}").match(text, i + 1)
                if m is None or int(m.group(1), 16) > 0x10FFFF:
                    raise self.fail("bad \\u escape (write \\u{hex digits})",
                                    self.line, i - self.line_start + 1)
                if 0xD800 <= int(m.group(1), 16) <= 0xDFFF:
                    # a lone surrogate is no character: UTF-8 cannot encode it (the printer and
                    # the bytecode writer would fail later, far from the text)
                    raise self.fail(f"\\u{{{m.group(1)}}} is a surrogate code point "
                                    "(D800 to DFFF), not a character",
                                    self.line, i - self.line_start + 1)
                out.append(chr(int(m.group(1), 16)))
                i = m.end()
            else:
                shown = esc if esc and esc != "\n" else "end of line"
                raise self.fail(f"unknown escape '\\{shown}' in a string (known: \\\\ \\\" \\n "
                                f"\\t \\r \\u{{hex}})", self.line, i - self.line_start + 1)

    def punct(self, c: str) -> None:
        col = self.col
        p = next((p for p in PUNCTS if self.text.startswith(p, self.pos)), None)
        if p is None:
            shown = c if c.isprintable() else repr(c)
            raise self.fail(f"unexpected character '{shown}'", self.line, col)
        tok = self.add("PUNCT", p, p, col)
        if p in OPENERS:
            self.brackets.append(tok)
        elif p in CLOSERS:
            if not self.brackets:
                raise self.fail(f"'{p}' without a matching '{CLOSERS[p]}'", self.line, col)
            top = self.brackets.pop()
            if top.text != CLOSERS[p]:
                raise self.fail(f"'{p}' does not close the '{top.text}' at line {top.line}, "
                                f"column {top.col}", self.line, col)
        self.pos += len(p)


def tokenize(text: str, filename: str = "<input>") -> list[Token]:
    """Split `text` into tokens; raise MalformedError at the first bad character."""
    return Lexer(text, filename).run()
