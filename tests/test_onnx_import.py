"""The ONNX importer on small hand-built graphs: names, dims, errors, control flow, bytecode.

Numerics are checked against onnxruntime where it is installed and against NumPy otherwise.
"""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dlvmrt  # noqa: E402
from frontends.onnx import import_onnx, import_onnx_result, import_to_file  # noqa: E402
from frontends.onnx.errors import OnnxImportError  # noqa: E402

pytestmark = pytest.mark.onnx
F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def run(m, *args):
    return dlvmrt.VM(import_onnx(m)).run("main", *args)


def test_names_are_sanitized_and_mapped_and_dims_named():
    m = model([helper.make_node("Relu", ["input:0"], ["out 1"])],
              [vi("input:0", F, ["batch size", 4])], [vi("out 1", F, ["batch size", 4])])
    r = import_onnx_result(m)
    main = r.module.functions["main"]
    assert r.inputs == {"input:0": "input_0"}
    assert [p.name for p in main.params] == ["input_0"]
    assert main.params[0].type.shape == ("batch_size", 4)
    assert r.dims == {"batch size": "batch_size"}
    assert r.outputs == ["out 1"]
    x = np.array([[-1, 2, -3, 4]] * 3, np.float32)
    (y,) = dlvmrt.VM(r.module).run("main", x)
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_initializers_become_constants_and_inputs_follow_graph_order():
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3), "weight.0")
    m = model([helper.make_node("MatMul", ["x", "weight.0"], ["h"]),
               helper.make_node("Sub", ["h", "b"], ["y"])],
              [vi("x", F, [2, 4]), vi("b", F, [3])], [vi("y", F, [2, 3])], [w])
    mod = import_onnx(m)
    assert "weight_0" in mod.constants
    x, b = np.ones((2, 4), np.float32), np.array([1, 2, 3], np.float32)
    (y,) = dlvmrt.VM(mod).run("main", x, b)
    np.testing.assert_allclose(y, x @ numpy_helper.to_array(w) - b)


def test_unsupported_ops_are_listed_together_with_their_opset():
    m = model([helper.make_node("Optional", ["x"], ["a"]),
               helper.make_node("DeformConv", ["x", "x", "x"], ["b"]),
               helper.make_node("Optional", ["x"], ["c"])],
              [vi("x", F, [3])], [vi("a", I64, None), vi("b", F, None), vi("c", I64, None)])
    with pytest.raises(OnnxImportError) as info:
        import_onnx(m)
    msg = str(info.value)
    assert "Optional (opset 17) x2" in msg and "DeformConv (opset 17)" in msg


def test_unsupported_attribute_value_fails_naming_it():
    scales = numpy_helper.from_array(np.array([1, 1, 0.5, 0.5], np.float32), "s")
    m = model([helper.make_node("Resize", ["x", "", "s"], ["y"], mode="nearest", antialias=1)],
              [vi("x", F, [1, 1, 6, 6])], [vi("y", F, None)], [scales], opset=19)
    with pytest.raises(OnnxImportError, match="antialias"):
        import_onnx(m)
    m = model([helper.make_node("Relu", ["x"], ["y"], bogus=3)], [vi("x", F, [2])], [vi("y", F, [2])])
    with pytest.raises(OnnxImportError, match="attribute bogus not supported"):
        import_onnx(m)


def test_old_opsets_are_converted_and_reported():
    # opset 11's Squeeze takes its axes as an attribute; the converter makes it an input
    m = model([helper.make_node("Squeeze", ["x"], ["y"], axes=[0])], [vi("x", F, [1, 2])],
              [vi("y", F, [2])], opset=11)
    r = import_onnx_result(m)
    assert (r.source_opset, r.opset) == (11, 13)
    x = np.array([[1.0, -2.0]], np.float32)
    np.testing.assert_array_equal(dlvmrt.VM(r.module).run("main", x)[0], x[0])


