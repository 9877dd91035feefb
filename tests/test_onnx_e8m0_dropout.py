"""Casts to float8e8m0 by each round_mode, against onnx's own conversion, and Dropout whose
training_mode or ratio is a graph input (the mode selects at run time)."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("ml_dtypes")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dlvmrt  # noqa: E402
from frontends.onnx import import_onnx  # noqa: E402

VALUES = np.array([0.0, -0.0, 0.124, 0.25, 0.5, 0.75, 1.1, 1.5, 1.75, -3.0, 2.0, 4.0, 6.0, 1e-39,
                   3e-39, 1e-45, 1.7e38, 3.0e38, np.inf, -np.inf, np.nan, 65504.0, 2.0 ** -127,
                   np.float32(1.0) + np.float32(2.0 ** -22), 1.0 + 2.0 ** -2 + 2.0 ** -21],
                  np.float32)


def _cast_model(round_mode: str, saturate: int, src: int) -> bytes:
    node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E8M0, round_mode=round_mode,
                            saturate=saturate)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", src, [len(VALUES)])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT8E8M0, [len(VALUES)])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 24)]).SerializeToString()


@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("src", [TensorProto.FLOAT, TensorProto.FLOAT16])
def test_cast_to_e8m0_rounds_as_onnx(round_mode, saturate, src):
    with np.errstate(over="ignore"):       # beyond f16's range: its infinities
        x = VALUES if src == TensorProto.FLOAT else VALUES.astype(np.float16)
    want = numpy_helper.to_float8e8m0(x.astype(np.float32), bool(saturate), round_mode)
    (got,) = dlvmrt.VM(import_onnx(_cast_model(round_mode, saturate, src)), jit="off").run("main", x)
    np.testing.assert_array_equal(np.asarray(got).view(np.uint8), np.asarray(want).view(np.uint8))


def _dropout_model(mask: bool) -> bytes:
    outs = ["y", "z"] if mask else ["y"]
    node = helper.make_node("Dropout", ["x", "r", "t"], outs, seed=0)
    g = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4]),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("t", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT if o == "y" else TensorProto.BOOL,
                                       [3, 4]) for o in outs])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 22)]).SerializeToString()


@pytest.mark.parametrize("mask", [False, True])
def test_dropout_with_run_time_mode_and_ratio(mask):
    vm = dlvmrt.VM(import_onnx(_dropout_model(mask)), jit="off")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for r, t in ((0.0, True), (0.5, False), (0.0, False)):
        out = vm.run("main", x, np.float32(r), np.bool_(t))
        np.testing.assert_array_equal(out[0], x)
        if mask:
            assert out[1].dtype == np.bool_ and out[1].all()
    y, *m = vm.run("main", x + 1, np.float32(0.5), np.bool_(True))  # training: dropped or doubled
    assert np.all((y == 0) | (y == 2 * (x + 1)))
    if mask:
        np.testing.assert_array_equal(m[0], y != 0)
