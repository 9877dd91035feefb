"""A sixth set of torch.nn models, written on 2026-11-26 (seventh session) as a probe of models
nobody tuned for: ShuffleNetV2 units (chunk, channel shuffle by reshape-transpose), an
Inception block (four branches, 3x3 average pooling counting its padding, factorized 1x7 / 7x1
convolutions), HRNet-style multi-resolution fusion (bilinear upsampling, strided convolutions,
sums), a Conformer block (macaron feed-forward halves, multi-head attention, a GLU convolution
module with a depthwise Conv1d and BatchNorm1d), a full nn.Transformer encoder-decoder with a
generated causal mask (two inputs), a ReLU bidirectional nn.RNN feeding an unrolled LSTMCell
decoder, an FPN with nearest upsampling and an FCOS-style box decoder (arange / meshgrid grid,
exp, sigmoid, concat), scaled_dot_product_attention with a float ALiBi mask, a boolean band mask
and grouped-query heads (repeat_interleave), a neural ODE (RK4 unrolled over an MLP), a KAN
layer (B-spline bases by comparisons, where, clamp, einsum), a 1-D audio U-Net (strided Conv1d,
ConvTranspose1d, skip concats) and a LoRA linear with flip, a cumulative product (as exp of a
cumsum: torch.cumprod exports with neither exporter), logsumexp, var, sort and F.normalize.
All correct from the start (largest relative difference 6e-7); two found what to fix: a
ConvTranspose whose length is known only at run time was refused at import, and bilinear
upsampling ran as separable gathers and products (HRNet 1.3-1.7x onnxruntime). Seeded random
weights; `bench/zoo.py --set probe4` times them against onnxruntime and tests/test_zoo_more.py
checks them.
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

    def shuffle(x, groups: int = 2):
        b, c, h, w = x.shape
        return x.view(b, groups, c // groups, h, w).transpose(1, 2).reshape(b, c, h, w)

    class ShuffleUnit(nn.Module):
        def __init__(s, cin, cout, stride):
            super().__init__()
            s.stride = stride
            mid = cout // 2
            if stride > 1:
                s.left = nn.Sequential(
                    nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False),
                    nn.BatchNorm2d(cin),
                    nn.Conv2d(cin, mid, 1, bias=False),
                    nn.BatchNorm2d(mid),
                    nn.ReLU(),
                )
            rin = cin if stride > 1 else mid
            s.right = nn.Sequential(
                nn.Conv2d(rin, mid, 1, bias=False),
                nn.BatchNorm2d(mid),
                nn.ReLU(),
                nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False),
                nn.BatchNorm2d(mid),
                nn.Conv2d(mid, mid, 1, bias=False),
                nn.BatchNorm2d(mid),
                nn.ReLU(),
            )

        def forward(s, x):
            if s.stride == 1:
                a, b = x.chunk(2, dim=1)
                out = torch.cat([a, s.right(b)], 1)
            else:
                out = torch.cat([s.left(x), s.right(x)], 1)
            return shuffle(out)

    class ShuffleNetV2(nn.Module):
        """ShuffleNetV2 at 64x64: stem, 3x3/2 max pool, two stages of a stride-2 unit and two
        channel-split units (chunk, concat, channel shuffle), 1x1 conv, global mean"""

        def __init__(s):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, 24, 3, 2, 1, bias=False), nn.BatchNorm2d(24), nn.ReLU())
            s.pool = nn.MaxPool2d(3, 2, 1)
            s.stages = nn.Sequential(
                ShuffleUnit(24, 48, 2),
                ShuffleUnit(48, 48, 1),
                ShuffleUnit(48, 48, 1),
                ShuffleUnit(48, 96, 2),
                ShuffleUnit(96, 96, 1),
                ShuffleUnit(96, 96, 1),
            )
            s.conv = nn.Sequential(nn.Conv2d(96, 256, 1, bias=False), nn.BatchNorm2d(256), nn.ReLU())
            s.fc = nn.Linear(256, 10)

        def forward(s, x):
            return s.fc(s.conv(s.stages(s.pool(s.stem(x)))).mean((2, 3)))

    def cbr(cin, cout, k, stride=1, padding=0):
        return nn.Sequential(
            nn.Conv2d(cin, cout, k, stride, padding, bias=False), nn.BatchNorm2d(cout), nn.ReLU()
        )

    class Inception(nn.Module):
        """Two Inception blocks at 32x32 / 16x16: 1x1, 1x1-3x3, 1x1-5x5 (then 1x7-7x1 factorized)
        and 3x3 average pooling (count_include_pad) branches, concatenated"""

        def __init__(s):
            super().__init__()
            s.stem = cbr(3, 32, 3, padding=1)
            s.a1, s.a2 = cbr(32, 16, 1), nn.Sequential(cbr(32, 16, 1), cbr(16, 24, 3, padding=1))
            s.a3, s.a4 = nn.Sequential(cbr(32, 8, 1), cbr(8, 12, 5, padding=2)), cbr(32, 12, 1)
            s.b1 = cbr(64, 32, 1)
            s.b2 = nn.Sequential(
                cbr(64, 24, 1), cbr(24, 24, (1, 7), padding=(0, 3)), cbr(24, 32, (7, 1), padding=(3, 0))
            )
            s.b3 = nn.Sequential(
                cbr(64, 16, 1),
                cbr(16, 16, (7, 1), padding=(3, 0)),
                cbr(16, 16, (1, 7), padding=(0, 3)),
                cbr(16, 16, (7, 1), padding=(3, 0)),
                cbr(16, 32, (1, 7), padding=(0, 3)),
            )
            s.b4 = cbr(64, 32, 1)
            s.fc = nn.Linear(128, 10)

        def forward(s, x):
            x = s.stem(x)
            p = F.avg_pool2d(x, 3, 1, 1)
            x = torch.cat([s.a1(x), s.a2(x), s.a3(x), s.a4(p)], 1)
            x = F.max_pool2d(x, 3, 2, 1)
            p = F.avg_pool2d(x, 3, 1, 1)
            x = torch.cat([s.b1(x), s.b2(x), s.b3(x), s.b4(p)], 1)
            return s.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    class Basic(nn.Module):
        def __init__(s, c):
            super().__init__()
            s.c1, s.c2 = (
                cbr(c, c, 3, padding=1),
                nn.Sequential(nn.Conv2d(c, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c)),
            )

        def forward(s, x):
            return F.relu(x + s.c2(s.c1(x)))

    class HRNet(nn.Module):
        """HRNet-style: three resolutions (32, 16, 8) kept in parallel, exchanged by strided 3x3
        convs (down) and 1x1 conv + bilinear upsampling, align_corners=False (up), summed; a
        segmentation head over the concatenation of all three upsampled to full resolution"""

        def __init__(s, c=16, classes=5):
            super().__init__()
            s.stem = cbr(3, c, 3, padding=1)
            s.to2 = cbr(c, 2 * c, 3, 2, 1)
            s.h1, s.l1 = Basic(c), Basic(2 * c)
            s.up21 = nn.Sequential(nn.Conv2d(2 * c, c, 1, bias=False), nn.BatchNorm2d(c))
            s.dn12 = nn.Sequential(nn.Conv2d(c, 2 * c, 3, 2, 1, bias=False), nn.BatchNorm2d(2 * c))
            s.to3 = cbr(2 * c, 4 * c, 3, 2, 1)
            s.h2, s.m2, s.l2 = Basic(c), Basic(2 * c), Basic(4 * c)
            s.up31 = nn.Sequential(nn.Conv2d(4 * c, c, 1, bias=False), nn.BatchNorm2d(c))
            s.up32 = nn.Sequential(nn.Conv2d(4 * c, 2 * c, 1, bias=False), nn.BatchNorm2d(2 * c))
            s.dn13 = nn.Sequential(
                cbr(c, c, 3, 2, 1), nn.Conv2d(c, 4 * c, 3, 2, 1, bias=False), nn.BatchNorm2d(4 * c)
            )
            s.head = nn.Sequential(cbr(7 * c, 32, 1), nn.Conv2d(32, classes, 1))

        def forward(s, x):
            def up(t, f):
                return F.interpolate(t, scale_factor=f, mode="bilinear", align_corners=False)

            h = s.stem(x)
            l = s.to2(h)
            h, l = s.h1(h), s.l1(l)
            h, l = F.relu(h + up(s.up21(l), 2)), F.relu(l + s.dn12(h))
            m = s.to3(l)
            h, l, m = s.h2(h), s.m2(l), s.l2(m)
            h = F.relu(h + up(s.up31(m), 4))
            l = F.relu(l + up(s.up32(m), 2))
            m = F.relu(m + s.dn13(h))
            y = torch.cat([h, up(l, 2), up(m, 4)], 1)
            return s.head(y)

    class Conformer(nn.Module):
        """A Conformer block on [B, 64, 80] features: macaron feed-forward halves (SiLU), pre-LN
        nn.MultiheadAttention, a convolution module (pointwise Conv1d, GLU, depthwise Conv1d k=15,
        BatchNorm1d, SiLU, pointwise), a final LayerNorm, a log_softmax head"""

        def __init__(s, fin=80, d=96, h=4, k=15, classes=32):
            super().__init__()
            s.inp = nn.Linear(fin, d)

            def ff():
                return nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Linear(4 * d, d))

            s.ff1, s.ff2 = ff(), ff()
            s.ln_att, s.att = nn.LayerNorm(d), nn.MultiheadAttention(d, h, batch_first=True)
            s.ln_conv = nn.LayerNorm(d)
            s.pw1, s.dw = nn.Conv1d(d, 2 * d, 1), nn.Conv1d(d, d, k, padding=k // 2, groups=d)
            s.bn, s.pw2 = nn.BatchNorm1d(d), nn.Conv1d(d, d, 1)
            s.ln_out, s.out = nn.LayerNorm(d), nn.Linear(d, classes)

        def forward(s, x):
            x = s.inp(x)
            x = x + 0.5 * s.ff1(x)
            a = s.ln_att(x)
            x = x + s.att(a, a, a, need_weights=False)[0]
            c = F.glu(s.pw1(s.ln_conv(x).transpose(1, 2)), dim=1)
            c = s.pw2(F.silu(s.bn(s.dw(c))))
            x = x + c.transpose(1, 2)
            x = s.ln_out(x + 0.5 * s.ff2(x))
            return F.log_softmax(s.out(x), -1)

    class Transformer(nn.Module):
        """nn.Transformer (2 encoder + 2 decoder layers, d=64, batch_first, cross attention) on a
        float source [B, 20, 32] and target token ids [B, 12], with
        nn.Transformer.generate_square_subsequent_mask as the target mask"""

        def __init__(s, fin=32, d=64, vocab=100, T=12):
            super().__init__()
            s.src_in, s.tgt_emb = nn.Linear(fin, d), nn.Embedding(vocab, d)
            s.pos = nn.Parameter(torch.randn(1, T, d) * 0.1)
            s.tf = nn.Transformer(d, 4, 2, 2, 128, dropout=0.0, batch_first=True)
            s.out = nn.Linear(d, vocab)

        def forward(s, src, tgt):
            T = tgt.shape[1]
            mask = nn.Transformer.generate_square_subsequent_mask(T)
            # tgt_is_causal=True: without it torch.export fails (nn.Transformer compares the mask with
            # torch.equal, a data-dependent guard), so the dynamo exporter could not export it
            y = s.tf(s.src_in(src), s.tgt_emb(tgt) + s.pos[:, :T], tgt_mask=mask, tgt_is_causal=True)
            return s.out(y)

    class RNNCells(nn.Module):
        """a 2-layer bidirectional ReLU nn.RNN encoder over [B, 24, 16], then 8 unrolled
        nn.LSTMCell decoder steps fed back their own projected output (a Python loop)"""

        def __init__(s, fin=16, hid=32, steps=8):
            super().__init__()
            s.steps = steps
            s.rnn = nn.RNN(fin, hid, 2, nonlinearity="relu", batch_first=True, bidirectional=True)
            s.h0, s.c0 = nn.Linear(2 * hid, hid), nn.Linear(2 * hid, hid)
            s.cell = nn.LSTMCell(fin, hid)
            s.proj = nn.Linear(hid, fin)

        def forward(s, x):
            y, _ = s.rnn(x)
            ctx = y.mean(1)
            h, c = torch.tanh(s.h0(ctx)), s.c0(ctx)
            inp, outs = x[:, -1], []
            for _ in range(s.steps):
                h, c = s.cell(inp, (h, c))
                inp = s.proj(h)
                outs.append(inp)
            return torch.stack(outs, 1)

    class FPN(nn.Module):
        """a 3-stage backbone at 64x64, an FPN (1x1 laterals, nearest upsampling, adds, 3x3
        smoothing), a shared FCOS-style head and box decoding: a grid from arange / meshgrid of the
        feature size, exp of the distances, sigmoid scores times centerness, concatenated levels"""

        def __init__(s, c=48, classes=4):
            super().__init__()
            s.c2, s.c3, s.c4 = cbr(3, 32, 3, 2, 1), cbr(32, 64, 3, 2, 1), cbr(64, 128, 3, 2, 1)
            s.l2, s.l3, s.l4 = nn.Conv2d(32, c, 1), nn.Conv2d(64, c, 1), nn.Conv2d(128, c, 1)
            s.s2, s.s3, s.s4 = (nn.Conv2d(c, c, 3, padding=1) for _ in range(3))
            s.tower = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.GroupNorm(8, c), nn.ReLU())
            s.cls, s.reg, s.ctr = (
                nn.Conv2d(c, classes, 3, padding=1),
                nn.Conv2d(c, 4, 3, padding=1),
                nn.Conv2d(c, 1, 3, padding=1),
            )
            s.scales = nn.Parameter(torch.tensor([1.0, 0.8, 0.6]))

        def forward(s, x):
            c2 = s.c2(x)
            c3 = s.c3(c2)
            c4 = s.c4(c3)
            p4 = s.l4(c4)
            p3 = s.l3(c3) + F.interpolate(p4, scale_factor=2, mode="nearest")
            p2 = s.l2(c2) + F.interpolate(p3, size=c2.shape[-2:], mode="nearest")
            boxes, scores = [], []
            for i, (p, stride) in enumerate(((s.s2(p2), 2), (s.s3(p3), 4), (s.s4(p4), 8))):
                t = s.tower(p)
                b, _, h, w = t.shape
                ys, xs = torch.meshgrid(
                    torch.arange(h, dtype=x.dtype), torch.arange(w, dtype=x.dtype), indexing="ij"
                )
                cx = (xs.reshape(-1) * stride + stride // 2).unsqueeze(0)
                cy = (ys.reshape(-1) * stride + stride // 2).unsqueeze(0)
                d = torch.exp(s.scales[i] * s.reg(t)).flatten(2) * stride  # [B, 4, HW]
                boxes.append(torch.stack([cx - d[:, 0], cy - d[:, 1], cx + d[:, 2], cy + d[:, 3]], -1))
                sc = torch.sigmoid(s.cls(t)).flatten(2) * torch.sigmoid(s.ctr(t)).flatten(2)
                scores.append(torch.sqrt(sc).transpose(1, 2))
            return torch.cat(boxes, 1), torch.cat(scores, 1)

    class SDPA(nn.Module):
        """scaled_dot_product_attention three ways on [B, 32, 64]: a float ALiBi bias as attn_mask,
        a boolean local band mask, and is_causal=True with an explicit scale; 4 query heads share
        2 key/value heads (repeat_interleave)"""

        def __init__(s, d=64, h=4, kvh=2, T=32):
            super().__init__()
            s.h, s.kvh, s.dh = h, kvh, d // h
            s.q = nn.ModuleList(nn.Linear(d, d) for _ in range(3))
            s.kv = nn.ModuleList(nn.Linear(d, 2 * kvh * (d // h)) for _ in range(3))
            s.o = nn.ModuleList(nn.Linear(d, d) for _ in range(3))
            s.ln = nn.ModuleList(nn.LayerNorm(d) for _ in range(3))
            pos = torch.arange(T)
            slopes = 2.0 ** (-8.0 * torch.arange(1, h + 1) / h)
            s.register_buffer(
                "alibi", -slopes.view(h, 1, 1) * (pos.view(1, 1, T) - pos.view(1, T, 1)).abs().float()
            )
            s.register_buffer("band", (pos.view(T, 1) - pos.view(1, T)).abs() <= 4)
            s.head = nn.Linear(d, 8)

        def forward(s, x):
            B, T, _ = x.shape
            for i, how in enumerate(("alibi", "band", "causal")):
                y = s.ln[i](x)
                q = s.q[i](y).view(B, T, s.h, s.dh).transpose(1, 2)
                k, v = s.kv[i](y).view(B, T, 2, s.kvh, s.dh).permute(2, 0, 3, 1, 4)
                k, v = k.repeat_interleave(s.h // s.kvh, 1), v.repeat_interleave(s.h // s.kvh, 1)
                if how == "alibi":
                    a = F.scaled_dot_product_attention(q, k, v, attn_mask=s.alibi)
                elif how == "band":
                    a = F.scaled_dot_product_attention(q, k, v, attn_mask=s.band)
                else:
                    a = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.1)
                x = x + s.o[i](a.transpose(1, 2).reshape(B, T, -1))
            return s.head(x.mean(1))

    class NeuralODE(nn.Module):
        """a neural ODE on [B, 16]: dy/dt = MLP([y, t]) (tanh, softplus), 6 unrolled RK4 steps of
        dt = 0.1 (many small matmuls and elementwise ops), a linear readout"""

        def __init__(s, d=16, hid=64, steps=6):
            super().__init__()
            s.steps = steps
            s.f1, s.f2, s.f3 = nn.Linear(d + 1, hid), nn.Linear(hid, hid), nn.Linear(hid, d)
            s.out = nn.Linear(d, 3)

        def f(s, t, y):
            tt = torch.full_like(y[:, :1], t)
            return s.f3(F.softplus(s.f2(torch.tanh(s.f1(torch.cat([y, tt], 1))))))

        def forward(s, y):
            dt = 0.1
            for i in range(s.steps):
                t = i * dt
                k1 = s.f(t, y)
                k2 = s.f(t + dt / 2, y + dt / 2 * k1)
                k3 = s.f(t + dt / 2, y + dt / 2 * k2)
                k4 = s.f(t + dt, y + dt * k3)
                y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            return s.out(y)

    class KANLayer(nn.Module):
        def __init__(s, fin, fout, grid=6, order=3, lo=-2.0, hi=2.0):
            super().__init__()
            s.order = order
            h = (hi - lo) / grid
            s.register_buffer("grid", torch.arange(-order, grid + order + 1).float() * h + lo)
            s.base = nn.Linear(fin, fout)
            s.coef = nn.Parameter(torch.randn(fout, fin, grid + order) * 0.1)
            s.lo, s.hi = lo, hi

        def forward(s, x):
            xc = x.clamp(s.lo, s.hi - 1e-4).unsqueeze(-1)  # [B, in, 1]
            g = s.grid
            b = ((xc >= g[:-1]) & (xc < g[1:])).to(x.dtype)
            for k in range(1, s.order + 1):
                b = (xc - g[: -(k + 1)]) / (g[k:-1] - g[: -(k + 1)]) * b[..., :-1] + (g[k + 1 :] - xc) / (
                    g[k + 1 :] - g[1:-k]
                ) * b[..., 1:]
            spline = torch.einsum("bik,oik->bo", b, s.coef)
            out = s.base(F.silu(x)) + spline
            return torch.where(x.abs().amax(1, keepdim=True) > 3.0, out * 0.5, out)

    class KAN(nn.Module):
        """a Kolmogorov-Arnold network 8 -> 32 -> 16 -> 4: cubic B-spline bases built by
        comparisons, clamp and the Cox-de Boor recursion, an einsum with the coefficients, a SiLU
        base path and a where on out-of-range rows"""

        def __init__(s):
            super().__init__()
            s.l1, s.l2, s.l3 = KANLayer(8, 32), KANLayer(32, 16), KANLayer(16, 4)

        def forward(s, x):
            return s.l3(s.l2(s.l1(x)))

    class UNet1d(nn.Module):
        """a 1-D audio U-Net on [B, 1, 2048]: strided Conv1d k=15 downs (16, 32, 64 channels),
        LeakyReLU, ConvTranspose1d k=4 s=2 ups, skip concats, tanh output"""

        def __init__(s):
            super().__init__()
            s.d1, s.d2, s.d3 = (
                nn.Conv1d(1, 16, 15, 2, 7),
                nn.Conv1d(16, 32, 15, 2, 7),
                nn.Conv1d(32, 64, 15, 2, 7),
            )
            s.mid = nn.Conv1d(64, 64, 7, padding=3)
            s.u3, s.u2, s.u1 = (
                nn.ConvTranspose1d(128, 32, 4, 2, 1),
                nn.ConvTranspose1d(64, 16, 4, 2, 1),
                nn.ConvTranspose1d(32, 16, 4, 2, 1),
            )
            s.out = nn.Conv1d(17, 1, 5, padding=2)

        def forward(s, x):
            a = F.leaky_relu(s.d1(x), 0.1)
            b = F.leaky_relu(s.d2(a), 0.1)
            c = F.leaky_relu(s.d3(b), 0.1)
            m = F.leaky_relu(s.mid(c), 0.1)
            u = F.leaky_relu(s.u3(torch.cat([m, c], 1)), 0.1)
            u = F.leaky_relu(s.u2(torch.cat([u, b], 1)), 0.1)
            u = F.leaky_relu(s.u1(torch.cat([u, a], 1)), 0.1)
            return torch.tanh(s.out(torch.cat([u, x], 1)))

    class LoRAOps(nn.Module):
        """a LoRA linear (frozen base + scaled low-rank B(A x)) on [B, 64], then flip, cumprod of
        sigmoids (as exp of a cumsum of logsigmoid: cumprod does not export), logsumexp, var, sort,
        F.normalize and cosine scores against a learned codebook"""

        def __init__(s, d=64, r=4, codes=16):
            super().__init__()
            s.base = nn.Linear(d, 128)
            s.A, s.B = nn.Parameter(torch.randn(r, d) * 0.1), nn.Parameter(torch.randn(128, r) * 0.1)
            s.codebook = nn.Parameter(torch.randn(codes, 32))
            s.mix = nn.Linear(128, 32)

        def forward(s, x):
            h = s.base(x) + 2.0 * (x @ s.A.t()) @ s.B.t()
            hf = torch.flip(h, [-1])
            # torch.cumprod exports with neither exporter (TorchScript: aten::cumprod unsupported at
            # opset 17; dynamo: no ONNX function for prims.prod), so the product of sigmoids is
            # written as the exp of a cumulative sum of log-sigmoids
            cp = torch.exp(torch.cumsum(F.logsigmoid(hf[:, :16]), -1))
            lse = torch.logsumexp(h, -1, keepdim=True)
            v = h.var(-1, keepdim=True)
            srt, _ = torch.sort(h[:, :32], -1, descending=True)
            z = F.normalize(s.mix(F.gelu(h - lse)), dim=-1)
            cos = z @ F.normalize(s.codebook, dim=-1).t()
            return cos, torch.cat([cp, srt, v], 1)

    return {
        c.__name__: c
        for c in (
            ShuffleNetV2,
            Inception,
            HRNet,
            Conformer,
            Transformer,
            RNNCells,
            FPN,
            SDPA,
            NeuralODE,
            KAN,
            UNet1d,
            LoRAOps,
        )
    }


def _floats(*shape: int, names=("x",)):
    def make(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {n: rng.standard_normal((batch, *shape)).astype(np.float32) for n in names}

    return make


def _seq2seq(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "src": rng.standard_normal((batch, 20, 32)).astype(np.float32),
        "tgt": rng.integers(0, 100, (batch, 12)).astype(np.int64),
    }


def _model(name: str, cls_name: str, make_inputs) -> ZooModel:
    return zoo_more._model(name, cls_name, make_inputs, _classes)


PROBE4: dict[str, ZooModel] = {
    m.name: m
    for m in [
        _model("shufflenet_v2", "ShuffleNetV2", _floats(3, 64, 64)),
        _model("inception", "Inception", _floats(3, 32, 32)),
        _model("hrnet", "HRNet", _floats(3, 32, 32)),
        _model("conformer", "Conformer", _floats(64, 80)),
        _model("transformer", "Transformer", _seq2seq),
        _model("rnn_cells", "RNNCells", _floats(24, 16)),
        _model("fpn_fcos", "FPN", _floats(3, 64, 64)),
        _model("sdpa_masks", "SDPA", _floats(32, 64)),
        _model("neural_ode", "NeuralODE", _floats(16)),
        _model("kan", "KAN", _floats(8)),
        _model("unet1d", "UNet1d", _floats(1, 2048)),
        _model("lora_ops", "LoRAOps", _floats(64)),
    ]
}
