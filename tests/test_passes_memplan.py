"""Static memory planning: values that are live at the same time never share a buffer (checked
on execution traces, independently of the planner's own liveness), parameters and returned
values are never shared, and the shared examples need fewer buffers than values."""
from __future__ import annotations

import numpy as np
import pytest
from shared_paths import SHARED_EXAMPLES, example_programs
from test_passes_support import Tracer, random_program

from isa.builder import ModuleBuilder
from isa.module import Module, Reg
from jit.passes import optimize, plan_memory

try:
    from assembler import assemble_file
except ImportError:          # pragma: no cover - the assembler lands separately
    assemble_file = None


def check_trace(module: Module, fname: str, args: list[np.ndarray]) -> int:
    """Run `fname` with a tracer; fail if two dynamic values that share a planned buffer are
    live at once (the later is written no later than the last read of the earlier).
    Returns how many planned buffers were reused in the run."""
    plan = plan_memory(module, fname)
    func = module.functions[fname]
    tracer = Tracer(module)
    tracer.run(fname, list(args))
    by_buffer: dict[int, list] = {}
    for inst in tracer.instances:
        bi, ii, k = inst.value
        buf = plan.buffer_of(func.blocks[bi].label, ii, func.blocks[bi].instrs[ii].results[k])
        if buf is not None:
            by_buffer.setdefault(buf, []).append(inst)
    reused = 0
    for buf, insts in by_buffer.items():
        insts.sort(key=lambda i: i.written)
        for before, after in zip(insts, insts[1:]):
            assert after.written > before.last_read, (
                f"buf{buf}: value written at step {after.written} while the one written at "
                f"{before.written} is read until step {before.last_read}\n{plan.format()}")
        reused += len({i.value for i in insts}) > 1
    return reused


def _chain() -> Module:
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", "f32[N]")], ["f32[N]"])
    a = f.exp(f.arg("x"))
    b = f.tanh(a)
    c = f.neg(b)
    d = f.add(c, f.arg("x"))
    f.ret(d)
    return mb.finish()


def test_a_chain_needs_two_buffers_and_never_touches_the_parameter():
    plan = plan_memory(_chain(), "main")
    assert plan.n_values == 4
    bufs = [v.buffer for v in plan.values]
    assert bufs[0] == bufs[2] and bufs[1] != bufs[0]       # exp's buffer is free again for neg
    assert plan.values[-1].note == "own buffer: returned" and bufs[3] not in bufs[:3]
    text = plan.format()
    assert "4 values in 3 buffers" in text and "reuses %t1" in text
    check_trace(_chain(), "main", [np.arange(5, dtype=np.float32)])


def test_results_never_take_their_own_operands_buffer():
    mb = ModuleBuilder("m")
    w = mb.constant("w", np.eye(3, dtype=np.float32))
    f = mb.function("main", [("x", "f32[3, 3]")], ["f32[3, 3]"])
    a = f.exp(f.arg("x"))
    b = f.matmul(a, w)         # a dies here, but matmul must not write into its own input
    c = f.matmul(b, w)
    f.ret(f.neg(c))
    m = mb.finish()
    plan = plan_memory(m, "main")
    bufs = [v.buffer for v in plan.values]
    assert bufs[0] != bufs[1] and bufs[1] != bufs[2] and bufs[2] == bufs[0]
    assert check_trace(m, "main", [np.ones((3, 3), np.float32)]) == 1


def test_types_must_match_and_unknown_dims_are_not_shared():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", "f32[4]")], ["f32[]"])
    a = f.exp(f.arg("x"))
    s = f.reduce_sum(a)                                  # a dies; s is f32[], not f32[4]
    f.ret(f.neg(s))
    plan = plan_memory(mb.finish(), "main")
    assert len({v.buffer for v in plan.values}) == 3


def test_a_value_recomputed_from_itself_in_a_loop_is_unplanned():
    mb = ModuleBuilder("m")
    w = mb.constant("w", np.eye(2, dtype=np.float32))
    f = mb.function("main", [("x", "f32[2, 2]"), ("n", "i64[]")], ["f32[2, 2]"])
    f.mov(f.arg("x"), into="h")
    f.const(0, "i64[]", into="i")
    f.jmp("head")
    f.label("head")
    f.br(f.lt(Reg("i"), f.arg("n")), "body", "done")
    f.label("body")
    f.matmul(Reg("h"), w, into="h")
    f.add(Reg("i"), 1, into="i")
    f.jmp("head")
    f.label("done")
    f.ret(Reg("h"))
    m = mb.finish()
    plan = plan_memory(m, "main")
    notes = {(v.block, v.register): v for v in plan.values}
    assert notes[("body", "h")].buffer is None and notes[("body", "i")].buffer is None
    check_trace(m, "main", [np.ones((2, 2), np.float32), np.int64(3)])


@pytest.mark.parametrize("seed", range(25))
def test_random_programs_traces_respect_the_plan(seed):
    m, args = random_program(seed)
    check_trace(m, "main", args)
    check_trace(optimize(m), "main", args)


PROGRAMS = example_programs(SHARED_EXAMPLES)


@pytest.mark.skipif(assemble_file is None or not PROGRAMS, reason="needs the assembler and examples")
@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.stem)
def test_shared_examples_plans_are_safe(prog):
    m = assemble_file(prog)
    inputs = dict(np.load(prog.with_suffix(".inputs.npz")))
    args = [inputs[p.name] for p in m.functions["main"].params]
    check_trace(m, "main", args)
    for fname in m.functions:
        plan = plan_memory(m, fname)
        assert plan.n_buffers <= plan.n_values


@pytest.mark.skipif(assemble_file is None or not PROGRAMS, reason="needs the assembler and examples")
def test_shared_examples_need_fewer_buffers():
    counts = {}
    for prog in PROGRAMS:
        m = assemble_file(prog)
        plans = [plan_memory(m, f) for f in m.functions]
        counts[prog.stem] = (sum(p.n_values for p in plans), sum(p.n_buffers for p in plans))
    # the straight elementwise chains reuse the most
    if "gelu" in counts:
        assert counts["gelu"] == (9, 3)
    if "layernorm" in counts:
        assert counts["layernorm"][1] < counts["layernorm"][0]
    total_values = sum(v for v, _ in counts.values())
    total_buffers = sum(b for _, b in counts.values())
    assert total_buffers < total_values
