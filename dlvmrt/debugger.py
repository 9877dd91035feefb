"""A stepping interpreter for the REPL's debugger: the same per-instruction steps the VM runs,
driven one instruction at a time over an explicit stack of frames.

    dbg = Debugger(vm)
    dbg.start("main", [x])
    dbg.add_break("main", "body", 2)
    dbg.step()       # one instruction, into calls
    dbg.next()       # one instruction, over calls (breakpoints inside the callee still stop)
    dbg.cont()       # until a breakpoint, a trap or the end
    dbg.where(), dbg.registers(), dbg.results

There is no second semantics here: every non-terminator instruction runs through the closures in
`BlockCode.interp_steps` that `FunctionCode` built (the interpreter's steps, before any JIT
tier-up replaced them), terminators through `BlockCode.term`. Only calls are taken apart, so that
a callee gets a frame of its own; the frame is built exactly as `FunctionCode.call` builds one.
Traps are located with `FunctionCode.locate`, frame by frame, so they read as the VM's do.
"""
from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from isa.errors import DlvmError, InvalidError, ResourceExhausted, SourceLoc, Trap
from isa.module import Instr

from .binding import bind_arguments, check_results
from .frame_layout import BINDINGS_SLOT
from .function_code import FunctionCode
from .vm import VM, _as_input


class State(enum.Enum):
    IDLE = "not started"
    PAUSED = "paused"
    DONE = "finished"
    TRAPPED = "trapped"


class Stop(enum.Enum):
    """Why a step/next/cont returned."""
    STEP = "step"
    BREAKPOINT = "breakpoint"
    DONE = "done"


@dataclass(frozen=True)
class Position:
    """Where one frame stands: the instruction it will run next."""
    function: str
    block: str
    index: int              # instruction index in the block
    loc: SourceLoc | None
    text: str               # the instruction as canonical text

    def __str__(self) -> str:
        where = f" ({self.loc})" if self.loc else ""
        return f"@{self.function}:{self.block}:{self.index}{where}  {self.text}"


class Frame:
    """One activation: a register file plus a position (block index, step index)."""

    def __init__(self, code: FunctionCode, regs: list, bindings: dict[str, int]):
        self.code = code
        self.regs = regs
        self.bindings = bindings
        self.block = 0
        self.pc = 0            # index into the block's interp_steps; == len: at the terminator

    @property
    def steps(self) -> list[Callable]:
        return self.code.blocks[self.block].interp_steps

    def instr_index(self) -> int:
        steps = self.steps
        if self.pc < len(steps):
            return steps[self.pc].where[1]
        return len(self.code.func.blocks[self.block].instrs) - 1   # the terminator

    def instr(self) -> Instr:
        return self.code.func.blocks[self.block].instrs[self.instr_index()]


def instr_text(module, ins: Instr) -> str:
    try:
        from assembler.printer import Printer
        return Printer(module, debug=False).instruction(ins)
    except ImportError:     # the assembler is optional for a VM run from bytecode
        return ins.op


