"""torch.nn exports with dynamic axes, as tutorials write them: each imports with named dims
and matches onnxruntime at several sizes of the dynamic dims."""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")
nn = torch.nn

import dlvmrt  # noqa: E402
from frontends.onnx import import_onnx  # noqa: E402

pytestmark = pytest.mark.onnx


def _torchscript(net, x: np.ndarray, axes: dict[int, str]) -> bytes:
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net.eval(), (torch.from_numpy(x),), f, dynamo=False, opset_version=17,
                          input_names=["x"], dynamic_axes={"x": axes})
    return f.getvalue()


def _check(model: bytes, inputs: list[np.ndarray]) -> None:
    vm = dlvmrt.VM(import_onnx(model))
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    for x in inputs:
        want = sess.run(None, {"x": x})
        got = vm.run("main", x)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, atol=1e-4, rtol=1e-4)


def _rand(*shape: int) -> np.ndarray:
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


def test_pixel_shuffle_with_a_dynamic_batch():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 12, 3, padding=1), nn.PixelShuffle(2), nn.PixelUnshuffle(2))
    _check(_torchscript(net, _rand(2, 3, 6, 6), {0: "batch"}), [_rand(1, 3, 6, 6), _rand(3, 3, 6, 6)])


def test_heads_folded_into_the_batch_keep_named_dims():
    # [b, t, d] -> [b * heads, t, d / heads] and back: batch*4 through Shape, Mul, Concat
    class Heads(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(16, 16)

        def forward(self, x):
            b, t, d = x.shape
            y = self.proj(x).view(b, t, 4, d // 4).transpose(1, 2).reshape(b * 4, t, d // 4)
            att = torch.softmax(y @ y.transpose(1, 2), -1)
            return (att @ y).reshape(b, 4, t, d // 4).transpose(1, 2).reshape(b, t, d)
    torch.manual_seed(0)
    model = _torchscript(Heads(), _rand(2, 5, 16), {0: "batch", 1: "seq"})
    _check(model, [_rand(1, 5, 16), _rand(3, 7, 16)])


def test_causal_mask_over_a_dynamic_sequence():
    pytest.importorskip("onnxscript")

    class Causal(nn.Module):
        def forward(self, x):
            t = x.shape[1]
            mask = torch.triu(torch.ones(t, t), diagonal=1)
            return torch.softmax(x @ x.transpose(1, 2) - 1e4 * mask, -1)
    x = _rand(2, 6, 8)
    b, t = torch.export.Dim("batch", min=1, max=64), torch.export.Dim("seq", min=2, max=64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = torch.onnx.export(Causal(), (torch.from_numpy(x),), dynamo=True, input_names=["x"],
                                 dynamic_shapes=({0: b, 1: t},), verbose=False)
    _check(prog.model_proto.SerializeToString(), [_rand(1, 5, 8), _rand(3, 9, 8)])


def test_conv3d_and_maxpool3d_with_a_dynamic_batch():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv3d(2, 4, 3, padding=(1, 0, 1), stride=(2, 1, 1)), nn.ReLU(),
                        nn.MaxPool3d(2), nn.Conv3d(4, 2, (2, 1, 1), groups=2, dilation=1))
    _check(_torchscript(net, _rand(2, 2, 7, 6, 6), {0: "batch"}),
           [_rand(1, 2, 7, 6, 6), _rand(3, 2, 7, 6, 6)])


def test_maxpool_indices_with_a_dynamic_batch():
    class Pool(nn.Module):
        def __init__(self):
            super().__init__()
            self.pool = nn.MaxPool2d(3, 2, padding=1, return_indices=True)

        def forward(self, x):
            y, i = self.pool(x)
            return y, i
    model = _torchscript(Pool(), _rand(2, 3, 7, 8), {0: "batch"})
    vm = dlvmrt.VM(import_onnx(model))
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    for x in (_rand(1, 3, 7, 8), _rand(3, 3, 7, 8)):
        want, got = sess.run(None, {"x": x}), vm.run("main", x)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("opset", [9, 11, 13])
def test_older_opsets_convert_batchnorm_and_lstm(opset):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc, self.bn = nn.Linear(8, 16), nn.BatchNorm1d(16)
            self.rnn = nn.LSTM(16, 8, batch_first=True)

        def forward(self, x):
            b, t, _ = x.shape
            h = torch.relu(self.bn(self.fc(x).reshape(b * t, 16))).reshape(b, t, 16)
            return self.rnn(h)[0]
    torch.manual_seed(0)
    net = Net().eval()
    net.bn.running_mean.uniform_()
    net.bn.running_var.uniform_(0.5, 2.0)
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.from_numpy(_rand(2, 5, 8)),), f, dynamo=False,
                          opset_version=opset, input_names=["x"], do_constant_folding=False,
                          dynamic_axes={"x": {0: "batch"}})
    _check(f.getvalue(), [_rand(1, 5, 8), _rand(3, 5, 8)])


@pytest.mark.parametrize("args", [dict(stride=2, padding=1, output_padding=1),
                                  dict(stride=(1, 2, 3), padding=(0, 1, 1), groups=2,
                                       dilation=(2, 1, 1)),
                                  # the shared window: kernels over, under and at the stride,
                                  # pads past the kernel's reach, unit strides on some axes
                                  dict(kernel_size=4, stride=2, padding=1),
                                  dict(kernel_size=2, stride=3),
                                  dict(kernel_size=(2, 3, 5), stride=(2, 1, 3),
                                       padding=(1, 0, 2), output_padding=(1, 0, 2)),
                                  dict(kernel_size=3, stride=2, padding=3, output_padding=1),
                                  dict(kernel_size=3, stride=(1, 1, 2), bias=False)])
def test_conv_transpose_3d_with_a_dynamic_batch(args):
    torch.manual_seed(0)
    args = {"kernel_size": 3, **args}
    net = nn.ConvTranspose3d(4, 6, **args)
    _check(_torchscript(net, _rand(2, 4, 3, 4, 5), {0: "batch"}),
           [_rand(1, 4, 3, 4, 5), _rand(3, 4, 3, 4, 5)])


@pytest.mark.parametrize("cls, args, shape, axes", [
    (nn.ConvTranspose1d, dict(kernel_size=4, stride=2, padding=1), (2, 4, 16), {0: "b", 2: "t"}),
    (nn.ConvTranspose1d, dict(kernel_size=5, stride=3, padding=2, output_padding=1, groups=2,
                              dilation=2), (2, 4, 9), {2: "t"}),
    (nn.ConvTranspose2d, dict(kernel_size=3, stride=2, padding=1, output_padding=1),
     (2, 4, 6, 8), {0: "b", 2: "h", 3: "w"}),
    (nn.ConvTranspose2d, dict(kernel_size=3, stride=(1, 2), padding=(0, 1)), (1, 4, 5, 7),
     {3: "w"}),
])
def test_conv_transpose_with_dynamic_sizes(cls, args, shape, axes):
    # a length (an audio U-Net's) or image size known only at run time: zeros inserted by a
    # reshape to the run-time shape; every tier, at sizes other than the exported one
    torch.manual_seed(0)
    net = cls(4, 6, **args)
    model = _torchscript(net, _rand(*shape), axes)
    inputs = []
    for grow in (0, 3, 1):
        s = list(shape)
        for ax in axes:
            s[ax] += grow if ax else grow % 2
        inputs.append(_rand(*s))
    _check(model, inputs)
    vm = dlvmrt.VM(import_onnx(model), jit="always")
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    for x in inputs:
        np.testing.assert_allclose(vm.run("main", x)[0], sess.run(None, {"x": x})[0], atol=1e-4,
                                   rtol=1e-4)


def test_position_ids_sliced_to_a_dynamic_sequence():
    # BERT's embeddings: a [1, max_len] buffer sliced to [:, :seq] (Slice ends from Shape)
    class Embed(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(50, 8), nn.Embedding(32, 8)
            self.register_buffer("position_ids", torch.arange(32).unsqueeze(0))

        def forward(self, ids):
            t = ids.shape[1]
            return self.tok(ids) + self.pos(self.position_ids[:, :t])
    torch.manual_seed(0)
    ids = np.random.default_rng(0).integers(0, 50, (2, 6)).astype(np.int64)
    model = _torchscript(Embed(), ids, {0: "batch", 1: "seq"})
    _check(model, [ids[:1, :3], np.random.default_rng(1).integers(0, 50, (3, 9)).astype(np.int64)])


def test_local_response_norm_and_group_norm_with_a_dynamic_batch():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.LocalResponseNorm(3), nn.GroupNorm(4, 8))
    _check(_torchscript(net, _rand(2, 3, 8, 8), {0: "batch"}), [_rand(1, 3, 8, 8), _rand(3, 3, 8, 8)])


def _graph(nodes, inputs, output, inits=()) -> bytes:
    from onnx import TensorProto, helper
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                                       for n, s in inputs],
                          [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
                          list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _ints(name: str, values, shape=None):
    from onnx import TensorProto, helper
    values = list(np.atleast_1d(values))
    return helper.make_tensor(name, TensorProto.INT64, [len(values)] if shape is None else shape,
                              values)


def test_a_constant_repeated_over_the_batch():
    # StyleGAN2's learned input: const.repeat(x.shape[0], 1), a Tile whose repeats come from
    # Shape; typed with the batch's name, not refused
    class Repeat(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = nn.Parameter(torch.randn(1, 4))

        def forward(self, x):
            return self.c.repeat(x.shape[0], 1) + x
    torch.manual_seed(0)
    model = _torchscript(Repeat(), _rand(2, 4), {0: "batch"})
    module = import_onnx(model)
    assert str(module.functions["main"].results[0]) == "f32[batch, 4]"
    _check(model, [_rand(1, 4), _rand(3, 4)])


def test_tile_by_named_counts_of_dims_larger_than_one():
    # [batch, 3, 2] tiled by [2, batch, 1] (counts from Shape): a static count, a named count of
    # a dim of 3 (a new axis that grows, merged into batch*3) and a named one's own tiling
    from onnx import helper
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "i0"], ["b"]),
             helper.make_node("Concat", ["two", "b", "one"], ["reps"], axis=0),
             helper.make_node("Tile", ["x", "reps"], ["t"]),
             helper.make_node("Shape", ["t"], ["ts"]),
             helper.make_node("Concat", ["ts", "one"], ["shp"], axis=0),
             helper.make_node("Reshape", ["t", "shp"], ["y"])]
    model = _graph(nodes, [("x", ["batch", 3, 2])], "y",
                   [_ints("i0", [0]), _ints("two", [2]), _ints("one", [1])])
    module = import_onnx(model)
    assert str(module.functions["main"].results[0]) == "f32[batch_x2, batch_x3, 2, 1]"
    _check(model, [_rand(1, 3, 2), _rand(3, 3, 2)])


