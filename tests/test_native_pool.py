"""The native worker pool (jit/targets/cpu/native_pool.py): every chunk runs once, results are ORed, jobs
follow each other without loss, and a forked child gets a pool of its own."""
from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest
from llvmlite import ir

from jit.cache import DiskCache
from jit.llvm import target
from jit.llvm.irutil import I32, I64, PTR, const
from jit.targets.cpu.native_pool import NativePool, available

pytestmark = pytest.mark.skipif(not available(), reason="native pool: Linux x86-64/AArch64 only")


@pytest.fixture(scope="module")
def chunk_fn():
    """i32 f(i64 chunk, ptr out): out[chunk] += chunk + 1; returns 4 for chunk 3, else 0."""
    m = ir.Module("t")
    f = ir.Function(m, ir.FunctionType(I32, [I64, PTR]), "f")
    c, out = f.args
    b = ir.IRBuilder(f.append_basic_block())
    p = b.gep(out, [c], source_etype=I64)
    b.atomic_rmw("add", p, b.add(c, const(I64, 1)), "seq_cst")
    b.ret(b.select(b.icmp_signed("==", c, const(I64, 3)), const(I32, 4), const(I32, 0)))
    loaded = target.LoadedObject(target.emit_object(target.optimize(str(m), 3), 3))
    return loaded, loaded.address("f")


@pytest.mark.parametrize("threads,spin", [(2, 0), (2, 2000), (3, 100), (1, 0)])
def test_every_chunk_runs_once_and_statuses_or(chunk_fn, threads, spin):
    _, addr = chunk_fn
    pool = NativePool(threads, spin=spin)
    out = np.zeros(64, np.int64)
    for n in (1, 2, 7, 64):
        out[:] = 0
        status = pool.run(addr, [(i, out.ctypes.data) for i in range(n)])
        assert list(out[:n]) == [i + 1 for i in range(n)] and not out[n:].any()
        assert status == (4 if n > 3 else 0)
    workers = list(pool._workers)
    assert len(workers) == threads - 1
    pool.close()
    assert not any(t.is_alive() for t in workers)


def test_many_jobs_in_a_row(chunk_fn):
    _, addr = chunk_fn
    pool = NativePool(2, spin=0)     # sleeping workers: every job wakes them through the futex
    out = np.zeros(2, np.int64)
    for _ in range(3000):
        pool.run(addr, [(0, out.ctypes.data), (1, out.ctypes.data)])
    assert list(out) == [3000, 6000]
    workers = list(pool._workers)
    pool.close()
    assert workers and not any(t.is_alive() for t in workers)


def test_rejects_too_many_arguments(chunk_fn):
    _, addr = chunk_fn
    pool = NativePool(2)
    with pytest.raises(ValueError):
        pool.run(addr, [tuple(range(pool.max_args + 1))])
    pool.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_forked_child_gets_its_own_pool(chunk_fn):
    from jit.targets.cpu.native_pool import native_pool
    _, addr = chunk_fn
    out = np.zeros(4, np.int64)
    native_pool(2).run(addr, [(0, out.ctypes.data), (1, out.ctypes.data)])
    pid = os.fork()
    if pid == 0:       # the parent's worker thread does not exist here: a new pool is made
        try:
            native_pool(2).run(addr, [(2, out.ctypes.data), (3, out.ctypes.data)])
            os._exit(0 if list(out) == [1, 2, 3, 4] else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_gemm_split_through_the_native_pool():
    from jit.targets.cpu.gemm import gemm
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 500)).astype(np.float32)
    b = rng.standard_normal((500, 2000)).astype(np.float32)
    one, two = np.empty((64, 2000), np.float32), np.empty((64, 2000), np.float32)
    gemm().matmul(a, b, one, threads=1)
    gemm().matmul(a, b, two, threads=2)
    assert np.array_equal(one, two)
    assert ctypes.sizeof(ctypes.c_void_p) == 8


def test_first_job_right_after_start(chunk_fn, tmp_path):
    """A worker thread that starts after the first job was published still takes part in it
    (it once waited for the generation after that, and the caller waited forever)."""
    _, addr = chunk_fn
    out = np.zeros(2, np.int64)
    disk = DiskCache(tmp_path)          # compiled once, loaded 24 times
    for _ in range(25):
        pool = NativePool(2, disk, spin=0)
        pool.run(addr, [(0, out.ctypes.data), (1, out.ctypes.data)])
        pool.close()
    assert list(out) == [25, 50]



def test_the_default_thread_count_is_at_most_the_cpus(monkeypatch):
    """DLVM_THREADS above the CPUs only time-slices them (OpenBLAS caps its count the same way);
    an explicit count is the caller's."""
    from jit.api import Jit
    from jit.targets.cpu import threads
    monkeypatch.setattr(threads, "available_cpus", lambda: 2)
    monkeypatch.setenv("DLVM_THREADS", "8")
    assert threads.default_threads() == 2
    monkeypatch.setenv("DLVM_THREADS", "1")
    assert threads.default_threads() == 1
    monkeypatch.delenv("DLVM_THREADS")
    assert threads.default_threads() == 2
    assert Jit(threads=5).threads == 5
    monkeypatch.setenv("DLVM_THREADS", "0")           # the CPUs, as the library runtime reads it
    assert threads.default_threads() == 2


def test_a_bad_thread_count_is_a_setting_error_when_the_vm_is_made(monkeypatch):
    # (it was a trap at the first compile, or nothing where no region compiled)
    import dlvmrt
    from isa.builder import ModuleBuilder
    from isa.errors import SettingError
    mb = ModuleBuilder("t")
    f = mb.function("main", [("x", "f32[4]")], ["f32[4]"])
    f.ret(f.exp(f.arg("x")))
    monkeypatch.setenv("DLVM_THREADS", "two")
    with pytest.raises(SettingError, match="DLVM_THREADS must be an integer, got 'two'"):
        dlvmrt.VM(mb.finish(), jit="always").run("main", np.ones(4, np.float32))
