"""More torch.nn models for the zoo: layers and shapes the zoo's own models do not have (1-D and
3-D convolutions, transposed convolutions, DenseNet concats with pre-activation BatchNorm,
ConvNeXt's 7x7 depthwise convolutions, GroupNorm and InstanceNorm, nearest and bilinear
upsampling, adaptive pooling, PixelShuffle and PixelUnshuffle, bidirectional recurrences,
attention with a causal mask, embeddings, cumulative sums and a dozen activations), built in
code with seeded random weights. They were written as a new user would write them, to find
where dlvm was slow on models nobody tuned for; `bench/zoo.py --set more` times them and
`tests/test_zoo_more.py` checks their outputs against onnxruntime.
"""
from __future__ import annotations

import functools

import numpy as np
from zoo_models import ZooModel, _seeded_bn_stats, _torch


@functools.cache
def _classes() -> dict:
    torch = _torch()
    nn, F = torch.nn, torch.nn.functional

    class Audio1d(nn.Module):
        def __init__(s):
            super().__init__()
            s.f = nn.Sequential(
                nn.Conv1d(1, 16, 9, stride=2, padding=4), nn.BatchNorm1d(16), nn.ReLU(),
                nn.MaxPool1d(2), nn.Conv1d(16, 32, 5, padding=2), nn.BatchNorm1d(32), nn.ReLU(),
                nn.MaxPool1d(2), nn.Conv1d(32, 64, 3, padding=1), nn.ReLU())
            s.h = nn.Linear(64, 12)

        def forward(s, x):
            return s.h(s.f(x).mean(-1))

    class ConvNeXt(nn.Module):
        def __init__(s, d=48):
            super().__init__()
            s.stem = nn.Conv2d(3, d, 4, stride=4)
            s.dw = nn.Conv2d(d, d, 7, padding=3, groups=d)
            s.ln = nn.LayerNorm(d)
            s.l1, s.l2, s.head = nn.Linear(d, 4 * d), nn.Linear(4 * d, d), nn.Linear(d, 10)

        def forward(s, x):
            x = s.stem(x)
            y = s.dw(x).permute(0, 2, 3, 1)
            y = s.l2(F.gelu(s.l1(s.ln(y)))).permute(0, 3, 1, 2)
            return s.head((x + y).mean((2, 3)))

    class Dense(nn.Module):
        def __init__(s, g=12):
            super().__init__()
            s.c0 = nn.Conv2d(3, 16, 3, padding=1)
            s.layers = nn.ModuleList()
            c = 16
            for _ in range(4):
                s.layers.append(nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(),
                                              nn.Conv2d(c, g, 3, padding=1)))
                c += g
            s.pool, s.fc = nn.AvgPool2d(2), nn.Linear(c, 10)

        def forward(s, x):
            x = s.c0(x)
            for layer in s.layers:
                x = torch.cat([x, layer(x)], 1)
            return s.fc(torch.flatten(F.adaptive_avg_pool2d(s.pool(x), 1), 1))

    class TextCNN(nn.Module):
        def __init__(s):
            super().__init__()
            s.emb = nn.Embedding(1000, 64)
            s.convs = nn.ModuleList([nn.Conv1d(64, 32, k) for k in (3, 4, 5)])
            s.fc = nn.Linear(96, 4)

        def forward(s, ids):
            e = s.emb(ids).transpose(1, 2)
            return s.fc(torch.cat([F.relu(c(e)).amax(-1) for c in s.convs], 1))

    class BiGRU(nn.Module):
        def __init__(s):
            super().__init__()
            s.rnn = nn.GRU(20, 32, batch_first=True, bidirectional=True)
            s.fc = nn.Linear(64, 5)

        def forward(s, x):
            return s.fc(s.rnn(x)[0][:, -1])

    class GPTBlock(nn.Module):
        def __init__(s, d=64, t=16):
            super().__init__()
            s.emb, s.pos = nn.Embedding(500, d), nn.Parameter(torch.randn(1, t, d) * 0.02)
            s.ln1, s.qkv, s.proj = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
            s.ln2 = nn.LayerNorm(d)
            s.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            s.head, s.h = nn.Linear(d, 500), 4
            s.register_buffer("mask", torch.tril(torch.ones(t, t)).bool())

        def forward(s, ids):
            b, t = ids.shape
            x = s.emb(ids) + s.pos[:, :t]
            q, k, v = (z.view(b, t, s.h, -1).transpose(1, 2)
                       for z in s.qkv(s.ln1(x)).chunk(3, -1))
            a = (q @ k.transpose(-1, -2)) / (q.shape[-1] ** 0.5)
            a = a.masked_fill(~s.mask[:t, :t], float("-inf")).softmax(-1)
            x = x + s.proj((a @ v).transpose(1, 2).reshape(b, t, -1))
            return s.head(x + s.ff(s.ln2(x)))

    class AutoEncoder(nn.Module):
        def __init__(s):
            super().__init__()
            s.e = nn.Sequential(nn.Linear(128, 64), nn.Tanh(), nn.Dropout(0.1), nn.Linear(64, 16),
                                nn.ELU())
            s.d = nn.Sequential(nn.Linear(16, 64), nn.LeakyReLU(0.1), nn.Linear(64, 128),
                                nn.Sigmoid())

        def forward(s, x):
            return s.d(s.e(x))

    class GroupNormRes(nn.Module):
        def __init__(s, c=32):
            super().__init__()
            s.inp, s.out = nn.Conv2d(3, c, 3, padding=1), nn.Conv2d(c, 3, 3, padding=1)
            s.n1, s.c1 = nn.GroupNorm(8, c), nn.Conv2d(c, c, 3, padding=1)
            s.n2, s.c2 = nn.GroupNorm(8, c), nn.Conv2d(c, c, 3, padding=1)

        def forward(s, x):
            h = s.inp(x)
            return s.out(h + s.c2(F.silu(s.n2(s.c1(F.silu(s.n1(h)))))))

    class EffiBlock(nn.Module):
        def __init__(s):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, 24, 3, 2, 1), nn.BatchNorm2d(24), nn.SiLU())
            s.dw = nn.Sequential(nn.Conv2d(24, 24, 5, 1, 2, groups=24), nn.BatchNorm2d(24),
                                 nn.SiLU())
            s.se1, s.se2 = nn.Conv2d(24, 6, 1), nn.Conv2d(6, 24, 1)
            s.pw, s.fc = nn.Sequential(nn.Conv2d(24, 40, 1), nn.BatchNorm2d(40)), nn.Linear(40, 10)

        def forward(s, x):
            x = s.dw(s.stem(x))
            x = x * torch.sigmoid(s.se2(F.silu(s.se1(x.mean((2, 3), keepdim=True)))))
            return s.fc(s.pw(x).mean((2, 3)))

    class ESPCN(nn.Module):
        def __init__(s):
            super().__init__()
            s.c1, s.c2 = nn.Conv2d(1, 32, 5, padding=2), nn.Conv2d(32, 16, 3, padding=1)
            s.c3, s.ps, s.a = nn.Conv2d(16, 9, 3, padding=1), nn.PixelShuffle(3), nn.PReLU()

        def forward(s, x):
            return s.ps(s.c3(torch.tanh(s.c2(s.a(s.c1(x))))))

    class Decoder(nn.Module):
        def __init__(s):
            super().__init__()
            s.fc = nn.Linear(32, 64 * 4 * 4)
            s.c1, s.c2 = nn.Conv2d(64, 32, 3, padding=1), nn.Conv2d(32, 3, 3, padding=1)

        def forward(s, z):
            x = F.interpolate(s.fc(z).view(-1, 64, 4, 4), scale_factor=2, mode="nearest")
            x = F.interpolate(F.relu(s.c1(x)), scale_factor=2, mode="bilinear",
                              align_corners=False)
            return torch.sigmoid(s.c2(x))

    class MHA(nn.Module):
        def __init__(s):
            super().__init__()
            s.a, s.o = nn.MultiheadAttention(32, 4, batch_first=True), nn.Linear(32, 8)

        def forward(s, x):
            y, w = s.a(x, x, x)
            return s.o(y.mean(1)) + w.sum()

    class Video(nn.Module):
        def __init__(s):
            super().__init__()
            s.c = nn.Sequential(nn.Conv3d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool3d(2),
                                nn.Conv3d(8, 16, 3, padding=1), nn.ReLU())
            s.fc = nn.Linear(16, 5)

        def forward(s, x):
            return s.fc(s.c(x).mean((2, 3, 4)))

    class DCGAN(nn.Module):
        def __init__(s):
            super().__init__()
            s.g = nn.Sequential(
                nn.ConvTranspose2d(16, 32, 4, 1, 0), nn.BatchNorm2d(32), nn.ReLU(),
                nn.ConvTranspose2d(32, 16, 4, 2, 1), nn.BatchNorm2d(16), nn.ReLU(),
                nn.ConvTranspose2d(16, 3, 4, 2, 1), nn.Tanh())

        def forward(s, z):
            return s.g(z)

    class Style(nn.Module):
        def __init__(s):
            super().__init__()
            s.c1, s.n1 = nn.Conv2d(3, 16, 3, padding=1), nn.InstanceNorm2d(16, affine=True)
            s.c2, s.n2 = nn.Conv2d(16, 16, 3, padding=1), nn.InstanceNorm2d(16)
            s.up, s.c3 = nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(16, 3, 3, padding=1)

        def forward(s, x):
            h = F.relu(s.n1(s.c1(x)))
            h = h + F.relu(s.n2(s.c2(h)))
            return torch.sigmoid(s.c3(s.up(h)))

    class Acts(nn.Module):
        def __init__(s):
            super().__init__()
            s.l1, s.l2, s.l3 = nn.Linear(64, 128), nn.Linear(64, 64), nn.Linear(64, 32)

        def forward(s, x):
            h = F.glu(s.l1(x), -1)
            h = F.mish(h) + F.softplus(h) + F.selu(h) + F.hardsigmoid(h) + F.silu(h)
            h = F.normalize(s.l2(h), dim=-1)
            return torch.clamp(s.l3(h), -0.5, 0.5).cumsum(-1)

    class AdaptivePool(nn.Module):
        def __init__(s):
            super().__init__()
            s.c, s.fc = nn.Conv2d(3, 8, 3), nn.Linear(8 * 7 * 7, 10)

        def forward(s, x):
            h = F.relu(s.c(x))
            h = F.adaptive_avg_pool2d(h, (7, 7)) + F.adaptive_max_pool2d(h, (7, 7))
            return s.fc(h.flatten(1))

    class Siamese(nn.Module):
        def __init__(s):
            super().__init__()
            s.e = nn.Sequential(nn.Linear(40, 64), nn.ReLU(), nn.Linear(64, 32))

        def forward(s, a, b):
            return F.cosine_similarity(s.e(a), s.e(b), dim=-1)

    class LNConv(nn.Module):
        def __init__(s):
            super().__init__()
            s.c, s.ln = nn.Conv2d(3, 16, 3, 2, 1), nn.LayerNorm([16, 16, 16])
            s.un, s.fc = nn.PixelUnshuffle(2), nn.Linear(64, 4)

        def forward(s, x):
            return s.fc(s.un(F.gelu(s.ln(s.c(x)))).mean((2, 3)))

    class Tagger(nn.Module):
        def __init__(s):
            super().__init__()
            s.emb = nn.Embedding(300, 32)
            s.lstm = nn.LSTM(32, 48, batch_first=True, bidirectional=True)
            s.fc = nn.Linear(96, 9)

        def forward(s, ids):
            return F.log_softmax(s.fc(s.lstm(s.emb(ids))[0]), -1)

    return {c.__name__: c for c in (Audio1d, ConvNeXt, Dense, TextCNN, BiGRU, GPTBlock,
                                     AutoEncoder, GroupNormRes, EffiBlock, ESPCN, Decoder, MHA,
                                     Video, DCGAN, Style, Acts, AdaptivePool, Siamese, LNConv,
                                     Tagger)}


