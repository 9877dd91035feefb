"""The VM's native tier (dlvmrt/native_tier.py): the whole program as one library, called in place
of the interpreter, with the interpreter as reference and fallback. Skipped cleanly where there
is no C compiler. The rest of the suite runs with the tier off (conftest.py)."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import results
from shared_paths import example_programs
from test_aot import GATHER

import assembler
import dlvmrt
import dlvmrt.native_tier as nt
from isa.builder import ModuleBuilder
from isa.errors import ResourceExhausted, Trap
from jit.targets.aot import find_cc

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no C compiler (cc)")

def mlp_module():
    rng = np.random.default_rng(3)
    mb = ModuleBuilder("mlp")
    f = mb.function("main", [("x", "f32[N, 16]")], ["f32[N, 4]"])
    w1 = mb.constant("w1", rng.standard_normal((16, 32)).astype(np.float32))
    w2 = mb.constant("w2", rng.standard_normal((32, 4)).astype(np.float32))
    f.ret(f.softmax(f.matmul(f.relu(f.matmul(f.arg("x"), w1)), w2)))
    return mb.finish()


COUNT = """module count
func @main(%n: i64[]) -> i64[] {
entry:
  %zero = const 0 : i64[]
  %one = const 1 : i64[]
  %i = mov %zero
  jmp head
head:
  %more = lt %i, %n
  br %more, body, done
body:
  %i = add %i, %one
  jmp head
done:
  ret %i
}
"""


def native_vm(source, **kw):
    module = assembler.parse(source) if isinstance(source, str) else source
    return dlvmrt.VM(module, jit="auto", native="always", **kw)


def close(got, want, tol=1e-5):
    results.close(got, want, tol)


@pytest.mark.parametrize("program", example_programs(), ids=lambda p: p.stem)
def test_shared_examples_run_native(program):
    vm = dlvmrt.VM(assembler.assemble_file(program), jit="auto", native="always")
    with np.load(program.with_suffix(".inputs.npz")) as z:
        inputs = {k: z[k] for k in z.files}
    with np.load(program.with_suffix(".expect.npz")) as z:
        want = [z[f"out{i}"] for i in range(len(z.files))]
    for _ in range(3):      # the first call compares with the VM, the next ones run the library
        close(vm.run("main", **inputs), want)
    assert vm.native.state in ("ready", "unavailable"), vm.native.status()
    if vm.native.state == "ready":
        assert vm.native.native_calls == 2, vm.native.status()


def test_the_library_runs_after_the_first_call():
    vm = native_vm(mlp_module())
    ref = dlvmrt.VM(vm.source_program, jit="off")
    for n in (1, 5, 1, 5):
        x = np.random.default_rng(n).standard_normal((n, 16)).astype(np.float32)
        close(vm.run(x), ref.run(x))
    assert vm.native.state == "ready"
    assert vm.native.native_calls == 2      # each batch size: compared once, then native
    assert "2 of 2 input signatures run it" in vm.native.status()
    # the cache keeps the shared library alone: no sources, no static archive (`dlvm aot`'s)
    kept = {p.name for p in vm.native.library.directory.iterdir()}
    assert "libdlvm_native.so" in kept and "dlvm_aot.json" in kept
    assert "src" not in kept and not any(name.endswith(".a") for name in kept)


def test_the_native_tiers_libraries_are_built_without_an_archive(monkeypatch, tmp_path):
    import os

    import jit.targets.aot.build as build
    from jit.targets.aot.cached import cached_library
    tools = []
    real_run = build._run
    monkeypatch.setattr(build, "_run", lambda cmd: (tools.append(os.path.basename(cmd[0])),
                                                    real_run(cmd))[1])
    cached_library(mlp_module(), tmp_path / "cache")
    assert tools and "ar" not in tools
    tools.clear()
    build.compile_library(mlp_module(), tmp_path / "aot")       # `dlvm aot` keeps one
    assert "ar" in tools and (tmp_path / "aot" / "libmlp.a").is_file()


def test_a_forked_child_does_not_inherit_the_runtimes_build(monkeypatch, tmp_path):
    # a fork while the runtime builds on another thread (its lock held): the child's own
    # runtime_objects must not wait for a lock no thread of its own will release
    import os

    import jit.targets.aot.build as build
    started, release = threading.Event(), threading.Event()

    def slow(*args):
        started.set()
        release.wait(30)
        raise build.AotError("stopped by the test")

    monkeypatch.setattr(build, "_build_runtime", slow)
    monkeypatch.setenv("DLVM_CACHE_DIR", str(tmp_path))

    def building():
        try:
            build.runtime_objects(find_cc())
        except build.AotError:
            pass

    t = threading.Thread(target=building)
    t.start()
    try:
        assert started.wait(30)
        pid = os.fork()
        if pid == 0:        # the child: its locks are fresh, the parent's builds not its own
            ok = build._runtime_lock.acquire(timeout=5) and not build._prepared
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    finally:
        release.set()
        t.join()


def test_traps_come_from_the_interpreter():
    vm = native_vm(GATHER)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for _ in range(2):
        vm.run(x, np.array([0, 2]))
    assert vm.native.native_calls == 1
    # the library fails the call; the VM runs it again and traps with its own location
    with pytest.raises(Trap, match=r"gather.*out of range") as e:
        vm.run(x, np.array([0, 3]))
    assert "@main, block entry, instruction 0" in str(e.value)
    # a wrong dtype is the VM's error too
    with pytest.raises(Trap, match="must be f32"):
        vm.run(x.astype(np.float64), np.array([0]))


def test_block_budget_ends_in_the_vms_error():
    vm = native_vm(COUNT, max_steps=500)
    assert vm.run(np.array(10))[0] == 10
    assert vm.run(np.array(10))[0] == 10
    assert vm.native.native_calls == 1
    with pytest.raises(ResourceExhausted, match="more than 500 blocks"):
        vm.run(np.array(10_000))


def altered_library_vm(module, alter):
    """A VM with native="always" whose library (built by a first call, which compares and
    returns the VM's results) has its results changed in place by alter(arrays, outs)."""
    vm = native_vm(module)
    vm.run(np.ones((2, 16), np.float32))
    lib = vm.native.library

    class Altered:
        def call(self, entry, arrays):
            code, msg, outs = lib.call(entry, arrays)
            alter(arrays, outs)
            return code, msg, outs
    vm.native.library = Altered()
    return vm


def test_a_wrong_library_result_keeps_the_signature_on_the_vm():
    def plus_one(arrays, outs):
        for o in outs:
            o += 1
    vm = altered_library_vm(mlp_module(), plus_one)
    y = np.zeros((3, 16), np.float32)
    want_y = dlvmrt.VM(vm.source_program, jit="off").run(y)
    for _ in range(3):
        close(vm.run(y), want_y)
    assert vm.native.native_calls == 0
    assert vm.native.choice[("main", ("f", (3, 16)))] is False


def quantized_module():
    """A fake-quantized layer (QuantizeLinear, DequantizeLinear): the product rounded to steps
    of 0.05."""
    rng = np.random.default_rng(4)
    mb = ModuleBuilder("qlayer")
    f = mb.function("main", [("x", "f32[N, 16]")], ["f32[N, 32]"])
    w = mb.constant("w", rng.standard_normal((16, 32)).astype(np.float32))
    f.ret(f.mul(f.round(f.div(f.matmul(f.arg("x"), w), 0.05)), 0.05))
    return mb.finish()


@pytest.mark.parametrize("module,shift,kept", [
    (quantized_module, 0.05, True),     # one rounding step in some elements: summation order
    (quantized_module, 3.0, False),     # a wrong library
    (mlp_module, 0.05, False)])         # no rounding in the program: compared element-wise
def test_a_rounding_program_tolerates_results_one_step_apart(module, shift, kept):
    # the library sums products in another order than the interpreter, and a last-bit
    # difference moves a value across a rounding step: a program with rounding ops is compared
    # by the norm of each result's difference where element by element fails (a QAT CNN's
    # library was declined for good, 2.7x onnxruntime's time)
    def stepped(arrays, outs):
        for o in outs:
            o.reshape(-1)[::10] += shift          # every tenth element
    vm = altered_library_vm(module(), stepped)
    x = np.random.default_rng(5).standard_normal((12, 16)).astype(np.float32)
    for _ in range(1 + (0 if kept else nt.STEP_RETRIES if module is quantized_module else 0)):
        vm.run(x)
        vm.wait_compiled()
    assert (("main", ("f", (12, 16))) in vm.native.declined) is not kept


@pytest.mark.parametrize("wrong_calls,kept", [(1, True), (nt.STEP_RETRIES, True),
                                              (nt.STEP_RETRIES + 1, False)])
def test_a_rounding_programs_failed_comparison_is_made_again(wrong_calls, kept):
    # by default the VM's first calls are interpreted (NumPy's summation order) where the
    # library runs its kernels' order: a value near a rounding tie lands a step apart in a
    # result too small to compare as a whole (a QDQ CNN's ten logits). The comparison is made
    # again (once the compiler is idle), up to STEP_RETRIES times; a library wrong every time
    # is declined. (Here the library is wrong on its first calls, by far.)
    calls = []

    def stepped_at_first(arrays, outs):
        calls.append(1)
        if len(calls) <= wrong_calls:
            outs[0].reshape(-1)[0] += 100.0         # far off: fails even as a whole
    vm = altered_library_vm(quantized_module(), stepped_at_first)
    x = np.random.default_rng(5).standard_normal((1, 16)).astype(np.float32)
    sig = ("main", ("f", (1, 16)))
    want = dlvmrt.VM(vm.source_program, jit="off").run(x)
    for _ in range(nt.STEP_RETRIES + 2):
        close(vm.run(x), want)      # the VM's result until the library is trusted
        vm.wait_compiled()
    assert (sig in vm.native.declined) is not kept
    assert (vm.native.choice.get(sig) is True) is kept


def test_a_recheck_runs_the_inputs_that_failed():
    # a library wrong only on some data (a miscompiled tail or sign) must not pass a recheck on
    # other data: the failing call's inputs are the ones compared again, and meanwhile the
    # signature runs on the VM even where its family is trusted
    def wrong_on_a_large_first_value(arrays, outs):
        if arrays[0].reshape(-1)[0] > 5:
            outs[0].reshape(-1)[0] += 100.0
    vm = altered_library_vm(quantized_module(), wrong_on_a_large_first_value)
    rng = np.random.default_rng(6)
    ref = dlvmrt.VM(vm.source_program, jit="off")
    for i in range(nt.STEP_RETRIES + 3):
        x = rng.standard_normal((3, 16)).astype(np.float32)
        x[0, 0] = 9.0 if i == 0 else -1.0       # only the first call's data is miscompiled
        close(vm.run(x), ref.run(x))
        vm.wait_compiled()
    assert ("main", ("f", (3, 16))) in vm.native.declined


def test_same_compares_rounding_programs_results_as_wholes():
    from dlvmrt.native_tier import _same
    w = np.linspace(-1, 1, 100).astype(np.float32)
    g = w.copy()
    g[::10] += 0.05
    assert not _same((g,), (w,)) and _same((g,), (w,), steps=True)
    bad = w.copy()
    bad[::2] += 1.0
    assert not _same((bad,), (w,), steps=True)
    nan_moved = w.copy()
    nan_moved[3] = np.nan
    assert not _same((nan_moved,), (w,), steps=True)
    labels = np.arange(100)
    flipped = labels.copy()
    flipped[:5] += 1                            # 5% of the argmax labels flip at near ties
    assert not _same((flipped,), (labels,)) and _same((flipped,), (labels,), steps=True)
    flipped[:50] += 1
    assert not _same((flipped,), (labels,), steps=True)
    # a wrong vector tail, a few values off by 4% (too few to compare as a whole): declined
    tail = np.ones(10_000, np.float32)
    zeroed = tail.copy()
    zeroed[-7:] = 0
    assert not _same((zeroed,), (tail,), steps=True)
    assert not _same((np.float32(1.04),), (np.float32(1.0),), steps=True)
    assert not _same((w[:8] + 0.04,), (w[:8],), steps=True)


def test_auto_builds_in_the_background_and_times_both_ways():
    vm = dlvmrt.VM(mlp_module(), jit="auto", native="auto")
    x = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)
    want = dlvmrt.VM(vm.source_program, jit="off").run(x)
    close(vm.run(x), want)                # (interpreted as written; the pipeline then queued)
    vm.wait_compiled(120)
    close(vm.run(x), want)
    assert vm.native.state == "waiting"
    close(vm.run(x), want)
    assert vm.wait_compiled(120)
    assert vm.native.state == "ready", vm.native.status()
    sig = ("main", ("f", (4, 16)))
    # samples taken while a compile runs are not counted, nor the library's while the VM's
    # OpenBLAS threads may spin (BLAS_SPIN_S after a VM call): the choice comes within a second
    import time
    deadline = time.monotonic() + 30
    while sig not in vm.native.choice and time.monotonic() < deadline:
        close(vm.run(x), want)
        vm.wait_compiled(120)
    assert sig in vm.native.choice      # chosen after the timed trials, whichever was faster


