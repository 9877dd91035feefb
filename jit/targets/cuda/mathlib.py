"""Math functions on the GPU: calls into NVIDIA's libdevice (`__nv_expf`, `__nv_tanh`, ...).

Plays the role of the CPU JIT's `MathLib` for the shared lowering table (`jit.llvm.ops`): the
table calls `ctx.math.call(builder, name, args)` for exp, log, tanh, erf, sin, cos and pow.
libdevice is linked in by `target.finalize`, which then internalizes and drops what is unused.
libdevice handles the full argument range of sin/cos, so no RANGE status is ever raised here.

`lower_gpu_op` is the shared `lower_op` with the few GPU overrides: float `mod` calls libdevice's
exact fmod, because NVPTX expands LLVM's `frem` as x - trunc(x / y) * y, which loses the
remainder when the quotient is large.
"""
from __future__ import annotations

from llvmlite import ir

from isa.dtypes import DType
from isa.ops import OPS
from jit.llvm.irutil import F32, F64, intrinsic
from jit.llvm.ops import LowerCtx, lower_op

# kernel-IR math nodes that are no op of the table (the op records give the rest: Facts.mathfn)
KERNEL_MATH = {"fmod": "fmod"}


def libdevice_name(name: str, t: ir.Type) -> str:
    """The libdevice function of a math op (f32 adds the `f` suffix, as in C)."""
    op = OPS.get(name)
    base = op.facts.mathfn if op is not None else KERNEL_MATH.get(name)
    if base is None:      # a math function added to the CPU table but not mapped here yet
        raise NotImplementedError(f"the CUDA backend has no libdevice mapping for {name}")
    if t == F32:
        return f"__nv_{base}f"
    if t == F64:
        return f"__nv_{base}"
    raise NotImplementedError(f"libdevice has no {name} for {t}")


class LibdeviceMath:
    """Declares (once) and calls libdevice functions in one module."""

    def __init__(self, mod: ir.Module):
        self.mod = mod

    def declare(self, name: str, t: ir.Type, arity: int) -> ir.Function:
        full = libdevice_name(name, t)
        if full in self.mod.globals:
            return self.mod.globals[full]
        return ir.Function(self.mod, ir.FunctionType(t, [t] * arity), name=full)

    def call(self, b: ir.IRBuilder, name: str, args: list[ir.Value]) -> ir.Value:
        return b.call(self.declare(name, args[0].type, len(args)), list(args))


def _fmod(ctx: LowerCtx, b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """NumPy's float mod: C fmod, moved into the divisor's sign; a zero result takes y's sign."""
    t = x.type
    r = ctx.math.call(b, "fmod", [x, y])
    zero = ir.Constant(t, 0.0)
    fix = b.and_(b.fcmp_ordered("!=", r, zero),
                 b.xor(b.fcmp_ordered("<", r, zero), b.fcmp_ordered("<", y, zero)))
    r = b.select(fix, b.fadd(r, y), r)
    sign = intrinsic(ctx.mod, "llvm.copysign", t, [t, t])
    return b.select(b.fcmp_ordered("==", r, zero), b.call(sign, [zero, y]), r)


def lower_gpu_op(ctx: LowerCtx, b: ir.IRBuilder, op: str, rt: DType, dts: list[DType],
                 args: list[ir.Value], attr) -> ir.Value:
    """`jit.llvm.ops.lower_op` for the GPU (see the module docstring for the differences)."""
    if op == "mod" and dts[0].is_float:
        return _fmod(ctx, b, *args)
    return lower_op(ctx, b, op, rt, dts, args, attr)
