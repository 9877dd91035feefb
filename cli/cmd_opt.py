"""`dlvm opt`: print the program after the optimizer passes."""
from __future__ import annotations

import sys

from .common import ELIDE_ABOVE, UsageError, module_of


def register(sub) -> None:
    s = sub.add_parser("opt", help="print the program after the optimizer passes")
    s.add_argument("prog", help="the .dlasm or .dlbc program")
    s.add_argument("--passes", help="comma-separated pass names (default: the standard pipeline)")
    s.add_argument("--weights", action="store_true",
                   help=f"print every constant (by default those of more than {ELIDE_ABOVE} "
                   "elements are summarized; text without them does not assemble)")
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
    sys.stdout.write(assembler.disassemble(optimize(module, names), debug=False,
                                           elide_above=None if a.weights else ELIDE_ABOVE))
    return 0
