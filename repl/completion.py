"""Tab completion: op names, attribute names (inside `{` for the op on the line), registers,
constants, functions, labels, dtypes and commands.

Every list is read when Tab is pressed from the op table, the dtype table, the command table
and the live session (its module, registers and paused frame) plus the text being typed, so a
function defined a moment ago completes at once. `complete(session, before, text)` is the pure
part (tested directly); `SessionCompleter` adapts it to prompt_toolkit.
"""
from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable

from prompt_toolkit.completion import Completer, Completion
from prompt_toolkit.document import Document

from assembler.instructions import in_place_specs
from isa.dtypes import BY_NAME as DTYPES
from isa.ops import OPS

from . import commands as C
from .session import ReplSession
from .tool_commands import JIT_WORDS

WORD_RE = re.compile(r'[%@]?[A-Za-z0-9_.:/~\-]*$')
SIGIL_WORD_RE = re.compile(r'[%@]?[A-Za-z0-9_.]*$')
TYPED_REG_RE = re.compile(r"%([A-Za-z0-9_.]+)")
TYPED_LABEL_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*):\s*(?:;.*)?$", re.M)
OP_POSITION_RE = re.compile(r"^\s*(?:%[A-Za-z0-9_.]+(?:\s*,\s*%[A-Za-z0-9_.]+)*\s*=\s*)?[A-Za-z_]*$")
OP_ON_LINE_RE = re.compile(r"^\s*(?:%[A-Za-z0-9_.]+(?:\s*,\s*%[A-Za-z0-9_.]+)*\s*=\s*)?([A-Za-z_]\w*)")


def complete(session: ReplSession, before: str, text: str = "") -> tuple[str, list[str]]:
    """The word being completed (it ends at the cursor) and its possible completions, sorted.
    `before` is the text before the cursor, `text` the whole input (for names typed earlier
    in a multi-line definition)."""
    line = before.rsplit("\n", 1)[-1]
    if line.lstrip().startswith(":"):
        return _command_line(session, line.lstrip()[1:])
    word = SIGIL_WORD_RE.search(line).group()
    return word, _matching(word, _code_choices(session, line, word, text or before))


def _matching(word: str, choices: Iterable[str]) -> list[str]:
    return sorted({c for c in choices if c.startswith(word) and c != word})


# -- instruction and definition text ---------------------------------------------------------

def _code_choices(session: ReplSession, line: str, word: str, text: str) -> Iterable[str]:
    if word.startswith("%"):
        return ["%" + r for r in registers(session, text)]
    if word.startswith("@"):
        return ["@" + n for n in (*session.module.functions, *session.module.constants)]
    head = line[: len(line) - len(word)]
    if head.count("{") > head.count("}"):
        return _attribute_names(line)
    if OP_POSITION_RE.match(line):
        extra = ("func", "const") if "=" not in line else ()
        return [*OPS, *extra]
    if re.search(r"\b(jmp|br)\b", head):
        return labels(session, text)
    if re.search(r":\s*$", head) or re.search(r"[(,]\s*%[\w.]+\s*:\s*$", head):
        return list(DTYPES)
    return []


def _attribute_names(line: str) -> list[str]:
    m = OP_ON_LINE_RE.match(line)
    op = OPS.get(m.group(1)) if m else None
    if op is None:
        return []
    in_place = {a.name for a in in_place_specs(op)}
    given = set(re.findall(r"([A-Za-z_]\w*)\s*=", line[line.rfind("{"):]))
    return [a.name for a in op.attrs if a.name not in in_place and a.name not in given]


def registers(session: ReplSession, text: str = "") -> list[str]:
    """Session registers, the paused frame's, and any typed in the current input."""
    names = dict.fromkeys(session.regs)
    d = session.debugger
    if d is not None and d.running:
        names.update(dict.fromkeys(d.registers()))
    names.update(dict.fromkeys(TYPED_REG_RE.findall(text)))
    return list(names)


def labels(session: ReplSession, text: str = "", func: str | None = None) -> list[str]:
    funcs = [session.module.functions[func]] if func in session.module.functions else \
        list(session.module.functions.values()) if func is None else []
    out = dict.fromkeys(b.label for f in funcs for b in f.blocks)
    if func is None:
        out.update(dict.fromkeys(TYPED_LABEL_RE.findall(text)))
    return list(out)


# -- command lines ---------------------------------------------------------------------------

def _command_line(session: ReplSession, body: str) -> tuple[str, list[str]]:
    if " " not in body:
        word = ":" + body
        return word, _matching(word, [":" + c.name for c in C.COMMANDS])
    name, rest = body.split(" ", 1)
    cmd = C.BY_NAME.get(name)
    if cmd is None or not cmd.complete:
        return "", []
    words = rest.split(" ")
    position = len(words) - 1
    kind = cmd.complete[min(position, len(cmd.complete) - 1)]
    word = WORD_RE.search(words[-1]).group()
    return word, _matching(word, _argument_choices(session, kind, word))


def _argument_choices(session: ReplSession, kind: str, word: str) -> Iterable[str]:
    m = session.module
    regs = ["%" + r for r in registers(session)]
    if kind == C.FUNC:
        return ["@" + f for f in m.functions]
    if kind == C.ARGS:
        return [*regs, "random"]
    if kind == C.REG:
        return regs
    if kind == C.VALUE:
        return [*regs, *("@" + c for c in m.constants)]
    if kind == C.JIT:
        return list(JIT_WORDS)
    if kind == C.OP:
        return list(OPS)
    if kind == C.COMMAND:
        return [c.name for c in C.COMMANDS]
    if kind == C.LOCATION:
        return _locations(session, word)
    if kind == C.FILE:
        return _paths(word)
    return []


def _locations(session: ReplSession, word: str) -> list[str]:
    parts = word.lstrip("@").split(":")
    funcs = session.module.functions
    if len(parts) == 1:
        return ["@" + f for f in funcs]
    f = funcs.get(parts[0])
    if f is None:
        return []
    if len(parts) == 2:
        return [f"@{f.name}:{b.label}" for b in f.blocks]
    b = f.block(parts[1])
    return [f"@{f.name}:{b.label}:{i}" for i in range(len(b.instrs))] if b else []


def _paths(word: str) -> list[str]:
    out = []
    for p in glob.glob(os.path.expanduser(word) + "*"):
        shown = word + p[len(os.path.expanduser(word)):]
        out.append(shown + ("/" if os.path.isdir(p) else ""))
    return out[:200]


class SessionCompleter(Completer):
    """prompt_toolkit's view of `complete`."""

    def __init__(self, session: ReplSession):
        self.session = session

    def get_completions(self, document: Document, complete_event):
        word, choices = complete(self.session, document.text_before_cursor, document.text)
        for c in choices:
            yield Completion(c, start_position=-len(word))
