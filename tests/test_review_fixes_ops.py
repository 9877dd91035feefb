"""Regressions from the op review: shapes the verifier could have rejected (or the reference
could have defined) that ended in a wrong result or a raw NumPy error at run time."""
from __future__ import annotations

import numpy as np
import pytest

from assembler import assemble
from dlvmrt import VM
from isa.errors import InvalidError, Trap


def run(text: str, *args):
    return VM(assemble(text), jit="off").run("main", *args)


def invalid(text: str) -> str:
    with pytest.raises(InvalidError) as e:
        assemble(text)
    return str(e.value)


F32 = np.float32


# ---- squeeze without axes ----------------------------------------------------------------------

def test_squeeze_without_axes_needs_static_shape():
    # N bound to 1 used to drop a second axis at run time: rank 0 where the verifier said rank 1
    msg = invalid("""func @main(%x: f32[2, N]) -> f32[2, N] {
  %y = squeeze %x
  ret %y
}""")
    assert "squeeze without axes needs a static shape" in msg and "list the axes" in msg


def test_squeeze_without_axes_static():
    (y,) = run("""func @main(%x: f32[1, 3, 1]) -> f32[3] {
  %y = squeeze %x
  ret %y
}""", np.arange(3, dtype=F32).reshape(1, 3, 1))
    assert y.shape == (3,)


# ---- pad ---------------------------------------------------------------------------------------

def test_pad_rank0_is_a_copy():
    (y,) = run("""func @main(%x: f32[]) -> f32[] {
  %y = pad %x {pads = []}
  ret %y
}""", F32(3))
    assert y.shape == () and y == 3


@pytest.mark.parametrize("value", ["nan", "inf", "1e30", "300.0"])
def test_pad_value_must_fit_an_integer_dtype(value):
    msg = invalid(f"""func @main(%x: i8[2]) -> i8[?] {{
  %y = pad %x {{pads = [1, 1], value = {value}}}
  ret %y
}}""")
    assert "pad value" in msg and "is not a value of i8" in msg


# ---- scatter_nd / gather_nd --------------------------------------------------------------------

def test_scatter_nd_checks_full_updates_shape():
    msg = invalid("""func @main(%x: f32[3, 2], %i: i64[1], %u: f32[1]) -> f32[3, 2] {
  %r = scatter_nd %x, %i, %u
  ret %r
}""")
    assert "scatter_nd updates f32[1] do not fit indices i64[1] into f32[3, 2]" in msg


def test_scatter_nd_named_dims_trap_cleanly():
    with pytest.raises(Trap) as e:
        run("""func @main(%x: f32[3, N], %i: i64[1], %u: f32[M]) -> f32[3, N] {
  %r = scatter_nd %x, %i, %u
  ret %r
}""", np.zeros((3, 2), F32), np.array([1]), np.ones(3, F32))
    assert "do not fit" in str(e.value) and e.value.__cause__ is None


def test_scatter_nd_empty_index_tuple_replaces_whole():
    (r,) = run("""func @main(%x: f32[2, 3], %i: i64[1, 0], %u: f32[1, 2, 3]) -> f32[2, 3] {
  %r = scatter_nd %x, %i, %u
  ret %r
}""", np.zeros((2, 3), F32), np.zeros((1, 0), np.int64), np.ones((1, 2, 3), F32))
    np.testing.assert_array_equal(r, np.ones((2, 3), F32))


def test_gather_nd_empty_index_tuple_takes_whole_slices():
    a = np.arange(6, dtype=F32).reshape(2, 3)
    (r,) = run("""func @main(%x: f32[2, 3], %i: i64[4, 0]) -> f32[4, 2, 3] {
  %r = gather_nd %x, %i
  ret %r
}""", a, np.zeros((4, 0), np.int64))
    np.testing.assert_array_equal(r, np.broadcast_to(a, (4, 2, 3)))
    (r,) = run("""func @main(%x: f32[2, 3], %i: i64[2, 0]) -> f32[2, 3] {
  %r = gather_nd %x, %i {batch_dims = 1}
  ret %r
}""", a, np.zeros((2, 0), np.int64))
    np.testing.assert_array_equal(r, a)


# ---- einsum ------------------------------------------------------------------------------------

def test_einsum_diagonal_needs_equal_dims():
    msg = invalid("""func @main(%x: f32[3, 1]) -> f32[?] {
  %r = einsum %x {equation = "ii->i"}
  ret %r
}""")
    assert "repeats letter 'i' on dims of sizes 3 and 1" in msg


def test_einsum_named_dims_trap_cleanly():
    text = """func @main(%x: f32[N, M]) -> f32[?] {
  %r = einsum %x {equation = "ii->i"}
  ret %r
}"""
    with pytest.raises(Trap) as e:
        run(text, np.zeros((3, 2), F32))
    assert "repeats letter 'i'" in str(e.value) and e.value.__cause__ is None
    (r,) = run(text, np.eye(3, dtype=F32))
    np.testing.assert_array_equal(r, np.ones(3, F32))


def test_einsum_operands_still_broadcast_a_one():
    (r,) = run("""func @main(%a: f32[N], %b: f32[M]) -> f32[?] {
  %r = einsum %a, %b {equation = "i,i->i"}
  ret %r
}""", np.full(1, 2, F32), np.arange(3, dtype=F32))
    np.testing.assert_array_equal(r, [0, 2, 4])
    with pytest.raises(Trap) as e:
        run("""func @main(%a: f32[N], %b: f32[M]) -> f32[?] {
  %r = einsum %a, %b {equation = "i,i->i"}
  ret %r
}""", np.ones(2, F32), np.ones(3, F32))
    assert "letter 'i' has sizes 2 and 3" in str(e.value)


