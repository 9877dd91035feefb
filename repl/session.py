"""The REPL's state and logic, with no terminal in sight: `ReplSession.handle(text) -> output`.

A session holds a module (loaded from a file and/or defined at the prompt, always verified), the
session registers that immediate-mode instructions read and write, the JIT setting, the
breakpoints and the paused debugger run. The prompt_toolkit UI (repl/ui.py) only reads lines and
prints what `handle` returns, so every behaviour here is testable by calling `handle`.

Input kinds, decided by the first word:
  `:name args`             a command from the command table (repl/commands.py)
  `func @f(...) ... { }`   a definition (also `const @c : T = ...`), added to the module
  anything else            one instruction, run at once (repl/immediate.py)
"""
from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

import assembler
from dlvmrt import VM, Program
from dlvmrt.debugger import Debugger, State
from dlvmrt.diagnostics import attach_source_line
from isa.errors import DlvmError, InternalError, InvalidError
from isa.module import Module

from .errors import ReplError
from .immediate import REPL_FILE, parse_instruction, run_instruction
from .values import preview

DEFINITION_RE = re.compile(r"^\s*(func\s|const\s+@|module\s)")
RESULT_PREFIX = "out"       # results of :run land in %out0, %out1, ...


def _strip_comments_and_strings(text: str) -> str:
    return re.sub(r'"(?:[^"\\\n]|\\.)*"|;[^\n]*', "", text)


def needs_more(text: str) -> bool:
    """Whether `text` is an unfinished definition: a `func` whose body brace is still open."""
    if not re.match(r"^\s*func\b", text):
        return False
    body = _strip_comments_and_strings(text)
    return body.count("{") > body.count("}") or "{" not in body


