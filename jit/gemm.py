"""The JIT's f32 matrix product (jit/llvm/gemm_kernel.py) as a NumPy-level function.

`Gemm.matmul(a, b, out)` computes out = a @ b for 2-D f32 operands of any strides; large
products are split across the worker pool (ctypes releases the GIL, so each thread runs the
kernel on its own block of columns, or of rows when the product is narrow, with its own packing
buffers). The kernel is compiled once per process, or loaded from the disk code cache.

`use_for(m, n, k)` says where it pays: on small products NumPy's BLAS call is cheaper than the
kernel's packing (bench/gemm.py measures both side by side).
"""
from __future__ import annotations

import ctypes
import threading
import time
from typing import TYPE_CHECKING

import numpy as np

from .cache import DiskCache, cache_key

if TYPE_CHECKING:
    from .llvm.gemm_kernel import GemmShape

# below this many multiply-adds a product stays with NumPy (a packed kernel's fixed costs win
# nothing on a 32 x 32 x 32 attention score); above _PARALLEL_MACS it is split across threads
_MIN_MACS = 64 * 64 * 64
_PARALLEL_MACS = 24 * 1024 * 1024


class Gemm:
    """The compiled kernel and per-thread packing buffers."""

    def __init__(self, disk: DiskCache | None, shape: GemmShape | None = None):
        from .llvm import target
        from .llvm.gemm_kernel import FUNC_NAME, gemm_module, shape_for
        self.shape = shape or shape_for(target.host().features)
        t0 = time.perf_counter()
        module = gemm_module(self.shape)
        key = cache_key(str(module), "gemm " + self.shape.text(), target.host().key())
        found = disk.get(key) if disk is not None else None
        if found is not None:
            obj, self.source = found[0], "disk"
        else:
            obj = target.emit_object(target.optimize(str(module), 3), 3)
            self.source = "compiled"
            if disk is not None:
                disk.put(key, obj, 0)
        self._loaded = target.LoadedObject(obj)
        i64, ptr = ctypes.c_int64, ctypes.c_void_p
        proto = ctypes.CFUNCTYPE(None, i64, i64, i64, ptr, i64, i64, ptr, i64, i64, ptr, i64, ptr, ptr, i64)
        self._fn = proto(self._loaded.address(FUNC_NAME))
        self.compile_ms = (time.perf_counter() - t0) * 1e3
        self._buffers: dict[object, tuple[np.ndarray, np.ndarray]] = {}
        self._buffers_lock = threading.Lock()
        self._scratch: dict[tuple[int, int, int], np.ndarray] = {}

    def _packing(self, t: object) -> tuple[int, int]:
        """Packing buffers of `t`: a calling thread (its ident), or chunk i of a split call;
        every concurrent call of the kernel needs its own."""
        with self._buffers_lock:
            bufs = self._buffers.get(t)
            if bufs is None:
                bufs = (_aligned(self.shape.pack_a_floats()), _aligned(self.shape.pack_b_floats()))
                self._buffers[t] = bufs
        return bufs[0].ctypes.data, bufs[1].ctypes.data

    def matmul(self, a: np.ndarray, b: np.ndarray, out: np.ndarray, threads: int = 1,
               accumulate: bool = False) -> np.ndarray:
        """out = a @ b (or out += a @ b) for f32 a [M, K], b [K, N] of any strides and out
        [M, N] with contiguous rows (any row stride)."""
        m, k = a.shape
        n = b.shape[1]
        if b.shape[0] != k or out.shape != (m, n):
            raise ValueError(f"gemm shapes {a.shape} x {b.shape} -> {out.shape}")
        if a.dtype != np.float32 or b.dtype != np.float32 or out.dtype != np.float32:
            raise TypeError("the JIT's gemm is f32 only")
        if m == 0 or n == 0:
            return out
        if (n > 1 and out.strides[1] != 4) or out.strides[0] % 4:
            raise ValueError(f"gemm output rows must be contiguous, strides {out.strides}")
        if k == 0:
            if not accumulate:
                out.fill(0)
            return out
        sa, sb = a.strides[0] // 4, a.strides[1] // 4
        if a.strides[0] % 4 or a.strides[1] % 4 or b.strides[0] % 4 or b.strides[1] % 4:
            a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
            sa, sb = a.strides[0] // 4, a.strides[1] // 4
        sbk, sbn = b.strides[0] // 4, b.strides[1] // 4
        ldc = out.strides[0] // 4
        beta = int(accumulate)
        pa, pb, pc = a.ctypes.data, b.ctypes.data, out.ctypes.data
        threads = min(threads, 1 if m * n * k < _PARALLEL_MACS else threads)
        s = self.shape
        if n < s.nr and m >= 2 * n and not accumulate:
            # narrow: out^T = b^T a^T fills whole NR-wide tiles (ResNet's last stage, N = 49,
            # would compute 64 columns of 49 the other way round); then one small transpose
            tmp = self._transposed_out(n, m)
            self._run(n, m, k, pb, sbn, sbk, pa, sb, sa, tmp.ctypes.data, m, threads, 0)
            np.copyto(out, tmp.T)
            return out
        self._run(m, n, k, pa, sa, sb, pb, sbk, sbn, pc, ldc, threads, beta)
        return out

    def _transposed_out(self, n: int, m: int) -> np.ndarray:
        key = (threading.get_ident(), n, m)
        buf = self._scratch.get(key)
        if buf is None:
            buf = self._scratch[key] = np.empty((n, m), np.float32)
        return buf

    def _run(self, m: int, n: int, k: int, pa: int, sa: int, sb: int, pb: int, sbk: int, sbn: int,
             pc: int, ldc: int, threads: int, beta: int) -> None:
        if threads <= 1:
            self._fn(m, n, k, pa, sa, sb, pb, sbk, sbn, pc, ldc, *self._packing(threading.get_ident()), beta)
            return
        s = self.shape
        chunks = []
        if n >= threads * 2 * s.nr:      # split the columns: each thread packs its own B block
            panels = -(-n // s.nr)
            for t in range(threads):
                lo, hi = panels * t // threads * s.nr, min(n, panels * (t + 1) // threads * s.nr)
                if lo < hi:
                    chunks.append((m, hi - lo, k, pa, sa, sb, pb + lo * sbn * 4, sbk, sbn,
                                   pc + lo * 4, ldc, *self._packing(("split", len(chunks))), beta))
        else:                            # narrow: split the rows
            panels = -(-m // s.mr)
            for t in range(threads):
                lo, hi = panels * t // threads * s.mr, min(m, panels * (t + 1) // threads * s.mr)
                if lo < hi:
                    chunks.append((hi - lo, n, k, pa + lo * sa * 4, sa, sb, pb, sbk, sbn,
                                   pc + lo * ldc * 4, ldc, *self._packing(("split", len(chunks))), beta))
        from .threads import pool
        pool(threads).run(_returning_zero(self._fn), chunks)


def use_for(m: int, n: int, k: int) -> bool:
    """Whether a product of this size goes to the JIT's kernel rather than NumPy's BLAS."""
    return m * n * k >= _MIN_MACS


def _aligned(floats: int) -> np.ndarray:
    """A float32 buffer starting on a 64-byte boundary (one cache line, one zmm register)."""
    raw = np.empty(floats + 16, np.float32)
    off = (-raw.ctypes.data % 64) // 4
    return raw[off:off + floats]


def _returning_zero(fn):
    def call(*args) -> int:
        fn(*args)
        return 0
    return call


_instance: Gemm | None = None
_instance_lock = threading.Lock()


def gemm(disk: DiskCache | None = None) -> Gemm:
    """The process-wide kernel (compiled, or loaded from `disk`, on first use)."""
    global _instance
    with _instance_lock:
        if _instance is None:
            _instance = Gemm(disk)
        return _instance
