"""A probe set of torch.nn models (probe8): kinds the earlier sets did not cover: a spatial
transformer (affine_grid + grid_sample), SegNet (max pool indices + max unpool), a NeRF MLP with
positional encoding and a skip concat, a wav2vec2-style feature encoder with a grouped positional
conv, MobileViT blocks, an attention U-Net, a CycleGAN ResNet generator (reflection pads,
instance norm), SRCNN, a stacked hourglass, MaxViT-style block and grid attention, a dense-graph
GIN, a TabNet-style attentive feature selector, a ConvLSTM and an nn.Bilinear head. Seeded
random weights. `bench/zoo.py --set probe8`; checked by tests/test_zoo_more.py.
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

    class STN(nn.Module):
        def __init__(s):
            super().__init__()
            s.loc = nn.Sequential(nn.Conv2d(1, 8, 7), nn.MaxPool2d(2), nn.ReLU(),
                                  nn.Conv2d(8, 10, 5), nn.MaxPool2d(2), nn.ReLU())
            s.fc = nn.Sequential(nn.Linear(10 * 3 * 3, 32), nn.ReLU(), nn.Linear(32, 6))
            s.cls = nn.Sequential(nn.Conv2d(1, 16, 5), nn.MaxPool2d(2), nn.ReLU(),
                                  nn.Conv2d(16, 32, 5), nn.MaxPool2d(2), nn.ReLU(),
                                  nn.Flatten(), nn.Linear(32 * 4 * 4, 10))

        def forward(s, x):
            theta = s.fc(s.loc(x).flatten(1)).view(-1, 2, 3)
            theta = theta * 0.1 + torch.tensor([[1.0, 0, 0], [0, 1.0, 0]])
            grid = F.affine_grid(theta, list(x.shape), align_corners=False)
            return F.log_softmax(s.cls(F.grid_sample(x, grid, align_corners=False)), -1)

    class SegNet(nn.Module):
        def __init__(s):
            super().__init__()

            def cbr(i, o):
                return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())
            s.e1, s.e2, s.e3 = cbr(3, 16), cbr(16, 32), cbr(32, 64)
            s.d3, s.d2, s.d1 = cbr(64, 32), cbr(32, 16), nn.Conv2d(16, 5, 3, padding=1)

        def forward(s, x):
            x, i1 = F.max_pool2d(s.e1(x), 2, return_indices=True)
            x, i2 = F.max_pool2d(s.e2(x), 2, return_indices=True)
            x, i3 = F.max_pool2d(s.e3(x), 2, return_indices=True)
            x = s.d3(F.max_unpool2d(x, i3, 2))
            x = s.d2(F.max_unpool2d(x, i2, 2))
            return s.d1(F.max_unpool2d(x, i1, 2))

    class NeRF(nn.Module):
        def __init__(s, freqs=6, w=128):
            super().__init__()
            s.register_buffer("f", 2.0 ** torch.arange(freqs, dtype=torch.float32))
            d = 3 + 6 * freqs
            s.a = nn.ModuleList([nn.Linear(d, w)] + [nn.Linear(w, w) for _ in range(3)])
            s.b = nn.ModuleList([nn.Linear(w + d, w)] + [nn.Linear(w, w) for _ in range(2)])
            s.sigma, s.rgb = nn.Linear(w, 1), nn.Linear(w, 3)

        def forward(s, x):
            p = (x[..., None] * s.f).flatten(-2)
            e = torch.cat([x, torch.sin(p), torch.cos(p)], -1)
            h = e
            for lin in s.a:
                h = F.relu(lin(h))
            h = torch.cat([h, e], -1)
            for lin in s.b:
                h = F.relu(lin(h))
            return F.softplus(s.sigma(h)), torch.sigmoid(s.rgb(h))

    class Wav2Vec(nn.Module):
        def __init__(s, c=64, d=96):
            super().__init__()
            s.c0 = nn.Conv1d(1, c, 10, 5, bias=False)
            s.gn = nn.GroupNorm(c, c)
            s.convs = nn.ModuleList([nn.Conv1d(c, c, 3, 2, bias=False) for _ in range(4)])
            s.ln, s.proj = nn.LayerNorm(c), nn.Linear(c, d)
            s.pos = nn.Conv1d(d, d, 16, padding=8, groups=8)
            layer = nn.TransformerEncoderLayer(d, 4, 2 * d, 0.0, activation="gelu",
                                               batch_first=True)
            s.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

        def forward(s, x):
            h = F.gelu(s.gn(s.c0(x)))
            for conv in s.convs:
                h = F.gelu(conv(h))
            h = s.proj(s.ln(h.transpose(1, 2)))
            p = s.pos(h.transpose(1, 2))[..., :-1]
            return s.enc(h + F.gelu(p).transpose(1, 2))

    class MViTBlock(nn.Module):
        def __init__(s, c, d, patch=2):
            super().__init__()
            s.patch = patch
            s.local = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.SiLU(), nn.Conv2d(c, d, 1))
            layer = nn.TransformerEncoderLayer(d, 4, 2 * d, 0.0, activation="gelu",
                                               batch_first=True, norm_first=True)
            s.tf = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
            s.back = nn.Conv2d(d, c, 1)
            s.fuse = nn.Conv2d(2 * c, c, 3, padding=1)

        def forward(s, x):
            b, _, h, w = x.shape
            y = s.local(x)
            d, p = y.shape[1], s.patch
            # unfold into p*p sequences of (h/p)*(w/p) patches, as MobileViT does
            t = y.reshape(b, d, h // p, p, w // p, p).permute(0, 3, 5, 2, 4, 1)
            t = s.tf(t.reshape(b * p * p, (h // p) * (w // p), d))
            t = t.reshape(b, p, p, h // p, w // p, d).permute(0, 5, 3, 1, 4, 2)
            y = s.back(t.reshape(b, d, h, w))
            return s.fuse(torch.cat([x, y], 1))

    class MobileViT(nn.Module):
        def __init__(s):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.SiLU())
            s.b1 = MViTBlock(16, 32)
            s.down = nn.Sequential(nn.Conv2d(16, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.SiLU())
            s.b2 = MViTBlock(32, 48)
            s.head = nn.Linear(32, 10)

        def forward(s, x):
            x = s.b2(s.down(s.b1(s.stem(x))))
            return s.head(x.mean((2, 3)))

    class Gate(nn.Module):
        def __init__(s, g, x, m):
            super().__init__()
            s.wg, s.wx = nn.Conv2d(g, m, 1), nn.Conv2d(x, m, 1, bias=False)
            s.psi = nn.Sequential(nn.Conv2d(m, 1, 1), nn.Sigmoid())

        def forward(s, g, x):
            return x * s.psi(F.relu(s.wg(g) + s.wx(x)))

    class AttnUNet(nn.Module):
        def __init__(s):
            super().__init__()

            def block(i, o):
                return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(),
                                     nn.Conv2d(o, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())
            s.e1, s.e2, s.e3 = block(3, 16), block(16, 32), block(32, 64)
            s.g2, s.g1 = Gate(64, 32, 16), Gate(32, 16, 8)
            s.d2, s.d1 = block(96, 32), block(48, 16)
            s.out = nn.Conv2d(16, 2, 1)

        def forward(s, x):
            x1 = s.e1(x)
            x2 = s.e2(F.max_pool2d(x1, 2))
            x3 = s.e3(F.max_pool2d(x2, 2))
            u = F.interpolate(x3, scale_factor=2.0, mode="bilinear", align_corners=False)
            y = s.d2(torch.cat([u, s.g2(u, x2)], 1))
            u = F.interpolate(y, scale_factor=2.0, mode="bilinear", align_corners=False)
            return s.out(s.d1(torch.cat([u, s.g1(u, x1)], 1)))

    class ResBlockR(nn.Module):
        def __init__(s, c):
            super().__init__()
            s.body = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(c, c, 3),
                                   nn.InstanceNorm2d(c), nn.ReLU(),
                                   nn.ReflectionPad2d(1), nn.Conv2d(c, c, 3), nn.InstanceNorm2d(c))

        def forward(s, x):
            return x + s.body(x)

    class CycleGen(nn.Module):
        def __init__(s, c=16):
            super().__init__()
            s.net = nn.Sequential(
                nn.ReflectionPad2d(3), nn.Conv2d(3, c, 7), nn.InstanceNorm2d(c), nn.ReLU(),
                nn.Conv2d(c, 2 * c, 3, 2, 1), nn.InstanceNorm2d(2 * c), nn.ReLU(),
                nn.Conv2d(2 * c, 4 * c, 3, 2, 1), nn.InstanceNorm2d(4 * c), nn.ReLU(),
                *[ResBlockR(4 * c) for _ in range(3)],
                nn.ConvTranspose2d(4 * c, 2 * c, 3, 2, 1, output_padding=1),
                nn.InstanceNorm2d(2 * c), nn.ReLU(),
                nn.ConvTranspose2d(2 * c, c, 3, 2, 1, output_padding=1),
                nn.InstanceNorm2d(c), nn.ReLU(),
                nn.ReflectionPad2d(3), nn.Conv2d(c, 3, 7), nn.Tanh())

        def forward(s, x):
            return s.net(x)

    class SRCNN(nn.Module):
        def __init__(s):
            super().__init__()
            s.net = nn.Sequential(nn.Conv2d(1, 32, 9, padding=4), nn.ReLU(),
                                  nn.Conv2d(32, 16, 1), nn.ReLU(), nn.Conv2d(16, 1, 5, padding=2))

        def forward(s, x):
            up = F.interpolate(x, scale_factor=2.0, mode="bicubic", align_corners=False)
            return s.net(up)

    class Hourglass(nn.Module):
        def __init__(s, depth, c):
            super().__init__()
            s.up1 = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU())
            s.low1 = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU())
            s.low2 = (Hourglass(depth - 1, c) if depth > 1 else
                      nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.ReLU()))
            s.low3 = nn.Conv2d(c, c, 3, padding=1)

        def forward(s, x):
            low = s.low3(s.low2(s.low1(F.max_pool2d(x, 2))))
            return s.up1(x) + F.interpolate(low, scale_factor=2.0, mode="nearest")

    class StackedHourglass(nn.Module):
        def __init__(s):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU())
            s.hg1, s.hg2 = Hourglass(3, 32), Hourglass(3, 32)
            s.h1, s.h2 = nn.Conv2d(32, 8, 1), nn.Conv2d(32, 8, 1)
            s.back = nn.Conv2d(8, 32, 1)

        def forward(s, x):
            x = s.stem(x)
            y = s.hg1(x)
            heat1 = s.h1(y)
            y = s.hg2(x + y + s.back(heat1))
            return heat1, s.h2(y)

    class PartitionAttn(nn.Module):
        def __init__(s, d, win, grid):
            super().__init__()
            s.win, s.grid = win, grid
            s.norm = nn.LayerNorm(d)
            s.attn = nn.MultiheadAttention(d, 4, batch_first=True)
            s.ff = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.GELU(),
                                 nn.Linear(2 * d, d))

        def forward(s, x):
            b, h, w, d = x.shape
            p = s.win
            if s.grid:   # grid attention: tokens p apart attend to each other
                t = x.reshape(b, p, h // p, p, w // p, d).permute(0, 2, 4, 1, 3, 5)
            else:        # block attention: tokens of one p x p window
                t = x.reshape(b, h // p, p, w // p, p, d).permute(0, 1, 3, 2, 4, 5)
            t = t.reshape(-1, p * p, d)
            n = s.norm(t)
            t = t + s.attn(n, n, n, need_weights=False)[0]
            t = t + s.ff(t)
            if s.grid:
                t = t.reshape(b, h // p, w // p, p, p, d).permute(0, 3, 1, 4, 2, 5)
            else:
                t = t.reshape(b, h // p, w // p, p, p, d).permute(0, 1, 3, 2, 4, 5)
            return t.reshape(b, h, w, d)

    class MaxViT(nn.Module):
        def __init__(s, d=48):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, d, 3, 2, 1), nn.BatchNorm2d(d), nn.GELU())
            s.mb = nn.Sequential(nn.Conv2d(d, 2 * d, 1), nn.BatchNorm2d(2 * d), nn.GELU(),
                                 nn.Conv2d(2 * d, 2 * d, 3, padding=1, groups=2 * d),
                                 nn.BatchNorm2d(2 * d), nn.GELU(), nn.Conv2d(2 * d, d, 1))
            s.block, s.grid = PartitionAttn(d, 4, False), PartitionAttn(d, 4, True)
            s.head = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 10))

        def forward(s, x):
            x = s.stem(x)
            x = x + s.mb(x)
            x = s.grid(s.block(x.permute(0, 2, 3, 1)))
            return s.head(x.mean((1, 2)))

    class GIN(nn.Module):
        def __init__(s, f=16, h=64, layers=3):
            super().__init__()
            s.eps = nn.Parameter(torch.zeros(layers))
            s.mlps = nn.ModuleList([
                nn.Sequential(nn.Linear(f if i == 0 else h, h), nn.ReLU(), nn.Linear(h, h),
                              nn.ReLU()) for i in range(layers)])
            s.out = nn.Linear(h * layers, 4)

        def forward(s, x, adj):
            reads = []
            for i, mlp in enumerate(s.mlps):
                x = mlp((1 + s.eps[i]) * x + adj @ x)
                reads.append(x.sum(1))
            return s.out(torch.cat(reads, -1))

    class GLUBlock(nn.Module):
        def __init__(s, i, o):
            super().__init__()
            s.fc, s.bn = nn.Linear(i, 2 * o, bias=False), nn.BatchNorm1d(2 * o)

        def forward(s, x):
            return F.glu(s.bn(s.fc(x)), -1)

    class TabNet(nn.Module):
        def __init__(s, f=32, n=16, steps=3, gamma=1.3):
            super().__init__()
            s.n, s.gamma = n, gamma
            s.bn = nn.BatchNorm1d(f)
            s.shared = GLUBlock(f, 2 * n)
            s.steps = nn.ModuleList([GLUBlock(2 * n, 2 * n) for _ in range(steps)])
            s.att = nn.ModuleList([nn.Sequential(nn.Linear(n, f, bias=False), nn.BatchNorm1d(f))
                                   for _ in range(steps)])
            s.out = nn.Linear(n, 3)

        def forward(s, x):
            x = s.bn(x)
            prior = torch.ones_like(x)
            a = s.shared(x)[:, s.n:]
            total = 0
            for step, att in zip(s.steps, s.att):
                mask = torch.softmax(att(a) * prior, -1)
                prior = prior * (s.gamma - mask)
                h = step(s.shared(x * mask))
                total = total + F.relu(h[:, :s.n])
                a = h[:, s.n:]
            return s.out(total)

    class ConvLSTM(nn.Module):
        def __init__(s, c=8, h=16):
            super().__init__()
            s.h = h
            s.gates = nn.Conv2d(c + h, 4 * h, 3, padding=1)
            s.out = nn.Conv2d(h, 1, 1)

        def forward(s, x):
            b, t, _, hh, ww = x.shape
            h = x.new_zeros(b, s.h, hh, ww)
            c = torch.zeros_like(h)
            for k in range(t):
                i, f, g, o = s.gates(torch.cat([x[:, k], h], 1)).chunk(4, 1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(c)
            return s.out(h)

    class BilinearHead(nn.Module):
        def __init__(s):
            super().__init__()
            s.a = nn.Sequential(nn.Linear(32, 64), nn.ReLU())
            s.b = nn.Sequential(nn.Linear(32, 48), nn.ReLU())
            s.bil = nn.Bilinear(64, 48, 32)
            s.out = nn.Linear(32, 5)

        def forward(s, x):
            return s.out(torch.tanh(s.bil(s.a(x[:, 0]), s.b(x[:, 1]))))

    return {c.__name__: c for c in (STN, SegNet, NeRF, Wav2Vec, MobileViT, AttnUNet, CycleGen,
                                     SRCNN, StackedHourglass, MaxViT, GIN, TabNet, ConvLSTM,
                                     BilinearHead)}


_floats = zoo_more._floats


def _graph_inputs(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = 24
    adj = (rng.random((batch, n, n)) < 0.2).astype(np.float32)
    return {"x": rng.standard_normal((batch, n, 16)).astype(np.float32),
            "adj": np.maximum(adj, adj.transpose(0, 2, 1))}


def _model(name: str, cls_name: str, make_inputs) -> ZooModel:
    return zoo_more._model(name, cls_name, make_inputs, _classes)


PROBE8: dict[str, ZooModel] = {
    m.name: m
    for m in [
        _model("stn", "STN", _floats(1, 28, 28)),
        _model("segnet", "SegNet", _floats(3, 32, 32)),
        _model("nerf", "NeRF", _floats(64, 3)),
        _model("wav2vec_fe", "Wav2Vec", _floats(1, 4000)),
        _model("mobilevit", "MobileViT", _floats(3, 32, 32)),
        _model("attn_unet", "AttnUNet", _floats(3, 32, 32)),
        _model("cyclegan_gen", "CycleGen", _floats(3, 32, 32)),
        _model("srcnn", "SRCNN", _floats(1, 24, 24)),
        _model("hourglass", "StackedHourglass", _floats(3, 32, 32)),
        _model("maxvit", "MaxViT", _floats(3, 32, 32)),
        _model("gin", "GIN", _graph_inputs),
        _model("tabnet", "TabNet", _floats(32)),
        _model("convlstm", "ConvLSTM", _floats(4, 8, 16, 16)),
        _model("bilinear_head", "BilinearHead", _floats(2, 32)),
    ]
}
