"""`dlvm aot`: compile a program ahead of time into a shared library with a C header."""
from __future__ import annotations

import sys

from .common import UsageError, load_program


def register(sub) -> None:
    s = sub.add_parser(
        "aot", help="compile a program into a shared library, a static archive and a C header",
        description="Writes DIR/libNAME.so, DIR/libNAME.a and DIR/NAME.h (the ABI is documented "
        "in the header), DIR/dlvm_aot.json and the generated sources in DIR/src. The library "
        "needs only the C library, libm and pthreads. Run it from Python with "
        "dlvmrt.aot.load(DIR), or with `dlvm run DIR`.")
    s.add_argument("prog", help="the .dlasm or .dlbc program")
    s.add_argument("-o", "--output", required=True, metavar="DIR", help="the output directory")
    s.add_argument("--name", help="library and symbol prefix (default: the module's name)")
    s.set_defaults(fn=run)


def run(a) -> int:
    from jit.targets.aot import AotError, compile_library
    module = load_program(a.prog).module
    try:
        lib = compile_library(module, a.output, name=a.name)
    except AotError as e:
        print(f"dlvm aot: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        raise UsageError(f"cannot write {a.output}: {e.strerror or e}") from None
    size = lib.shared.stat().st_size
    print(f"{lib.shared} ({size / 1e6:.2f} MB), {lib.static}, {lib.header}: {lib.kernels} kernels "
          f"in {lib.seconds:.1f} s", file=sys.stderr)
    return 0
