"""A probe set of torch.nn models (probe7): model kinds the earlier sets did not cover: a
YOLOv5-style CSP backbone with SPPF, a SegFormer-style encoder, ConvNeXt-V2 blocks with GRN, a
CLIP-style text encoder, a T5-style encoder with bucketed relative position bias, gMLP, an ESRGAN
RRDB, an ALBERT-style shared-weight encoder, a Tacotron-style decoder stack with
location-sensitive attention, a DeiT with cls + distillation tokens, U^2-Net RSU blocks, a
Performer (FAVOR+) and a SimCLR encoder + projection head. Seeded random weights.
`bench/zoo.py --set probe7`; checked by tests/test_zoo_more.py.
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

    # -- YOLOv5-style CSP backbone -------------------------------------------------------
    class CBS(nn.Module):
        def __init__(s, i, o, k=1, st=1, p=None):
            super().__init__()
            s.conv = nn.Conv2d(i, o, k, st, k // 2 if p is None else p, bias=False)
            s.bn = nn.BatchNorm2d(o)

        def forward(s, x):
            return F.silu(s.bn(s.conv(x)))

    class Bottleneck(nn.Module):
        def __init__(s, c, short=True):
            super().__init__()
            s.c1, s.c2, s.short = CBS(c, c, 1), CBS(c, c, 3), short

        def forward(s, x):
            y = s.c2(s.c1(x))
            return x + y if s.short else y

    class C3(nn.Module):
        def __init__(s, i, o, n=1, short=True):
            super().__init__()
            h = o // 2
            s.cv1, s.cv2, s.cv3 = CBS(i, h), CBS(i, h), CBS(2 * h, o)
            s.m = nn.Sequential(*[Bottleneck(h, short) for _ in range(n)])

        def forward(s, x):
            return s.cv3(torch.cat([s.m(s.cv1(x)), s.cv2(x)], 1))

    class SPPF(nn.Module):
        def __init__(s, i, o):
            super().__init__()
            h = i // 2
            s.cv1, s.cv2 = CBS(i, h), CBS(4 * h, o)
            s.pool = nn.MaxPool2d(5, 1, 2)

        def forward(s, x):
            x = s.cv1(x)
            y1 = s.pool(x)
            y2 = s.pool(y1)
            return s.cv2(torch.cat([x, y1, y2, s.pool(y2)], 1))

    class YoloCSP(nn.Module):
        """YOLOv5n-ish backbone on 3x96x96: 6x6/2 stem, CBS 3x3/2 downsamples, C3 blocks
        (BN+SiLU, concat), SPPF (three chained 5x5/1 max pools) at 128ch 6x6; returns the
        P3, P4, P5 feature maps"""

        def __init__(s):
            super().__init__()
            s.stem = CBS(3, 16, 6, 2, 2)
            s.d1, s.c1 = CBS(16, 32, 3, 2), C3(32, 32, 1)
            s.d2, s.c2 = CBS(32, 64, 3, 2), C3(64, 64, 2)
            s.d3, s.c3 = CBS(64, 96, 3, 2), C3(96, 96, 2)
            s.d4, s.c4 = CBS(96, 128, 3, 2), C3(128, 128, 1)
            s.sppf = SPPF(128, 128)

        def forward(s, x):
            x = s.c1(s.d1(s.stem(x)))
            p3 = s.c2(s.d2(x))
            p4 = s.c3(s.d3(p3))
            p5 = s.sppf(s.c4(s.d4(p4)))
            return p3, p4, p5

    # -- SegFormer-style encoder ---------------------------------------------------------
    class EffAttn(nn.Module):
        def __init__(s, d, heads, sr):
            super().__init__()
            s.h, s.sr = heads, sr
            s.q, s.kv, s.o = nn.Linear(d, d), nn.Linear(d, 2 * d), nn.Linear(d, d)
            if sr > 1:
                s.red = nn.Conv2d(d, d, sr, sr)
                s.norm = nn.LayerNorm(d)

        def forward(s, x, hh, ww):
            b, n, d = x.shape
            q = s.q(x).view(b, n, s.h, d // s.h).transpose(1, 2)
            if s.sr > 1:
                y = x.transpose(1, 2).reshape(b, d, hh, ww)
                y = s.norm(s.red(y).flatten(2).transpose(1, 2))
            else:
                y = x
            k, v = s.kv(y).view(b, -1, 2, s.h, d // s.h).permute(2, 0, 3, 1, 4)
            a = torch.softmax(q @ k.transpose(-2, -1) * (d // s.h) ** -0.5, -1)
            return s.o((a @ v).transpose(1, 2).reshape(b, n, d))

    class MixFFN(nn.Module):
        def __init__(s, d, e=4):
            super().__init__()
            s.fc1, s.fc2 = nn.Linear(d, e * d), nn.Linear(e * d, d)
            s.dw = nn.Conv2d(e * d, e * d, 3, 1, 1, groups=e * d)

        def forward(s, x, hh, ww):
            b, n, _ = x.shape
            y = s.fc1(x)
            y = s.dw(y.transpose(1, 2).reshape(b, -1, hh, ww)).flatten(2).transpose(1, 2)
            return s.fc2(F.gelu(y))

    class SegBlock(nn.Module):
        def __init__(s, d, heads, sr):
            super().__init__()
            s.n1, s.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            s.attn, s.ffn = EffAttn(d, heads, sr), MixFFN(d)

        def forward(s, x, hh, ww):
            x = x + s.attn(s.n1(x), hh, ww)
            return x + s.ffn(s.n2(x), hh, ww)

    class SegFormer(nn.Module):
        """MiT-b0-ish on 3x64x64: overlapping patch embeds (7x7/4 then 3x3/2), 2 blocks per stage
        (efficient self-attention, strided-conv reduction sr=4 / 2 + LayerNorm; Mix-FFN with a
        depthwise 3x3), an all-MLP decoder (1x1 projections, bilinear upsample, concat, fuse)"""

        def __init__(s, dims=(32, 64), heads=(1, 2), srs=(4, 2), ncls=8):
            super().__init__()
            s.pe1 = nn.Conv2d(3, dims[0], 7, 4, 3)
            s.pe2 = nn.Conv2d(dims[0], dims[1], 3, 2, 1)
            s.ln_pe1, s.ln_pe2 = nn.LayerNorm(dims[0]), nn.LayerNorm(dims[1])
            s.b1 = nn.ModuleList([SegBlock(dims[0], heads[0], srs[0]) for _ in range(2)])
            s.b2 = nn.ModuleList([SegBlock(dims[1], heads[1], srs[1]) for _ in range(2)])
            s.ln1, s.ln2 = nn.LayerNorm(dims[0]), nn.LayerNorm(dims[1])
            s.p1, s.p2 = nn.Conv2d(dims[0], 64, 1), nn.Conv2d(dims[1], 64, 1)
            s.fuse = nn.Sequential(nn.Conv2d(128, 64, 1, bias=False), nn.BatchNorm2d(64),
                                   nn.ReLU(), nn.Conv2d(64, ncls, 1))

        def _stage(s, x, pe, lnpe, blocks, ln):
            x = pe(x)
            b, c, hh, ww = x.shape
            t = lnpe(x.flatten(2).transpose(1, 2))
            for blk in blocks:
                t = blk(t, hh, ww)
            return ln(t).transpose(1, 2).reshape(b, c, hh, ww)

        def forward(s, x):
            f1 = s._stage(x, s.pe1, s.ln_pe1, s.b1, s.ln1)
            f2 = s._stage(f1, s.pe2, s.ln_pe2, s.b2, s.ln2)
            u2 = F.interpolate(s.p2(f2), scale_factor=2.0, mode="bilinear", align_corners=False)
            return s.fuse(torch.cat([s.p1(f1), u2], 1))

    # -- ConvNeXt-V2 with GRN ------------------------------------------------------------
    class GRN(nn.Module):
        def __init__(s, d):
            super().__init__()
            s.gamma = nn.Parameter(torch.full((1, 1, 1, d), 0.3))
            s.beta = nn.Parameter(torch.full((1, 1, 1, d), 0.1))

        def forward(s, x):  # channels-last [B,H,W,C]
            gx = torch.norm(x, p=2, dim=(1, 2), keepdim=True)
            nx = gx / (gx.mean(dim=-1, keepdim=True) + 1e-6)
            return s.gamma * (x * nx) + s.beta + x

    class CNv2Block(nn.Module):
        def __init__(s, d):
            super().__init__()
            s.dw = nn.Conv2d(d, d, 7, 1, 3, groups=d)
            s.norm = nn.LayerNorm(d, eps=1e-6)
            s.fc1, s.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            s.grn = GRN(4 * d)

        def forward(s, x):
            y = s.norm(s.dw(x).permute(0, 2, 3, 1))
            y = s.fc2(s.grn(F.gelu(s.fc1(y))))
            return x + y.permute(0, 3, 1, 2)

    class LN2d(nn.Module):
        def __init__(s, d):
            super().__init__()
            s.ln = nn.LayerNorm(d, eps=1e-6)

        def forward(s, x):
            return s.ln(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

    class ConvNeXtV2(nn.Module):
        """ConvNeXt-V2-atto-ish on 3x32x32: 2x2/2 stem to 48ch 16x16, 2 blocks (dw 7x7,
        channels-last LayerNorm, 4x MLP with GELU and GRN), LN + 2x2/2 downsample to 96ch 8x8,
        2 blocks, global mean, LayerNorm, classifier"""

        def __init__(s):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, 48, 2, 2), LN2d(48))
            s.s1 = nn.Sequential(CNv2Block(48), CNv2Block(48))
            s.down = nn.Sequential(LN2d(48), nn.Conv2d(48, 96, 2, 2))
            s.s2 = nn.Sequential(CNv2Block(96), CNv2Block(96))
            s.norm = nn.LayerNorm(96)
            s.fc = nn.Linear(96, 10)

        def forward(s, x):
            x = s.s2(s.down(s.s1(s.stem(x))))
            return s.fc(s.norm(x.mean((2, 3))))

    # -- CLIP-style text encoder ---------------------------------------------------------
    class QuickGELU(nn.Module):
        def forward(s, x):
            return x * torch.sigmoid(1.702 * x)

    class ClipLayer(nn.Module):
        def __init__(s, d, h):
            super().__init__()
            s.ln1, s.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            s.attn = nn.MultiheadAttention(d, h, batch_first=True)
            s.mlp = nn.Sequential(nn.Linear(d, 4 * d), QuickGELU(), nn.Linear(4 * d, d))

        def forward(s, x, mask):
            y = s.ln1(x)
            x = x + s.attn(y, y, y, attn_mask=mask, need_weights=False)[0]
            return x + s.mlp(s.ln2(x))

    class ClipText(nn.Module):
        """CLIP text tower (small): token + learned position embedding over 32 tokens (vocab
        1000), 3 pre-LN layers with a causal mask (nn.MultiheadAttention), QuickGELU MLP,
        final LayerNorm, the EOS token's feature gathered by argmax over the ids, projection"""

        def __init__(s, vocab=1000, n=32, d=128, h=4, layers=3):
            super().__init__()
            s.tok = nn.Embedding(vocab, d)
            s.pos = nn.Parameter(torch.randn(n, d) * 0.02)
            s.layers = nn.ModuleList([ClipLayer(d, h) for _ in range(layers)])
            s.ln = nn.LayerNorm(d)
            s.proj = nn.Parameter(torch.randn(d, 64) * d ** -0.5)
            s.register_buffer("mask", torch.full((n, n), float("-inf")).triu(1))

        def forward(s, ids):
            x = s.tok(ids) + s.pos
            for layer in s.layers:
                x = layer(x, s.mask)
            x = s.ln(x)
            x = x[torch.arange(x.shape[0]), ids.argmax(-1)]
            return x @ s.proj

    # -- T5-style encoder with relative position bias ------------------------------------
    class T5Norm(nn.Module):
        def __init__(s, d):
            super().__init__()
            s.w = nn.Parameter(torch.ones(d))

        def forward(s, x):
            return s.w * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

    class T5Layer(nn.Module):
        def __init__(s, d, h, ff):
            super().__init__()
            s.h = h
            s.n1, s.n2 = T5Norm(d), T5Norm(d)
            s.qkv = nn.Linear(d, 3 * d, bias=False)
            s.o = nn.Linear(d, d, bias=False)
            s.wi, s.wo = nn.Linear(d, ff, bias=False), nn.Linear(ff, d, bias=False)

        def forward(s, x, bias):
            b, n, d = x.shape
            q, k, v = s.qkv(s.n1(x)).view(b, n, 3, s.h, d // s.h).permute(2, 0, 3, 1, 4)
            a = torch.softmax(q @ k.transpose(-2, -1) + bias, -1)  # T5: no 1/sqrt(d) scale
            x = x + s.o((a @ v).transpose(1, 2).reshape(b, n, d))
            return x + s.wo(F.relu(s.wi(s.n2(x))))

    class T5Encoder(nn.Module):
        """T5-small-ish encoder over 48 tokens (vocab 1000, d 128, 4 heads, ff 256, 3 layers):
        RMS norm, bidirectional bucketed relative position bias (32 buckets, max distance 128:
        abs, log, where, min, embedding lookup) computed in forward and shared by the layers"""

        def __init__(s, vocab=1000, d=128, h=4, ff=256, layers=3, nb=32, maxd=128):
            super().__init__()
            s.nb, s.maxd, s.h = nb, maxd, h
            s.emb = nn.Embedding(vocab, d)
            s.rel = nn.Embedding(nb, h)
            s.layers = nn.ModuleList([T5Layer(d, h, ff) for _ in range(layers)])
            s.norm = T5Norm(d)

        def bucket(s, rel):
            nb = s.nb // 2
            ret = (rel > 0).long() * nb
            rel = rel.abs()
            exact = nb // 2
            small = rel < exact
            large = exact + (torch.log(rel.float() / exact + 1e-9) / math.log(s.maxd / exact)
                             * (nb - exact)).long()
            large = torch.min(large, torch.full_like(large, nb - 1))
            return ret + torch.where(small, rel, large)

        def forward(s, ids):
            n = ids.shape[1]
            pos = torch.arange(n, device=ids.device)
            rel = pos[None, :] - pos[:, None]
            bias = s.rel(s.bucket(rel)).permute(2, 0, 1).unsqueeze(0)  # [1,h,n,n]
            x = s.emb(ids)
            for layer in s.layers:
                x = layer(x, bias)
            return s.norm(x)

    # -- gMLP ---------------------------------------------------------------------------
    class GMLPBlock(nn.Module):
        def __init__(s, d, ff, n):
            super().__init__()
            s.norm = nn.LayerNorm(d)
            s.fc1, s.fc2 = nn.Linear(d, ff), nn.Linear(ff // 2, d)
            s.snorm = nn.LayerNorm(ff // 2)
            s.spatial = nn.Linear(n, n)
            nn.init.zeros_(s.spatial.weight)
            with torch.no_grad():
                s.spatial.weight.add_(torch.randn(n, n) * 0.02)
            nn.init.ones_(s.spatial.bias)

        def forward(s, x):
            y = F.gelu(s.fc1(s.norm(x)))
            u, v = y.chunk(2, -1)
            v = s.spatial(s.snorm(v).transpose(1, 2)).transpose(1, 2)
            return x + s.fc2(u * v)

    class GMLP(nn.Module):
        """gMLP on [B,64,64] tokens: 4 blocks (LayerNorm, 64->256 GELU, spatial gating unit:
        split, LayerNorm, Linear(64,64) over the sequence axis, gate), mean pool, head"""

        def __init__(s, n=64, d=64, ff=256, depth=4):
            super().__init__()
            s.blocks = nn.Sequential(*[GMLPBlock(d, ff, n) for _ in range(depth)])
            s.norm = nn.LayerNorm(d)
            s.head = nn.Linear(d, 10)

        def forward(s, x):
            return s.head(s.norm(s.blocks(x)).mean(1))

    # -- ESRGAN RRDB --------------------------------------------------------------------
    class RDB(nn.Module):
        def __init__(s, nf, gc):
            super().__init__()
            s.convs = nn.ModuleList([nn.Conv2d(nf + i * gc, gc, 3, 1, 1) for i in range(4)])
            s.last = nn.Conv2d(nf + 4 * gc, nf, 3, 1, 1)

        def forward(s, x):
            feats = [x]
            for c in s.convs:
                feats.append(F.leaky_relu(c(torch.cat(feats, 1)), 0.2))
            return x + 0.2 * s.last(torch.cat(feats, 1))

    class RRDB(nn.Module):
        def __init__(s, nf, gc):
            super().__init__()
            s.rdbs = nn.Sequential(RDB(nf, gc), RDB(nf, gc), RDB(nf, gc))

        def forward(s, x):
            return x + 0.2 * s.rdbs(x)

    class ESRGAN(nn.Module):
        """ESRGAN-lite on 3x12x12: conv_first, one RRDB (3 dense blocks of 5 convs, nf 24,
        gc 12, LeakyReLU 0.2, residual scaling 0.2), trunk conv, 2x nearest upsample + conv,
        HR conv, conv_last"""

        def __init__(s, nf=24, gc=12):
            super().__init__()
            s.first = nn.Conv2d(3, nf, 3, 1, 1)
            s.body = RRDB(nf, gc)
            s.trunk = nn.Conv2d(nf, nf, 3, 1, 1)
            s.up = nn.Conv2d(nf, nf, 3, 1, 1)
            s.hr = nn.Conv2d(nf, nf, 3, 1, 1)
            s.last = nn.Conv2d(nf, 3, 3, 1, 1)

        def forward(s, x):
            f = s.first(x)
            f = f + s.trunk(s.body(f))
            f = F.leaky_relu(s.up(F.interpolate(f, scale_factor=2.0, mode="nearest")), 0.2)
            return s.last(F.leaky_relu(s.hr(f), 0.2))

    # -- ALBERT -------------------------------------------------------------------------
    class Albert(nn.Module):
        """ALBERT-ish over 32 tokens: factorized embeddings (vocab 1000 -> 64 -> 128), token
        type + position embeddings, LayerNorm, ONE nn.TransformerEncoderLayer (4 heads, ff 512,
        GELU, post-LN) applied 4 times with its weights shared, pooler tanh(Linear(cls))"""

        def __init__(s, vocab=1000, e=64, d=128, n=32, reps=4):
            super().__init__()
            s.reps = reps
            s.tok, s.pos = nn.Embedding(vocab, e), nn.Embedding(n, e)
            s.ln = nn.LayerNorm(e)
            s.proj = nn.Linear(e, d)
            s.layer = nn.TransformerEncoderLayer(d, 4, 512, 0.0, "gelu", batch_first=True)
            s.pool = nn.Linear(d, d)
            s.cls = nn.Linear(d, 2)

        def forward(s, ids):
            pos = torch.arange(ids.shape[1], device=ids.device)
            x = s.proj(s.ln(s.tok(ids) + s.pos(pos)))
            for _ in range(s.reps):
                x = s.layer(x)
            return s.cls(torch.tanh(s.pool(x[:, 0])))

    # -- Tacotron-style decoder ---------------------------------------------------------
    class Tacotron(nn.Module):
        """Tacotron-2-ish: encoder conv stack on memory [B,40,64] (3x Conv1d k5 + BN + ReLU) and
        a BiLSTM-free projection; decoder unrolled over 6 teacher-forced mel frames [B,6,20]:
        prenet (2 Linear + ReLU), LSTMCell(64+64 -> 128), location-sensitive attention (Conv1d
        k15 over [prev, cumulative] weights, tanh energies, softmax over memory), frame + stop
        projections"""

        def __init__(s, d=64, mel=20, r=128, att=64, steps=6):
            super().__init__()
            s.steps, s.r = steps, r
            s.enc = nn.Sequential(*[m for _ in range(3) for m in (
                nn.Conv1d(d, d, 5, 1, 2, bias=False), nn.BatchNorm1d(d), nn.ReLU())])
            s.prenet = nn.Sequential(nn.Linear(mel, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
            s.cell = nn.LSTMCell(64 + d, r)
            s.mem = nn.Linear(d, att, bias=False)
            s.query = nn.Linear(r, att, bias=False)
            s.loc_conv = nn.Conv1d(2, 16, 15, 1, 7, bias=False)
            s.loc = nn.Linear(16, att, bias=False)
            s.v = nn.Linear(att, 1, bias=False)
            s.frame = nn.Linear(r + d, mel)
            s.stop = nn.Linear(r + d, 1)

        def forward(s, memory, mels):
            b, t, _ = memory.shape
            memory = s.enc(memory.transpose(1, 2)).transpose(1, 2)
            pm = s.mem(memory)
            pre = s.prenet(mels)
            h = memory.new_zeros(b, s.r)
            c = memory.new_zeros(b, s.r)
            ctx = memory.new_zeros(b, memory.shape[2])
            w = memory.new_zeros(b, t)
            cum = memory.new_zeros(b, t)
            frames, stops = [], []
            for i in range(s.steps):
                h, c = s.cell(torch.cat([pre[:, i], ctx], -1), (h, c))
                lf = s.loc(s.loc_conv(torch.stack([w, cum], 1)).transpose(1, 2))
                e = s.v(torch.tanh(s.query(h).unsqueeze(1) + lf + pm)).squeeze(-1)
                w = torch.softmax(e, -1)
                cum = cum + w
                ctx = torch.bmm(w.unsqueeze(1), memory).squeeze(1)
                hc = torch.cat([h, ctx], -1)
                frames.append(s.frame(hc))
                stops.append(s.stop(hc))
            return torch.stack(frames, 1), torch.sigmoid(torch.cat(stops, 1))

    # -- DeiT ---------------------------------------------------------------------------
    class DeiT(nn.Module):
        """DeiT-tiny-ish on 3x32x32: 4x4 patches (64) + cls + distillation tokens, learned
        positions, 2 pre-LN nn.TransformerEncoderLayers (d 128, 4 heads, GELU), two heads
        averaged (inference)"""

        def __init__(s, d=128, depth=2):
            super().__init__()
            s.patch = nn.Conv2d(3, d, 4, 4)
            s.cls_tok = nn.Parameter(torch.randn(1, 1, d) * 0.02)
            s.dist_tok = nn.Parameter(torch.randn(1, 1, d) * 0.02)
            s.pos = nn.Parameter(torch.randn(1, 66, d) * 0.02)
            s.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(
                d, 4, 4 * d, 0.0, "gelu", batch_first=True, norm_first=True), depth,
                enable_nested_tensor=False)
            s.norm = nn.LayerNorm(d)
            s.head, s.head_dist = nn.Linear(d, 10), nn.Linear(d, 10)

        def forward(s, x):
            t = s.patch(x).flatten(2).transpose(1, 2)
            b = t.shape[0]
            t = torch.cat([s.cls_tok.expand(b, -1, -1), s.dist_tok.expand(b, -1, -1), t], 1)
            t = s.norm(s.enc(t + s.pos))
            return (s.head(t[:, 0]) + s.head_dist(t[:, 1])) / 2

    # -- U^2-Net RSU --------------------------------------------------------------------
    class REBNCONV(nn.Module):
        def __init__(s, i, o, d=1):
            super().__init__()
            s.conv = nn.Conv2d(i, o, 3, 1, d, dilation=d)
            s.bn = nn.BatchNorm2d(o)

        def forward(s, x):
            return F.relu(s.bn(s.conv(x)))

    def _up(x, ref):
        return F.interpolate(x, size=ref.shape[2:], mode="bilinear", align_corners=False)

    class RSU4(nn.Module):
        def __init__(s, i, m, o):
            super().__init__()
            s.cin = REBNCONV(i, o)
            s.e1, s.e2, s.e3 = REBNCONV(o, m), REBNCONV(m, m), REBNCONV(m, m)
            s.e4 = REBNCONV(m, m, 2)
            s.d3, s.d2, s.d1 = REBNCONV(2 * m, m), REBNCONV(2 * m, m), REBNCONV(2 * m, o)
            s.pool = nn.MaxPool2d(2, 2, ceil_mode=True)

        def forward(s, x):
            hx = s.cin(x)
            h1 = s.e1(hx)
            h2 = s.e2(s.pool(h1))
            h3 = s.e3(s.pool(h2))
            h4 = s.e4(h3)
            d3 = s.d3(torch.cat([h4, h3], 1))
            d2 = s.d2(torch.cat([_up(d3, h2), h2], 1))
            d1 = s.d1(torch.cat([_up(d2, h1), h1], 1))
            return d1 + hx

    class RSU4F(nn.Module):
        def __init__(s, i, m, o):
            super().__init__()
            s.cin = REBNCONV(i, o)
            s.e1, s.e2, s.e3, s.e4 = (REBNCONV(o, m, 1), REBNCONV(m, m, 2), REBNCONV(m, m, 4),
                                      REBNCONV(m, m, 8))
            s.d3, s.d2, s.d1 = REBNCONV(2 * m, m, 4), REBNCONV(2 * m, m, 2), REBNCONV(2 * m, o)

        def forward(s, x):
            hx = s.cin(x)
            h1 = s.e1(hx)
            h2 = s.e2(h1)
            h3 = s.e3(h2)
            h4 = s.e4(h3)
            d3 = s.d3(torch.cat([h4, h3], 1))
            d2 = s.d2(torch.cat([d3, h2], 1))
            return s.d1(torch.cat([d2, h1], 1)) + hx

    class U2Net(nn.Module):
        """U^2-Net-lite on 3x24x24: RSU-4 (mid 8, out 24) at 24x24, 2x2 max pool, RSU-4F
        (dilations 1,2,4,8, no pooling) at 12x12, bilinear upsample, concat, side outputs
        fused by a 1x1 conv, sigmoid"""

        def __init__(s):
            super().__init__()
            s.s1 = RSU4(3, 8, 24)
            s.s2 = RSU4F(24, 8, 24)
            s.pool = nn.MaxPool2d(2, 2, ceil_mode=True)
            s.d1 = RSU4(48, 8, 24)
            s.side1, s.side2 = nn.Conv2d(24, 1, 3, 1, 1), nn.Conv2d(24, 1, 3, 1, 1)
            s.out = nn.Conv2d(2, 1, 1)

        def forward(s, x):
            h1 = s.s1(x)
            h2 = s.s2(s.pool(h1))
            d1 = s.d1(torch.cat([_up(h2, h1), h1], 1))
            sides = torch.cat([s.side1(d1), _up(s.side2(h2), d1)], 1)
            return torch.sigmoid(s.out(sides))

    # -- Performer (FAVOR+) -------------------------------------------------------------
    class FavorLayer(nn.Module):
        def __init__(s, d, h, m):
            super().__init__()
            s.h, s.dh = h, d // h
            s.n1, s.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            s.qkv, s.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            s.register_buffer("proj", torch.randn(m, d // h))
            s.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

        def feat(s, x, is_query):
            x = x * s.dh ** -0.25
            xw = x @ s.proj.t()
            diag = (x * x).sum(-1, keepdim=True) / 2
            stab = (xw.amax(-1, keepdim=True) if is_query
                    else xw.amax((-1, -2), keepdim=True))
            return torch.exp(xw - diag - stab) / math.sqrt(s.proj.shape[0]) + 1e-4

        def forward(s, x):
            b, n, d = x.shape
            q, k, v = s.qkv(s.n1(x)).view(b, n, 3, s.h, s.dh).permute(2, 0, 3, 1, 4)
            q, k = s.feat(q, True), s.feat(k, False)
            kv = k.transpose(-2, -1) @ v                       # [b,h,m,dh]
            z = 1.0 / (q @ k.sum(2, keepdim=True).transpose(-2, -1))  # [b,h,n,1]
            y = (q @ kv) * z
            x = x + s.o(y.transpose(1, 2).reshape(b, n, d))
            return x + s.ff(s.n2(x))

    class Performer(nn.Module):
        """Performer on [B,128,64]: 2 layers, 4 heads of 16, FAVOR+ positive random features
        (m 32: x @ W^T, exp with the |x|^2/2 and max stabilizers), linear attention by
        k^T v and q (k-sum) normalization, GELU FF, mean pool, head"""

        def __init__(s, d=64, h=4, m=32):
            super().__init__()
            s.layers = nn.Sequential(FavorLayer(d, h, m), FavorLayer(d, h, m))
            s.head = nn.Linear(d, 10)

        def forward(s, x):
            return s.head(s.layers(x).mean(1))

    # -- SimCLR -------------------------------------------------------------------------
    class SimCLR(nn.Module):
        """SimCLR-ish on 3x32x32: small conv encoder (3 conv/BN/ReLU stages, stride 2 after the
        first) to 256-d by global average pooling; projection head Linear(256,512) + BatchNorm1d
        + ReLU + Linear(512,128) + BatchNorm1d(affine=False); L2-normalized embedding"""

        def __init__(s):
            super().__init__()
            def cbr(i, o, st):
                return [nn.Conv2d(i, o, 3, st, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU()]
            s.enc = nn.Sequential(*cbr(3, 32, 1), *cbr(32, 64, 2), *cbr(64, 128, 2),
                                  *cbr(128, 256, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten())
            s.head = nn.Sequential(nn.Linear(256, 512, bias=False), nn.BatchNorm1d(512),
                                   nn.ReLU(), nn.Linear(512, 128, bias=False),
                                   nn.BatchNorm1d(128, affine=False))

        def forward(s, x):
            h = s.enc(x)
            return h, F.normalize(s.head(h), dim=-1)

    return {c.__name__: c for c in (YoloCSP, SegFormer, ConvNeXtV2, ClipText, T5Encoder, GMLP,
                                     ESRGAN, Albert, Tacotron, DeiT, U2Net, Performer, SimCLR)}


_floats = zoo_more._floats
_ids = zoo_more._ids


def _taco_inputs(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"memory": rng.standard_normal((batch, 40, 64)).astype(np.float32),
            "mels": rng.standard_normal((batch, 6, 20)).astype(np.float32)}


def _clip_inputs(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    # ids < 999 with one EOS (id 999) per row at a random position, as a tokenizer gives
    ids = rng.integers(1, 999, (batch, 32)).astype(np.int64)
    ids[np.arange(batch), rng.integers(4, 32, batch)] = 999
    return {"ids": ids}


def _model(name: str, cls_name: str, make_inputs) -> ZooModel:
    return zoo_more._model(name, cls_name, make_inputs, _classes)


PROBE7: dict[str, ZooModel] = {
    m.name: m
    for m in [
        _model("yolov5_csp", "YoloCSP", _floats(3, 96, 96)),
        _model("segformer", "SegFormer", _floats(3, 64, 64)),
        _model("convnext_v2", "ConvNeXtV2", _floats(3, 32, 32)),
        _model("clip_text", "ClipText", _clip_inputs),
        _model("t5_encoder", "T5Encoder", _ids(48, 1000)),
        _model("gmlp", "GMLP", _floats(64, 64)),
        _model("esrgan_rrdb", "ESRGAN", _floats(3, 12, 12)),
        _model("albert", "Albert", _ids(32, 1000)),
        _model("tacotron_dec", "Tacotron", _taco_inputs),
        _model("deit", "DeiT", _floats(3, 32, 32)),
        _model("u2net_rsu", "U2Net", _floats(3, 24, 24)),
        _model("performer", "Performer", _floats(128, 64)),
        _model("simclr", "SimCLR", _floats(3, 32, 32)),
    ]
}
