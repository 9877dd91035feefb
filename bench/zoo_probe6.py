"""A probe set of torch.nn models (probe6), written as a survey of model kinds the earlier sets
did not cover: a Conv-TasNet-like separator, a RealNVP flow, a PoolFormer, a GhostNet, a
VGG-style plain stack, nn.TransformerDecoder with a causal mask and cross-attention, N-BEATS,
an FT-Transformer, a PixelCNN (masked convolutions), a WaveGAN-style 1D generator, EDSR, a
linear-attention transformer, a Mamba-style gated-conv/cumsum-scan block and DeepSets.
Seeded random weights. `bench/zoo.py --set probe6`; checked by tests/test_zoo_more.py.
"""
from __future__ import annotations

import functools

import numpy as np
import zoo_more
from zoo_models import ZooModel, _torch


@functools.cache
def _classes() -> dict:
    torch = _torch()
    nn, F = torch.nn, torch.nn.functional

    class TasBlock(nn.Module):
        def __init__(s, b, h, d):
            super().__init__()
            s.f = nn.Sequential(
                nn.Conv1d(b, h, 1), nn.PReLU(), nn.GroupNorm(1, h),
                nn.Conv1d(h, h, 3, padding=d, dilation=d, groups=h), nn.PReLU(),
                nn.GroupNorm(1, h), nn.Conv1d(h, b, 1))

        def forward(s, x):
            return x + s.f(x)

    class ConvTasNet(nn.Module):
        """waveform [B,1,1000] -> Conv1d(1,64,16,s=8) encoder -> GroupNorm + 1x1 bottleneck ->
        6 TCN blocks (hidden 64, PReLU, GroupNorm, depthwise dilated k=3) -> 2 sigmoid masks ->
        ConvTranspose1d(64,1,16,s=8) decoder per source"""

        def __init__(s, n=64, b=32, h=64, spk=2):
            super().__init__()
            s.n, s.spk = n, spk
            s.enc = nn.Conv1d(1, n, 16, 8, bias=False)
            s.norm = nn.GroupNorm(1, n)
            s.bott = nn.Conv1d(n, b, 1)
            s.tcn = nn.Sequential(*[TasBlock(b, h, 2 ** i) for i in (0, 1, 2, 3, 0, 1)])
            s.mask = nn.Conv1d(b, n * spk, 1)
            s.dec = nn.ConvTranspose1d(n, 1, 16, 8, bias=False)

        def forward(s, x):
            w = F.relu(s.enc(x))
            m = torch.sigmoid(s.mask(s.tcn(s.bott(s.norm(w)))))
            m = m.view(x.shape[0], s.spk, s.n, -1)
            y = (w.unsqueeze(1) * m).flatten(0, 1)
            return s.dec(y).view(x.shape[0], s.spk, -1)

    class Coupling(nn.Module):
        def __init__(s, d, hdim, flip):
            super().__init__()
            s.flip = flip
            s.net = nn.Sequential(nn.Linear(d // 2, hdim), nn.ReLU(), nn.Linear(hdim, hdim),
                                  nn.ReLU(), nn.Linear(hdim, d))

        def forward(s, x):
            a, b = x.chunk(2, -1)
            if s.flip:
                a, b = b, a
            st = s.net(a)
            sc, t = st.chunk(2, -1)
            sc = torch.tanh(sc)
            b = b * torch.exp(sc) + t
            out = torch.cat([b, a] if s.flip else [a, b], -1)
            return out, sc.sum(-1)

    class RealNVP(nn.Module):
        """RealNVP on 32-d vectors: 6 affine coupling layers (MLP s,t; tanh-scaled exp),
        alternating halves, returns z and the log-det sum plus a standard-normal log-prob"""

        def __init__(s, d=32, hdim=256):
            super().__init__()
            s.layers = nn.ModuleList([Coupling(d, hdim, i % 2 == 1) for i in range(6)])

        def forward(s, x):
            logdet = torch.zeros_like(x[:, 0])
            for layer in s.layers:
                x, ld = layer(x)
                logdet = logdet + ld
            logp = -0.5 * (x * x).sum(-1) - 0.5 * x.shape[-1] * 1.8378770664093453
            return x, logp + logdet

    class PoolFormerBlock(nn.Module):
        def __init__(s, c):
            super().__init__()
            s.n1, s.n2 = nn.GroupNorm(1, c), nn.GroupNorm(1, c)
            s.pool = nn.AvgPool2d(3, 1, 1, count_include_pad=False)
            s.mlp = nn.Sequential(nn.Conv2d(c, 4 * c, 1), nn.GELU(), nn.Conv2d(4 * c, c, 1))
            s.g1 = nn.Parameter(torch.full((c, 1, 1), 0.5))
            s.g2 = nn.Parameter(torch.full((c, 1, 1), 0.5))

        def forward(s, x):
            y = s.n1(x)
            x = x + s.g1 * (s.pool(y) - y)
            return x + s.g2 * s.mlp(s.n2(x))

    class PoolFormer(nn.Module):
        """PoolFormer-S-ish at 48x48: 4x4 patch stem to 64ch 12x12, 2 blocks, 2x2 stride-2
        downsample to 128ch 6x6, 2 blocks; avg-pool token mixer, GroupNorm(1,C), 1x1 MLP"""

        def __init__(s):
            super().__init__()
            s.stem = nn.Conv2d(3, 64, 4, 4)
            s.s1 = nn.Sequential(PoolFormerBlock(64), PoolFormerBlock(64))
            s.down = nn.Conv2d(64, 128, 2, 2)
            s.s2 = nn.Sequential(PoolFormerBlock(128), PoolFormerBlock(128))
            s.norm = nn.GroupNorm(1, 128)
            s.fc = nn.Linear(128, 10)

        def forward(s, x):
            x = s.s2(s.down(s.s1(s.stem(x))))
            return s.fc(s.norm(x).mean((2, 3)))

    class Ghost(nn.Module):
        def __init__(s, i, o, relu=True):
            super().__init__()
            h = o // 2
            act = [nn.ReLU()] if relu else []
            s.primary = nn.Sequential(nn.Conv2d(i, h, 1, bias=False), nn.BatchNorm2d(h), *act)
            s.cheap = nn.Sequential(nn.Conv2d(h, h, 3, 1, 1, groups=h, bias=False),
                                    nn.BatchNorm2d(h), *act)

        def forward(s, x):
            y = s.primary(x)
            return torch.cat([y, s.cheap(y)], 1)

    class GhostBottleneck(nn.Module):
        def __init__(s, i, e, o, stride, se):
            super().__init__()
            s.g1 = Ghost(i, e)
            s.dw = (nn.Sequential(nn.Conv2d(e, e, 3, 2, 1, groups=e, bias=False),
                                  nn.BatchNorm2d(e)) if stride == 2 else nn.Identity())
            s.se = (nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(e, e // 4, 1), nn.ReLU(),
                                  nn.Conv2d(e // 4, e, 1), nn.Hardsigmoid())
                    if se else None)
            s.g2 = Ghost(e, o, relu=False)
            s.short = (nn.Identity() if stride == 1 and i == o else nn.Sequential(
                nn.Conv2d(i, i, 3, stride, 1, groups=i, bias=False), nn.BatchNorm2d(i),
                nn.Conv2d(i, o, 1, bias=False), nn.BatchNorm2d(o)))

        def forward(s, x):
            y = s.dw(s.g1(x))
            if s.se is not None:
                y = y * s.se(y)
            return s.g2(y) + s.short(x)

    class GhostNet(nn.Module):
        """GhostNet-ish at 64x64: ghost modules (1x1 primary + depthwise 3x3 cheap op, concat),
        stride-2 depthwise, hardsigmoid SE"""

        def __init__(s):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16),
                                   nn.ReLU())
            s.body = nn.Sequential(
                GhostBottleneck(16, 16, 16, 1, False), GhostBottleneck(16, 48, 24, 2, False),
                GhostBottleneck(24, 72, 24, 1, False), GhostBottleneck(24, 72, 40, 2, True),
                GhostBottleneck(40, 120, 40, 1, True), GhostBottleneck(40, 240, 80, 2, False),
                GhostBottleneck(80, 200, 80, 1, False))
            s.head = nn.Sequential(nn.Conv2d(80, 480, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                   nn.Flatten(), nn.Linear(480, 10))

        def forward(s, x):
            return s.head(s.body(s.stem(x)))

    class VGG(nn.Module):
        """VGG/RepVGG-inference-style plain stack at 32x32: 3x3 conv+BN+ReLU pairs, 2x2 max pools,
        32-64-128-128 channels, classifier"""

        def __init__(s):
            super().__init__()

            def cbr(i, o):
                return [nn.Conv2d(i, o, 3, 1, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU()]

            s.f = nn.Sequential(*cbr(3, 32), *cbr(32, 32), nn.MaxPool2d(2),
                                *cbr(32, 64), *cbr(64, 64), nn.MaxPool2d(2),
                                *cbr(64, 128), *cbr(128, 128), nn.MaxPool2d(2),
                                *cbr(128, 128), nn.AdaptiveMaxPool2d(1), nn.Flatten())
            s.fc = nn.Sequential(nn.Linear(128, 128), nn.ReLU(), nn.Dropout(), nn.Linear(128, 10))

        def forward(s, x):
            return s.fc(s.f(x))

    class TDecoder(nn.Module):
        """nn.TransformerDecoder (2 layers, d=64, 4 heads, ff 256, batch_first, norm_first=False)
        on 16 target tokens with a causal mask built in forward and cross-attention to 24
        memory tokens"""

        def __init__(s, d=64):
            super().__init__()
            layer = nn.TransformerDecoderLayer(d, 4, 256, dropout=0.0, batch_first=True)
            s.dec = nn.TransformerDecoder(layer, 2)
            s.out = nn.Linear(d, 100)

        def forward(s, tgt, memory):
            n = tgt.shape[1]
            mask = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
            # tgt_is_causal=True: without it torch compares the mask with a causal one (.item()),
            # which torch.export (dynamo=True) cannot trace (a data-dependent guard)
            return s.out(s.dec(tgt, memory, tgt_mask=mask, tgt_is_causal=True))

    class NBeatsBlock(nn.Module):
        def __init__(s, back, fore, h=256):
            super().__init__()
            s.fc = nn.Sequential(nn.Linear(back, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(),
                                 nn.Linear(h, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU())
            s.theta = nn.Linear(h, back + fore)
            s.back = back

        def forward(s, x):
            th = s.theta(s.fc(x))
            return th[:, :s.back], th[:, s.back:]

    class NBeats(nn.Module):
        """N-BEATS generic: 6 blocks of 4 FC-256 layers, backcast subtracted, forecasts summed
        (backcast 96 -> forecast 24)"""

        def __init__(s, back=96, fore=24):
            super().__init__()
            s.blocks = nn.ModuleList([NBeatsBlock(back, fore) for _ in range(6)])

        def forward(s, x):
            f = 0
            for b in s.blocks:
                bc, fc = b(x)
                x = x - bc
                f = f + fc
            return f

    class FTTransformer(nn.Module):
        """FT-Transformer for 16 numeric features: per-feature linear tokenizer (x[...,None]*W+b),
        CLS token, 3 pre-norm nn.TransformerEncoderLayers d=64, head on CLS"""

        def __init__(s, nf=16, d=64):
            super().__init__()
            s.w = nn.Parameter(torch.randn(nf, d) * 0.3)
            s.b = nn.Parameter(torch.randn(nf, d) * 0.1)
            s.cls = nn.Parameter(torch.randn(1, 1, d) * 0.1)
            layer = nn.TransformerEncoderLayer(d, 8, 128, dropout=0.0, batch_first=True,
                                               norm_first=True, activation="gelu")
            s.enc = nn.TransformerEncoder(layer, 3, enable_nested_tensor=False)
            s.head = nn.Sequential(nn.LayerNorm(d), nn.ReLU(), nn.Linear(d, 1))

        def forward(s, x):
            tok = x.unsqueeze(-1) * s.w + s.b
            tok = torch.cat([s.cls.expand(x.shape[0], -1, -1), tok], 1)
            return s.head(s.enc(tok)[:, 0])

    class MaskedConv(nn.Conv2d):
        def __init__(s, i, o, k, kind):
            super().__init__(i, o, k, padding=k // 2)
            m = torch.ones(o, i, k, k)
            m[:, :, k // 2, k // 2 + (kind == "B"):] = 0
            m[:, :, k // 2 + 1:] = 0
            s.register_buffer("mask", m)

        def forward(s, x):
            return F.conv2d(x, s.weight * s.mask, s.bias, padding=s.padding)

    class PixelCNN(nn.Module):
        """PixelCNN on 1x28x28: masked 7x7 type-A conv, 4 residual blocks (1x1, masked 3x3
        type-B, 1x1), 1x1 heads to 256-way logits"""

        def __init__(s, c=32):
            super().__init__()
            s.a = MaskedConv(1, 2 * c, 7, "A")
            s.blocks = nn.ModuleList([nn.Sequential(
                nn.ReLU(), nn.Conv2d(2 * c, c, 1), nn.ReLU(), MaskedConv(c, c, 3, "B"),
                nn.ReLU(), nn.Conv2d(c, 2 * c, 1)) for _ in range(4)])
            s.head = nn.Sequential(nn.ReLU(), nn.Conv2d(2 * c, 64, 1), nn.ReLU(),
                                   nn.Conv2d(64, 256, 1))

        def forward(s, x):
            h = s.a(x)
            for b in s.blocks:
                h = h + b(h)
            return s.head(h)

    class WaveGAN(nn.Module):
        """WaveGAN-style generator: z[64] -> Linear -> [192,16] -> 4 ConvTranspose1d(k=25, s=4,
        p=11, op=1) with ReLU -> [1,4096] tanh"""

        def __init__(s, z=64, c=192):
            super().__init__()
            s.c = c
            s.fc = nn.Linear(z, c * 16)
            chans = [c, c // 2, c // 4, c // 8, 1]
            s.ups = nn.ModuleList([nn.ConvTranspose1d(chans[i], chans[i + 1], 25, 4, 11,
                                                      output_padding=1) for i in range(4)])

        def forward(s, z):
            x = F.relu(s.fc(z)).view(z.shape[0], s.c, 16)
            for i, u in enumerate(s.ups):
                x = u(x)
                x = torch.tanh(x) if i == 3 else F.relu(x)
            return x

    class EDSRBlock(nn.Module):
        def __init__(s, c):
            super().__init__()
            s.f = nn.Sequential(nn.Conv2d(c, c, 3, 1, 1), nn.ReLU(), nn.Conv2d(c, c, 3, 1, 1))

        def forward(s, x):
            return x + 0.1 * s.f(x)

    class EDSR(nn.Module):
        """EDSR-baseline-ish x2 at 16x16: head conv, 6 residual blocks (residual scaling 0.1),
        conv + global skip, conv to 4C + PixelShuffle(2), tail conv; mean shift"""

        def __init__(s, c=32):
            super().__init__()
            s.register_buffer("mean", torch.tensor([0.45, 0.44, 0.40]).view(1, 3, 1, 1))
            s.head = nn.Conv2d(3, c, 3, 1, 1)
            s.body = nn.Sequential(*[EDSRBlock(c) for _ in range(6)], nn.Conv2d(c, c, 3, 1, 1))
            s.up = nn.Sequential(nn.Conv2d(c, 4 * c, 3, 1, 1), nn.PixelShuffle(2))
            s.tail = nn.Conv2d(c, 3, 3, 1, 1)

        def forward(s, x):
            h = s.head(x - s.mean)
            h = h + s.body(h)
            return s.tail(s.up(h)) + s.mean

    class LinAttnLayer(nn.Module):
        def __init__(s, d, heads):
            super().__init__()
            s.h = heads
            s.qkv = nn.Linear(d, 3 * d)
            s.o = nn.Linear(d, d)
            s.n1, s.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            s.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(s, x):
            b, n, d = x.shape
            q, k, v = s.qkv(s.n1(x)).view(b, n, 3, s.h, d // s.h).permute(2, 0, 3, 1, 4)
            q, k = F.elu(q) + 1, F.elu(k) + 1
            kv = torch.einsum("bhnd,bhne->bhde", k, v)
            z = 1 / (torch.einsum("bhnd,bhd->bhn", q, k.sum(2)) + 1e-6)
            y = torch.einsum("bhnd,bhde,bhn->bhne", q, kv, z)
            x = x + s.o(y.transpose(1, 2).reshape(b, n, d))
            return x + s.ff(s.n2(x))

    class LinearAttention(nn.Module):
        """linear-attention transformer (Katharopoulos et al.) on [B,128,64]: elu+1 feature
        map, einsum KV summaries and normaliser, 2 pre-norm layers, 4 heads"""

        def __init__(s, d=64):
            super().__init__()
            s.layers = nn.Sequential(LinAttnLayer(d, 4), LinAttnLayer(d, 4))
            s.out = nn.Linear(d, 10)

        def forward(s, x):
            return s.out(s.layers(x).mean(1))

    class MambaBlock(nn.Module):
        def __init__(s, d, e=2, k=4):
            super().__init__()
            s.k, di = k, d * e
            s.norm = nn.LayerNorm(d)
            s.inp = nn.Linear(d, 2 * di)
            s.conv = nn.Conv1d(di, di, k, groups=di, padding=k - 1)
            s.dt = nn.Linear(di, di)
            s.a_log = nn.Parameter(torch.log(torch.linspace(0.5, 2.0, di)))
            s.out = nn.Linear(di, d)

        def forward(s, x):
            n = x.shape[1]
            u, g = s.inp(s.norm(x)).chunk(2, -1)
            u = s.conv(u.transpose(1, 2))[..., :n].transpose(1, 2)
            u = F.silu(u)
            dt = F.softplus(s.dt(u)) * 0.05
            la = torch.cumsum(-torch.exp(s.a_log) * dt, 1)          # log of the decay
            h = torch.exp(la) * torch.cumsum(torch.exp(-la) * dt * u, 1)
            return x + s.out(h * F.silu(g))

    class Mamba(nn.Module):
        """Mamba-style model on [B,64,48]: LayerNorm, in-proj to (u, gate), causal depthwise
        conv1d k=4, SiLU, softplus dt, a diagonal decaying scan via cumsum/exp, gated output;
        3 blocks"""

        def __init__(s, d=48):
            super().__init__()
            s.blocks = nn.Sequential(MambaBlock(d), MambaBlock(d), MambaBlock(d))
            s.head = nn.Linear(d, 10)

        def forward(s, x):
            return s.head(s.blocks(x)[:, -1])

    class DeepSets(nn.Module):
        """DeepSets on sets of 64 3-d points: phi MLP per element (3->128->128->128),
        sum pooling, rho MLP; plus a max-pooled branch"""

        def __init__(s):
            super().__init__()
            s.phi = nn.Sequential(nn.Linear(3, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                                  nn.Linear(128, 128))
            s.rho = nn.Sequential(nn.Linear(256, 128), nn.ELU(), nn.Linear(128, 10))

        def forward(s, x):
            h = s.phi(x)
            return s.rho(torch.cat([h.sum(1), h.amax(1)], -1))

    return {c.__name__: c for c in (ConvTasNet, RealNVP, PoolFormer, GhostNet, VGG, TDecoder,
                                     NBeats, FTTransformer, PixelCNN, WaveGAN, EDSR,
                                     LinearAttention, Mamba, DeepSets)}


_floats = zoo_more._floats


def _tdec_inputs(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"tgt": rng.standard_normal((batch, 16, 64)).astype(np.float32),
            "memory": rng.standard_normal((batch, 24, 64)).astype(np.float32)}


def _model(name: str, cls_name: str, make_inputs) -> ZooModel:
    return zoo_more._model(name, cls_name, make_inputs, _classes)


PROBE6: dict[str, ZooModel] = {
    m.name: m
    for m in [
        _model("conv_tasnet", "ConvTasNet", _floats(1, 1000)),
        _model("realnvp", "RealNVP", _floats(32)),
        _model("poolformer", "PoolFormer", _floats(3, 48, 48)),
        _model("ghostnet", "GhostNet", _floats(3, 64, 64)),
        _model("vgg_plain", "VGG", _floats(3, 32, 32)),
        _model("tdecoder", "TDecoder", _tdec_inputs),
        _model("nbeats", "NBeats", _floats(96)),
        _model("ft_transformer", "FTTransformer", _floats(16)),
        _model("pixelcnn", "PixelCNN", _floats(1, 28, 28)),
        _model("wavegan", "WaveGAN", _floats(64, names=("z",))),
        _model("edsr", "EDSR", _floats(3, 16, 16)),
        _model("linear_attn", "LinearAttention", _floats(128, 64)),
        _model("mamba", "Mamba", _floats(64, 48)),
        _model("deepsets", "DeepSets", _floats(64, 3)),
    ]
}
