"""A large program's whole-program pipeline runs on the background compiler (VM._defer): calls
meanwhile are interpreted as written and give the same results; the optimized program takes over
once it is ready; asking for vm.program waits for it."""
from __future__ import annotations

import numpy as np
from concurrency import on_threads

import dlvmrt
from dlvmrt import vm as vm_module
from isa.builder import ModuleBuilder


def chain(n: int):
    """n elementwise steps, with `mul by 1` and `add 0` the pipeline removes"""
    mb = ModuleBuilder(f"chain{n}")
    f = mb.function("main", [("x", "f32[N, 8]")], ["f32[N, 8]"])
    v = f.arg("x")
    one, zero = f.const(1.0, "f32[]"), f.const(0.0, "f32[]")
    for i in range(n):
        v = f.tanh(f.add(f.mul(v, one), zero)) if i % 2 else f.mul(v, f.const(0.9, "f32[]"))
    f.ret(v)
    return mb.finish()


def reference(module, x):
    return dlvmrt.VM(module, jit="off").run("main", x)[0]


class HeldCompiler:
    """A background compiler that runs its tasks only when told (the test decides when the
    pipeline finishes)."""

    closed = False

    def __init__(self):
        self.tasks = []

    def submit(self, key, task) -> bool:
        self.tasks.append(task)
        return True

    def pending(self, key) -> bool:
        return False

    def run_all(self) -> None:
        while self.tasks:
            self.tasks.pop(0)()


def test_a_large_program_starts_interpreted_and_takes_the_pipeline_over(monkeypatch):
    import jit.background
    held = HeldCompiler()
    monkeypatch.setattr(jit.background, "compiler", lambda: held)
    module = chain(120)
    assert sum(len(b.instrs) for b in module.functions["main"].blocks) >= \
        vm_module.DEFER_PIPELINE_FROM
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    want = reference(module, x)
    vm = dlvmrt.VM(module, jit="auto", native="off")
    assert vm._program is None and vm._warm is not None      # deferred
    assert held.tasks == []       # queued once the first call returns: that call is the
    for _ in range(3):            # interpreter's alone; served as written meanwhile
        np.testing.assert_array_equal(vm.run("main", x)[0], want)
        assert len(held.tasks) == 1
    assert vm._program is None
    held.run_all()                                             # the pipeline finishes
    np.testing.assert_allclose(vm.run("main", x)[0], want, rtol=1e-5, atol=1e-6)
    assert vm._program is vm.source_program.optimized() and vm._warm is None
    # the pipeline removed the identities
    n_opt = sum(len(b.instrs) for b in vm.program.module.functions["main"].blocks)
    assert n_opt < sum(len(b.instrs) for b in module.functions["main"].blocks)


def test_asking_for_the_program_waits_for_the_pipeline():
    module = chain(120)
    vm = dlvmrt.VM(module, jit="auto")
    assert vm.program is vm.source_program.optimized()


def test_threads_during_the_pipeline_get_the_interpreters_results():
    module = chain(160)
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((n, 8)).astype(np.float32) for n in (1, 2, 5)]
    wants = [reference(module, x) for x in xs]
    vm = dlvmrt.VM(module, jit="auto")

    def calls(k: int) -> None:
        for _ in range(20):
            np.testing.assert_allclose(vm.run("main", xs[k % 3])[0], wants[k % 3],
                                       rtol=1e-5, atol=1e-6)
    on_threads(calls, 4)


def test_other_modes_optimize_at_once():
    # (a small program defers too: its pipeline, a few ms, made the first result 1.4-1.95x the
    # interpreter's)
    small = chain(10)
    assert dlvmrt.VM(small, jit="auto")._warm is not None
    large = chain(120)
    for kw in ({"jit": "always"}, {"jit": "auto", "profile": True}, {"jit": "auto", "background": False}):
        vm = dlvmrt.VM(large, **kw)
        assert vm._program is not None and vm._warm is None, kw
    off = dlvmrt.VM(large, jit="off")
    assert off._program is off.source_program          # the reference runs it as written
