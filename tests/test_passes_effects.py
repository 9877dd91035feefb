"""What dead-code elimination may delete: the trap analysis against the op table, and every
shared example through the whole pipeline with unchanged results."""
from __future__ import annotations

import numpy as np
import pytest
from shared_paths import SHARED_EXAMPLES, example_programs
from test_passes_support import count_instrs, run_vm, same_outcome

from isa.dtypes import DType
from isa.module import Imm, Instr, Reg
from isa.ops import OPS, Family
from isa.types import TensorType
from isa.verify import InstrTypes
from jit.passes import optimize
from jit.passes.effects import broadcast_is_safe, may_trap

try:
    from assembler import assemble_file
except ImportError:          # pragma: no cover - the assembler lands separately
    assemble_file = None

ARITY = {Family.UNARY: 1, Family.CAST: 1, Family.BINARY: 2, Family.SELECT: 3}


def _types(op, dtype: DType) -> InstrTypes | None:
    n = ARITY[op.family]
    ts = [TensorType(dtype, (3,))] * n
    if op.family is Family.SELECT:
        ts = [TensorType(DType.BOOL, (3,))] + ts[1:]
    try:
        results = op.infer(ts, op.with_defaults({"to": dtype} if op.attr("to") else {}))
    except Exception:
        return None          # the op does not take this dtype
    return InstrTypes(ts, list(results))


@pytest.mark.parametrize("name", [n for n, op in OPS.items() if op.family in ARITY])
def test_ops_whose_doc_mentions_a_trap_are_caught_by_the_probe(name):
    op = OPS[name]
    attrs = {"to": DType.I32} if op.attr("to") else {}
    ins = Instr(name, ["r"], [Reg(f"a{k}") for k in range(ARITY[op.family])], attrs)
    flagged = [d for d in DType if (t := _types(op, d)) is not None and may_trap(ins, t)]
    if "trap" in op.doc:
        assert flagged, f"{name} says it traps, but no dtype is found to trap"
    else:
        assert not flagged, f"{name} never traps by its doc, yet {flagged} are flagged"


def test_integer_division_traps_but_float_division_does_not():
    ins = Instr("div", ["r"], [Reg("a"), Reg("b")])
    i32 = TensorType(DType.I32, (4,))
    f32 = TensorType(DType.F32, (4,))
    assert may_trap(ins, InstrTypes([i32, i32], [i32]))
    assert not may_trap(ins, InstrTypes([f32, f32], [f32]))
    assert not may_trap(Instr("add", ["r"], [Reg("a"), Imm(1)]),
                        InstrTypes([i32, TensorType(DType.I32, ())], [i32]))


def test_broadcast_safety():
    assert broadcast_is_safe([("N", 4), (4,), ()])
    assert broadcast_is_safe([("N", 4), (1, 4)])
    assert not broadcast_is_safe([("N",), ("M",)])
    assert not broadcast_is_safe([("N",), (3,)])
    assert not broadcast_is_safe([(None,), (None,)])


def test_movement_ops_with_static_shapes_may_go_but_gathers_stay():
    f32 = TensorType(DType.F32, (2, 3))
    t = Instr("transpose", ["r"], [Reg("a")])
    assert not may_trap(t, InstrTypes([f32], [TensorType(DType.F32, (3, 2))]))
    assert may_trap(t, InstrTypes([TensorType(DType.F32, ("N", 3))], [TensorType(DType.F32, (3, "N"))]))
    if "gather" in OPS:
        idx = TensorType(DType.I64, (2,))
        g = Instr("gather", ["r"], [Reg("a"), Reg("i")])
        assert may_trap(g, InstrTypes([f32, idx], [TensorType(DType.F32, (2, 3))]))


PROGRAMS = example_programs(SHARED_EXAMPLES)


@pytest.mark.skipif(assemble_file is None or not PROGRAMS, reason="needs the assembler and examples")
@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.stem)
def test_shared_examples_compute_the_same_after_the_pipeline(prog):
    m = assemble_file(prog)
    inputs = dict(np.load(prog.with_suffix(".inputs.npz")))
    out = optimize(m)
    assert count_instrs(out) <= count_instrs(m)
    before, after = run_vm(m, **inputs), run_vm(out, **inputs)
    assert same_outcome(before, after)
    expect = np.load(prog.with_suffix(".expect.npz"))
    for k, got in enumerate(after):
        np.testing.assert_allclose(got, expect[f"out{k}"], rtol=1e-4, atol=1e-5)
