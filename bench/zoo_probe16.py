"""A probe set of torch.nn models (probe16): kinds the earlier sets did not cover, written from
scratch as a user would: a BERT encoder (word, position and token-type embeddings, the token
types found by a cumsum over [SEP] ids, a padding mask from the ids, post-LN layers, a tanh
pooler over [CLS]) at 128 tokens, a ResNet-50-style bottleneck stack (1x1-3x3-1x1 with
expansion 4, projection shortcuts) at 112x112, a GPT-2 decoder (Conv1D layers as torch.addmm,
a causal mask from torch.triu built in the forward, the tanh GELU written out, tied head,
log_softmax), a Point Transformer (vector attention over k nearest neighbours found by topk of
squared distances, neighbours gathered by flat indices, a relative position MLP), WaveRNN's
input side (mu-law companding and quantization of the samples to int64, an embedding, a GRU,
a 256-way log_softmax), a Temporal Shift Module CNN (channel folds shifted along time by slice
assignment into zeros, by cat, and by torch.roll), Transformer-XL's relative attention (the
pad-and-reshape relative shift, global content and position biases, sinusoids of reversed
positions), a CoAtNet-style hybrid (MBConv stages, a hand-written channels-first LayerNorm by
mean / var over dim 1, relative-position attention stages), Mixture-of-Depths token routing
(router topk, indices sorted back into order, gather, a causal block over the chosen tokens,
scatter_add of the gated update), ESPNet's ESP modules (a reduce, 5 parallel dilated 3x3 convs
at dilations 1 to 16, hierarchical feature fusion by running sums, cat, PReLU, a bilinear
upsampled segmentation map), HaloNet's blocked local attention (query blocks, key / value
windows with a halo taken by F.unfold), a character-aware language model (char embeddings,
convs of widths 1 to 5 with tanh and max over time, highway layers, an LSTM), NODE's oblivious
decision trees (feature choice by softmax, einsums, sparsemoid bins, a product over depth),
S4D (a diagonal state-space kernel from complex arithmetic written in real and imaginary parts,
applied as a depthwise conv1d whose weights are computed in the graph and flipped), a
Monodepth2-style decoder (reflection padding, ELU, nearest upsampling, skips, four disparity
outputs) and a Pointer Network (an LSTM encoder, an LSTMCell decoder unrolled over the inputs,
masked additive attention, argmax, one_hot mask updates, the next input gathered; log-probs and
int64 indices out). Seeded random weights. `bench/zoo.py --set probe16`.

Where a torch exporter cannot write one of these (torch 2.13), the model is checked through the
other: the TorchScript-based exporter fails on nn.LSTMCell with a dynamic batch (its gates'
aten::unsafe_chunk of an unknown dimension size: the Pointer Network). Every other model exports
with both.
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

    # -- BERT ------------------------------------------------------------------------------

    class BertLayer(nn.Module):
        def __init__(s, d, heads, ff):
            super().__init__()
            s.h, s.dh = heads, d // heads
            s.q, s.k, s.v, s.o = (nn.Linear(d, d) for _ in range(4))
            s.ln1, s.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
            s.fc1, s.fc2 = nn.Linear(d, ff), nn.Linear(ff, d)

        def forward(s, x, bias):                             # bias [B, 1, 1, T]
            b, t, d = x.shape
            q, k, v = (f(x).view(b, t, s.h, s.dh).permute(0, 2, 1, 3) for f in (s.q, s.k, s.v))
            a = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(s.dh) + bias
            y = torch.matmul(a.softmax(-1), v).permute(0, 2, 1, 3).reshape(b, t, d)
            x = s.ln1(x + s.o(y))
            return s.ln2(x + s.fc2(F.gelu(s.fc1(x))))

    class Bert(nn.Module):
        """a BERT encoder: word + learned position + token-type embeddings (types 1 after the
        first [SEP] id 3, found by a cumsum), LayerNorm, an extended attention mask
        (1 - mask) * -10000 from the padding ids, 2 post-LN layers, the tanh pooler over the
        [CLS] token and a classifier; 128 tokens."""

        def __init__(s, vocab=3000, d=128, heads=4, ff=512, layers=2, seq=128, classes=3):
            super().__init__()
            s.word = nn.Embedding(vocab, d, padding_idx=0)
            s.pos, s.types = nn.Embedding(seq, d), nn.Embedding(2, d)
            s.ln = nn.LayerNorm(d, eps=1e-12)
            s.layers = nn.ModuleList([BertLayer(d, heads, ff) for _ in range(layers)])
            s.pool, s.cls = nn.Linear(d, d), nn.Linear(d, classes)

        def forward(s, ids):                                 # [B, T] int64
            t = ids.shape[1]
            sep = (ids == 3).long()
            types = (sep.cumsum(1) - sep).clamp(max=1)
            pos = torch.arange(t, device=ids.device)
            x = s.ln(s.word(ids) + s.pos(pos)[None] + s.types(types))
            mask = (ids != 0).to(x.dtype)
            bias = (1.0 - mask[:, None, None, :]) * -10000.0
            for layer in s.layers:
                x = layer(x, bias)
            return s.cls(torch.tanh(s.pool(x[:, 0])))

    # -- ResNet-50 bottlenecks -------------------------------------------------------------

    class Bottleneck(nn.Module):
        def __init__(s, cin, width, stride):
            super().__init__()
            out = 4 * width
            s.body = nn.Sequential(
                nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width),
                nn.ReLU(inplace=True), nn.Conv2d(width, out, 1, bias=False), nn.BatchNorm2d(out))
            s.down = None
            if stride != 1 or cin != out:
                s.down = nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False),
                                       nn.BatchNorm2d(out))

        def forward(s, x):
            idt = x if s.down is None else s.down(x)
            return F.relu(s.body(x) + idt)

    class Bottleneck50(nn.Module):
        """ResNet-50's shape at a quarter width: a 7x7 stride-2 stem, a 3x3 stride-2 max pool,
        bottleneck blocks (1x1 reduce, 3x3 at the stride, 1x1 expand x4, projection shortcut
        where the shape changes) [2, 2, 2] at widths 16, 32, 64, global pooling; 112x112."""

        def __init__(s, widths=(16, 32, 64), depths=(2, 2, 2), classes=100):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, 32, 7, 2, 3, bias=False), nn.BatchNorm2d(32),
                                   nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1))
            layers, cin = [], 32
            for i, (w, n) in enumerate(zip(widths, depths)):
                for j in range(n):
                    layers.append(Bottleneck(cin, w, 2 if i and not j else 1))
                    cin = 4 * w
            s.layers = nn.Sequential(*layers)
            s.fc = nn.Linear(cin, classes)

        def forward(s, x):                                   # [B, 3, 112, 112]
            x = s.layers(s.stem(x))
            return s.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    # -- GPT-2 -----------------------------------------------------------------------------

    class Conv1D(nn.Module):                                 # GPT-2's transposed linear
        def __init__(s, nin, nout):
            super().__init__()
            s.weight = nn.Parameter(0.02 * torch.randn(nin, nout))
            s.bias = nn.Parameter(0.02 * torch.randn(nout))

        def forward(s, x):
            shape = x.shape[:-1] + (s.weight.shape[1],)
            return torch.addmm(s.bias, x.reshape(-1, x.shape[-1]), s.weight).view(shape)

    def gelu_new(x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))

    class GPT2Block(nn.Module):
        def __init__(s, d, heads):
            super().__init__()
            s.h, s.dh = heads, d // heads
            s.ln1, s.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            s.c_attn, s.c_proj = Conv1D(d, 3 * d), Conv1D(d, d)
            s.c_fc, s.c_out = Conv1D(d, 4 * d), Conv1D(4 * d, d)

        def forward(s, x):
            b, t, d = x.shape
            q, k, v = s.c_attn(s.ln1(x)).split(d, 2)
            q, k, v = (z.view(b, t, s.h, s.dh).transpose(1, 2) for z in (q, k, v))
            a = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(s.dh)
            causal = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=1)
            a = a.masked_fill(causal, torch.finfo(a.dtype).min).softmax(-1)
            x = x + s.c_proj(torch.matmul(a, v).transpose(1, 2).reshape(b, t, d))
            return x + s.c_out(gelu_new(s.c_fc(s.ln2(x))))

    class GPT2(nn.Module):
        """a GPT-2 decoder: token and learned position embeddings, pre-LN blocks whose linear
        layers are Conv1D (torch.addmm on a 2-D view), a causal mask from torch.triu of a ones
        matrix built in the forward and masked_fill with finfo.min, the tanh GELU written out,
        the head tied to the token embedding, log_softmax; 2 layers, 32 tokens."""

        def __init__(s, vocab=1000, d=128, heads=4, layers=2, seq=64):
            super().__init__()
            s.wte, s.wpe = nn.Embedding(vocab, d), nn.Embedding(seq, d)
            s.blocks = nn.ModuleList([GPT2Block(d, heads) for _ in range(layers)])
            s.ln_f = nn.LayerNorm(d)

        def forward(s, ids):                                 # [B, T] int64
            pos = torch.arange(0, ids.shape[1], dtype=torch.long, device=ids.device)
            x = s.wte(ids) + s.wpe(pos).unsqueeze(0)
            for blk in s.blocks:
                x = blk(x)
            return F.log_softmax(F.linear(s.ln_f(x), s.wte.weight), dim=-1)

    # -- Point Transformer -----------------------------------------------------------------

    class PTLayer(nn.Module):
        def __init__(s, d, k):
            super().__init__()
            s.k = k
            s.q, s.kk, s.v = (nn.Linear(d, d) for _ in range(3))
            s.pos = nn.Sequential(nn.Linear(3, d), nn.ReLU(), nn.Linear(d, d))
            s.gamma = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d))
            s.out = nn.Linear(d, d)

        def forward(s, p, x):                                # p [B, N, 3], x [B, N, d]
            b, n, d = x.shape
            dist = ((p[:, :, None] - p[:, None]) ** 2).sum(-1)                       # [B, N, N]
            idx = dist.topk(s.k, dim=-1, largest=False).indices                     # [B, N, k]
            flat = (idx + torch.arange(b, device=x.device)[:, None, None] * n).reshape(-1)
            q, kk, v = s.q(x), s.kk(x), s.v(x)
            kj = kk.reshape(b * n, d)[flat].view(b, n, s.k, d)
            vj = v.reshape(b * n, d)[flat].view(b, n, s.k, d)
            pj = p.reshape(b * n, 3)[flat].view(b, n, s.k, 3)
            delta = s.pos(p[:, :, None] - pj)
            w = (s.gamma(q[:, :, None] - kj + delta) / math.sqrt(d)).softmax(2)
            return x + s.out((w * (vj + delta)).sum(2))

    class PointTransformer(nn.Module):
        """Point Transformer's vector attention: per point, its 16 nearest neighbours (topk of
        squared distances, smallest), their keys, values and coordinates gathered by flat
        indices, per-channel weights gamma(q_i - k_j + delta_ij) with delta an MLP of the
        relative positions, softmax over the neighbours; 2 layers over 128 points, max-pooled."""

        def __init__(s, d=32, k=16, layers=2, classes=10):
            super().__init__()
            s.inp = nn.Sequential(nn.Linear(3, d), nn.ReLU(), nn.Linear(d, d))
            s.layers = nn.ModuleList([PTLayer(d, k) for _ in range(layers)])
            s.head = nn.Sequential(nn.Linear(d, 64), nn.ReLU(), nn.Linear(64, classes))

        def forward(s, x):                                   # [B, 128, 3]
            h = s.inp(x)
            for layer in s.layers:
                h = layer(x, h)
            return s.head(h.amax(1))

    # -- WaveRNN input side ----------------------------------------------------------------

    class WaveRNN(nn.Module):
        """WaveRNN-style sample model: waveform (tanh-squashed) mu-law companded,
        sign(x) log1p(mu |x|) / log1p(mu), quantized to 256 int64 levels (+0.5, .long(),
        clamp), embedded, a GRU over 64 samples, two linear layers and a 256-way log_softmax."""

        def __init__(s, levels=256, emb=32, hidden=128):
            super().__init__()
            s.mu = levels - 1
            s.emb = nn.Embedding(levels, emb)
            s.gru = nn.GRU(emb, hidden, batch_first=True)
            s.fc1, s.fc2 = nn.Linear(hidden, hidden), nn.Linear(hidden, levels)

        def forward(s, x):                                   # [B, 64] float
            x = torch.tanh(x)
            y = torch.sign(x) * torch.log1p(s.mu * x.abs()) / math.log1p(s.mu)
            q = ((y + 1) / 2 * s.mu + 0.5).long().clamp(0, s.mu)
            h, _ = s.gru(s.emb(q))
            return F.log_softmax(s.fc2(F.relu(s.fc1(h))), -1)

    # -- Temporal Shift Module -------------------------------------------------------------

    class TemporalShift(nn.Module):
        def __init__(s, net, segments, fold_div=8, mode="zeros"):
            super().__init__()
            s.net, s.t, s.fold_div, s.mode = net, segments, fold_div, mode

        def shift(s, x):
            nt, c, h, w = x.shape
            x = x.view(-1, s.t, c, h, w)
            fold = c // s.fold_div
            if s.mode == "zeros":                            # TSM's reference code
                out = torch.zeros_like(x)
                out[:, :-1, :fold] = x[:, 1:, :fold]
                out[:, 1:, fold:2 * fold] = x[:, :-1, fold:2 * fold]
                out[:, :, 2 * fold:] = x[:, :, 2 * fold:]
            elif s.mode == "cat":
                z = torch.zeros_like(x[:, :1, :fold])
                out = torch.cat([torch.cat([x[:, 1:, :fold], z], 1),
                                 torch.cat([z, x[:, :-1, fold:2 * fold]], 1),
                                 x[:, :, 2 * fold:]], 2)
            else:                                            # cyclic, by torch.roll
                out = torch.cat([torch.roll(x[:, :, :fold], -1, 1),
                                 torch.roll(x[:, :, fold:2 * fold], 1, 1), x[:, :, 2 * fold:]], 2)
            return out.view(nt, c, h, w)

        def forward(s, x):
            return s.net(s.shift(x))

    class TSMBlock(nn.Module):
        def __init__(s, d, segments, mode):
            super().__init__()
            conv = nn.Conv2d(d, d, 3, padding=1, bias=False)
            s.c1 = TemporalShift(conv, segments, mode=mode)
            s.b1 = nn.BatchNorm2d(d)
            s.c2, s.b2 = nn.Conv2d(d, d, 3, padding=1, bias=False), nn.BatchNorm2d(d)

        def forward(s, x):
            return F.relu(x + s.b2(s.c2(F.relu(s.b1(s.c1(x))))))

    class TSM(nn.Module):
        """a Temporal Shift Module ResNet over 8 frames of 32x32: frames folded into the batch,
        residual blocks whose first conv sees 1/8 of the channels shifted one frame back and
        1/8 one frame forward (by slice assignment into zeros as TSM's code does, by cat, and
        cyclically by torch.roll), consensus by averaging the frames' logits."""

        def __init__(s, d=32, segments=8, classes=10):
            super().__init__()
            s.t = segments
            s.stem = nn.Sequential(nn.Conv2d(3, d, 3, 2, 1, bias=False), nn.BatchNorm2d(d), nn.ReLU())
            s.blocks = nn.Sequential(TSMBlock(d, segments, "zeros"), TSMBlock(d, segments, "cat"),
                                     nn.Conv2d(d, 2 * d, 3, 2, 1), nn.ReLU(),
                                     TSMBlock(2 * d, segments, "roll"))
            s.fc = nn.Linear(2 * d, classes)

        def forward(s, x):                                   # [B, 8, 3, 32, 32]
            b, t, c, h, w = x.shape
            y = s.blocks(s.stem(x.reshape(b * t, c, h, w)))
            y = s.fc(y.mean((2, 3)))
            return y.view(b, t, -1).mean(1)

    # -- Transformer-XL --------------------------------------------------------------------

    class RelMultiHeadAttn(nn.Module):
        def __init__(s, d, heads):
            super().__init__()
            s.h, s.dh = heads, d // heads
            s.qkv = nn.Linear(d, 3 * d, bias=False)
            s.r_net = nn.Linear(d, d, bias=False)
            s.o = nn.Linear(d, d, bias=False)
            s.ln = nn.LayerNorm(d)

        @staticmethod
        def rel_shift(x):                                    # [B, H, T, R]
            b, h, t, r = x.shape
            zero = x.new_zeros((b, h, t, 1))
            x = torch.cat([zero, x], -1).view(b, h, r + 1, t)
            return x[:, :, 1:].reshape(b, h, t, r)

        def forward(s, x, r, r_w_bias, r_r_bias, mask):
            b, t, d = x.shape
            q, k, v = s.qkv(x).view(b, t, 3, s.h, s.dh).unbind(2)                   # [B, T, H, dh]
            rk = s.r_net(r).view(t, s.h, s.dh)
            ac = torch.einsum("bihd,bjhd->bhij", q + r_w_bias, k)
            bd = s.rel_shift(torch.einsum("bihd,jhd->bhij", q + r_r_bias, rk))
            a = ((ac + bd) / math.sqrt(s.dh)).masked_fill(mask, float("-inf")).softmax(-1)
            y = torch.einsum("bhij,bjhd->bihd", a, v).reshape(b, t, d)
            return s.ln(x + s.o(y))

    class TransformerXL(nn.Module):
        """Transformer-XL's relative attention without memory: sinusoids of the reversed
        positions T-1 .. 0 projected per layer, global content and position biases (r_w, r_r)
        added to the queries, the position scores aligned by the pad-and-reshape relative shift,
        a causal mask from triu; post-LN, ReLU FFNs; 2 layers over 32 tokens."""

        def __init__(s, vocab=1000, d=128, heads=4, layers=2):
            super().__init__()
            s.d, s.h = d, heads
            s.emb = nn.Embedding(vocab, d)
            s.r_w_bias = nn.Parameter(0.1 * torch.randn(heads, d // heads))
            s.r_r_bias = nn.Parameter(0.1 * torch.randn(heads, d // heads))
            s.att = nn.ModuleList([RelMultiHeadAttn(d, heads) for _ in range(layers)])
            s.ff = nn.ModuleList([nn.Sequential(nn.Linear(d, 4 * d), nn.ReLU(), nn.Linear(4 * d, d))
                                  for _ in range(layers)])
            s.ln = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            s.register_buffer("inv_freq", 1 / (10000 ** (torch.arange(0.0, d, 2.0) / d)))
            s.head = nn.Linear(d, vocab)

        def forward(s, ids):                                 # [B, T] int64
            t = ids.shape[1]
            x = s.emb(ids) * math.sqrt(s.d)
            pos = torch.arange(t - 1, -1, -1.0, device=ids.device)
            ang = pos[:, None] * s.inv_freq[None]
            r = torch.cat([ang.sin(), ang.cos()], -1)        # [T, d]
            mask = torch.triu(torch.ones(t, t, device=ids.device), 1).bool()
            for att, ff, ln in zip(s.att, s.ff, s.ln):
                x = att(x, r, s.r_w_bias, s.r_r_bias, mask)
                x = ln(x + ff(x))
            return s.head(x)

    # -- CoAtNet ---------------------------------------------------------------------------

    class LayerNorm2d(nn.Module):                            # ConvNeXt's channels_first, by hand
        def __init__(s, c, eps=1e-6):
            super().__init__()
            s.weight, s.bias, s.eps = nn.Parameter(1 + 0.1 * torch.randn(c)), \
                nn.Parameter(0.1 * torch.randn(c)), eps

        def forward(s, x):
            u = x.mean(1, keepdim=True)
            var = (x - u).pow(2).mean(1, keepdim=True)
            x = (x - u) / torch.sqrt(var + s.eps)
            return s.weight[:, None, None] * x + s.bias[:, None, None]

    class MBConv(nn.Module):
        def __init__(s, cin, cout, stride, expand=4):
            super().__init__()
            mid = cin * expand
            s.pre = nn.BatchNorm2d(cin)
            s.body = nn.Sequential(
                nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.GELU(),
                nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid),
                nn.GELU())
            s.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(mid, mid // 16, 1), nn.SiLU(),
                                 nn.Conv2d(mid // 16, mid, 1), nn.Sigmoid())
            s.proj = nn.Conv2d(mid, cout, 1)
            s.short = nn.Identity() if stride == 1 and cin == cout else \
                nn.Sequential(nn.MaxPool2d(stride, stride), nn.Conv2d(cin, cout, 1))

        def forward(s, x):
            h = s.body(s.pre(x))
            return s.short(x) + s.proj(h * s.se(h))

    class RelAttn2d(nn.Module):
        def __init__(s, d, heads, size):
            super().__init__()
            s.h, s.dh = heads, d // heads
            s.norm = LayerNorm2d(d)
            s.qkv, s.o = nn.Conv2d(d, 3 * d, 1), nn.Conv2d(d, d, 1)
            s.table = nn.Parameter(0.02 * torch.randn(heads, (2 * size - 1) ** 2))
            yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
            c = torch.stack([yy.flatten(), xx.flatten()])
            rel = c[:, :, None] - c[:, None] + size - 1
            s.register_buffer("index", rel[0] * (2 * size - 1) + rel[1])          # [N, N]
            s.ff = nn.Sequential(LayerNorm2d(d), nn.Conv2d(d, 4 * d, 1), nn.GELU(),
                                 nn.Conv2d(4 * d, d, 1))

        def forward(s, x):
            b, d, hh, ww = x.shape
            q, k, v = s.qkv(s.norm(x)).reshape(b, 3, s.h, s.dh, hh * ww).unbind(1)
            a = torch.einsum("bhdi,bhdj->bhij", q, k) * s.dh ** -0.5 + s.table[:, s.index]
            y = torch.einsum("bhij,bhdj->bhdi", a.softmax(-1), v).reshape(b, d, hh, ww)
            x = x + s.o(y)
            return x + s.ff(x)

    class CoAtNet(nn.Module):
        """a CoAtNet-style hybrid over 64x64: a conv stem, MBConv stages (pre-BN, 1x1 expand 4,
        depthwise 3x3 at stride 2, squeeze-excite, 1x1 project, max-pool + 1x1 shortcut), then
        relative-attention stages as 1x1 convs over the flattened map with a hand-written
        channels-first LayerNorm and a 2-D relative position bias table, at 8x8 and at 4x4
        after a max-pool downsample; global pooling."""

        def __init__(s, dims=(24, 48, 64, 96), heads=4, classes=10):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, dims[0], 3, 2, 1), nn.BatchNorm2d(dims[0]), nn.GELU())
            s.mb = nn.Sequential(MBConv(dims[0], dims[1], 2), MBConv(dims[1], dims[1], 1),
                                 MBConv(dims[1], dims[2], 2))
            s.t1 = RelAttn2d(dims[2], heads, 8)
            s.down = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(dims[2], dims[3], 1))
            s.t2 = RelAttn2d(dims[3], heads, 4)
            s.norm, s.fc = nn.LayerNorm(dims[3]), nn.Linear(dims[3], classes)

        def forward(s, x):                                   # [B, 3, 64, 64]
            x = s.t2(s.down(s.t1(s.mb(s.stem(x)))))
            return s.fc(s.norm(x.mean((2, 3))))

    # -- Mixture-of-Depths -----------------------------------------------------------------

    class CausalBlock(nn.Module):
        def __init__(s, d, heads):
            super().__init__()
            s.h, s.dh = heads, d // heads
            s.ln1, s.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            s.qkv, s.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            s.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(s, x):
            b, t, d = x.shape
            q, k, v = s.qkv(s.ln1(x)).view(b, t, 3, s.h, s.dh).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + s.o(y.transpose(1, 2).reshape(b, t, d))
            return x + s.ff(s.ln2(x))

    class MoDBlock(nn.Module):
        def __init__(s, d, heads, capacity):
            super().__init__()
            s.cap = capacity
            s.router = nn.Linear(d, 1)
            s.block = CausalBlock(d, heads)

        def forward(s, x):
            d = x.shape[-1]
            w = s.router(x).squeeze(-1)                      # [B, T]
            k = int(x.shape[1] * s.cap)
            idx = w.topk(k, dim=1).indices.sort(dim=1).values                        # [B, k]
            gidx = idx[..., None].expand(-1, -1, d)
            sel = torch.gather(x, 1, gidx)
            upd = (s.block(sel) - sel) * torch.sigmoid(torch.gather(w, 1, idx))[..., None]
            return x.scatter_add(1, gidx, upd)

    class MixtureOfDepths(nn.Module):
        """Mixture-of-Depths: every other block sees only the top half of the tokens by a
        linear router's score (topk, the indices sorted back into sequence order, gathered),
        runs causal attention and an MLP on them, and its update, gated by the router's sigmoid,
        is scatter_add'ed back; the others are dense blocks; 4 blocks over 64 tokens."""

        def __init__(s, vocab=1000, d=128, heads=4, layers=4):
            super().__init__()
            s.emb, s.pos = nn.Embedding(vocab, d), nn.Parameter(0.02 * torch.randn(64, d))
            s.blocks = nn.ModuleList([MoDBlock(d, heads, 0.5) if i % 2 else CausalBlock(d, heads)
                                      for i in range(layers)])
            s.ln, s.head = nn.LayerNorm(d), nn.Linear(d, vocab)

        def forward(s, ids):                                 # [B, 64] int64
            x = s.emb(ids) + s.pos
            for blk in s.blocks:
                x = blk(x)
            return s.head(s.ln(x))

    # -- ESPNet ----------------------------------------------------------------------------

    class ESP(nn.Module):
        def __init__(s, cin, cout, stride=1):
            super().__init__()
            n = cout // 5
            n1 = cout - 4 * n
            s.reduce = nn.Conv2d(cin, n, 3 if stride == 2 else 1, stride, 1 if stride == 2 else 0,
                                 bias=False)
            s.d = nn.ModuleList([nn.Conv2d(n, n1 if i == 0 else n, 3, 1, dil, dil, bias=False)
                                 for i, dil in enumerate((1, 2, 4, 8, 16))])
            s.add = stride == 1 and cin == cout
            s.bn, s.act = nn.BatchNorm2d(cout), nn.PReLU(cout)

        def forward(s, x):
            r = s.reduce(x)
            d1, *ds = [conv(r) for conv in s.d]
            sums = [ds[0]]
            for y in ds[1:]:                                 # hierarchical feature fusion
                sums.append(sums[-1] + y)
            y = torch.cat([d1] + sums, 1)
            if s.add:
                y = x + y
            return s.act(s.bn(y))

    class ESPNet(nn.Module):
        """ESPNet-C with a bilinear decoder: a 3x3 stride-2 stem with PReLU, ESP modules (a
        reduce conv, five parallel dilated 3x3 convs at 1, 2, 4, 8, 16, the hierarchical
        feature fusion of running sums, cat, residual, BN, PReLU; a strided reduce to
        downsample) at 48x48 and 24x24, the input image average-pooled and cat'ed in, a 1x1
        classifier and bilinear upsampling x8 back to the 96x96 input."""

        def __init__(s, classes=5):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16),
                                   nn.PReLU(16))
            s.l2 = nn.Sequential(ESP(16 + 3, 64, 2), ESP(64, 64), ESP(64, 64))
            s.l3 = nn.Sequential(ESP(64 + 3, 128, 2), ESP(128, 128), ESP(128, 128))
            s.cls = nn.Conv2d(128 + 3, classes, 1)

        def forward(s, x):                                   # [B, 3, 96, 96]
            x1 = s.stem(x)
            x2 = s.l2(torch.cat([x1, F.avg_pool2d(x, 2)], 1))
            x3 = s.l3(torch.cat([x2, F.avg_pool2d(x, 4)], 1))
            y = s.cls(torch.cat([x3, F.avg_pool2d(x, 8)], 1))
            return F.interpolate(y, scale_factor=8, mode="bilinear", align_corners=False)

    # -- HaloNet ---------------------------------------------------------------------------

    class HaloAttn(nn.Module):
        def __init__(s, d, heads, block, halo):
            super().__init__()
            s.h, s.dh, s.b, s.halo = heads, d // heads, block, halo
            s.win = block + 2 * halo
            s.q, s.kv = nn.Conv2d(d, d, 1, bias=False), nn.Conv2d(d, 2 * d, 1, bias=False)
            s.rel_h = nn.Parameter(0.02 * torch.randn(s.win, s.dh))
            s.rel_w = nn.Parameter(0.02 * torch.randn(s.win, s.dh))

        def forward(s, x):                                   # [B, d, H, W]
            b, d, hh, ww = x.shape
            nb, bs = (hh // s.b) * (ww // s.b), s.b * s.b
            q = s.q(x).reshape(b, s.h, s.dh, hh // s.b, s.b, ww // s.b, s.b)
            q = q.permute(0, 1, 3, 5, 4, 6, 2).reshape(b, s.h, nb, bs, s.dh) * s.dh ** -0.5
            kv = F.unfold(s.kv(x), s.win, stride=s.b, padding=s.halo)   # [B, 2d*win*win, nb]
            kv = kv.reshape(b, 2, s.h, s.dh, s.win * s.win, nb).permute(1, 0, 2, 5, 4, 3)
            k, v = kv[0], kv[1]                              # [B, h, nb, win*win, dh]
            rel = (s.rel_h[:, None] + s.rel_w[None]).reshape(s.win * s.win, s.dh)
            a = (q @ (k + rel).transpose(-1, -2)).softmax(-1)
            y = (a @ v).reshape(b, s.h, hh // s.b, ww // s.b, s.b, s.b, s.dh)
            return y.permute(0, 1, 6, 2, 4, 3, 5).reshape(b, d, hh, ww)

    class HaloBlock(nn.Module):
        def __init__(s, d, heads, block, halo):
            super().__init__()
            s.body = nn.Sequential(nn.Conv2d(d, d // 2, 1, bias=False), nn.BatchNorm2d(d // 2),
                                   nn.SiLU(), HaloAttn(d // 2, heads, block, halo),
                                   nn.BatchNorm2d(d // 2), nn.SiLU(),
                                   nn.Conv2d(d // 2, d, 1, bias=False), nn.BatchNorm2d(d))

        def forward(s, x):
            return F.silu(x + s.body(x))

    class HaloNet(nn.Module):
        """HaloNet's blocked local self-attention: queries in non-overlapping 8x8 blocks, keys
        and values from 12x12 windows (the block and a halo of 2) taken by F.unfold with
        stride 8 and padding 2, a factorized relative position embedding added to the keys; in
        bottleneck blocks at 32x32 and 16x16 over 64x64 inputs."""

        def __init__(s, d=64, heads=4, classes=10):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, d, 3, 2, 1, bias=False), nn.BatchNorm2d(d), nn.SiLU())
            s.b1 = HaloBlock(d, heads, 8, 2)
            s.down = nn.Sequential(nn.Conv2d(d, 2 * d, 3, 2, 1, bias=False), nn.BatchNorm2d(2 * d),
                                   nn.SiLU())
            s.b2 = HaloBlock(2 * d, heads, 8, 2)
            s.fc = nn.Linear(2 * d, classes)

        def forward(s, x):                                   # [B, 3, 64, 64]
            return s.fc(s.b2(s.down(s.b1(s.stem(x)))).mean((2, 3)))

    # -- character-aware LM ----------------------------------------------------------------

    class Highway(nn.Module):
        def __init__(s, d):
            super().__init__()
            s.h, s.t = nn.Linear(d, d), nn.Linear(d, d)
            with torch.no_grad():
                s.t.bias.fill_(-2.0)

        def forward(s, x):
            g = torch.sigmoid(s.t(x))
            return g * F.relu(s.h(x)) + (1 - g) * x

    class CharAwareLM(nn.Module):
        """Kim et al.'s character-aware language model: 16 characters per word embedded,
        convs of widths 1 to 5 (25 to 125 filters) with tanh, max over time, 2 highway layers
        (a sigmoid transform gate with bias -2), an LSTM over the 20 words and a word-vocab
        log_softmax."""

        def __init__(s, chars=100, emb=16, hidden=128, vocab=1000):
            super().__init__()
            s.emb = nn.Embedding(chars, emb, padding_idx=0)
            s.convs = nn.ModuleList([nn.Conv1d(emb, 25 * w, w) for w in range(1, 6)])
            d = sum(25 * w for w in range(1, 6))
            s.hw = nn.Sequential(Highway(d), Highway(d))
            s.lstm = nn.LSTM(d, hidden, batch_first=True)
            s.out = nn.Linear(hidden, vocab)

        def forward(s, chars):                               # [B, 20, 16] int64
            b, w, c = chars.shape
            e = s.emb(chars.reshape(b * w, c)).transpose(1, 2)                      # [BW, emb, c]
            f = torch.cat([torch.tanh(conv(e)).amax(-1) for conv in s.convs], 1)
            h, _ = s.lstm(s.hw(f).view(b, w, -1))
            return F.log_softmax(s.out(h), -1)

    # -- NODE ------------------------------------------------------------------------------

    class ODST(nn.Module):
        def __init__(s, nin, trees, depth, tree_dim):
            super().__init__()
            s.logits = nn.Parameter(torch.randn(nin, trees, depth))
            s.thresholds = nn.Parameter(0.5 * torch.randn(trees, depth))
            s.log_temps = nn.Parameter(0.3 * torch.randn(trees, depth))
            s.response = nn.Parameter(torch.randn(trees, tree_dim, 2 ** depth))
            codes = ((torch.arange(2 ** depth)[None] // 2 ** torch.arange(depth)[:, None]) % 2)
            s.register_buffer("codes", torch.stack([codes, 1 - codes], -1).float())  # [d, 2^d, 2]

        def forward(s, x):                                   # [B, nin]
            sel = s.logits.softmax(0)
            fv = torch.einsum("bi,ind->bnd", x, sel)
            tl = (fv - s.thresholds) * torch.exp(-s.log_temps)
            bins = (0.5 * torch.stack([-tl, tl], -1) + 0.5).clamp(0, 1)              # sparsemoid
            match = torch.einsum("btds,dcs->btdc", bins, s.codes)                    # [B, n, d, 2^d]
            w = torch.prod(match, dim=-2)                                           # [B, n, 2^d]
            return torch.einsum("bnd,ncd->bnc", w, s.response).flatten(1)

    class NODE(nn.Module):
        """NODE's neural oblivious decision ensembles on 24 tabular features (batch-normed):
        per tree and depth a feature choice (softmax over features, einsum), a learned
        threshold and temperature, sparsemoid bins (clamp), leaf weights by an einsum with the
        binary codes and a product over depth, responses by einsum; two dense layers of 32
        trees of depth 4 (the second sees the first's outputs cat'ed), their mean and a head."""

        def __init__(s, feats=24, trees=32, depth=4, tree_dim=3, classes=3):
            super().__init__()
            s.bn = nn.BatchNorm1d(feats)
            s.l1 = ODST(feats, trees, depth, tree_dim)
            s.l2 = ODST(feats + trees * tree_dim, trees, depth, tree_dim)
            s.tree_dim = tree_dim
            s.head = nn.Linear(tree_dim, classes)

        def forward(s, x):                                   # [B, 24]
            x = s.bn(x)
            h1 = s.l1(x)
            h2 = s.l2(torch.cat([x, h1], 1))
            h = torch.cat([h1, h2], 1).view(x.shape[0], -1, s.tree_dim).mean(1)
            return s.head(h)

    # -- S4D -------------------------------------------------------------------------------

    class S4DKernel(nn.Module):
        def __init__(s, d, n=32):
            super().__init__()
            h = n // 2
            s.log_dt = nn.Parameter(torch.rand(d) * (math.log(0.1) - math.log(0.001))
                                    + math.log(0.001))
            s.c_re, s.c_im = nn.Parameter(0.5 * torch.randn(d, h)), nn.Parameter(0.5 * torch.randn(d, h))
            s.log_a_re = nn.Parameter(torch.log(0.5 * torch.ones(d, h)))
            s.a_im = nn.Parameter(math.pi * torch.arange(h).float().repeat(d, 1))

        def forward(s, length):
            dt = torch.exp(s.log_dt)[:, None]
            a_re, a_im = -torch.exp(s.log_a_re), s.a_im
            ar, ai = a_re * dt, a_im * dt                                           # dt * A
            er = torch.exp(ar)
            nr, ni = er * torch.cos(ai) - 1, er * torch.sin(ai)                     # exp(dtA) - 1
            den = a_re ** 2 + a_im ** 2
            qr, qi = (nr * a_re + ni * a_im) / den, (ni * a_re - nr * a_im) / den   # / A
            cr, ci = s.c_re * qr - s.c_im * qi, s.c_re * qi + s.c_im * qr           # C * ...
            ln = torch.arange(length, dtype=torch.float32)
            mag = torch.exp(ar[..., None] * ln)                                     # [d, h, L]
            ph = ai[..., None] * ln
            return 2 * (cr[..., None] * mag * torch.cos(ph) - ci[..., None] * mag * torch.sin(ph)).sum(1)

    class S4DBlock(nn.Module):
        def __init__(s, d, length):
            super().__init__()
            s.length = length
            s.norm = nn.LayerNorm(d)
            s.kernel = S4DKernel(d)
            s.D = nn.Parameter(torch.randn(d))
            s.out = nn.Linear(d, 2 * d)

        def forward(s, x):                                   # [B, L, d]
            u = s.norm(x).transpose(1, 2)                    # [B, d, L]
            d = u.shape[1]
            k = s.kernel(s.length)                           # [d, L]
            y = F.conv1d(F.pad(u, (s.length - 1, 0)), k.flip(-1)[:, None], groups=d)
            y = F.gelu(y + u * s.D[:, None])
            return x + F.glu(s.out(y.transpose(1, 2)), -1)

    class S4D(nn.Module):
        """S4D: a diagonal state-space layer whose length-64 convolution kernel is computed in
        the forward from its parameters (the complex A, B, C discretized by zero-order hold,
        written out in real and imaginary parts: exp, cos, sin, a Vandermonde sum) and applied
        as a causal depthwise conv1d (left padding, the kernel flipped) with a skip D; GELU, a
        GLU output projection; 2 blocks over 64 steps, mean-pooled."""

        def __init__(s, feats=16, d=64, length=64, layers=2, classes=10):
            super().__init__()
            s.inp = nn.Linear(feats, d)
            s.blocks = nn.Sequential(*[S4DBlock(d, length) for _ in range(layers)])
            s.fc = nn.Linear(d, classes)

        def forward(s, x):                                   # [B, 64, 16]
            return s.fc(s.blocks(s.inp(x)).mean(1))

    # -- Monodepth2 ------------------------------------------------------------------------

    class ConvELU(nn.Module):
        def __init__(s, cin, cout):
            super().__init__()
            s.pad, s.conv = nn.ReflectionPad2d(1), nn.Conv2d(cin, cout, 3)

        def forward(s, x):
            return F.elu(s.conv(s.pad(x)))

    class MonoDepth(nn.Module):
        """a Monodepth2-style depth decoder on a small ResNet encoder over 64x96 images:
        skips at 1/2 to 1/16, per scale a reflection-padded 3x3 conv with ELU, nearest x2
        upsampling, cat with the skip, another conv, and a sigmoid disparity head at four
        scales (four outputs)."""

        def __init__(s):
            super().__init__()
            enc = [16, 24, 32, 48, 64]
            s.e0 = nn.Sequential(nn.Conv2d(3, enc[0], 7, 2, 3, bias=False), nn.BatchNorm2d(enc[0]),
                                 nn.ReLU())
            s.enc = nn.ModuleList([nn.Sequential(
                nn.MaxPool2d(3, 2, 1) if i == 0 else nn.Identity(),
                nn.Conv2d(enc[i], enc[i + 1], 3, 1 if i == 0 else 2, 1, bias=False),
                nn.BatchNorm2d(enc[i + 1]), nn.ReLU()) for i in range(4)])
            dec = [8, 16, 24, 32, 48]
            s.up0 = nn.ModuleList([ConvELU(enc[-1] if i == 4 else dec[i + 1], dec[i])
                                   for i in range(5)])
            s.up1 = nn.ModuleList([ConvELU(dec[i] + (enc[i - 1] if i else 0), dec[i])
                                   for i in range(5)])
            s.disp = nn.ModuleList([nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(dec[i], 1, 3),
                                                  nn.Sigmoid()) for i in range(4)])

        def forward(s, x):                                   # [B, 3, 64, 96]
            feats = [s.e0(x)]
            for e in s.enc:
                feats.append(e(feats[-1]))
            y, outs = feats[-1], []
            for i in range(4, -1, -1):
                y = F.interpolate(s.up0[i](y), scale_factor=2, mode="nearest")
                if i:
                    y = torch.cat([y, feats[i - 1]], 1)
                y = s.up1[i](y)
                if i < 4:
                    outs.append(s.disp[i](y))
            return tuple(outs)

    # -- Pointer Network -------------------------------------------------------------------

    class PointerNet(nn.Module):
        """a Pointer Network over 12 2-D points: an LSTM encoder, an LSTMCell decoder unrolled
        12 steps from a learned start input, additive attention v . tanh(W1 e + W2 h) masked by
        the points already chosen (masked_fill), log_softmax, argmax, the mask updated by
        one_hot, the chosen point's embedding gathered as the next input; the log-probs
        [B, 12, 12] and the tour [B, 12] int64 out."""

        def __init__(s, d=64):
            super().__init__()
            s.embed = nn.Linear(2, d)
            s.enc = nn.LSTM(d, d, batch_first=True)
            s.cell = nn.LSTMCell(d, d)
            s.w1, s.w2 = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
            s.v = nn.Linear(d, 1, bias=False)
            s.start = nn.Parameter(torch.randn(d))

        def forward(s, x):                                   # [B, 12, 2]
            b, n, _ = x.shape
            e = s.embed(x)
            enc, (h, c) = s.enc(e)
            h, c = h[0], c[0]
            ref = s.w1(enc)
            inp = s.start[None].expand(b, -1)
            mask = torch.zeros(b, n, dtype=torch.bool, device=x.device)
            logps, tour = [], []
            for _ in range(n):
                h, c = s.cell(inp, (h, c))
                u = s.v(torch.tanh(ref + s.w2(h)[:, None])).squeeze(-1)             # [B, n]
                logp = F.log_softmax(u.masked_fill(mask, -1e9), -1)
                idx = logp.argmax(-1)
                mask = mask | F.one_hot(idx, n).bool()
                inp = torch.gather(e, 1, idx[:, None, None].expand(-1, 1, e.shape[-1])).squeeze(1)
                logps.append(logp)
                tour.append(idx)
            return torch.stack(logps, 1), torch.stack(tour, 1)

    return {c.__name__: c for c in (Bert, Bottleneck50, GPT2, PointTransformer, WaveRNN, TSM,
                                     TransformerXL, CoAtNet, MixtureOfDepths, ESPNet, HaloNet,
                                     CharAwareLM, NODE, S4D, MonoDepth, PointerNet)}


# the tests' tolerance per model: atol, rtol
TOLERANCES: dict[str, tuple[float, float]] = {}

_floats = zoo_more._floats
_ids = zoo_more._ids


def _bert_ids(length: int, vocab: int):
    """[CLS] = 1 first, a [SEP] = 3 in the middle and at the end of the text, then padding
    (0) of a different length per row."""
    def make(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
        ids = rng.integers(4, vocab, (batch, length)).astype(np.int64)
        ids[:, 0] = 1
        for i in range(batch):
            end = int(rng.integers(length // 2, length))
            ids[i, int(rng.integers(8, end - 8))] = 3
            ids[i, end] = 3
            ids[i, end + 1:] = 0
        return {"ids": ids}
    return make


def _chars(words: int, chars: int, vocab: int):
    def make(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
        c = rng.integers(1, vocab, (batch, words, chars)).astype(np.int64)
        lengths = rng.integers(2, chars + 1, (batch, words))
        c[np.arange(chars)[None, None] >= lengths[..., None]] = 0     # padded words
        return {"chars": c}
    return make


def _model(name: str, cls_name: str, make_inputs) -> ZooModel:
    return zoo_more._model(name, cls_name, make_inputs, _classes)


PROBE16: dict[str, ZooModel] = {
    m.name: m
    for m in [
        _model("bert_pooler", "Bert", _bert_ids(128, 3000)),
        _model("bottleneck50", "Bottleneck50", _floats(3, 112, 112)),
        _model("gpt2_triu", "GPT2", _ids(32, 1000)),
        _model("point_transformer", "PointTransformer", _floats(128, 3)),
        _model("wavernn_mulaw", "WaveRNN", _floats(64)),
        _model("tsm", "TSM", _floats(8, 3, 32, 32)),
        _model("transformer_xl", "TransformerXL", _ids(32, 1000)),
        _model("coatnet", "CoAtNet", _floats(3, 64, 64)),
        _model("mixture_of_depths", "MixtureOfDepths", _ids(64, 1000)),
        _model("espnet", "ESPNet", _floats(3, 96, 96)),
        _model("halonet", "HaloNet", _floats(3, 64, 64)),
        _model("char_highway", "CharAwareLM", _chars(20, 16, 100)),
        _model("node_trees", "NODE", _floats(24)),
        _model("s4d", "S4D", _floats(64, 16)),
        _model("monodepth", "MonoDepth", _floats(3, 64, 96)),
        _model("pointer_net", "PointerNet", _floats(12, 2)),
    ]
}
