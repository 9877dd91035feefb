"""Device memory: a reusable pool per device over a raw allocator, with size-class free lists.

Allocating device memory is slow (cuMemAlloc synchronizes) and a VM loop asks for the same
sizes again and again, so freed blocks are kept on a free list of their size class and handed
out again. Size classes are powers of two from 512 bytes up to 1 MiB and multiples of 1 MiB
above, so a block wastes at most half its size when small and under 1 MiB when large.

Raw allocators (the `RawMemory` protocol, handles are ints):
- `HostMemory`: host buffers standing in for a device (the simulated device of tests); handles
  are the buffers' real addresses, so host code (the emulated kernels) can use them directly.
- a target's device memory (jit/targets/<name>/: e.g. CUDA's driver allocations), handed over
  by the target registry with the device.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

MIN_CLASS = 512
LARGE = 1 << 20


class RawMemory(Protocol):
    def alloc(self, nbytes: int) -> int: ...
    def free(self, handle: int) -> None: ...
    def upload(self, handle: int, array: np.ndarray) -> None: ...
    def download(self, array: np.ndarray, handle: int) -> None: ...
    def zero(self, handle: int, nbytes: int) -> None: ...


def size_class(nbytes: int) -> int:
    """The block size that serves a request of `nbytes`."""
    if nbytes <= MIN_CLASS:
        return MIN_CLASS
    if nbytes <= LARGE:
        return 1 << (nbytes - 1).bit_length()
    return -(-nbytes // LARGE) * LARGE


class HostMemory:
    """Host buffers as device memory (for the simulated device)."""

    def __init__(self) -> None:
        self._bufs: dict[int, np.ndarray] = {}

    def alloc(self, nbytes: int) -> int:
        buf = np.empty(max(nbytes, 1) + 64, np.uint8)
        addr = buf.ctypes.data
        addr += (-addr) % 64           # aligned like cudaMalloc's blocks (256 there; 64 is enough here)
        self._bufs[addr] = buf
        return addr

    def view(self, handle: int, nbytes: int) -> np.ndarray:
        buf = self._bufs[handle]
        start = handle - buf.ctypes.data
        return buf[start:start + nbytes]

    def free(self, handle: int) -> None:
        del self._bufs[handle]

    def upload(self, handle: int, array: np.ndarray) -> None:
        a = np.ascontiguousarray(array)
        self.view(handle, a.nbytes)[:] = a.reshape(-1).view(np.uint8)

    def download(self, array: np.ndarray, handle: int) -> None:
        array.reshape(-1).view(np.uint8)[:] = self.view(handle, array.nbytes)

    def zero(self, handle: int, nbytes: int) -> None:
        self.view(handle, nbytes)[:] = 0


@dataclass
class Block:
    handle: int
    size: int            # the size class (bytes actually reserved)


@dataclass
class PoolStats:
    raw_allocs: int = 0      # calls into the raw allocator
    reuses: int = 0          # requests served from a free list
    in_use: int = 0          # bytes handed out and not yet released
    cached: int = 0          # bytes on the free lists
    peak: int = 0            # largest in_use + cached


@dataclass
class MemoryPool:
    """Size-class free lists over one device's raw allocator. Not thread-safe (one VM)."""
    raw: RawMemory
    limit: int | None = None                 # bytes reserved at most; None: no limit
    stats: PoolStats = field(default_factory=PoolStats)
    _free: dict[int, list[int]] = field(default_factory=dict)

    def alloc(self, nbytes: int) -> Block:
        size = size_class(nbytes)
        free = self._free.get(size)
        if free:
            self.stats.reuses += 1
            self.stats.cached -= size
            self.stats.in_use += size
            return Block(free.pop(), size)
        if self.limit is not None and self.stats.in_use + self.stats.cached + size > self.limit:
            self.trim()
            if self.stats.in_use + size > self.limit:
                raise MemoryError(f"device memory pool limit of {self.limit} bytes reached "
                                  f"({self.stats.in_use} in use, {size} requested)")
        handle = self.raw.alloc(size)
        self.stats.raw_allocs += 1
        self.stats.in_use += size
        self.stats.peak = max(self.stats.peak, self.stats.in_use + self.stats.cached)
        return Block(handle, size)

    def release(self, block: Block) -> None:
        """Give `block` back; it stays reserved for the next request of its class."""
        self._free.setdefault(block.size, []).append(block.handle)
        self.stats.in_use -= block.size
        self.stats.cached += block.size

    def trim(self) -> int:
        """Return every cached block to the raw allocator; the bytes freed."""
        freed = 0
        for size, handles in self._free.items():
            for h in handles:
                self.raw.free(h)
                freed += size
            handles.clear()
        self.stats.cached -= freed
        return freed
