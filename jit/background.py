"""The background compiler: one thread per process that runs compile tasks while the interpreter
keeps running the code they will replace (HotSpot's and V8's concurrent compilers are the model).

    compiler = background.compiler()
    if not compiler.pending(key):
        compiler.submit(key, task)     # task() runs later on the compiler thread
    compiler.wait(timeout)             # True once nothing is queued or running

A task installs its own result (a runner's variant, a block's new steps) when it finishes and
records its own failures: the compiler only runs tasks, one at a time, in the order they came,
except that a task queued `last` (a whole program's native library) waits for the others, up
to LAST_MAX_WAIT_S.
Keys deduplicate: a region that keeps running interpreted while its kernel compiles asks again on
every call, and gets the one task already queued.

Processes: the thread is a daemon, so a compile in flight never keeps a process alive; at exit
queued tasks are dropped, the C compilers a task started are killed (`exit_hooks`), and exit waits
a few seconds for the task in flight to end, then for its LLVM call, so neither LLVM nor the
interpreter is torn down under it. A forked child starts with an empty
compiler (the parent's thread does not exist there); its tasks run on a thread of its own.
"""
from __future__ import annotations

import atexit
import collections
import os
import sys
import threading
import time
from collections.abc import Callable, Hashable

# the longest interpreter exit waits for the compile task in flight (its Python half: lowering
# takes milliseconds to a second or two; its subprocesses are killed first), then for the task's
# LLVM call (one kernel's optimization or code generation: milliseconds to a few seconds)
EXIT_TASK_WAIT_S = 5.0
EXIT_LLVM_WAIT_S = 60.0
# the GIL's switch interval while compiles run (Python's default is 5 ms)
SWITCH_INTERVAL_S = 0.0005
# the longest a task queued last waits while other tasks keep coming (a process that makes VM
# after VM would otherwise never build the first one's library)
LAST_MAX_WAIT_S = 3.0


class BackgroundCompiler:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._queue: collections.deque[tuple[Hashable, Callable[[], None]]] = collections.deque()
        # tasks that wait for every other queued one (a whole program's native library: seconds
        # of C compiling, while a region's kernel takes tens of milliseconds and the program
        # runs interpreted until it is in)
        self._later: collections.deque[tuple[Hashable, Callable[[], None]]] = collections.deque()
        self._later_since: collections.deque[float] = collections.deque()   # their submit times
        self._keys: set[Hashable] = set()      # queued or running
        self._running = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self.completed = 0
        self._saved_switch: float | None = None
        self.task_lock = threading.Lock()      # held while a task runs

    @property
    def closed(self) -> bool:
        """Whether it takes no more tasks (the process is exiting)."""
        return self._closed

    def pending(self, key: Hashable) -> bool:
        """Whether a task with this key is queued or running."""
        with self._cond:
            return key in self._keys

    def submit(self, key: Hashable, task: Callable[[], None], last: bool = False) -> bool:
        """Queue `task` unless one with `key` is queued or running; False after shutdown (the
        caller keeps interpreting). `last`: it runs after every task not so marked, those
        queued later included."""
        with self._cond:
            if self._closed or key in self._keys:
                return False
            self._keys.add(key)
            if last:
                self._later.append((key, task))
                self._later_since.append(time.monotonic())
            else:
                self._queue.append((key, task))
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="dlvm-compiler", daemon=True)
                self._thread.start()
            self._cond.notify_all()
            return True

    def idle(self) -> bool:
        with self._cond:
            return not self._keys

    def wait(self, timeout: float | None = None) -> bool:
        """Block until every queued task has finished (tasks queued meanwhile included); False
        when `timeout` seconds passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._keys:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._later and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                if self._later and (not self._queue or
                                    time.monotonic() - self._later_since[0] > LAST_MAX_WAIT_S):
                    key, task = self._later.popleft()
                    self._later_since.popleft()
                else:
                    key, task = self._queue.popleft()
            self.task_lock.acquire()    # (a fork waits for the task: _before_fork)
            with self._cond:
                self._running = True
                if self._saved_switch is None:
                    # the compile's Python half (lowering) holds the GIL in turns with the
                    # interpreter: short turns, so a running program waits a fraction of a
                    # millisecond for it, not the default 5 ms
                    self._saved_switch = sys.getswitchinterval()
                    sys.setswitchinterval(min(self._saved_switch, SWITCH_INTERVAL_S))
                    _busy(True)
            try:
                task()
            except BaseException:    # noqa: BLE001 - tasks record their own failures; never die
                pass
            finally:
                self.task_lock.release()
                with self._cond:
                    self._running = False
                    self._keys.discard(key)
                    self.completed += 1
                    if not self._queue and not self._later and self._saved_switch is not None:
                        sys.setswitchinterval(self._saved_switch)
                        self._saved_switch = None
                        _busy(False)
                    self._cond.notify_all()

    def close(self) -> None:
        """Drop queued tasks and stop taking new ones (the task running finishes, or is parked
        by _at_exit)."""
        with self._cond:
            self._closed = True
            for key, _ in [*self._queue, *self._later]:
                self._keys.discard(key)
            self._queue.clear()
            self._later.clear()
            self._later_since.clear()
            self._cond.notify_all()


_compiler = BackgroundCompiler()


def compiler() -> BackgroundCompiler:
    """This process's background compiler."""
    return _compiler


