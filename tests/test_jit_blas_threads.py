"""NumPy's OpenBLAS runs the small products a region leaves to it on one thread, and is restored."""
from __future__ import annotations

import numpy as np
import pytest

import dlvmrt
from isa.builder import ModuleBuilder
from jit.targets.cpu import blas_threads


@pytest.fixture
def two_blas_threads():
    found = blas_threads._openblas()
    if found is None:
        pytest.skip("NumPy's BLAS here is not OpenBLAS")
    get, set_ = found
    before = get()
    set_(2)
    if get() != 2:
        set_(before)
        pytest.skip("this OpenBLAS runs one thread at most")
    yield
    set_(before)


def test_limited_sets_and_restores(two_blas_threads):
    with blas_threads.limited(1):
        assert blas_threads.current() == 1
        with blas_threads.limited(1):       # nested: the outer block restores
            assert blas_threads.current() == 1
        assert blas_threads.current() == 1
    assert blas_threads.current() == 2
    with blas_threads.limited(None):
        assert blas_threads.current() == 2
    with pytest.raises(RuntimeError), blas_threads.limited(1):
        raise RuntimeError("restored on the way out too")
    assert blas_threads.current() == 2


def _matmul_module(shape_a: str, shape_b: str, out: str):
    mb = ModuleBuilder("m")
    f = mb.function("main", [("a", shape_a), ("b", shape_b)], [out])
    f.ret(f.relu(f.matmul(f.arg("a"), f.arg("b"))))
    return mb.finish()


@pytest.mark.parametrize("case", ["small", "large", "unlimited"])
def test_small_numpy_products_run_on_one_blas_thread(two_blas_threads, monkeypatch, case):
    """A product a region leaves to NumPy runs on one OpenBLAS thread when it is small (its
    threads would spin on the JIT pool's cores), on OpenBLAS's threads when large (f64 here),
    and untouched with blas_threads=None; the setting is restored afterwards."""
    seen = []
    real = np.matmul

    def spy(*args, **kwargs):
        seen.append(blas_threads.current())
        return real(*args, **kwargs)
    if case == "large":
        m = _matmul_module("f64[256, 256]", "f64[256, 256]", "f64[256, 256]")
        a = b = np.ones((256, 256))
    else:
        m = _matmul_module("f32[4, 8]", "f32[8, 3]", "f32[4, 3]")
        a, b = np.ones((4, 8), np.float32), np.ones((8, 3), np.float32)
    options = {"threads": 2, "gemm": True}
    if case == "unlimited":
        options["blas_threads"] = None
    vm = dlvmrt.VM(m, jit="always", jit_options=options)
    monkeypatch.setattr(np, "matmul", spy)
    (out,) = vm.run("main", a, b)
    np.testing.assert_array_equal(out, real(a, b))
    assert seen == [1 if case == "small" else 2]
    assert blas_threads.current() == 2


def test_one_thread_while_the_background_compiler_works(two_blas_threads):
    # the compile takes a core: the interpreter's products meanwhile run OpenBLAS on one thread
    import threading

    from jit import background
    c = background.BackgroundCompiler()
    running, gate, seen = threading.Event(), threading.Event(), []

    def task():
        running.set()
        gate.wait(30)
        seen.append(blas_threads.current())
    c.submit("slow", task)
    assert running.wait(30)
    assert blas_threads.current() == 1
    gate.set()
    assert c.wait(30)
    assert seen == [1] and blas_threads.current() == 2      # restored once the queue is empty
    c.close()


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_fork_while_another_thread_limits_openblas(two_blas_threads):
    # another thread is inside `limited(1)` (as the background compiler's thread is while it
    # works) when the process forks: the child does not hang on the block's lock, and its
    # OpenBLAS is back at the count that thread would have restored
    import os
    import signal
    import threading

    inside, leave = threading.Event(), threading.Event()

    def hold():
        with blas_threads.limited(1):
            inside.set()
            leave.wait(20)
    t = threading.Thread(target=hold)
    t.start()
    try:
        assert inside.wait(20) and blas_threads.current() == 1
        pid = os.fork()
        if pid == 0:
            signal.alarm(10)
            ok = blas_threads.current() == 2
            with blas_threads.limited(1):
                ok &= blas_threads.current() == 1
            ok &= blas_threads.current() == 2
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert blas_threads.current() == 1      # the parent's block is still in force
    finally:
        leave.set()
        t.join()
    assert blas_threads.current() == 2
