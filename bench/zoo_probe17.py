"""A probe set of torch.nn models (probe17): kinds the earlier sets did not cover, written from
scratch as a user would, most of them stacks of stride-1 3x3 convolutions (and conv1d k=3) over
feature maps of mixed sizes: a pre-activation Wide ResNet (WRN-16-2, BN-ReLU before each 3x3,
1x1 projection of the pre-activated input) at 32x32, DnCNN (a 3x3 conv stack of 48 channels with
BN, predicting the noise, x - noise) at 40x40, VDSR (a bicubic x2 upsampling in the forward, a
3x3 conv stack, a global residual), U-Net++ (nested dense skips, bilinear align_corners
upsampling, deep supervision averaged over three heads) at 64x64, DarkNet-53's residual blocks
(1x1 reduce, 3x3 expand, LeakyReLU 0.1, stride-2 3x3 downsampling) at 128x128, a BiT-style
ResNet (GroupNorm, Weight Standardization of every conv's weight computed in the forward:
mean / var over the fan-in, F.conv2d of the standardized weight), FiLM (a GRU question encoder
whose last state gives per-block gamma / beta, coordinate maps from linspace cat'ed to the
features, BN without affine, a FiLM'd residual block stack), attention-based MIL (Ilse et al.'s
gated attention pooling over a bag of 8 28x28 instances folded into the batch, sigmoid
probability and the attention weights out), Wav2Letter (a conv1d stack of widths 11, 7, 3 and
1 over 40 mel bands, a stride-2 front, log_softmax over the characters), an LSTM autoencoder
(2-layer encoder, the last state repeated over time, a decoder LSTM, the reconstruction and a
per-sample anomaly score out), SimpleViT (patches by reshape / permute, LayerNorm-Linear-
LayerNorm patch embedding, 2-D sincos position embeddings computed in the forward from a
meshgrid, mean pooling), Linformer (keys and values projected along the sequence to 64 by
einsum, 256 tokens), TimesNet (1-D series reshaped into 2-D by fixed periods, the length
F.pad'ded up to a multiple, an Inception block of 1x1 / 3x3 / 5x5 conv2d, the periods'
outputs weighted by a softmax) and N-HiTS (max_pool1d with ceil_mode over the lookback, MLP
blocks, forecast coefficients linearly interpolated to the horizon, doubly residual stacks).
Seeded random weights. `bench/zoo.py --set probe17`.

TimesNet rounds the length up to a multiple of the period as (t + p - 1) // p * p: written as
-(-t // p) * p, the TorchScript-based exporter (torch 2.13) traces the floor division of the
negated shape into ONNX Div, which truncates (-96 // 20 -> -4), so the pad crops 16 steps and
the residual add's shapes differ (onnxruntime fails at run time, dlvm's import refuses it).
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

    # -- Wide ResNet (pre-activation) ------------------------------------------------------

    class WideBlock(nn.Module):
        def __init__(s, cin, cout, stride):
            super().__init__()
            s.bn1, s.conv1 = nn.BatchNorm2d(cin), nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            s.bn2, s.conv2 = nn.BatchNorm2d(cout), nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            s.short = None if stride == 1 and cin == cout else \
                nn.Conv2d(cin, cout, 1, stride, bias=False)

        def forward(s, x):
            o = F.relu(s.bn1(x))
            y = s.conv2(F.relu(s.bn2(s.conv1(o))))
            return y + (x if s.short is None else s.short(o))

    class WideResNet(nn.Module):
        """WRN-16-2: a 3x3 stem of 16, three groups of 2 pre-activation blocks at widths
        32, 64, 128 (strides 1, 2, 2) over 32x32, BN-ReLU, global pooling."""

        def __init__(s, depth=16, k=2, classes=10):
            super().__init__()
            n = (depth - 4) // 6
            widths = [16 * k, 32 * k, 64 * k]
            s.stem = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
            blocks, cin = [], 16
            for i, w in enumerate(widths):
                for j in range(n):
                    blocks.append(WideBlock(cin, w, 2 if i and not j else 1))
                    cin = w
            s.blocks = nn.Sequential(*blocks)
            s.bn, s.fc = nn.BatchNorm2d(cin), nn.Linear(cin, classes)

        def forward(s, x):                                   # [B, 3, 32, 32]
            y = F.relu(s.bn(s.blocks(s.stem(x))))
            return s.fc(F.adaptive_avg_pool2d(y, 1).flatten(1))

    # -- DnCNN -----------------------------------------------------------------------------

    class DnCNN(nn.Module):
        """DnCNN: a 3x3 conv + ReLU, 10 x (3x3 conv 48 -> 48 without bias, BN, ReLU), a 3x3 conv
        to 1 channel predicting the noise; the output is the input minus it; 40x40 patches."""

        def __init__(s, ch=48, mid=10):
            super().__init__()
            layers = [nn.Conv2d(1, ch, 3, padding=1), nn.ReLU(inplace=True)]
            for _ in range(mid):
                layers += [nn.Conv2d(ch, ch, 3, padding=1, bias=False), nn.BatchNorm2d(ch),
                           nn.ReLU(inplace=True)]
            layers.append(nn.Conv2d(ch, 1, 3, padding=1, bias=False))
            s.body = nn.Sequential(*layers)

        def forward(s, x):                                   # [B, 1, 40, 40]
            return x - s.body(x)

    # -- VDSR ------------------------------------------------------------------------------

    class VDSR(nn.Module):
        """VDSR: the low-resolution image bicubic-upsampled x2 in the forward (24x24 ->
        48x48), 8 3x3 convs of 32 channels with ReLU, the residual added back."""

        def __init__(s, ch=32, layers=8):
            super().__init__()
            body = [nn.Conv2d(1, ch, 3, padding=1), nn.ReLU(inplace=True)]
            for _ in range(layers - 2):
                body += [nn.Conv2d(ch, ch, 3, padding=1), nn.ReLU(inplace=True)]
            body.append(nn.Conv2d(ch, 1, 3, padding=1))
            s.body = nn.Sequential(*body)

        def forward(s, x):                                   # [B, 1, 24, 24]
            up = F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=False)
            return up + s.body(up)

    # -- U-Net++ ---------------------------------------------------------------------------

    class VGGBlock(nn.Module):
        def __init__(s, cin, mid, cout):
            super().__init__()
            s.body = nn.Sequential(nn.Conv2d(cin, mid, 3, padding=1), nn.BatchNorm2d(mid),
                                   nn.ReLU(inplace=True), nn.Conv2d(mid, cout, 3, padding=1),
                                   nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

        def forward(s, x):
            return s.body(x)

    class UNetPP(nn.Module):
        """U-Net++ (nested U-Net) of depth 4 at widths 16 to 128 over 64x64: every decoder node
        X[i][j] sees all of X[i][0..j-1] and the bilinear (align_corners) upsampled X[i+1][j-1],
        cat'ed; deep supervision: the three top nodes' 1x1 heads averaged."""

        def __init__(s, w=(16, 32, 64, 128), classes=2):
            super().__init__()
            s.pool = nn.MaxPool2d(2)
            s.enc = nn.ModuleList([VGGBlock(3 if i == 0 else w[i - 1], w[i], w[i]) for i in range(4)])
            s.nodes = nn.ModuleDict()
            for j in range(1, 4):
                for i in range(0, 4 - j):
                    s.nodes[f"{i}_{j}"] = VGGBlock(w[i] * j + w[i + 1], w[i], w[i])
            s.heads = nn.ModuleList([nn.Conv2d(w[0], classes, 1) for _ in range(3)])

        def forward(s, x):                                   # [B, 3, 64, 64]
            X = {}
            y = x
            for i in range(4):
                y = s.enc[i](y if i == 0 else s.pool(y))
                X[(i, 0)] = y
            for j in range(1, 4):
                for i in range(0, 4 - j):
                    up = F.interpolate(X[(i + 1, j - 1)], scale_factor=2, mode="bilinear",
                                       align_corners=True)
                    X[(i, j)] = s.nodes[f"{i}_{j}"](torch.cat([X[(i, k)] for k in range(j)] + [up], 1))
            return sum(h(X[(0, j + 1)]) for j, h in enumerate(s.heads)) / 3

    # -- DarkNet-53 ------------------------------------------------------------------------

    def cbl(cin, cout, k, stride=1):
        return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False),
                             nn.BatchNorm2d(cout), nn.LeakyReLU(0.1, inplace=True))

    class DarkRes(nn.Module):
        def __init__(s, c):
            super().__init__()
            s.a, s.b = cbl(c, c // 2, 1), cbl(c // 2, c, 3)

        def forward(s, x):
            return x + s.b(s.a(x))

    class DarkNet53(nn.Module):
        """DarkNet-53's shape at a quarter width and fewer blocks: a 3x3 stem of 16, stages of a
        stride-2 3x3 conv and residual blocks (1x1 reduce to half, 3x3 back, LeakyReLU 0.1)
        [1, 2, 2, 1] at 32 to 256 channels over 128x128, global pooling."""

        def __init__(s, depths=(1, 2, 2, 1), classes=100):
            super().__init__()
            layers, c = [cbl(3, 16, 3)], 16
            for n in depths:
                layers.append(cbl(c, 2 * c, 3, 2))
                c *= 2
                layers += [DarkRes(c) for _ in range(n)]
            s.body = nn.Sequential(*layers)
            s.fc = nn.Linear(c, classes)

        def forward(s, x):                                   # [B, 3, 128, 128]
            return s.fc(s.body(x).mean((2, 3)))

    # -- BiT: GroupNorm + Weight Standardization -------------------------------------------

    class StdConv2d(nn.Conv2d):
        def forward(s, x):
            w = s.weight
            m = w.mean(dim=(1, 2, 3), keepdim=True)
            v = w.var(dim=(1, 2, 3), keepdim=True, unbiased=False)
            w = (w - m) / torch.sqrt(v + 1e-5)
            return F.conv2d(x, w, s.bias, s.stride, s.padding, s.dilation, s.groups)

    class BiTBlock(nn.Module):
        def __init__(s, cin, cout, stride):
            super().__init__()
            s.gn1, s.conv1 = nn.GroupNorm(8, cin), StdConv2d(cin, cout, 3, stride, 1, bias=False)
            s.gn2, s.conv2 = nn.GroupNorm(8, cout), StdConv2d(cout, cout, 3, 1, 1, bias=False)
            s.short = None if stride == 1 and cin == cout else \
                StdConv2d(cin, cout, 1, stride, bias=False)

        def forward(s, x):
            o = F.relu(s.gn1(x))
            y = s.conv2(F.relu(s.gn2(s.conv1(o))))
            return y + (x if s.short is None else s.short(o))

    class BiTResNet(nn.Module):
        """a BiT-style pre-activation ResNet: every conv a StdConv2d (its weight standardized
        over the fan-in in the forward, then F.conv2d), GroupNorm(8) in place of BN; a 3x3
        stride-2 stem, blocks at 32, 64, 128 channels over 64x64, GN-ReLU, global pooling."""

        def __init__(s, widths=(32, 64, 128), classes=10):
            super().__init__()
            s.stem = StdConv2d(3, widths[0], 3, 2, 1, bias=False)
            blocks, cin = [], widths[0]
            for i, w in enumerate(widths):
                blocks += [BiTBlock(cin, w, 2 if i else 1), BiTBlock(w, w, 1)]
                cin = w
            s.blocks = nn.Sequential(*blocks)
            s.gn, s.fc = nn.GroupNorm(8, cin), nn.Linear(cin, classes)

        def forward(s, x):                                   # [B, 3, 64, 64]
            y = F.relu(s.gn(s.blocks(s.stem(x))))
            return s.fc(y.mean((2, 3)))

    # -- FiLM ------------------------------------------------------------------------------

    class FiLMBlock(nn.Module):
        def __init__(s, c):
            super().__init__()
            s.c1 = nn.Conv2d(c + 2, c, 1)
            s.c2 = nn.Conv2d(c, c, 3, padding=1)
            s.bn = nn.BatchNorm2d(c, affine=False)

        def forward(s, x, coords, gamma, beta):
            x = F.relu(s.c1(torch.cat([x, coords], 1)))
            y = s.bn(s.c2(x))
            y = F.relu(gamma[:, :, None, None] * y + beta[:, :, None, None])
            return x + y

    class FiLM(nn.Module):
        """FiLM (CLEVR-style): a GRU over the 12 question tokens, its last state projected to a
        gamma and a beta per residual block; the image through a 2-conv stride-2 stem to 16x16,
        coordinate maps (linspace, meshgrid) cat'ed before each block's 1x1 conv, a 3x3 conv,
        BN without affine, the FiLM modulation, ReLU, residual; 4 blocks, a 1x1 classifier
        conv, global max pool, an MLP."""

        def __init__(s, vocab=100, c=64, blocks=4, answers=28):
            super().__init__()
            s.c, s.n = c, blocks
            s.emb = nn.Embedding(vocab, 64)
            s.gru = nn.GRU(64, 128, batch_first=True)
            s.film = nn.Linear(128, 2 * c * blocks)
            s.stem = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1), nn.BatchNorm2d(c), nn.ReLU(),
                                   nn.Conv2d(c, c, 3, 2, 1), nn.BatchNorm2d(c), nn.ReLU())
            s.blocks = nn.ModuleList([FiLMBlock(c) for _ in range(blocks)])
            s.cls = nn.Sequential(nn.Conv2d(c + 2, 128, 1), nn.BatchNorm2d(128), nn.ReLU())
            s.mlp = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, answers))

        def forward(s, x, q):                                # [B, 3, 64, 64], [B, 12] int64
            _, h = s.gru(s.emb(q))
            p = s.film(h[0]).view(-1, s.n, 2, s.c)
            y = s.stem(x)
            b, _, hh, ww = y.shape
            lin_h = torch.linspace(-1, 1, hh, device=x.device)
            lin_w = torch.linspace(-1, 1, ww, device=x.device)
            gy, gx = torch.meshgrid(lin_h, lin_w, indexing="ij")
            coords = torch.stack([gx, gy])[None].expand(b, -1, -1, -1)
            for i, blk in enumerate(s.blocks):
                y = blk(y, coords, 1 + p[:, i, 0], p[:, i, 1])
            y = s.cls(torch.cat([y, coords], 1)).amax((2, 3))
            return s.mlp(y)

    # -- attention MIL ---------------------------------------------------------------------

    class GatedMIL(nn.Module):
        """attention-based deep MIL (Ilse et al., gated): a bag of 8 28x28 instances folded into
        the batch, a small 3x3 conv extractor (16, 16, pool, 32, pool), a 256-d embedding,
        gated attention w . (tanh(V h) * sigmoid(U h)), softmax over the instances, the
        weighted sum, a sigmoid bag probability; the probability and the weights out."""

        def __init__(s, d=256, att=128):
            super().__init__()
            s.feat = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                                   nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                   nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
            s.emb = nn.Sequential(nn.Linear(32 * 7 * 7, d), nn.ReLU())
            s.V, s.U, s.w = nn.Linear(d, att), nn.Linear(d, att), nn.Linear(att, 1)
            s.cls = nn.Linear(d, 1)

        def forward(s, x):                                   # [B, 8, 1, 28, 28]
            b, n = x.shape[:2]
            h = s.emb(s.feat(x.flatten(0, 1)).flatten(1)).view(b, n, -1)
            a = s.w(torch.tanh(s.V(h)) * torch.sigmoid(s.U(h)))                     # [B, n, 1]
            a = torch.softmax(a.transpose(1, 2), dim=-1)                            # [B, 1, n]
            z = torch.bmm(a, h).squeeze(1)
            return torch.sigmoid(s.cls(z)), a.squeeze(1)

    # -- Wav2Letter ------------------------------------------------------------------------

    class Wav2Letter(nn.Module):
        """Wav2Letter's conv1d stack at half width: a width-11 stride-2 front over 40 mel bands
        x 128 frames, 4 width-7 and 2 width-3 convs of 128 channels, a width-11 conv to 256,
        a 1x1 conv, the 1x1 classifier over 29 characters, ReLU between, log_softmax."""

        def __init__(s, mels=40, ch=128, chars=29):
            super().__init__()
            layers = [nn.Conv1d(mels, ch, 11, 2, 5), nn.ReLU()]
            for k in (7, 7, 7, 7, 3, 3):
                layers += [nn.Conv1d(ch, ch, k, 1, k // 2), nn.ReLU()]
            layers += [nn.Conv1d(ch, 2 * ch, 11, 1, 5), nn.ReLU(),
                       nn.Conv1d(2 * ch, 2 * ch, 1), nn.ReLU(), nn.Conv1d(2 * ch, chars, 1)]
            s.body = nn.Sequential(*layers)

        def forward(s, x):                                   # [B, 40, 128]
            return F.log_softmax(s.body(x), dim=1)

    # -- LSTM autoencoder ------------------------------------------------------------------

    class LSTMAutoencoder(nn.Module):
        """an LSTM autoencoder for time-series anomaly detection: a 2-layer LSTM encoder over
        30 steps of 8 features, its last layer's final state repeated over the 30 steps, a
        decoder LSTM, a linear output; the reconstruction and the per-sample MSE out."""

        def __init__(s, feats=8, hidden=64, latent=32):
            super().__init__()
            s.enc = nn.LSTM(feats, hidden, num_layers=2, batch_first=True)
            s.to_z = nn.Linear(hidden, latent)
            s.dec = nn.LSTM(latent, hidden, batch_first=True)
            s.out = nn.Linear(hidden, feats)

        def forward(s, x):                                   # [B, 30, 8]
            _, (h, _) = s.enc(x)
            z = torch.tanh(s.to_z(h[-1]))
            y, _ = s.dec(z.unsqueeze(1).repeat(1, x.shape[1], 1))
            rec = s.out(y)
            return rec, ((rec - x) ** 2).mean((1, 2))

    # -- SimpleViT -------------------------------------------------------------------------

    def posemb_sincos_2d(h, w, dim, temperature=10000.0, dtype=torch.float32):
        y, x = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
        omega = torch.arange(dim // 4) / (dim // 4 - 1)
        omega = 1.0 / (temperature ** omega)
        y = y.flatten()[:, None] * omega[None, :]
        x = x.flatten()[:, None] * omega[None, :]
        return torch.cat((x.sin(), x.cos(), y.sin(), y.cos()), dim=1).type(dtype)

    class SVAttention(nn.Module):
        def __init__(s, d, heads):
            super().__init__()
            s.h, s.scale = heads, (d // heads) ** -0.5
            s.norm = nn.LayerNorm(d)
            s.qkv, s.o = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)

        def forward(s, x):
            b, n, d = x.shape
            q, k, v = (t.reshape(b, n, s.h, -1).transpose(1, 2) for t in s.qkv(s.norm(x)).chunk(3, -1))
            a = (torch.matmul(q, k.transpose(-1, -2)) * s.scale).softmax(-1)
            return s.o(torch.matmul(a, v).transpose(1, 2).reshape(b, n, d))

    class SimpleViT(nn.Module):
        """SimpleViT (Beyer et al.): 8x8 patches of a 64x64 image by reshape / permute, a
        LayerNorm-Linear-LayerNorm patch embedding, fixed 2-D sincos position embeddings built
        in the forward (meshgrid, arange, sin / cos), 4 pre-LN blocks, mean pooling."""

        def __init__(s, patch=8, d=128, depth=4, heads=4, classes=100):
            super().__init__()
            s.p = patch
            pd = 3 * patch * patch
            s.embed = nn.Sequential(nn.LayerNorm(pd), nn.Linear(pd, d), nn.LayerNorm(d))
            s.att = nn.ModuleList([SVAttention(d, heads) for _ in range(depth)])
            s.ff = nn.ModuleList([nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.GELU(),
                                                nn.Linear(2 * d, d)) for _ in range(depth)])
            s.norm, s.head = nn.LayerNorm(d), nn.Linear(d, classes)

        def forward(s, img):                                 # [B, 3, 64, 64]
            b, c, hh, ww = img.shape
            p = s.p
            x = img.reshape(b, c, hh // p, p, ww // p, p).permute(0, 2, 4, 3, 5, 1)
            x = s.embed(x.reshape(b, (hh // p) * (ww // p), p * p * c))
            x = x + posemb_sincos_2d(hh // p, ww // p, x.shape[-1]).to(x.device)
            for att, ff in zip(s.att, s.ff):
                x = x + att(x)
                x = x + ff(x)
            return s.head(s.norm(x.mean(1)))

    # -- Linformer -------------------------------------------------------------------------

    class LinformerLayer(nn.Module):
        def __init__(s, d, heads, seq, k):
            super().__init__()
            s.h, s.dh = heads, d // heads
            s.qkv, s.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            s.E = nn.Parameter(torch.randn(seq, k) / math.sqrt(k))
            s.Fp = nn.Parameter(torch.randn(seq, k) / math.sqrt(k))
            s.ln1, s.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            s.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(s, x):
            b, n, d = x.shape
            q, k, v = s.qkv(s.ln1(x)).chunk(3, -1)
            k = torch.einsum("bnd,nk->bkd", k, s.E)          # project along the sequence
            v = torch.einsum("bnd,nk->bkd", v, s.Fp)
            q = q.view(b, n, s.h, s.dh).transpose(1, 2)
            k = k.view(b, -1, s.h, s.dh).transpose(1, 2)
            v = v.view(b, -1, s.h, s.dh).transpose(1, 2)
            a = (q @ k.transpose(-1, -2) / math.sqrt(s.dh)).softmax(-1)
            x = x + s.o((a @ v).transpose(1, 2).reshape(b, n, d))
            return x + s.ff(s.ln2(x))

    class Linformer(nn.Module):
        """Linformer: keys and values projected along the sequence from 256 tokens to 64 by
        learned [n, k] matrices (einsum), then ordinary multi-head attention; 2 pre-LN layers,
        d 128, mean pooling and a classifier."""

        def __init__(s, vocab=2000, d=128, heads=4, seq=256, k=64, layers=2, classes=5):
            super().__init__()
            s.emb, s.pos = nn.Embedding(vocab, d), nn.Parameter(0.02 * torch.randn(seq, d))
            s.layers = nn.Sequential(*[LinformerLayer(d, heads, seq, k) for _ in range(layers)])
            s.ln, s.fc = nn.LayerNorm(d), nn.Linear(d, classes)

        def forward(s, ids):                                 # [B, 256] int64
            return s.fc(s.ln(s.layers(s.emb(ids) + s.pos).mean(1)))

    # -- TimesNet --------------------------------------------------------------------------

    class Inception(nn.Module):
        def __init__(s, cin, cout, kernels=(1, 3, 5)):
            super().__init__()
            s.convs = nn.ModuleList([nn.Conv2d(cin, cout, k, padding=k // 2) for k in kernels])

        def forward(s, x):
            return torch.stack([c(x) for c in s.convs], -1).mean(-1)

    class TimesBlock(nn.Module):
        def __init__(s, d, periods, ff):
            super().__init__()
            s.periods = periods
            s.conv = nn.Sequential(Inception(d, ff), nn.GELU(), Inception(ff, d))
            s.w = nn.Parameter(torch.randn(len(periods)))

        def forward(s, x):                                   # [B, T, d]
            b, t, d = x.shape
            outs = []
            for p in s.periods:
                length = (t + p - 1) // p * p    # (-(-t // p) * p traces to a truncating Div)
                y = F.pad(x, (0, 0, 0, length - t)) if length != t else x
                y = y.reshape(b, length // p, p, d).permute(0, 3, 1, 2)              # [B, d, T/p, p]
                y = s.conv(y).permute(0, 2, 3, 1).reshape(b, length, d)
                outs.append(y[:, :t])
            w = torch.softmax(s.w, 0)
            return x + sum(w[i] * o for i, o in enumerate(outs))

    class TimesNet(nn.Module):
        """TimesNet without the FFT: the series (96 steps, 7 variables) embedded, each block
        folding it into 2-D by the periods 24, 20 and 7 (the length F.pad'ded up to a multiple),
        an Inception block of 1x1, 3x3 and 5x5 conv2d (averaged), GELU, another, unfolded and
        cut back, the periods' outputs weighted by a softmax, residual; 2 blocks, LayerNorm, a
        flattened classifier."""

        def __init__(s, feats=7, d=32, ff=32, layers=2, t=96, classes=10):
            super().__init__()
            s.emb = nn.Linear(feats, d)
            s.pos = nn.Parameter(0.02 * torch.randn(t, d))
            s.blocks = nn.ModuleList([TimesBlock(d, (24, 20, 7), ff) for _ in range(layers)])
            s.ln = nn.LayerNorm(d)
            s.fc = nn.Linear(t * d, classes)

        def forward(s, x):                                   # [B, 96, 7]
            y = s.emb(x) + s.pos
            for blk in s.blocks:
                y = s.ln(blk(y))
            return s.fc(F.gelu(y).flatten(1))

    # -- N-HiTS ----------------------------------------------------------------------------

    class NHiTSBlock(nn.Module):
        def __init__(s, lookback, horizon, pool, coefs, hidden=256):
            super().__init__()
            s.pool, s.coefs, s.horizon = pool, coefs, horizon
            n_in = -(-lookback // pool)
            s.mlp = nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                                  nn.ReLU())
            s.back, s.fore = nn.Linear(hidden, lookback), nn.Linear(hidden, coefs)

        def forward(s, x):                                   # [B, lookback]
            y = F.max_pool1d(x[:, None], s.pool, s.pool, ceil_mode=True)[:, 0]
            h = s.mlp(y)
            f = F.interpolate(s.fore(h)[:, None], size=s.horizon, mode="linear",
                              align_corners=False)[:, 0]
            return s.back(h), f

    class NHiTS(nn.Module):
        """N-HiTS: 3 stacks of 2 blocks over a 96-step lookback, each block max-pooling the
        input (kernels 8, 5, 1, ceil_mode), an MLP, a backcast and 2, 6 or 24 forecast
        coefficients linearly interpolated to the 24-step horizon; doubly residual (the
        backcast subtracted, the forecasts summed)."""

        def __init__(s, lookback=96, horizon=24):
            super().__init__()
            s.blocks = nn.ModuleList([NHiTSBlock(lookback, horizon, p, c)
                                      for p, c in ((8, 2), (8, 2), (5, 6), (5, 6), (1, 24), (1, 24))])

        def forward(s, x):                                   # [B, 96]
            f = 0
            for blk in s.blocks:
                b, fc = blk(x)
                x = x - b
                f = f + fc
            return f

    return {c.__name__: c for c in (WideResNet, DnCNN, VDSR, UNetPP, DarkNet53, BiTResNet, FiLM,
                                     GatedMIL, Wav2Letter, LSTMAutoencoder, SimpleViT, Linformer,
                                     TimesNet, NHiTS)}


# the tests' tolerance per model: atol, rtol
TOLERANCES: dict[str, tuple[float, float]] = {}

_floats = zoo_more._floats
_ids = zoo_more._ids


def _film_inputs(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"x": rng.standard_normal((batch, 3, 64, 64)).astype(np.float32),
            "q": rng.integers(0, 100, (batch, 12)).astype(np.int64)}


def _model(name: str, cls_name: str, make_inputs) -> ZooModel:
    return zoo_more._model(name, cls_name, make_inputs, _classes)


PROBE17: dict[str, ZooModel] = {
    m.name: m
    for m in [
        _model("wide_resnet", "WideResNet", _floats(3, 32, 32)),
        _model("dncnn", "DnCNN", _floats(1, 40, 40)),
        _model("vdsr_bicubic", "VDSR", _floats(1, 24, 24)),
        _model("unet_pp", "UNetPP", _floats(3, 64, 64)),
        _model("darknet53", "DarkNet53", _floats(3, 128, 128)),
        _model("bit_ws", "BiTResNet", _floats(3, 64, 64)),
        _model("film_clevr", "FiLM", _film_inputs),
        _model("gated_mil", "GatedMIL", _floats(8, 1, 28, 28)),
        _model("wav2letter", "Wav2Letter", _floats(40, 128)),
        _model("lstm_autoencoder", "LSTMAutoencoder", _floats(30, 8)),
        _model("simple_vit", "SimpleViT", _floats(3, 64, 64)),
        _model("linformer", "Linformer", _ids(256, 2000)),
        _model("timesnet", "TimesNet", _floats(96, 7)),
        _model("nhits", "NHiTS", _floats(96)),
    ]
}
