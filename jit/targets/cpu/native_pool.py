"""The native worker pool (jit/llvm/pool_kernel.py) seen from Python.

`NativePool(threads).run(address, chunks)` calls the compiled function at `address` once per
chunk (a tuple of int / None arguments) across the calling thread and threads - 1 workers, and
returns the OR of the results. The workers are Python threads that entered the native wait loop
once and stay there: a hand-off is a few atomic operations and a futex wake, not a queue, a
Python wake-up and the GIL (tens of microseconds, jit/threads.py's WorkerPool). The caller runs
chunks too and returns when all are done; it never waits for a worker to wake up (a sleeping
thread takes 40-140 us to wake on this VM): a late worker's chunks are the caller's.

After each job the workers spin for DLVM_SPIN rounds of the CPU's pause instruction (default
2000, some tens of microseconds) before sleeping, so a model's back-to-back kernels find them
awake; DLVM_SPIN=0 makes them sleep at once and never take CPU time from anything else.
"""
from __future__ import annotations

import ctypes
import os
import threading

import numpy as np

from jit.cache import DiskCache
from jit.fork_safe import ForkSafeLock

from .once import compile_or_load

DEFAULT_SPIN = 2000


def available() -> bool:
    from jit.llvm import target
    from jit.targets.cpu.pool_kernel import supported
    return supported(target.host().triple)


class NativePool:
    def __init__(self, threads: int, disk: DiskCache | None = None, spin: int | None = None):
        from jit.llvm import target
        from jit.targets.cpu.pool_kernel import MAX_ARGS, STATE_BYTES, pool_module
        self.threads = max(1, threads)
        self.max_args = MAX_ARGS
        self._loaded, _ = compile_or_load(str(pool_module(target.host().triple)), "pool", disk)
        i64, ptr = ctypes.c_int64, ctypes.c_void_p
        self._run = ctypes.CFUNCTYPE(ctypes.c_int32, ptr, ptr, ptr, i64, i64, i64)(
            self._loaded.address("dlvm_pool_run"))
        self._worker = ctypes.CFUNCTYPE(None, ptr, i64)(self._loaded.address("dlvm_pool_worker"))
        self._tramps = [0] + [self._loaded.address(f"dlvm_tramp_{n}") for n in range(1, MAX_ARGS + 1)]
        raw = np.zeros(STATE_BYTES + 64, np.uint8)
        off = -raw.ctypes.data % 64
        self._state_buf = raw
        self._state = raw[off:off + STATE_BYTES].ctypes.data
        self.spin = spin if spin is not None else int(os.environ.get("DLVM_SPIN", DEFAULT_SPIN))
        self.pid = os.getpid()
        self._quit = ctypes.CFUNCTYPE(None, ptr)(self._loaded.address("dlvm_pool_quit"))
        self._lock = threading.Lock()
        self._direct: dict[int, object] = {}
        self._workers = [threading.Thread(target=self._worker, args=(self._state, self.spin),
                                          name=f"dlvm-native-{i + 1}", daemon=True)
                         for i in range(self.threads - 1)]
        for t in self._workers:
            t.start()
        # the workers run this object's code and read its state block until they return:
        # it must outlive them, so only close() (which joins them) lets it go
        _alive.append(self)

    def close(self) -> None:
        """Stop and join the workers; the pool cannot run jobs afterwards."""
        with self._lock:
            if self._workers and self.pid == os.getpid():
                self._quit(self._state)
                for t in self._workers:
                    t.join()
            self._workers = []
            self.threads = 1
        if self in _alive:
            _alive.remove(self)
        with _pools_lock:       # native_pool() makes a new one for this thread count
            for n, p in list(_pools.items()):
                if p is self:
                    del _pools[n]

    def run(self, address: int, chunks: list[tuple]) -> int:
        """OR of address(*chunk) over the chunks, run in parallel."""
        return self.run_job(self.job(address, chunks))

    def job(self, address: int, chunks: list[tuple]) -> tuple:
        """The job's argument block, built once for calls that repeat (jit/gemm.py)."""
        n = len(chunks[0])
        if n > self.max_args or any(len(c) != n for c in chunks):
            raise ValueError(f"native pool chunks take 1..{self.max_args} arguments, all alike")
        block = np.empty(1 + n * len(chunks), np.int64)
        block[0] = address
        block[1:] = [0 if a is None else int(a) for c in chunks for a in c]
        return block, block.ctypes.data, self._tramps[n], len(chunks)

    def call_job(self, job: tuple) -> int:
        """A job's chunks one after the other on the calling thread (a one-chunk job, or a
        pool of one thread), straight through the trampoline: no pool state, no lock, two
        ctypes arguments instead of the kernel's twenty."""
        _, address, tramp, chunks = job
        call = self._direct.get(tramp)
        if call is None:
            call = self._direct[tramp] = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p,
                                                          ctypes.c_int64)(tramp)
        status = 0
        for c in range(chunks):
            status |= call(address, c)
        return status

    def run_job(self, job: tuple) -> int:
        _, address, tramp, chunks = job
        with self._lock:      # one job at a time: the state block holds one
            return self._run(self._state, tramp, address, chunks, self.threads - 1, self.spin)


_alive: list[NativePool] = []
_pools: dict[int, NativePool] = {}
_pools_lock = ForkSafeLock()   # native_pool() runs in a forked child too


def native_pool(threads: int, disk: DiskCache | None = None) -> NativePool:
    """The process-wide native pool with `threads` threads (a new one after a fork: the
    parent's workers do not exist in the child)."""
    with _pools_lock:
        p = _pools.get(threads)
        if p is None or p.pid != os.getpid():
            p = _pools[threads] = NativePool(threads, disk)
        return p
