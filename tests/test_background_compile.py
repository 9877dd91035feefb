"""Tier-up by default, never waiting for LLVM: hot regions compile on the background compiler
while the interpreter keeps running them, and the compiled kernels are swapped in when ready
(issue 12 item 4)."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import dlvmrt
import jit.targets.cpu.runner
from isa.builder import ModuleBuilder
from jit import background

ROOT = Path(__file__).resolve().parents[1]


def dense(seed: int = 0):
    rng = np.random.default_rng(seed)
    mb = ModuleBuilder(f"dense{seed}")
    f = mb.function("main", [("x", "f32[N, 16]")], ["f32[N, 8]"])
    w = mb.constant("w", rng.standard_normal((16, 8)).astype(np.float32))
    h = f.matmul(f.tanh(f.exp(f.neg(f.arg("x")))), w)     # an elementwise region, a product
    f.ret(f.tanh(f.add(h, f.exp(f.neg(h)))))              # and its epilogue
    return mb.finish()


def x_of(n: int = 4) -> np.ndarray:
    return np.random.default_rng(n).standard_normal((n, 16)).astype(np.float32)


def compiled_calls(vm) -> int:
    return sum(r.compiled_calls for *_, r in vm.runners)


@pytest.fixture
def gated(monkeypatch):
    """compile_variant blocks until the test opens the gate: a compile that takes 'forever'."""
    gate = threading.Event()
    real = jit.targets.cpu.runner.compile_variant

    def slow(*a, **k):
        gate.wait(30)
        return real(*a, **k)
    monkeypatch.setattr(jit.targets.cpu.runner, "compile_variant", slow)
    yield gate
    gate.set()
    background.compiler().wait(30)


def test_the_default_mode_is_tiered_in_the_background(monkeypatch):
    monkeypatch.delenv("DLVM_JIT", raising=False)
    monkeypatch.delenv("DLVM_JIT_BACKGROUND", raising=False)
    vm = dlvmrt.VM(dense())
    assert vm.jit_mode == "auto" and vm.background
    monkeypatch.setenv("DLVM_JIT", "off")
    assert dlvmrt.VM(dense()).jit_mode == "off"
    assert not dlvmrt.VM(dense(), jit="always").background
    assert not dlvmrt.VM(dense(), jit="auto", background=False).background


def test_no_call_waits_for_a_compile(gated):
    vm = dlvmrt.VM(dense(), jit="auto")
    want = dlvmrt.VM(dense(), jit="off").run("main", x_of())[0]
    deadline = time.monotonic() + 60
    slowest = 0.0
    calls = 0
    # hot, its regions formed on the compiler thread and their kernels queued, and held there
    # (30 s): a call that waited for one would take that long
    while calls < 10 or not any(r.describe()["compiling"] for *_, r in vm.runners):
        assert time.monotonic() < deadline, "the tier-up never queued a compile"
        start = time.perf_counter()
        got = vm.run("main", x_of())[0]
        slowest = max(slowest, time.perf_counter() - start)
        np.testing.assert_array_equal(got, want)
        calls += 1
        time.sleep(0.005)    # the compiler thread gets its turns
    assert slowest < 5
    assert compiled_calls(vm) == 0
    gated.set()
    assert vm.wait_compiled(60)
    got = vm.run("main", x_of())[0]
    assert compiled_calls(vm) > 0
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def test_wait_compiled_then_every_call_is_compiled():
    vm = dlvmrt.VM(dense(1), jit="auto")
    x = x_of(8)
    want = dlvmrt.VM(dense(1), jit="off").run("main", x)[0]
    for _ in range(4):      # the pipeline (after the first call), hot, then the regions are
                            # formed and their shapes seen
        vm.run("main", x)
        assert vm.wait_compiled(60)
    before = [r.compiled_calls for *_, r in vm.runners]
    np.testing.assert_allclose(vm.run("main", x)[0], want, rtol=2e-5, atol=1e-6)
    after = [r.compiled_calls for *_, r in vm.runners]
    assert all(b < a for b, a in zip(before, after))


def test_a_failed_compile_stays_interpreted_quietly(monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("simulated LLVM failure")
    monkeypatch.setattr(jit.targets.cpu.runner, "compile_variant", broken)
    vm = dlvmrt.VM(dense(2), jit="auto", profile=True)
    x = x_of(3)
    want = dlvmrt.VM(dense(2), jit="off").run("main", x)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(4):
            np.testing.assert_array_equal(vm.run("main", x)[0], want)
            assert vm.wait_compiled(60)
    errors = [e for *_, r in vm.runners for e in r.describe()["compile_errors"]]
    assert errors and all("simulated LLVM failure" in e for e in errors)
    assert "simulated LLVM failure" in vm.profiler.table(vm)


def test_a_failed_tier_up_stays_interpreted_quietly():
    vm = dlvmrt.VM(dense(3), jit="auto")

    def broken(module, region, **kw):
        raise RuntimeError("simulated JIT bug")
    vm.jit.runner = broken
    x = x_of(2)
    want = dlvmrt.VM(dense(3), jit="off").run("main", x)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            np.testing.assert_array_equal(vm.run("main", x)[0], want)
            assert vm.wait_compiled(60)
    assert any("simulated JIT bug" in e for e in vm.jit_errors)


def test_many_threads_while_kernels_compile(gated):
    vm = dlvmrt.VM(dense(4), jit="auto")
    xs = [x_of(n) for n in (1, 4, 7)]
    ref = dlvmrt.VM(dense(4), jit="off")
    want = [ref.run("main", x)[0] for x in xs]
    problems: list[str] = []

    def work(t: int) -> None:
        for i in range(30):
            if t == 0 and i == 10:
                gated.set()       # kernels land while the other threads run
            j = (t + i) % len(xs)
            got = vm.run("main", xs[j])[0]
            if not np.allclose(got, want[j], rtol=2e-5, atol=1e-6):
                problems.append(f"thread {t} call {i}")
    ts = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert problems == []


def _script(body: str) -> str:
    return (f"import sys, os, time, threading\nsys.path.insert(0, {str(ROOT)!r})\n"
            + "import numpy as np, dlvmrt, jit.targets.cpu.runner\n"
            + f"sys.path.insert(0, {str(ROOT / 'tests')!r})\n"
            + "from test_background_compile import dense, x_of, compiled_calls\n" + body)


def _run(body: str, timeout: float = 60, env: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run([sys.executable, "-c", _script(body)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_a_process_exits_promptly_with_a_compile_in_flight():
    # every compile task hangs (whichever tier this machine's VM takes: the region's kernels or
    # the whole program's library); the program's result is printed and the process ends
    start = time.perf_counter()
    p = _run("""
