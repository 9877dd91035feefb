"""The run-time `resize` op against the import-time Resize (gathers and products from the same
tap math): one ONNX Resize with its scales or sizes as an initializer and as a graph input."""
from __future__ import annotations

import numpy as np
import pytest

from isa.errors import Trap
from isa.ops import OPS

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dlvmrt  # noqa: E402
from frontends.onnx import import_onnx  # noqa: E402

CASES = [
    ("linear", "half_pixel", "scales", [1, 1, 2.0, 0.5]),
    ("cubic", "align_corners", "scales", [1, 1, 0.6, 1.7]),
    ("nearest", "asymmetric", "sizes", [1, 2, 7, 3]),
    ("linear", "pytorch_half_pixel", "sizes", [1, 2, 1, 9]),
    ("cubic", "half_pixel_symmetric", "sizes", [1, 2, 5, 5]),
    ("linear", "half_pixel", "scales", [1, 1, 0.5, 0.3], 1),     # antialias
    ("cubic", "align_corners", "sizes", [1, 2, 3, 2], 1),
]


def _model(mode: str, transform: str, by: str, target: list, runtime: bool, antialias: int = 0
           ) -> bytes:
    arr = np.array(target, np.float32 if by == "scales" else np.int64)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    t = helper.make_tensor_value_info("t", TensorProto.FLOAT if by == "scales" else TensorProto.INT64,
                                      [4])
    ins = ["x", "", "t", ""] if by == "scales" else ["x", "", "", "t"]
    node = helper.make_node("Resize", ins, ["y"], mode=mode,
                            coordinate_transformation_mode=transform, antialias=antialias)
    inits = [] if runtime else [numpy_helper.from_array(arr, "t")]
    g = helper.make_graph([node], "r", [x, t] if runtime else [x], [y], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)]).SerializeToString()


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}-{i}" for i, c in enumerate(CASES)])
def test_runtime_resize_equals_the_import_time_one(case):
    mode, transform, by, target = case[:4]
    aa = case[4] if len(case) > 4 else 0
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 6)).astype(np.float32)
    arr = np.array(target, np.float32 if by == "scales" else np.int64)
    static = dlvmrt.VM(import_onnx(_model(mode, transform, by, target, False, aa))).run(
        "main", x)[0]
    module = import_onnx(_model(mode, transform, by, target, True, aa))
    assert "resize" in [i.op for b in module.functions["main"].blocks for i in b.instrs]
    runtime = dlvmrt.VM(module).run("main", x, arr)[0]
    np.testing.assert_array_equal(runtime, static)


def test_bad_targets_trap():
    op = OPS["resize"]
    attrs = op.with_defaults({"axes": [0], "by": "scales"})
    with pytest.raises(Trap, match="positive"):
        op.reference(attrs, np.ones(3, np.float32), np.array([-1.0], np.float32))
    with pytest.raises(Trap, match="2 scales for 1 axes"):
        op.reference(attrs, np.ones(3, np.float32), np.array([1.0, 2.0], np.float32))
