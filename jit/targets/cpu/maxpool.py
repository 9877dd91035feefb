"""f32 2-D max pooling on the JIT's native kernel (jit/llvm/maxpool_kernel.py).

`maxpool2d(x, attrs, out)` computes exactly what `isa/ops/pooling.py: maxpool_ref` computes for
an f32 (N, C, H, W) input (max is exact, so bit for bit up to NaN payloads and the sign of a
zero max; see the kernel's docstring for padding, ceil mode and NaN). The reference makes
kh * kw passes over the whole output through strided views (ResNet-18's 3x3/2 pool of
[1, 64, 112, 112]: 0.85-1.4 ms); the kernel makes one pass over the input, output row by
output row, in vector registers (~0.1 ms).

The kernel is compiled once per process (or loaded from the disk code cache) and is
stateless: every call passes its geometry in a small int64 array, so concurrent calls from any
threads are safe. Work is split across threads by (n, c) planes when it is large enough for a
hand-off to pay (`_PARALLEL_TAPS`). What a call's layout and attributes decide (output shape,
geometry array, copies) is computed once per distinct layout (`_Plan`), so a call costs a few
microseconds of Python on top of the kernel.

Inputs are read in place when their rows are contiguous (any batch, channel and row strides);
other layouts are copied first. Outputs likewise: a given `out` with contiguous rows is written
in place, any other is filled through a temporary.
"""
from __future__ import annotations

import ctypes
import time

import numpy as np

from isa.ops.pooling import pool_out
from jit.cache import DiskCache

from .once import PerProcess, compile_or_load

# Tap evaluations (output elements x window taps) from which a call is split across threads:
# about 60 us of one thread's work (one Zen 5 core does ~17 taps per ns: ResNet's pool, 1.8M
# taps, ~100 us), well above a hand-off (~10-40 us). ResNet's pool on two threads: ~71 us on
# this otherwise idle 2-CPU machine; 125-160 us while another process (or onnxruntime's thread
# pool in the same process) kept the second CPU busy.
_PARALLEL_TAPS = 1_000_000


def _attrs_2d(attrs: dict) -> tuple[list[int], list[int], list[int], list[int], bool] | None:
    try:
        k, s, p, d = (list(attrs[n]) for n in ("kernel", "strides", "pads", "dilations"))
        ceil = bool(attrs["ceil_mode"])
    except (KeyError, TypeError):
        return None
    if len(k) != 2 or len(s) != 2 or len(p) != 4 or len(d) != 2:
        return None
    if min(k) < 1 or min(s) < 1 or min(d) < 1 or min(p) < 0:
        return None
    return k, s, p, d, ceil


def supported(x: np.ndarray, attrs: dict) -> bool:
    """Whether `maxpool2d` computes this call: f32, a 4-D input and a 2-entry kernel, with
    geometry maxpool_ref accepts (where the reference traps, e.g. a window larger than the
    padded input, this says False so that the caller runs the reference and it reports)."""
    if not isinstance(x, np.ndarray) or x.dtype != np.float32 or x.ndim != 4:
        return False
    geo = _attrs_2d(attrs)
    if geo is None:
        return False
    k, _, p, d, _ = geo
    for i in range(2):
        if x.shape[2 + i] + p[i] + p[i + 2] < d[i] * (k[i] - 1) + 1:
            return False
    return True


def out_shape(x_shape: tuple[int, ...], attrs: dict) -> tuple[int, int, int, int]:
    """(N, C, Ho, Wo) of pooling an input of x_shape (pooling.pool_out per spatial dim)."""
    k, s, p, d = attrs["kernel"], attrs["strides"], attrs["pads"], attrs["dilations"]
    ceil = bool(attrs["ceil_mode"])
    ho = pool_out(x_shape[2], k[0], s[0], p[0], p[2], d[0], ceil)
    wo = pool_out(x_shape[3], k[1], s[1], p[1], p[3], d[1], ceil)
    return x_shape[0], x_shape[1], ho, wo


