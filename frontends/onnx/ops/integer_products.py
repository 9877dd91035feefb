"""Products of small integers (MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv), computed
exactly in floating point.

Operands of 8 bits centred on their zero points are integers of magnitude at most 255, and their
products at most 65025. A float sums integers exactly as long as every partial sum stays below
2^(mantissa bits + 1): in f32 a reduction of K terms is exact when K * max|a| * max|b| < 2^24,
whatever order the GEMM adds them in, so the product equals the integer one bit for bit. An f32
product then runs on the JIT's GEMM kernel or sgemm, where NumPy's integer matmul has no BLAS
at all (an encoder quantized by onnxruntime's quantize_dynamic ran 15-41x onnxruntime's time on
i32 products). A longer reduction is cut along K into pieces that each fit (at most MAX_PIECES,
summed in the caller's exact accumulator); past that, or where K is not known at import, the
product is f64, exact for any K below 2^37 (ConvInteger's and the QLinear ops' former rule).
Operands too wide for either (32-bit integers) keep an integer product.

The bounds come from the data where it is known at import (weights: their actual largest
magnitude, often below the type's) and otherwise from the dtype's range and the zero point's.
"""
from __future__ import annotations

import numpy as np

from isa.dtypes import BY_NAME, DType

from ..registry import NodeCtx
from ..values import Value, known
from .common import cast

F32, F64 = BY_NAME["f32"], BY_NAME["f64"]
F32_EXACT = 1 << 24
F64_EXACT = 1 << 53
MAX_PIECES = 8


def _range(v: Value) -> tuple[int, int] | None:
    if not v.dtype.is_int:
        return None             # (QLinearMatMul's float8 operands: no integer bound)
    if v.const is not None and v.const.size:
        return int(v.const.min()), int(v.const.max())
    return v.dtype.int_range()


def magnitude(v: Value, zp: Value | None) -> int | None:
    """The largest |v - zp| the operand can take (None: not an integer operand)."""
    r = _range(v)
    z = (0, 0) if zp is None else _range(zp)
    if r is None or z is None:
        return None
    return max(r[1] - z[0], z[1] - r[0], 0)


