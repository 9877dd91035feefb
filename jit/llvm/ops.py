"""Lowering of primitive ops to LLVM IR: a table of small functions keyed by (op, dtype class).

Dtype classes: "f" float, "s" signed integer, "u" unsigned integer, "b" bool. Composite ops never
appear here: the kernel builder expanded them through the op table's `expand`. An op missing from
the table for a dtype class raises NotImplementedError, and the region runs interpreted.

Integer division, modulo and pow can trap (zero divisor, negative exponent): the kernel computes
a harmless value instead and sets status bit TRAP, and the runner lets the interpreter run the
region so that it reports the trap.
"""
from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from isa.dtypes import DType

from .irutil import (
    DEFAULT_FLAGS,
    F32,
    F64,
    HALF,
    I1,
    const,
    elem_type,
    intrinsic,
    like,
    mem_type,
    reg_type,
    splat,
    type_suffix,
)

FM = DEFAULT_FLAGS
TRAP = 1
RANGE = 2


class LowerCtx:
    """What an op lowering may use besides its builder: the math library and the status flag."""

    def __init__(self, mod: ir.Module, math, set_status: Callable[[ir.IRBuilder, ir.Value, int], None]):
        self.mod = mod
        self.math = math
        self.set_status = set_status


def dtype_class(d: DType) -> str:
    if d.is_float:
        return "f"
    if d.is_bool:
        return "b"
    return "s" if d.is_signed else "u"


Lowering = Callable[..., ir.Value]   # (ctx, builder, result dtype, operand dtypes, args, attr)
TABLE: dict[tuple[str, str], Lowering] = {}


def lowers(op: str, classes: str):
    def reg(fn: Lowering) -> Lowering:
        for c in classes:
            TABLE[(op, c)] = fn
        return fn
    return reg


def _intr(ctx, b, name, args):
    t = args[0].type
    return b.call(intrinsic(ctx.mod, name, t, [a.type for a in args]), list(args))


# ---- arithmetic --------------------------------------------------------------------------------

_FLOAT_BIN = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}
_INT_BIN = {"add": "add", "sub": "sub", "mul": "mul"}

# Division is exact: with `arcp` LLVM turns 1/sqrt(x) and 1/x into hardware estimates plus a
# Newton step, which give NaN for 0 and Inf.
DIV_FLAGS = tuple(f for f in FM if f not in ("afn", "arcp"))
for _op, _m in _FLOAT_BIN.items():
    lowers(_op, "f")(lambda ctx, b, rt, dts, args, attr, _m=_m:
                     getattr(b, _m)(*args, flags=DIV_FLAGS if _m == "fdiv" else FM))
for _op, _m in _INT_BIN.items():
    lowers(_op, "su")(lambda ctx, b, rt, dts, args, attr, _m=_m: getattr(b, _m)(*args))
# bool arithmetic as NumPy does it: + is or, * is and
lowers("add", "b")(lambda ctx, b, rt, dts, args, attr: b.or_(*args))
lowers("mul", "b")(lambda ctx, b, rt, dts, args, attr: b.and_(*args))
lowers("neg", "f")(lambda ctx, b, rt, dts, args, attr: b.fneg(args[0], flags=FM))
lowers("neg", "s")(lambda ctx, b, rt, dts, args, attr: b.sub(const(args[0].type, 0), args[0]))
lowers("abs", "f")(lambda ctx, b, rt, dts, args, attr: _intr(ctx, b, "llvm.fabs", args))
lowers("abs", "u")(lambda ctx, b, rt, dts, args, attr: args[0])
lowers("max", "f")(lambda ctx, b, rt, dts, args, attr: _intr(ctx, b, "llvm.maximum", args))
lowers("min", "f")(lambda ctx, b, rt, dts, args, attr: _intr(ctx, b, "llvm.minimum", args))
lowers("max", "b")(lambda ctx, b, rt, dts, args, attr: b.or_(*args))
lowers("min", "b")(lambda ctx, b, rt, dts, args, attr: b.and_(*args))


@lowers("abs", "s")
def _abs_int(ctx, b, rt, dts, args, attr):
    t = args[0].type
    fn = intrinsic(ctx.mod, "llvm.abs", t, [t, I1])
    return b.call(fn, [args[0], const(I1, 0)])     # wraps at the minimum (no poison)


