"""MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv computed exactly in floats
(frontends/onnx/ops/integer_products.py): bit for bit the integer results, in one f32 product,
in pieces along K, or in f64, interpreted and compiled."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from ort_integer import integer_products_saturate  # noqa: E402

import dlvmrt  # noqa: E402
from assembler import disassemble  # noqa: E402
from frontends.onnx import import_onnx  # noqa: E402
from frontends.onnx.ops.integer_products import F32, F64, MAX_PIECES, plan  # noqa: E402

pytestmark = pytest.mark.onnx


def _model(node, inputs, outputs, inits) -> bytes:
    g = helper.make_graph([node], "g", inputs, outputs,
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


def _run_both(model: bytes, *args) -> list[np.ndarray]:
    module = import_onnx(model)
    outs = [dlvmrt.VM(module, jit=jit).run("main", *args) for jit in ("off", "always")]
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
    return outs[0], module


def test_plan_fits_f32_pieces_then_f64():
    assert plan(512, 255, 127) == (F32, 1)             # 255 * 127 * 512 < 2^24
    assert plan(1024, 255, 127) == (F32, 2)
    assert plan(518 * MAX_PIECES, 255, 127) == (F32, MAX_PIECES)
    assert plan(518 * MAX_PIECES + 1, 255, 127)[0] == F64
    assert plan(None, 255, 255) == (F64, 1)            # K unknown at import
    assert plan(64, 2**31, 2**31) == (None, 1)         # 32-bit operands: the integer product
    assert plan(9 * 64, 255, 128, unit=9) == (F32, 2)  # whole channels of a 3x3 kernel


# K, whether a's zero point is a constant, the f32 products expected (0: one f64 product).
# A run-time zero point centres u8 activations on 128 (magnitude 128, not 255); a constant one
# (131) centres them itself (magnitude 131)
@pytest.mark.parametrize("k,const_zp,products", [(40, False, 1), (1100, False, 2), (1100, True, 2),
                                                 (6000, False, 6), (6000, True, 7),
                                                 (20000, False, 0)])
def test_matmul_integer_is_exact(k, const_zp, products):
    rng = np.random.default_rng(k)
    a = rng.integers(0, 256, (2, 5, k), dtype=np.uint8)
    b = rng.integers(-128, 128, (k, 7), dtype=np.int8)
    b_zp = rng.integers(-3, 3, (7,), dtype=np.int8)
    a_zp = np.array(131, np.uint8)
    node = helper.make_node("MatMulInteger", ["a", "b", "a_zp", "b_zp"], ["y"])
    inputs = [helper.make_tensor_value_info("a", TensorProto.UINT8, ["n", 5, k])]
    inits = {"b": b, "b_zp": b_zp}
    if const_zp:
        inits["a_zp"] = a_zp
    else:
        inputs.append(helper.make_tensor_value_info("a_zp", TensorProto.UINT8, []))
    model = _model(node, inputs, [helper.make_tensor_value_info("y", TensorProto.INT32, None)], inits)
    (y,), module = _run_both(model, a, *([] if const_zp else [a_zp]))
    want = (a.astype(np.int64) - 131) @ (b.astype(np.int64) - b_zp)
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, want)
    text = disassemble(module)
    assert text.count("matmul") == max(products, 1)
    assert ("f64[" in text) == (products == 0)


@pytest.mark.parametrize("c,group", [(8, 1), (96, 1), (96, 4)])    # one piece, 2, grouped (f64)
def test_conv_integer_is_exact(c, group):
    rng = np.random.default_rng(c + group)
    x = rng.integers(0, 256, (2, c, 9, 10), dtype=np.uint8)
    w = rng.integers(-128, 128, (6 * group, c // group, 3, 3), dtype=np.int8)
    node = helper.make_node("ConvInteger", ["x", "w", "x_zp"], ["y"], pads=[1, 1, 1, 1],
                            group=group)
    model = _model(node, [helper.make_tensor_value_info("x", TensorProto.UINT8, ["n", c, 9, 10]),
                          helper.make_tensor_value_info("x_zp", TensorProto.UINT8, [])],
                   [helper.make_tensor_value_info("y", TensorProto.INT32, None)], {"w": w})
    (y,), _ = _run_both(model, x, np.array(7, np.uint8))
    xc = np.pad(x.astype(np.int64) - 7, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros((2, 6 * group, 9, 10), np.int64)
    cg, og = c // group, 6
    for o in range(6 * group):
        g = o // og
        for i in range(3):
            for j in range(3):
                want[:, o] += np.einsum("nchw,c->nhw", xc[:, g * cg:(g + 1) * cg, i:i + 9, j:j + 10],
                                        w[o, :, i, j].astype(np.int64))
    np.testing.assert_array_equal(y, want)


def test_qlinear_ops_match_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(5)
    k = 1200                                           # 3 f32 pieces
    b = rng.integers(0, 256, (k, 16), dtype=np.uint8)
    inits = {"a_s": np.array(0.02, np.float32), "a_zp": np.array(120, np.uint8),
             "b": b, "b_s": np.array(0.01, np.float32), "b_zp": np.array(128, np.uint8),
             "y_s": np.array(3.0, np.float32), "y_zp": np.array(100, np.uint8)}
    node = helper.make_node("QLinearMatMul", ["a", "a_s", "a_zp", "b", "b_s", "b_zp", "y_s", "y_zp"],
                            ["y"])
    model = _model(node, [helper.make_tensor_value_info("a", TensorProto.UINT8, [3, k])],
                   [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], inits)
    a = rng.integers(0, 256, (3, k), dtype=np.uint8)
    (y,), _ = _run_both(model, a)
    acc = (a.astype(np.int64) - 120) @ (b.astype(np.int64) - 128)
    np.testing.assert_array_equal(y, _requantized(acc, _scale(0.02, 0.01, 3.0), 100))
    _one_step_from_onnxruntime(ort, model, {"a": a}, y)

    w = rng.integers(-127, 128, (8, 64, 3, 3), dtype=np.int8)     # 2 pieces of 32 channels
    inits = {"x_s": np.array(0.05, np.float32), "x_zp": np.array(10, np.uint8), "w": w,
             "w_s": np.full(8, 0.01, np.float32), "w_zp": np.zeros(8, np.int8),
             "y_s": np.array(0.5, np.float32), "y_zp": np.array(128, np.uint8),
             "bias": rng.integers(-500, 500, 8).astype(np.int32)}
    node = helper.make_node("QLinearConv", ["x", "x_s", "x_zp", "w", "w_s", "w_zp", "y_s", "y_zp",
                                            "bias"], ["y"], pads=[1, 1, 1, 1])
    model = _model(node, [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 64, 6, 6])],
                   [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], inits)
    x = rng.integers(0, 256, (1, 64, 6, 6), dtype=np.uint8)
    (y,), _ = _run_both(model, x)
    xc = np.pad(x.astype(np.int64) - 10, ((0, 0), (0, 0), (1, 1), (1, 1)))
    acc = sum(np.einsum("nchw,oc->nohw", xc[:, :, i:i + 6, j:j + 6], w[:, :, i, j].astype(np.int64))
              for i in range(3) for j in range(3)) + inits["bias"].reshape(-1, 1, 1)
    np.testing.assert_array_equal(y, _requantized(acc, _scale(0.05, 0.01, 0.5), 128))
    _one_step_from_onnxruntime(ort, model, {"x": x}, y)


def _scale(a_s: float, b_s: float, y_s: float) -> np.float64:
    """the frontend's requantization scale: the f32 scales' a * b / y in f64"""
    f64 = np.float64
    return f64(np.float32(a_s)) * f64(np.float32(b_s)) / f64(np.float32(y_s))


def _requantized(acc: np.ndarray, scale: float, zp: int) -> np.ndarray:
    """the frontend's rule: acc * scale in f64, rounded half to even, plus the zero point"""
    return np.clip(np.rint(acc * np.float64(scale)) + zp, 0, 255).astype(np.uint8)


