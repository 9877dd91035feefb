"""Tensors that live on a device, and the explicit, counted copies between host and device.

Host values stay plain NumPy arrays everywhere in the VM; a value on a GPU (or the simulated
device) is a `DeviceTensor`: its device, dtype, shape and memory block. Nothing converts
implicitly: `to_device` and `to_host` are the only copies, and each is counted (calls and bytes,
per direction) in the device's `TransferStats`, which the profiler and the tests read.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .memory import Block, MemoryPool, RawMemory


@dataclass
class TransferStats:
    h2d: int = 0
    h2d_bytes: int = 0
    d2h: int = 0
    d2h_bytes: int = 0

    def total(self) -> int:
        return self.h2d + self.d2h


@dataclass(eq=False)
class DeviceTensor:
    """A C-contiguous tensor in device memory. Releasing it (or dropping the last reference)
    returns its block to the device's pool."""
    device: Any                  # dlvmrt.devices.Device
    dtype: np.dtype
    shape: tuple[int, ...]
    block: Block
    _finalizer: Any = field(default=None, repr=False)

    @property
    def handle(self) -> int:
        return self.block.handle

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def release(self) -> None:
        if self._finalizer is not None and self._finalizer.alive:
            self._finalizer()

    def numpy(self) -> np.ndarray:
        return to_host(self)


def empty(device, dtype, shape: tuple[int, ...]) -> DeviceTensor:
    """An uninitialized tensor on `device` (no transfer)."""
    dtype = np.dtype(dtype)
    shape = tuple(int(s) for s in shape)
    pool: MemoryPool = device.pool
    block = pool.alloc(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
    t = DeviceTensor(device, dtype, shape, block)
    t._finalizer = weakref.finalize(t, pool.release, block)
    return t


def to_device(array: np.ndarray, device) -> DeviceTensor:
    """Copy a host array to `device` (one counted host-to-device transfer)."""
    a = np.asarray(array, order="C")     # ascontiguousarray would make a 0-d array 1-d
    t = empty(device, a.dtype, a.shape)
    raw: RawMemory = device.pool.raw
    if a.nbytes:
        raw.upload(t.handle, a)
    stats: TransferStats = device.transfers
    stats.h2d += 1
    stats.h2d_bytes += a.nbytes
    return t


def to_host(t: DeviceTensor) -> np.ndarray:
    """Copy a device tensor to a new host array (one counted device-to-host transfer)."""
    out = np.empty(t.shape, t.dtype)
    if out.nbytes:
        t.device.pool.raw.download(out, t.handle)
    stats: TransferStats = t.device.transfers
    stats.d2h += 1
    stats.d2h_bytes += out.nbytes
    return out


def where(value: Any) -> str:
    """The device name a VM value lives on: "cpu" for host values."""
    return value.device.name if isinstance(value, DeviceTensor) else "cpu"