for _op, _s, _u in (("max", "llvm.smax", "llvm.umax"), ("min", "llvm.smin", "llvm.umin")):
    lowers(_op, "s")(lambda ctx, b, rt, dts, args, attr, _n=_s: _intr(ctx, b, _n, args))
    lowers(_op, "u")(lambda ctx, b, rt, dts, args, attr, _n=_u: _intr(ctx, b, _n, args))

for _op in ("exp", "log", "tanh", "erf", "sin", "cos"):
    lowers(_op, "f")(lambda ctx, b, rt, dts, args, attr, _op=_op: ctx.math.call(b, _op, list(args)))


def _constant_value(v) -> float | None:
    """The value of a constant operand (a scalar or a splat vector), or None."""
    if not isinstance(v, ir.Constant):
        return None
    c = v.constant
    if isinstance(c, (list, tuple)):
        vals = {getattr(e, "constant", e) for e in c}
        return float(vals.pop()) if len(vals) == 1 and not isinstance(next(iter(vals), None),
                                                                       (list, tuple)) else None
    try:
        return float(c)
    except (TypeError, ValueError):
        return None


@lowers("pow", "f")
def _fpow(ctx, b, rt, dts, args, attr):
    # x ** 2 (a YOLO box's squared size, a variance) is one product: x*x rounds once, which is
    # what the general pow (in f64 for f32, then rounded) gives for it too; pow's exp/log
    # polynomials were 30% of a detection head's time
    x, y = args
    e = _constant_value(y)
    if e == 2.0:
        return b.fmul(x, x)
    if e in _SMALL_POWERS and elem_type(x.type) in (F32, F64):
        return _small_power(b, x, e)
    return ctx.math.call(b, "pow", [x, y])


# x ** 3 (tanh-GELU's cube, which opset 17/18 exports as Pow(x, 3)), x ** 4 and x ** -1, -2 as
# products: GPT-2's GELU took 1.9 ms on pow's f64 exp / log polynomials for [32, 32, 512] against
# onnxruntime's 0.8 ms
_SMALL_POWERS = (3.0, 4.0, -1.0, -2.0)


def _small_power(b, x, e: float):
    """x ** e for e in _SMALL_POWERS: f32 in f64 (x*x is exact there, so the one rounding to f32
    is the only one that matters, as in pow's f64 evaluation); f64 with one rounding per step
    (within the table's pow row). Infinities, NaN and signed zeros as pow has them: (-0)^3 is
    -0, (-inf)^-1 is -0, 0^-2 is +inf."""
    wide = b.fpext(x, like(x.type, F64)) if elem_type(x.type) == F32 else x
    sq = b.fmul(wide, wide)
    one = const(wide.type, 1.0)
    if e == -2.0 and wide is x:     # f64: (1/x)^2, where x*x would overflow for |x| > 1.3e154
        inv = b.fdiv(one, x)
        return b.fmul(inv, inv)
    r = {3.0: lambda: b.fmul(sq, wide), 4.0: lambda: b.fmul(sq, sq),
         -1.0: lambda: b.fdiv(one, wide), -2.0: lambda: b.fdiv(one, sq)}[e]()
    return b.fptrunc(r, x.type) if wide is not x else r
for _op, _n in (("sqrt", "llvm.sqrt"), ("floor", "llvm.floor"), ("ceil", "llvm.ceil"),
                ("round", "llvm.rint")):
    lowers(_op, "f")(lambda ctx, b, rt, dts, args, attr, _n=_n: _intr(ctx, b, _n, args))


@lowers("mod", "f")
def _fmod(ctx, b, rt, dts, args, attr):
    # NumPy's float mod: fmod, then moved into the divisor's sign; a zero result takes b's sign
    x, y = args
    t = x.type
    r = b.frem(x, y, flags=FM)
    zero = const(t, 0.0)
    fix = b.and_(b.fcmp_ordered("!=", r, zero),
                 b.xor(b.fcmp_ordered("<", r, zero), b.fcmp_ordered("<", y, zero)))
    r = b.select(fix, b.fadd(r, y, flags=FM), r)
    sign = intrinsic(ctx.mod, "llvm.copysign", t, [t, t])
    return b.select(b.fcmp_ordered("==", r, zero), b.call(sign, [zero, y]), r)


def _safe_divisor(ctx, b, y, signed: bool):
    t = y.type
    zero = b.icmp_unsigned("==", y, const(t, 0))
    ctx.set_status(b, zero, TRAP)
    y = b.select(zero, const(t, 1), y)
    minus1 = b.icmp_signed("==", y, const(t, -1)) if signed else None
    if minus1 is not None:
        y = b.select(minus1, const(t, 1), y)    # MIN / -1 overflows in LLVM; handled below
    return y, minus1


