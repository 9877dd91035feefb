"""Running and debugging commands: :run, :debug, :step, :next, :continue, :where, :break, :clear.

`:run` takes the VM's fast path unless a breakpoint is set, in which case it runs under the
debugger (dlvmrt/debugger.py, the same interpreter steps) and stops at the first one. Every stop
prints where the run stands and the registers the last instruction wrote.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from dlvmrt.debugger import Debugger, Stop
from isa.errors import DlvmError

from .arguments import resolve_arguments, split_call
from .errors import ReplError
from .values import preview

if TYPE_CHECKING:
    from .session import ReplSession


def _call(s: ReplSession, arg: str):
    fname, words = split_call(s, arg or (s.last_run or ""))
    func = s.module.functions.get(fname)
    if func is None:
        known = ", ".join("@" + f for f in s.module.functions) or "none (:load a program)"
        raise ReplError(f"no function @{fname} (the module has: {known})")
    values = resolve_arguments(s, func, words)
    s.last_run = " ".join(["@" + fname, *words])
    return fname, values


def cmd_run(s: ReplSession, arg: str) -> str:
    fname, values = _call(s, arg)
    if not s.breakpoints:
        s.debugger = None
        return s.run_plain(fname, values)
    d = s.new_debugger()
    d.start(fname, values)
    if d.at_breakpoint():
        return _report(s, d, Stop.BREAKPOINT, [])
    return _resume(s, d, d.cont)


def cmd_debug(s: ReplSession, arg: str) -> str:
    fname, values = _call(s, arg)
    d = s.new_debugger()
    pos = d.start(fname, values)
    return f"paused before the first instruction of @{fname}:\n  -> {pos}\n" \
           f"(:step, :next, :continue, :where, :regs, :print %r)"


def _paused(s: ReplSession) -> Debugger:
    d = s.debugger
    if d is None or not d.running:
        why = {"finished": " (the last run finished)", "trapped": " (the last run trapped)"}
        state = d.state.value if d else ""
        raise ReplError(f"no paused run{why.get(state, '')}: start one with :debug @f ARGS, or set "
                        f":break @f and :run @f ARGS")
    return d


def cmd_step(s: ReplSession, arg: str) -> str:
    d = _paused(s)
    return _resume(s, d, d.step)


def cmd_next(s: ReplSession, arg: str) -> str:
    d = _paused(s)
    return _resume(s, d, d.next)


def cmd_continue(s: ReplSession, arg: str) -> str:
    d = _paused(s)
    return _resume(s, d, d.cont)


def _resume(s: ReplSession, d: Debugger, action) -> str:
    """Run `action`; report the stop, the results, or the trap with its stack. After one
    instruction (step, next) also show the registers it wrote."""
    frame = d.frames[-1]
    wrote = d.frames[-1].instr().results if action != d.cont else []
    try:
        stop = action()
    except DlvmError as e:
        stack = "\n".join(f"  #{i} {p}" for i, p in enumerate(d.where()))
        return s.format_error(e) + f"\nstack at the trap:\n{stack}"
    except KeyboardInterrupt:
        return f"interrupted; paused at {d.current()} (:continue resumes)"
    # registers the instruction just run wrote, when it ran in the frame we still look at
    written = []
    if d.frames and d.frames[-1] is frame:
        regs = d.registers()
        written = [(n, regs[n]) for n in wrote if n in regs]
    return _report(s, d, stop, written)


def _report(s: ReplSession, d: Debugger, stop: Stop, written: list) -> str:
    out = [f"  %{n} = {preview(v)}".replace("\n", "\n  ") for n, v in written]
    if stop is Stop.DONE:
        out.append(s.store_results(d.entry, d.results))
        return "\n".join(out)
    pos = d.current()
    if stop is Stop.BREAKPOINT:
        out.append(f"breakpoint @{pos.function}:{pos.block}:{pos.index}")
    depth = len(d.frames)
    out.append(f"-> {pos}" + (f"   (in a call, depth {depth})" if depth > 1 else ""))
    return "\n".join(out)


def cmd_where(s: ReplSession, arg: str) -> str:
    d = s.debugger
    if (d is None or not d.frames) and getattr(s, "interrupted", None):
        lines = [f"  #{k} @{f}:{b}" + (f":{i}" if i is not None else "") +
                 (f" (line {line})" if line else "")
                 for k, (f, b, i, line) in enumerate(s.interrupted)]
        return ("call stack where the run was interrupted (it cannot resume; :debug runs "
                "under the debugger, which can):\n" + "\n".join(lines))
    if d is None or not d.frames:
        raise ReplError("no run to show: start one with :debug @f ARGS")
    lines = [f"  #{i} {p}" for i, p in enumerate(d.where())]
    state = f"paused (#{len(lines) - 1} runs next)" if d.running else d.state.value
    return f"call stack of @{d.entry}, {state}:\n" + "\n".join(lines)


def parse_location(s: ReplSession, arg: str) -> tuple[str, str, int]:
    """`@f`, `@f:block`, `@f:block:index`, or a source line number of the loaded program."""
    if arg.isdigit():
        line = int(arg)
        for f in s.module.functions.values():
            for b in f.blocks:
                for i, ins in enumerate(b.instrs):
                    if ins.loc is not None and ins.loc.line == line and \
                            not ins.loc.file.startswith("<"):
                        return f.name, b.label, i
        raise ReplError(f"no instruction on line {line} of {s.path or 'the loaded program'}")
    if not arg.startswith("@"):
        raise ReplError("usage: :break @f[:block[:index]]  or  :break LINE")
    parts = arg[1:].split(":")
    if len(parts) > 3 or not parts[0]:
        raise ReplError(f"bad location {arg!r}: write @f, @f:block or @f:block:index")
    func = s.module.functions.get(parts[0])
    if func is None:
        known = ", ".join("@" + f for f in s.module.functions) or "none"
        raise ReplError(f"no function @{parts[0]} (the module has: {known})")
    block = parts[1] if len(parts) > 1 and parts[1] else func.blocks[0].label
    if len(parts) > 2 and not parts[2].isdigit():
        raise ReplError(f"the instruction index in {arg!r} must be a number")
    return func.name, block, int(parts[2]) if len(parts) > 2 else 0


def cmd_break(s: ReplSession, arg: str) -> str:
    if not arg:
        if not s.breakpoints:
            return "no breakpoints (:break @f:block:index or :break LINE sets one)"
        return "breakpoints:\n" + "\n".join(f"  @{f}:{b}:{i}  {_text(s, f, b, i)}"
                                            for f, b, i in sorted(s.breakpoints))
    func, block, index = parse_location(s, arg)
    key = Debugger(s.get_vm()).add_break(func, block, index)   # checks that the spot exists
    s.breakpoints.add(key)
    return f"breakpoint at @{func}:{key[1]}:{index}  {_text(s, *key)}"


def _text(s: ReplSession, func: str, block: str, index: int) -> str:
    from dlvmrt.debugger import instr_text
    ins = s.module.functions[func].block(block).instrs[index]
    where = f" ({ins.loc})" if ins.loc else ""
    return instr_text(s.module, ins) + where


def cmd_clear(s: ReplSession, arg: str) -> str:
    if not arg:
        n = len(s.breakpoints)
        s.breakpoints.clear()
        return f"removed {n} breakpoint{'s' if n != 1 else ''}"
    key = parse_location(s, arg)
    if key not in s.breakpoints:
        raise ReplError(f"no breakpoint at @{key[0]}:{key[1]}:{key[2]} (:break lists them)")
    s.breakpoints.discard(key)
    return f"removed the breakpoint at @{key[0]}:{key[1]}:{key[2]}"
