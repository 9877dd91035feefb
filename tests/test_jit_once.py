"""jit/targets/cpu/once.py: the per-process kernel object, and a lock a forked child gets fresh."""
from __future__ import annotations

import os
import signal
import threading

import pytest

from jit.targets.cpu.once import ForkSafeLock, PerProcess


def test_per_process_builds_once():
    made = []
    once = PerProcess(lambda disk: made.append(disk) or object())
    first = once.get(None)
    assert once.get("ignored") is first and made == [None]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
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
        pid = os.fork()
        if pid == 0:
            signal.alarm(10)        # a lock left locked would block here until killed
            with lock:
                pass
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    finally:
        release.set()
        t.join()
