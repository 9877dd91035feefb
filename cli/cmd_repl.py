"""`dlvm repl`: the interactive VM REPL and debugger."""
from __future__ import annotations


def register(sub) -> None:
    s = sub.add_parser("repl", help="the interactive VM REPL and debugger")
    s.add_argument("prog", nargs="?", help="a program to load first")
    s.set_defaults(fn=run)


def run(a) -> int:
    from repl import main as repl_main
    return repl_main(a.prog)
