"""`dlvm opt`: print the program after the optimizer passes."""
from __future__ import annotations

import sys

from .common import UsageError, module_of


def register(sub) -> None:
    s = sub.add_parser("opt", help="print the program after the optimizer passes")
    s.add_argument("prog", help="the .dlasm or .dlbc program")
    s.add_argument("--passes", help="comma-separated pass names (default: the standard pipeline)")
    s.set_defaults(fn=run)


def run(a) -> int:
    import assembler
    from jit.passes import PASSES, optimize
    module = module_of(a.prog)
    names = a.passes.split(",") if a.passes else None
    unknown = [n for n in names or [] if n not in PASSES]
    if unknown:
        raise UsageError(f"unknown pass{'es' if len(unknown) > 1 else ''} {', '.join(unknown)} "
                         f"(passes: {', '.join(PASSES)})")
    sys.stdout.write(assembler.disassemble(optimize(module, names), debug=False))
    return 0