def _llvm_lock():
    """LLVM's lock (jit/llvm/target.py), where llvmlite is loaded or being loaded at all."""
    if "jit.llvm.target" not in sys.modules:
        return None
    from .llvm import target  # (waits for an import in progress on the compiler thread)
    return target._lock


_held_over_fork: list = []
# called in a forked child, with this process's (new) compiler: a VM re-arms the tier-ups that
# were queued in the parent, which the child's compiler never saw
child_hooks: list[Callable[[], None]] = []
# called at exit before the wait for the task in flight: what a task waits on that exit makes
# useless (jit/targets/aot/build.py kills the C compiler of a native library still building)
exit_hooks: list[Callable[[], None]] = []
# called with True when the compiler starts on a task after being idle, and with False when its
# queue is empty again (jit/targets/cpu/blas_threads.py keeps NumPy's OpenBLAS to one thread
# meanwhile: its threads and the compile shared two cores with the interpreter's products)
busy_hooks: list[Callable[[bool], None]] = []


def _busy(now: bool) -> None:
    for hook in list(busy_hooks):
        try:
            hook(now)
        except Exception:  # noqa: BLE001 - a hook's failure must not stop the compiler
            pass


# held by a thread importing a module of ours off the caller's thread (jit.api's
# prepare_native_runtime): a fork waits for the import, whose module lock a child would find held
import_guard = threading.Lock()


def _before_fork() -> None:
    # a fork in the middle of a task would give the child a VM, a runner or LLVM half-way
    # through a change, and their locks held forever: the fork waits for the task in flight
    # (then for another thread's compile: LLVM's own lock, and for an import in progress)
    _compiler.task_lock.acquire()
    _held_over_fork.append(_compiler.task_lock)
    import_guard.acquire()
    _held_over_fork.append(import_guard)
    lock = _llvm_lock()
    if lock is not None:
        lock.acquire()
        _held_over_fork.append(lock)


def _after_fork_in_parent() -> None:
    while _held_over_fork:
        _held_over_fork.pop().release()


def _after_fork_in_child() -> None:
    global _compiler
    _after_fork_in_parent()
    _compiler = BackgroundCompiler()
    for hook in list(child_hooks):
        hook()


def _at_exit() -> None:
    _compiler.close()
    for hook in list(exit_hooks):
        try:
            hook()
        except Exception:  # noqa: BLE001 - exit goes on whatever a hook meets
            pass
    # A task still running when the interpreter finalizes is killed (pthread_exit) the next
    # time it takes the GIL; with C++ frames on its stack (a garbage collection on this thread
    # freeing another library's objects: torch's FX graphs release the GIL in their
    # destructors) that unwinding aborts the process ("terminate called without an active
    # exception", 2 exits in 15 here). So exit waits for the task to end; the thread then
    # leaves its loop (close() woke it).
    thread = _compiler._thread
    if thread is not None and thread is not threading.current_thread():
        thread.join(EXIT_TASK_WAIT_S)
    # Past that bound a compile still running would be inside LLVM while LLVM's static data is
    # destroyed under it (an assertion or a segfault in the code generator): exit waits for
    # the LLVM call in flight and then keeps LLVM's lock for good, so the task can only go on
    # in Python or block on the lock.
    lock = _llvm_lock()
    if lock is not None:
        lock.acquire(timeout=EXIT_LLVM_WAIT_S)


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                    after_in_child=_after_fork_in_child)
atexit.register(_at_exit)
