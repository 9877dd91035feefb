"""The narrow storage formats (specs/semantics.md, "Values and types"): bf16, the float8 and
float4 formats and the 2- and 4-bit integers. Each instruction that touches one computes in the
wide dtype and rounds its results back; the oracle here does that by hand with ml_dtypes. The
text form, the bytecode, the JIT (which declines them) and constant folding must all agree with
the interpreter."""
from __future__ import annotations

import numpy as np
import pytest

ml_dtypes = pytest.importorskip("ml_dtypes")

import assembler  # noqa: E402
import dlvmrt  # noqa: E402
from isa.bytecode import decode, encode  # noqa: E402
from isa.dtypes import NARROW, DType, dtype_from_numpy  # noqa: E402
from jit.passes.constfold import fold_constants  # noqa: E402

BF16 = ml_dtypes.bfloat16

PROGRAM = """
module narrow
const @w : bf16[4] = [0.5, 1.5, -2.0, 3.0]

func @main(%x: bf16[4], %y: f32[4]) -> (bf16[4], i4[4], f8e4m3fn[4], u2[4], f32[4]) {
  %a = mul %x, @w
  %b = exp %a
  %c = add %b, 1.0
  %i = cast %y {to = i4}
  %f = cast %y {to = f8e4m3fn}
  %j = cast %y {to = i32}
  %u = cast %j {to = u2}
  %back = cast %c {to = f32}
  ret %c, %i, %f, %u, %back
}
"""

X = np.array([1, 2, 0.25, -1], BF16)
Y = np.array([-9.5, 7.9, 1e6, np.nan], np.float32)


def oracle():
    w = np.array([0.5, 1.5, -2.0, 3.0], np.float32).astype(BF16)
    # each instruction: f32 arithmetic, rounded once to bf16
    a = (X.astype(np.float32) * w.astype(np.float32)).astype(BF16)
    b = np.exp(a.astype(np.float32)).astype(BF16)
    c = (b.astype(np.float32) + 1.0).astype(BF16)
    i = np.array([-8, 7, 7, 0]).astype(ml_dtypes.int4)          # truncate, saturate, NaN -> 0
    f = Y.astype(ml_dtypes.float8_e4m3fn)                      # 1e6 and NaN: NaN (no infinity)
    u = (np.array([-9, 7, 1000000, 0]) & 3).astype(ml_dtypes.uint2)      # wraps modulo 4
    return c, i, f, u, c.astype(np.float32)


def same(got, want) -> None:
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(g, w, equal_nan=True), (got, want)


@pytest.mark.parametrize("jit", ["off", "always"])
def test_narrow_program_matches_oracle(jit):
    vm = dlvmrt.VM(assembler.assemble(PROGRAM), jit=jit)
    for got, want in zip(vm.run("main", X, Y), oracle()):
        same(got, want)


def test_text_and_bytecode_round_trip():
    mod = assembler.assemble(PROGRAM)
    text = assembler.disassemble(mod)
    assert "bf16[4]" in text and "f8e4m3fn[4]" in text and "{to = u2}" in text
    again = assembler.assemble(text)
    decoded = decode(encode(mod))
    assert decoded.constants["w"].value.dtype == np.dtype(BF16)
    for m in (again, decoded):
        for got, want in zip(dlvmrt.VM(m).run("main", X, Y), oracle()):
            same(got, want)


def test_every_narrow_dtype_is_named_and_coded():
    assert {d.text for d in NARROW} == {"bf16", "f8e4m3fn", "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz",
                                        "f8e8m0fnu", "f4e2m1fn", "i4", "u4", "i2", "u2"}
    for d in NARROW:
        assert dtype_from_numpy(d.np) is d
        assert d.wide in (DType.F32, DType.I8, DType.U8)
        assert d.is_float != d.is_int
    assert DType.I4.int_range() == (-8, 7) and DType.U2.int_range() == (0, 3)
    assert DType.F8E4M3FN.float_max() == 448.0


