"""`dlvm disasm`: print bytecode (or text) as canonical .dlasm."""
from __future__ import annotations

import sys
from pathlib import Path

from isa.errors import MalformedError

from .common import ELIDE_ABOVE, write_output


def register(sub) -> None:
    s = sub.add_parser("disasm", help="print bytecode (or text) as canonical .dlasm")
    s.add_argument("file", help="a .dlbc or .dlasm file")
    s.add_argument("-o", "--output", help="write the text here instead of stdout")
    s.add_argument("--no-debug", action="store_true", help="do not print source locations")
    s.add_argument("--weights", action="store_true",
                   help=f"print every constant (by default those of more than {ELIDE_ABOVE} "
                   "elements are summarized; text without them does not assemble)")
    s.set_defaults(fn=run)


def run(a) -> int:
    import assembler
    import isa.bytecode as bc
    from dlvmrt.loader import is_bytecode
    try:
        data = Path(a.file).read_bytes()
    except OSError as e:     # as `run` reports an unreadable program: a bad input, exit 1
        raise MalformedError(f"cannot read {a.file}: {e.strerror or e}") from None
    module = bc.decode(data) if is_bytecode(data) else assembler.assemble_file(a.file)
    text = assembler.disassemble(module, debug=not a.no_debug,
                                 elide_above=None if a.weights else ELIDE_ABOVE)
    if a.output:
        write_output(a.output, text.encode())
    else:
        sys.stdout.write(text)
    return 0