class MaxPool:
    """The compiled kernel (one per process: see `kernel`). `vw` (floats per vector) defaults
    to the host's widest; a narrower one builds the code an AVX2 or SSE host would run."""

    def __init__(self, disk: DiskCache | None, vw: int | None = None):
        from jit.llvm import target
        from jit.targets.cpu.maxpool_kernel import FUNC_NAME, maxpool_module, vector_width
        t0 = time.perf_counter()
        self.vw = vw or vector_width(target.host().features)
        # (the loaded object keeps the code alive with this object)
        self._loaded, self.source = compile_or_load(str(maxpool_module(self.vw)),
                                                    f"maxpool2d vw{self.vw}", disk)
        i64, ptr = ctypes.c_int64, ctypes.c_void_p
        proto = ctypes.CFUNCTYPE(ctypes.c_int32, i64, i64, ptr, ptr, ptr)
        self.fn = proto(self._loaded.address(FUNC_NAME))
        self.compile_ms = (time.perf_counter() - t0) * 1e3
        self._plans: dict[tuple, _Plan] = {}

    def run(self, x: np.ndarray, attrs: dict, out: np.ndarray | None = None,
            threads: int = 1) -> np.ndarray:
        """maxpool2d on this kernel (see the module-level function)."""
        if out is not None and not out.flags.writeable:
            raise ValueError("maxpool2d output is read-only")
        try:
            key = (x.dtype, x.shape, x.strides, tuple(attrs["kernel"]), tuple(attrs["strides"]),
                   tuple(attrs["pads"]), tuple(attrs["dilations"]), bool(attrs["ceil_mode"]),
                   None if out is None else (out.dtype, out.shape, out.strides))
            plan = self._plans.get(key)
        except (AttributeError, KeyError, TypeError):
            key, plan = None, None
        if plan is None:
            plan = _Plan(x, attrs, out)
            if key is not None:
                if len(self._plans) >= _MAX_PLANS:
                    self._plans.clear()
                self._plans[key] = plan
        if out is None:
            out = np.empty(plan.shape, np.float32)
        if plan.planes == 0:
            return out
        if plan.copy_x or _data(x) % 4:
            x = np.ascontiguousarray(x)
            plan = _Plan(x, attrs, out)          # its strides: one more plan, rarely taken
        dst = out
        if plan.via_temp or _data(out) % 4 or np.may_share_memory(x, out):
            dst = np.empty(plan.shape, np.float32)     # written here, then copied into out
            geom = plan.geom_contiguous_ptr
        else:
            geom = plan.geom_ptr
        args = (_data(x), _data(dst), geom)
        # x and dst stay referenced (locals), the geometry by the plan, until the calls return
        parts = min(threads, plan.planes) if plan.work >= _PARALLEL_TAPS else 1
        if parts <= 1:
            self.fn(0, plan.planes, *args)
        else:
            from .threads import run_parallel
            n = plan.planes
            chunks = [(n * t // parts, n * (t + 1) // parts, *args) for t in range(parts)]
            run_parallel(threads, self.fn, chunks)     # the pool of `threads`, fewer chunks
        if dst is not out:
            np.copyto(out, dst)
        return out


# plans kept per kernel (one per input layout, attributes and output layout seen)
_MAX_PLANS = 256


def _data(a: np.ndarray) -> int:
    """The address of a[0, ...] (cheaper than a.ctypes.data, which builds an object)."""
    return a.__array_interface__["data"][0]


class _Plan:
    """What one call's layout and attributes decide, computed once: the output shape, the
    kernel's geometry arrays, whether x must be copied or out filled through a temporary."""

    def __init__(self, x: np.ndarray, attrs: dict, out: np.ndarray | None):
        if not supported(x, attrs):
            raise ValueError(f"maxpool2d kernel: unsupported input {x.dtype}{list(x.shape)} or "
                             f"attributes {attrs}")
        k, s, p, d, _ = _attrs_2d(attrs)      # type: ignore[misc]
        self.shape = out_shape(x.shape, attrs)
        if out is not None and (out.shape != self.shape or out.dtype != np.float32):
            raise ValueError(f"maxpool2d output must be f32{list(self.shape)}, got "
                             f"{out.dtype}{list(out.shape)}")
        n, c, ho, wo = self.shape
        self.planes = n * c if ho * wo else 0
        self.work = self.planes * ho * wo * k[0] * k[1]
        self.copy_x = not _rows_contiguous(x)
        self.via_temp = out is not None and not _rows_contiguous(out)
        h, w = x.shape[2], x.shape[3]
        ow_lo, ow_hi = _interior(w, wo, k[1], s[1], p[1], d[1])
        xs = [st // 4 for st in x.strides]

        def geom(o_strides: list[int]) -> np.ndarray:
            return np.array([h, w, ho, wo, k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1], ow_lo,
                             ow_hi, c, xs[0], xs[1], xs[2], *o_strides[:3]], np.int64)

        self.geom_contiguous = geom([c * ho * wo, ho * wo, wo])
        self.geom = (geom([st // 4 for st in out.strides])
                     if out is not None and not self.via_temp else self.geom_contiguous)
        self.geom_ptr, self.geom_contiguous_ptr = _data(self.geom), _data(self.geom_contiguous)


_per_process: PerProcess[MaxPool] = PerProcess(MaxPool)


def kernel(disk: DiskCache | None = None) -> MaxPool:
    """The process-wide kernel (compiled, or loaded from `disk`, on first use)."""
    return _per_process.get(disk)


def kernel_ready() -> bool:
    """Whether this process's kernel is built (kernel() returns at once)."""
    return _per_process.instance is not None


def _rows_contiguous(a: np.ndarray) -> bool:
    """Element strides the kernel takes: every stride a whole number of floats, and unit
    column stride (a single column has no stride to speak of)."""
    return all(s % 4 == 0 for s in a.strides) and (a.shape[3] <= 1 or a.strides[3] == 4)


def _interior(w: int, wo: int, kw: int, sw: int, pw: int, dw: int) -> tuple[int, int]:
    """Output columns [lo, hi) whose every column tap lies inside the input row."""
    lo = -(-pw // sw)                                   # first ow with ow*sw - pw >= 0
    last = w - 1 - (kw - 1) * dw + pw                   # ow*sw <= last
    hi = min(wo, last // sw + 1) if last >= 0 else 0
    lo = min(lo, wo)
    return lo, max(lo, hi)


def maxpool2d(x: np.ndarray, attrs: dict, out: np.ndarray | None = None, threads: int = 1,
              disk: DiskCache | None = None) -> np.ndarray:
    """maxpool_ref(attrs, x) for an f32 (N, C, H, W) x (`supported`; else ValueError),
    written into `out` (allocated when None; else f32 of the output shape, any strides) and
    returned. `threads`: at most this many threads share the planes (a split happens only
    from `_PARALLEL_TAPS` on). `disk`: the code cache the kernel is loaded from or stored
    in, when this call is the process's first."""
    return kernel(disk).run(x, attrs, out, threads)