# ---- dft, cumsum -------------------------------------------------------------------------------

def test_dft_rejects_length_zero():
    msg = invalid("""func @main(%x: f32[0, 1, 3, 1]) -> f32[?, ?, ?, ?] {
  %r = dft %x {axis = 0}
  ret %r
}""")
    assert "transform length of axis 0" in msg and "is 0" in msg
    with pytest.raises(Trap) as e:
        run("""func @main(%x: f32[N, 1]) -> f32[?, ?] {
  %r = dft %x {axis = 0}
  ret %r
}""", np.zeros((0, 1), F32))
    assert "transform length" in str(e.value) and e.value.__cause__ is None


@pytest.mark.parametrize("reverse", ["false", "true"])
def test_cumsum_exclusive_empty_axis(reverse):
    (r,) = run(f"""func @main(%x: f32[2, 0], %a: i64[]) -> f32[2, 0] {{
  %r = cumsum %x, %a {{exclusive = true, reverse = {reverse}}}
  ret %r
}}""", np.zeros((2, 0), F32), np.int64(1))
    assert r.shape == (2, 0)


def test_onnx_squeeze_without_axes_on_a_dynamic_shape_traps_on_a_run_time_1():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from frontends.onnx import import_onnx

    def model(shape):
        g = helper.make_graph([helper.make_node("Squeeze", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        return helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", 17)])

    # the static 1 goes; 'n' stays, checked at run time: ONNX would drop it too when it is 1
    vm = VM(import_onnx(model([1, 2, "n"])), jit="off")
    (y,) = vm.run("main", np.ones((1, 2, 3), F32))
    assert y.shape == (2, 3)
    with pytest.raises(Trap) as e:
        vm.run("main", np.ones((1, 2, 1), F32))
    assert "Squeeze without axes met a dim of size 1" in str(e.value)
    (y,) = VM(import_onnx(model([1, 3, 1]))).run("main", np.ones((1, 3, 1), F32))
    assert y.shape == (3,)


def test_scatter_elements_rejects_rank0():
    msg = invalid("""func @main(%x: f32[], %i: i64[], %u: f32[]) -> f32[] {
  %r = scatter_elements %x, %i, %u
  ret %r
}""")
    assert "scatter_elements needs indices and updates of a's rank (1 or more)" in msg


def test_scatter_nd_on_a_numpy_scalar():
    from isa.ops import OPS
    out = OPS["scatter_nd"].reference({"reduction": "none"}, np.bool_(False),
                                      np.zeros(0, np.int64), np.bool_(True))
    assert out.shape == () and out


@pytest.mark.parametrize("op, extra", [("gather_elements", ""), ("scatter_elements", ", %u")])
def test_elements_indices_may_not_exceed_data_off_axis(op, extra):
    params = "%x: u8[3, 1], %i: i64[1, 3]" + (", %u: u8[1, 3]" if extra else "")
    msg = invalid(f"""func @main({params}) -> u8[?, ?] {{
  %r = {op} %x, %i{extra}
  ret %r
}}""")
    assert f"{op}: indices i64[1, 3] exceed u8[3, 1] on axis 1" in msg


def test_scatter_elements_named_dims_trap_cleanly():
    with pytest.raises(Trap) as e:
        run("""func @main(%x: u8[3, 1], %i: i64[1, N], %u: u8[?, 3]) -> u8[3, 1] {
  %r = scatter_elements %x, %i, %u
  ret %r
}""", np.zeros((3, 1), np.uint8), np.zeros((1, 3), np.int64), np.zeros((1, 3), np.uint8))
    assert "exceed data" in str(e.value) and e.value.__cause__ is None


def test_scatter_elements_updates_must_match_indices():
    msg = invalid("""func @main(%x: f32[3, 3], %i: i64[1, 3], %u: f32[2, 3]) -> f32[3, 3] {
  %r = scatter_elements %x, %i, %u
  ret %r
}""")
    assert "indices i64[1, 3] and updates f32[2, 3] differ" in msg


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_scatter_nd_all_at_once_keeps_the_loops_meaning(reduction, k):
    # scatter_nd's reference scatters every index at once (ufunc.at, or the last of repeated
    # indices kept): the same result as one index at a time in order, NaN and repeats included
    from isa.ops.indexing import scatter_nd_ref
    rng = np.random.default_rng(k)
    a = rng.standard_normal((4, 5, 3)).astype(np.float32)
    idx = rng.integers(-2, 3, (7, 6, k)).astype(np.int64)     # repeats, negatives
    upd = rng.standard_normal((7, 6) + a.shape[k:]).astype(np.float32)
    upd.flat[5] = np.nan
    got = scatter_nd_ref({"reduction": reduction}, a, idx, upd)
    want = np.array(a)
    ops = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
    for j, at in enumerate(idx.reshape(-1, k)):
        at = tuple(int(v) % a.shape[d] for d, v in enumerate(at))
        u = upd.reshape((-1,) + a.shape[k:])[j]
        want[at] = u if reduction == "none" else ops[reduction](want[at], u)
    np.testing.assert_array_equal(got, want)
