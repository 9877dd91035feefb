"""Random ops: RandomUniform(Like), RandomNormal(Like), Bernoulli, Multinomial; Dropout in
training mode (ops/elementwise.py) draws its mask the same way.

All of them become dlvm's two random ops (isa/ops/random.py), which take their shape from an
operand. ONNX's float `seed` becomes the instruction's own generator (seeded once per VM, as
onnxruntime seeds one per node and session); without one, the VM's stream is used. The numbers
cannot equal onnxruntime's (every implementation draws its own); their distribution does.
"""
from __future__ import annotations

import struct

from isa.dtypes import BY_NAME, DType
from isa.ops.random import NO_SEED, RESULT_DTYPES
from isa.types import TensorType

from ..registry import NodeCtx, onnx_op
from ..values import Value
from .common import cast, scalar

I64 = BY_NAME["i64"]
F32 = BY_NAME["f32"]


def seed_of(ctx: NodeCtx) -> int:
    """ONNX's float `seed` as dlvm's non-negative integer one (NO_SEED when absent): a whole
    number is itself, any other float its bits."""
    seed = ctx.attr("seed", None)
    if seed is None:
        return NO_SEED
    seed = float(seed)
    if seed.is_integer() and 0 <= seed < 2 ** 63:
        return int(seed)
    return struct.unpack("<q", struct.pack("<d", seed))[0] & (2 ** 63 - 1)


def _dtype(ctx: NodeCtx, default: DType) -> DType:
    from ..graph import onnx_dtype
    dt = ctx.attr("dtype", None)
    dt = default if dt is None else onnx_dtype(dt, ctx.label)
    if dt not in RESULT_DTYPES:
        raise ctx.fail(f"random numbers of dtype {dt.name}: only float16, float and double")
    return dt


def _shape_like(ctx: NodeCtx) -> Value:
    """A value of the `shape` attribute's shape for a random op to take its shape from: a
    `const` of one byte per element, made once when the VM prepares the function."""
    shape = [int(d) for d in ctx.attr("shape")]
    if any(d < 0 for d in shape):
        raise ctx.fail(f"shape {shape} has a negative size")
    return ctx.e.emit_shape_like(TensorType(BY_NAME["bool"], tuple(shape)))


def draw(ctx: NodeCtx, op: str, like: Value, dtype: DType, **attrs) -> Value:
    return ctx.e.emit(op, [like], "rand", dtype=dtype, seed=seed_of(ctx), **attrs)


def uniform(ctx: NodeCtx, like: Value, dtype: DType) -> Value:
    return draw(ctx, "random_uniform", like, dtype, low=float(ctx.attr("low", 0.0)),
                high=float(ctx.attr("high", 1.0)))


def normal(ctx: NodeCtx, like: Value, dtype: DType) -> Value:
    return draw(ctx, "random_normal", like, dtype, mean=float(ctx.attr("mean", 0.0)),
                scale=float(ctx.attr("scale", 1.0)))


def uniform_mask(ctx: NodeCtx, x: Value, ratio: Value) -> Value:
    """Where to keep x's elements with probability 1 - ratio (Dropout in training mode)."""
    wide = x.dtype if x.dtype in RESULT_DTYPES else F32
    u = draw(ctx, "random_uniform", x, wide)
    return ctx.e.emit("ge", [u, cast(ctx.e, ratio, wide)])


@onnx_op("RandomUniform")
def random_uniform(ctx: NodeCtx) -> list[Value]:
    return [uniform(ctx, _shape_like(ctx), _dtype(ctx, F32))]


@onnx_op("RandomNormal")
def random_normal(ctx: NodeCtx) -> list[Value]:
    return [normal(ctx, _shape_like(ctx), _dtype(ctx, F32))]


def _like(ctx: NodeCtx, draw_as) -> list[Value]:
    """The *Like ops: `dtype`, else the input's; a float dtype the random ops do not draw
    (bf16, float8) is drawn as f32 and cast."""
    from ..graph import onnx_dtype
    x = ctx.req(0)
    dt = ctx.attr("dtype", None)
    dt = x.dtype if dt is None else onnx_dtype(dt, ctx.label)
    if dt in RESULT_DTYPES:
        return [draw_as(ctx, x, dt)]
    if not dt.is_float:
        raise ctx.fail(f"random numbers of dtype {dt.name}: only floating-point types")
    return [cast(ctx.e, draw_as(ctx, x, F32), dt)]


@onnx_op("RandomUniformLike")
def random_uniform_like(ctx: NodeCtx) -> list[Value]:
    return _like(ctx, uniform)


@onnx_op("RandomNormalLike")
def random_normal_like(ctx: NodeCtx) -> list[Value]:
    return _like(ctx, normal)


@onnx_op("Bernoulli")
def bernoulli(ctx: NodeCtx) -> list[Value]:
    """1 where a uniform draw falls below the probability, else 0, in `dtype` (p's own by
    default)."""
    from ..graph import onnx_dtype
    p = ctx.req(0)
    if not p.dtype.is_float:
        raise ctx.fail(f"Bernoulli takes float probabilities, got {p.dtype.name}")
    dt = ctx.attr("dtype", None)
    dt = p.dtype if dt is None else onnx_dtype(dt, ctx.label)
    wide = p.dtype if p.dtype in RESULT_DTYPES else F32
    u = draw(ctx, "random_uniform", p, wide)
    return [cast(ctx.e, ctx.e.emit("lt", [u, cast(ctx.e, p, wide)]), dt)]


@onnx_op("Multinomial")
def multinomial(ctx: NodeCtx) -> list[Value]:
    """`sample_size` class indices per row of unnormalized log-probabilities [batch, class]:
    each draw u counts the classes whose cumulative probability stays at or below u (inverse
    transform sampling), capped at the last class against rounding in the running sum."""
    from ..graph import onnx_dtype
    x, e = ctx.req(0), ctx.e
    if x.rank != 2 or not x.dtype.is_float:
        raise ctx.fail(f"Multinomial takes float [batch, class] log-probabilities, got {x.type}")
    n = int(ctx.attr("sample_size", 1))
    if n < 1:
        raise ctx.fail(f"sample_size must be positive, got {n}")
    dt = onnx_dtype(ctx.attr("dtype", 6), ctx.label)      # int32 by default
    if dt not in (BY_NAME["i32"], I64):
        raise ctx.fail(f"Multinomial gives int32 or int64 indices, not {dt.name}")
    wide = x.dtype if x.dtype in RESULT_DTYPES else F32
    cdf = e.emit("cumsum", [e.emit("softmax", [cast(e, x, wide)], axis=1), scalar(1, I64)])
    first = e.emit("slice", [x], starts=[0], ends=[1], axes=[1])            # [batch, 1]
    like = e.emit("add", [first, e.emit_shape_like(TensorType(x.dtype, (1, n)))])
    u = draw(ctx, "random_uniform", like, wide)                             # [batch, n]
    below = e.emit("ge", [e.emit("expand_dims", [u], axes=[2]),
                          e.emit("expand_dims", [cdf], axes=[1])])         # [batch, n, class]
    count = e.emit("reduce_sum", [cast(e, below, I64)], axes=[2])
    last = e.emit("sub", [e.emit("shape_of", [x]), scalar(1, I64)])
    last = e.emit("slice", [last], starts=[1], ends=[2], axes=[0])
    return [cast(e, e.emit("min", [count, last]), dt)]