def plan(k: int | None, a_max: int | None, b_max: int | None,
         unit: int = 1) -> tuple[DType | None, int]:
    """(float dtype, pieces) that sum a K-term product of these magnitudes exactly, K cut into
    pieces of whole `unit`s (a convolution's input channels, kernel-sized); (None, 1) where no
    float does (the integer product then)."""
    if a_max is None or b_max is None:
        return None, 1
    term = max(a_max * b_max, 1)
    if k is not None:
        units_per_piece = (F32_EXACT - 1) // term // unit
        if units_per_piece >= 1:
            pieces = -(-(k // unit) // units_per_piece)
            if pieces <= MAX_PIECES:
                return F32, max(pieces, 1)
    if term * (k if k is not None else 1 << 31) < F64_EXACT:
        return F64, 1
    return None, 1


def centered(ctx: NodeCtx, v: Value, zp: Value | None, dtype: DType,
             zp_shape: list[int] | None = None) -> Value:
    """v - zp in `dtype` (exact: both are integers the dtype holds); zp reshaped to zp_shape
    first where given (a vector zero point per row or channel)."""
    e = ctx.e
    out = cast(e, v, dtype)
    if zp is None:
        return out
    z = cast(e, zp, dtype)
    if zp_shape is not None:
        z = e.emit("reshape", [z], shape=zp_shape)
    return e.emit("sub", [out, z])


def _pieces(n: int, k: int) -> list[tuple[int, int]]:
    return [(k * i // n, k * (i + 1) // n) for i in range(n)]


def _summed(ctx: NodeCtx, parts: list[Value], acc: DType) -> Value:
    e = ctx.e
    total = cast(e, parts[0], acc)
    for p in parts[1:]:
        total = e.emit("add", [total, cast(e, p, acc)])
    return total


def exact_matmul(ctx: NodeCtx, a: Value, a_zp: tuple[Value | None, list[int] | None],
                 b: Value, b_zp: tuple[Value | None, list[int] | None], acc: DType) -> Value:
    """(a - a_zp) @ (b - b_zp) as `acc` (i32 or f64), exactly. A zero point is given with the
    shape it is reshaped to (None: it broadcasts as it is).

    Activations quantized at run time (u8, a zero point known only then) are centred on their
    type's midpoint instead, magnitude 128 rather than 255, so twice as much K fits one f32
    piece; the zero point's share is a rank-one term of b's column sums (a constant for
    weights): (a - z) @ b' = (a - mid) @ b' + (mid - z) * colsum(b')."""
    e = ctx.e
    kb = 0 if b.rank == 1 else b.rank - 2
    k = b.shape[kb] if isinstance(b.shape[kb], int) else a.shape[-1]
    k = k if isinstance(k, int) else None
    b_max = magnitude(b, b_zp[0])
    dtype, pieces = plan(k, magnitude(a, a_zp[0]), b_max)
    mid = _midpoint(a, a_zp[0])
    if mid is not None and a.rank >= 2 and b.rank >= 2:
        m_dtype, m_pieces = plan(k, magnitude(a, known(np.array(mid, a.dtype.np))), b_max)
        if m_dtype is F32 and (dtype is not F32 or m_pieces < pieces):
            i32 = BY_NAME["i32"]
            zp, zp_shape = a_zp
            colsum = e.emit("reduce_sum", [centered(ctx, b, b_zp[0], i32, b_zp[1])], axes=[kb],
                            keepdims=True)
            shift = e.emit("sub", [known(np.array(mid, np.int32)), cast(e, zp, i32)])
            if zp_shape is not None:
                shift = e.emit("reshape", [shift], shape=zp_shape)
            product = exact_matmul(ctx, a, (known(np.array(mid, a.dtype.np)), None), b, b_zp, acc)
            return e.emit("add", [product, cast(e, e.emit("mul", [shift, colsum]), acc)])
    if dtype is None:
        wide = acc if acc.is_int else F64
        return cast(e, e.emit("matmul", [centered(ctx, a, a_zp[0], wide, a_zp[1]),
                                         centered(ctx, b, b_zp[0], wide, b_zp[1])]), acc)
    ca, cb = centered(ctx, a, a_zp[0], dtype, a_zp[1]), centered(ctx, b, b_zp[0], dtype, b_zp[1])
    if pieces == 1:
        return cast(e, e.emit("matmul", [ca, cb]), acc)
    parts = [e.emit("matmul", [e.emit("slice", [ca], starts=[lo], ends=[hi], axes=[a.rank - 1]),
                               e.emit("slice", [cb], starts=[lo], ends=[hi], axes=[kb])])
             for lo, hi in _pieces(pieces, k)]
    return _summed(ctx, parts, acc)


def _midpoint(v: Value, zp: Value | None) -> int | None:
    """The middle of an 8-bit run-time operand's range, where its zero point is not a constant
    (a constant one centres it as well as any)."""
    if v.const is not None or zp is None or zp.const is not None or not v.dtype.is_int or \
            v.dtype.itemsize != 1:
        return None
    lo, hi = v.dtype.int_range()
    return (lo + hi + 1) // 2


def exact_conv(ctx: NodeCtx, x: Value, x_zp: Value | None, w: Value, w_zp: Value | None,
               acc: DType) -> Value:
    """ONNX Conv's attributes on (x - x_zp) and (w - w_zp: a vector one per output channel), as
    `acc` (i32 or f64), exactly; no bias."""
    from .nn import emit_conv
    e = ctx.e
    w_shape = [-1] + [1] * (w.rank - 1) if w_zp is not None and w_zp.rank == 1 else None
    x_shape = [] if x_zp is not None and x_zp.rank == 1 else None
    unit, k = 1, None
    for d in w.shape[2:]:
        unit = unit * d if isinstance(d, int) and isinstance(unit, int) else None
    if unit is not None and isinstance(w.shape[1], int):
        k = w.shape[1] * unit
    dtype, pieces = plan(k, magnitude(x, x_zp), magnitude(w, w_zp), unit or 1)
    if dtype is None or (pieces > 1 and int(ctx.attr("group", 1)) != 1):
        dtype, pieces = F64, 1      # pieces of a grouped convolution's channels cross its groups
    cx, cw = centered(ctx, x, x_zp, dtype, x_shape), centered(ctx, w, w_zp, dtype, w_shape)
    if pieces == 1:
        return cast(e, emit_conv(ctx, cx, cw, None, "acc"), acc)
    parts = [emit_conv(ctx, e.emit("slice", [cx], starts=[lo], ends=[hi], axes=[1]),
                       e.emit("slice", [cw], starts=[lo], ends=[hi], axes=[1]), None, "acc")
             for lo, hi in _pieces(pieces, w.shape[1])]
    return _summed(ctx, parts, acc)