class ReplSession:
    def __init__(self, prog: str | None = None, *, seed: int = 0):
        self.module = Module("repl")
        self.types: dict = {}
        self.path: str | None = None
        self.regs: dict[str, np.ndarray] = {}
        self.jit_mode = "off"
        self.vm: VM | None = None
        self.debugger: Debugger | None = None
        self.breakpoints: set[tuple[str, str, int]] = set()
        self.last_run: str | None = None          # the argument text of the last :run
        self.rng = np.random.default_rng(seed)
        self.pending = ""                         # an unfinished definition, line by line
        self.interrupted: list = []               # where the last run was stopped by Ctrl-C
        self.sources: dict[str, str] = {}         # pseudo file name -> text typed at the prompt
        self.inputs = 0
        self.done = False
        self.startup = self.handle(f":load {prog}") if prog else ""

    # -- the one entry point ----------------------------------------------------------------

    def handle(self, text: str) -> str:
        """Run one input (a line, or a whole multi-line definition) and return what to show.
        Never raises for a user's mistake, a trap or Ctrl-C."""
        text = self.pending + text
        if needs_more(text):
            self.pending = text + "\n"
            return ""
        self.pending = ""
        try:
            return self.dispatch(text)
        except DlvmError as e:
            return self.format_error(e)
        except ReplError as e:
            return f"error: {e}"
        except KeyboardInterrupt as e:
            stack = list(reversed(getattr(e, "dlvm_stack", [])))      # outermost first
            self.interrupted = stack
            if stack and not self.paused_note():
                f, b, i, line = stack[-1]
                at = f"@{f}:{b}" + (f":{i}" if i is not None else "") + \
                    (f" (line {line})" if line else "")
                return f"interrupted in {at}; :where shows the call stack"
            return "interrupted" + self.paused_note()
        except Exception as e:    # noqa: BLE001 - a bug of ours must not end the session
            if os.environ.get("DLVM_DEBUG"):
                import traceback
                return traceback.format_exc()
            return (f"internal error: {type(e).__name__}: {e} (this is a bug in dlvm; "
                    f"DLVM_DEBUG=1 shows the traceback)")

    def cancel(self) -> None:
        """Forget an unfinished definition (Ctrl-C at the prompt)."""
        self.pending = ""

    def dispatch(self, text: str) -> str:
        stripped = text.strip()
        if not _strip_comments_and_strings(stripped).strip():
            return ""
        if stripped.startswith(":"):
            from .commands import run_command
            return run_command(self, stripped[1:])
        if DEFINITION_RE.match(text):
            return self.define(text)
        return self.immediate(stripped)

    @property
    def prompt(self) -> str:
        pos = self.debugger.current() if self.debugger and self.debugger.running else None
        if pos is not None:
            return f"dlvm @{pos.function}:{pos.block}:{pos.index}> "
        return "dlvm> "

    # -- errors -----------------------------------------------------------------------------

    def format_error(self, e: DlvmError) -> str:
        """The assembler's diagnostic form, with the source line from the file or from what
        was typed at the prompt."""
        if e.source_line is None and e.loc is not None:
            text = self.sources.get(e.loc.file)
            if text is not None:
                lines = text.split("\n")
                if 0 < e.loc.line <= len(lines):
                    e.source_line = lines[e.loc.line - 1]
            else:
                attach_source_line(e, self.path)
        return e.format()

    def paused_note(self) -> str:
        d = self.debugger
        if d is not None and d.running:
            return f"; paused at {d.current()} (:continue resumes)"
        return ""

    # -- the module -------------------------------------------------------------------------

    def set_module(self, module: Module, path: str | None = None) -> Program:
        """Verify `module` and make it the session's; a paused run of the old one is dropped."""
        program = Program.from_module(module)
        self.module, self.types = program.module, program.types
        if path is not None:
            self.path = path
        self.vm = None
        self.debugger = None
        self.breakpoints = {b for b in self.breakpoints if _breakpoint_exists(module, b)}
        return program

    def program(self) -> Program:
        return Program(self.module, self.types)

    def get_vm(self) -> VM:
        """The session's VM; kept across runs so the JIT's compiled regions accumulate."""
        if self.vm is None:
            # as written: the debugger steps and shows the user's own instructions
            self.vm = VM(self.program(), jit=self.jit_mode, optimize=False)
        return self.vm

    def define(self, text: str) -> str:
        self.inputs += 1
        name = f"<repl#{self.inputs}>"
        self.sources[name] = text
        base = Path(self.path).parent if self.path else Path.cwd()
        parsed = assembler.parse(text, name, base)
        old = set(self.module.functions) | set(self.module.constants)
        merged = Module(self.module.name, {**self.module.constants, **parsed.constants},
                        {**self.module.functions, **parsed.functions}, self.module.source)
        dropped = self.paused_note()
        self.set_module(merged)
        out = []
        for c in parsed.constants.values():
            out.append(f"{'re' * (c.name in old)}defined @{c.name} : {c.type}")
        for f in parsed.functions.values():
            out.append(f"{'re' * (f.name in old)}defined {signature(f)}")
        if dropped:
            out.append("(the paused run was dropped: the module changed; :run or :debug again)")
        return "\n".join(out) or "nothing defined"

    # -- registers --------------------------------------------------------------------------

    def lookup(self, name: str) -> Any:
        """A register by name. While a run is paused its frame comes first (what you step
        through is what you inspect), then the session's registers."""
        if self.debugger is not None and self.debugger.running:
            value = self.debugger.registers().get(name)
            if value is not None:
                return value
        return self.regs.get(name)

    def immediate(self, text: str) -> str:
        ins = parse_instruction(text)
        try:
            outs = run_instruction(self.module, self.types, ins, self.lookup, text)
        except InvalidError as e:
            if e.loc is not None and e.loc.file == REPL_FILE:
                self.sources[REPL_FILE] = text
            raise
        self.regs.update(outs)
        return "\n".join(f"%{k} = {preview(v)}" for k, v in outs.items()) or "ok"

    def store_results(self, fname: str, outs: tuple, seconds: float | None = None) -> str:
        names = [f"{RESULT_PREFIX}{i}" for i in range(len(outs))]
        self.regs.update(zip(names, outs))
        took = f" in {seconds * 1e3:.3g} ms" if seconds is not None else ""
        head = f"@{fname} returned {len(outs)} value{'s' if len(outs) != 1 else ''}{took}:"
        return "\n".join([head] + [f"  %{n} = {preview(v)}".replace("\n", "\n  ")
                                   for n, v in zip(names, outs)])

    # -- running ----------------------------------------------------------------------------

    def run_plain(self, fname: str, values: list) -> str:
        vm = self.get_vm()
        before = len(vm.runners)
        t = time.perf_counter()
        with jit_failures_explained(self.jit_mode, "runs"):
            outs = vm.run(fname, *values)
        out = self.store_results(fname, outs, time.perf_counter() - t)
        compiled = len(vm.runners) - before
        if compiled:
            out += f"\n{compiled} region{'s' if compiled != 1 else ''} compiled by the JIT " \
                   f"(:jit lists them)"
        return out

    def new_debugger(self) -> Debugger:
        d = Debugger(self.get_vm())
        d.breakpoints = self.breakpoints      # one set: :break while paused applies at once
        self.debugger = d
        return d

    def debug_state(self) -> State:
        return self.debugger.state if self.debugger else State.IDLE


@contextmanager
def jit_failures_explained(jit_mode: str, what: str) -> Iterator[None]:
    """With the JIT on, an internal error (or any exception) is most likely the JIT's, which is
    another package and may be unfinished: say so, and how to go on without it."""
    try:
        yield
    except KeyboardInterrupt:
        raise
    except Exception as e:
        if jit_mode == "off" or (isinstance(e, DlvmError) and not isinstance(e, InternalError)):
            raise
        msg = e.format() if isinstance(e, DlvmError) else f"{type(e).__name__}: {e}"
        raise ReplError(f"the JIT failed ({msg}); `:jit off` {what} on the interpreter alone"
                        ) from None


def signature(f) -> str:
    params = ", ".join(f"%{p.name}: {p.type}" for p in f.params)
    results = ", ".join(str(t) for t in f.results)
    return f"@{f.name}({params}) -> {results if len(f.results) == 1 else '(' + results + ')'}"


def _breakpoint_exists(module: Module, bp: tuple[str, str, int]) -> bool:
    f = module.functions.get(bp[0])
    b = f.block(bp[1]) if f else None
    return b is not None and bp[2] < len(b.instrs)
