"""Vectorizable math functions written in LLVM IR (exp, log, tanh, erf, sin, cos, pow).

LLVM's intrinsics for these become calls to scalar libm, which stops the loop vectorizer. Here
each is a small internal `alwaysinline` function of arithmetic, bit casts and selects only, so
after inlining a loop over them vectorizes. Branch-free: every path is computed and the right one
selected per element. Accuracy targets are in specs/tolerances.md; NaN, +-Inf, zeros and
denormals follow NumPy (checked in tests/test_jit_math.py).

sin and cos reduce arguments by pi/2 with a 4-part Cody-Waite split, exact for |x| < 2^19; a
larger finite argument sets status bit RANGE so that the call falls back to the interpreter.
"""
from __future__ import annotations

import math
from collections.abc import Callable

from llvmlite import ir

from . import polys
from .irutil import DEFAULT_FLAGS, F32, F64, I1, I32, I64, const, elem_type, intrinsic, like, type_suffix

FM = DEFAULT_FLAGS
DIV_FLAGS = ("contract",)     # exact division: estimates break at 0 and Inf (see ops.py)
SINCOS_LIMIT = float(2 ** 19)
# |2x| beyond which tanh x is +-1 after rounding: 2 e^-2|x| < 2^-25 (f32), 2^-54 (f64)
TANH_CLAMP = {False: 20.0, True: 40.0}