def test_many_threads_get_the_interpreters_results():
    vm = native_vm(mlp_module())
    xs = [np.random.default_rng(i).standard_normal((1 + i % 3, 16)).astype(np.float32)
          for i in range(12)]
    ref = dlvmrt.VM(vm.source_program, jit="off")
    want = [ref.run(x)[0] for x in xs]
    errors = []

    def work(t):
        try:
            for k in range(20):
                i = (t + k) % len(xs)
                np.testing.assert_allclose(vm.run(xs[i])[0], want[i], rtol=1e-5, atol=1e-6)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert vm.native.native_calls > 0


def test_off_where_it_does_not_apply():
    module = mlp_module()
    assert dlvmrt.VM(module, jit="off", native="always").native is None
    assert dlvmrt.VM(module, jit="auto", native="off").native is None
    assert dlvmrt.VM(module, jit="auto", native="always", profile=True).native is None
    with pytest.raises(ValueError, match="native must be one of"):
        dlvmrt.VM(module, native="sometimes")


def test_the_runtime_build_starts_with_the_first_library(monkeypatch, tmp_path):
    # the libraries' runtime (seconds of C on a machine whose cache has none) starts building on
    # a thread of its own as the first library is asked for, not behind the regions' kernels
    # queued before it; once per compiler and cache directory. A VM that runs once (`dlvm run`)
    # starts none
    import jit.targets.aot.build as build
    built = []
    done = threading.Event()

    def record(cc):
        built.append(cc)
        done.set()
        return tmp_path

    monkeypatch.setattr(build, "runtime_objects", record)
    monkeypatch.setattr(build, "_prepared", set())
    monkeypatch.setattr(nt.NativeTier, "_build", lambda self: self._unavailable("not built here"))
    monkeypatch.setenv("DLVM_CACHE_DIR", str(tmp_path / "a"))
    module = mlp_module()
    x = np.ones((2, 16), np.float32)

    def until_asked(vm):
        for _ in range(20):
            vm.run(x)
            vm.wait_compiled()
            if vm.native.state != "waiting":
                return

    vm = dlvmrt.VM(module, jit="auto", native="auto")
    vm.run(x)
    vm.wait_compiled()
    assert not built
    until_asked(vm)
    assert done.wait(30) and built == [find_cc()]
    until_asked(dlvmrt.VM(module, jit="auto", native="auto"))
    monkeypatch.setenv("DLVM_CACHE_DIR", str(tmp_path / "b"))
    done.clear()
    until_asked(dlvmrt.VM(module, jit="auto", native="auto"))
    assert done.wait(30) and len(built) == 2
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    monkeypatch.setenv("DLVM_CACHE_DIR", str(tmp_path / "c"))
    until_asked(dlvmrt.VM(module, jit="auto", native="auto"))
    assert len(built) == 2