def test_constant_folding_rounds_like_the_interpreter():
    src = """
module fold
const @a : bf16[3] = [1.0, 3.0, 0.1]
func @main() -> bf16[3] {
  %s = add @a, 0.003
  %t = mul %s, 3.0
  ret %t
}
"""
    mod = assembler.assemble(src)
    want = dlvmrt.VM(mod).run("main")[0]
    assert fold_constants(mod)                  # in place
    assert [ins.op for ins in mod.functions["main"].blocks[0].instrs if ins.op != "const"] == \
        ["ret"], assembler.disassemble(mod)
    same(dlvmrt.VM(mod).run("main")[0], want)
    a = np.array([1.0, 3.0, 0.1], np.float32).astype(BF16).astype(np.float32)
    s = (a + np.float32(0.003)).astype(BF16).astype(np.float32)
    same(want, (s * 3).astype(BF16))


def test_integer_division_by_zero_traps_in_int4():
    src = """
module div
func @main(%a: i4[2], %b: i4[2]) -> i4[2] {
  %q = div %a, %b
  ret %q
}
"""
    vm = dlvmrt.VM(assembler.assemble(src))
    i4 = ml_dtypes.int4
    same(vm.run("main", np.array([7, -8], i4), np.array([2, 3], i4))[0], np.array([3, -2], i4))
    from isa.errors import Trap
    with pytest.raises(Trap, match="division by zero"):
        vm.run("main", np.array([1, 2], i4), np.array([1, 0], i4))


def test_wrong_narrow_argument_dtype_is_a_clean_trap():
    vm = dlvmrt.VM(assembler.assemble(PROGRAM))
    from isa.errors import Trap
    with pytest.raises(Trap, match="bf16"):
        vm.run("main", X.astype(np.float32), Y)


def test_without_ml_dtypes_the_error_names_the_package(monkeypatch):
    from isa import dtypes
    monkeypatch.delitem(dtypes._NP, DType.BF16)
    with pytest.raises(dtypes.NarrowDTypeUnavailable, match="ml_dtypes"):
        DType.BF16.np   # noqa: B018 - the property raises


INNER = """
module inner
func @main(%x: f32[4]) -> f32[4] {
  %b = cast %x {to = bf16}
  %t = reshape %b {shape = [2, 2]}
  %u = reshape %t {shape = [4]}
  %y = cast %u {to = f32}
  ret %y
}
"""


@pytest.mark.parametrize("source", [PROGRAM, INNER], ids=["signature", "inside"])
def test_native_library_declines_narrow_programs(tmp_path, source):
    # a clean refusal naming the dtype (the C of a movement op would otherwise not compile),
    # and the VM with the native tier on runs the program itself
    from jit.targets.aot import AotError, compile_library
    with pytest.raises(AotError, match="the bf16 dtype"):
        compile_library(assembler.assemble(source), tmp_path / "lib")
    vm = dlvmrt.VM(assembler.assemble(source), native="always")
    args = (X, Y) if source is PROGRAM else (np.array([1.0, 2.5, 3.3, -7.1], np.float32),)
    for _ in range(3):
        got = vm.run("main", *args)
    if source is INNER:
        same(got[0], args[0].astype(BF16).astype(np.float32))


def test_onnx_bf16_node_rounds_once_and_keeps_its_stash_outputs_f32():
    # a node with bf16 inputs computes in f32 and rounds the outputs of its inputs' type once;
    # LayerNormalization's Mean and InvStdDev are its stash type (f32) and stay so
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    from frontends.onnx import import_onnx
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y", "mean", "inv"], axis=-1)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, TensorProto.BFLOAT16, sh)
                                        for n, sh in (("x", [3, 8]), ("s", [8]), ("b", [8]))],
                          [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, None),
                           helper.make_tensor_value_info("mean", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("inv", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    rng = np.random.default_rng(5)
    feeds = {"x": (rng.standard_normal((3, 8)) * 3).astype(BF16),
             "s": rng.uniform(0.5, 1.5, 8).astype(BF16), "b": rng.standard_normal(8).astype(BF16)}
    got = dlvmrt.VM(import_onnx(m)).run("main", *feeds.values())
    want = ReferenceEvaluator(m).run(None, feeds)
    assert [g.dtype for g in got] == [np.dtype(BF16), np.float32, np.float32]
    np.testing.assert_allclose(got[0].astype(np.float32), want[0].astype(np.float32),
                               rtol=2 ** -7, atol=2 ** -7)
    # (the reference averages in bf16, dlvm in f32: they agree to bf16's precision)
    for g_, w in zip(got[1:], want[1:]):
        np.testing.assert_allclose(g_, np.asarray(w, np.float32).reshape(g_.shape), rtol=2 ** -7)
    del onnx
