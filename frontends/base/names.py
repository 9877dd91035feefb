"""Framework names to dlvm identifiers (shared by every frontend).

ONNX allows any string as a value or dim name ("input:0", "batch size", "1"); dlvm registers,
constants and dim names are identifiers. `Namer` makes each name a unique identifier and keeps the
mapping so that callers can find the parameter a graph input became.
"""
from __future__ import annotations

import re

_BAD = re.compile(r"[^A-Za-z0-9_]")


def sanitize(name: str, fallback: str = "v") -> str:
    """An identifier close to `name`: invalid characters become '_', a leading digit gets a
    prefix, and the empty name becomes `fallback`."""
    s = _BAD.sub("_", name)
    if not s:
        s = fallback
    if s[0].isdigit():
        s = f"{fallback}_{s}"
    return s


class Namer:
    """Hands out identifiers that are unique within one scope (a function's registers, the
    module's constants, or the dim names of a signature)."""

    def __init__(self, taken: set[str] | None = None):
        self.taken: set[str] = set(taken or ())

    def fresh(self, hint: str, fallback: str = "v") -> str:
        base = sanitize(hint, fallback)
        name, k = base, 1
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name