def test_a_program_the_library_cannot_hold_stays_on_the_vm():
    # values of a narrow storage format have no C type: the tier stays off and says why (an
    # op the library has no code for, einsum here, is run by the VM from inside the library)
    pytest.importorskip("ml_dtypes")
    source = """module u
func @main(%x: f32[N]) -> (f32[], f32[N]) {
entry:
  %t = einsum %x, %x {equation = "i,i->"}
  %h = cast %x {to = bf16}
  %y = cast %h {to = f32}
  ret %t, %y
}
"""
    vm = native_vm(source)
    x = np.array([3.0, 1.0, 3.0], np.float32)
    want = dlvmrt.VM(vm.source_program, jit="off").run(x)
    for _ in range(2):
        close(vm.run(x), want)
    assert vm.native.state == "unavailable"
    assert "bf16" in vm.native.status()
    assert "einsum" not in vm.native.status()


def _auto_vm_with_its_library():
    """A VM in the default tiering whose library is built (after its second call), with the
    input and the signature of the calls to time."""
    vm = dlvmrt.VM(mlp_module(), jit="auto", native="auto")
    x = np.ones((2, 16), np.float32)
    vm.run(x)
    vm.wait_compiled(120)         # the pipeline, queued after the first call (vm.py: _defer)
    for _ in range(2):
        vm.run(x)
    assert vm.wait_compiled(120) and vm.native.state == "ready"
    return vm, x, ("main", ("f", (2, 16)))