def _build(cls_name: str, classes=None):
    def build():
        net = (classes or _classes)()[cls_name]()
        _seeded_bn_stats(net)
        return net
    return build


def _floats(*shape: int, names=("x",)):
    def make(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {n: rng.standard_normal((batch, *shape)).astype(np.float32) for n in names}
    return make


def _ids(length: int, vocab: int):
    def make(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"ids": rng.integers(0, vocab, (batch, length)).astype(np.int64)}
    return make


def _model(name: str, cls_name: str, make_inputs, classes=None) -> ZooModel:
    """A zoo entry for class `cls_name` of `classes()` (default: this file's)."""
    # one size: these are small already (the benchmark's batch 32 makes them large enough)
    build = _build(cls_name, classes)
    return ZooModel(name, build, build, (), (), make_inputs=make_inputs)


MORE: dict[str, ZooModel] = {m.name: m for m in [
    _model("audio1d", "Audio1d", _floats(1, 1600)),
    _model("convnext", "ConvNeXt", _floats(3, 32, 32)),
    _model("densenet", "Dense", _floats(3, 32, 32)),
    _model("textcnn", "TextCNN", _ids(40, 1000)),
    _model("bigru", "BiGRU", _floats(12, 20)),
    _model("gpt_block", "GPTBlock", _ids(16, 500)),
    _model("autoencoder", "AutoEncoder", _floats(128)),
    _model("groupnorm_res", "GroupNormRes", _floats(3, 32, 32)),
    _model("effi_block", "EffiBlock", _floats(3, 64, 64)),
    _model("espcn", "ESPCN", _floats(1, 32, 32)),
    _model("decoder", "Decoder", _floats(32, names=("z",))),
    _model("mha", "MHA", _floats(16, 32)),
    _model("video3d", "Video", _floats(3, 8, 16, 16)),
    _model("dcgan", "DCGAN", _floats(16, 1, 1, names=("z",))),
    _model("style", "Style", _floats(3, 32, 32)),
    _model("activations", "Acts", _floats(64)),
    _model("adaptive_pool", "AdaptivePool", _floats(3, 30, 30)),
    _model("siamese", "Siamese", _floats(40, names=("a", "b"))),
    _model("layernorm_conv", "LNConv", _floats(3, 32, 32)),
    _model("tagger", "Tagger", _ids(20, 300)),
]}
