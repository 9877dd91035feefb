"""The frontends' common error, and the one report that lists every op an importer lacks.

A FrontendError is a DlvmError so that the CLI prints it like every other diagnostic.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from isa.errors import DlvmError


class FrontendError(DlvmError):
    kind = "error"


def unsupported_report(what: str, ops: Mapping[str, int | Iterable[str]], limit: int = 3) -> str:
    """'unsupported <what> ops: a x2 (at f.py:3, g.py:9), b': every missing op once, with how
    often it occurs (a count, or one entry per occurrence) and up to `limit` places (source
    lines, node names) where it does."""
    parts = []
    for op in sorted(ops):
        occ = ops[op]
        places = [] if isinstance(occ, int) else [p for p in occ if p]
        n = occ if isinstance(occ, int) else max(len(list(occ)), 1)
        part = op + (f" x{n}" if n > 1 else "")
        if places:
            shown = ", ".join(places[:limit]) + (", ..." if len(places) > limit else "")
            part += f" (at {shown})"
        parts.append(part)
    return f"unsupported {what} ops: " + ", ".join(parts)