def test_a_timed_choice_is_tried_again(monkeypatch):
    import dlvmrt.native_tier as nt
    monkeypatch.setattr(nt, "RETRY_AFTER", 5)
    monkeypatch.setattr(nt, "RETRY_AFTER_S", 0.0)
    monkeypatch.setattr(nt, "BLAS_SPIN_S", 0.0)
    vm, x, sig = _auto_vm_with_its_library()
    import time
    deadline = time.monotonic() + 30
    while sig not in vm.native.choice and time.monotonic() < deadline:
        vm.run(x)
        vm.wait_compiled(120)
    assert sig in vm.native.choice
    for _ in range(6):
        vm.run(x)
    assert sig not in vm.native.choice or vm.native.uses.get(sig, 0) <= 1
    # a timing that confirms the choice waits twice as long before the next (RETRY_MAX at most)
    choice, wait, seconds, _ = vm.native.retry[sig]
    vm.native._decide(sig, choice)
    assert vm.native.retry[sig][:3] == (choice, min(2 * wait, nt.RETRY_MAX), 2 * seconds)
    vm.native._decide(sig, not choice)
    assert vm.native.retry[sig][:3] == (not choice, nt.RETRY_AFTER, nt.RETRY_AFTER_S)


def test_a_timed_choice_waits_some_seconds_too(monkeypatch):
    # a fast model passes RETRY_AFTER calls in a moment: the choice also waits RETRY_AFTER_S
    import dlvmrt.native_tier as nt
    monkeypatch.setattr(nt, "RETRY_AFTER", 2)
    vm, x, sig = _auto_vm_with_its_library()
    vm.native._decide(sig, True)
    for _ in range(10):
        vm.run(x)
    assert vm.native.choice.get(sig) is True and vm.native.uses[sig] == 10
    native, calls, seconds, since = vm.native.retry[sig]
    vm.native.retry[sig] = (native, calls, seconds, since - seconds)      # the seconds passed
    vm.run(x)
    assert sig not in vm.native.choice       # timed again
    # each timing that confirms the choice doubles the seconds too
    before = vm.native.retry[sig][2]
    vm.native._decide(sig, True)
    assert before >= nt.RETRY_AFTER_S > 0
    assert vm.native.retry[sig][2] == min(2 * before, nt.RETRY_MAX_S)