from jit import background as bg
real = bg.BackgroundCompiler.submit
bg.BackgroundCompiler.submit = lambda self, key, task: real(self, key, lambda: time.sleep(600))
vm = dlvmrt.VM(dense(), jit="auto")
for _ in range(5):
    y = vm.run("main", x_of())[0]
deadline = time.monotonic() + 20
while not bg.compiler()._running and time.monotonic() < deadline:
    time.sleep(0.01)
print("done", y.shape, bg.compiler()._running)
""")
    elapsed = time.perf_counter() - start
    assert p.returncode == 0, p.stderr
    assert "done (4, 8) True" in p.stdout
    assert elapsed < 30


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script as the C compiler")
def test_exit_stops_the_c_compiler_of_a_library_in_flight(tmp_path):
    # the native tier's library is building when the program ends: exit kills its C compiler
    # (which here would take 10 minutes) and the compiler's own child (as cc runs cc1), instead
    # of waiting for a library nobody will load
    cc = tmp_path / "slow-cc"
    mark = tmp_path / "cc.pid"
    cc.write_text(f"#!/bin/sh\nsleep 600 &\necho $$ $! > {mark}.tmp && mv {mark}.tmp {mark}\n"
                  f"wait\n")
    cc.chmod(0o755)
    start = time.perf_counter()
    p = _run(f"""
vm = dlvmrt.VM(dense(), jit="auto", native="auto")
deadline = time.monotonic() + 20
while not os.path.exists({str(mark)!r}) and time.monotonic() < deadline:
    y = vm.run("main", x_of())[0]     # (the pipeline, then the tier-ups, then the library)
    time.sleep(0.01)
print("done", y.shape, os.path.exists({str(mark)!r}))
""", env={"CC": str(cc), "DLVM_CACHE_DIR": str(tmp_path / "cache")})
    elapsed = time.perf_counter() - start
    assert p.returncode == 0, p.stderr
    assert "done (4, 8) True" in p.stdout
    assert elapsed < 25
    time.sleep(0.2)             # (the orphaned child is reaped by init, not by us)
    for pid in map(int, mark.read_text().split()):
        status = Path(f"/proc/{pid}/status")
        assert not status.exists() or "State:\tZ" in status.read_text(), pid


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_compiles_on_its_own():
    # the parent forks with a tier-up queued behind a compile in flight; the child gets the
    # interpreter's results, and its own compiler compiles its kernels
    p = _run("""
gate, entered = threading.Event(), threading.Event()
real = jit.targets.cpu.runner.compile_variant
def slow(*a, **k):
    entered.set()
    gate.wait(30)
    return real(*a, **k)
