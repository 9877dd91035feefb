"""A lock that a forked child gets free.

A plain `threading.Lock` that another thread holds when a process forks stays locked in the
child forever: that thread does not exist there. dlvm's process-wide locks are short (a cache
insert, a counter, OpenBLAS's thread count), but a VM shared by threads can be in any of them
when the application forks, and the child then hung on its first call (the background
compiler's thread, leaving OpenBLAS's one-thread block as a task ended, held one).

Every `ForkSafeLock` is renewed in the child, unless the thread that forked holds it: that
thread exists in the child and will release it. Acquiring costs what a plain lock's does plus
noting the owner.
"""
from __future__ import annotations

import os
import threading
import weakref

_all: weakref.WeakSet = weakref.WeakSet()


class ForkSafeLock:
    """`threading.Lock`'s interface (`with`, acquire, release, locked); free in a forked child
    unless the forking thread held it."""

    __slots__ = ("_lock", "_owner", "__weakref__")

    def __init__(self):
        self._lock = threading.Lock()
        self._owner = 0
        _all.add(self)

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self._lock.acquire(blocking, timeout):
            self._owner = threading.get_ident()
            return True
        return False

    def release(self) -> None:
        self._owner = 0
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _renew_in_child() -> None:
    me = threading.get_ident()      # the forking thread keeps its ident in the child
    for lock in list(_all):
        if lock._lock.locked() and lock._owner != me:
            lock._lock, lock._owner = threading.Lock(), 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_in_child)