def test_library_samples_wait_out_the_vms_blas_threads(monkeypatch):
    # a library sample taken while the VM's OpenBLAS threads still spin does not count: those
    # calls run the library, and no choice is made on them
    import dlvmrt.native_tier as nt
    monkeypatch.setattr(nt, "BLAS_SPIN_S", 1e9)
    vm, x, sig = _auto_vm_with_its_library()
    for _ in range(4 * nt.TRIALS):
        vm.run(x)
        vm.wait_compiled(120)
    trial = vm.native.trials[sig]
    assert sig not in vm.native.choice and trial.native == [] and trial.vm == []
    assert vm.native.native_calls >= 4 * nt.TRIALS - 2


def _timed(vm, sig, native_wins: bool) -> None:
    """Record a timed choice for `sig` as the trial would."""
    import dlvmrt.native_tier as nt
    trial = vm.native.trials[sig] = nt._Trial(native=[1.0] * nt.TRIALS,
                                              vm=[2.0 if native_wins else 0.5] * nt.TRIALS)
    vm.native._maybe_choose(sig, trial)
    assert vm.native.choice[sig] is native_wins


def test_a_family_the_library_won_runs_new_shapes_on_it_at_once():
    # a text model over batches of varying length has a new signature nearly every call: once
    # the library won two timings of the family, a new extent runs it with no trial
    vm, x, _ = _auto_vm_with_its_library()
    rows = lambda n: np.random.default_rng(n).standard_normal((n, 16)).astype(np.float32)  # noqa: E731
    ref = dlvmrt.VM(vm.source_program, jit="off")
    for n in (5, 6):
        _timed(vm, ("main", ("f", (n, 16))), True)
    calls = vm.native.native_calls
    for n in (7, 9, 30):
        close(vm.run(rows(n)), ref.run(rows(n)))
        sig = ("main", ("f", (n, 16)))
        assert vm.native.choice[sig] is True and sig in vm.native.inherited
        assert sig not in vm.native.trials
    assert vm.native.native_calls == calls + 3          # each ran once, on the library alone
    # one row is a family of its own (size-1 dims take their own paths): it is tried
    vm.run(rows(1))
    assert ("main", ("f", (1, 16))) not in vm.native.inherited


def test_every_eighth_new_shape_of_a_trusted_family_is_compared(monkeypatch):
    import dlvmrt.native_tier as nt
    vm, x, _ = _auto_vm_with_its_library()
    for n in (5, 6):
        _timed(vm, ("main", ("f", (n, 16))), True)
    compared = []
    real_same = nt._same
    monkeypatch.setattr(nt, "_same", lambda *a: compared.append(1) or real_same(*a))
    rows = lambda n: np.ones((n, 16), np.float32)  # noqa: E731
    for n in range(10, 10 + nt.SPOT_CHECK):
        vm.run(rows(n))
    sigs = [("main", ("f", (n, 16))) for n in range(10, 10 + nt.SPOT_CHECK)]
    assert len(compared) == 1                          # the eighth, on its first call
    assert all(vm.native.choice.get(s) is True and s in vm.native.inherited for s in sigs)
    assert not vm.native.trials                        # and not timed


def test_first_calls_vote_for_their_family(monkeypatch):
    # each signature's first call runs both ways on the same inputs: shapes seen once each
    # (no trial finishes) still earn their family the library
    import dlvmrt.native_tier as nt
    vm, x, _ = _auto_vm_with_its_library()
    rows = lambda n: np.random.default_rng(n).standard_normal((n, 16)).astype(np.float32)  # noqa: E731
    ref = dlvmrt.VM(vm.source_program, jit="off")
    for edge, inherits in ((0.0, False), (1e9, True)):     # the library never / always faster
        monkeypatch.setattr(nt, "NATIVE_EDGE", edge)
        base = 20 if inherits else 10
        for n in (base, base + 1):
            close(vm.run(rows(n)), ref.run(rows(n)))
        close(vm.run(rows(base + 2)), ref.run(rows(base + 2)))
        assert (("main", ("f", (base + 2, 16))) in vm.native.inherited) is inherits