def test_a_recurrent_layer_over_a_derived_batch():
    # a GRU over [batch*4, t, d] (HAN's sentences): its zero states have a derived dim no call
    # binds, so they are filled at run time from the batch, where a `const` failed verification
    class Sentences(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(16, 8, batch_first=True)

        def forward(self, x):
            return self.gru(x.reshape(x.shape[0] * 4, 10, 16))[1]
    torch.manual_seed(0)
    model = _torchscript(Sentences(), _rand(2, 4, 10, 16), {0: "batch"})
    assert str(import_onnx(model).functions["main"].results[0]) == "f32[1, batch_x4, 8]"
    _check(model, [_rand(1, 4, 10, 16), _rand(3, 4, 10, 16)])


@pytest.mark.parametrize("one_d", ["Reshape", "Unsqueeze"])
def test_a_scalar_batch_size_made_1d_keeps_its_name(one_d):
    # the dynamo exporter's GRU state: Expand(0, Concat(1, Reshape(batch*4, [1]), 8)); the
    # Reshape of the symbolic scalar kept no name, so Expand was untyped and the GRU refused
    from onnx import TensorProto, helper
    shaped = helper.make_node("Reshape", ["b4", "one"], ["b4v"]) if one_d == "Reshape" else \
        helper.make_node("Unsqueeze", ["b4", "ax0"], ["b4v"])
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "i0"], ["b"]),
             helper.make_node("Mul", ["b", "four"], ["b4"]), shaped,
             helper.make_node("Concat", ["one", "b4v", "eight"], ["shp"], axis=0),
             helper.make_node("Expand", ["zero", "shp"], ["h"]),
             helper.make_node("Add", ["h", "bias"], ["y"])]
    inits = [_ints("four", 4, []), _ints("one", [1]), _ints("eight", [8]), _ints("ax0", [0]),
             _ints("i0", 0, []), helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
             helper.make_tensor("bias", TensorProto.FLOAT, [8], list(range(8)))]
    model = _graph(nodes, [("x", ["batch", 3])], "y", inits)
    assert str(import_onnx(model).functions["main"].results[0]) == "f32[1, batch_x4, 8]"
    _check(model, [_rand(1, 3), _rand(3, 3)])


