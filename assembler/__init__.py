"""The `.dlasm` assembler and disassembler.

    parse(text, filename, base_dir)   text -> Module, syntax only          (MalformedError)
    assemble(text, filename, base_dir) parse, then isa.verify_module       (+ InvalidError)
    assemble_file(path)               read a UTF-8 file and assemble it
    disassemble(module, debug=True)   Module -> canonical text; parse(disassemble(m)) == m

Errors carry `file:line:col` and, for text we hold, the source line, so `.format()` shows a caret.
The language is described in specs/language.md.
"""
from __future__ import annotations

from pathlib import Path

from isa.errors import InvalidError, MalformedError, SourceLoc
from isa.module import Module
from isa.verify import verify_module

from .parser import parse_text
from .printer import disassemble_module

__all__ = ["parse", "assemble", "assemble_file", "disassemble"]


def parse(text: str, filename: str = "<input>", base_dir: str | Path | None = None) -> Module:
    """Parse `.dlasm` text into an unverified Module. `.npy` paths are relative to `base_dir`
    (default: the working directory). Raises MalformedError with the location of the problem."""
    return parse_text(text, filename, base_dir)


def assemble(text: str, filename: str = "<input>", base_dir: str | Path | None = None) -> Module:
    """Parse and verify. A verifier error located in this text gets its source line attached."""
    module = parse_text(text, filename, base_dir)
    try:
        verify_module(module)
    except InvalidError as e:
        if e.loc is not None and e.loc.file == filename and e.source_line is None:
            lines = text.removeprefix("\ufeff").split("\n")
            if 0 < e.loc.line <= len(lines):
                e.source_line = lines[e.loc.line - 1].rstrip("\r")
        raise
    return module


def assemble_file(path: str | Path) -> Module:
    """Assemble a `.dlasm` file; diagnostics name the path as given, `.npy` files are found
    next to it."""
    filename = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise MalformedError(f"cannot read {filename}: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        before = data[:e.start]
        line = before.count(b"\n") + 1
        col = len(before) - (before.rfind(b"\n") + 1) + 1
        raise MalformedError(f"the file is not valid UTF-8 (byte 0x{data[e.start]:02x})",
                             SourceLoc(filename, line, col)) from None
    return assemble(text, filename, Path(path).parent)


def disassemble(module: Module, debug: bool = True, elide_above: int | None = None) -> str:
    """Canonical text of `module`. With `debug`, the `source` directive and `loc(L:C)` suffixes
    make the locations of the reassembled module equal to this one's. With `elide_above`, larger
    constants are left out (a summary instead): readable, but no longer assemblable."""
    return disassemble_module(module, debug, elide_above)
