"""NumPy references for math functions NumPy lacks (erf), accurate to float64 rounding.

erf uses two expansions with no cancellation: for |x| < 3 the everywhere-convergent series
erf(x) = 2/sqrt(pi) * exp(-x^2) * sum_n (2x^2)^n x / (1*3*...*(2n+1)) (all terms positive), and
for 3 <= |x| < 6 the continued fraction of erfc; beyond 6, erf is +-1 to float64 precision.
"""
from __future__ import annotations

import math

import numpy as np

_SERIES_TERMS = 80     # at |x| < 3 the terms fall below 1e-17 of the sum well before this
_CF_DEPTH = 60         # the erfc continued fraction converges fast for x >= 3


def erf(x: np.ndarray) -> np.ndarray:
    a = np.asarray(x)
    x64 = a.astype(np.float64)
    ax = np.abs(x64)
    out = np.ones_like(x64)
    small = ax < 3.0
    if np.any(small):
        xs = ax[small]
        term = xs.copy()
        total = xs.copy()
        x2 = xs * xs
        for n in range(1, _SERIES_TERMS):
            term = term * (2.0 * x2) / (2 * n + 1)
            total += term
        out[small] = 2.0 / math.sqrt(math.pi) * np.exp(-x2) * total
    mid = (ax >= 3.0) & (ax < 6.0)
    if np.any(mid):
        xm = ax[mid]
        # erfc(x) = exp(-x^2)/sqrt(pi) * 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + ...)))))
        frac = xm.copy()
        for k in range(_CF_DEPTH, 0, -1):
            frac = xm + (k / 2.0) / frac
        out[mid] = 1.0 - np.exp(-xm * xm) / math.sqrt(math.pi) / frac
    out = np.where(np.isnan(x64), np.nan, np.copysign(out, x64))
    return out.astype(a.dtype) if a.dtype.kind == "f" else out
