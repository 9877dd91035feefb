"""jit/fork_safe.py: a lock another thread held at a fork is free in the child; one the forking
thread held stays its own."""
from __future__ import annotations

import os
import signal
import threading

import pytest

from jit.fork_safe import ForkSafeLock

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _in_child(body) -> int:
    """Run body() in a forked child (killed after 10 s: a lock left locked would hang it);
    its exit status."""
    pid = os.fork()
    if pid == 0:
        signal.alarm(10)
        try:
            os._exit(0 if body() else 3)
        except BaseException:       # noqa: BLE001 - report, never return into pytest
            os._exit(4)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_a_lock_held_by_another_thread_at_a_fork_is_free_in_the_child():
    lock, held, release = ForkSafeLock(), threading.Event(), threading.Event()

    def hold():
        with lock:
            held.set()
            release.wait(20)
    t = threading.Thread(target=hold)
    t.start()
    try:
        assert held.wait(20)

        def child() -> bool:
            with lock:
                return lock.locked()
        assert _in_child(child) == 0
        assert lock.locked()            # the parent's holder still has it
    finally:
        release.set()
        t.join()
    assert not lock.locked()


def test_a_lock_the_forking_thread_holds_stays_held_by_it_in_the_child():
    lock = ForkSafeLock()
    with lock:
        def child() -> bool:
            ok = lock.locked() and not lock.acquire(timeout=0.05)
            lock.release()              # its own: released as the `with` would
            return ok and lock.acquire(timeout=1)
        assert _in_child(child) == 0
    assert not lock.locked()
