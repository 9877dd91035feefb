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
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from jit.cache import DiskCache
from jit.fork_safe import ForkSafeLock

from .once import PerProcess, compile_or_load
from .threads import Job

if TYPE_CHECKING:
    from jit.targets.cpu.gemm_kernel import GemmShape

# below this many multiply-adds a product stays with NumPy (a packed kernel's fixed costs win
# nothing on a 32 x 32 x 32 attention score); from PARALLEL_MACS on it is split across threads
_MIN_MACS = 64 * 64 * 64
_MIN_ROWS = 8
_CHUNKS_PER_THREAD = 1     # chunks of a split product per thread
# a split pays only when the product outlasts the hand-off by a margin. With the native pool
# the caller runs a late worker's chunk itself, so a sleeping worker costs nothing: MiniLM's
# 32x384x1536 (19M multiply-adds) went from 188 us on one thread to 138 us on two (with the
# Python pool it was slower on two); 32x384x384 (4.7M) stays faster on one (54 against 59-67)
PARALLEL_MACS = 8 * 1024 * 1024
_MAX_JOBS = 256      # prepared calls kept (a ResNet-18 run makes ~25 distinct ones)


class Gemm:
    """The compiled kernel and per-thread packing buffers."""

    def __init__(self, disk: DiskCache | None, shape: GemmShape | None = None):
        from jit.llvm import target
        from jit.targets.cpu.gemm_kernel import FUNC_NAME, gemm_module, shape_for
        self.shape = shape or shape_for(target.host().features)
        t0 = time.perf_counter()
        self._loaded, self.source = compile_or_load(str(gemm_module(self.shape)),
                                                    "gemm " + self.shape.text(), disk)
        i64, ptr = ctypes.c_int64, ctypes.c_void_p
        proto = ctypes.CFUNCTYPE(ctypes.c_int32, i64, i64, i64, ptr, i64, i64, ptr, i64, i64, ptr, i64,
                                 ptr, ptr, i64, i64, i64, i64, i64, i64, ptr, i64)
        self._fn = proto(self._loaded.address(FUNC_NAME))
        pack_proto = ctypes.CFUNCTYPE(ctypes.c_int32, i64, i64, ptr, i64, i64, ptr)
        self._pack_fns = {w: pack_proto(self._loaded.address(f"{FUNC_NAME}_pack_{w}")) for w in "ab"}
        self._im2col = ctypes.CFUNCTYPE(ctypes.c_int32, ptr, ptr, i64, i64, i64, ptr)(
            self._loaded.address(f"{FUNC_NAME}_im2col"))
        self.compile_ms = (time.perf_counter() - t0) * 1e3
        self._buffers: dict[object, tuple[np.ndarray, np.ndarray]] = {}
        self._buffers_lock = ForkSafeLock()
        self._scratch: dict[tuple[int, int, int], np.ndarray] = {}
        self._jobs: dict[tuple, Job] = {}

    def _packing(self, chunk: int, columns: int, keep: list) -> tuple[int, int]:
        """Packing buffers for chunk `chunk` of a product of `columns` columns by the calling
        thread: every kernel call running at the same time needs its own, so they belong to
        (calling thread, chunk). `keep` holds them until the call returns (a later, larger
        product replaces them)."""
        s = self.shape
        b_floats = s.kc * min(s.nc, -(-columns // s.nr) * s.nr) + SLACK
        key = (threading.get_ident(), chunk)
        with self._buffers_lock:
            bufs = self._buffers.get(key)
            if bufs is None or bufs[1].size < b_floats:
                bufs = (_aligned(s.pack_a_floats()), _aligned(b_floats))
                self._buffers[key] = bufs
        keep.append(bufs)
        return bufs[0].ctypes.data, bufs[1].ctypes.data

    def pack(self, x: np.ndarray, which: str) -> Prepacked:
        """x (an f32 constant: weights) in the layout the kernel reads in place, so that calls
        skip packing it (ONNX Runtime prepacks constant weights the same way). which: "a" for
        a left operand [M, K], "b" for a right operand [K, N]."""
        if x.dtype != np.float32 or x.ndim != 2:
            raise TypeError("gemm prepacks 2-D f32 operands")
        tile = self.shape.mr if which == "a" else self.shape.nr
        rows, k = (x.shape[0], x.shape[1]) if which == "a" else (x.shape[1], x.shape[0])
        s_row, s_k = (x.strides[0], x.strides[1]) if which == "a" else (x.strides[1], x.strides[0])
        if s_row % 4 or s_k % 4:
            x = np.ascontiguousarray(x)
            return self.pack(x, which)
        padded = -(-rows // tile) * tile
        buf = _aligned(max(1, padded * k))
        if rows and k:
            self._pack_fns[which](rows, k, x.ctypes.data, s_row // 4, s_k // 4, buf.ctypes.data)
        return Prepacked(which, rows, k, padded, buf)

    def matmul(self, a: np.ndarray | Prepacked, b: np.ndarray | Prepacked, out: np.ndarray,
               threads: int = 1, accumulate: bool = False, epilogue: Epilogue | None = None) -> np.ndarray:
        """out = a @ b (or out += a @ b) for f32 a [M, K], b [K, N] of any strides (or
        prepacked by `pack`) and out [M, N] with contiguous rows (any row stride); then the
        epilogue (a bias per row or column, a relu) as the last K block is stored."""
        ma, mb = _Operand.of(a, "a"), _Operand.of(b, "b")
        m, k, n = ma.rows, ma.k, mb.rows
        if mb.k != k or out.shape != (m, n):
            raise ValueError(f"gemm shapes {ma.shape} x {mb.shape} -> {out.shape}")
        if out.dtype != np.float32:
            raise TypeError("the JIT's gemm is f32 only")
        if not out.flags.writeable:
            raise ValueError("gemm output is read-only")
        epi = epilogue or Epilogue()
        epi.check(m, n)
        if m == 0 or n == 0:
            return out
        if (n > 1 and out.strides[1] != 4) or out.strides[0] % 4:
            raise ValueError(f"gemm output rows must be contiguous, strides {out.strides}")
        if k == 0:
            if not accumulate:
                out.fill(0)
            return epi.apply(out)
        threads = min(threads, 1 if m * n * k < PARALLEL_MACS else threads)
        if n < self.shape.nr and m >= 2 * n and not accumulate and not (ma.prepacked or mb.prepacked):
            # narrow: out^T = b^T a^T fills whole NR-wide tiles (ResNet's last stage, N = 49,
            # would compute 64 columns of 49 the other way round); then one small transpose
            tmp = self._transposed_out(n, m)
            self._run(mb.transposed(), ma.transposed(), tmp.ctypes.data, m, threads, 0, epi.transposed())
            np.copyto(out, tmp.T)
            return out
        self._run(ma, mb, out.ctypes.data, out.strides[0] // 4, threads, int(accumulate), epi)
        return out

    def conv_image(self, w: np.ndarray | Prepacked, xp: np.ndarray, geometry: np.ndarray,
                   out: np.ndarray, threads: int = 1, epilogue: Epilogue | None = None) -> np.ndarray:
        """out [O, Ho*Wo] = w [O, C*kH*kW] x the patch matrix of one padded image xp [C, Hp, Wp]
        (rows contiguous), read in place by the kernel (implicit GEMM). geometry: int64 [kH,
        kW, Wo, stride_h, stride_w, dil_h, dil_w, xp's channel stride, xp's row stride, Ho*Wo,
        the image stride]."""
        ma = _Operand.of(w, "a")
        if xp.dtype != np.float32 or xp.strides[2] != 4 or geometry.dtype != np.int64:
            raise TypeError("conv_image takes an f32 image with contiguous rows and int64 geometry")
        # (the kernel reads up to SLACK floats past the image's end: ConvPlan's buffer has them)
        n = out.shape[1]
        mb = _Operand(n, ma.k, xp.ctypes.data, 0, geometry.ctypes.data, False, 0, (xp, geometry),
                      (ma.k, n), conv=True)
        if out.shape[0] != ma.rows or out.strides[1] != 4 or not out.flags.writeable:
            raise ValueError(f"conv_image output {out.shape} for weights {ma.shape} must have "
                             f"contiguous, writable rows")
        m, k = ma.rows, ma.k
        epi = epilogue or Epilogue()
        epi.check(m, n)
        threads = min(threads, 1 if m * n * k < PARALLEL_MACS else threads)
        self._run(ma, mb, out.ctypes.data, out.strides[0] // 4, threads, 0, epi)
        return out

    def im2col(self, xp: np.ndarray, geometry: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """cols [C*kH*kW, Ho*Wo] = the patch matrix of one padded image xp [C, Hp, Wp] (rows
        contiguous; geometry as conv_image's). cols must have SLACK writable floats after
        its end, and xp SLACK readable ones (ConvPlan's buffers do)."""
        if xp.dtype != np.float32 or xp.strides[2] != 4 or geometry.dtype != np.int64 or \
                cols.dtype != np.float32 or not cols.flags.c_contiguous:
            raise TypeError("im2col takes f32 arrays with contiguous rows and int64 geometry")
        self._im2col(xp.ctypes.data, geometry.ctypes.data, 0, cols.shape[0], cols.shape[1], cols.ctypes.data)
        return cols

    def _transposed_out(self, n: int, m: int) -> np.ndarray:
        key = (threading.get_ident(), n, m)
        buf = self._scratch.get(key)
        if buf is None:
            buf = self._scratch[key] = np.empty((n, m), np.float32)
        return buf

    def _run(self, a: _Operand, b: _Operand, pc: int, ldc: int, threads: int, beta: int,
             epi: Epilogue) -> None:
        m, n, k = a.rows, b.rows, a.k
        flags = (1 if a.prepacked else 0) | (2 if b.prepacked else 0) | (4 if b.conv else 0)
        bits = epi.bits()
        bias = epi.bias.ctypes.data if epi.bias is not None else 0
        # A model makes the same calls again and again (same buffers, weights, shapes): the
        # chunks' arguments, and the native pool's argument block, are prepared once per
        # distinct call and thread. The key holds every argument, so a hit is the same call.
        key = (m, n, k, a.ptr, a.s_row, a.s_k, a.padded, b.ptr, b.s_row, b.s_k, b.padded, flags,
               pc, ldc, threads, beta, bits, bias, threading.get_ident())
        job = self._jobs.get(key)
        if job is None:
            job = self._job(a, b, pc, ldc, threads, beta, flags, bits, bias)
            with self._buffers_lock:
                self._jobs[key] = job
                if len(self._jobs) > _MAX_JOBS:
                    self._jobs.pop(next(iter(self._jobs)))
        job()

    def _job(self, a: _Operand, b: _Operand, pc: int, ldc: int, threads: int, beta: int,
             flags: int, bits: int, bias: int) -> Job:
        m, n, k = a.rows, b.rows, a.k
        keep: list = []      # the packing buffers the calls write: the job holds them

        def call(rows: tuple[int, int], cols: tuple[int, int], chunk: int) -> tuple:
            """Kernel arguments for rows x cols of the product."""
            (r0, r1), (c0, c1) = rows, cols
            pa = a.ptr if a.prepacked else a.ptr + r0 * a.s_row * 4
            pb = b.ptr if b.prepacked or b.conv else b.ptr + c0 * b.s_row * 4
            pbias = bias and bias + 4 * (r0 if bits & 1 else c0)
            return (r1 - r0, c1 - c0, k, pa, a.s_row, a.s_k, pb, b.s_k, b.s_row,
                    pc + (r0 * ldc + c0) * 4, ldc, *self._packing(chunk, c1 - c0, keep), beta,
                    flags, r0, a.padded, c0, b.padded, pbias or None, bits)

        if threads <= 1:
            return Job(1, self._fn, [call((0, m), (0, n), 0)], keep)
        # Split along the side that moves less memory per thread: a row split has every chunk
        # read all of B, a column split all of A. Packing an operand (reading it and writing
        # its panels) costs about 3 reads; a prepacked operand is one read, a convolution's
        # patches (packed from the image) two. MLP 256x784x512 (weights prepacked) splits by
        # rows: each chunk packs only its rows of A; ResNet's 49x4608x512 and MiniLM's
        # 32x384x1536 by columns: each chunk reads half the weights (9.4 MB for the first,
        # read twice by a row split: 1.35 against 0.9 ms). One chunk per thread: every chunk
        # streams the whole other operand, and 4 chunks per thread measured 15-30% slower than
        # 1 (256x784x512: 0.92 against 0.81 ms), late-waking workers included.
        s = self.shape
        row_panels, col_panels = -(-m // s.mr), -(-n // s.nr)
        a_cost = m * k * (1 if a.prepacked else 3)
        b_cost = n * k * (1 if b.prepacked else 2 if b.conv else 3)
        by_rows = a_cost / threads + b_cost < a_cost + b_cost / threads
        if by_rows and row_panels < threads:
            by_rows = False
        elif not by_rows and col_panels < threads:
            by_rows = True
        chunks = []
        panels, tile = (row_panels, s.mr) if by_rows else (col_panels, s.nr)
        parts = max(1, min(threads * _CHUNKS_PER_THREAD, panels))
        for t in range(parts):
            lo, hi = panels * t // parts * tile, min(m if by_rows else n, panels * (t + 1) // parts * tile)
            if lo < hi:
                chunks.append(call((lo, hi), (0, n), len(chunks)) if by_rows
                              else call((0, m), (lo, hi), len(chunks)))
        return Job(threads, self._fn, chunks, keep)


@dataclass(frozen=True)
class Epilogue:
    """What the kernel applies to C as it stores the last K block, in this order: a bias per
    row (`row_bias`, one per row of C) or per column (`col_bias`), then relu. Bit-identical to
    `out += bias; np.maximum(out, 0)` afterwards (llvm.maximum: NaN stays NaN), with no pass
    over C (ResNet's convolutions: 2.5M outputs read and written twice more per call)."""
    row_bias: np.ndarray | None = None
    col_bias: np.ndarray | None = None
    relu: bool = False

    @property
    def bias(self) -> np.ndarray | None:
        return self.row_bias if self.row_bias is not None else self.col_bias

    def bits(self) -> int:
        return (1 if self.row_bias is not None else 0) | (2 if self.col_bias is not None else 0) | \
            (4 if self.relu else 0)

    def check(self, m: int, n: int) -> None:
        if self.row_bias is not None and self.col_bias is not None:
            raise ValueError("a gemm epilogue adds a row bias or a column bias, not both")
        for name, v, size in (("row", self.row_bias, m), ("column", self.col_bias, n)):
            if v is not None and (v.dtype != np.float32 or v.shape != (size,) or v.strides != (4,)):
                raise ValueError(f"gemm {name} bias must be contiguous f32 [{size}], got "
                                 f"{v.dtype}{list(v.shape)}")

    def transposed(self) -> Epilogue:
        return Epilogue(self.col_bias, self.row_bias, self.relu)

    def apply(self, out: np.ndarray) -> np.ndarray:
        """The same on an already computed C (K = 0)."""
        if self.row_bias is not None:
            out += self.row_bias[:, None]
        if self.col_bias is not None:
            out += self.col_bias
        if self.relu:
            np.maximum(out, 0, out=out)
        return out


@dataclass(frozen=True)
class Prepacked:
    """An operand in the kernel's packed layout (Gemm.pack): K blocks of KC, each with every
    panel of the operand's rows (A) or columns (B), padded to whole tiles."""
    which: str
    rows: int           # M of an A operand, N of a B operand
    k: int
    padded: int
    data: np.ndarray


@dataclass(frozen=True)
class _Operand:
    """One side of a product as the kernel sees it: rows (M or N), k, element strides."""
    rows: int
    k: int
    ptr: int
    s_row: int
    s_k: int
    prepacked: bool
    padded: int
    keep: object          # what owns the memory
    shape: tuple
    conv: bool = False    # B only: a convolution's patches (ptr: padded image, s_k: geometry)

    @staticmethod
    def of(x: np.ndarray | Prepacked, which: str) -> _Operand:
        if isinstance(x, Prepacked):
            if x.which != which:
                raise ValueError(f"an operand prepacked as {x.which!r} used as {which!r}")
            shape = (x.rows, x.k) if which == "a" else (x.k, x.rows)
            return _Operand(x.rows, x.k, x.data.ctypes.data, 0, 0, True, x.padded, x, shape)
        if x.dtype != np.float32 or x.ndim != 2:
            raise TypeError("the JIT's gemm is f32 only")
        if x.strides[0] % 4 or x.strides[1] % 4:
            x = np.ascontiguousarray(x)
        s0, s1 = x.strides[0] // 4, x.strides[1] // 4
        if which == "a":
            return _Operand(x.shape[0], x.shape[1], x.ctypes.data, s0, s1, False, 0, x, x.shape)
        return _Operand(x.shape[1], x.shape[0], x.ctypes.data, s1, s0, False, 0, x, x.shape)

    def transposed(self) -> _Operand:
        """The same matrix as the other side's operand (a^T as B, b^T as A)."""
        shape = (self.shape[1], self.shape[0])
        return _Operand(self.rows, self.k, self.ptr, self.s_row, self.s_k, False, 0, self.keep, shape)


def use_for(m: int, n: int, k: int) -> bool:
    """Whether a product of this size goes to the JIT's kernel rather than NumPy's BLAS: not
    a few rows (a matrix-vector product is memory-bound, and a tile of 8 rows would compute
    mostly padding), not a tiny product (packing costs more than it saves)."""
    return m >= _MIN_ROWS and m * n * k >= _MIN_MACS


# floats of slack after a convolution's padded input and after the B packing buffers: the
# kernel copies a row segment of the input as whole vectors, up to one vector past its end
SLACK = 64


def _aligned(floats: int) -> np.ndarray:
    """A float32 buffer starting on a 64-byte boundary (one cache line, one zmm register)."""
    raw = np.empty(floats + 16, np.float32)
    off = (-raw.ctypes.data % 64) // 4
    return raw[off:off + floats]


_per_process: PerProcess[Gemm] = PerProcess(Gemm)


def gemm(disk: DiskCache | None = None) -> Gemm:
    """The process-wide kernel (compiled, or loaded from `disk`, on first use)."""
    return _per_process.get(disk)


def gemm_ready() -> bool:
    """Whether this process's kernel is built (gemm() returns at once)."""
    return _per_process.instance is not None
