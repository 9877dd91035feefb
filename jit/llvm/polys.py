"""Coefficients of the polynomial approximations used by the IR math library (mathfn.py),
computed here from their definitions so that every constant has a visible origin.

Taylor coefficients come from exact rational arithmetic; erf uses Chebyshev interpolation of the
float64-accurate reference `isa.ops.mathref.erf` (and of erfc by its continued fraction), with
the number of terms chosen from where the coefficients fall below the target precision.
"""
from __future__ import annotations

import math
from fractions import Fraction
from functools import cache

import numpy as np


def exp_taylor(degree: int) -> list[float]:
    return [1.0 / math.factorial(k) for k in range(degree + 1)]


@cache
def expm1_tail_f32() -> tuple[float, ...]:
    """q with e^r - 1 = r + r^2 q(r) on |r| <= ln2/2, degree 4, for f32 (relative error of the
    whole 2.5e-8, a fifth of an f32 ulp; the Taylor series needs degree 6 for that). A least
    squares fit at Chebyshev nodes, which is within a hair of the minimax polynomial."""
    h = math.log(2) / 2
    n = 64
    r = h * np.cos(np.pi * (np.arange(n) + 0.5) / n)
    q = (np.expm1(r) - r) / r ** 2
    return tuple(float(c) for c in np.polynomial.polynomial.polyfit(r, q, 4))


def _bernoulli(n: int) -> list[Fraction]:
    b = [Fraction(1)]
    for m in range(1, n + 1):
        b.append(-sum(math.comb(m + 1, k) * b[k] for k in range(m)) / (m + 1))
    return b


def tanh_taylor(terms: int) -> list[float]:
    """c_n of tanh x = sum_n c_n x^(2n+1), n = 0..terms-1."""
    b = _bernoulli(2 * terms + 2)
    out = []
    for n in range(1, terms + 1):
        c = Fraction(2 ** (2 * n) * (2 ** (2 * n) - 1)) * b[2 * n] / math.factorial(2 * n)
        out.append(float(c))
    return out


def sin_taylor(terms: int) -> list[float]:
    """c_n of sin r = sum_n c_n r^(2n+1)."""
    return [(-1) ** n / math.factorial(2 * n + 1) for n in range(terms)]


def cos_taylor(terms: int) -> list[float]:
    """c_n of cos r = sum_n c_n r^(2n)."""
    return [(-1) ** n / math.factorial(2 * n) for n in range(terms)]


def log_atanh(terms: int) -> list[float]:
    """c_k of log(m) = s * (2 + z * sum_k c_k z^k), s = (m-1)/(m+1), z = s^2."""
    return [2.0 / (2 * k + 3) for k in range(terms)]


def _cheb_fit(f, lo: float, hi: float, degree: int) -> list[float]:
    """Chebyshev interpolant of f on [lo, hi] at degree+1 Chebyshev nodes, as coefficients in
    the variable t = (2x - lo - hi) / (hi - lo) (evaluated with Clenshaw's recurrence)."""
    n = degree + 1
    k = np.arange(n)
    t = np.cos(np.pi * (k + 0.5) / n)
    x = 0.5 * (hi + lo) + 0.5 * (hi - lo) * t
    return [float(v) for v in np.polynomial.chebyshev.chebfit(t, f(x), degree)]


def _erfc_scaled(x: np.ndarray) -> np.ndarray:
    """erfc(x) * exp(x^2) for x >= 2 by the continued fraction of erfc (deep enough to converge)."""
    frac = x.copy()
    for k in range(4000, 0, -1):
        frac = x + (k / 2.0) / frac
    return 1.0 / (math.sqrt(math.pi) * frac)


@cache
def erf_small(double: bool) -> tuple[float, ...]:
    """Chebyshev coefficients of erf(sqrt s) / sqrt s on s in [0, 4] (|x| < 2)."""
    from isa.ops.mathref import erf

    def f(s):
        r = np.sqrt(s)
        out = np.where(s > 0, erf(r) / np.where(r > 0, r, 1.0), 2 / math.sqrt(math.pi))
        return out
    return tuple(_cheb_fit(f, 0.0, 4.0, 19 if double else 10))


def power_basis(cheb: tuple[float, ...]) -> tuple[float, ...]:
    """The same polynomial in powers of t (for Horner's rule): sum_k p_k t^k."""
    return tuple(float(v) for v in np.polynomial.chebyshev.cheb2poly(np.array(cheb)))


ERF_BIG_HI = {True: 6.0, False: 4.0}   # beyond these |x|, erf is +-1 in f64 / f32


@cache
def erf_big(double: bool) -> tuple[float, ...]:
    """Chebyshev coefficients of erfc(x) * exp(x^2) on [2, ERF_BIG_HI]."""
    return tuple(_cheb_fit(_erfc_scaled, 2.0, ERF_BIG_HI[double], 24 if double else 10))


# Cody-Waite splits of pi/2 (each part exactly representable with trailing zero bits, so that
# n * part is exact for |n| < 2^20) and ln 2 for the reductions of sin/cos and exp/log.
PIO2 = (1.57079632673412561417e+00, 6.07710050630396597660e-11, 2.02226624871116645580e-21,
        8.47842766036889956997e-32)
LN2_HI_F64, LN2_LO_F64 = 6.93147180369123816490e-01, 1.90821492927058770002e-10
LN2_HI_F32, LN2_LO_F32 = 0.693359375, -2.12194440e-4
