"""`dlvm grad`: add the reverse-mode adjoint of a function to a program."""
from __future__ import annotations

import sys

from .common import ELIDE_ABOVE, UsageError, module_of, write_output


def register(sub) -> None:
    s = sub.add_parser(
        "grad", help="add @F_grad: F's results, then the gradient of its first result "
        "with respect to each --wrt name")
    s.add_argument("prog", help="the .dlasm or .dlbc program (or an .onnx / .pt2 model)")
    s.add_argument("--entry", default="main", help="the function to differentiate (default: main)")
    s.add_argument("--wrt", help="comma-separated parameter and constant names (%%x or @w to "
                   "say which; default: every float parameter)")
    s.add_argument("--cotangent", action="store_true",
                   help="give @F_grad a last parameter holding the first result's cotangent "
                   "(implied when that result is not a scalar)")
    s.add_argument("--forward", action="store_true",
                   help="forward mode instead: add @F_jvp, taking one tangent per --wrt name "
                   "after F's parameters and returning F's results then the directional "
                   "derivative of the first")
    s.add_argument("--name", help="the new function's name (default: ENTRY_grad, ENTRY_jvp)")
    s.add_argument("-o", "--output", help="where to write the module: .dlasm text or .dlbc "
                   "bytecode by its extension (default: the text on stdout)")
    s.add_argument("--weights", action="store_true",
                   help=f"print every constant in text output (by default those of more than "
                   f"{ELIDE_ABOVE} elements are summarized)")
    s.set_defaults(fn=run)


def run(a) -> int:
    import assembler
    import isa.bytecode as bc
    from isa.autodiff import grad, jvp
    module = module_of(a.prog)
    wrt = [w for w in a.wrt.split(",") if w.strip()] if a.wrt else None
    if wrt is not None and not wrt:
        raise UsageError("--wrt names no parameter or constant")
    if a.forward:
        if a.cotangent:
            raise UsageError("--cotangent is for reverse mode; --forward takes tangents")
        out = jvp(module, a.entry, wrt, name=a.name)
    else:
        out = grad(module, a.entry, wrt, cotangent=a.cotangent or None, name=a.name)
    if a.output and a.output.endswith(".dlbc"):
        write_output(a.output, bc.encode(out))
        return 0
    text = assembler.disassemble(out, debug=False,
                                 elide_above=None if (a.weights or a.output) else ELIDE_ABOVE)
    if a.output and a.output != "-":
        with open(a.output, "w") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0
