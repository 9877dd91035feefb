"""A persistent pool of worker threads that run one kernel on chunks of rows in parallel.

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
