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

from jit.fork_safe import ForkSafeLock


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


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the platform has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def default_threads() -> int:
    """$DLVM_THREADS, at most the CPUs this process may run on (their number without it).

    More threads than CPUs only take turns on them: a kernel's chunks wait for a descheduled
    thread and spinning workers take the core the caller's serial kernels need (MobileNet at
    batch 1, 4 threads on 2 CPUs: 412-526 us, capped at 2: 362-366 us, bench/README.md).
    OpenBLAS caps OPENBLAS_NUM_THREADS the same way. An explicit thread count
    (Jit(threads=...)) is kept. 0 or less means the CPUs, as in the library runtime
    (dlvm_aot_rt.c: default_threads); anything but an integer is a SettingError."""
    env = os.environ.get("DLVM_THREADS")
    if env:
        try:
            n = int(env)
        except ValueError:
            from isa.errors import SettingError
            raise SettingError(f"DLVM_THREADS must be an integer, got {env!r}") from None
        if n > 0:
            return min(n, available_cpus())
    return available_cpus()


_pools: dict[int, WorkerPool] = {}
_pools_lock = ForkSafeLock()


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
        from jit.cache import DiskCache
        _cache = DiskCache(None)
    return _cache


class Job:
    """fn over chunks, prepared once for a call that repeats with the same arguments (a
    model's products and convolutions, call after call): `job()` runs it with no argument
    conversion (the native pool's block is built here, once). After a fork the job builds its
    block again on the child's own pool: the parent's workers do not exist there, and its
    pool's lock may have been held by another thread at the fork."""

    def __init__(self, threads: int, fn, chunks: list[tuple], keep: object = None):
        self.fn, self.chunks, self.keep = fn, chunks, keep
        self.threads = 1 if len(chunks) == 1 else threads
        self._prepare()

    def _prepare(self) -> None:
        self._forks = _forks
        self._native = None
        pool_ = _native_pool(self.threads)
        if pool_ is not None and len(self.chunks[0]) <= pool_.max_args:
            import ctypes
            self._native = (pool_, pool_.job(ctypes.cast(self.fn, ctypes.c_void_p).value, self.chunks))

    def __call__(self) -> int:
        if self._forks != _forks:
            self._prepare()
        if self._native is not None:
            pool_, job = self._native
            return pool_.call_job(job) if self.threads == 1 else pool_.run_job(job)
        if self.threads == 1:
            status = 0
            for c in self.chunks:
                status |= self.fn(*c)
            return status
        return pool(self.threads).run(self.fn, self.chunks)


_forks = 0      # forks this process descends from: a Job made before one prepares again


def _after_fork_in_child() -> None:
    """The parent's Python workers do not exist in the child: it makes pools of its own."""
    global _forks
    _forks += 1
    _pools.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _native_pool(threads: int):
    """The process's native pool with `threads` threads, or None where there is none (not
    Linux, DLVM_NATIVE_POOL=0, or it cannot be built here: then the Python pool serves, and
    it is not tried again)."""
    global _native_ok
    if not _native():
        return None
    from .native_pool import native_pool
    try:
        return native_pool(threads, _default_cache())
    except Exception:       # llvmlite cannot build or load it here
        _native_ok = False
        return None


def run_parallel(threads: int, fn, chunks: list[tuple]) -> int:
    """OR of fn(*chunk) over the chunks, in parallel; `fn` is a ctypes function of a compiled
    kernel (whose arguments are all integers or pointers)."""
    if len(chunks) == 1 or threads <= 1:
        return pool(1).run(fn, chunks)
    native = _native_pool(threads)
    if native is not None and len(chunks[0]) <= native.max_args:
        import ctypes
        return native.run(ctypes.cast(fn, ctypes.c_void_p).value, chunks)
    return pool(threads).run(fn, chunks)


def warm(threads: int) -> None:
    """Build (or load) the native pool a kernel on `threads` threads will run on, ahead of its
    first call: the background compiler does it beside the kernel, so no call waits for it."""
    _native_pool(threads)
