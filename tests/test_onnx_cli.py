"""`.onnx` files where programs go: `dlvm run model.onnx` and the REPL's `:load` import on the
fly; `dlvm import model.onnx` without -o writes model.dlbc beside the model."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from cli import main  # noqa: E402


def _model_file(tmp_path, opset: int = 17) -> str:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]),
                           helper.make_node("Neg", ["r"], ["y"])], "tiny", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    path = tmp_path / "tiny.onnx"
    onnx.save(m, str(path))
    return str(path)


def _cli(capsys, *args):
    try:
        code = main(list(args))
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.mark.parametrize("opset", [17, 9])
def test_run_an_onnx_model_directly(capsys, tmp_path, opset):
    path = _model_file(tmp_path, opset)
    x = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]], np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    code, _, err = _cli(capsys, "run", path, "--inputs", str(tmp_path / "in.npz"),
                        "--out", str(tmp_path / "out.npz"), "-q")
    assert code == 0, err
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["out0"], -np.maximum(x, 0))


def test_import_without_output_writes_beside_the_model(capsys, tmp_path):
    path = _model_file(tmp_path)
    code, _, err = _cli(capsys, "import", path)
    assert code == 0, err
    assert (tmp_path / "tiny.dlbc").read_bytes()[:4] != b""
    code, _, err = _cli(capsys, "run", str(tmp_path / "tiny.dlbc"), "--dim", "N=2", "-q")
    assert code == 0, err


def test_a_broken_onnx_file_is_a_clean_error(capsys, tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00not a protobuf at all")
    code, _, err = _cli(capsys, "run", str(bad), "-q")
    assert code != 0 and "not an ONNX model" in err


def test_repl_loads_an_onnx_model(tmp_path):
    from repl.session import ReplSession
    s = ReplSession()
    out = s.handle(f":load {_model_file(tmp_path)}")
    assert "main" in out