jit.targets.cpu.runner.compile_variant = slow
vm = dlvmrt.VM(dense(5), jit="auto")
ref = dlvmrt.VM(dense(5), jit="off")
vm.run("main", x_of())           # interpreted as written; the pipeline is queued after it
assert vm.wait_compiled(60)
vm.run("main", x_of())
vm.run("main", x_of())           # hot: the tier-up is queued
assert vm.wait_compiled(60)
vm.run("main", x_of())           # the kernels' compiles are queued, held at the gate
assert entered.wait(30)          # a compile is in flight
threading.Timer(0.3, gate.set).start()
pid = os.fork()                  # waits for it
if pid == 0:
    gate.set()                   # (the timer's thread is not in the child)
    ok = True
    for n in (4, 6, 6, 6):       # 6 rows: a variant the child compiles on its own compiler
        ok &= bool(np.allclose(vm.run("main", x_of(n))[0], ref.run("main", x_of(n))[0],
                               rtol=2e-5, atol=1e-6))
        ok &= vm.wait_compiled(60)
    ok &= compiled_calls(vm) > 0
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
""", timeout=120)
    assert p.returncode == 0, p.stderr
    assert "child 0" in p.stdout, p.stdout + p.stderr


def test_exit_during_an_llvm_call_is_clean(tmp_path):
    # exit while the compiler thread is inside LLVM (its lock held): LLVM must not be torn
    # down under the compile (this aborted in LLVM's code generator)
    p = _run(f"""
os.environ["DLVM_CACHE_DIR"] = {str(tmp_path)!r}
from isa.builder import ModuleBuilder
import jit.llvm.target as target
mb = ModuleBuilder("long")
f = mb.function("main", [("x", "f32[N, 64]")], ["f32[N, 64]"])
h = f.arg("x")
for i in range(400):
    h = f.tanh(f.add(f.mul(h, 0.5), f.exp(f.neg(h))))
f.ret(h)
vm = dlvmrt.VM(mb.finish(), jit="auto")
x = np.ones((8, 64), np.float32)
for _ in range(3):
    vm.run("main", x)
    vm.wait_compiled(0.01)
deadline = time.monotonic() + 60
while not target._lock.locked() and time.monotonic() < deadline:
    vm.run("main", x)
print("in llvm", target._lock.locked(), flush=True)
""", timeout=120)
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    assert "in llvm True" in p.stdout


@pytest.mark.slow
def test_soak_threads_shapes_and_fresh_vms_while_compiling():
    # fresh VMs (their tier-ups and kernels queued while 4 threads call them with changing
    # batch sizes), each result against the interpreter's
    xs = [x_of(n) for n in (1, 2, 3, 5, 8, 13, 32)]
    for seed in range(10, 16):
        vm = dlvmrt.VM(dense(seed), jit="auto")
        ref = dlvmrt.VM(dense(seed), jit="off")
        want = [ref.run("main", x)[0] for x in xs]
        problems: list[str] = []

        def work(t: int, vm=vm, want=want, problems=problems) -> None:
            for i in range(150):
                j = (t * 3 + i) % len(xs)
                if not np.allclose(vm.run("main", xs[j])[0], want[j], rtol=2e-5, atol=1e-6):
                    problems.append(f"thread {t} call {i} rows {len(xs[j])}")
        ts = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert problems == []
        assert vm.wait_compiled(120)


def test_a_task_queued_last_waits_for_the_others():
    # a native library (seconds) goes after the regions' kernels queued meanwhile, later ones too
    c = background.BackgroundCompiler()
    gate, ran = threading.Event(), []
    c.submit("first", lambda: (gate.wait(30), ran.append("first")))
    c.submit("library", lambda: ran.append("library"), last=True)
    c.submit("region1", lambda: ran.append("region1"))
    c.submit("region2", lambda: ran.append("region2"))
    assert not c.submit("library", lambda: ran.append("again"), last=True)    # deduplicated
    gate.set()
    assert c.wait(30)
    assert ran == ["first", "region1", "region2", "library"]
    c.close()


def test_a_task_queued_last_waits_a_bounded_time(monkeypatch):
    # other tasks that keep coming do not hold it back for good
    monkeypatch.setattr(background, "LAST_MAX_WAIT_S", 0.1)
    c = background.BackgroundCompiler()
    gate, ran = threading.Event(), []
    c.submit("first", lambda: gate.wait(30))
    c.submit("library", lambda: ran.append("library"), last=True)
    for i in range(20):
        c.submit(f"region{i}", lambda i=i: (time.sleep(0.02), ran.append(i)))
    gate.set()
    assert c.wait(30)
    assert ran.index("library") < 20           # before the last region: it did not wait them all
    c.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_fork_waits_for_an_import_off_the_callers_thread():
    # the native tier imports the library builder on a thread of its own, under the import
    # guard: a fork in the middle would leave the child the module's import lock, held by a
    # thread it does not have. The fork waits for the guard instead.
    held, start = threading.Event(), time.perf_counter()

    def importing():
        with background.import_guard:
            held.set()
            time.sleep(0.3)
    t = threading.Thread(target=importing)
    t.start()
    assert held.wait(20)
    pid = os.fork()
    if pid == 0:
        os._exit(0 if not background.import_guard.locked() else 3)
    waited = time.perf_counter() - start
    _, status = os.waitpid(pid, 0)
    t.join()
    assert os.waitstatus_to_exitcode(status) == 0
    assert waited >= 0.25, waited
