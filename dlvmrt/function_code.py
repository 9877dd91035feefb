"""One function prepared for the interpreter: blocks of steps, a terminator per block, and the
loop that runs them.

Traps are located without cost on the fast path: when a step raises, the loop variable still
holds that step, and each step carries its (block, instruction) position.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from isa.errors import DlvmError, InternalError, ResourceExhausted, Trap
from isa.module import Function
from isa.narrow import touches_narrow
from isa.ops import OPS

from . import steps as S
from .binding import bind_arguments, check_results
from .frame_layout import BINDINGS_SLOT, FrameLayout
from .memory_ceiling import guard_for

if TYPE_CHECKING:
    from .vm import VM

_USER_ERRORS = (ValueError, IndexError, FloatingPointError, OverflowError, ZeroDivisionError)
# NumPy's ValueErrors for an allocation no machine could hold
_TOO_BIG = ("Maximum allowed size exceeded", "array is too big")


class _At:
    """A position (block, instruction) for errors raised outside a step, e.g. at `ret`."""
    __slots__ = ("where",)

    def __init__(self, bi: int, ii: int):
        self.where = (bi, ii)


def add_caller(e: DlvmError, frame: str) -> None:
    """Append a caller to a trap's context; a frame repeating (deep recursion) is counted, not
    repeated, so a trap at depth 200 stays one readable line."""
    callers = getattr(e, "dlvm_callers", None)
    if callers is None:
        callers = e.dlvm_callers = []
        e.dlvm_context = e.context
    if callers and callers[-1][0] == frame:
        callers[-1][1] += 1
    else:
        callers.append([frame, 1])
    e.context = e.dlvm_context + "".join(
        f"; called from {f}" + (f" ({n} times)" if n > 1 else "") for f, n in callers)


class BlockCode:
    __slots__ = ("label", "index", "steps", "interp_steps", "term", "ret_slots", "ret_at", "count",
                 "back_edges", "tiered")

    def __init__(self, label: str, index: int):
        self.label = label
        self.index = index
        self.steps: list[Callable] = []
        self.interp_steps: list[Callable] = []   # the steps before any tier-up replaced them
        self.term: Callable[[list], int] = lambda r: -1
        self.ret_slots: list[int] = []
        self.ret_at = None          # stands for the ret instruction when a result check traps
        self.count = 0
        self.back_edges = 0
        self.tiered = False


def _checked_first(check: Callable[[list], None], step: Callable[[list], None]):
    """`step` after `check` (memory_ceiling.guard_for: its result fits the machine)."""
    def checked(r):
        check(r)
        step(r)
    return checked


class FunctionCode:
    def __init__(self, vm: VM, func: Function):
        self.vm = vm
        self.func = func
        program = vm.program
        self.types = program.types[func.name]
        self.layout = FrameLayout(program.module, func, self.types, vm.constants)
        labels = {b.label: i for i, b in enumerate(func.blocks)}
        self.blocks = [self._block(bi, b, labels) for bi, b in enumerate(func.blocks)]

    # -- preparation ------------------------------------------------------------------------

    def _block(self, bi: int, block, labels: dict[str, int]) -> BlockCode:
        code = BlockCode(block.label, bi)
        for ii, ins in enumerate(block.instrs):
            ins_slots, out_slots = S.frame_slots(self.layout, bi, ii, ins)
            if ins.op == "jmp":
                target = labels[ins.attrs["target"]]
                code.term = lambda r, t=target: t
            elif ins.op == "br":
                t, f, c = labels[ins.attrs["if_true"]], labels[ins.attrs["if_false"]], ins_slots[0]
                code.term = lambda r, t=t, f=f, c=c: t if r[c] else f
            elif ins.op == "ret":
                code.ret_slots = ins_slots
                code.ret_at = _At(bi, ii)
            else:
                self._add_steps(code, bi, ii, ins, ins_slots, out_slots)
        code.interp_steps = list(code.steps)
        return code

    def _add_steps(self, code: BlockCode, bi: int, ii: int, ins, ins_slots, out_slots) -> None:
        check = None
        if ins.op == "assert":
            step = S.make_assert(ins, ins_slots[0])
        elif ins.op == "call":
            callee = ins.attrs["callee"]
            step = S.make_call(lambda: self.vm.code(callee), ins_slots, out_slots)
        else:
            row = self.types[bi][ii] if ii < len(self.types[bi]) else None
            narrow = row is not None and touches_narrow(row.operands + row.results, OPS[ins.op])
            step = S.make_step(ins, ins_slots, out_slots,
                               [t.dtype for t in row.results] if narrow else None,
                               self.vm.random, (self.func.name, bi, ii))
            check = row and guard_for(row.results, row.operands, (bi, ii))
            if check:
                step = _checked_first(check, step)
        step.where = (bi, ii)
        step = self.vm.profiler.wrap(self, bi, ii, step) if self.vm.profiler else step
        if check:
            step.memory_check = check       # a compiled region runs it before its kernels
        code.steps.append(step)
        if ins.result_type is not None and ins.op != "const":
            check = S.make_type_check(ins.result_type, out_slots[0])
            check.where = (bi, ii)
            code.steps.append(check)

    # -- running ----------------------------------------------------------------------------

    def call(self, args: list, check_dtype: bool = False) -> list:
        vm = self.vm
        bindings = bind_arguments(self.func, args, check_dtype)
        r = self.layout.new_frame()
        r[BINDINGS_SLOT] = bindings
        for slot, a in zip(self.layout.param_slots, args):
            r[slot] = a
        st = vm.run_state()     # this thread's: one VM may run on many threads at once
        st.depth += 1
        if st.depth > vm.max_call_depth:
            st.depth -= 1
            raise ResourceExhausted(f"call depth exceeds {vm.max_call_depth} (in @{self.func.name})")
        blocks = self.blocks
        blk = blocks[0]
        step = None
        try:
            while True:
                blk.count += 1
                if blk.count >= vm.hot_threshold > 0 and not blk.tiered:
                    vm.tier_up(self, blk)
                st.budget -= 1
                if st.budget < 0:
                    raise ResourceExhausted(f"the program ran more than {vm.max_steps} blocks "
                                            f"(raise max_steps / --max-steps if that is expected)")
                step = None
                for step in blk.steps:
                    step(r)
                nxt = blk.term(r)
                if nxt < 0:
                    step = blk.ret_at
                    outs = [r[i] for i in blk.ret_slots]
                    check_results(self.func, outs, bindings)
                    break
                back = nxt <= blk.index
                blk = blocks[nxt]
                if back:            # counted at the loop header the edge enters
                    blk.back_edges += 1
        except BaseException as e:
            raise self.locate(e, blk, step) from (None if isinstance(e, DlvmError) else e)
        finally:
            st.depth -= 1
        return outs

    def locate(self, e: BaseException, blk: BlockCode, step) -> BaseException:
        """Turn whatever a step raised into a dlvm error that names function, block, instruction
        and source line."""
        if isinstance(e, KeyboardInterrupt):
            # where the run was, innermost call first: the REPL shows it (:where) after Ctrl-C
            where = getattr(step, "where", None)
            ins = self.func.blocks[where[0]].instrs[where[1]] if where else None
            stack = getattr(e, "dlvm_stack", [])
            stack.append((self.func.name, blk.label, where[1] if where else None,
                          ins.loc.line if ins is not None and ins.loc else None))
            e.dlvm_stack = stack
            return e
        where = getattr(e, "dlvm_where", None) or getattr(step, "where", None)
        ins = self.func.blocks[where[0]].instrs[where[1]] if where else None
        ctx = f"in @{self.func.name}, block {blk.label}"
        if where:
            ctx += f", instruction {where[1]} ({ins.op})"
        if isinstance(e, DlvmError):
            if e.context:     # raised in a callee: add this frame as a caller
                add_caller(e, f"@{self.func.name}, block {blk.label}" + (
                    f", instruction {where[1]}" + (f" at line {ins.loc.line}" if ins.loc else "")
                    if where else ""))
                return e
            e.context = ctx
            e.loc = e.loc or (ins.loc if ins else None)
            return e
        loc = ins.loc if ins else None
        if isinstance(e, MemoryError) or (isinstance(e, ValueError) and str(e).startswith(_TOO_BIG)):
            return ResourceExhausted(f"out of memory in {ins.op if ins else 'the program'}", loc,
                                     context=ctx)
        if isinstance(e, RecursionError):
            return ResourceExhausted("call depth exceeds Python's recursion limit", loc, context=ctx)
        if isinstance(e, _USER_ERRORS):
            return Trap(f"{ins.op if ins else 'instruction'}: {e}", loc, context=ctx)
        return InternalError(f"{type(e).__name__}: {e}", loc, context=ctx)

