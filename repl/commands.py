"""The command table: every `:command` of the REPL, its usage line, help and argument kinds.

`:help`, dispatch and completion all read COMMANDS; nothing else lists commands. Handlers take
the session and the argument text and return the output. The handlers of the module and value
commands live here; running and debugging are in run_commands.py, the JIT and optimizer views
in tool_commands.py.
"""
from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import assembler
import isa.bytecode as bytecode
from dlvmrt.loader import load
from isa.ops import OPS

from . import run_commands as run
from . import tool_commands as tools
from .errors import ReplError
from .values import details, load_npy, preview, random_of_type

if TYPE_CHECKING:
    from .session import ReplSession

Handler = Callable[["ReplSession", str], str]

# what an argument position completes to (repl/completion.py): see Command.complete
FUNC, LOCATION, REG, VALUE, FILE, JIT, OP, COMMAND, ARGS = (
    "func", "location", "reg", "value", "file", "jit", "op", "command", "args")


@dataclass(frozen=True)
class Command:
    name: str
    usage: str               # the arguments, as shown by :help
    help: str                # one line
    handler: Handler
    group: str
    aliases: tuple[str, ...] = ()
    complete: tuple[str, ...] = ()     # completion kind of each argument position (last repeats)


# -- module and values ----------------------------------------------------------------------

def cmd_load(s: ReplSession, arg: str) -> str:
    if not arg:
        raise ReplError("usage: :load PROG.dlasm | PROG.dlbc")
    program = load(arg)
    s.set_module(program.module, arg)
    return f"loaded {arg}: module {program.module.name}\n" + cmd_funcs(s, "")


def cmd_funcs(s: ReplSession, arg: str) -> str:
    from .session import signature
    m = s.module
    lines = [f"  func {signature(f)}" for f in m.functions.values()]
    lines += [f"  const @{c.name} : {c.type}" for c in m.constants.values()]
    return "\n".join(lines) if lines else "the module is empty (:load PROG, or type func @f(...))"


def cmd_regs(s: ReplSession, arg: str) -> str:
    out = []
    d = s.debugger
    if d is not None and d.running:
        pos = d.current()
        out.append(f"registers of @{pos.function} (paused before {pos.block}:{pos.index}):")
        out += [f"  %{k} = {_one_line(v)}" for k, v in d.registers().items()]
    if s.regs:
        out.append("session registers:")
        out += [f"  %{k} = {_one_line(v)}" for k, v in s.regs.items()]
    return "\n".join(out) or "no registers yet (try `%x = const 1.0 : f32[2, 3]` or :set)"


def _one_line(v) -> str:
    text = preview(v).replace("\n", " ")
    text = " ".join(text.split())
    return text if len(text) <= 100 else text[:97] + "..."


def cmd_print(s: ReplSession, arg: str) -> str:
    if arg.startswith("%"):
        v = s.lookup(arg[1:])
        if v is None:
            raise ReplError(f"{arg} is not set (:regs lists the registers)")
        return f"{arg} = " + details(v)
    if arg.startswith("@") and arg[1:] in s.module.constants:
        return f"{arg} = " + details(s.module.constants[arg[1:]].value)
    raise ReplError("usage: :print %register | @constant")


def cmd_set(s: ReplSession, arg: str) -> str:
    reg, _, what = arg.partition(" ")
    what = what.strip()
    if not reg.startswith("%") or len(reg) < 2 or not what:
        raise ReplError("usage: :set %x FILE.npy  or  :set %x f32[2, 3]  (random of that type)")
    value = random_of_type(what, s.rng) if "[" in what else load_npy(what)
    s.regs[reg[1:]] = value
    return f"{reg} = {preview(value)}"


def cmd_disasm(s: ReplSession, arg: str) -> str:
    from assembler.printer import Printer
    m = s.module
    if arg:
        f = m.functions.get(arg.lstrip("@"))
        if f is None:
            raise ReplError(f"no function {arg} (:funcs lists them)")
        p = Printer(m, debug=False)
        p.function(f)
        return "\n".join(p.lines)
    lines = []
    for c in m.constants.values():
        if c.value.size > 16:   # weights would drown the listing; :print @c shows them
            lines.append(f"; const @{c.name} : {c.type} = <{c.value.size} values: :print @{c.name}>")
    small = type(m)(m.name, {k: c for k, c in m.constants.items() if c.value.size <= 16},
                    m.functions)
    text = assembler.disassemble(small, debug=False).rstrip("\n")
    head, _, rest = text.partition("\n")
    return "\n".join([head] + lines + ([rest] if rest else []))