def test_a_family_with_a_vm_choice_or_a_failure_tries_each_shape():
    vm, x, _ = _auto_vm_with_its_library()
    rows = lambda n: np.ones((n, 16), np.float32)  # noqa: E731
    _timed(vm, ("main", ("f", (5, 16))), True)
    _timed(vm, ("main", ("f", (6, 16))), False)        # the VM won the last timing
    vm.run(rows(7))
    assert ("main", ("f", (7, 16))) in vm.native.trials
    _timed(vm, ("main", ("f", (8, 16))), True)
    _timed(vm, ("main", ("f", (9, 16))), True)
    vm.run(rows(10))
    assert ("main", ("f", (10, 16))) in vm.native.inherited
    vm.native._decline(("main", ("f", (11, 16))))       # a failure: every new shape is tried
    vm.run(rows(12))
    assert ("main", ("f", (12, 16))) in vm.native.trials


def test_a_near_tie_keeps_the_library():
    import dlvmrt.native_tier as nt
    vm = dlvmrt.VM(mlp_module(), jit="auto", native="auto")
    for vm_time, native in ((0.98, True), (1.0, True), (0.9, False)):
        sig = ("main", ("f", (3, 16)))
        trial = vm.native.trials[sig] = nt._Trial(native=[1.0] * nt.TRIALS,
                                                  vm=[vm_time] * nt.TRIALS)
        vm.native._maybe_choose(sig, trial)
        assert vm.native.choice[sig] is native


def test_a_forked_child_runs_the_library():
    # the child has none of the parent's pool workers: its calls must not wait for them
    import os
    vm = native_vm(mlp_module())
    x = np.random.default_rng(1).standard_normal((64, 16)).astype(np.float32)
    want = vm.run(x)
    vm.run(x)
    assert vm.native.native_calls == 1
    pid = os.fork()
    if pid == 0:
        ok = False
        try:
            got = vm.run(x)
            ok = np.allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


RECURRENT = """module rec
func @main(%x: f32[T, N, 8], %w: f32[8, 8]) -> (f32[N, 8], f32[?, N, 8]) {
entry:
  %t = const 0 : i64[]
  %one = const 1 : i64[]
  %shape = shape_of %x
  %steps = gather %shape, 0 {axis = 0}
  %h = const 0.0 : f32[N, 8]
  %ys = const 0.0 : f32[0, N, 8]
  jmp head
head:
  %more = lt %t, %steps
  br %more, body, done
body:
  %xt = gather %x, %t {axis = 0}
  %p = matmul %h, %w
  %s = add %xt, %p
  %h = tanh %s
  %e = expand_dims %h {axes = [0]}
  %ys = concat %ys, %e {axis = 0}
  %t = add %t, %one
  jmp head
done:
  ret %h, %ys
}
"""


@pytest.mark.parametrize("source", ["mlp", "recurrent"])
def test_steady_state_calls_allocate_only_their_results(source):
    # issue 12's target: compiled code allocates nothing in a steady state; the runtime counts
    # its calls into malloc (buffer cache misses) and the results it hands back, and the
    # native tier's status reports them over a window of calls
    module = mlp_module() if source == "mlp" else assembler.parse(RECURRENT)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((5, 16)).astype(np.float32)] if source == "mlp" else \
        [rng.standard_normal((12, 3, 8)).astype(np.float32),
         (rng.standard_normal((8, 8)) * 0.3).astype(np.float32)]
    vm = native_vm(module)
    for _ in range(40):
        vm.run("main", *args)
    lib = vm.native.library
    before = lib.allocation_counts()
    for _ in range(10):
        vm.run("main", *args)
    after = lib.allocation_counts()
    results_n = after[1] - before[1]
    assert results_n == 10 * (1 if source == "mlp" else 2)
    assert after[0] - before[0] == results_n, (before, after)
    assert "0 beyond the" in vm.native.status(), vm.native.status()


MASKED = """module masked
func @main(%x: f32[N, 8], %w: f32[8, 8]) -> (f32[1], i64[?], f32[N, 8]) {
entry:
  %h = matmul %x, %w
  %h = tanh %h
  %pos = gt %h, 0.25
  %at = nonzero %pos
  %t = transpose %at {perm = [1, 0]}
  %kept = gather_nd %h, %t
  %s = reduce_sum %kept {axes = [0], keepdims = true}
  %i = argmax %h {axis = 1}
  %u, %first, %inverse, %counts = unique %i {sorted = true}
  %y = mul %h, 2.0
  ret %s, %u, %y
}
"""


