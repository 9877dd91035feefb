"""`dlvm verify`: check a program without running it."""
from __future__ import annotations

from .common import load_program


def register(sub) -> None:
    s = sub.add_parser("verify", help="check a program without running it")
    s.add_argument("prog", help="the .dlasm or .dlbc program")
    s.set_defaults(fn=run)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def run(a) -> int:
    m = load_program(a.prog).module
    n = sum(len(b.instrs) for f in m.functions.values() for b in f.blocks)
    print(f"{a.prog}: ok (module {m.name}: {_plural(len(m.functions), 'function')}, "
          f"{_plural(len(m.constants), 'constant')}, {n} instructions)")
    return 0
