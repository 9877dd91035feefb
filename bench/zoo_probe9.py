"""A probe set of torch.nn models (probe9): kinds the earlier sets did not cover: a GraphSAGE GNN
with sparse message passing (gather by edge source, index_add into the destinations, mean by
degree), DLinear (series decomposition by a replicate-padded moving average), a PatchTST-style
encoder (unfold patching), SKNet selective-kernel blocks, Res2Net bottlenecks, LeViT-style
attention (Linear + BatchNorm1d, a gathered attention-bias table, hardswish), a DCN-v2 recommender
(embedding tables, cross layers, a deep MLP), a CRNN text recognizer (CNN, bidirectional LSTM,
log_softmax), a QAT-style CNN with fake quantization (QuantizeLinear/DequantizeLinear), CondConv
with per-sample kernels, an AdaIN style-transfer block (two image inputs), a SIREN MLP, a CLIP
AttentionPool2d head and BiFPN weighted feature fusion. Seeded random weights.
`bench/zoo.py --set probe9`.
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

    class GraphSAGE(nn.Module):
        def __init__(s, n=32, f=16, h=64, edges=128, layers=3):
            super().__init__()
            g = torch.Generator().manual_seed(9)
            src = torch.randint(0, n, (edges,), generator=g)
            dst = torch.randint(0, n, (edges,), generator=g)
            s.register_buffer("src", src)
            s.register_buffer("dst", dst)
            deg = torch.zeros(n).index_add_(0, dst, torch.ones(edges)).clamp(min=1)
            s.register_buffer("inv_deg", (1.0 / deg)[:, None])
            s.self_l = nn.ModuleList([nn.Linear(f if i == 0 else h, h) for i in range(layers)])
            s.nb_l = nn.ModuleList([nn.Linear(f if i == 0 else h, h, bias=False)
                                    for i in range(layers)])
            s.out = nn.Linear(h, 4)

        def forward(s, x):
            for ls, ln in zip(s.self_l, s.nb_l):
                msg = x.index_select(1, s.src)                       # [B, E, F]
                if torch.jit.is_tracing():
                    # the TorchScript exporter refuses index_add_ with repeated indices:
                    # scatter_add (ScatterElements, reduction add) is the same sum
                    idx = s.dst.view(1, -1, 1).expand(msg.shape)
                    agg = torch.zeros_like(x).scatter_add(1, idx, msg)
                else:                                                # dynamo: ScatterND add
                    agg = torch.zeros_like(x).index_add_(1, s.dst, msg)  # [B, N, F]
                x = F.relu(ls(x) + ln(agg * s.inv_deg))
                x = F.normalize(x, dim=-1)
            return s.out(x.mean(1))

    class DLinear(nn.Module):
        def __init__(s, seq=336, pred=96, k=25):
            super().__init__()
            s.k = k
            s.avg = nn.AvgPool1d(k, stride=1)
            s.seasonal, s.trend = nn.Linear(seq, pred), nn.Linear(seq, pred)

        def forward(s, x):                        # [B, L, C]
            p = (s.k - 1) // 2
            front = x[:, :1].repeat(1, p, 1)
            end = x[:, -1:].repeat(1, p, 1)
            xp = torch.cat([front, x, end], 1)
            trend = s.avg(xp.permute(0, 2, 1))    # [B, C, L]
            seasonal = x.permute(0, 2, 1) - trend
            return (s.seasonal(seasonal) + s.trend(trend)).permute(0, 2, 1)

    class PatchTST(nn.Module):
        def __init__(s, c=7, seq=96, patch=16, stride=8, d=64, pred=24):
            super().__init__()
            s.patch, s.stride = patch, stride
            n = (seq - patch) // stride + 1
            s.embed = nn.Linear(patch, d)
            g = torch.Generator().manual_seed(1)
            s.pos = nn.Parameter(torch.randn(1, n, d, generator=g) * 0.02)
            layer = nn.TransformerEncoderLayer(d, 4, 2 * d, 0.0, activation="gelu",
                                               batch_first=True)
            s.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            s.head = nn.Linear(n * d, pred)

        def forward(s, x):                        # [B, C, L]
            b, c, _ = x.shape
            mu = x.mean(-1, keepdim=True)
            sd = torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-5)
            x = (x - mu) / sd                     # RevIN without affine
            # dim 2, not -1: the TorchScript exporter's unfold at dim -1 comes out as
            # [B, C, P, N] (torch 2.13), which the reshape below then rejects
            p = x.unfold(2, s.patch, s.stride)    # [B, C, N, P]
            t = s.embed(p.reshape(b * c, p.shape[2], s.patch)) + s.pos
            t = s.enc(t)
            y = s.head(t.reshape(b, c, -1))       # [B, C, pred]
            return y * sd + mu

    class SKConv(nn.Module):
        def __init__(s, c, groups=4, r=4):
            super().__init__()
            s.b1 = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, groups=groups, bias=False),
                                 nn.BatchNorm2d(c), nn.ReLU())
            s.b2 = nn.Sequential(nn.Conv2d(c, c, 3, padding=2, dilation=2, groups=groups,
                                           bias=False), nn.BatchNorm2d(c), nn.ReLU())
            z = max(c // r, 8)
            s.fc = nn.Sequential(nn.Conv2d(c, z, 1, bias=False), nn.BatchNorm2d(z), nn.ReLU())
            s.fcs = nn.Conv2d(z, 2 * c, 1)

        def forward(s, x):
            u1, u2 = s.b1(x), s.b2(x)
            z = s.fc((u1 + u2).mean((2, 3), keepdim=True))
            a = torch.softmax(s.fcs(z).view(x.shape[0], 2, x.shape[1], 1, 1), 1)
            return u1 * a[:, 0] + u2 * a[:, 1]

    class SKNet(nn.Module):
        def __init__(s):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32),
                                   nn.ReLU())
            s.sk1 = SKConv(32)
            s.down = nn.Sequential(nn.Conv2d(32, 64, 3, 2, 1, bias=False), nn.BatchNorm2d(64),
                                   nn.ReLU())
            s.sk2 = SKConv(64)
            s.head = nn.Linear(64, 10)

        def forward(s, x):
            x = s.stem(x)
            x = x + s.sk1(x)
            x = s.down(x)
            x = x + s.sk2(x)
            return s.head(x.mean((2, 3)))

    class Res2Block(nn.Module):
        def __init__(s, cin, width=16, scale=4):
            super().__init__()
            s.width, s.scale = width, scale
            s.c1 = nn.Sequential(nn.Conv2d(cin, width * scale, 1, bias=False),
                                 nn.BatchNorm2d(width * scale), nn.ReLU())
            s.convs = nn.ModuleList([
                nn.Sequential(nn.Conv2d(width, width, 3, padding=1, bias=False),
                              nn.BatchNorm2d(width), nn.ReLU()) for _ in range(scale - 1)])
            s.c3 = nn.Sequential(nn.Conv2d(width * scale, cin, 1, bias=False),
                                 nn.BatchNorm2d(cin))

        def forward(s, x):
            parts = torch.split(s.c1(x), s.width, 1)
            outs = []
            y = None
            for i, conv in enumerate(s.convs):
                y = conv(parts[i] if i == 0 else parts[i] + y)
                outs.append(y)
            outs.append(parts[-1])
            return F.relu(x + s.c3(torch.cat(outs, 1)))

    class Res2Net(nn.Module):
        def __init__(s):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32),
                                   nn.ReLU(), nn.MaxPool2d(2))
            s.b1, s.b2 = Res2Block(32), Res2Block(32)
            s.head = nn.Linear(32, 10)

        def forward(s, x):
            x = s.b2(s.b1(s.stem(x)))
            return s.head(x.mean((2, 3)))

    class LinearBN(nn.Module):
        def __init__(s, i, o):
            super().__init__()
            s.lin, s.bn = nn.Linear(i, o, bias=False), nn.BatchNorm1d(o)

        def forward(s, x):
            return s.bn(s.lin(x).flatten(0, 1)).reshape(x.shape[0], x.shape[1], -1)

    class LeViTAttn(nn.Module):
        def __init__(s, d, res, heads=4, kd=16):
            super().__init__()
            s.heads, s.kd, s.scale = heads, kd, kd ** -0.5
            s.qkv = LinearBN(d, 3 * heads * kd)
            s.proj = LinearBN(heads * kd, d)
            pts = [(i, j) for i in range(res) for j in range(res)]
            offsets, idx = {}, []
            for p1 in pts:
                for p2 in pts:
                    off = (abs(p1[0] - p2[0]), abs(p1[1] - p2[1]))
                    idx.append(offsets.setdefault(off, len(offsets)))
            n = len(pts)
            g = torch.Generator().manual_seed(3)
            s.ab = nn.Parameter(torch.randn(heads, len(offsets), generator=g) * 0.5)
            s.register_buffer("idx", torch.tensor(idx, dtype=torch.int64).view(n, n))

        def forward(s, x):
            b, n, _ = x.shape
            q, k, v = s.qkv(x).view(b, n, s.heads, 3 * s.kd).permute(0, 2, 1, 3).split(
                [s.kd, s.kd, s.kd], -1)
            a = (q @ k.transpose(-2, -1)) * s.scale + s.ab[:, s.idx]
            y = (a.softmax(-1) @ v).transpose(1, 2).reshape(b, n, s.heads * s.kd)
            return s.proj(F.hardswish(y))

    class LeViT(nn.Module):
        def __init__(s, d=64, res=8):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.Hardswish(),
                                   nn.Conv2d(32, d, 3, 2, 1), nn.BatchNorm2d(d))
            s.attn = nn.ModuleList([LeViTAttn(d, res) for _ in range(2)])
            s.mlp = nn.ModuleList([nn.ModuleList([LinearBN(d, 2 * d), LinearBN(2 * d, d)])
                                   for _ in range(2)])
            s.bn = nn.BatchNorm1d(d)
            s.head = nn.Linear(d, 10)

        def forward(s, x):
            x = s.stem(x).flatten(2).transpose(1, 2)   # [B, N, d]
            for attn, (l1, l2) in zip(s.attn, s.mlp):
                x = x + attn(x)
                x = x + l2(F.hardswish(l1(x)))
            return s.head(s.bn(x.mean(1)))

    class DCNv2(nn.Module):
        vocabs = (1000, 500, 200, 50, 20, 7)

        def __init__(s, e=16, dense=13, cross=3):
            super().__init__()
            s.embs = nn.ModuleList([nn.Embedding(v, e) for v in s.vocabs])
            d = e * len(s.vocabs) + dense
            s.bn = nn.BatchNorm1d(dense)
            s.cross = nn.ModuleList([nn.Linear(d, d) for _ in range(cross)])
            s.deep = nn.Sequential(nn.Linear(d, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU())
            s.out = nn.Linear(d + 128, 1)

        def forward(s, ids, dense):
            x0 = torch.cat([emb(ids[:, i]) for i, emb in enumerate(s.embs)] + [s.bn(dense)], 1)
            x = x0
            for lin in s.cross:
                x = x0 * lin(x) + x
            return torch.sigmoid(s.out(torch.cat([x, s.deep(x0)], 1)))

    class CRNN(nn.Module):
        def __init__(s, classes=37):
            super().__init__()

            def cbr(i, o):
                return [nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU()]
            s.cnn = nn.Sequential(*cbr(1, 16), nn.MaxPool2d(2), *cbr(16, 32), nn.MaxPool2d(2),
                                  *cbr(32, 64), nn.MaxPool2d((2, 1)), *cbr(64, 64),
                                  nn.MaxPool2d((2, 1)), nn.Conv2d(64, 64, (2, 1)), nn.ReLU())
            s.rnn = nn.LSTM(64, 64, batch_first=True, bidirectional=True)
            s.fc = nn.Linear(128, classes)

        def forward(s, x):                          # [B, 1, 32, W]
            f = s.cnn(x).squeeze(2).permute(0, 2, 1)  # [B, W/4, 64]
            return F.log_softmax(s.fc(s.rnn(f)[0]), -1)

    def _fq_act(x, scale, signed):
        lo, hi = (-128, 127) if signed else (0, 255)
        return torch.fake_quantize_per_tensor_affine(x, scale, 0, lo, hi)

    class QConv(nn.Module):
        def __init__(s, i, o, stride=1, act_scale=0.05):
            super().__init__()
            s.conv = nn.Conv2d(i, o, 3, stride, 1)
            s.act_scale = act_scale
            s.w_scale = float(s.conv.weight.detach().abs().max()) / 127.0

        def forward(s, x):
            w = torch.fake_quantize_per_tensor_affine(s.conv.weight, s.w_scale, 0, -128, 127)
            return _fq_act(F.relu(F.conv2d(x, w, s.conv.bias, s.conv.stride, 1)),
                           s.act_scale, False)

    class FakeQuantCNN(nn.Module):
        def __init__(s):
            super().__init__()
            s.q1, s.q2, s.q3 = QConv(3, 16), QConv(16, 32, 2), QConv(32, 64, 2)
            s.fc = nn.Linear(64, 10)
            s.fc_scale = float(s.fc.weight.detach().abs().max()) / 127.0
            # frozen (an inference export): with grad, torch.export meets
            # fake_quantize_per_tensor_affine_cachemask, which has no fake-tensor kernel
            s.requires_grad_(False)

        def forward(s, x):
            x = _fq_act(x, 0.03, True)
            x = s.q3(s.q2(s.q1(x)))
            x = _fq_act(x.mean((2, 3)), 0.02, False)
            w = torch.fake_quantize_per_tensor_affine(s.fc.weight, s.fc_scale, 0, -128, 127)
            return F.linear(x, w, s.fc.bias)

    class CondConv(nn.Module):
        def __init__(s, cin, cout, experts=4):
            super().__init__()
            s.cin, s.cout, s.k = cin, cout, experts
            g = torch.Generator().manual_seed(5)
            s.w = nn.Parameter(torch.randn(experts, cout, cin, 9, generator=g) / math.sqrt(9 * cin))
            s.route = nn.Linear(cin, experts)
            s.bn = nn.BatchNorm2d(cout)

        def forward(s, x):
            b, c, h, w = x.shape
            r = torch.softmax(s.route(x.mean((2, 3))), -1)              # [B, K]
            kern = torch.einsum("bk,koci->boci", r, s.w)                # per-sample kernels
            xp = F.pad(x, (1, 1, 1, 1))
            cols = torch.stack([xp[:, :, i:i + h, j:j + w] for i in range(3) for j in range(3)],
                               2)                                       # [B, C, 9, H, W]
            return F.relu(s.bn(torch.einsum("boci,bcihw->bohw", kern, cols)))

    class CondNet(nn.Module):
        def __init__(s):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU())
            s.c1, s.c2 = CondConv(16, 32), CondConv(32, 32)
            s.head = nn.Linear(32, 10)

        def forward(s, x):
            x = s.c1(s.stem(x))
            x = s.c2(F.max_pool2d(x, 2))
            return s.head(x.mean((2, 3)))

    class AdaIN(nn.Module):
        def __init__(s):
            super().__init__()
            s.enc = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(),
                                  nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(64, 64, 3, padding=1), nn.ReLU())
            s.dec = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(64, 32, 3), nn.ReLU(),
                                  nn.Upsample(scale_factor=2, mode="nearest"),
                                  nn.ReflectionPad2d(1), nn.Conv2d(32, 32, 3), nn.ReLU(),
                                  nn.Upsample(scale_factor=2, mode="nearest"),
                                  nn.ReflectionPad2d(1), nn.Conv2d(32, 3, 3))

        @staticmethod
        def _stats(f, eps=1e-5):
            b, c = f.shape[:2]
            v = f.reshape(b, c, -1)
            return v.mean(-1).view(b, c, 1, 1), (v.var(-1) + eps).sqrt().view(b, c, 1, 1)

        def forward(s, content, style):
            fc, fs = s.enc(content), s.enc(style)
            mc, sc = s._stats(fc)
            ms, ss = s._stats(fs)
            return s.dec((fc - mc) / sc * ss + ms)

    class SIREN(nn.Module):
        def __init__(s, w=128, depth=3, w0=30.0):
            super().__init__()
            s.w0 = w0
            s.first = nn.Linear(2, w)
            s.hidden = nn.ModuleList([nn.Linear(w, w) for _ in range(depth)])
            s.last = nn.Linear(w, 3)
            with torch.no_grad():
                s.first.weight.uniform_(-1 / 2, 1 / 2)
                for lin in s.hidden:
                    bound = math.sqrt(6 / w) / w0
                    lin.weight.uniform_(-bound, bound)

        def forward(s, x):
            h = torch.sin(s.w0 * s.first(x))
            for lin in s.hidden:
                h = torch.sin(s.w0 * lin(h))
            return s.last(h)

    class AttentionPool2d(nn.Module):
        def __init__(s, spacial, d, heads, out):
            super().__init__()
            g = torch.Generator().manual_seed(7)
            s.pos = nn.Parameter(torch.randn(spacial ** 2 + 1, d, generator=g) / d ** 0.5)
            s.k_proj, s.q_proj, s.v_proj = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
            s.c_proj = nn.Linear(d, out)
            s.heads = heads

        def forward(s, x):    # CLIP's ModifiedResNet attnpool
            x = x.flatten(start_dim=2).permute(2, 0, 1)            # NCHW -> (HW)NC
            x = torch.cat([x.mean(dim=0, keepdim=True), x], dim=0)
            x = x + s.pos[:, None, :].to(x.dtype)
            x, _ = F.multi_head_attention_forward(
                query=x[:1], key=x, value=x, embed_dim_to_check=x.shape[-1],
                num_heads=s.heads, q_proj_weight=s.q_proj.weight,
                k_proj_weight=s.k_proj.weight, v_proj_weight=s.v_proj.weight,
                in_proj_weight=None,
                in_proj_bias=torch.cat([s.q_proj.bias, s.k_proj.bias, s.v_proj.bias]),
                bias_k=None, bias_v=None, add_zero_attn=False, dropout_p=0,
                out_proj_weight=s.c_proj.weight, out_proj_bias=s.c_proj.bias,
                use_separate_proj_weight=True, training=False, need_weights=False)
            return x.squeeze(0)

    class CLIPPool(nn.Module):
        def __init__(s):
            super().__init__()
            s.cnn = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.ReLU(),
                                  nn.Conv2d(32, 64, 3, 2, 1), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.AvgPool2d(2),
                                  nn.Conv2d(64, 128, 3, 1, 1), nn.BatchNorm2d(128), nn.ReLU())
            s.pool = AttentionPool2d(4, 128, 8, 64)

        def forward(s, x):
            return F.normalize(s.pool(s.cnn(x)), dim=-1)

    class SepConv(nn.Module):
        def __init__(s, c):
            super().__init__()
            s.dw = nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False)
            s.pw = nn.Conv2d(c, c, 1, bias=False)
            s.bn = nn.BatchNorm2d(c)

        def forward(s, x):
            return s.bn(s.pw(s.dw(x)))

    class BiFPNLayer(nn.Module):
        def __init__(s, c, eps=1e-4):
            super().__init__()
            s.eps = eps
            s.w_td = nn.Parameter(torch.ones(2, 2))    # P4_td, P3_out
            s.w_bu = nn.Parameter(torch.ones(3))       # P4_out
            s.w_p5 = nn.Parameter(torch.ones(2))       # P5_out
            with torch.no_grad():
                for p in (s.w_td, s.w_bu, s.w_p5):
                    p.add_(torch.rand(p.shape, generator=torch.Generator().manual_seed(2)))
            s.c4td, s.c3, s.c4, s.c5 = SepConv(c), SepConv(c), SepConv(c), SepConv(c)

        def _fuse(s, w, xs):
            w = F.relu(w)
            w = w / (w.sum() + s.eps)
            return F.silu(sum(w[i] * x for i, x in enumerate(xs)))

        def forward(s, p3, p4, p5):
            up = functools.partial(F.interpolate, scale_factor=2.0, mode="nearest")
            p4_td = s.c4td(s._fuse(s.w_td[0], [p4, up(p5)]))
            p3_out = s.c3(s._fuse(s.w_td[1], [p3, up(p4_td)]))
            p4_out = s.c4(s._fuse(s.w_bu, [p4, p4_td, F.max_pool2d(p3_out, 3, 2, 1)]))
            p5_out = s.c5(s._fuse(s.w_p5, [p5, F.max_pool2d(p4_out, 3, 2, 1)]))
            return p3_out, p4_out, p5_out

    class BiFPN(nn.Module):
        def __init__(s, c=32):
            super().__init__()

            def down(i, o):
                return nn.Sequential(nn.Conv2d(i, o, 3, 2, 1, bias=False), nn.BatchNorm2d(o),
                                     nn.SiLU())
            s.s1, s.s2, s.s3 = down(3, 24), down(24, 40), down(40, 80)
            s.l3, s.l4, s.l5 = nn.Conv2d(24, c, 1), nn.Conv2d(40, c, 1), nn.Conv2d(80, c, 1)
            s.layers = nn.ModuleList([BiFPNLayer(c), BiFPNLayer(c)])
            s.head = nn.Conv2d(c, 9, 3, padding=1)

        def forward(s, x):
            c3 = s.s1(x)
            c4 = s.s2(c3)
            c5 = s.s3(c4)
            p = (s.l3(c3), s.l4(c4), s.l5(c5))
            for layer in s.layers:
                p = layer(*p)
            return tuple(s.head(q).flatten(2) for q in p)

    return {c.__name__: c for c in (GraphSAGE, DLinear, PatchTST, SKNet, Res2Net, LeViT, DCNv2,
                                     CRNN, FakeQuantCNN, CondNet, AdaIN, SIREN, CLIPPool, BiFPN)}


_floats = zoo_more._floats


def _recsys_inputs(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    vocabs = _classes()["DCNv2"].vocabs
    ids = np.stack([rng.integers(0, v, batch) for v in vocabs], 1).astype(np.int64)
    return {"ids": ids, "dense": rng.standard_normal((batch, 13)).astype(np.float32)}


def _coords(n: int):
    def make(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": rng.uniform(-1, 1, (batch, n, 2)).astype(np.float32)}
    return make


def _model(name: str, cls_name: str, make_inputs) -> ZooModel:
    return zoo_more._model(name, cls_name, make_inputs, _classes)


PROBE9: dict[str, ZooModel] = {
    m.name: m
    for m in [
        _model("graphsage", "GraphSAGE", _floats(32, 16)),
        _model("dlinear", "DLinear", _floats(336, 7)),
        _model("patchtst", "PatchTST", _floats(7, 96)),
        _model("sknet", "SKNet", _floats(3, 32, 32)),
        _model("res2net", "Res2Net", _floats(3, 32, 32)),
        _model("levit", "LeViT", _floats(3, 32, 32)),
        _model("dcn_v2", "DCNv2", _recsys_inputs),
        _model("crnn", "CRNN", _floats(1, 32, 64)),
        _model("fakequant_cnn", "FakeQuantCNN", _floats(3, 32, 32)),
        _model("condconv", "CondNet", _floats(3, 32, 32)),
        _model("adain", "AdaIN", _floats(3, 32, 32, names=("content", "style"))),
        _model("siren", "SIREN", _coords(256)),
        _model("clip_attnpool", "CLIPPool", _floats(3, 32, 32)),
        _model("bifpn", "BiFPN", _floats(3, 32, 32)),
    ]
}