def test_stacked_lstms_keep_the_sequence_length():
    # BiDAF's modelling layers: a bidirectional LSTM's output, its mean expanded back over the
    # time steps, into a second LSTM. Y was typed [?, 2, batch, 6], so TorchScript's Reshape
    # [0, 0, -1] and Expand lost the batch and the second LSTM refused its states
    class Stacked(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.LSTM(8, 6, batch_first=True, bidirectional=True)
            self.b = nn.LSTM(24, 6, batch_first=True)

        def forward(self, x):
            c, _ = self.a(x)
            g = c.mean(1, keepdim=True).expand_as(c)
            return self.b(torch.cat([c, g], -1))[0]
    torch.manual_seed(0)
    model = _torchscript(Stacked(), _rand(2, 10, 8), {0: "batch"})
    assert str(import_onnx(model).functions["main"].results[0]) == "f32[batch, 10, 6]"
    _check(model, [_rand(1, 10, 8), _rand(3, 10, 8)])


@pytest.mark.parametrize("op", ["ConstantOfShape", "Expand"])
def test_partly_run_time_shapes_keep_the_known_entries(op):
    # a shape [n, 32] where n is computed at run time (a NonZero's count): ConstantOfShape of it,
    # or Expand of a [1, 1] constant to it, is [?, 32], where it was [?, ?]
    from onnx import TensorProto, helper
    make = helper.make_node("ConstantOfShape", ["shp"], ["y"],
                            value=helper.make_tensor("v", TensorProto.FLOAT, [1], [2.5])) \
        if op == "ConstantOfShape" else helper.make_node("Expand", ["c", "shp"], ["y"])
    nodes = [helper.make_node("NonZero", ["x"], ["nz"]),
             helper.make_node("Shape", ["nz"], ["s"]),
             helper.make_node("Gather", ["s", "i1"], ["n"]),
             helper.make_node("Concat", ["n", "w"], ["shp"], axis=0), make]
    model = _graph(nodes, [("x", [5])], "y", [_ints("i1", [1]), _ints("w", [32]),
                                              helper.make_tensor("c", TensorProto.FLOAT, [1, 1],
                                                                 [1.5])])
    assert str(import_onnx(model).functions["main"].results[0]) == "f32[?, 32]"
    x = np.array([0, 1, 0, 2, 3], np.float32)
    _check(model, [x, np.zeros(5, np.float32)])


def test_a_learned_state_expanded_over_the_batch():
    # h0.expand(-1, B, -1): the TorchScript exporter turns the -1s into 1s by
    # Where(Equal(shape, -1), 1, shape); decided on the shape's entries, the RNN's initial
    # state keeps the batch's name (it was refused: "states of type f32[?, 16] need a static
    # or named batch size")
    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.RNN(8, 16, batch_first=True)
            self.h0 = nn.Parameter(torch.randn(1, 1, 16))

        def forward(self, x):
            return self.rnn(x, self.h0.expand(-1, x.shape[0], -1).contiguous())[0]
    torch.manual_seed(0)
    model = _torchscript(Tagger(), _rand(2, 5, 8), {0: "batch"})
    assert str(import_onnx(model).functions["main"].results[0]) == "f32[batch, 5, 16]"
    _check(model, [_rand(1, 5, 8), _rand(3, 5, 8)])


def test_bucketized_features_flattened():
    # torch.bucketize exports as Greater(x, Expand(bounds, Where(Equal(s, -1), 1, s))) with s
    # = Concat([7], Shape(x)), summed over the bounds: the Expand keeps [7, batch, 12], so the
    # embeddings' flatten knows its sizes (it was refused: "both sides of the flatten have sizes
    # unknown at import")
    class Buckets(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("bounds", torch.linspace(-1.5, 1.5, 7))
            self.emb = nn.Embedding(8, 4)

        def forward(self, x):
            return self.emb(torch.bucketize(x, self.bounds)).flatten(1)
    torch.manual_seed(0)
    model = _torchscript(Buckets(), _rand(2, 12), {0: "batch"})
    _check(model, [_rand(1, 12), _rand(3, 12) * 2])


def test_equal_of_a_shape_is_decided_only_where_it_can_be():
    # a dim is never -1, but it may be 0 or 1: Equal(shape, 1) stays a run-time comparison
    from onnx import helper
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Equal", ["s", "one"], ["is_one"]),
             helper.make_node("Where", ["is_one", "two", "s"], ["t"]),
             helper.make_node("Expand", ["x", "t"], ["y"])]
    model = _graph(nodes, [("x", ["n", 3])], "y", [_ints("one", [1]), _ints("two", [2])])
    vm = dlvmrt.VM(import_onnx(model))
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    for n in (1, 4):
        x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
        np.testing.assert_array_equal(vm.run("main", x)[0], sess.run(None, {"x": x})[0])
