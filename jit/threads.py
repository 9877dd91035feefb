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


_cache = None


def _default_cache():
    """The default code cache (made once: its directory lookup costs ~10 us, per kernel call)."""
    global _cache
    if _cache is None:
        from .cache import DiskCache
        _cache = DiskCache(None)
    return _cache


class Job:
    """fn over chunks, prepared once for a call that repeats with the same arguments (a
    model's products and convolutions, call after call): `job()` runs it with no argument
    conversion (the native pool's block is built here, once)."""

    def __init__(self, threads: int, fn, chunks: list[tuple], keep: object = None):
        self.fn, self.chunks, self.keep = fn, chunks, keep
        self.threads = 1 if len(chunks) == 1 else threads
        self._native = None
        if _native():
            import ctypes

            from .native_pool import native_pool
            try:
                pool_ = native_pool(self.threads, _default_cache())
            except Exception:
                pool_ = None
            if pool_ is not None and len(chunks[0]) <= pool_.max_args:
                self._native = (pool_, pool_.job(ctypes.cast(fn, ctypes.c_void_p).value, chunks))

    def __call__(self) -> int:
        if self._native is not None:
            pool_, job = self._native
            return pool_.call_job(job) if self.threads == 1 else pool_.run_job(job)
        if self.threads == 1:
            status = 0
            for c in self.chunks:
                status |= self.fn(*c)
            return status
        return run_parallel(self.threads, self.fn, self.chunks)


def run_parallel(threads: int, fn, chunks: list[tuple]) -> int:
    """OR of fn(*chunk) over the chunks, in parallel; `fn` is a ctypes function of a compiled
    kernel (whose arguments are all integers or pointers)."""
    if len(chunks) == 1 or threads <= 1:
        return pool(1).run(fn, chunks)
    global _native_ok
    if _native():
        import ctypes

        from .native_pool import native_pool
        try:
            native = native_pool(threads, _default_cache())
        except Exception:       # llvmlite cannot build or load it here: the Python pool serves
            _native_ok = False
            return pool(threads).run(fn, chunks)
        if len(chunks[0]) <= native.max_args:    # else: more arguments than its trampolines take
            return native.run(ctypes.cast(fn, ctypes.c_void_p).value, chunks)
    return pool(threads).run(fn, chunks)
