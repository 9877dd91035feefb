"""Helper kernels built once per process (the GEMM, the max pool, the worker pool): their
object code compiled or loaded from the disk code cache, and the one object made thread-safely."""
from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from jit.cache import DiskCache, cache_key
from jit.fork_safe import ForkSafeLock

T = TypeVar("T")


class PerProcess(Generic[T]):
    """`get(disk)` builds the object with `make(disk)` on first use (compiled, or loaded from
    the disk code cache) and returns the same one afterwards, from any thread."""

    def __init__(self, make: Callable[[DiskCache | None], T]):
        self._make = make
        self._lock = ForkSafeLock()
        self.instance: T | None = None

    def get(self, disk: DiskCache | None = None) -> T:
        with self._lock:
            if self.instance is None:
                self.instance = self._make(disk)
            return self.instance


def compile_or_load(module_text: str, what: str, disk: DiskCache | None):
    """(loaded object code, "disk" or "compiled") of an LLVM module at O3; `what` names it in
    the cache key (with the module's text and the host)."""
    from jit.llvm import target
    key = cache_key(module_text, what, target.host().key())
    found = disk.get(key) if disk is not None else None
    if found is not None:
        return target.LoadedObject(found[0]), "disk"
    obj = target.emit_object(target.optimize(module_text, 3), 3)
    if disk is not None:
        disk.put(key, obj, 0)
    return target.LoadedObject(obj), "compiled"
