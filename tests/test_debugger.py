"""The stepping debugger: same results as VM.run, explicit call frames, step/next/cont,
breakpoints, registers, and traps that read as the VM's."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import assembler
import dlvmrt
from dlvmrt.debugger import Debugger, State, Stop
from isa.errors import InvalidError, Trap

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

CHAIN = """
module chain
func @inner(%x: f32[N]) -> f32[N] {
  %c = gt %x, 0.0
  assert %c, "all positive"
  %y = mul %x, 2.0
  ret %y
}
func @middle(%x: f32[N]) -> f32[N] {
  %y = call @inner(%x) : f32[N]
  %z = add %y, 1.0
  ret %z
}
func @main(%x: f32[N]) -> f32[N] {
  %a = neg %x
  %b = call @middle(%x)
  %c = add %a, %b
  ret %c
}
"""


def vm_of(source: str | Path) -> dlvmrt.VM:
    if isinstance(source, Path):
        return dlvmrt.VM(dlvmrt.load(source))
    return dlvmrt.VM(dlvmrt.load(assembler.assemble(source, "<test>")))


def run_to_end(d: Debugger, action) -> int:
    n = 0
    while d.running:
        action()
        n += 1
    return n


@pytest.mark.parametrize("name", ["mlp", "calls", "loop", "gelu", "layernorm"])
def test_stepping_gives_the_vm_results(name):
    vm = vm_of(EXAMPLES / f"{name}.dlasm")
    inputs = np.load(EXAMPLES / f"{name}.inputs.npz")
    func = vm.module.functions["main"]
    args = [inputs[p.name] for p in func.params]
    want = vm.run("main", *args)
    d = Debugger(vm)
    d.start("main", args)
    run_to_end(d, d.step)
    assert d.state is State.DONE
    assert len(d.results) == len(want)
    for got, exp in zip(d.results, want):
        np.testing.assert_array_equal(got, exp)


def test_step_enters_calls_and_next_steps_over_them():
    x = np.array([1.0, 2.0], np.float32)
    d = Debugger(vm_of(CHAIN))
    d.start("main", [x])
    d.step()                                       # %a = neg %x
    assert d.current().text == "%b = call @middle(%x)"
    d.step()
    assert [p.function for p in d.where()] == ["main", "middle"]
    d.step()
    assert [p.function for p in d.where()] == ["main", "middle", "inner"]
    assert d.current().index == 0 and d.current().text == "%c = gt %x, 0.0"
    assert d.registers().keys() == {"x"}
    d.next()
    d.next()
    d.next()
    d.next()                                       # ret of @inner
    assert [p.function for p in d.where()] == ["main", "middle"]
    assert d.current().text == "%z = add %y, 1.0"
    np.testing.assert_array_equal(d.registers()["y"], 2 * x)
    # restart and step over the whole call
    d.start("main", [x])
    d.next()
    d.next()
    assert len(d.where()) == 1 and d.current().text == "%c = add %a, %b"
    assert d.next() is Stop.STEP and d.next() is Stop.DONE
    np.testing.assert_array_equal(d.results[0], -x + 2 * x + 1)


def test_breakpoints_stop_in_loops_and_inside_stepped_over_calls():
    vm = vm_of(EXAMPLES / "loop.dlasm")
    d = Debugger(vm)
    d.start("main", [np.int64(4)])
    d.add_break("main", "body", 1)
    hits = []
    while d.cont() is Stop.BREAKPOINT:
        hits.append(int(d.registers()["i"]))
        assert d.current().text == "%acc = add %acc, %sq"
    assert hits == [0, 1, 2, 3]
    assert [int(v) for v in d.results] == [0 + 1 + 4 + 9, 3]

    d = Debugger(vm_of(CHAIN))
    d.start("main", [np.ones(3, np.float32)])
    d.add_break("inner", "entry", 2)
    d.step()
    assert d.next() is Stop.BREAKPOINT              # next over @middle stops inside @inner
    assert d.current().function == "inner" and d.current().index == 2
    assert d.cont() is Stop.DONE


def test_traps_name_every_frame_like_the_vm():
    vm = vm_of(CHAIN)
    x = np.array([1.0, -1.0], np.float32)
    with pytest.raises(Trap) as from_vm:
        vm.run("main", x)
    d = Debugger(vm)
    d.start("main", [x])
    with pytest.raises(Trap) as from_debugger:
        d.cont()
    assert from_debugger.value.format() == from_vm.value.format()
    assert "assertion failed: all positive" in from_debugger.value.message
    assert d.state is State.TRAPPED
    assert [p.function for p in d.where()] == ["main", "middle", "inner"]  # the stack at the trap
    with pytest.raises(Trap, match="trapped"):
        d.step()


def test_bad_arguments_and_bad_breakpoints_are_errors():
    d = Debugger(vm_of(CHAIN))
    with pytest.raises(Trap, match="takes 1 argument"):
        d.start("main", [])
    with pytest.raises(Trap, match="must be f32"):
        d.start("main", [np.ones((2, 2), np.float32)])
    with pytest.raises(Trap, match="no program"):
        d.step()
    with pytest.raises(InvalidError, match="no function @nope"):
        d.add_break("nope")
    with pytest.raises(InvalidError, match="no block 'loop'"):
        d.add_break("main", "loop")
    with pytest.raises(InvalidError, match="instructions 0 to 3"):
        d.add_break("main", "entry", 9)
    assert d.add_break("main") == ("main", "entry", 0)


def test_keyboard_interrupt_leaves_a_resumable_run():
    vm = vm_of(EXAMPLES / "loop.dlasm")
    d = Debugger(vm)
    d.start("main", [np.int64(3)])
    original = vm.code("main").blocks[2].interp_steps[0]
    calls = {"n": 0}

    def interrupting(r):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        original(r)
    interrupting.where = original.where
    vm.code("main").blocks[2].interp_steps[0] = interrupting
    with pytest.raises(KeyboardInterrupt):
        d.cont()
    assert d.state is State.PAUSED and d.current().block == "body"
    assert d.cont() is Stop.DONE
    assert [int(v) for v in d.results] == [0 + 1 + 4, 2]