@lowers("div", "s")
def _sdiv(ctx, b, rt, dts, args, attr):
    x, y = args
    d, minus1 = _safe_divisor(ctx, b, y, True)
    q = b.sdiv(x, d)                            # truncates toward zero, as dlvm specifies
    return b.select(minus1, b.sub(const(x.type, 0), x), q)


@lowers("div", "u")
def _udiv(ctx, b, rt, dts, args, attr):
    d, _ = _safe_divisor(ctx, b, args[1], False)
    return b.udiv(args[0], d)


@lowers("mod", "s")
def _smod(ctx, b, rt, dts, args, attr):
    x, y = args
    t = x.type
    d, minus1 = _safe_divisor(ctx, b, y, True)
    r = b.srem(x, d)
    r = b.select(minus1, const(t, 0), r)
    fix = b.and_(b.icmp_signed("!=", r, const(t, 0)),
                 b.xor(b.icmp_signed("<", r, const(t, 0)), b.icmp_signed("<", y, const(t, 0))))
    return b.select(fix, b.add(r, y), r)


@lowers("mod", "u")
def _umod(ctx, b, rt, dts, args, attr):
    d, _ = _safe_divisor(ctx, b, args[1], False)
    return b.urem(args[0], d)


@lowers("pow", "su")
def _ipow(ctx, b, rt, dts, args, attr):
    x, y = args
    t = x.type
    if dts[1].is_signed:
        ctx.set_status(b, b.icmp_signed("<", y, const(t, 0)), TRAP)
    result, base = const(t, 1), x
    for bit in range(elem_type(t).width):     # square-and-multiply over every exponent bit (wraps like NumPy)
        on = b.trunc(b.lshr(y, const(t, bit)), like(t, I1))
        result = b.select(on, b.mul(result, base), result)
        base = b.mul(base, base)
    return result


# ---- logic and comparisons ----------------------------------------------------------------------

for _op, _m in (("and", "and_"), ("or", "or_"), ("xor", "xor")):
    lowers(_op, "sub")(lambda ctx, b, rt, dts, args, attr, _m=_m: getattr(b, _m)(*args))
lowers("not", "sub")(lambda ctx, b, rt, dts, args, attr: b.not_(args[0]))

_FCMP = {"eq": ("==", True), "ne": ("!=", False), "lt": ("<", True), "le": ("<=", True),
         "gt": (">", True), "ge": (">=", True)}
for _op, (_p, _ordered) in _FCMP.items():
    # ordered comparisons are false on NaN; != is unordered, so NaN != NaN is true
    lowers(_op, "f")(lambda ctx, b, rt, dts, args, attr, _p=_p, _o=_ordered:
                     (b.fcmp_ordered if _o else b.fcmp_unordered)(_p, *args))
    lowers(_op, "s")(lambda ctx, b, rt, dts, args, attr, _p=_p: b.icmp_signed(_p, *args))
    lowers(_op, "ub")(lambda ctx, b, rt, dts, args, attr, _p=_p: b.icmp_unsigned(_p, *args))

lowers("select", "fsub")(lambda ctx, b, rt, dts, args, attr: b.select(*args))


# ---- cast ---------------------------------------------------------------------------------------

