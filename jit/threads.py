"""Worker threads that run one kernel on chunks of rows in parallel.

`run_parallel` hands compiled kernels to the native pool (jit/native_pool.py: a hand-off costs a
few microseconds) where the platform has one, else to the Python pool below; Python callables
(conv2d's patch segments) always go to the Python pool.

ctypes releases the GIL for the duration of a foreign call, so Python threads that each call the
compiled kernel on their own row range run truly in parallel. Handing work to a sleeping thread
costs tens of microseconds, so the runner only splits kernels whose estimated time is well above
that (see RegionRunner); small kernels run on the calling thread alone.
"""
from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable


class WorkerPool:
    def __init__(self, threads: int):
        self.threads = max(1, threads)
        self._tasks: list[queue.SimpleQueue] = []
        self._done: queue.SimpleQueue = queue.SimpleQueue()
        for i in range(self.threads - 1):
            q: queue.SimpleQueue = queue.SimpleQueue()
            t = threading.Thread(target=self._work, args=(q,), name=f"dlvm-jit-{i + 1}", daemon=True)
            t.start()
            self._tasks.append(q)
        self._lock = threading.Lock()    # one parallel call at a time uses the workers

    def _work(self, q: queue.SimpleQueue) -> None:
        while True:
            fn, args = q.get()
            try:
                self._done.put((fn(*args), None))
            except BaseException as e:    # reported to the caller, never lost in a thread
                self._done.put((0, e))

    def run(self, fn: Callable[..., int], chunks: list[tuple]) -> int:
        """Call fn(*chunk) for every chunk, chunk 0 on this thread; OR of the results."""
        if len(chunks) == 1 or not self._tasks:
            status = 0
            for c in chunks:
                status |= fn(*c)
            return status
        with self._lock:
            for q, c in zip(self._tasks, chunks[1:]):
                q.put((fn, c))
            status = fn(*chunks[0])
            error = None
            for _ in chunks[1:]:
                s, e = self._done.get()
                status |= s
                error = error or e
        if error is not None:
            raise error
        return status


def default_threads() -> int:
    env = os.environ.get("DLVM_THREADS")
    if env:
        return max(1, int(env))
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


_pools: dict[int, WorkerPool] = {}
_pools_lock = threading.Lock()


def pool(threads: int) -> WorkerPool:
    """The process-wide pool with `threads` threads (created on first use)."""
    with _pools_lock:
        if threads not in _pools:
            _pools[threads] = WorkerPool(threads)
        return _pools[threads]


_native_ok: bool | None = None


def _native() -> bool:
    global _native_ok
    if _native_ok is None:
        from .native_pool import available
        _native_ok = os.environ.get("DLVM_NATIVE_POOL", "1") != "0" and available()
    return _native_ok


def run_parallel(threads: int, fn, chunks: list[tuple]) -> int:
    """OR of fn(*chunk) over the chunks, in parallel; `fn` is a ctypes function of a compiled
    kernel (whose arguments are all integers or pointers)."""
    if len(chunks) == 1 or threads <= 1:
        return pool(1).run(fn, chunks)
    global _native_ok
    if _native():
        import ctypes

        from .cache import DiskCache
        from .native_pool import native_pool
        try:
            native = native_pool(threads, DiskCache(None))     # the default code cache
        except Exception:       # llvmlite cannot build or load it here: the Python pool serves
            _native_ok = False
            return pool(threads).run(fn, chunks)
        if len(chunks[0]) <= native.max_args:    # else: more arguments than its trampolines take
            return native.run(ctypes.cast(fn, ctypes.c_void_p).value, chunks)
    return pool(threads).run(fn, chunks)