def test_reduce_axes_attribute_and_input_forms():
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    m18 = model([helper.make_node("ReduceMax", ["x", "axes"], ["y"], keepdims=0)],
                [vi("x", F, [2, 3])], [vi("y", F, [2])], [axes], opset=18)
    m13 = model([helper.make_node("ReduceMax", ["x"], ["y"], axes=[1], keepdims=0)],
                [vi("x", F, [2, 3])], [vi("y", F, [2])], opset=13)
    x = np.random.default_rng(0).random((2, 3)).astype(np.float32)
    for m in (m13, m18):
        np.testing.assert_array_equal(run(m, x)[0], x.max(1))


def test_shape_chain_folds_and_keeps_a_dynamic_batch():
    # Reshape(x, Concat(Shape(x)[0:1], [-1])) with a dynamic first dim: the exporters' idiom
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["y"])]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array([0], np.int64), "axes0"),
             numpy_helper.from_array(np.array([-1], np.int64), "minus1")]
    m = model(nodes, [vi("x", F, ["N", 2, 3])], [vi("y", F, ["N", 6])], inits)
    mod = import_onnx(m)
    assert mod.functions["main"].results[0].shape[1] == 6
    x = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
    (y,) = dlvmrt.VM(mod).run("main", x)
    np.testing.assert_array_equal(y, x.reshape(4, 6))


def test_if_lowers_to_blocks_and_runs_both_ways():
    then_g = helper.make_graph([helper.make_node("Neg", ["x"], ["t"])], "then", [], [vi("t", F, [3])])
    else_g = helper.make_graph([helper.make_node("Exp", ["x"], ["e"])], "else", [], [vi("e", F, [3])])
    m = model([helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
              [vi("c", B, []), vi("x", F, [3])], [vi("y", F, [3])])
    mod = import_onnx(m)
    ops = [i.op for b in mod.functions["main"].blocks for i in b.instrs]
    assert "br" in ops and len(mod.functions["main"].blocks) == 4
    x = np.array([0.5, -1, 2], np.float32)
    vm = dlvmrt.VM(mod)
    np.testing.assert_allclose(vm.run("main", np.array(True), x)[0], -x)
    np.testing.assert_allclose(vm.run("main", np.array(False), x)[0], np.exp(x), rtol=1e-6)


def test_loop_with_carried_value_and_scan_output():
    # for i < M: acc = acc + x * i; scan out acc
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Mul", ["x", "fi"], ["xi"]),
         helper.make_node("Add", ["acc_in", "xi"], ["acc_out"]),
         helper.make_node("Identity", ["acc_out"], ["scan"])],
        "body", [vi("i", I64, []), vi("cond_in", B, []), vi("acc_in", F, [2])],
        [vi("cond_out", B, []), vi("acc_out", F, [2]), vi("scan", F, [2])])
    m = model([helper.make_node("Loop", ["M", "", "acc0"], ["acc", "hist"], body=body)],
              [vi("M", I64, []), vi("acc0", F, [2]), vi("x", F, [2])],
              [vi("acc", F, [2]), vi("hist", F, [None, 2])])
    mod = import_onnx(m)
    vm = dlvmrt.VM(mod)
    x = np.array([1, 10], np.float32)
    acc, hist = vm.run("main", np.array(4, np.int64), np.zeros(2, np.float32), x)
    np.testing.assert_allclose(acc, x * 6)
    np.testing.assert_allclose(hist, [x * 0, x * 1, x * 3, x * 6])
    acc, hist = vm.run("main", np.array(0, np.int64), np.ones(2, np.float32), x)
    assert hist.shape == (0, 2) and np.all(acc == 1)


