"""NumPy's OpenBLAS kept to one thread for the small products the JIT leaves to it.

After each call, OpenBLAS's worker threads busy-wait for the next one (for milliseconds). A model
run with the JIT makes small products through NumPy (attention scores, a classifier's
matrix-vector product) between its own multi-threaded kernels: the spinning threads then take
the cores the JIT's pool needs, and those of anything else the process runs next. Measured on
ResNet-18, 2 threads: dlvm 27.6 -> 19.7 ms and onnxruntime, run in turn, 12.3 -> 10.0 ms with
OpenBLAS at one thread. So the region runner calls such products inside `limited(1)`
(`Jit.blas_threads`), which restores the caller's setting afterwards; large products (f64,
batched) keep OpenBLAS's threads, where they pay.

The library is found among the loaded shared objects (NumPy's wheels bundle
`libscipy_openblas64_`); where there is none (another BLAS, another OS) this does nothing.
"""
from __future__ import annotations

import ctypes
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from jit.fork_safe import ForkSafeLock

_NAMES = ("scipy_openblas_{}_num_threads64_", "scipy_openblas_{}_num_threads",
          "openblas_{}_num_threads64_", "openblas_{}_num_threads")

_lock = ForkSafeLock()
_found: tuple | None = None
_searched = False
# who is inside a `limited` block now, and how deeply: a thread (its ident) or the background
# compiler's busy spell ("compiling", entered and left on different threads). A forked child
# keeps only the forking thread's blocks: the others' threads do not exist there.
_holders: dict[object, int] = {}
_saved: int | None = None   # the count to restore when the last one leaves


def _openblas() -> tuple | None:
    """(get, set) of the loaded OpenBLAS, or None."""
    global _found, _searched
    if _searched:
        return _found
    _searched = True
    try:
        import numpy  # noqa: F401  (loads its BLAS)
        with open("/proc/self/maps") as f:
            paths = sorted(set(re.findall(r"(/\S*openblas\S*\.so\S*)", f.read())))
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for pattern in _NAMES:
            get, set_ = (getattr(lib, pattern.format(w), None) for w in ("get", "set"))
            if get is not None and set_ is not None:
                get.restype, get.argtypes = ctypes.c_int, []
                set_.restype, set_.argtypes = None, [ctypes.c_int]
                _found = (get, set_)
                return _found
    return None


def current() -> int | None:
    """OpenBLAS's thread count now, or None where it is not found."""
    lib = _openblas()
    return lib[0]() if lib is not None else None


@contextmanager
def limited(threads: int | None) -> Iterator[None]:
    """OpenBLAS at no more than `threads` threads inside the block (None: unchanged). Nested
    and concurrent blocks share one limit: the first to enter sets it, the last to leave
    restores what was there before."""
    lib = _openblas() if threads is not None else None
    if lib is None:
        yield
        return
    me = threading.get_ident()
    _enter(me, threads, lib)
    try:
        yield
    finally:
        _leave(me, lib)


def _enter(holder: object, threads: int, lib: tuple) -> None:
    global _saved
    get, set_ = lib
    with _lock:
        if not _holders:
            before = get()
            _saved = before if before > threads else None
            if _saved is not None:
                set_(threads)
        _holders[holder] = _holders.get(holder, 0) + 1


def _leave(holder: object, lib: tuple) -> None:
    global _saved
    with _lock:
        _forget(holder)
        if not _holders and _saved is not None:
            lib[1](_saved)
            _saved = None


def _forget(holder: object) -> None:
    left = _holders.pop(holder, 0) - 1
    if left > 0:
        _holders[holder] = left


# While the background compiler works, OpenBLAS keeps to one thread: the compile takes a core,
# and the interpreter's products (the calls before a program's kernels are in) ran with two
# OpenBLAS threads fighting it for the other. MiniLM over varying lengths, calls 11-40 with
# default settings: 7-12 s -> 1.9 s (onnxruntime: 1 s).
_COMPILING = "compiling"


def _while_compiling(busy: bool) -> None:
    lib = _openblas()
    if lib is None or busy == (_COMPILING in _holders):
        return
    if busy:
        _enter(_COMPILING, 1, lib)
    else:
        _leave(_COMPILING, lib)


def _after_fork_in_child() -> None:
    # the blocks of threads other than the forking one never end here (their threads are gone,
    # and the child's compiler is a new one): drop them, restoring OpenBLAS's count if none is
    # left (a child of a process that forked mid-compile ran its products on one thread)
    global _saved
    me = threading.get_ident()
    with _lock:         # (renewed in the child by then: jit.fork_safe registered first)
        for holder in [h for h in _holders if h != me]:
            del _holders[holder]
        if not _holders and _saved is not None:
            lib = _openblas()
            if lib is not None:
                lib[1](_saved)
            _saved = None


def _register() -> None:
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork_in_child)
    from jit import background
    if _while_compiling not in background.busy_hooks:
        background.busy_hooks.append(_while_compiling)


_register()