class Debugger:
    def __init__(self, vm: VM):
        self.vm = vm
        self.frames: list[Frame] = []
        self.state = State.IDLE
        self.results: tuple[np.ndarray, ...] | None = None
        self.error: DlvmError | None = None
        self.breakpoints: set[tuple[str, str, int]] = set()
        self.entry: str | None = None
        self.blocks_run = 0

    # -- breakpoints ------------------------------------------------------------------------

    def add_break(self, func: str, block: str | None = None, index: int = 0) -> tuple[str, str, int]:
        """A breakpoint before instruction `index` of `block` (default: the entry block) of
        `func`; raises InvalidError naming what does not exist."""
        f = self.vm.module.functions.get(func)
        if f is None:
            raise InvalidError(f"no function @{func} (the module has: "
                               f"{', '.join('@' + n for n in self.vm.module.functions)})")
        b = f.block(block) if block is not None else f.blocks[0]
        if b is None:
            raise InvalidError(f"@{func} has no block '{block}' (it has: "
                               f"{', '.join(x.label for x in f.blocks)})")
        if not 0 <= index < len(b.instrs):
            raise InvalidError(f"block '{b.label}' of @{func} has instructions 0 to "
                               f"{len(b.instrs) - 1}, not {index}")
        key = (func, b.label, index)
        self.breakpoints.add(key)
        return key

    def remove_break(self, func: str, block: str, index: int = 0) -> bool:
        try:
            self.breakpoints.remove((func, block, index))
            return True
        except KeyError:
            return False

    # -- starting ---------------------------------------------------------------------------

    def start(self, fname: str, args: list[Any]) -> Position:
        """Stop before the first instruction of `fname` called on `args` (arrays or Python
        values, converted to the parameters' dtypes as `VM.run` does). Raises Trap for bad
        arguments, as `VM.run` would."""
        func = self.vm.module.functions.get(fname)
        if func is None:
            raise Trap(f"no function @{fname} in module {self.vm.module.name}")
        if len(args) != len(func.params):
            raise Trap(f"@{fname} takes {len(func.params)} argument"
                       f"{'s' if len(func.params) != 1 else ''}, got {len(args)}")
        values = [_as_input(v, p.type) for v, p in zip(args, func.params)]
        self.frames = []
        self.results = None
        self.error = None
        self.entry = fname
        self.blocks_run = 0
        self._push(self.vm.code(fname), values, check_dtype=True)
        self.state = State.PAUSED
        return self.position()

    def _push(self, code: FunctionCode, args: list, check_dtype: bool = False) -> None:
        # as FunctionCode.call: named dims bound, then the parameters in their slots
        if len(self.frames) >= self.vm.max_call_depth:
            raise ResourceExhausted(f"call depth exceeds {self.vm.max_call_depth} "
                                    f"(in @{code.func.name})")
        bindings = bind_arguments(code.func, args, check_dtype)
        r = code.layout.new_frame()
        r[BINDINGS_SLOT] = bindings
        for slot, a in zip(code.layout.param_slots, args):
            r[slot] = a
        self.frames.append(Frame(code, r, bindings))
        self._enter_block()

    def _enter_block(self) -> None:
        self.blocks_run += 1
        if self.blocks_run > self.vm.max_steps:
            raise ResourceExhausted(f"the program ran more than {self.vm.max_steps} blocks")

    # -- inspecting -------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.state is State.PAUSED

    def position(self, frame: Frame | None = None) -> Position:
        f = frame or self.frames[-1]
        ins = f.instr()
        return Position(f.code.func.name, f.code.blocks[f.block].label, f.instr_index(), ins.loc,
                        instr_text(self.vm.module, ins))

    def current(self) -> Position | None:
        """The instruction that runs next, or None when no program is paused."""
        return self.position() if self.frames and self.state is not State.DONE else None

    def where(self) -> list[Position]:
        """The call stack, outermost first (after a trap: where it happened)."""
        return [self.position(f) for f in self.frames]

    def registers(self, depth: int = -1) -> dict[str, Any]:
        """Registers of a frame (default: the innermost) that hold a value, by name."""
        if not self.frames:
            return {}
        f = self.frames[depth]
        return {key[1]: f.regs[slot] for key, slot in f.code.layout.slots.items()
                if key[0] == "reg" and f.regs[slot] is not None}

    # -- running ----------------------------------------------------------------------------

    def step(self) -> Stop:
        """Run one instruction; a call enters the callee and stops at its first instruction."""
        self._check_running()
        return self._guarded(self._one)

    def next(self) -> Stop:
        """Run one instruction; a call runs to its return unless a breakpoint stops it first."""
        self._check_running()
        depth = len(self.frames)

        def over() -> Stop:
            stop = self._one()
            while stop is Stop.STEP and len(self.frames) > depth:
                if self.at_breakpoint():
                    return Stop.BREAKPOINT
                stop = self._one()
            return stop
        return self._guarded(over)

    def cont(self) -> Stop:
        """Run until a breakpoint (not the one we stand on), a trap or the end."""
        self._check_running()

        def run() -> Stop:
            stop = self._one()
            while stop is Stop.STEP:
                if self.at_breakpoint():
                    return Stop.BREAKPOINT
                stop = self._one()
            return stop
        return self._guarded(run)

    def _check_running(self) -> None:
        if self.state is State.IDLE:
            raise Trap("no program is running: start one first")
        if self.state is State.DONE:
            raise Trap(f"@{self.entry} has finished: start it again")
        if self.state is State.TRAPPED:
            raise Trap(f"@{self.entry} trapped: start it again")

    def at_breakpoint(self) -> bool:
        """Whether the next instruction of the innermost frame has a breakpoint."""
        f = self.frames[-1]
        return (f.code.func.name, f.code.blocks[f.block].label, f.instr_index()) in self.breakpoints

    def _guarded(self, action: Callable[[], Stop]) -> Stop:
        # the VM ignores floating-point warnings (NaN and inf are values, not errors); so do we
        try:
            with np.errstate(all="ignore"):
                return action()
        except KeyboardInterrupt:
            raise           # the frames stay consistent: the run can be continued
        except BaseException as e:
            self.state = State.TRAPPED
            self.error = self._locate(e)
            raise self.error from (None if isinstance(e, DlvmError) else e)

    def _locate(self, e: BaseException) -> DlvmError:
        """Context as the VM gives it: the innermost frame, then each caller's call site."""
        for k in range(len(self.frames) - 1, -1, -1):
            f = self.frames[k]
            steps = f.steps
            step = steps[f.pc] if f.pc < len(steps) else None
            e = f.code.locate(e, f.code.blocks[f.block], step)
        if not isinstance(e, DlvmError):     # locate keeps KeyboardInterrupt; nothing else here
            e = Trap(str(e))
        return e

    def _one(self) -> Stop:
        """Run the instruction at the top frame's position (with its `: TYPE` check)."""
        f = self.frames[-1]
        steps = f.steps
        if f.pc >= len(steps):
            return self._terminator(f)
        where = steps[f.pc].where
        ins = f.code.func.blocks[where[0]].instrs[where[1]]
        if ins.op == "call":
            self._call(f, ins, where)
            return Stop.STEP
        while f.pc < len(steps) and steps[f.pc].where == where:
            steps[f.pc](f.regs)
            f.pc += 1
        return Stop.STEP

    def _call(self, f: Frame, ins: Instr, where: tuple[int, int]) -> None:
        args = [f.regs[i] for i in f.code.layout.operand_slots[where]]
        self._push(self.vm.code(ins.attrs["callee"]), args)

    def _terminator(self, f: Frame) -> Stop:
        blk = f.code.blocks[f.block]
        nxt = blk.term(f.regs)
        if nxt >= 0:
            f.block, f.pc = nxt, 0
            self._enter_block()
            return Stop.STEP
        outs = [f.regs[i] for i in blk.ret_slots]
        check_results(f.code.func, outs, f.bindings)
        self.frames.pop()
        if not self.frames:
            self.results = tuple(o if isinstance(o, np.ndarray) else np.asarray(o) for o in outs)
            self.state = State.DONE
            return Stop.DONE
        self._return_into(self.frames[-1], outs)
        return Stop.STEP

    def _return_into(self, caller: Frame, outs: list) -> None:
        """Write a callee's results into the caller and move past the call and its check."""
        steps = caller.steps
        where = steps[caller.pc].where
        ins = caller.code.func.blocks[where[0]].instrs[where[1]]
        for name, v in zip(ins.results, outs):
            caller.regs[caller.code.layout.reg(name)] = v
        caller.pc += 1
        while caller.pc < len(steps) and steps[caller.pc].where == where:
            steps[caller.pc](caller.regs)       # the call's `: TYPE` check, if it has one
            caller.pc += 1
