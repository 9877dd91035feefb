"""Static memory planning: which instruction results can share one buffer.

A *value* is one result of one instruction (a register reassigned three times has three values).
Two values interfere when both may be live at once: at every instruction, the values live into
it (its operands and everything live across it) and its own results all interfere pairwise. A
result never takes the buffer of one of its own instruction's operands, so any op may write its
output while still reading its inputs.

Greedy assignment in program order: a value takes the buffer of an earlier value when the
types match (dtype and shape; named dims count as equal to themselves, since they are bound
once per call) and none of the values already in that buffer interferes with it; otherwise it
gets a new buffer. Never shared:
- parameters (the caller owns them) and values that may be returned (they leave the call);
- values with an unknown ('?') dim (their size is known only when computed);
- a value whose previous instance may still be live where it is recomputed (`%i = add %i, 1`
  in a loop: one buffer cannot hold both iterations); such values are left unplanned.

A consumer writes each planned result into its buffer (a `mov` is a copy there).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from isa.module import Function, Module
from isa.types import TensorType
from isa.verify import verify_module

from .cfg import cfg_edges, live_after_each, liveness, reachable, uses

ValueId = tuple[int, int, int]         # (block index, instruction index, result index)
ParamId = tuple[str, str]              # ("param", name)


@dataclass
class PlannedValue:
    block: str
    index: int                         # instruction index in its block
    register: str
    type: TensorType
    buffer: int | None                 # None: not planned (allocated when computed)
    reuses: str | None = None          # register of the value whose buffer this one takes
    note: str = ""                     # why it got no shared buffer


@dataclass
class MemoryPlan:
    function: str
    values: list[PlannedValue] = field(default_factory=list)
    buffers: list[TensorType] = field(default_factory=list)

    @property
    def n_values(self) -> int:
        return len(self.values)

    @property
    def n_buffers(self) -> int:
        return len(self.buffers)

    def buffer_of(self, block: str, index: int, register: str) -> int | None:
        for v in self.values:
            if (v.block, v.index, v.register) == (block, index, register):
                return v.buffer
        raise KeyError(f"no value %{register} at {block}.{index}")

    def format(self) -> str:
        lines = [f"memory plan of @{self.function}: {self.n_values} values in "
                 f"{self.n_buffers} buffers"]
        for v in self.values:
            where = f"{v.block}.{v.index}"
            buf = f"buf{v.buffer}" if v.buffer is not None else "unplanned"
            extra = f"reuses %{v.reuses}" if v.reuses else v.note
            lines.append(f"  {where:<14} %{v.register:<10} {str(v.type):<16} {buf:<10} {extra}".rstrip())
        return "\n".join(lines)


def _reaching(func: Function, blocks: set[int]) -> list[dict[str, set]]:
    """Definitions of each register that may reach the entry of each block."""
    _, preds = cfg_edges(func)
    params: dict[str, set] = {p.name: {("param", p.name)} for p in func.params}
    outs: list[dict[str, set] | None] = [None] * len(func.blocks)
    ins: list[dict[str, set]] = [{} for _ in func.blocks]
    changed = True
    while changed:
        changed = False
        for bi in sorted(blocks):
            state: dict[str, set] = {r: set(d) for r, d in params.items()} if bi == 0 else {}
            for p in preds[bi]:
                for r, ds in (outs[p] or {}).items():
                    state.setdefault(r, set()).update(ds)
            ins[bi] = {r: set(d) for r, d in state.items()}
            for ii, instr in enumerate(func.blocks[bi].instrs):
                for k, r in enumerate(instr.results):
                    state[r] = {(bi, ii, k)}
            if state != outs[bi]:
                outs[bi], changed = state, True
    return ins


def plan_memory(module: Module, func_name: str) -> MemoryPlan:
    """Plan the buffers of `func_name`'s instruction results (module must be valid)."""
    func = module.functions[func_name]
    table = verify_module(module)[func_name]
    blocks = reachable(func)
    reach_in = _reaching(func, blocks)
    _, live_out = liveness(func)

    interferes: dict[ValueId | ParamId, set] = {}
    overlaps_itself: set[ValueId] = set()
    returned: set = set()
    order: list[ValueId] = []
    for bi in sorted(blocks):
        block = func.blocks[bi]
        after = live_after_each(block, live_out[bi])
        reach = {r: set(d) for r, d in reach_in[bi].items()}
        for ii, ins in enumerate(block.instrs):
            live_before = (after[ii] - set(ins.results)) | uses(ins)
            v_in = {d for r in live_before for d in reach.get(r, ())}
            results = {(bi, ii, k) for k in range(len(ins.results))}
            group = v_in | results
            for d in group:
                interferes.setdefault(d, set()).update(group - {d})
            overlaps_itself |= results & v_in
            if ins.op == "ret":
                returned |= {d for r in uses(ins) for d in reach.get(r, ())}
            for k, r in enumerate(ins.results):
                reach[r] = {(bi, ii, k)}
                order.append((bi, ii, k))

    plan = MemoryPlan(func_name)
    holders: list[list[ValueId]] = []     # values assigned to each buffer
    shareable: list[bool] = []
    for vid in order:
        bi, ii, k = vid
        ins = func.blocks[bi].instrs[ii]
        t = table[bi][ii].results[k]
        pv = PlannedValue(func.blocks[bi].label, ii, ins.results[k], t, None)
        plan.values.append(pv)
        if vid in overlaps_itself:
            pv.note = "unplanned: its previous value may still be live"
            continue
        if any(d is None for d in t.shape):
            pv.note = "own buffer: unknown dims"
        elif vid in returned:
            pv.note = "own buffer: returned"
        else:
            for b, held in enumerate(holders):
                if shareable[b] and plan.buffers[b] == t and \
                        not any(h in interferes.get(vid, ()) for h in held):
                    pv.buffer, pv.reuses = b, _register(func, held[-1])
                    held.append(vid)
                    break
        if pv.buffer is None:
            pv.buffer = len(plan.buffers)
            plan.buffers.append(t)
            holders.append([vid])
            shareable.append(not pv.note)
    return plan


def _register(func: Function, vid: ValueId) -> str:
    bi, ii, k = vid
    return func.blocks[bi].instrs[ii].results[k]

