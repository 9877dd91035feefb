"""A probe set of torch.nn models (probe11): kinds the earlier sets did not cover: a 2-layer GRU
language model with a tied output layer, PSPNet's
pyramid pooling (adaptive average pools 1, 2, 3, 6, bilinear upsampling, concat), PVT's
spatial-reduction attention, CvT's convolutional token projections, a Whisper-style audio
encoder (strided conv1d stem, sinusoidal positions, pre-norm blocks), a RetinaNet head (shared
4-conv towers over three FPN levels), SE-ResNet-50 bottlenecks, RepVGG in its training form
(parallel 3x3, 1x1 and identity BN branches), xDeepFM's compressed interaction network (outer
products by einsum), an SRU recurrence written as a Python loop, Longformer-style sliding-window
attention (windows gathered by index), Swin-v2 cosine attention with a log-spaced continuous
position bias MLP, and a PointNet++ set abstraction (fixed centroids, kNN by topk, gather by
index, max over neighbours). Seeded random weights. `bench/zoo.py --set probe11`.

An LSTM with projections (proj_size) was screened too and left out: neither torch exporter
writes a valid model of it (torch 2.13: the TorchScript exporter refuses it, the dynamo one
writes a plain LSTM of the projected size with the unprojected cell state, which onnxruntime
rejects and dlvm's importer names). It runs through `import_torch` and `torch.compile`.
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

    # -- recurrent ------------------------------------------------------------------------

    class GRULM(nn.Module):
        def __init__(s, vocab=1000, d=128):
            super().__init__()
            s.emb = nn.Embedding(vocab, d)
            s.rnn = nn.GRU(d, d, num_layers=2, batch_first=True)
            s.bias = nn.Parameter(torch.zeros(vocab))

        def forward(s, ids):                                 # [B, T]
            h, _ = s.rnn(s.emb(ids))
            return (h @ s.emb.weight.t() + s.bias).log_softmax(-1)

    class SRU(nn.Module):
        def __init__(s, d=64, layers=2):
            super().__init__()
            s.w = nn.ModuleList([nn.Linear(d, 3 * d, bias=False) for _ in range(layers)])
            g = torch.Generator().manual_seed(7)
            s.v = nn.ParameterList([nn.Parameter(0.1 * torch.randn(2, d, generator=g))
                                    for _ in range(layers)])
            s.b = nn.ParameterList([nn.Parameter(0.1 * torch.randn(2, d, generator=g))
                                    for _ in range(layers)])
            s.head = nn.Linear(d, 5)

        def forward(s, x):                                   # [B, T, d]
            for w, v, b in zip(s.w, s.v, s.b):
                u = w(x)
                ux, uf, ur = u.chunk(3, -1)
                c = torch.zeros_like(x[:, 0])
                hs = []
                for t in range(x.shape[1]):
                    f = torch.sigmoid(uf[:, t] + v[0] * c + b[0])
                    r = torch.sigmoid(ur[:, t] + v[1] * c + b[1])
                    c = f * c + (1 - f) * ux[:, t]
                    hs.append(r * torch.tanh(c) + (1 - r) * x[:, t])
                x = torch.stack(hs, 1)
            return s.head(x[:, -1])

    # -- segmentation / detection ------------------------------------------------------------

    def cbr(cin, cout, k=3, stride=1):
        return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU())

    class PSPNet(nn.Module):
        def __init__(s, c=64, classes=8, bins=(1, 2, 3, 6)):
            super().__init__()
            s.backbone = nn.Sequential(cbr(3, 32, 3, 2), cbr(32, 48, 3, 2), cbr(48, c, 3, 2),
                                       cbr(c, c))
            s.stages = nn.ModuleList([nn.Sequential(nn.AdaptiveAvgPool2d(b), cbr(c, c // 4, 1))
                                      for b in bins])
            s.fuse = cbr(2 * c, c)
            s.cls = nn.Conv2d(c, classes, 1)

        def forward(s, x):                                   # [B, 3, 96, 96]
            f = s.backbone(x)                                # [B, c, 12, 12]
            size = f.shape[-2:]
            pyr = [F.interpolate(st(f), size=size, mode="bilinear", align_corners=False)
                   for st in s.stages]
            y = s.cls(s.fuse(torch.cat([f] + pyr, 1)))
            return F.interpolate(y, scale_factor=8.0, mode="bilinear", align_corners=False)

    class RetinaHead(nn.Module):
        def __init__(s, c=48, anchors=9, classes=5):
            super().__init__()
            s.a, s.k = anchors, classes
            s.c1, s.c2 = cbr(3, 32, 3, 2), cbr(32, 48, 3, 2)               # 32, 16
            s.c3, s.c4, s.c5 = cbr(48, 64, 3, 2), cbr(64, 96, 3, 2), cbr(96, 128, 3, 2)
            s.lat = nn.ModuleList([nn.Conv2d(ci, c, 1) for ci in (64, 96, 128)])
            s.smooth = nn.ModuleList([nn.Conv2d(c, c, 3, padding=1) for _ in range(3)])
            s.cls_tower = nn.Sequential(*[m for _ in range(4)
                                          for m in (nn.Conv2d(c, c, 3, padding=1), nn.ReLU())])
            s.box_tower = nn.Sequential(*[m for _ in range(4)
                                          for m in (nn.Conv2d(c, c, 3, padding=1), nn.ReLU())])
            s.cls = nn.Conv2d(c, anchors * classes, 3, padding=1)
            s.box = nn.Conv2d(c, anchors * 4, 3, padding=1)

        def forward(s, x):                                   # [B, 3, 64, 64]
            c3 = s.c3(s.c2(s.c1(x)))                         # 8x8
            c4 = s.c4(c3)                                    # 4x4
            c5 = s.c5(c4)                                    # 2x2
            p5 = s.lat[2](c5)
            p4 = s.lat[1](c4) + F.interpolate(p5, scale_factor=2.0, mode="nearest")
            p3 = s.lat[0](c3) + F.interpolate(p4, scale_factor=2.0, mode="nearest")
            cls, box = [], []
            b = x.shape[0]
            for p, sm in zip((p3, p4, p5), s.smooth):
                p = sm(p)
                cls.append(s.cls(s.cls_tower(p)).permute(0, 2, 3, 1).reshape(b, -1, s.k))
                box.append(s.box(s.box_tower(p)).permute(0, 2, 3, 1).reshape(b, -1, 4))
            return torch.cat(cls, 1).sigmoid(), torch.cat(box, 1)

    # -- convolutional backbones ----------------------------------------------------------

    class SEBottleneck(nn.Module):
        def __init__(s, cin, mid, cout, stride=1, r=16):
            super().__init__()
            s.body = nn.Sequential(cbr(cin, mid, 1), cbr(mid, mid, 3, stride),
                                   nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
            s.fc1, s.fc2 = nn.Linear(cout, cout // r), nn.Linear(cout // r, cout)
            s.skip = (nn.Identity() if cin == cout and stride == 1 else
                      nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                    nn.BatchNorm2d(cout)))

        def forward(s, x):
            h = s.body(x)
            w = torch.sigmoid(s.fc2(F.relu(s.fc1(h.mean((2, 3))))))
            return F.relu(s.skip(x) + h * w[:, :, None, None])

    class SEResNet(nn.Module):
        def __init__(s):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, 32, 7, 2, 3, bias=False), nn.BatchNorm2d(32),
                                   nn.ReLU(), nn.MaxPool2d(3, 2, 1))
            s.blocks = nn.Sequential(SEBottleneck(32, 32, 128), SEBottleneck(128, 32, 128),
                                     SEBottleneck(128, 64, 256, 2), SEBottleneck(256, 64, 256))
            s.fc = nn.Linear(256, 10)

        def forward(s, x):                                   # [B, 3, 64, 64]
            return s.fc(s.blocks(s.stem(x)).mean((2, 3)))

    class RepVGGBlock(nn.Module):
        def __init__(s, cin, cout, stride=1):
            super().__init__()
            s.k3 = nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                                 nn.BatchNorm2d(cout))
            s.k1 = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                 nn.BatchNorm2d(cout))
            s.id = nn.BatchNorm2d(cin) if cin == cout and stride == 1 else None

        def forward(s, x):
            y = s.k3(x) + s.k1(x)
            if s.id is not None:
                y = y + s.id(x)
            return F.relu(y)

    class RepVGG(nn.Module):
        def __init__(s):
            super().__init__()
            cfg = [(3, 32, 2), (32, 32, 1), (32, 64, 2), (64, 64, 1), (64, 64, 1),
                   (64, 128, 2), (128, 128, 1)]
            s.blocks = nn.Sequential(*[RepVGGBlock(a, b, st) for a, b, st in cfg])
            s.fc = nn.Linear(128, 10)

        def forward(s, x):                                   # [B, 3, 64, 64]
            return s.fc(s.blocks(x).mean((2, 3)))

    # -- attention ------------------------------------------------------------------------

    class SRAttention(nn.Module):
        def __init__(s, d, heads, sr):
            super().__init__()
            s.h = heads
            s.q, s.kv, s.o = nn.Linear(d, d), nn.Linear(d, 2 * d), nn.Linear(d, d)
            s.sr = nn.Conv2d(d, d, sr, sr)
            s.ln = nn.LayerNorm(d)

        def forward(s, x, hh, ww):
            b, n, d = x.shape
            q = s.q(x).view(b, n, s.h, d // s.h).transpose(1, 2)
            r = s.sr(x.transpose(1, 2).reshape(b, d, hh, ww)).flatten(2).transpose(1, 2)
            k, v = s.kv(s.ln(r)).view(b, -1, 2, s.h, d // s.h).permute(2, 0, 3, 1, 4)
            a = (q @ k.transpose(-1, -2) / math.sqrt(d // s.h)).softmax(-1)
            return s.o((a @ v).transpose(1, 2).reshape(b, n, d))

    class PVTBlock(nn.Module):
        def __init__(s, d, heads, sr):
            super().__init__()
            s.n1, s.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            s.attn = SRAttention(d, heads, sr)
            s.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(s, x, hh, ww):
            x = x + s.attn(s.n1(x), hh, ww)
            return x + s.mlp(s.n2(x))

    class PVT(nn.Module):
        def __init__(s, d=64):
            super().__init__()
            s.patch = nn.Conv2d(3, d, 4, 4)
            s.ln = nn.LayerNorm(d)
            g = torch.Generator().manual_seed(11)
            s.pos = nn.Parameter(0.02 * torch.randn(1, 256, d, generator=g))
            s.b1, s.b2 = PVTBlock(d, 2, 4), PVTBlock(d, 2, 4)
            s.down = nn.Conv2d(d, 2 * d, 2, 2)
            s.b3 = PVTBlock(2 * d, 4, 2)
            s.norm, s.fc = nn.LayerNorm(2 * d), nn.Linear(2 * d, 10)

        def forward(s, x):                                   # [B, 3, 64, 64]
            b = x.shape[0]
            x = s.ln(s.patch(x).flatten(2).transpose(1, 2)) + s.pos     # 16x16 tokens
            x = s.b2(s.b1(x, 16, 16), 16, 16)
            x = s.down(x.transpose(1, 2).reshape(b, -1, 16, 16)).flatten(2).transpose(1, 2)
            x = s.b3(x, 8, 8)                                 # 8x8 tokens
            return s.fc(s.norm(x).mean(1))

    class ConvProjAttention(nn.Module):
        def __init__(s, d, heads):
            super().__init__()
            s.h = heads

            def proj(stride):
                return nn.Sequential(nn.Conv2d(d, d, 3, stride, 1, groups=d, bias=False),
                                     nn.BatchNorm2d(d))
            s.pq, s.pk, s.pv = proj(1), proj(2), proj(2)
            s.q, s.k, s.v, s.o = (nn.Linear(d, d) for _ in range(4))

        def forward(s, x, hh, ww):
            b, n, d = x.shape
            img = x.transpose(1, 2).reshape(b, d, hh, ww)

            def heads(t, lin):
                t = lin(t.flatten(2).transpose(1, 2))
                return t.view(b, -1, s.h, d // s.h).transpose(1, 2)
            q, k, v = heads(s.pq(img), s.q), heads(s.pk(img), s.k), heads(s.pv(img), s.v)
            a = (q @ k.transpose(-1, -2) * (d // s.h) ** -0.5).softmax(-1)
            return s.o((a @ v).transpose(1, 2).reshape(b, n, d))

    class CvTBlock(nn.Module):
        def __init__(s, d, heads):
            super().__init__()
            s.n1, s.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            s.attn = ConvProjAttention(d, heads)
            s.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(s, x, hh, ww):
            x = x + s.attn(s.n1(x), hh, ww)
            return x + s.mlp(s.n2(x))

    class CvT(nn.Module):
        def __init__(s, d=64):
            super().__init__()
            s.embed = nn.Conv2d(3, d, 7, 4, 3)
            s.ln = nn.LayerNorm(d)
            s.b1, s.b2 = CvTBlock(d, 4), CvTBlock(d, 4)
            s.norm, s.fc = nn.LayerNorm(d), nn.Linear(d, 10)

        def forward(s, x):                                   # [B, 3, 64, 64]
            x = s.ln(s.embed(x).flatten(2).transpose(1, 2))  # 16x16 tokens
            x = s.b2(s.b1(x, 16, 16), 16, 16)
            return s.fc(s.norm(x).mean(1))

    class WhisperBlock(nn.Module):
        def __init__(s, d, heads):
            super().__init__()
            s.h = heads
            s.n1, s.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            s.q, s.k, s.v = nn.Linear(d, d), nn.Linear(d, d, bias=False), nn.Linear(d, d)
            s.o = nn.Linear(d, d)
            s.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(s, x):
            b, t, d = x.shape
            h = s.n1(x)
            q, k, v = (lin(h).view(b, t, s.h, d // s.h).transpose(1, 2)
                       for lin in (s.q, s.k, s.v))
            scale = (d // s.h) ** -0.25
            a = ((q * scale) @ (k * scale).transpose(-1, -2)).softmax(-1)
            x = x + s.o((a @ v).transpose(1, 2).reshape(b, t, d))
            return x + s.mlp(s.n2(x))

    class WhisperEncoder(nn.Module):
        def __init__(s, mels=40, d=96, heads=4, layers=2, frames=100):
            super().__init__()
            s.conv1 = nn.Conv1d(mels, d, 3, padding=1)
            s.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
            n = frames // 2
            inv = torch.exp(-math.log(10000.0) * torch.arange(d // 2) / (d // 2 - 1))
            ang = torch.arange(n)[:, None] * inv[None]
            s.register_buffer("pos", torch.cat([ang.sin(), ang.cos()], 1))
            s.blocks = nn.Sequential(*[WhisperBlock(d, heads) for _ in range(layers)])
            s.ln = nn.LayerNorm(d)

        def forward(s, x):                                   # [B, mels, frames]
            x = F.gelu(s.conv2(F.gelu(s.conv1(x)))).transpose(1, 2)
            return s.ln(s.blocks(x + s.pos))

    class LocalAttention(nn.Module):
        """Each token attends to the 2w+1 tokens around it: keys and values gathered into
        windows by a constant index (Longformer's sliding window, without global tokens)."""

        def __init__(s, d, heads, w, t):
            super().__init__()
            s.h, s.w = heads, w
            s.qkv, s.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            idx = torch.arange(t)[:, None] + torch.arange(2 * w + 1)[None]     # into the padded
            s.register_buffer("idx", idx)
            valid = (idx >= w) & (idx < t + w)
            s.register_buffer("bias", torch.zeros(t, 2 * w + 1).masked_fill(~valid, -1e9))

        def forward(s, x):
            b, t, d = x.shape
            q, k, v = s.qkv(x).view(b, t, 3, s.h, d // s.h).permute(2, 0, 3, 1, 4)
            kp = F.pad(k, (0, 0, s.w, s.w))[:, :, s.idx]    # [B, H, T, 2w+1, hd]
            vp = F.pad(v, (0, 0, s.w, s.w))[:, :, s.idx]
            sc = torch.einsum("bhtd,bhtwd->bhtw", q, kp) / math.sqrt(d // s.h) + s.bias
            y = torch.einsum("bhtw,bhtwd->bhtd", sc.softmax(-1), vp)
            return s.o(y.transpose(1, 2).reshape(b, t, d))

    class Longformer(nn.Module):
        def __init__(s, vocab=1000, d=64, heads=4, w=8, t=128, layers=2):
            super().__init__()
            s.emb = nn.Embedding(vocab, d)
            g = torch.Generator().manual_seed(13)
            s.pos = nn.Parameter(0.02 * torch.randn(1, t, d, generator=g))
            s.attn = nn.ModuleList([LocalAttention(d, heads, w, t) for _ in range(layers)])
            s.n1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            s.n2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            s.ff = nn.ModuleList([nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(),
                                                nn.Linear(2 * d, d)) for _ in range(layers)])
            s.fc = nn.Linear(d, 3)

        def forward(s, ids):                                 # [B, 128]
            x = s.emb(ids) + s.pos
            for a, n1, n2, ff in zip(s.attn, s.n1, s.n2, s.ff):
                x = n1(x + a(x))
                x = n2(x + ff(x))
            return s.fc(x)

    class SwinV2Attention(nn.Module):
        def __init__(s, d, heads, win):
            super().__init__()
            s.h, s.win = heads, win
            s.qkv, s.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            s.logit_scale = nn.Parameter(torch.log(10 * torch.ones(heads, 1, 1)))
            s.cpb = nn.Sequential(nn.Linear(2, 128), nn.ReLU(), nn.Linear(128, heads,
                                                                           bias=False))
            r = torch.arange(-(win - 1), win, dtype=torch.float32)
            table = torch.stack(torch.meshgrid(r, r, indexing="ij"), -1) / (win - 1) * 8
            table = torch.sign(table) * torch.log2(table.abs() + 1.0) / math.log2(8)
            s.register_buffer("table", table.reshape(-1, 2))       # [(2w-1)^2, 2]
            c = torch.stack(torch.meshgrid(torch.arange(win), torch.arange(win),
                                           indexing="ij")).flatten(1)
            rel = (c[:, :, None] - c[:, None, :]).permute(1, 2, 0) + (win - 1)
            s.register_buffer("index", (rel[..., 0] * (2 * win - 1) + rel[..., 1]).flatten())

        def forward(s, x):                                   # [Bw, N, d]
            bw, n, d = x.shape
            q, k, v = s.qkv(x).view(bw, n, 3, s.h, d // s.h).permute(2, 0, 3, 1, 4)
            a = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-1, -2)
            a = a * torch.clamp(s.logit_scale, max=math.log(100.0)).exp()
            bias = s.cpb(s.table)[s.index].view(n, n, s.h).permute(2, 0, 1)
            a = (a + 16 * torch.sigmoid(bias)).softmax(-1)
            return s.o((a @ v).transpose(1, 2).reshape(bw, n, d))

    class SwinV2Block(nn.Module):
        def __init__(s, d, heads, win, shift):
            super().__init__()
            s.win, s.shift = win, shift
            s.attn = SwinV2Attention(d, heads, win)
            s.n1, s.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            s.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(s, x, hh, ww):                           # [B, H*W, d], post-norm
            b, n, d = x.shape
            w = s.win
            h = x.view(b, hh, ww, d)
            if s.shift:
                h = torch.roll(h, (-s.shift, -s.shift), (1, 2))
            h = h.view(b, hh // w, w, ww // w, w, d).permute(0, 1, 3, 2, 4, 5).reshape(-1, w * w, d)
            h = s.attn(h)
            h = h.view(b, hh // w, ww // w, w, w, d).permute(0, 1, 3, 2, 4, 5).reshape(b, hh, ww, d)
            if s.shift:
                h = torch.roll(h, (s.shift, s.shift), (1, 2))
            x = x + s.n1(h.reshape(b, n, d))
            return x + s.n2(s.mlp(x))

    class SwinV2(nn.Module):
        def __init__(s, d=64, heads=4, win=8):
            super().__init__()
            s.patch = nn.Conv2d(3, d, 2, 2)
            s.ln = nn.LayerNorm(d)
            s.b1, s.b2 = SwinV2Block(d, heads, win, 0), SwinV2Block(d, heads, win, win // 2)
            s.fc = nn.Linear(d, 10)

        def forward(s, x):                                   # [B, 3, 32, 32]
            x = s.ln(s.patch(x).flatten(2).transpose(1, 2))  # 16x16 tokens
            return s.fc(s.b2(s.b1(x, 16, 16), 16, 16).mean(1))

    # -- tabular / point sets ---------------------------------------------------------------

    class XDeepFM(nn.Module):
        def __init__(s, fields=16, per_field=100, d=16, cin=(32, 32), mlp=(128, 64)):
            super().__init__()
            s.m = fields
            s.register_buffer("offsets", torch.arange(fields) * per_field)
            s.emb = nn.Embedding(fields * per_field, d)
            s.lin = nn.Embedding(fields * per_field, 1)
            hs = [fields, *cin]
            s.cin = nn.ModuleList([nn.Conv1d(hs[i] * fields, hs[i + 1], 1)
                                   for i in range(len(cin))])
            s.dnn = nn.Sequential(nn.Linear(fields * d, mlp[0]), nn.ReLU(),
                                  nn.Linear(mlp[0], mlp[1]), nn.ReLU(), nn.Linear(mlp[1], 1))
            s.cin_out = nn.Linear(sum(cin), 1)

        def forward(s, ids):                                 # [B, fields] int64
            i = ids + s.offsets
            x0 = s.emb(i)                                    # [B, m, D]
            b, m, d = x0.shape
            xk, pooled = x0, []
            for conv in s.cin:
                z = torch.einsum("bhd,bmd->bhmd", xk, x0).reshape(b, -1, d)
                xk = F.relu(conv(z))                         # [B, Hk, D]
                pooled.append(xk.sum(-1))
            logit = (s.lin(i).sum((1, 2)) + s.dnn(x0.reshape(b, -1)).squeeze(-1)
                     + s.cin_out(torch.cat(pooled, 1)).squeeze(-1))
            return torch.sigmoid(logit)

    class SetAbstraction(nn.Module):
        def __init__(s, n, centroids, k, cin, widths):
            super().__init__()
            s.k = k
            g = torch.Generator().manual_seed(centroids)
            s.register_buffer("centre", torch.randperm(n, generator=g)[:centroids])
            layers, c = [], cin + 3
            for w in widths:
                layers += [nn.Linear(c, w), nn.ReLU()]
                c = w
            s.mlp = nn.Sequential(*layers)

        def forward(s, xyz, feats):                          # [B, N, 3], [B, N, C] or None
            b, n, _ = xyz.shape
            c_xyz = xyz[:, s.centre]                         # [B, S, 3]
            d2 = ((c_xyz * c_xyz).sum(-1, keepdim=True) - 2 * c_xyz @ xyz.transpose(1, 2)
                  + (xyz * xyz).sum(-1)[:, None])            # [B, S, N]
            knn = d2.topk(s.k, -1, largest=False).indices    # [B, S, k]
            flat = (knn + (torch.arange(b) * n)[:, None, None]).reshape(-1)
            g_xyz = xyz.reshape(b * n, 3)[flat].view(b, -1, s.k, 3) - c_xyz[:, :, None]
            g = g_xyz if feats is None else torch.cat(
                [g_xyz, feats.reshape(b * n, -1)[flat].view(b, -1, s.k, feats.shape[-1])], -1)
            return c_xyz, s.mlp(g).amax(2)                  # [B, S, 3], [B, S, C']

    class PointNet2(nn.Module):
        def __init__(s):
            super().__init__()
            s.sa1 = SetAbstraction(256, 64, 16, 0, (32, 64))
            s.sa2 = SetAbstraction(64, 16, 8, 64, (128, 128))
            s.head = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))

        def forward(s, x):                                   # [B, 256, 3]
            xyz, f = s.sa1(x, None)
            _, f = s.sa2(xyz, f)
            return s.head(f.amax(1))

    return {c.__name__: c for c in (GRULM, SRU, PSPNet, RetinaHead, SEResNet, RepVGG,
                                     PVT, CvT, WhisperEncoder, Longformer, SwinV2, XDeepFM,
                                     PointNet2)}


_floats = zoo_more._floats
_ids = zoo_more._ids


def _fields(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"ids": rng.integers(0, 100, (batch, 16)).astype(np.int64)}


def _model(name: str, cls_name: str, make_inputs) -> ZooModel:
    return zoo_more._model(name, cls_name, make_inputs, _classes)


PROBE11: dict[str, ZooModel] = {
    m.name: m
    for m in [
        _model("gru_lm", "GRULM", _ids(24, 1000)),
        _model("sru", "SRU", _floats(32, 64)),
        _model("pspnet", "PSPNet", _floats(3, 96, 96)),
        _model("retinanet_head", "RetinaHead", _floats(3, 64, 64)),
        _model("se_resnet", "SEResNet", _floats(3, 64, 64)),
        _model("repvgg_train", "RepVGG", _floats(3, 64, 64)),
        _model("pvt", "PVT", _floats(3, 64, 64)),
        _model("cvt", "CvT", _floats(3, 64, 64)),
        _model("whisper_enc", "WhisperEncoder", _floats(40, 100)),
        _model("longformer", "Longformer", _ids(128, 1000)),
        _model("swinv2", "SwinV2", _floats(3, 32, 32)),
        _model("xdeepfm", "XDeepFM", _fields),
        _model("pointnet2", "PointNet2", _floats(256, 3)),
    ]
}
