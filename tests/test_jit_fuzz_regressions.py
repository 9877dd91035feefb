"""Minimal programs of the JIT bugs the differential fuzzer (tests/test_fuzz_jit.py) and a
first-hour user found; each gave a wrong result or a different trap compiled."""
from __future__ import annotations

import numpy as np
import pytest

import assembler
import dlvmrt
from isa.errors import Trap


def both(text: str, *args):
    m = assembler.parse(text)
    return dlvmrt.VM(m, jit="always").run("main", *args), dlvmrt.VM(m, jit="off").run("main", *args)


@pytest.mark.parametrize("dtype,shape,axis", [
    ("f64", (2, 2), 1), ("f32", (5, 1, 3), 2), ("f32", (4, 1, 1, 6), 3), ("f32", (17, 17), 1),
    ("f32", (3, 2), 1)])
def test_reduce_mean_rows_line_up_with_the_outer_axes(dtype, shape, axis):
    # reduce_mean is sum / count: the division's result was aligned from the right like a
    # broadcast, so a [2, 2] reduced over axis 1 wrote [2] along the reduced axis
    t = f"{dtype}[{', '.join(map(str, shape))}]"
    r = f"{dtype}[{', '.join(str(d) for i, d in enumerate(shape) if i != axis)}]"
    text = (f"module r\nfunc @main(%x: {t}) -> {r} {{\nentry:\n"
            f"  %r = reduce_mean %x {{axes = [{axis}]}}\n  ret %r\n}}\n")
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype.replace("f", "float"))
    if shape == (2, 2):
        x = np.array([[-5, 6], [6, 1]], np.float64)
    got, want = both(text, x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)


def test_reduction_over_axis_0_then_reduce_mean():
    text = """module r
func @main(%x: f32[5, 17, 17]) -> f32[17] {
entry:
  %a = reduce_sum %x {axes = [0]}
  %b = reduce_mean %a {axes = [1]}
  ret %b
}
"""
    x = np.random.default_rng(1).standard_normal((5, 17, 17)).astype(np.float32)
    got, want = both(text, x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    assert len(set(got[0].tolist())) > 1


def test_batched_product_with_an_empty_inner_dim():
    text = """module k0
func @main(%a: f32[3, 7, 0], %b: f32[0, 2]) -> f32[3, 7, 2] {
entry:
  %p = matmul %a, %b
  %q = add %p, 1.0
  ret %q
}
"""
    got, want = both(text, np.zeros((3, 7, 0), np.float32), np.zeros((0, 2), np.float32))
    np.testing.assert_array_equal(got[0], want[0])
    assert (got[0] == 1).all()


@pytest.mark.parametrize("body,args", [
    ("%d = div %x, %y", lambda: [np.arange(4, dtype=np.int32), np.array([1, 0, 2, 3], np.int32)]),
    ("%d = mod %x, %y", lambda: [np.arange(4, dtype=np.int32), np.array([1, 0, 2, 3], np.int32)]),
    ("%d = pow %x, -3", lambda: [np.arange(4, dtype=np.int32), np.ones(4, np.int32)]),
], ids=["div", "mod", "pow"])
def test_a_trap_in_dead_code_traps_compiled_too(body, args):
    text = f"""module dead
func @main(%x: i32[4], %y: i32[4]) -> i32[4] {{
entry:
  %a = add %x, 1
  {body}
  %b = mul %a, 2
  ret %b
}}
"""
    m = assembler.parse(text)
    for mode in ("off", "always"):
        with pytest.raises(Trap) as e:
            dlvmrt.VM(m, jit=mode).run("main", *args())
        assert "instruction 1" in e.value.format()


@pytest.mark.parametrize("src", ["f32", "f64"])
@pytest.mark.parametrize("to", ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"])
def test_float_to_int_casts_saturate_alike(src, to):
    x = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 2.7, -2.7, 2.0**63, -2.0**63, 2.0**31,
                  255.9, -0.5, 65535.5], src.replace("f", "float"))
    text = (f"module c\nfunc @main(%x: {src}[13]) -> {to}[13] {{\nentry:\n  %a = mul %x, 1.0\n"
            f"  %y = cast %a {{to = {to}}}\n  ret %y\n}}\n")
    got, want = both(text, x)
    np.testing.assert_array_equal(got[0], want[0])
    info = np.iinfo(to.replace("i", "int").replace("uint", "uint") if to[0] == "i" else
                    to.replace("u", "uint"))
    assert got[0][0] == 0 and got[0][1] == info.max and got[0][2] == info.min