def cmd_save(s: ReplSession, arg: str) -> str:
    if not arg:
        raise ReplError("usage: :save FILE.dlbc  (or FILE.dlasm for text)")
    if arg.endswith(".dlasm"):
        data = assembler.disassemble(s.module, debug=False).encode()
    else:
        data = bytecode.encode(s.module)
    try:
        Path(arg).expanduser().write_bytes(data)
    except OSError as e:
        raise ReplError(f"cannot write {arg}: {e.strerror or e}") from None
    return f"wrote {arg} ({len(data)} bytes)"


def cmd_op(s: ReplSession, arg: str) -> str:
    if not arg:
        names = sorted(OPS)
        return "ops (:op NAME for one):\n" + _columns(names)
    op = OPS.get(arg)
    if op is None:
        close = difflib.get_close_matches(arg, OPS, n=3)
        raise ReplError(f"no op {arg!r}" + (f"; did you mean {', '.join(close)}?" if close else ""))
    lines = [f"{op.name}  ({op.family.value}; {op.arity_text})", f"  {op.doc}",
             f"  syntax: {_syntax(op)}"]
    for a in op.attrs:
        default = "required" if a.required else f"default {a.default!r}"
        lines.append(f"  {{{a.name}}}: {a.kind.value}, {default}" + (f" - {a.doc}" if a.doc else ""))
    if op.dtypes:
        lines.append(f"  dtypes: {op.dtypes}")
    return "\n".join(lines)


def _syntax(op) -> str:
    """The instruction's text shape, from its syntax kind, arity and attributes."""
    from isa.ops import Syntax
    if op.syntax is not Syntax.PLAIN:
        return op.syntax.value
    lo, hi = op.arity
    names = [f"%{chr(ord('a') + i)}" for i in range(max(lo, 1) if hi != 0 else 0)]
    if hi is None or hi > len(names):
        names.append("...")
    results = ", ".join(f"%r{i}" if op.n_results != 1 else "%r" for i in range(op.n_results or 1))
    attrs = ", ".join(f"{a.name} = ..." for a in op.attrs)
    return f"{results} = {op.name} {', '.join(names)}" + (f" {{{attrs}}}" if attrs else "")