def test_lstm_outputs_take_a_static_reshape_after_the_time_loop():
    # torch.onnx.export(dynamo=True) of an nn.LSTM on a batch-1 example: every shape static, the
    # outputs [T, 1, 1, H] reshaped to [T, 1, H] by a constant shape. The loop's output stack
    # starts empty ([0, 1, 1, H]); that first value must not be the type the reshape is checked
    # with (it was: "reshape of f32[0, 1, 1, 4] ... changes the element count")
    rng = np.random.default_rng(0)
    t, i, h = 5, 3, 4
    w = rng.standard_normal((1, 4 * h, i)).astype(np.float32)
    r = rng.standard_normal((1, 4 * h, h)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R"),
             numpy_helper.from_array(np.array([t, 1, h], np.int64), "shape")]
    m = model([helper.make_node("LSTM", ["x", "W", "R"], ["y"], hidden_size=h),
               helper.make_node("Reshape", ["y", "shape"], ["out"])],
              [vi("x", F, [t, 1, i])], [vi("out", F, [t, 1, h])], inits)
    x = rng.standard_normal((t, 1, i)).astype(np.float32)
    got = np.asarray(run(m, x)[0])
    assert got.shape == (t, 1, h)
    ort = pytest.importorskip("onnxruntime")
    want = ort.InferenceSession(m.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_loop_scan_output_takes_a_static_reshape_after_the_loop():
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["x"], ["scan"])],
        "body", [vi("i", I64, []), vi("cond_in", B, [])],
        [vi("cond_out", B, []), vi("scan", F, [2])])
    m = model([helper.make_node("Loop", ["M", ""], ["hist"], body=body),
               helper.make_node("Reshape", ["hist", "shape"], ["out"])],
              [vi("x", F, [2])], [vi("out", F, [6])],
              [numpy_helper.from_array(np.array(3, np.int64), "M"),
               numpy_helper.from_array(np.array([6], np.int64), "shape")])
    x = np.array([1, 2], np.float32)
    np.testing.assert_array_equal(run(m, x)[0], np.tile(x, 3))


def test_function_bodied_op_is_inlined():
    # Celu has no handler: its ONNX function body (Max, Min, Div, Exp, ...) is imported
    m = model([helper.make_node("Celu", ["x"], ["y"], alpha=2.0)], [vi("x", F, [4])],
              [vi("y", F, [4])], opset=13)
    x = np.array([-3, -0.5, 0, 2], np.float32)
    want = np.maximum(0, x) + np.minimum(0, 2.0 * (np.exp(x / 2.0) - 1))
    np.testing.assert_allclose(run(m, x)[0], want, rtol=1e-6)


def test_run_time_shape_input_becomes_a_dynamic_reshape():
    # the shape is a graph input: its static length (2) fixes the rank, its values the sizes
    m = model([helper.make_node("Reshape", ["x", "shape"], ["y"])],
              [vi("x", F, [2, 3]), vi("shape", I64, [2])], [vi("y", F, None)])
    mod = import_onnx(m)
    ops = [ins.op for ins in mod.functions["main"].blocks[0].instrs]
    assert "reshape_dyn" in ops
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    vm = dlvmrt.VM(mod)
    np.testing.assert_array_equal(vm.run("main", x, np.array([3, 2], np.int64))[0], x.reshape(3, 2))
    # ONNX's 0 copies the input's dim; -1 takes the rest
    np.testing.assert_array_equal(vm.run("main", x, np.array([0, -1], np.int64))[0], x)
    with pytest.raises(dlvmrt.Trap, match="element count"):
        vm.run("main", x, np.array([4, 2], np.int64))


def test_run_time_axes_of_reductions_slices_and_ranges():
    m = model([helper.make_node("ReduceSum", ["x", "axes"], ["s"], keepdims=0),
               helper.make_node("Slice", ["x", "st", "en"], ["sl"]),
               helper.make_node("Range", ["a", "b", "d"], ["r"])],
              [vi("x", F, [2, 3]), vi("axes", I64, [1]), vi("st", I64, [2]), vi("en", I64, [2]),
               vi("a", I64, []), vi("b", I64, []), vi("d", I64, [])],
              [vi("s", F, None), vi("sl", F, None), vi("r", I64, None)])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    i = np.array
    s, sl, r = run(m, x, i([1]), i([0, 1]), i([1, 3]), i(2), i(9), i(3))
    np.testing.assert_array_equal(s, x.sum(1))
    np.testing.assert_array_equal(sl, x[0:1, 1:3])
    np.testing.assert_array_equal(r, [2, 5, 8])


