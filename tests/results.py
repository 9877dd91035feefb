"""Comparing a compiled path's results with the interpreter's (shape, dtype, then values: floats
within a tolerance, everything else exactly)."""
from __future__ import annotations

import numpy as np


def close(got, want, tol: float = 2e-6) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(g, w)
