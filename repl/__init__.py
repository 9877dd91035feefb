"""The interactive dlvm REPL and debugger (`dlvm repl [PROG]`).

    repl.main("examples/mlp.dlasm")       # the terminal UI (prompt_toolkit)
    repl.ReplSession(prog).handle(line)   # the same logic without a terminal

specs/repl.md is the user guide.
"""
from __future__ import annotations


def main(prog: str | None = None) -> int:
    """Run the REPL on the terminal (or line by line from a pipe); returns the exit status."""
    from .ui import main as ui_main
    return ui_main(prog)


def __getattr__(name: str):
    # the session class without importing prompt_toolkit for callers that only want the logic
    if name == "ReplSession":
        from .session import ReplSession
        return ReplSession
    raise AttributeError(name)


__all__ = ["main", "ReplSession"]
