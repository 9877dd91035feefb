"""Diagnostics for people: the source line under an error's location, read from the program file."""
from __future__ import annotations

from pathlib import Path

from isa.errors import DlvmError


def attach_source_line(e: DlvmError, prog: str | None) -> None:
    """Give `e` the text of the line it points at, so `format()` can show it with a caret.

    The location names the file as it was assembled; a program moved since is looked up beside
    `prog` too.
    """
    if e.source_line is not None or e.loc is None:
        return
    candidates = [Path(e.loc.file)]
    if prog:
        candidates.append(Path(prog).parent / Path(e.loc.file).name)
    for c in candidates:
        try:
            lines = c.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        if 0 < e.loc.line <= len(lines):
            e.source_line = lines[e.loc.line - 1]
            return