class _F:
    """Float helpers bound to a builder and a float type (scalar or vector: constants splat)."""

    def __init__(self, b: ir.IRBuilder, t: ir.Type):
        self.b, self.t = b, t
        self.double = elem_type(t) == F64
        self.it = like(t, I64 if self.double else I32)
        self.mbits = 52 if self.double else 23
        self.bias = 1023 if self.double else 127

    def c(self, v: float) -> ir.Constant:
        return const(self.t, float(v))

    def ci(self, v: int) -> ir.Constant:
        return const(self.it, v)

    def add(self, x, y):
        return self.b.fadd(x, y, flags=FM)

    def sub(self, x, y):
        return self.b.fsub(x, y, flags=FM)

    def mul(self, x, y):
        return self.b.fmul(x, y, flags=FM)

    def div(self, x, y):
        return self.b.fdiv(x, y, flags=DIV_FLAGS)

    def fma(self, x, y, z):
        f = intrinsic(self.b.module, "llvm.fma", self.t, [self.t] * 3)
        return self.b.call(f, [x, y, z])

    def unary(self, name: str, x):
        return self.b.call(intrinsic(self.b.module, name, self.t, [self.t]), [x])

    def copysign(self, x, s):
        return self.b.call(intrinsic(self.b.module, "llvm.copysign", self.t, [self.t, self.t]), [x, s])

    def lt(self, x, y):
        return self.b.fcmp_ordered("<", x, y)

    def ge(self, x, y):
        return self.b.fcmp_ordered(">=", x, y)

    def eq(self, x, y):
        return self.b.fcmp_ordered("==", x, y)

    def isnan(self, x):
        return self.b.fcmp_unordered("uno", x, x)

    def sel(self, c, x, y):
        return self.b.select(c, x, y)

    def horner(self, x, coeffs: list[float]):
        """c0 + x*(c1 + x*(c2 + ...)); with `contract` each step becomes an FMA."""
        acc = self.c(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self.fma(acc, x, self.c(c))
        return acc

    def clenshaw(self, t, coeffs: tuple[float, ...]):
        """sum_k c_k T_k(t), stable for any degree."""
        b1, b2 = self.c(0.0), self.c(0.0)
        t2 = self.add(t, t)
        for ck in reversed(coeffs[1:]):
            b1, b2 = self.sub(self.fma(t2, b1, self.c(ck)), b2), b1
        return self.sub(self.fma(t, b1, self.c(coeffs[0])), b2)

    def pow2i(self, n):
        """2^n as a float for an integer n in the normal exponent range."""
        bits = self.b.shl(self.b.add(n, self.ci(self.bias)), self.ci(self.mbits))
        return self.b.bitcast(bits, self.t)

    def to_int(self, x):
        return self.b.fptosi(x, self.it)


# ---- the functions ---------------------------------------------------------------------------

def _ln2(f: _F) -> tuple[float, float]:
    if f.double:
        return polys.LN2_HI_F64, polys.LN2_LO_F64
    return polys.LN2_HI_F32, polys.LN2_LO_F32


def _exp(f: _F, x):
    hi, lo = (710.0, -746.0) if f.double else (89.0, -104.0)
    nan = f.isnan(x)
    xc = f.sel(nan, f.c(0.0), x)
    xc = f.sel(f.lt(xc, f.c(lo)), f.c(lo), xc)
    xc = f.sel(f.lt(f.c(hi), xc), f.c(hi), xc)
    n = f.unary("llvm.rint", f.mul(xc, f.c(1 / math.log(2))))
    ln2_hi, ln2_lo = _ln2(f)
    r = f.fma(n, f.c(-ln2_hi), xc)
    r = f.fma(n, f.c(-ln2_lo), r)
    p = f.horner(r, polys.exp_taylor(13 if f.double else 7))
    ni = f.to_int(n)
    n1 = f.b.ashr(ni, f.ci(1))
    n2 = f.b.sub(ni, n1)
    y = f.mul(f.mul(p, f.pow2i(n1)), f.pow2i(n2))
    return f.sel(nan, x, y)


def _exp_le0(f: _F, x):
    """e^x for x <= 0, NaN or -Inf: softmax's exp(x - max(x)). No overflow to handle, and
    results below the smallest normal float flush to 0, which specs/tolerances.md allows (atol
    tiny; a softmax row sums to at least 1). 13 vector instructions against 27 for _exp.

    x is clamped to [-88, 0] (NaN passes the ordered compares and propagates through the
    polynomial): the lower end makes 2^n = 0 from its bits (n = -127, a zero exponent field);
    the upper end guards a row value recomputed a rounding above the maximum. n = round(x/ln2)
    by the magic-number addition of _expm1_bounded, e^x = 2^n (1 + r + r^2 q(r)) as one FMA."""
    x = f.sel(f.lt(x, f.c(-88.0)), f.c(-88.0), x)
    x = f.sel(f.lt(f.c(0.0), x), f.c(0.0), x)
    s, r = _pow2_and_rest(f, x)                                # s = 2^n, or 0 for n = -127
    em1 = f.fma(f.mul(r, r), f.horner(r, list(polys.expm1_tail_f32())), r)     # e^r - 1
    return f.fma(s, em1, s)


def _sigmoid_of(f: _F, z):
    """1 / (1 + e^z): sigmoid(x) with z = -x, the whole of sigmoid's expansion (and SiLU's).

    f32: z is clamped to [-88, 88] (NaN passes the ordered compares and propagates), so e^z is
    finite and needs neither the overflow nor the NaN handling of _exp: 2^n from n's bits
    (n = -127 gives 0, so 1 / (1 + 0) = 1 for z <= -88) times the polynomial, one FMA, as
    _exp_le0. Past z = 88 the result is 0, as 1 / (1 + Inf) is (sigmoid there is below 6.1e-39,
    within specs/tolerances.md's atol, the smallest normal float). 19 vector instructions
    against 31 through _exp: SiLU over a MobileNet-sized activation 1.5x faster. f64 keeps the
    general exp."""
    one = f.c(1.0)
    if f.double:
        return f.div(one, f.add(one, _exp(f, z)))
    beyond = f.lt(f.c(88.0), z)
    zc = f.sel(f.lt(z, f.c(-88.0)), f.c(-88.0), z)
    zc = f.sel(beyond, f.c(88.0), zc)
    s, r = _pow2_and_rest(f, zc)
    em1 = f.fma(f.mul(r, r), f.horner(r, list(polys.expm1_tail_f32())), r)     # e^r - 1
    return f.sel(beyond, f.c(0.0), f.div(one, f.add(one, f.fma(s, em1, s))))


def _log(f: _F, x):
    b = f.b
    tiny = f.lt(x, f.c(2.0 ** (-1022 if f.double else -126)))
    scale = 54 if f.double else 25
    xs = f.sel(tiny, f.mul(x, f.c(2.0 ** scale)), x)
    bits = b.bitcast(xs, f.it)
    expo = b.sub(b.and_(b.lshr(bits, f.ci(f.mbits)), f.ci((1 << (11 if f.double else 8)) - 1)), f.ci(f.bias))
    expo = b.sub(expo, b.select(tiny, f.ci(scale), f.ci(0)))
    mant = b.or_(b.and_(bits, f.ci((1 << f.mbits) - 1)), f.ci(f.bias << f.mbits))
    m = b.bitcast(mant, f.t)
    big = f.lt(f.c(math.sqrt(2.0)), m)
    m = f.sel(big, f.mul(m, f.c(0.5)), m)
    expo = b.add(expo, b.select(big, f.ci(1), f.ci(0)))
    e = b.sitofp(expo, f.t)
    g = f.sub(m, f.c(1.0))
    s = f.div(g, f.add(g, f.c(2.0)))
    z = f.mul(s, s)
    lm = f.mul(s, f.fma(z, f.horner(z, polys.log_atanh(11 if f.double else 5)), f.c(2.0)))
    ln2_hi, ln2_lo = _ln2(f)
    y = f.fma(e, f.c(ln2_hi), f.fma(e, f.c(ln2_lo), lm))
    y = f.sel(f.eq(x, f.c(math.inf)), x, y)
    y = f.sel(f.eq(x, f.c(0.0)), f.c(-math.inf), y)
    bad = b.or_(f.isnan(x), f.lt(x, f.c(0.0)))
    return f.sel(bad, f.c(math.nan), y)


def _expm1_bounded(f: _F, y):
    """e^y - 1 for |y| <= 40 (no overflow, no NaN handling needed: NaN flows through).

    y = n ln2 + r with |r| <= ln2/2; e^y - 1 = 2^n (e^r - 1) + (2^n - 1), one FMA. For n = 0 this
    is the polynomial itself, so the result keeps its relative accuracy near 0, where e^y - 1
    would cancel."""
    s, r = _pow2_and_rest(f, y)                                # 2^n, |n| <= 58: a normal float
    coeffs = polys.exp_taylor(14)[2:] if f.double else list(polys.expm1_tail_f32())
    p = f.fma(f.mul(r, r), f.horner(r, coeffs), r)
    return f.fma(s, p, f.sub(s, f.c(1.0)))


def _pow2_and_rest(f: _F, y):
    """(2^n, r) with y = n ln2 + r, |r| <= ln2/2, for the exps without overflow handling.

    n = round(y / ln2) by adding 1.5 * 2^mbits: n lands in the low mantissa bits of k, so 2^n
    is a shift of k's bits. Unlike fptosi this is defined for NaN (no poison); NaN goes on
    through r into the result."""
    magic = f.c(1.5 * 2.0 ** f.mbits)
    k = f.fma(y, f.c(1 / math.log(2)), magic)
    n = f.sub(k, magic)
    ln2_hi, ln2_lo = _ln2(f)
    r = f.fma(n, f.c(-ln2_hi), y)
    r = f.fma(n, f.c(-ln2_lo), r)
    bits = f.b.shl(f.b.add(f.b.bitcast(k, f.it), f.ci(f.bias)), f.ci(f.mbits))
    return f.b.bitcast(bits, f.t), r


def _tanh(f: _F, x):
    """tanh x = e / (e + 2) with e = e^2x - 1: a single branch-free path (one exp-like
    polynomial and one division) that vectorizes well and is accurate near 0 as well.

    2x is clamped to +-TANH_CLAMP, beyond which tanh rounds to +-1; NaN passes the clamp (its
    comparisons are false) and propagates. The sign is copied from x so that tanh(-0) = -0."""
    lim = f.c(TANH_CLAMP[f.double])
    y = f.add(x, x)
    y = f.sel(f.lt(y, f.b.fneg(lim)), f.b.fneg(lim), y)
    y = f.sel(f.lt(lim, y), lim, y)
    e = _expm1_bounded(f, y)
    return f.copysign(f.div(e, f.add(e, f.c(2.0))), x)


def _erf(f: _F, x):
    """erf by two interpolants (polys.erf_small, erf_big), both computed and one selected per
    lane. f32 evaluates them by Horner's rule on their power-basis coefficients (one FMA per
    degree, against Clenshaw's two; the degree-10 coefficients decrease, so Horner in f32 stays
    within 1.5e-7 of the interpolant) and the tail's e^(-x^2) by _exp_le0 (its argument is <= 0):
    35 vector instructions against 70, and the erf GELU of BERT, ViT and ConvNeXt is mostly erf."""
    a = f.unary("llvm.fabs", x)
    z = f.mul(x, x)
    t_small = f.sub(f.mul(z, f.c(0.5)), f.c(1.0))                  # s in [0, 4] -> [-1, 1]
    top = polys.ERF_BIG_HI[f.double]
    t_big = f.sub(f.mul(a, f.c(2.0 / (top - 2.0))), f.c((top + 2.0) / (top - 2.0)))
    if f.double:
        small = f.mul(x, f.clenshaw(t_small, polys.erf_small(True)))
        tail = f.mul(_exp(f, f.sub(f.c(0.0), z)), f.clenshaw(t_big, polys.erf_big(True)))
    else:
        small = f.mul(x, f.horner(t_small, list(polys.power_basis(polys.erf_small(False)))))
        tail = f.mul(_exp_le0(f, f.sub(f.c(0.0), z)),
                     f.horner(t_big, list(polys.power_basis(polys.erf_big(False)))))
    tail = f.sel(f.ge(a, f.c(top)), f.c(0.0), tail)      # NaN keeps its NaN tail
    big = f.copysign(f.sub(f.c(1.0), tail), x)
    return f.sel(f.lt(a, f.c(2.0)), small, big)


def _sincos(f: _F, x, want_cos: bool, status: Callable[[ir.Value], None]):
    """sin or cos in double precision (f32 arguments are widened by the caller)."""
    b = f.b
    a = f.unary("llvm.fabs", x)
    ok = f.lt(a, f.c(SINCOS_LIMIT))
    finite = f.lt(a, f.c(math.inf))
    status(b.and_(finite, b.not_(ok)))
    xr = f.sel(ok, x, f.c(0.0))
    n = f.unary("llvm.rint", f.mul(xr, f.c(2 / math.pi)))
    r = xr
    for part in polys.PIO2:
        r = f.fma(n, f.c(-part), r)
    q = f.to_int(n)
    if want_cos:
        q = b.add(q, f.ci(1))
    z = f.mul(r, r)
    s = f.fma(f.mul(r, z), f.horner(z, polys.sin_taylor(9)[1:]), r)
    c = f.horner(z, polys.cos_taylor(10))
    odd = b.trunc(b.and_(q, f.ci(1)), like(q.type, I1))
    neg = b.trunc(b.lshr(b.and_(q, f.ci(2)), f.ci(1)), like(q.type, I1))
    y = f.sel(odd, c, s)
    y = f.sel(neg, b.fneg(y), y)
    if not want_cos:    # the reduction's fma turns -0 into +0; sin(-0) is -0
        y = f.sel(f.eq(x, f.c(0.0)), x, y)
    return f.sel(ok, y, f.c(math.nan))


def _pow(f: _F, x, y):
    b = f.b
    ax = f.unary("llvm.fabs", x)
    r = _exp(f, f.mul(y, _log(f, ax)))
    y_int = f.eq(f.unary("llvm.rint", y), y)
    half = f.mul(y, f.c(0.5))
    odd = b.and_(y_int, b.fcmp_ordered("!=", f.unary("llvm.rint", half), half))
    sign_bit = b.icmp_signed("<", b.bitcast(x, f.it), f.ci(0))
    r = f.sel(b.and_(odd, sign_bit), b.fneg(r), r)
    neg_nonint = b.and_(f.lt(x, f.c(0.0)), b.not_(y_int))
    neg_nonint = b.and_(neg_nonint, b.fcmp_ordered("!=", x, f.c(-math.inf)))
    r = f.sel(neg_nonint, f.c(math.nan), r)
    one = b.or_(f.eq(y, f.c(0.0)), f.eq(x, f.c(1.0)))
    one = b.or_(one, b.and_(f.eq(x, f.c(-1.0)), f.eq(f.unary("llvm.fabs", y), f.c(math.inf))))
    return f.sel(one, f.c(1.0), r)


def _fn_name(name: str, t: ir.Type) -> str:
    """dlvm.exp.f32, or dlvm.exp.f32.x16 for the function on <16 x float>."""
    lanes = f".x{t.count}" if isinstance(t, ir.VectorType) else ""
    return f"dlvm.{name}.{type_suffix(elem_type(t))}{lanes}"


class MathLib:
    """Defines the math functions a module uses, once each, and calls them."""

    def __init__(self, mod: ir.Module, status: Callable[[ir.IRBuilder, ir.Value, int], None]):
        self.mod = mod
        self.status = status

    def _define(self, name: str, t: ir.Type, arity: int, body) -> ir.Function:
        full = _fn_name(name, t)
        if full in self.mod.globals:
            return self.mod.globals[full]
        fn = ir.Function(self.mod, ir.FunctionType(t, [t] * arity), name=full)
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        b.ret(body(_F(b, t), *fn.args))
        return fn

    def call(self, b: ir.IRBuilder, name: str, args: list[ir.Value]) -> ir.Value:
        t = args[0].type
        if name in ("sin", "cos"):
            return self._sincos(b, name, args[0])
        if name == "pow" and elem_type(t) == F32:
            # f32 pow in double: the error of y*log(x) would otherwise grow with |y log x|
            wide = [b.fpext(a, like(t, F64)) for a in args]
            return b.fptrunc(self.call(b, "pow", wide), t)
        if name == "exp_le0" and elem_type(t) == F64:
            name = "exp"           # the f32 polynomial only; f64 keeps the general exp
        body = {"exp": _exp, "exp_le0": _exp_le0, "log": _log, "tanh": _tanh, "erf": _erf,
                "pow": _pow, "sigmoid_of": _sigmoid_of}[name]
        return b.call(self._define(name, t, len(args), body), args)

    def _sincos(self, b: ir.IRBuilder, name: str, x: ir.Value) -> ir.Value:
        wt = like(x.type, F64)
        wide = b.fpext(x, wt) if elem_type(x.type) == F32 else x
        flag = []

        def body(f: _F, v):
            return _sincos(f, v, name == "cos", lambda c: flag.append(c))
        full = _fn_name(name, wt)
        if full not in self.mod.globals:
            # the range flag is a second result: return {double, i1}
            st = ir.LiteralStructType([wt, like(wt, I1)])
            fn = ir.Function(self.mod, ir.FunctionType(st, [wt]), name=full)
            fn.linkage = "internal"
            fn.attributes.add("alwaysinline")
            fb = ir.IRBuilder(fn.append_basic_block("entry"))
            y = body(_F(fb, wt), fn.args[0])
            agg = fb.insert_value(ir.Constant(st, None), y, 0)
            fb.ret(fb.insert_value(agg, flag[0], 1))
        res = b.call(self.mod.globals[full], [wide])
        self.status(b, b.extract_value(res, 1), 2)
        y = b.extract_value(res, 0)
        return b.fptrunc(y, x.type) if elem_type(x.type) == F32 else y
