"""Importer decompositions checked against onnxruntime on cases the ONNX node tests leave out:
RNN / GRU / LSTM with ragged sequence_lens in both directions, Scan with reversed inputs and
outputs on other axes, Resize tf_crop_and_resize with extrapolation; Atan / Asin / Acos within a
few ulps of NumPy."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

import dlvmrt  # noqa: E402
from frontends.onnx import import_onnx  # noqa: E402
from jit.targets.aot import find_cc  # noqa: E402

RNG = np.random.default_rng(3)
F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def _both(m, feeds: dict):
    want = ort.InferenceSession(m.SerializeToString()).run(None, feeds)
    got = dlvmrt.VM(import_onnx(m)).run("main", *feeds.values())
    return got, want


@pytest.mark.parametrize("bad, shape, layout", [("W", (1, 12, 4), 0), ("R", (1, 16, 5), 0),
                                                ("C0", (1, 3, 8), 0), ("H0", (3, 1, 5), 1),
                                                ("P", (1, 8), 0)])
def test_recurrent_weights_that_disagree_with_hidden_size_are_named(bad, shape, layout):
    # torch's dynamo exporter writes an LSTM with proj_size as an LSTM of the projected size
    # with the unprojected cell state: an error naming the input, not a failed broadcast
    from frontends.onnx.errors import OnnxImportError
    t, b, i, h = 5, 3, 4, 4
    shapes = {"X": (b, t, i) if layout else (t, b, i), "W": (1, 4 * h, i), "R": (1, 4 * h, h),
              "B": (1, 8 * h), "L": (b,), "H0": (b, 1, h) if layout else (1, b, h),
              "C0": (b, 1, h) if layout else (1, b, h), "P": (1, 3 * h)}
    shapes[bad] = shape
    inputs = ["X", "W", "R", "B", "L", "H0", "C0", "P"]
    types = {"L": TensorProto.INT32}
    node = helper.make_node("LSTM", inputs, ["Y"], hidden_size=h, layout=layout)
    m = _model([node], [_vi(n, types.get(n, F), shapes[n]) for n in inputs], [_vi("Y", F, None)])
    name = {"H0": "initial_h", "C0": "initial_c"}.get(bad, bad)
    with pytest.raises(OnnxImportError, match=f"input {name} has type .* hidden_size {h}"):
        import_onnx(m)


@pytest.mark.parametrize("op, gates", [("RNN", 1), ("GRU", 3), ("LSTM", 4)])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_recurrent_with_ragged_sequence_lens(op, gates, direction):
    t, b, i, h = 5, 3, 4, 3
    nd = 2 if direction == "bidirectional" else 1
    feeds = {"X": RNG.standard_normal((t, b, i)).astype(np.float32),
             "W": RNG.standard_normal((nd, gates * h, i)).astype(np.float32) * 0.5,
             "R": RNG.standard_normal((nd, gates * h, h)).astype(np.float32) * 0.5,
             "B": RNG.standard_normal((nd, 2 * gates * h)).astype(np.float32) * 0.1,
             "L": np.array([5, 2, 4], np.int32),
             "H0": RNG.standard_normal((nd, b, h)).astype(np.float32)}
    inputs = ["X", "W", "R", "B", "L", "H0"]
    outs = ["Y", "Yh"]
    attrs = {"hidden_size": h, "direction": direction}
    if op == "LSTM":
        feeds["C0"] = RNG.standard_normal((nd, b, h)).astype(np.float32)
        feeds["P"] = RNG.standard_normal((nd, 3 * h)).astype(np.float32) * 0.1
        inputs += ["C0", "P"]
        outs.append("Yc")
    if op == "GRU":
        attrs["linear_before_reset"] = 1
    types = {"L": TensorProto.INT32}
    node = helper.make_node(op, inputs, outs, **attrs)
    m = _model([node], [_vi(n, types.get(n, F), feeds[n].shape) for n in inputs],
               [_vi(o, F, None) for o in outs])
    got, want = _both(m, feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op, gates", [("RNN", 1), ("GRU", 3), ("LSTM", 4)])
@pytest.mark.parametrize("variant", ["layout", "no_bias", "own_activations", "reset_first",
                                     "dynamic_time"])
def test_bidirectional_recurrent_forms(op, gates, variant):
    # both directions run in one loop unless their activations differ; batch-major layout,
    # no bias, GRU's reset before the product, a time axis known only at run time
    t, b, i, h = 6, 2, 5, 4
    x = RNG.standard_normal((b, t, i) if variant == "layout" else (t, b, i)).astype(np.float32)
    feeds = {"X": x,
             "W": RNG.standard_normal((2, gates * h, i)).astype(np.float32) * 0.5,
             "R": RNG.standard_normal((2, gates * h, h)).astype(np.float32) * 0.5}
    if variant != "no_bias":
        feeds["B"] = RNG.standard_normal((2, 2 * gates * h)).astype(np.float32) * 0.1
    attrs = {"hidden_size": h, "direction": "bidirectional"}
    if variant == "layout":
        attrs["layout"] = 1
    if variant == "own_activations":
        acts = {"RNN": ["Tanh", "Relu"], "GRU": ["Sigmoid", "Tanh", "HardSigmoid", "Tanh"],
                "LSTM": ["Sigmoid", "Tanh", "Tanh", "Sigmoid", "Softsign", "Tanh"]}[op]
        attrs["activations"] = acts
    if op == "GRU":
        attrs["linear_before_reset"] = 0 if variant == "reset_first" else 1
    outs = ["Y", "Yh"] + (["Yc"] if op == "LSTM" else [])
    node = helper.make_node(op, list(feeds), outs, **attrs)
    shape = list(x.shape)
    if variant == "dynamic_time":
        shape[0] = "T"
    m = _model([node], [_vi("X", F, shape)] + [_vi(n, F, feeds[n].shape) for n in list(feeds)[1:]],
               [_vi(o, F, None) for o in outs])
    if variant == "layout":
        # onnxruntime has no batch-major layout: its time-major result, transposed
        got = dlvmrt.VM(import_onnx(m)).run("main", *feeds.values())
        del attrs["layout"]
        tm = _model([helper.make_node(op, list(feeds), outs, **attrs)],
                    [_vi("X", F, (t, b, i))] + [_vi(n, F, feeds[n].shape)
                                                for n in list(feeds)[1:]],
                    [_vi(o, F, None) for o in outs])
        want = ort.InferenceSession(tm.SerializeToString()).run(
            None, {**feeds, "X": x.transpose(1, 0, 2)})
        want = [want[0].transpose(2, 0, 1, 3)] + [v.transpose(1, 0, 2) for v in want[1:]]
    else:
        got, want = _both(m, feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    if variant in ("layout", "dynamic_time") and find_cc() is not None:
        # the whole program as one native library (batched products of constant weights)
        # (its first call is checked against the VM's, and a difference keeps it off)
        vm = dlvmrt.VM(import_onnx(m), jit="always", native="always")
        vm.run("main", *feeds.values())
        native = vm.run("main", *feeds.values())
        assert "1 of 1 input signatures run it" in vm.native.status()
        for g, w in zip(native, got):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_scan_with_reversed_input_and_output_on_axis_1():
    # state s, scan inputs a (axis 0, reversed) and b (axis 1); outputs on axes 1 and 0 (reversed)
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "a"], ["s1"]),
         helper.make_node("Mul", ["s1", "b"], ["o1"]),
         helper.make_node("Identity", ["s1"], ["o2"])],
        "body", [_vi("s", F, [2]), _vi("a", F, [2]), _vi("b", F, [2])],
        [_vi("s1", F, [2]), _vi("o1", F, [2]), _vi("o2", F, [2])])
    node = helper.make_node("Scan", ["s0", "A", "Bm"], ["sN", "O1", "O2"], body=body,
                            num_scan_inputs=2, scan_input_axes=[0, 1],
                            scan_input_directions=[1, 0], scan_output_axes=[1, 0],
                            scan_output_directions=[0, 1])
    feeds = {"s0": np.zeros(2, np.float32), "A": RNG.standard_normal((4, 2)).astype(np.float32),
             "Bm": RNG.standard_normal((2, 4)).astype(np.float32)}
    m = _model([node], [_vi(n, F, a.shape) for n, a in feeds.items()],
               [_vi(o, F, None) for o in ("sN", "O1", "O2")])
    got, want = _both(m, feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_tf_crop_and_resize_extrapolates(mode):
    x = RNG.standard_normal((1, 2, 6, 5)).astype(np.float32)
    roi = np.array([0, 0, -0.2, 0.3, 1, 1, 0.9, 1.4], np.float32)
    node = helper.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], mode=mode,
                            coordinate_transformation_mode="tf_crop_and_resize",
                            extrapolation_value=7.5)
    consts = [helper.make_node("Constant", [], ["roi"], value=helper.make_tensor("r", F, [8], roi)),
              helper.make_node("Constant", [], ["sizes"], value=helper.make_tensor(
                  "s", TensorProto.INT64, [4], [1, 2, 7, 4]))]
    m = _model(consts + [node],
               [_vi("x", F, x.shape)], [_vi("y", F, None)], opset=18)
    (got,), (want,) = _both(m, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert (got == np.float32(7.5)).any()


@pytest.mark.parametrize("op, ref, lo, hi", [("Atan", np.arctan, -1e5, 1e5),
                                             ("Asin", np.arcsin, -1, 1),
                                             ("Acos", np.arccos, -1, 1)])
@pytest.mark.parametrize("dtype, code", [(np.float32, F), (np.float64, TensorProto.DOUBLE)])
def test_inverse_trig_within_a_few_ulps(op, ref, lo, hi, dtype, code):
    x = np.concatenate([np.linspace(lo, hi, 4001), [-1, 1, 0, 1e-30, np.inf, -np.inf, np.nan,
                                                    1.5]]).astype(dtype)
    m = _model([helper.make_node(op, ["x"], ["y"])], [_vi("x", code, x.shape)],
               [_vi("y", code, None)])
    (got,) = dlvmrt.VM(import_onnx(m)).run("main", x)
    with np.errstate(invalid="ignore"):
        want = ref(x.astype(np.float64))
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    ulps = np.abs(got[ok] - want[ok]) / np.spacing(np.abs(want[ok]).astype(dtype))
    assert ulps.max() <= 8


# ---- ONNX sequences held as stacked tensors (frontends/onnx/ops/sequence.py) ----------------

def _seq_model(nodes, inputs, outputs, opset=17):
    return _model(nodes, inputs, outputs, opset)


@pytest.mark.parametrize("axis, new_axis", [(0, 0), (1, 0), (-1, 0), (0, 1), (2, 1), (-1, 1)])
def test_sequence_ops_build_and_concat_like_onnxruntime(axis, new_axis):
    h = helper
    nodes = [
        h.make_node("SequenceConstruct", ["a", "b"], ["s1"]),
        h.make_node("SequenceInsert", ["s1", "c"], ["s2"]),                  # at the back
        h.make_node("SequenceInsert", ["s2", "a", "one"], ["s3"]),           # at position 1
        h.make_node("SequenceErase", ["s3", "minus1"], ["s4"]),              # the last one
        h.make_node("SequenceAt", ["s4", "one"], ["at1"]),
        h.make_node("SequenceLength", ["s4"], ["n"]),
        h.make_node("ConcatFromSequence", ["s4"], ["cat"], axis=axis, new_axis=new_axis),
    ]
    inits = [h.make_tensor("one", TensorProto.INT64, [], [1]),
             h.make_tensor("minus1", TensorProto.INT64, [], [-1])]
    ins = [_vi(n, F, [2, 3]) for n in "abc"]
    outs = [_vi("at1", F, None), _vi("n", TensorProto.INT64, None), _vi("cat", F, None)]
    g = h.make_graph(nodes, "g", ins, outs, initializer=inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8)
    feeds = {n: RNG.standard_normal((2, 3)).astype(np.float32) for n in "abc"}
    got, want = _both(m, feeds)
    for g_, w in zip(got, want):
        np.testing.assert_array_equal(g_, w)


@pytest.mark.parametrize("split, keepdims, axis", [(None, 1, 1), (None, 0, 1), (None, 0, 0),
                                                   (2, 1, 1), ([2, 2], 1, 1)])
def test_split_to_sequence_then_concat(split, keepdims, axis):
    h = helper
    inputs = ["x"] + (["split"] if split is not None else [])
    nodes = [h.make_node("SplitToSequence", inputs, ["s"], axis=axis, keepdims=keepdims),
             h.make_node("SequenceLength", ["s"], ["n"]),
             h.make_node("SequenceAt", ["s", "last"], ["at"]),
             h.make_node("ConcatFromSequence", ["s"], ["cat"], axis=0, new_axis=1)]
    inits = [h.make_tensor("last", TensorProto.INT64, [], [-1])]
    if split is not None:
        vals = [split] if isinstance(split, int) else split
        inits.append(h.make_tensor("split", TensorProto.INT64, [] if isinstance(split, int)
                                   else [len(vals)], vals))
    g = h.make_graph(nodes, "g", [_vi("x", F, [3, 4, 2])],
                     [_vi("n", TensorProto.INT64, None), _vi("at", F, None), _vi("cat", F, None)],
                     initializer=inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8)
    feeds = {"x": RNG.standard_normal((3, 4, 2)).astype(np.float32)}
    got, want = _both(m, feeds)
    for g_, w in zip(got, want):
        np.testing.assert_array_equal(g_, w)


def test_loop_appends_rows_of_unknown_width_to_an_empty_sequence():
    # the dynamo exporter's EmbeddingBag: SequenceEmpty, a Loop that appends one reduced row
    # per bag (its width not fixed by the types), ConcatFromSequence after it
    h = helper
    body = h.make_graph(
        [h.make_node("Gather", ["x", "i"], ["row"], axis=0),
         h.make_node("Shape", ["x"], ["xs"]),
         h.make_node("Slice", ["row", "zero", "w"], ["part"]),           # width known at run time
         h.make_node("Unsqueeze", ["part", "zero"], ["item"]),
         h.make_node("SequenceInsert", ["seq_in", "item"], ["seq_out"]),
         h.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [_vi("i", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_sequence_value_info("seq_in", F, None)],
        [_vi("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_sequence_value_info("seq_out", F, None)])
    nodes = [h.make_node("SequenceEmpty", [], ["empty"], dtype=F),
             h.make_node("Loop", ["trip", "true", "empty"], ["rows"], body=body),
             h.make_node("ConcatFromSequence", ["rows"], ["y"], axis=0)]
    inits = [h.make_tensor("zero", TensorProto.INT64, [1], [0]),
             h.make_tensor("true", TensorProto.BOOL, [], [True])]
    g = h.make_graph(nodes, "g", [_vi("x", F, ["n", 5]), _vi("trip", TensorProto.INT64, []),
                                  _vi("w", TensorProto.INT64, [1])], [_vi("y", F, None)],
                     initializer=inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8)
    module = import_onnx(m)
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    for trip, width in ((4, 3), (2, 5), (1, 1)):
        feeds = {"x": x, "trip": np.array(trip, np.int64), "w": np.array([width], np.int64)}
        want = ort.InferenceSession(m.SerializeToString()).run(None, feeds)[0]
        for jit in ("off", "always"):
            got = dlvmrt.VM(module, jit=jit).run("main", *feeds.values())[0]
            np.testing.assert_array_equal(got, want)


def test_ragged_sequence_fails_naming_the_op():
    from frontends.onnx.errors import OnnxImportError
    h = helper
    m = _seq_model([h.make_node("SequenceConstruct", ["a", "b"], ["s"]),
                    h.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)],
                   [_vi("a", F, [2, 3]), _vi("b", F, [4, 3])], [_vi("y", F, None)])
    with pytest.raises(OnnxImportError, match="SequenceConstruct .*share one shape"):
        import_onnx(m)


@pytest.mark.skipif(find_cc() is None, reason="no C compiler (cc)")
@pytest.mark.parametrize("op, gates", [("GRU", 3), ("LSTM", 4)])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_batch_major_recurrent_layers_run_as_tiles_of_rows(op, gates, direction, tmp_path,
                                                           monkeypatch):
    # the importer's time loop keeps each sequence's state in its own rows: the native library
    # may run the batch as tiles (one per thread: no hand-off per time step), as it does a CNN's
    from dlvmrt import aot
    from isa.verify import verify_module
    from jit.row_split import RowSplit, row_split
    from jit.targets.aot import compile_library
    t, i, h = 6, 5, 4
    nd = 2 if direction == "bidirectional" else 1
    weights = {"W": RNG.standard_normal((nd, gates * h, i)).astype(np.float32) * 0.5,
               "R": RNG.standard_normal((nd, gates * h, h)).astype(np.float32) * 0.5,
               "B": RNG.standard_normal((nd, 2 * gates * h)).astype(np.float32) * 0.1}
    # batch-first as torch exports it (onnxruntime has no layout=1): transposes around the op
    nodes = [helper.make_node("Transpose", ["X"], ["Xt"], perm=[1, 0, 2]),
             helper.make_node(op, ["Xt", "W", "R", "B"], ["Yt", "Yht"], hidden_size=h,
                              direction=direction),
             helper.make_node("Transpose", ["Yt"], ["Y"], perm=[2, 0, 1, 3]),
             helper.make_node("Transpose", ["Yht"], ["Yh"], perm=[1, 0, 2])]
    g = helper.make_graph(nodes, "g", [_vi("X", F, ("batch", t, i))],
                          [_vi("Y", F, None), _vi("Yh", F, None)],
                          [onnx.numpy_helper.from_array(v, n) for n, v in weights.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    module = import_onnx(m)
    split = row_split(module, "main", verify_module(module)["main"])
    assert isinstance(split, RowSplit), split
    # and after the pipeline every run goes through (which folds the loop's output reshapes)
    optimized = dlvmrt.VM(module, jit="off").module
    split = row_split(optimized, "main", verify_module(optimized)["main"])
    assert isinstance(split, RowSplit), split
    compile_library(module, tmp_path)
    lib = aot.load(tmp_path)
    vm = dlvmrt.VM(module, jit="off")
    sess = ort.InferenceSession(m.SerializeToString())
    for rows_per_tile in ("1", "3"):
        monkeypatch.setenv("DLVM_ROW_TILE", rows_per_tile)
        for b in (1, 4, 7):
            x = RNG.standard_normal((b, t, i)).astype(np.float32)
            want = sess.run(None, {"X": x})
            for got in (lib.run("main", x), vm.run("main", x)):
                for gv, w in zip(got, want):
                    np.testing.assert_allclose(gv, w, rtol=1e-5, atol=1e-5)