def _one_step_from_onnxruntime(ort, model: bytes, feeds: dict, y: np.ndarray) -> None:
    # onnxruntime requantizes in f32: a product on a rounding tie may land one step apart. Its
    # u8 x s8 products saturate on CPUs without VNNI (tests/ort_integer.py): there the exact
    # reference the callers compared with first is the only one
    if integer_products_saturate():
        return
    got = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    assert np.abs(got.astype(np.int64) - y).max() <= 1


def test_qlinear_matmul_of_float8_weights_is_not_bounded_as_integers():
    # opset 21 lets b be float8: its values are not integers, so no integer bound (nor the
    # column sums in i32) applies; the product stays f64
    from onnx.numpy_helper import to_array
    rng = np.random.default_rng(0)
    k = 30000       # read as integers (|b| <= 3), b would take the midpoint path
    vals = (rng.integers(-6, 7, (k, 4)) * 0.5 + 0.25).astype(np.float32)
    b = helper.make_tensor("b", TensorProto.FLOAT8E4M3FN, [k, 4], vals.reshape(-1).tolist())
    b_zp = helper.make_tensor("b_zp", TensorProto.FLOAT8E4M3FN, [], [0.0])
    scales = [numpy_helper.from_array(np.array(v, np.float32), n)
              for n, v in (("a_s", 1.0), ("b_s", 1.0), ("y_s", 10000.0))]
    node = helper.make_node("QLinearMatMul", ["a", "a_s", "a_zp", "b", "b_s", "b_zp", "y_s", "y_zp"],
                            ["y"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.UINT8, [3, k]),
                                        helper.make_tensor_value_info("a_zp", TensorProto.UINT8, [])],
                          [helper.make_tensor_value_info("y", TensorProto.INT8, None)],
                          [b, b_zp, *scales, numpy_helper.from_array(np.array(0, np.int8), "y_zp")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]).SerializeToString()
    a = rng.integers(0, 256, (3, k), dtype=np.uint8)
    (y,), _ = _run_both(model, a, np.array(0, np.uint8))
    acc = a.astype(np.float64) @ to_array(b).astype(np.float64)
    np.testing.assert_array_equal(y, np.clip(np.rint(acc / 10000.0), -128, 127).astype(np.int8))
