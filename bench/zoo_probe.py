"""A third set of torch.nn models for the zoo, written on 2026-11-26 as a probe of models nobody
tuned for, after the 20 of zoo_more.py had been tuned: dilated causal 1-D convolutions (TCN,
WaveNet's gated units), a PointNet (1x1 convolutions and a max over points), dilated
convolutions with image pooling (ASPP), a vanilla RNN, a LLaMA-style block (RMSNorm, rotary
embeddings, SwiGLU, scaled_dot_product_attention), a ResNeXt block (grouped convolution), a
graph convolution (a fixed adjacency), a soft mixture of experts (einsums), AlexNet's local
response normalization with ceil-mode pooling, CBAM's channel and spatial attention, F.unfold
patches, and a VAE with its noise as an input. Seeded random weights; `bench/zoo.py --set probe`
times them and tests/test_zoo_more.py checks them against onnxruntime.
(nn.TransformerDecoder was in the probe too: torch.export cannot export its mask check, so the
dynamo exporter fails on it; the TorchScript exporter's model imports and matches.)
"""
from __future__ import annotations

import functools

import numpy as np
import zoo_more
from zoo_models import ZooModel, _torch
from zoo_more import _ids


@functools.cache
def _classes() -> dict:
    torch = _torch()
    nn, F = torch.nn, torch.nn.functional

    class TCN(nn.Module):
        def __init__(s, c=32):
            super().__init__()
            s.inp = nn.Conv1d(8, c, 1)
            s.convs = nn.ModuleList([nn.Conv1d(c, c, 3, dilation=d) for d in (1, 2, 4, 8)])
            s.head = nn.Linear(c, 5)

        def forward(s, x):
            h = s.inp(x)
            for conv in s.convs:
                h = h + F.relu(conv(F.pad(h, (2 * conv.dilation[0], 0))))
            return s.head(h[:, :, -1])

    class WaveNet(nn.Module):
        def __init__(s, c=24):
            super().__init__()
            rates = (1, 2, 4, 8, 16)
            s.inp = nn.Conv1d(1, c, 1)
            s.f = nn.ModuleList([nn.Conv1d(c, c, 2, dilation=d, padding=d) for d in rates])
            s.g = nn.ModuleList([nn.Conv1d(c, c, 2, dilation=d, padding=d) for d in rates])
            s.res = nn.ModuleList([nn.Conv1d(c, c, 1) for _ in rates])
            s.out = nn.Conv1d(c, 16, 1)

        def forward(s, x):
            h, skip, n = s.inp(x), 0, x.shape[-1]
            for f, g, r in zip(s.f, s.g, s.res):
                z = torch.tanh(f(h)[..., :n]) * torch.sigmoid(g(h)[..., :n])
                skip = skip + z
                h = h + r(z)
            return s.out(F.relu(skip))

    class PointNet(nn.Module):
        def __init__(s):
            super().__init__()
            s.f = nn.Sequential(nn.Conv1d(3, 64, 1), nn.BatchNorm1d(64), nn.ReLU(),
                                nn.Conv1d(64, 128, 1), nn.BatchNorm1d(128), nn.ReLU(),
                                nn.Conv1d(128, 256, 1))
            s.h = nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Dropout(0.3), nn.Linear(128, 10))

        def forward(s, x):
            return F.log_softmax(s.h(s.f(x).max(-1).values), -1)

    class ASPP(nn.Module):
        def __init__(s, c=32):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1), nn.BatchNorm2d(c), nn.ReLU())
            s.b = nn.ModuleList([nn.Conv2d(c, 16, 1)] + [nn.Conv2d(c, 16, 3, padding=r, dilation=r)
                                                         for r in (2, 4, 6)])
            s.gp, s.proj = nn.Conv2d(c, 16, 1), nn.Conv2d(80, 8, 1)

        def forward(s, x):
            h = s.stem(x)
            g = F.interpolate(s.gp(F.adaptive_avg_pool2d(h, 1)), size=h.shape[-2:],
                              mode="bilinear", align_corners=False)
            return s.proj(torch.cat([F.relu(b(h)) for b in s.b] + [g], 1))

    class VRNN(nn.Module):
        def __init__(s):
            super().__init__()
            s.r, s.h = nn.RNN(16, 48, 2, batch_first=True), nn.Linear(48, 4)

        def forward(s, x):
            return s.h(s.r(x)[0][:, -1])

    class Llama(nn.Module):
        def __init__(s, d=64, heads=4, t=24):
            super().__init__()
            s.emb, s.heads = nn.Embedding(256, d), heads
            s.qkv, s.o = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
            s.w1, s.w3 = nn.Linear(d, 172, bias=False), nn.Linear(d, 172, bias=False)
            s.w2, s.lm = nn.Linear(172, d, bias=False), nn.Linear(d, 256, bias=False)
            s.g1, s.g2 = nn.Parameter(torch.rand(d) + 0.5), nn.Parameter(torch.rand(d) + 0.5)
            hd = d // heads
            pos = torch.arange(t)[:, None] * (10000 ** (-torch.arange(0, hd, 2) / hd))[None]
            s.register_buffer("cos", pos.cos())
            s.register_buffer("sin", pos.sin())

        def rms(s, x, g):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * g

        def rope(s, x):
            a, b = x[..., 0::2], x[..., 1::2]
            return torch.cat([a * s.cos - b * s.sin, a * s.sin + b * s.cos], -1)

        def forward(s, ids):
            x = s.emb(ids)
            B, T, D = x.shape
            q, k, v = s.qkv(s.rms(x, s.g1)).split(D, -1)
            q, k, v = (u.reshape(B, T, s.heads, D // s.heads).transpose(1, 2) for u in (q, k, v))
            a = F.scaled_dot_product_attention(s.rope(q), s.rope(k), v, is_causal=True)
            x = x + s.o(a.transpose(1, 2).reshape(B, T, D))
            y = s.rms(x, s.g2)
            return s.lm(x + s.w2(F.silu(s.w1(y)) * s.w3(y)))

    class ResNeXt(nn.Module):
        def __init__(s):
            super().__init__()
            s.stem = nn.Conv2d(3, 64, 3, padding=1)
            s.blk = nn.Sequential(nn.Conv2d(64, 64, 1), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.Conv2d(64, 64, 3, padding=1, groups=8), nn.BatchNorm2d(64),
                                  nn.ReLU(), nn.Conv2d(64, 64, 1), nn.BatchNorm2d(64))
            s.fc = nn.Linear(64, 10)

        def forward(s, x):
            h = F.relu(s.stem(x))
            h = F.relu(h + s.blk(h))
            return s.fc(F.adaptive_avg_pool2d(h, 1).flatten(1))

    class GCN(nn.Module):
        def __init__(s, n=20):
            super().__init__()
            a = (torch.rand(n, n) > 0.7).float()
            a = a + a.T + torch.eye(n)
            d = a.sum(1).rsqrt()
            s.register_buffer("A", d[:, None] * a * d[None])
            s.l1, s.l2, s.out = nn.Linear(16, 32), nn.Linear(32, 32), nn.Linear(32, 3)

        def forward(s, x):
            h = F.relu(s.A @ s.l1(x))
            return s.out(F.relu(s.A @ s.l2(h)).mean(1))

    class SoftMoE(nn.Module):
        def __init__(s, d=32, e=4):
            super().__init__()
            s.gate = nn.Linear(d, e)
            s.w1 = nn.Parameter(torch.randn(e, d, 64) * 0.1)
            s.w2 = nn.Parameter(torch.randn(e, 64, d) * 0.1)

        def forward(s, x):
            g = F.softmax(s.gate(x), -1)
            h = F.gelu(torch.einsum("btd,edh->bteh", x, s.w1))
            return (torch.einsum("bteh,ehd->bted", h, s.w2) * g.unsqueeze(-1)).sum(2)

    class AlexLRN(nn.Module):
        def __init__(s):
            super().__init__()
            s.f = nn.Sequential(nn.Conv2d(3, 24, 5, stride=2, padding=2), nn.ReLU(),
                                nn.LocalResponseNorm(5), nn.MaxPool2d(3, 2, ceil_mode=True),
                                nn.Conv2d(24, 48, 3, padding=1), nn.ReLU(),
                                nn.MaxPool2d(3, 2, ceil_mode=True))
            s.c = nn.Linear(48 * 4 * 4, 10)

        def forward(s, x):
            return s.c(s.f(x).flatten(1))

    class CBAM(nn.Module):
        def __init__(s, c=32):
            super().__init__()
            s.stem = nn.Conv2d(3, c, 3, padding=1)
            s.mlp = nn.Sequential(nn.Linear(c, 8), nn.ReLU(), nn.Linear(8, c))
            s.sp = nn.Conv2d(2, 1, 7, padding=3)

        def forward(s, x):
            h = F.relu(s.stem(x))
            h = h * torch.sigmoid(s.mlp(h.mean((2, 3))) + s.mlp(h.amax((2, 3))))[:, :, None, None]
            m = torch.cat([h.mean(1, keepdim=True), h.amax(1, keepdim=True)], 1)
            return (h * torch.sigmoid(s.sp(m))).mean((2, 3))

    class Unfold(nn.Module):
        def __init__(s):
            super().__init__()
            s.l = nn.Linear(3 * 16, 32)

        def forward(s, x):
            return s.l(F.unfold(x, 4, stride=4).transpose(1, 2)).mean(1)

    class VAE(nn.Module):
        def __init__(s):
            super().__init__()
            s.e, s.mu, s.lv = nn.Linear(64, 64), nn.Linear(64, 8), nn.Linear(64, 8)
            s.d = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.Sigmoid())

        def forward(s, x, eps):
            h = F.relu(s.e(x))
            mu, lv = s.mu(h), s.lv(h)
            return s.d(mu + eps * torch.exp(0.5 * lv)), mu, lv

    return {c.__name__: c for c in (TCN, WaveNet, PointNet, ASPP, VRNN, Llama, ResNeXt, GCN,
                                     SoftMoE, AlexLRN, CBAM, Unfold, VAE)}


def _floats(*shapes: tuple[int, ...], names=("x",)):
    def make(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {n: rng.standard_normal((batch, *s)).astype(np.float32) for n, s in zip(names, shapes)}
    return make


def _model(name: str, cls_name: str, make_inputs) -> ZooModel:
    return zoo_more._model(name, cls_name, make_inputs, _classes)


PROBE: dict[str, ZooModel] = {m.name: m for m in [
    _model("tcn", "TCN", _floats((8, 100))),
    _model("wavenet", "WaveNet", _floats((1, 400))),
    _model("pointnet", "PointNet", _floats((3, 256))),
    _model("aspp", "ASPP", _floats((3, 64, 64))),
    _model("vanilla_rnn", "VRNN", _floats((30, 16))),
    _model("llama_block", "Llama", _ids(24, 256)),
    _model("resnext_block", "ResNeXt", _floats((3, 32, 32))),
    _model("gcn", "GCN", _floats((20, 16))),
    _model("soft_moe", "SoftMoE", _floats((12, 32))),
    _model("alexnet_lrn", "AlexLRN", _floats((3, 32, 32))),
    _model("cbam", "CBAM", _floats((3, 32, 32))),
    _model("unfold_patches", "Unfold", _floats((3, 32, 32))),
    _model("vae", "VAE", _floats((64,), (8,), names=("x", "eps"))),
]}
