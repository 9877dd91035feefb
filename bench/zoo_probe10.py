"""A probe set of torch.nn models (probe10): kinds the earlier sets did not cover: a diffusion
UNet (sinusoidal timestep embedding, GroupNorm-SiLU residual blocks, attention at low
resolution), a DETR-style detection head (learned queries, a transformer decoder with
cross-attention over CNN features), SqueezeNet fire modules (ceil-mode max pooling), Xception's
separable convolutions, a HiFi-GAN generator (1-D transposed convolutions, dilated residual
blocks), RepLKNet's 13x13 depthwise kernels, a Temporal Fusion Transformer's gated residual
networks (ELU, GLU, variable selection), ResMLP (per-channel affine layers, cross-patch
products), a Set Transformer (induced-point attention, attention pooling), an NFNet-style
network (weights standardized in the forward pass, weight-normalized head), EfficientNetV2's
fused MBConv, a GPT block with ALiBi biases, RMSNorm and SwiGLU, and involution (per-pixel
kernels over unfolded windows). Seeded random weights. `bench/zoo.py --set probe10`.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import zoo_more
from zoo_models import ZooModel, _torch


@functools.cache
def _classes() -> dict:
    torch = _torch()
    nn, F = torch.nn, torch.nn.functional

    class ResBlock(nn.Module):
        def __init__(s, cin, cout, temb):
            super().__init__()
            s.n1, s.c1 = nn.GroupNorm(8, cin), nn.Conv2d(cin, cout, 3, padding=1)
            s.t = nn.Linear(temb, cout)
            s.n2, s.c2 = nn.GroupNorm(8, cout), nn.Conv2d(cout, cout, 3, padding=1)
            s.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

        def forward(s, x, t):
            h = s.c1(F.silu(s.n1(x))) + s.t(t)[:, :, None, None]
            return s.skip(x) + s.c2(F.silu(s.n2(h)))

    class DiffusionUNet(nn.Module):
        def __init__(s, c=32, temb=64):
            super().__init__()
            s.c = c
            s.temb = nn.Sequential(nn.Linear(c, temb), nn.SiLU(), nn.Linear(temb, temb))
            s.inc = nn.Conv2d(3, c, 3, padding=1)
            s.d1, s.down1 = ResBlock(c, c, temb), nn.Conv2d(c, c, 3, stride=2, padding=1)
            s.d2, s.down2 = ResBlock(c, 2 * c, temb), nn.Conv2d(2 * c, 2 * c, 3, stride=2,
                                                                 padding=1)
            s.mid = ResBlock(2 * c, 2 * c, temb)
            s.norm = nn.GroupNorm(8, 2 * c)
            s.attn = nn.MultiheadAttention(2 * c, 4, batch_first=True)
            s.u2 = ResBlock(4 * c, 2 * c, temb)
            s.u1 = ResBlock(3 * c, c, temb)
            s.out = nn.Sequential(nn.GroupNorm(8, c), nn.SiLU(), nn.Conv2d(c, 3, 3, padding=1))

        def forward(s, x, t):
            half = s.c // 2
            freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32)
                              / half)
            e = t[:, None] * freqs[None]
            temb = s.temb(torch.cat([e.sin(), e.cos()], 1))
            h0 = s.inc(x)
            h1 = s.d1(h0, temb)
            h2 = s.d2(s.down1(h1), temb)
            m = s.mid(s.down2(h2), temb)
            b, c, hh, ww = m.shape
            q = s.norm(m).flatten(2).transpose(1, 2)
            a, _ = s.attn(q, q, q, need_weights=False)
            m = m + a.transpose(1, 2).reshape(b, c, hh, ww)
            u = F.interpolate(m, scale_factor=2.0, mode="nearest")
            u = s.u2(torch.cat([u, h2], 1), temb)
            u = F.interpolate(u, scale_factor=2.0, mode="nearest")
            u = s.u1(torch.cat([u, h1], 1), temb)
            return s.out(u)

    class DETRHead(nn.Module):
        def __init__(s, d=64, queries=20, classes=11):
            super().__init__()
            s.backbone = nn.Sequential(
                nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
                nn.Conv2d(64, d, 3, stride=2, padding=1), nn.ReLU())
            g = torch.Generator().manual_seed(3)
            s.pos = nn.Parameter(torch.randn(1, 16, d, generator=g) * 0.1)
            s.query = nn.Embedding(queries, d)
            layer = nn.TransformerDecoderLayer(d, 4, 2 * d, 0.0, batch_first=True)
            s.dec = nn.TransformerDecoder(layer, 2)
            s.cls = nn.Linear(d, classes)
            s.box = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 4))

        def forward(s, x):
            mem = s.backbone(x).flatten(2).transpose(1, 2) + s.pos
            q = s.query.weight.unsqueeze(0).expand(x.shape[0], -1, -1)
            h = s.dec(q, mem)
            return s.cls(h).softmax(-1), s.box(h).sigmoid()

    class Fire(nn.Module):
        def __init__(s, cin, sq, ex):
            super().__init__()
            s.sq = nn.Conv2d(cin, sq, 1)
            s.e1, s.e3 = nn.Conv2d(sq, ex, 1), nn.Conv2d(sq, ex, 3, padding=1)

        def forward(s, x):
            x = F.relu(s.sq(x))
            return torch.cat([F.relu(s.e1(x)), F.relu(s.e3(x))], 1)

    class SqueezeNet(nn.Module):
        def __init__(s):
            super().__init__()
            s.f = nn.Sequential(
                nn.Conv2d(3, 64, 3, stride=2), nn.ReLU(),
                nn.MaxPool2d(3, 2, ceil_mode=True), Fire(64, 16, 64), Fire(128, 16, 64),
                nn.MaxPool2d(3, 2, ceil_mode=True), Fire(128, 32, 128), Fire(256, 32, 128),
                nn.MaxPool2d(3, 2, ceil_mode=True), Fire(256, 48, 192))
            s.cls = nn.Sequential(nn.Conv2d(384, 10, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))

        def forward(s, x):
            return s.cls(s.f(x)).flatten(1)

    class SepConv(nn.Sequential):
        def __init__(s, cin, cout):
            super().__init__(nn.Conv2d(cin, cin, 3, padding=1, groups=cin, bias=False),
                             nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout))

    class XBlock(nn.Module):
        def __init__(s, cin, cout):
            super().__init__()
            s.body = nn.Sequential(nn.ReLU(), SepConv(cin, cout), nn.ReLU(), SepConv(cout, cout),
                                   nn.MaxPool2d(3, 2, padding=1))
            s.skip = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=2, bias=False),
                                   nn.BatchNorm2d(cout))

        def forward(s, x):
            return s.body(x) + s.skip(x)

    class Xception(nn.Module):
        def __init__(s):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, 32, 3, stride=2, padding=1, bias=False),
                                   nn.BatchNorm2d(32), nn.ReLU(),
                                   nn.Conv2d(32, 64, 3, padding=1, bias=False),
                                   nn.BatchNorm2d(64), nn.ReLU())
            s.blocks = nn.Sequential(XBlock(64, 128), XBlock(128, 256))
            s.mid = nn.Sequential(*[nn.Sequential(nn.ReLU(), SepConv(256, 256))
                                    for _ in range(3)])
            s.fc = nn.Linear(256, 10)

        def forward(s, x):
            x = s.blocks(s.stem(x))
            x = x + s.mid(x)
            return s.fc(F.relu(x).mean((2, 3)))

    class MRFBlock(nn.Module):
        def __init__(s, c, k, dilations=(1, 3, 5)):
            super().__init__()
            s.c1 = nn.ModuleList([nn.Conv1d(c, c, k, dilation=d, padding=d * (k - 1) // 2)
                                  for d in dilations])
            s.c2 = nn.ModuleList([nn.Conv1d(c, c, k, padding=(k - 1) // 2) for _ in dilations])

        def forward(s, x):
            for a, b in zip(s.c1, s.c2):
                x = x + b(F.leaky_relu(a(F.leaky_relu(x, 0.1)), 0.1))
            return x

    class HiFiGAN(nn.Module):
        def __init__(s, mels=40, c=64):
            super().__init__()
            s.pre = nn.Conv1d(mels, c, 7, padding=3)
            s.ups = nn.ModuleList([nn.ConvTranspose1d(c, c // 2, 8, 4, padding=2),
                                   nn.ConvTranspose1d(c // 2, c // 4, 8, 4, padding=2)])
            s.mrf = nn.ModuleList([nn.ModuleList([MRFBlock(c // 2, 3), MRFBlock(c // 2, 7)]),
                                   nn.ModuleList([MRFBlock(c // 4, 3), MRFBlock(c // 4, 7)])])
            s.post = nn.Conv1d(c // 4, 1, 7, padding=3)

        def forward(s, x):
            x = s.pre(x)
            for up, blocks in zip(s.ups, s.mrf):
                x = up(F.leaky_relu(x, 0.1))
                x = sum(b(x) for b in blocks) / len(blocks)
            return torch.tanh(s.post(F.leaky_relu(x)))

    class RepLKBlock(nn.Module):
        def __init__(s, c, k=13):
            super().__init__()
            s.pre = nn.Sequential(nn.BatchNorm2d(c), nn.Conv2d(c, c, 1), nn.ReLU())
            s.large = nn.Sequential(nn.Conv2d(c, c, k, padding=k // 2, groups=c, bias=False),
                                    nn.BatchNorm2d(c))
            s.small = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False),
                                    nn.BatchNorm2d(c))
            s.post = nn.Conv2d(c, c, 1)
            s.ffn = nn.Sequential(nn.BatchNorm2d(c), nn.Conv2d(c, 4 * c, 1), nn.GELU(),
                                  nn.Conv2d(4 * c, c, 1))

        def forward(s, x):
            y = s.pre(x)
            x = x + s.post(F.relu(s.large(y) + s.small(y)))
            return x + s.ffn(x)

    class RepLKNet(nn.Module):
        def __init__(s, c=48):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, c, 3, stride=2, padding=1), nn.BatchNorm2d(c),
                                   nn.ReLU())
            s.blocks = nn.Sequential(RepLKBlock(c), RepLKBlock(c))
            s.head = nn.Linear(c, 10)

        def forward(s, x):
            return s.head(s.blocks(s.stem(x)).mean((2, 3)))

    class GRN(nn.Module):
        def __init__(s, d_in, d, d_out):
            super().__init__()
            s.l1, s.l2 = nn.Linear(d_in, d), nn.Linear(d, d)
            s.gate = nn.Linear(d, 2 * d_out)
            s.skip = nn.Linear(d_in, d_out) if d_in != d_out else nn.Identity()
            s.ln = nn.LayerNorm(d_out)

        def forward(s, x):
            h = s.l2(F.elu(s.l1(x)))
            return s.ln(s.skip(x) + F.glu(s.gate(h), -1))

    class TFT(nn.Module):
        def __init__(s, nvars=8, d=32, heads=4):
            super().__init__()
            s.nvars = nvars
            s.embed = nn.ModuleList([nn.Linear(1, d) for _ in range(nvars)])
            s.var_grn = nn.ModuleList([GRN(d, d, d) for _ in range(nvars)])
            s.select = GRN(nvars * d, d, nvars)
            s.attn = nn.MultiheadAttention(d, heads, batch_first=True)
            s.post = GRN(d, d, d)
            s.out = nn.Linear(d, 3)

        def forward(s, x):                                   # [B, T, nvars]
            e = [emb(x[..., i:i + 1]) for i, emb in enumerate(s.embed)]
            w = s.select(torch.cat(e, -1)).softmax(-1)       # [B, T, nvars]
            v = torch.stack([g(ei) for g, ei in zip(s.var_grn, e)], -1)   # [B, T, d, nvars]
            h = (v * w.unsqueeze(-2)).sum(-1)
            t = x.shape[1]
            mask = torch.triu(torch.full((t, t), float("-inf")), 1)
            a, _ = s.attn(h, h, h, attn_mask=mask, need_weights=False)
            return s.out(s.post(h + a))

    class Affine(nn.Module):
        def __init__(s, d):
            super().__init__()
            g = torch.Generator().manual_seed(d)
            s.alpha = nn.Parameter(1 + 0.1 * torch.randn(d, generator=g))
            s.beta = nn.Parameter(0.1 * torch.randn(d, generator=g))

        def forward(s, x):
            return s.alpha * x + s.beta

    class ResMLPLayer(nn.Module):
        def __init__(s, n, d):
            super().__init__()
            s.a1, s.a2 = Affine(d), Affine(d)
            s.tok = nn.Linear(n, n)
            s.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            s.g1 = nn.Parameter(torch.full((d,), 0.1))
            s.g2 = nn.Parameter(torch.full((d,), 0.1))

        def forward(s, x):                                   # [B, N, D]
            x = x + s.g1 * s.tok(s.a1(x).transpose(1, 2)).transpose(1, 2)
            return x + s.g2 * s.mlp(s.a2(x))

    class ResMLP(nn.Module):
        def __init__(s, d=96, depth=4):
            super().__init__()
            s.patch = nn.Conv2d(3, d, 4, stride=4)
            s.layers = nn.Sequential(*[ResMLPLayer(64, d) for _ in range(depth)])
            s.norm, s.head = Affine(d), nn.Linear(d, 10)

        def forward(s, x):
            x = s.patch(x).flatten(2).transpose(1, 2)
            return s.head(s.norm(s.layers(x)).mean(1))

    class MAB(nn.Module):
        def __init__(s, d, heads=4):
            super().__init__()
            s.attn = nn.MultiheadAttention(d, heads, batch_first=True)
            s.ln1, s.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            s.ff = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d))

        def forward(s, q, k):
            h = s.ln1(q + s.attn(q, k, k, need_weights=False)[0])
            return s.ln2(h + s.ff(h))

    class SetTransformer(nn.Module):
        def __init__(s, din=3, d=64, inducing=16, seeds=2):
            super().__init__()
            g = torch.Generator().manual_seed(5)
            s.inp = nn.Linear(din, d)
            s.ind = nn.Parameter(torch.randn(1, inducing, d, generator=g))
            s.seed = nn.Parameter(torch.randn(1, seeds, d, generator=g))
            s.isab = nn.ModuleList([nn.ModuleList([MAB(d), MAB(d)]) for _ in range(2)])
            s.pma, s.sab = MAB(d), MAB(d)
            s.out = nn.Linear(d, 5)

        def forward(s, x):                                   # [B, N, 3]
            b = x.shape[0]
            x = s.inp(x)
            for m1, m2 in s.isab:
                h = m1(s.ind.expand(b, -1, -1), x)
                x = m2(x, h)
            y = s.pma(s.seed.expand(b, -1, -1), x)
            return s.out(s.sab(y, y))

    class WSConv(nn.Conv2d):
        def __init__(s, cin, cout, k, stride=1, padding=0, groups=1):
            super().__init__(cin, cout, k, stride, padding, groups=groups)
            s.gain = nn.Parameter(torch.ones(cout, 1, 1, 1))

        def forward(s, x):
            w = s.weight
            fan_in = w[0].numel()
            mean = w.mean((1, 2, 3), keepdim=True)
            var = w.var((1, 2, 3), keepdim=True, unbiased=False)
            w = (w - mean) * torch.rsqrt(var * fan_in + 1e-4) * s.gain
            return F.conv2d(x, w, s.bias, s.stride, s.padding, 1, s.groups)

    class NFBlock(nn.Module):
        def __init__(s, c, alpha=0.2, beta=1.0):
            super().__init__()
            s.alpha, s.beta = alpha, beta
            s.c1, s.c2 = WSConv(c, c // 2, 1), WSConv(c // 2, c // 2, 3, padding=1, groups=2)
            s.c3 = WSConv(c // 2, c, 1)
            s.se1, s.se2 = nn.Conv2d(c, c // 4, 1), nn.Conv2d(c // 4, c, 1)
            s.skip_gain = nn.Parameter(torch.tensor(0.5))

        def forward(s, x):
            act = 1.7015043497085571          # the scaled GELU's gamma
            h = F.gelu(x) * act / s.beta
            h = F.gelu(s.c1(h)) * act
            h = F.gelu(s.c2(h)) * act
            h = s.c3(h)
            se = torch.sigmoid(s.se2(F.relu(s.se1(h.mean((2, 3), keepdim=True)))))
            return x + h * 2 * se * s.skip_gain * s.alpha

    class NFNet(nn.Module):
        def __init__(s, c=64):
            super().__init__()
            s.stem = WSConv(3, c, 3, stride=2, padding=1)
            s.blocks = nn.Sequential(NFBlock(c), NFBlock(c))
            s.head = nn.utils.parametrizations.weight_norm(nn.Linear(c, 10))

        def forward(s, x):
            return s.head(F.gelu(s.blocks(s.stem(x))).mean((2, 3)))

    class FusedMB(nn.Module):
        def __init__(s, cin, cout, expand, stride):
            super().__init__()
            s.res = stride == 1 and cin == cout
            s.f = nn.Sequential(nn.Conv2d(cin, cin * expand, 3, stride, 1, bias=False),
                                nn.BatchNorm2d(cin * expand), nn.SiLU(),
                                nn.Conv2d(cin * expand, cout, 1, bias=False), nn.BatchNorm2d(cout))

        def forward(s, x):
            return x + s.f(x) if s.res else s.f(x)

    class MB(nn.Module):
        def __init__(s, cin, cout, expand, stride):
            super().__init__()
            h = cin * expand
            s.res = stride == 1 and cin == cout
            s.f = nn.Sequential(nn.Conv2d(cin, h, 1, bias=False), nn.BatchNorm2d(h), nn.SiLU(),
                                nn.Conv2d(h, h, 3, stride, 1, groups=h, bias=False),
                                nn.BatchNorm2d(h), nn.SiLU())
            s.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(h, cin // 4, 1), nn.SiLU(),
                                 nn.Conv2d(cin // 4, h, 1), nn.Sigmoid())
            s.proj = nn.Sequential(nn.Conv2d(h, cout, 1, bias=False), nn.BatchNorm2d(cout))

        def forward(s, x):
            h = s.f(x)
            y = s.proj(h * s.se(h))
            return x + y if s.res else y

    class EffNetV2(nn.Module):
        def __init__(s):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, 24, 3, 2, 1, bias=False), nn.BatchNorm2d(24),
                                   nn.SiLU())
            s.blocks = nn.Sequential(FusedMB(24, 24, 1, 1), FusedMB(24, 48, 4, 2),
                                     FusedMB(48, 48, 4, 1), MB(48, 64, 4, 2), MB(64, 64, 4, 1))
            s.head = nn.Sequential(nn.Conv2d(64, 256, 1, bias=False), nn.BatchNorm2d(256),
                                   nn.SiLU())
            s.fc = nn.Linear(256, 10)

        def forward(s, x):
            return s.fc(s.head(s.blocks(s.stem(x))).mean((2, 3)))

    class RMSNorm(nn.Module):
        def __init__(s, d):
            super().__init__()
            s.w = nn.Parameter(torch.ones(d))

        def forward(s, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * s.w

    class AlibiBlock(nn.Module):
        def __init__(s, d, heads):
            super().__init__()
            s.h = heads
            s.n1, s.n2 = RMSNorm(d), RMSNorm(d)
            s.qkv, s.o = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
            s.w1, s.w3 = nn.Linear(d, 2 * d, bias=False), nn.Linear(d, 2 * d, bias=False)
            s.w2 = nn.Linear(2 * d, d, bias=False)
            s.register_buffer("slopes", torch.tensor([2.0 ** (-8 * (i + 1) / heads)
                                                      for i in range(heads)]))

        def forward(s, x):
            b, t, d = x.shape
            q, k, v = s.qkv(s.n1(x)).view(b, t, 3, s.h, d // s.h).permute(2, 0, 3, 1, 4)
            pos = torch.arange(t)
            rel = (pos[None, :] - pos[:, None]).float()          # j - i
            bias = s.slopes[:, None, None] * rel                 # [H, T, T]
            bias = bias.masked_fill(rel > 0, float("-inf"))
            att = (q @ k.transpose(-1, -2)) / math.sqrt(d // s.h) + bias
            y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
            x = x + s.o(y)
            h = s.n2(x)
            return x + s.w2(F.silu(s.w1(h)) * s.w3(h))

    class AlibiGPT(nn.Module):
        def __init__(s, vocab=500, d=64, heads=4, layers=2):
            super().__init__()
            s.emb = nn.Embedding(vocab, d)
            s.blocks = nn.Sequential(*[AlibiBlock(d, heads) for _ in range(layers)])
            s.norm = RMSNorm(d)

        def forward(s, ids):
            h = s.norm(s.blocks(s.emb(ids)))
            return h @ s.emb.weight.t()

    class Involution(nn.Module):
        def __init__(s, c, k=3, groups=4, r=4):
            super().__init__()
            s.k, s.g = k, groups
            s.reduce = nn.Sequential(nn.Conv2d(c, c // r, 1), nn.BatchNorm2d(c // r), nn.ReLU())
            s.span = nn.Conv2d(c // r, k * k * groups, 1)

        def forward(s, x):
            b, c, h, w = x.shape
            kern = s.span(s.reduce(x)).view(b, s.g, 1, s.k * s.k, h, w)
            cols = F.unfold(x, s.k, padding=s.k // 2).view(b, s.g, c // s.g, s.k * s.k, h, w)
            return (kern * cols).sum(3).view(b, c, h, w)

    class RedNet(nn.Module):
        def __init__(s, c=32):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU())
            s.b1 = nn.Sequential(Involution(c), nn.BatchNorm2d(c), nn.ReLU())
            s.down = nn.Sequential(nn.Conv2d(c, 2 * c, 3, 2, 1), nn.BatchNorm2d(2 * c), nn.ReLU())
            s.b2 = nn.Sequential(Involution(2 * c), nn.BatchNorm2d(2 * c), nn.ReLU())
            s.fc = nn.Linear(2 * c, 10)

        def forward(s, x):
            x = s.stem(x)
            x = x + s.b1(x)
            x = s.down(x)
            x = x + s.b2(x)
            return s.fc(x.mean((2, 3)))

    return {c.__name__: c for c in (DiffusionUNet, DETRHead, SqueezeNet, Xception, HiFiGAN,
                                     RepLKNet, TFT, ResMLP, SetTransformer, NFNet, EffNetV2,
                                     AlibiGPT, RedNet)}


_floats = zoo_more._floats
_ids = zoo_more._ids


def _image_and_time(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"x": rng.standard_normal((batch, 3, 32, 32)).astype(np.float32),
            "t": rng.uniform(0, 1000, batch).astype(np.float32)}


def _model(name: str, cls_name: str, make_inputs) -> ZooModel:
    return zoo_more._model(name, cls_name, make_inputs, _classes)


PROBE10: dict[str, ZooModel] = {
    m.name: m
    for m in [
        _model("diffusion_unet", "DiffusionUNet", _image_and_time),
        _model("detr_head", "DETRHead", _floats(3, 32, 32)),
        _model("squeezenet", "SqueezeNet", _floats(3, 64, 64)),
        _model("xception", "Xception", _floats(3, 32, 32)),
        _model("hifigan", "HiFiGAN", _floats(40, 32)),
        _model("replknet", "RepLKNet", _floats(3, 32, 32)),
        _model("tft", "TFT", _floats(24, 8)),
        _model("resmlp", "ResMLP", _floats(3, 32, 32)),
        _model("set_transformer", "SetTransformer", _floats(64, 3)),
        _model("nfnet", "NFNet", _floats(3, 32, 32)),
        _model("effnetv2", "EffNetV2", _floats(3, 32, 32)),
        _model("alibi_gpt", "AlibiGPT", _ids(32, 500)),
        _model("rednet", "RedNet", _floats(3, 32, 32)),
    ]
}
