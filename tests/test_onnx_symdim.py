"""Symbolic dim arithmetic of the ONNX importer (frontends/onnx/symdim.py)."""
from __future__ import annotations

from frontends.onnx.symdim import DerivedDims, SymDim, combine


def test_arithmetic_and_derived_names():
    d = DerivedDims()
    b4 = combine(d, "mul", "batch", 4)
    assert isinstance(b4, SymDim) and d.dim(b4) == "batch_x4"
    assert d.expr("batch_x4") == b4                       # the name gives the expression back
    assert combine(d, "div", "batch_x4", 4) == "batch"    # simplified to the plain name
    assert combine(d, "div", "batch_x4", 8) is None       # not exact: unknown
    assert d.dim(combine(d, "sub", "seq", 1)) == "seq_m1"
    assert combine(d, "sub", combine(d, "add", "seq", 3), 3) == "seq"
    assert combine(d, "mul", 6, 7) == 42 and combine(d, "div", -7, 2) == -3   # truncates
    assert d.dim(combine(d, "mul", "batch", "seq")) == "batch_seq"
    assert combine(d, "add", "batch", None) is None


def test_products_solve_a_reshape():
    d = DerivedDims()
    total = d.product([6, "batch", 32])
    rest = d.product([4, 8])
    assert d.dim(total.exact_div(rest)) == "batch_x6"
    assert d.product([None, 3]) is None
    assert SymDim.name("n").exact_div(SymDim.name("m")) is None
