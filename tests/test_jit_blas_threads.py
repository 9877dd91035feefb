"""NumPy's OpenBLAS is kept to one thread while a VM runs with the JIT, and restored after."""
from __future__ import annotations

import numpy as np
import pytest

import dlvmrt
from isa.builder import ModuleBuilder
from jit import blas_threads


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


def _matmul_module():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("a", "f32[4, 8]"), ("b", "f32[8, 3]")], ["f32[4, 3]"])
    f.ret(f.matmul(f.arg("a"), f.arg("b")))
    return mb.finish()


def test_vm_runs_with_one_blas_thread_and_restores(two_blas_threads, monkeypatch):
    seen = []
    m = _matmul_module()

    def spy_on(vm):
        real = vm.code

        def spy(name):
            seen.append(blas_threads.current())
            return real(name)
        monkeypatch.setattr(vm, "code", spy)
        return vm
    vm = spy_on(dlvmrt.VM(m, jit="always", jit_options={"threads": 2, "gemm": True}))
    a, b = np.ones((4, 8), np.float32), np.ones((8, 3), np.float32)
    (out,) = vm.run("main", a, b)
    np.testing.assert_array_equal(out, a @ b)
    assert seen == [1] and blas_threads.current() == 2
    # the interpreter alone, or blas_threads=None, leaves NumPy's setting alone
    seen.clear()
    for v in (dlvmrt.VM(m, jit="off"), dlvmrt.VM(m, jit="always", jit_options={"blas_threads": None})):
        spy_on(v).run("main", a, b)
    assert seen == [2, 2]