def _columns(words: list[str], width: int = 96) -> str:
    col = max(len(w) for w in words) + 2
    per = max(width // col, 1)
    return "\n".join("  " + "".join(w.ljust(col) for w in words[i:i + per]).rstrip()
                     for i in range(0, len(words), per))


def cmd_quit(s: ReplSession, arg: str) -> str:
    s.done = True
    return ""


GETTING_STARTED = """\
Type an instruction to run it at once:   %x = const 1.5 : f32[2, 3]     %y = relu %x
Define a function (multi-line, ends at its closing brace), then run it:
  func @g(%a: f32[N]) -> f32[N] {
    %b = mul %a, 2.0
    ret %b
  }
  :run @g %x            (arguments: registers, random, numbers, .npy files; N=8 sizes dims)
Debug: :debug @main random, then :step / :next / :continue / :where / :regs / :print %h
JIT:   :jit always, then :run shows compiled regions; :jit lists them, :jit ir 0 shows one
Tab completes ops, {attributes}, %registers, @functions, labels and commands."""


def cmd_help(s: ReplSession, arg: str) -> str:
    if arg:
        cmd = BY_NAME.get(arg.lstrip(":"))
        if cmd is None:
            raise ReplError(f"no command :{arg.lstrip(':')} (:help lists them)")
        alias = f"  (also :{', :'.join(cmd.aliases)})" if cmd.aliases else ""
        return f":{cmd.name} {cmd.usage}".rstrip() + f"\n  {cmd.help}{alias}"
    out = [GETTING_STARTED]
    for group in dict.fromkeys(c.group for c in COMMANDS):
        out.append(f"\n{group}:")
        for c in (c for c in COMMANDS if c.group == group):
            out.append(f"  :{c.name} {c.usage}".ljust(34) + c.help)
    out.append("\nCtrl-C interrupts a running program, Ctrl-D quits; :help CMD for one command.")
    return "\n".join(out)


_PROGRAM, _VALUES, _RUN, _TOOLS, _SESSION = (
    "program", "values", "running and debugging", "JIT and tools", "session")

COMMANDS: list[Command] = [
    Command("load", "PROG", "load a .dlasm or .dlbc program (replaces the module)", cmd_load,
            _PROGRAM, complete=(FILE,)),
    Command("funcs", "", "list the module's functions and constants", cmd_funcs, _PROGRAM),
    Command("disasm", "[@f]", "print the module (or one function) as .dlasm text", cmd_disasm,
            _PROGRAM, complete=(FUNC,)),
    Command("save", "FILE", "write the module as bytecode (.dlbc) or text (.dlasm)", cmd_save,
            _PROGRAM, complete=(FILE,)),
    Command("op", "[NAME]", "list the ops, or describe one (attributes, syntax)", cmd_op,
            _PROGRAM, aliases=("ops",), complete=(OP,)),
    Command("regs", "", "list registers (the paused frame's, then the session's)", cmd_regs,
            _VALUES),
    Command("print", "%r | @c", "show a register or constant in full, with min/max/mean",
            cmd_print, _VALUES, aliases=("p",), complete=(VALUE,)),
    Command("set", "%r FILE.npy | TYPE", "set a register from a .npy file or randomly by type",
            cmd_set, _VALUES, complete=(REG, FILE)),
    Command("run", "[@f] [ARGS]", "run a function (stops at breakpoints); results go to %out0..",
            run.cmd_run, _RUN, complete=(FUNC, ARGS)),
    Command("debug", "[@f] [ARGS]", "start a function paused before its first instruction",
            run.cmd_debug, _RUN, aliases=("start",), complete=(FUNC, ARGS)),
    Command("step", "", "run one instruction, entering calls", run.cmd_step, _RUN,
            aliases=("s",)),
    Command("next", "", "run one instruction, stepping over calls", run.cmd_next, _RUN,
            aliases=("n",)),
    Command("continue", "", "run to the next breakpoint or the end", run.cmd_continue, _RUN,
            aliases=("c", "cont")),
    Command("where", "", "show the call stack of the paused run", run.cmd_where, _RUN,
            aliases=("bt",)),
    Command("break", "[@f:block:index | LINE]", "set a breakpoint (none: list them)",
            run.cmd_break, _RUN, aliases=("b",), complete=(LOCATION,)),
    Command("clear", "[@f:block:index]", "remove one breakpoint, or all", run.cmd_clear, _RUN,
            complete=(LOCATION,)),
    Command("jit", "[MODE | ir N | llvm N]",
            "MODE off/auto/always(on); none: list compiled regions", tools.cmd_jit,
            _TOOLS, complete=(JIT,)),
    Command("profile", "[@f] [ARGS]", "run with profiling and show the time table",
            tools.cmd_profile, _TOOLS, complete=(FUNC, ARGS)),
    Command("opt", "[@f]", "print the module after the optimizer passes", tools.cmd_opt, _TOOLS,
            complete=(FUNC,)),
    Command("grad", "[@f] [NAMES]", "show @f's adjoint (@f_grad and the functions it calls)",
            tools.cmd_grad, _TOOLS, complete=(FUNC,)),
    Command("help", "[CMD]", "this help, or one command's", cmd_help, _SESSION, aliases=("h", "?"),
            complete=(COMMAND,)),
    Command("quit", "", "leave the REPL (also Ctrl-D)", cmd_quit, _SESSION, aliases=("q", "exit")),
]

BY_NAME: dict[str, Command] = {}
for _c in COMMANDS:
    for _n in (_c.name, *_c.aliases):
        BY_NAME[_n] = _c


def run_command(session: ReplSession, text: str) -> str:
    """Dispatch `name args` (the text after the colon)."""
    name, _, arg = text.strip().partition(" ")
    cmd = BY_NAME.get(name)
    if cmd is None:
        close = difflib.get_close_matches(name, list(BY_NAME), n=1)
        hint = f"; did you mean :{close[0]}?" if close else ""
        raise ReplError(f"unknown command :{name}{hint} (:help lists the commands)")
    return cmd.handler(session, arg.strip())