def test_freeze_turns_a_shape_input_into_a_constant():
    # Pad's axes say which dims grow, so they must be known at import: freezing fixes them
    m = model([helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"])],
              [vi("x", F, [2, 3]), vi("pads", I64, [2]), vi("axes", I64, [1])],
              [vi("y", F, None)], opset=18)
    with pytest.raises(OnnxImportError, match="must be known at import") as info:
        import_onnx(m)
    assert info.value.value_name == "axes"
    mod = import_onnx(m, freeze={"axes": np.array([1], np.int64)})
    assert [p.name for p in mod.functions["main"].params] == ["x", "pads"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = dlvmrt.VM(mod).run("main", x, np.array([1, 2], np.int64))[0]
    np.testing.assert_array_equal(got, np.pad(x, ((0, 0), (1, 2))))


def test_import_to_file_writes_loadable_bytecode(tmp_path):
    m = model([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], [vi("x", F, [2, 3])],
              [vi("y", F, [2, 3])])
    src, out = tmp_path / "m.onnx", tmp_path / "m.dlbc"
    onnx.save(m, str(src))
    import_to_file(src, out)
    x = np.random.default_rng(1).random((2, 3)).astype(np.float32)
    (y,) = dlvmrt.VM(dlvmrt.load(str(out))).run("main", x)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(-1, keepdims=True), rtol=1e-6)


def test_builder_example_runs(tmp_path):
    import runpy
    import sys
    path = __file__.rsplit("tests", 1)[0] + "examples/builder_mlp.py"
    out = tmp_path / "mlp.dlbc"
    argv = sys.argv
    try:
        sys.argv = [path, str(out)]
        with pytest.raises(SystemExit) as done:
            runpy.run_path(path, run_name="__main__")
    finally:
        sys.argv = argv
    assert done.value.code == 0 and out.stat().st_size > 0


def test_quantize_rounds_half_to_even_and_saturates_then_dequantizes():
    m = model([helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"]),
               helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"])],
              [vi("x", F, [6])], [vi("q", TensorProto.INT8, [6]), vi("y", F, [6])],
              inits=[numpy_helper.from_array(np.array(2.0, np.float32), "s"),
                     numpy_helper.from_array(np.array(1, np.int8), "zp")], opset=21)
    x = np.array([1.0, 3.0, 5.0, -3.0, 1000.0, -1000.0], np.float32)
    q, y = run(m, x)
    # x / 2 = 0.5, 1.5, 2.5, -1.5 round to 0, 2, 2, -2 (ties to even), then + 1; +-500 saturate
    np.testing.assert_array_equal(q, np.array([1, 3, 3, -1, 127, -128], np.int8))
    np.testing.assert_array_equal(y, (q.astype(np.float32) - 1) * 2)


@pytest.mark.parametrize("opset, per", [(18, 2), (21, 6)])
def test_group_normalization_18_scales_per_group_21_per_channel(opset, per):
    from onnx.reference import ReferenceEvaluator
    s = numpy_helper.from_array(np.arange(1, per + 1).astype(np.float32), "s")
    b = numpy_helper.from_array(np.arange(per).astype(np.float32) * 0.5, "b")
    m = model([helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)],
              [vi("x", F, ["N", 6, 3, 3])], [vi("y", F, None)], [s, b], opset=opset)
    x = np.random.default_rng(0).standard_normal((3, 6, 3, 3)).astype(np.float32)
    want = ReferenceEvaluator(m).run(None, {"x": x})[0]
    np.testing.assert_allclose(dlvmrt.VM(import_onnx(m)).run("main", x)[0], want, atol=1e-5)
