"""The terminal side of the REPL: a prompt_toolkit session around a ReplSession.

Highlighting comes from repl.lexer.ReplLexer, completion from repl.completion, history from a
file (~/.dlvm_history, or $DLVM_HISTORY). Enter runs the input unless it is an unfinished
`func ... {` definition, in which case it starts a new line (the body is read until its closing
brace). Ctrl-C at the prompt drops the current input; during a run it interrupts the program
(ReplSession.handle turns that into "interrupted"). Ctrl-D on an empty line leaves.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.lexers import PygmentsLexer
from prompt_toolkit.output import Output
from prompt_toolkit.styles import style_from_pygments_cls
from pygments.styles import get_style_by_name

from .completion import SessionCompleter
from .lexer import ReplLexer
from .session import ReplSession, needs_more

CONTINUATION = "...  "


def history_path() -> Path:
    return Path(os.environ.get("DLVM_HISTORY") or Path.home() / ".dlvm_history").expanduser()


def open_history(path: Path | None = None) -> History:
    """A file history; in memory when the file cannot be written (a read-only home)."""
    path = path or history_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError:
        return InMemoryHistory()
    return FileHistory(str(path))


def _normalize_current_line(buf) -> None:
    """The finished line of a definition gets the indentation of the examples' bodies (two
    spaces; none for a label or the closing brace), whatever was typed on top of the automatic
    indent: typing one's own indent after it doubled it."""
    doc = buf.document
    line = doc.current_line
    body = line.strip()
    if not body or doc.cursor_position_row == 0:
        return
    want = "" if body.endswith(":") or body == "}" else "  "
    if line == want + body:
        return
    start = doc.cursor_position + doc.get_start_of_line_position()
    buf.text = buf.text[:start] + want + body + buf.text[start + len(line):]
    buf.cursor_position = start + len(want) + len(body)


def _key_bindings() -> KeyBindings:
    kb = KeyBindings()

    @kb.add("enter")
    def _(event) -> None:
        buf = event.current_buffer
        if needs_more(buf.text):
            _normalize_current_line(buf)
            buf.insert_text("\n  ")     # indented like the bodies in examples/
        else:
            buf.validate_and_handle()

    @kb.add("}")
    def _(event) -> None:
        # a closing brace on a line of its own goes back to the margin the `func` line has
        buf = event.current_buffer
        line = buf.document.current_line_before_cursor
        if line and not line.strip():
            buf.delete_before_cursor(len(line))
        buf.insert_text("}")

    return kb


def make_prompt_session(session: ReplSession, *, input: Input | None = None,
                        output: Output | None = None, history: History | None = None
                        ) -> PromptSession:
    return PromptSession(
        lexer=PygmentsLexer(ReplLexer),
        completer=SessionCompleter(session),
        complete_while_typing=False,
        history=history if history is not None else open_history(),
        key_bindings=_key_bindings(),
        multiline=True,            # Enter is ours (above): a definition continues, a line runs
        prompt_continuation=lambda width, line, wrap: CONTINUATION.rjust(width),
        style=style_from_pygments_cls(get_style_by_name("default")),
        include_default_pygments_style=False,
        input=input,
        output=output,
    )


def run_ui(session: ReplSession, *, input: Input | None = None, output: Output | None = None,
           history: History | None = None, write: Callable[[str], None] | None = None) -> int:
    """Read, handle, print until :quit or Ctrl-D. Returns the exit status (0)."""
    write = write or (lambda text: print(text, flush=True))
    prompt = make_prompt_session(session, input=input, output=output, history=history)
    if session.startup:
        write(session.startup)
    write("dlvm REPL: :help shows what you can do, Ctrl-D leaves")
    while not session.done:
        try:
            text = prompt.prompt(session.prompt)
        except KeyboardInterrupt:
            session.cancel()
            continue
        except EOFError:
            break
        out = session.handle(text)
        if out:
            write(out)
    return 0


def run_lines(session: ReplSession, lines, write: Callable[[str], None]) -> int:
    """Without a terminal (input from a pipe or file): the same session, line by line."""
    if session.startup:
        write(session.startup)
    for line in lines:
        out = session.handle(line.rstrip("\n"))
        if out:
            write(out)
        if session.done:
            break
    return 0


def main(prog: str | None = None) -> int:
    session = ReplSession(prog)
    if not sys.stdin.isatty():
        return run_lines(session, sys.stdin, lambda text: print(text, flush=True))
    return run_ui(session)