def round_to_f16(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """A float (or vector) rounded to the nearest f16 value, ties to even, kept as float (F16C's
    vcvtps2ph and back on x86)."""
    return b.fpext(b.fptrunc(x, like(x.type, HALF)), x.type)


def lower_cast(ctx, b, to: DType, src: DType, x: ir.Value) -> ir.Value:
    rt = like(x.type, reg_type(to))
    if to == src:
        return x
    if to is DType.F16 or src is DType.F16:      # f16 is held as a rounded float (irutil.py)
        if to is DType.F16 and src is DType.F64:
            # (double -> half is a library call on x86; through float it would round twice)
            raise NotImplementedError("the CPU JIT has no f64 -> f16 cast")
        if to is DType.F16:
            return round_to_f16(b, lower_cast(ctx, b, DType.F32, src, x))
        return lower_cast(ctx, b, to, DType.F32, x)
    if to.is_bool:
        if src.is_float:
            return b.fcmp_unordered("!=", x, const(x.type, 0.0))   # NaN is true, as in NumPy
        return b.icmp_unsigned("!=", x, const(x.type, 0))
    if src.is_float:
        if to.is_float:
            return b.fpext(x, rt) if to.itemsize > src.itemsize else b.fptrunc(x, rt)
        if src in (DType.F32, DType.F64) and elem_type(rt).width <= 16:
            return _narrow_int_from_float(ctx, b, to, x, rt)
        # saturating conversions: out-of-range and NaN give a defined (unspecified) value
        name = "llvm.fptosi.sat" if to.is_signed else "llvm.fptoui.sat"
        suffix = f"{type_suffix(rt)}.{type_suffix(x.type)}"
        fn = intrinsic(ctx.mod, name, rt, [x.type], suffix=suffix)
        return b.call(fn, [x])
    unsigned_src = src.is_bool or not src.is_signed
    if to.is_float:
        return b.uitofp(x, rt) if unsigned_src else b.sitofp(x, rt)
    if elem_type(rt).width < elem_type(x.type).width:
        return b.trunc(x, rt)
    if elem_type(rt).width > elem_type(x.type).width:
        return b.zext(x, rt) if unsigned_src else b.sext(x, rt)
    return x


def _narrow_int_from_float(ctx, b: ir.IRBuilder, to: DType, x: ir.Value, rt: ir.Type) -> ir.Value:
    """fptosi.sat / fptoui.sat to an 8- or 16-bit integer, as x86 has it in vectors: clamped to
    the target's range in float (NaN to 0, as the intrinsic), converted to i32 and truncated.
    The same values as the intrinsic, which LLVM scalarizes for these widths (one conversion and
    one lane insert per element: 10% of a quantized CNN's time went to its QuantizeLinear)."""
    bits = elem_type(rt).width
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if to.is_signed else (0, (1 << bits) - 1)
    t = x.type
    maxnum = intrinsic(ctx.mod, "llvm.maxnum", t, [t, t])
    minnum = intrinsic(ctx.mod, "llvm.minnum", t, [t, t])
    y = b.call(minnum, [b.call(maxnum, [x, const(t, float(lo))]), const(t, float(hi))])
    # maxnum gave the lower bound for a quiet NaN (0 for unsigned targets, but a signalling one
    # may come through as NaN elsewhere than x86); the intrinsic gives 0
    y = b.select(b.fcmp_unordered("uno", x, x), const(t, 0.0), y)
    wide = b.fptosi(y, like(t, ir.IntType(32)))
    return b.trunc(wide, rt)


def lower_op(ctx: LowerCtx, b: ir.IRBuilder, op: str, rt: DType, dts: list[DType],
             args: list[ir.Value], attr) -> ir.Value:
    """IR for primitive `op` with result dtype `rt` on operands of dtypes `dts`."""
    vec = next((a.type.count for a in args if isinstance(a.type, ir.VectorType)), None)
    if vec is not None:     # a vector loop: operands that do not vary along it are splat
        args = [a if isinstance(a.type, ir.VectorType) or (op == "select" and k == 0) else splat(b, a, vec)
                for k, a in enumerate(args)]
    if op == "cast":
        return lower_cast(ctx, b, attr, dts[0], args[0])
    key_dtype = dts[1] if op == "select" else dts[0]
    fn = TABLE.get((op, dtype_class(key_dtype)))
    if fn is None:
        raise NotImplementedError(f"the CPU JIT cannot lower {op} on {key_dtype}")
    return fn(ctx, b, rt, dts, args, attr)


def load_value(b: ir.IRBuilder, ptr: ir.Value, d: DType, lanes: int | None = None) -> ir.Value:
    """Load one element, or `lanes` consecutive ones as a vector."""
    t = mem_type(d) if lanes is None else ir.VectorType(mem_type(d), lanes)
    # a vector is aligned to its element only (a vector type's own alignment is its size)
    v = b.load(ptr, typ=t) if lanes is None else b.load(b.bitcast(ptr, t.as_pointer()), typ=t,
                                                        align=d.itemsize)
    if d is DType.F16:
        return b.fpext(v, like(v.type, reg_type(d)))
    return b.icmp_unsigned("!=", v, const(v.type, 0)) if d.is_bool else v


def store_value(b: ir.IRBuilder, v: ir.Value, ptr: ir.Value, d: DType) -> None:
    """Store one element, or a vector of consecutive ones."""
    mt = like(v.type, mem_type(d))
    if d is DType.F16:
        v = b.fptrunc(v, mt)            # exact: the register holds an f16 value
    elif d.is_bool:
        v = b.zext(v, mt)
    if isinstance(v.type, ir.VectorType):
        b.store(v, b.bitcast(ptr, mt.as_pointer()), align=d.itemsize)
        return
    b.store(v, ptr)
