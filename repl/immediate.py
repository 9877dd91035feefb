"""Immediate mode: one instruction typed at the prompt runs at once on the session's registers.

The line becomes a one-instruction function whose parameters are the registers it reads, typed
by their current values. It is verified like any function (first with an empty `ret`, which
tells us the result types, then with `ret` of its results) and run by the VM, so an
instruction means at the prompt exactly what it means in a program.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from assembler.cursor import Cursor
from assembler.instructions import InstrParser
from assembler.lexer import tokenize
from dlvmrt import VM, Program
from isa.errors import DlvmError
from isa.module import Block, Function, Instr, Module, Param, Reg
from isa.ops import OPS
from isa.verify import FunctionTypes, FunctionVerifier

from .errors import ReplError
from .values import type_of

REPL_FILE = "<repl>"
# a name no `.dlasm` text can spell, so it never collides with the user's functions
LINE_FUNC = "<repl>"


def parse_instruction(text: str) -> Instr:
    """One instruction line (no trailing text). Raises MalformedError with line:col and caret."""
    lines = text.split("\n")
    cur = Cursor(tokenize(text, REPL_FILE), REPL_FILE, lines)
    cur.skip_newlines()
    ins = InstrParser(cur).instruction()
    cur.skip_newlines()
    if not cur.at("EOF"):
        raise cur.fail("one instruction at a time (define a function with func @f(...) for more)")
    return ins


def registers_read(ins: Instr) -> list[str]:
    seen: list[str] = []
    for o in ins.operands:
        if isinstance(o, Reg) and o.name not in seen:
            seen.append(o.name)
    return seen


def run_instruction(module: Module, types: dict[str, FunctionTypes], ins: Instr,
                    lookup: Callable[[str], Any], source: str) -> dict[str, np.ndarray]:
    """Run `ins` against `module` (already verified, with `types`); registers it reads come from
    `lookup(name)` (None: not set). Returns the registers it wrote. Raises DlvmError located in
    `source` (the line as typed) or ReplError."""
    op = OPS[ins.op]
    if op.terminator:
        raise ReplError(f"{ins.op} only works inside a function body: func @f(...) -> T {{ ... }}")
    reads = registers_read(ins)
    values = []
    for name in reads:
        v = lookup(name)
        if v is None:
            raise ReplError(f"%{name} is not set; set it first, e.g. `%{name} = const 1.0 : "
                            f"f32[2, 3]` or `:set %{name} f32[2, 3]` (random) or "
                            f"`:set %{name} file.npy`")
        values.append(v)
    params = [Param(n, type_of(v)) for n, v in zip(reads, values)]
    try:
        probe = Function(LINE_FUNC, params, [], [Block("entry", [ins, Instr("ret")])])
        m = Module(module.name, dict(module.constants), {**module.functions, LINE_FUNC: probe})
        results = FunctionVerifier(m, probe).run()[0][0].results
        ret = Instr("ret", [], [Reg(r) for r in ins.results], loc=ins.loc)
        func = Function(LINE_FUNC, params, results, [Block("entry", [ins, ret])])
        m.functions[LINE_FUNC] = func
        program = Program(m, {**types, LINE_FUNC: FunctionVerifier(m, func).run()})
        outs = VM(program, jit="off").run(LINE_FUNC, *values)
    except DlvmError as e:
        raise _as_typed(e, source) from None
    return dict(zip(ins.results, outs))


def _as_typed(e: DlvmError, source: str) -> DlvmError:
    """The error as if the line stood alone: no mention of the wrapper function, the line and
    a caret under the column it names."""
    ctx = e.context
    if ctx.startswith(f"in @{LINE_FUNC}"):
        e.context = ""
    elif f"; called from @{LINE_FUNC}" in ctx:
        e.context = ctx.split(f"; called from @{LINE_FUNC}")[0]
    if e.loc is not None and e.loc.file == REPL_FILE and e.source_line is None:
        lines = source.split("\n")
        if 0 < e.loc.line <= len(lines):
            e.source_line = lines[e.loc.line - 1]
    return e