def test_instructions_without_library_code_run_on_the_vm_from_the_library():
    # a boolean mask's nonzero and a unique: before, they turned the whole native tier off
    module = assembler.parse(MASKED)
    vm = native_vm(module)
    ref = dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(3)
    w = rng.standard_normal((8, 8)).astype(np.float32)
    for n in (5, 1, 9, 5):
        x = rng.standard_normal((n, 8)).astype(np.float32)
        for _ in range(3):
            close(vm.run("main", x, w), ref.run("main", x, w))
    assert vm.native.state == "ready", vm.native.status()
    assert vm.native.vm_instructions == 2, vm.native.status()
    assert vm.native.native_calls >= 6, vm.native.status()
    assert "2 instructions run on the VM" in vm.native.status()
    # an empty mask: no rows kept, an empty sum
    x = -np.ones((4, 8), np.float32)
    close(vm.run("main", x, np.abs(w)), ref.run("main", x, np.abs(w)))


def test_a_dtype_the_library_has_no_code_for_runs_on_the_vm_alone():
    # a cumulative sum of i16 and a 3-D convolution of f64: decided when the library is built,
    # so those two instructions run on the VM and the rest natively (the runtime's guard
    # failed every call, and the whole program stayed on the VM)
    results = "i16[N, 6], f64[N, 4, 3, 3, 3], f32[N, 6]"
    module = assembler.parse(f"""module dtypes
func @main(%x: i16[N, 6], %v: f64[N, 2, 3, 3, 3], %w: f64[4, 2, 1, 1, 1]) -> ({results}) {{
entry:
  %c = cumsum %x, 1
  %y = conv3d %v, %w
  %f = cast %c {{to = f32}}
  %g = tanh %f
  ret %c, %y, %g
}}
""")
    vm = native_vm(module)
    ref = dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(4)
    w = rng.standard_normal((4, 2, 1, 1, 1))
    for n in (3, 1, 3):
        args = (rng.integers(-5, 5, (n, 6)).astype(np.int16),
                rng.standard_normal((n, 2, 3, 3, 3)), w)
        for _ in range(2):
            for g, want in zip(vm.run("main", *args), ref.run("main", *args)):
                np.testing.assert_allclose(g, want, rtol=1e-6)
    assert vm.native.vm_instructions == 2, vm.native.status()
    assert "2 of 2 input signatures run it" in vm.native.status(), vm.native.status()


@pytest.mark.parametrize("optimize", [False, True])
def test_a_half_precision_reduction_over_leading_axes_runs_on_the_vm_alone(optimize):
    # dlvm_rt_reduce has code for f32 and f64: an f16 sum over leading axes is the VM's, unless
    # the pipeline wrote it as an f32 sum between casts (jit/passes/widen.py)
    module = assembler.parse("""module halfsum
func @main(%x: f16[N, 5, 6], %y: f32[N, 4]) -> (f16[5], f32[N, 4]) {
entry:
  %s = reduce_sum %x {axes = [0, 2]}
  %t = tanh %y
  ret %s, %t
}
""")
    vm = native_vm(module, optimize=optimize)
    ref = dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(5)
    args = (rng.standard_normal((3, 5, 6)).astype(np.float16),
            rng.standard_normal((3, 4)).astype(np.float32))
    for _ in range(3):
        for g, want in zip(vm.run("main", *args), ref.run("main", *args)):
            np.testing.assert_allclose(g, want, rtol=2e-3)
    assert vm.native.vm_instructions == (0 if optimize else 1), vm.native.status()
    assert "1 of 1 input signatures run it" in vm.native.status(), vm.native.status()


def test_a_trap_in_an_instruction_the_vm_runs_is_the_interpreters(tmp_path):
    # gather_nd with an index out of range traps inside the callback: the library call fails
    # with a guard and the VM runs the call, giving the interpreter's error
    module = assembler.parse("""module bad
func @main(%x: f32[4], %i: i64[2, 1]) -> f32[2] {
entry:
  %z = nonzero %x
  %g = gather_nd %x, %i
  %y = exp %g
  ret %y
}
""")
    vm = native_vm(module)
    good = [np.arange(4, dtype=np.float32), np.array([[1], [3]])]
    for _ in range(3):
        close(vm.run("main", *good), dlvmrt.VM(module, jit="off").run("main", *good))
    with pytest.raises(Trap, match="out of range"):
        vm.run("main", np.arange(4, dtype=np.float32), np.array([[1], [7]]))


