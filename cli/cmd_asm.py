"""`dlvm asm`: assemble text into verified bytecode."""
from __future__ import annotations

from .common import is_bytecode_file, module_of, write_output


def register(sub) -> None:
    s = sub.add_parser("asm", help="assemble .dlasm text into .dlbc bytecode")
    s.add_argument("prog", help="the .dlasm (or .dlbc) program")
    s.add_argument("-o", "--output", required=True, help="where to write the bytecode ('-' for stdout)")
    s.add_argument("--strip", action="store_true", help="leave out debug info (source lines)")
    s.set_defaults(fn=run)


def run(a) -> int:
    import assembler
    import isa.bytecode as bc
    from dlvmrt.program import Program
    module = assembler.assemble_file(a.prog) if not is_bytecode_file(a.prog) else module_of(a.prog)
    Program.from_module(module)
    write_output(a.output, bc.encode(module, debug=not a.strip))
    return 0
