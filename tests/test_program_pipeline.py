"""The whole-program pipeline before a run: a VM with tier-up runs `Program.optimized()` (kept
with the Program), gives the interpreter's results on the program as written, keeps source
locations for traps, and the reference interpreter, the REPL and the debugger run the user's
own instructions."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from test_passes_support import count_instrs, random_program, same_outcome

import dlvmrt
from isa.errors import InternalError, Trap
from jit.testing import assert_matches

REDUNDANT = """
module redundant

func @main(%x: f32[N, 4]) -> f32[N, 4] {
entry:
  %one = const 1.0 : f32[]
  %k = const 3.0 : f32[]
  %k = mul %k, 2.0
  %a = mul %x, %one
  %b = tanh %a
  %c = tanh %x
  %d = add %b, %c
  %t = transpose %d {perm = [1, 0]}
  %t = transpose %t {perm = [1, 0]}
  %y = mul %t, %k
  ret %y
}
"""

TRAPS = """
module traps

func @main(%x: f32[N, 4], %i: i64[K]) -> f32[K, 4] {
entry:
  %one = const 1.0 : f32[]
  %a = mul %x, %one
  %r = gather %a, %i {axis = 0}
  ret %r
}
"""


def _run(vm: dlvmrt.VM, *args):
    try:
        return vm.run("main", *args)
    except Trap as e:
        return ("trap", str(e))


@pytest.fixture
def redundant():
    assembler = pytest.importorskip("assembler")
    return dlvmrt.load(assembler.assemble(REDUNDANT, "redundant.dlasm"))


def test_tier_up_runs_the_optimized_program_kept_with_the_program(redundant, monkeypatch):
    monkeypatch.delenv("DLVM_OPTIMIZE", raising=False)
    vm = dlvmrt.VM(redundant, jit="always")
    assert vm.optimized and vm.source_program is redundant
    assert vm.program is redundant.optimized() is redundant.optimized()      # computed once
    assert vm.program.optimized() is vm.program
    assert count_instrs(vm.program.module) < count_instrs(redundant.module)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    (want,) = dlvmrt.VM(redundant, jit="off").run("main", x)
    for _ in range(2):
        (got,) = vm.run("main", x)
        assert_matches(got, want, "programs")


def test_the_reference_interpreter_runs_the_program_as_written(redundant, monkeypatch):
    monkeypatch.delenv("DLVM_OPTIMIZE", raising=False)
    vm = dlvmrt.VM(redundant, jit="off")
    assert not vm.optimized and vm.program is redundant
    assert dlvmrt.VM(redundant, jit="off", optimize=True).program is redundant.optimized()
    assert dlvmrt.VM(redundant, jit="always", optimize=False).program is redundant
    monkeypatch.setenv("DLVM_OPTIMIZE", "0")
    assert dlvmrt.VM(redundant, jit="auto").program is redundant
    monkeypatch.setenv("DLVM_OPTIMIZE", "1")
    assert dlvmrt.VM(redundant, jit="off").program is redundant.optimized()


def test_a_trap_in_the_optimized_program_names_the_users_line():
    assembler = pytest.importorskip("assembler")
    program = dlvmrt.load(assembler.assemble(TRAPS, "traps.dlasm"))
    x = np.ones((2, 4), np.float32)
    i = np.array([0, 7], np.int64)
    vm = dlvmrt.VM(program, jit="always")
    assert count_instrs(vm.program.module) < count_instrs(program.module)     # %a = %x now
    plain, opt = _run(dlvmrt.VM(program, jit="off"), x, i), _run(vm, x, i)
    assert plain[0] == opt[0] == "trap"
    assert "traps.dlasm:8" in opt[1] and "gather" in opt[1], opt[1]


def test_a_failing_optimizer_costs_only_the_optimization(redundant, monkeypatch):
    import jit.passes

    def broken(module, passes=None):
        raise InternalError("optimizer pass 'fold' produced an invalid module: boom")

    monkeypatch.setattr(jit.passes, "optimize_verified", broken)
    program = dlvmrt.load(redundant.module)          # a fresh Program: nothing cached yet
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        vm = dlvmrt.VM(program, jit="always")
    assert vm.program is program
    assert any("runs as written" in str(w.message) for w in caught)
    x = np.ones((2, 4), np.float32)
    assert_matches(vm.run("main", x)[0], dlvmrt.VM(program, jit="off").run("main", x)[0], "programs")


@pytest.mark.parametrize("seed", range(12))
def test_random_programs_tiered_and_optimized_match_the_interpreter(seed, monkeypatch):
    monkeypatch.delenv("DLVM_OPTIMIZE", raising=False)
    m, args = random_program(seed)
    program = dlvmrt.load(m)
    want = _run(dlvmrt.VM(program, jit="off"), *args)
    got = _run(dlvmrt.VM(program, jit="always"), *args)
    if not same_outcome(got, want):       # compiled kernels may differ within the tolerances
        assert got[0] != "trap" and want[0] != "trap"
        for g, w in zip(got, want):
            assert_matches(g, w, "programs")


def test_the_repl_debugger_steps_the_users_instructions(redundant):
    from repl.session import ReplSession
    s = ReplSession()
    s.jit_mode = "always"
    s.module, s.types = redundant.module, redundant.types
    vm = s.get_vm()
    assert not vm.optimized and vm.module is redundant.module


PING_PONG = """
module pingpong

func @main(%x: f32[4]) -> f32[4] {
entry:
  %s = const 0.0 : f32[4]
  %t = mov %s
  %s = add %x, 1.0
  %y = add %s, %t
  ret %y
}
"""


def test_the_pipeline_settles_instead_of_running_every_round(monkeypatch):
    # fold used to turn `mov %s` (known zeros) into a literal and CSE the literal back into
    # `mov %s`: every round changed something, and a VM paid MAX_ROUNDS rounds (LSTM: 0.7 s)
    assembler = pytest.importorskip("assembler")
    import jit.passes as passes
    calls = []
    fold = passes.PASSES["fold"]
    monkeypatch.setitem(passes.PASSES, "fold", (lambda m, table=None: calls.append(1) or fold[0](m, table),
                                                fold[1]))
    m = assembler.assemble(PING_PONG, "pingpong.dlasm")
    out = passes.optimize(m)
    assert len(calls) <= 3, f"{len(calls)} rounds"
    x = np.arange(4, dtype=np.float32)
    assert same_outcome(_run(dlvmrt.VM(out, jit="off"), x), _run(dlvmrt.VM(m, jit="off"), x))
