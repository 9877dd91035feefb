"""Pygments lexers for `.dlasm` text and for REPL input lines.

`DlasmLexer` is an ordinary Pygments lexer, usable by any tool that takes one:

    pygmentize -l repl/lexer.py:DlasmLexer -x examples/mlp.dlasm
    pygments.highlight(text, DlasmLexer(), formatter)

Op names, dtypes and the keywords of the language are read from the op table and the dtype
table when this module is imported, so a new op is highlighted without touching this file. The
token rules mirror assembler/lexer.py (sigil names, numbers, strings, `;` comments).
"""
from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Text, Whitespace

from isa.dtypes import BY_NAME
from isa.ops import OPS

# words of the module grammar (assembler/parser.py) that are not ops
STRUCTURE_KEYWORDS = ("module", "source", "func", "file", "loc")
LITERAL_WORDS = ("true", "false", "inf", "nan")

_SIGIL_NAME = r'(?:"(?:[^"\\\n]|\\.)*"|[A-Za-z0-9_.]+)'
_NUMBER = r"-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?(?![A-Za-z0-9_.])"


def _op_words() -> tuple[str, ...]:
    # longest first, so `reduce_sum` never lexes as a shorter op plus a tail
    return tuple(sorted(OPS, key=len, reverse=True))


class DlasmLexer(RegexLexer):
    """dlvm assembly (`.dlasm`)."""

    name = "dlvm assembly"
    aliases = ["dlasm", "dlvm"]
    filenames = ["*.dlasm"]
    mimetypes = ["text/x-dlasm"]

    tokens = {
        "root": [
            (r"\n", Whitespace),
            (r"[ \t\r]+", Whitespace),
            (r";.*?$", Comment.Single),
            # a label line: `loop:` at the start of a line (not `%x: f32` in a signature)
            (r"^([ \t]*)([A-Za-z_][A-Za-z0-9_.]*)(:)(?=[ \t]*(?:;.*)?$)",
             bygroups(Whitespace, Name.Label, Punctuation)),
            (r"%" + _SIGIL_NAME, Name.Variable),
            (r"@" + _SIGIL_NAME, Name.Function),
            (r'"(?:[^"\\\n]|\\.)*"', String.Double),
            (r"-(?:inf|nan)(?![A-Za-z0-9_.])", Number.Float),
            (_NUMBER, Number),
            (r"\{(?=[ \t]*(?:;.*)?$)", Punctuation),     # a function body opens; attributes don't
            (r"\{", Punctuation, "attrs"),
            (words(STRUCTURE_KEYWORDS + ("const",), suffix=r"(?![A-Za-z0-9_.])"), Keyword),
            (words(tuple(BY_NAME), suffix=r"(?=\s*\[)"), Keyword.Type),
            (words(_op_words(), suffix=r"(?![A-Za-z0-9_.])"), Name.Builtin),
            (words(LITERAL_WORDS, suffix=r"(?![A-Za-z0-9_.])"), Keyword.Constant),
            (r"->", Operator),
            (r"[=?]", Operator),
            (r"[,:()\[\]}]", Punctuation),
            (r"[A-Za-z_][A-Za-z0-9_.]*", Name),
            (r".", Text),
        ],
        # inside `{...}`: `name =` is an attribute name; values lex as in root
        "attrs": [
            (r"\}", Punctuation, "#pop"),
            (r"([A-Za-z_][A-Za-z0-9_]*)(\s*)(=)", bygroups(Name.Attribute, Whitespace, Operator)),
            (r"\n", Whitespace),
            (r"[ \t\r]+", Whitespace),
            (r"%" + _SIGIL_NAME, Name.Variable),
            (r'"(?:[^"\\\n]|\\.)*"', String.Double),
            (_NUMBER, Number),
            (words(tuple(BY_NAME), suffix=r"(?![A-Za-z0-9_.])"), Keyword.Type),
            (words(LITERAL_WORDS, suffix=r"(?![A-Za-z0-9_.])"), Keyword.Constant),
            (r"[,\[\]?]", Punctuation),
            (r"[A-Za-z_][A-Za-z0-9_.]*", Name),
            (r".", Text),
        ],
    }


class ReplLexer(DlasmLexer):
    """REPL input: `.dlasm` lines, plus `:command arguments` lines."""

    name = "dlvm REPL"
    aliases = ["dlvm-repl"]
    filenames = []
    mimetypes = []

    tokens = {
        "root": [
            (r"^(\s*)(:[A-Za-z_]*)", bygroups(Whitespace, Keyword.Pseudo), "command"),
            *DlasmLexer.tokens["root"],
        ],
        "command": [
            (r"\n", Whitespace, "#pop"),
            (r"[ \t]+", Whitespace),
            (r"%" + _SIGIL_NAME, Name.Variable),
            (r"@" + _SIGIL_NAME + r"(?::[A-Za-z0-9_.]+)*", Name.Function),
            (words(tuple(BY_NAME), suffix=r"(?=\s*\[)"), Keyword.Type),
            (_NUMBER, Number),
            (r"[^\s]+", String),
        ],
        "attrs": DlasmLexer.tokens["attrs"],
    }
