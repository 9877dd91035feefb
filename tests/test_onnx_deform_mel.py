"""DeformConv, MelWeightMatrix and MaxUnpool with output_shape against ONNX's own reference
evaluator, on shapes and attributes beyond the node tests' (batch, stride, dilation, padding,
groups, several offset groups, a mask, a dynamic batch)."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import dlvmrt  # noqa: E402
from frontends.onnx import import_onnx  # noqa: E402

F = TensorProto.FLOAT


def _model(node, inputs, outputs, inits=(), opset=22):
    g = helper.make_graph([node], "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("jit", ["off", "always"])
@pytest.mark.parametrize("case", [
    dict(n=2, c=4, hw=(7, 6), oc=6, k=(3, 3), strides=[2, 1], dilations=[1, 2], pads=[1, 2, 1, 0],
         group=2, offset_group=2, mask=True, bias=True),
    dict(n=1, c=3, hw=(5, 5), oc=2, k=(2, 3), strides=[1, 1], dilations=[1, 1], pads=[0, 0, 0, 0],
         group=1, offset_group=1, mask=False, bias=False),
    dict(n=3, c=2, hw=(2, 6), oc=2, k=(1, 3), strides=[1, 2], dilations=[1, 1], pads=[0, 1, 0, 1],
         group=1, offset_group=2, mask=True, bias=False),
], ids=["groups-mask-bias", "plain", "short"])
def test_deform_conv_matches_the_reference(case, jit):
    rng = np.random.default_rng(3)
    n, c, (h, w), oc, (kh, kw) = case["n"], case["c"], case["hw"], case["oc"], case["k"]
    s, d, p = case["strides"], case["dilations"], case["pads"]
    oh = (h + p[0] + p[2] - (d[0] * (kh - 1) + 1)) // s[0] + 1
    ow = (w + p[1] + p[3] - (d[1] * (kw - 1) + 1)) // s[1] + 1
    og = case["offset_group"]
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((oc, c // case["group"], kh, kw)).astype(np.float32)
    # offsets up to 2.5 pixels: taps land between pixels and outside the image
    off = rng.uniform(-2.5, 2.5, (n, og * kh * kw * 2, oh, ow)).astype(np.float32)
    names, feeds = ["X", "W", "offset"], [x, wt, off]
    names.append("B" if case["bias"] else "")
    if case["bias"]:
        feeds.append(rng.standard_normal(oc).astype(np.float32))
    if case["mask"]:
        names.append("mask")
        feeds.append(rng.uniform(0, 1, (n, og * kh * kw, oh, ow)).astype(np.float32))
    node = helper.make_node("DeformConv", names, ["Y"], kernel_shape=[kh, kw], strides=s,
                            dilations=d, pads=p, group=case["group"], offset_group=og)
    inputs = [helper.make_tensor_value_info(nm, F, list(a.shape)) for nm, a in
              zip([nm for nm in names if nm], feeds)]
    # a dynamic batch: every input's first dim named N
    for vi in inputs[:1] + inputs[2:]:
        if vi.name != "B":
            vi.type.tensor_type.shape.dim[0].dim_param = "N"
    m = _model(node, inputs, [helper.make_tensor_value_info("Y", F, None)])
    want = ReferenceEvaluator(m).run(None, dict(zip([nm for nm in names if nm], feeds)))[0]
    got = dlvmrt.VM(import_onnx(m), jit=jit).run("main", *feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("args", [(8, 64, 16000, 0.0, 8000.0), (20, 512, 22050, 125.0, 7600.0),
                                  (5, 33, 8000, 300.0, 3000.0)])
def test_mel_weight_matrix_matches_the_reference(args):
    nmel, dft, rate, lo, hi = args
    consts = [helper.make_tensor("nmel", TensorProto.INT64, [], [nmel]),
              helper.make_tensor("dft", TensorProto.INT64, [], [dft]),
              helper.make_tensor("rate", TensorProto.INT64, [], [rate]),
              helper.make_tensor("lo", F, [], [lo]), helper.make_tensor("hi", F, [], [hi])]
    node = helper.make_node("MelWeightMatrix", ["nmel", "dft", "rate", "lo", "hi"], ["M"])
    m = _model(node, [], [helper.make_tensor_value_info("M", F, None)], consts, opset=17)
    want = ReferenceEvaluator(m).run(None, {})[0]
    got = dlvmrt.VM(import_onnx(m)).run("main")[0]
    assert got.shape == want.shape == (dft // 2 + 1, nmel)
    np.testing.assert_array_equal(got, want)


def test_mel_weight_matrix_needs_its_sizes_at_import():
    from frontends.onnx.errors import OnnxImportError
    node = helper.make_node("MelWeightMatrix", ["nmel", "dft", "rate", "lo", "hi"], ["M"])
    ins = [helper.make_tensor_value_info(n, t, []) for n, t in
           (("nmel", TensorProto.INT64), ("dft", TensorProto.INT64),
            ("rate", TensorProto.INT64), ("lo", F), ("hi", F))]
    m = _model(node, ins, [helper.make_tensor_value_info("M", F, None)], opset=17)
    with pytest.raises(OnnxImportError, match="num_mel_bins .* must be known at import"):
        import_onnx(m)


def test_max_unpool_output_shape_holds_the_unpooled_tensor_at_its_start():
    x = np.arange(1, 9, dtype=np.float32).reshape(1, 2, 2, 2)
    idx = np.array([[[[5, 7], [13, 15]], [[0, 2], [8, 10]]]], np.int64)
    node = helper.make_node("MaxUnpool", ["x", "i", "shape"], ["y"], kernel_shape=[2, 2],
                            strides=[2, 2])
    shape = helper.make_tensor("shape", TensorProto.INT64, [4], [1, 2, 5, 6])
    m = _model(node, [helper.make_tensor_value_info("x", F, [1, 2, 2, 2]),
                      helper.make_tensor_value_info("i", TensorProto.INT64, [1, 2, 2, 2])],
               [helper.make_tensor_value_info("y", F, None)], [shape])
    want = ReferenceEvaluator(m).run(None, {"x": x, "i": idx})[0]
    got = dlvmrt.VM(import_onnx(m)).run("main", x, idx)[0]
    assert got.shape == (1, 2, 5, 6)
    np.testing.assert_array_equal(got, want)