def test_threads_share_a_library_that_calls_the_vm():
    import threading
    module = assembler.parse(MASKED)
    vm = native_vm(module)
    ref = dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(4)
    w = rng.standard_normal((8, 8)).astype(np.float32)
    xs = [rng.standard_normal((n, 8)).astype(np.float32) for n in (3, 6, 2, 7)]
    want = [ref.run("main", x, w) for x in xs]
    for x in xs:
        vm.run("main", x, w)
    errors = []

    def work(k):
        try:
            for _ in range(20):
                close(vm.run("main", xs[k], w), want[k])
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


@pytest.mark.slow       # 17 s: CI's time
def test_one_core_for_two_threads_gives_the_same_results(tmp_path):
    # two threads on one core: the pool's workers wait for the core the caller holds, and the
    # pool may run its jobs on the caller alone (pool_solo_jobs counts them); results stay
    import os
    import subprocess
    import sys
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no CPU affinity on this platform")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    program = tmp_path / "pinned.dlasm"
    program.write_text("""module pinned
func @main(%x: f32[N, 256], %w: f32[256, 256]) -> (f32[N, 256]) {
entry:
  %p = matmul %x, %w
  %y = relu %p
  %z = matmul %y, %w
  ret %z
}
""")
    script = tmp_path / "pinned.py"
    script.write_text(f"""
import os, sys
sys.path.insert(0, {root!r})
os.sched_setaffinity(0, {{sorted(os.sched_getaffinity(0))[0]}})
import numpy as np, assembler, dlvmrt
module = assembler.assemble_file({str(program)!r})
# two threads asked for explicitly: $DLVM_THREADS is capped at the one CPU
vm = dlvmrt.VM(module, jit="always", native="always", jit_options={{"threads": 2}})
ref = dlvmrt.VM(module, jit="off")
rng = np.random.default_rng(0)
x = rng.standard_normal((256, 256)).astype(np.float32)
w = (rng.standard_normal((256, 256)) / 16).astype(np.float32)
want = ref.run(x, w)[0]
for _ in range(100):
    np.testing.assert_allclose(vm.run(x, w)[0], want, rtol=1e-4, atol=1e-4)
n = vm.native.library.pool_solo_jobs()
assert isinstance(n, int) and n >= 0, n
print("ok", n, vm.native.status())
""")
    env = {**os.environ, "DLVM_THREADS": "2", "DLVM_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]
    # every job on the caller (DLVM_POOL_SOLO=1, the pool's way out of a busy machine): counted,
    # and the same results
    out = subprocess.run([sys.executable, str(script)], env={**env, "DLVM_POOL_SOLO": "1"},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.split()[1]) > 0, out.stdout


F16_PROGRAM = """module h
func @main(%x: f16[N, 8]) -> f16[N, 8] {
entry:
  %a = add %x, 0.5
  %b = exp %a
  %c = softmax %b {axis = -1}
  ret %c
}
"""


@pytest.mark.parametrize("optimize", [False, True])
def test_f16_programs_run_in_the_library(optimize):
    # unwidened, the VM runs the f16 arithmetic from inside the library (in f32, rounded once,
    # as the interpreter; an f16 immediate reaches it as its bits); widened by the pipeline,
    # the library compiles all of it
    m = assembler.parse(F16_PROGRAM)
    x = (np.random.default_rng(0).standard_normal((5, 8)) * 3).astype(np.float16)
    vm = dlvmrt.VM(m, jit="auto", native="always", optimize=optimize)
    for _ in range(2):
        vm.run(x)
    code, _, outs = vm.native.library.call("main", [x])
    want = dlvmrt.VM(m, jit="off").run(x)[0]
    assert code == 0
    if optimize:
        assert vm.native.vm_instructions == 0, vm.native.status()
        np.testing.assert_allclose(outs[0].astype(np.float32), want.astype(np.float32),
                                   rtol=2e-3, atol=1e-3)
    else:
        assert vm.native.vm_instructions == 3, vm.native.status()
        np.testing.assert_array_equal(outs[0], want)


def test_f16_constants_of_one_value_are_the_interpreters():
    # a scalar const is filled from its value: f16's comes as its bits
    m = assembler.parse("""module c
func @main(%x: f16[2, 2]) -> (f16[2, 2], f16[], f16[2, 2]) {
entry:
  %c = const 3.0 : f16[2, 2]
  %s = const 0.5 : f16[]
  %y = mov %x
  ret %c, %s, %y
}
""")
    x = np.ones((2, 2), np.float16)
    vm = native_vm(m)
    for _ in range(2):
        vm.run(x)
    code, _, outs = vm.native.library.call("main", [x])
    assert code == 0
    for g, w in zip(outs, dlvmrt.VM(m, jit="off").run(x)):
        np.testing.assert_array_equal(g, w)
