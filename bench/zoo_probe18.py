"""A probe set of torch.nn models (probe18): kinds the earlier sets did not cover, written from
scratch as a user would: Reformer's LSH attention (shared query-keys hashed by random rotations
and argmax, tokens sorted by bucket with argsort, chunked attention over the own and previous
chunk with the self-match masked, outputs unsorted by the inverse permutation), SuperGlue (a
keypoint MLP encoder, an attentional GNN alternating self- and cross-attention between two
keypoint sets written with Conv1d and einsum, a dustbin-augmented score matrix and 20 unrolled
log-space Sinkhorn iterations by logsumexp), a StyleGAN2 generator (a mapping network of
equalized-lr linears after a 2nd-moment normalization, a learned constant repeated over the
batch, modulated and demodulated 3x3 convs in their non-fused form, fixed noise maps scaled by
learned strengths, bilinear upsampling, skip toRGB outputs), SchNet (pairwise distances of 3-D
positions, a Gaussian radial basis from linspace centres, a cosine cutoff, continuous-filter
convolutions summed over neighbours by einsum, shifted softplus, an energy summed over atoms),
LSTNet (a conv2d over the whole window of series, a GRU, a skip-GRU over period-24 phases folded
into the batch, an autoregressive highway), ECAPA-TDNN (SE-Res2Net conv1d blocks at dilations
2 to 4, multi-layer feature aggregation, attentive statistics pooling with global context:
mean and std broadcast over time, softmax weights, weighted mean and std), an Octave-convolution
ResNet (high- and low-frequency branches exchanged by avg_pool and nearest upsampling),
BlazeFace (5x5 depthwise BlazeBlocks, stride-2 asymmetric F.pad, channel padding of the shortcut
by F.pad on the channel axis, max-pool shortcuts, anchors' scores and boxes by permute /
reshape / cat), BiDAF (a highway over embeddings, a shared BiLSTM, the trilinear similarity
matrix, a query padding mask, context-to-query and query-to-context attention, a modeling
BiLSTM, start and end log-probabilities), the Deep Interest Network (an activation unit over
[q, k, q - k, q * k] with Dice activations, behaviour padding masked, sum pooling, dense
features), a Neural Turing Machine unrolled over 20 steps (a GRUCell controller, content
addressing by cosine similarity, interpolation, a circular shift by three torch.roll's,
sharpening by a pow of a computed exponent, erase / add writes), a p4 group-equivariant CNN
(kernels rotated by torch.rot90 and the orientation axis cycled by torch.roll in the forward,
BatchNorm3d over orientations, orientation max pooling), a Hierarchical Attention Network (a
word BiGRU over sentences folded into the batch, masked word attention, a sentence BiGRU and
attention; log-probs and the sentence weights out), a masked autoregressive flow (MADE layers of
mask-multiplied linear weights, order reversal by flip, batch-norm flow layers in eval form,
the log-likelihood) and soft-DTW (a Conv1d encoder of two series, squared distances, the
dynamic programme over a 12 x 12 grid written as a Python double loop with a softmin by
logsumexp). Seeded random weights. `bench/zoo.py --set probe18`.

Two are written around the TorchScript-based exporter (torch 2.13): the p4 CNN rotates its
kernels by transposes and flips, as aten::rot90 has no opset-17 symbolic there; DIN's Dice
normalizes a 3-D input transposed (as DeepCTR does), as a reshape(-1, d) before BatchNorm1d
makes it refuse the batch_norm ("ONNX export of batch_norm for unknown channel size"). The
soft-DTW's second input is named `ref`: an input named `y` collides with the exports' output
name. Every model exports with both exporters and runs in onnxruntime.

What dlvm failed at when the set was written: the StyleGAN2 generator's learned constant
repeated over the batch (`const.repeat(B, 1, 1, 1)`: Tile of a shape-derived repeats, refused
at import with both exporters); recurrences over a batch derived from the batch (LSTNet's
skip-GRU over B * 24 phases, HAN's word GRU over B * 8 sentences: the TorchScript export fails
the verifier, "dim batch_x24 is not bound by the parameters of @main", the dynamo one the
import, "RNN states of type f32[?, ?] need a static or named batch size"); BiDAF's TorchScript
export (an LSTM's output loses its static length, so expand_as of it is untyped and the next
LSTM's initial states have no batch); the NTM's TorchScript export runs but its native
library is declined (a region fusing a [?, 1] chain with a [?, ?, 20] product-reduction fails
the library's broadcast guard at every call).

The brief's other kinds (EfficientNet MBConv, ConvNeXt, Swin, ESPCN, Conformer, DCGAN, a dense
GCN, DLRM / DeepFM, a Python-loop RNN, TCN, PointNet, Perceiver, a diffusion UNet, an
InstanceNorm style net, a top-k mixture of experts) are in earlier sets.
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

    # -- Reformer LSH attention ------------------------------------------------------------

    class LSHAttention(nn.Module):
        def __init__(s, d, heads, buckets, chunk):
            super().__init__()
            s.h, s.dh, s.nb, s.c = heads, d // heads, buckets, chunk
            s.qk, s.v, s.o = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False), nn.Linear(d, d)
            s.register_buffer("rot", torch.randn(heads, d // heads, buckets // 2))

        def forward(s, x):                                    # [B, T, D]
            b, t, _ = x.shape
            qk = s.qk(x).view(b, t, s.h, s.dh).transpose(1, 2)       # [B, H, T, dh]
            v = s.v(x).view(b, t, s.h, s.dh).transpose(1, 2)
            r = torch.einsum("bhtd,hdr->bhtr", F.normalize(qk, dim=-1), s.rot)
            buckets = torch.cat([r, -r], -1).argmax(-1)                # [B, H, T]
            key = buckets * t + torch.arange(t, device=x.device)
            order = key.argsort(-1)
            undo = order.argsort(-1)
            idx = order[..., None].expand(-1, -1, -1, s.dh)
            sqk, sv = qk.gather(2, idx), v.gather(2, idx)
            pos = order.view(b, s.h, -1, s.c)                         # [B, H, n, c]
            q = sqk.view(b, s.h, -1, s.c, s.dh)
            k = F.normalize(q, dim=-1)
            kv = sv.view(b, s.h, -1, s.c, s.dh)
            k2 = torch.cat([k, k.roll(1, 2)], 3)                      # own and previous chunk
            v2 = torch.cat([kv, kv.roll(1, 2)], 3)
            p2 = torch.cat([pos, pos.roll(1, 2)], 3)
            att = q @ k2.transpose(-1, -2) / math.sqrt(s.dh)          # [B, H, n, c, 2c]
            att = att.masked_fill(pos[..., :, None] == p2[..., None, :], -1e5)
            out = (att.softmax(-1) @ v2).view(b, s.h, t, s.dh)
            out = out.gather(2, undo[..., None].expand(-1, -1, -1, s.dh))
            return s.o(out.transpose(1, 2).reshape(b, t, -1))

    class ReformerLayer(nn.Module):
        def __init__(s, d, heads):
            super().__init__()
            s.ln1, s.att = nn.LayerNorm(d), LSHAttention(d, heads, 8, 16)
            s.ln2 = nn.LayerNorm(d)
            s.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(s, x):
            x = x + s.att(s.ln1(x))
            return x + s.ff(s.ln2(x))

    class Reformer(nn.Module):
        """a Reformer encoder: 128 tokens, width 64, 4 heads, 2 layers of LSH attention with 8
        buckets (rotations of a fixed random buffer, argmax over [r, -r]), tokens sorted by
        bucket * T + position (argsort), chunks of 16 attending to themselves and the previous
        chunk (roll), the self-match masked, the outputs unsorted (argsort of the argsort,
        gather); mean pooling, a classifier."""

        def __init__(s, vocab=1000, d=64, heads=4, layers=2, t=128, classes=10):
            super().__init__()
            s.emb, s.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(1, t, d) * 0.02)
            s.layers = nn.ModuleList([ReformerLayer(d, heads) for _ in range(layers)])
            s.ln, s.fc = nn.LayerNorm(d), nn.Linear(d, classes)

        def forward(s, ids):                                  # [B, 128] int64
            x = s.emb(ids) + s.pos
            for layer in s.layers:
                x = layer(x)
            return s.fc(s.ln(x).mean(1))

    # -- SuperGlue -------------------------------------------------------------------------

    def mlp1d(chs):
        layers = []
        for i in range(1, len(chs)):
            layers.append(nn.Conv1d(chs[i - 1], chs[i], 1))
            if i < len(chs) - 1:
                layers += [nn.BatchNorm1d(chs[i]), nn.ReLU()]
        return nn.Sequential(*layers)

    class GlueAttention(nn.Module):
        def __init__(s, d, heads):
            super().__init__()
            s.h, s.dh = heads, d // heads
            s.q, s.k, s.v = nn.Conv1d(d, d, 1), nn.Conv1d(d, d, 1), nn.Conv1d(d, d, 1)
            s.merge = nn.Conv1d(d, d, 1)
            s.mlp = mlp1d([2 * d, 2 * d, d])

        def forward(s, x, src):                               # [B, D, N], [B, D, M]
            b = x.shape[0]
            q = s.q(x).view(b, s.dh, s.h, -1)
            k = s.k(src).view(b, s.dh, s.h, -1)
            v = s.v(src).view(b, s.dh, s.h, -1)
            att = torch.einsum("bdhn,bdhm->bhnm", q, k) / s.dh ** 0.5
            msg = torch.einsum("bhnm,bdhm->bdhn", att.softmax(-1), v)
            msg = s.merge(msg.reshape(b, s.dh * s.h, -1))
            return x + s.mlp(torch.cat([x, msg], 1))

    class SuperGlue(nn.Module):
        """SuperGlue's matcher: 64 and 48 keypoints with 64-d descriptors, positions through a
        Conv1d MLP added to the descriptors, 4 GNN layers (self, cross, self, cross; 4 heads,
        einsum attention, a Conv1d MLP over the cat of state and message), final projections,
        scores by einsum scaled by 1/sqrt(d), a learned dustbin score appended as a row and a
        column, 20 log-space Sinkhorn iterations (logsumexp); the log assignment out."""

        def __init__(s, d=64, heads=4, iters=20):
            super().__init__()
            s.iters = iters
            s.kenc = mlp1d([2, 32, 64, d])
            s.layers = nn.ModuleList([GlueAttention(d, heads) for _ in range(4)])
            s.names = ["self", "cross"] * 2
            s.proj = nn.Conv1d(d, d, 1)
            s.bin = nn.Parameter(torch.tensor(1.0))

        def forward(s, kpts0, desc0, kpts1, desc1):           # [B,64,2] [B,64,64] [B,48,2] [B,48,64]
            d0 = desc0.transpose(1, 2) + s.kenc(kpts0.transpose(1, 2))
            d1 = desc1.transpose(1, 2) + s.kenc(kpts1.transpose(1, 2))
            for layer, name in zip(s.layers, s.names):
                s0, s1 = (d1, d0) if name == "cross" else (d0, d1)
                d0, d1 = layer(d0, s0), layer(d1, s1)
            m0, m1 = s.proj(d0), s.proj(d1)
            scores = torch.einsum("bdn,bdm->bnm", m0, m1) / m0.shape[1] ** 0.5
            b, m, n = scores.shape
            bins0 = s.bin.expand(b, m, 1)
            bins1 = s.bin.expand(b, 1, n)
            alpha = s.bin.expand(b, 1, 1)
            z = torch.cat([torch.cat([scores, bins0], -1), torch.cat([bins1, alpha], -1)], 1)
            norm = -math.log(m + n)
            log_mu = torch.cat([torch.full((m,), norm), torch.tensor([math.log(n) + norm])])
            log_nu = torch.cat([torch.full((n,), norm), torch.tensor([math.log(m) + norm])])
            log_mu, log_nu = log_mu[None].expand(b, -1), log_nu[None].expand(b, -1)
            u, v = torch.zeros_like(log_mu), torch.zeros_like(log_nu)
            for _ in range(s.iters):
                u = log_mu - torch.logsumexp(z + v[:, None, :], 2)
                v = log_nu - torch.logsumexp(z + u[:, :, None], 1)
            return z + u[:, :, None] + v[:, None, :] - norm

    # -- StyleGAN2 generator ---------------------------------------------------------------

    class EqualLinear(nn.Module):
        def __init__(s, cin, cout, lr_mul=1.0, bias_init=0.0):
            super().__init__()
            s.weight = nn.Parameter(torch.randn(cout, cin) / lr_mul)
            s.bias = nn.Parameter(torch.full((cout,), float(bias_init)))
            s.scale, s.lr_mul = lr_mul / math.sqrt(cin), lr_mul

        def forward(s, x):
            return F.linear(x, s.weight * s.scale, s.bias * s.lr_mul)

    class ModConv(nn.Module):
        def __init__(s, cin, cout, k, wdim, demod=True):
            super().__init__()
            s.weight = nn.Parameter(torch.randn(cout, cin, k, k))
            s.scale, s.pad, s.demod = 1 / math.sqrt(cin * k * k), k // 2, demod
            s.affine = EqualLinear(wdim, cin, bias_init=1.0)

        def forward(s, x, w):
            style = s.affine(w)                                       # [B, Cin]
            weight = s.weight * s.scale
            y = F.conv2d(x * style[:, :, None, None], weight, padding=s.pad)
            if s.demod:
                dcoef = torch.rsqrt((style[:, None, :, None, None] ** 2 *
                                     weight[None] ** 2).sum((2, 3, 4)) + 1e-8)
                y = y * dcoef[:, :, None, None]
            return y

    class StyledLayer(nn.Module):
        def __init__(s, cin, cout, wdim, res):
            super().__init__()
            s.conv = ModConv(cin, cout, 3, wdim)
            s.register_buffer("noise", torch.randn(1, 1, res, res))
            s.strength = nn.Parameter(torch.full((1,), 0.1))
            s.bias = nn.Parameter(torch.zeros(1, cout, 1, 1))

        def forward(s, x, w):
            y = s.conv(x, w) + s.strength * s.noise + s.bias
            return F.leaky_relu(y, 0.2) * math.sqrt(2)

    class StyleGAN2(nn.Module):
        """a StyleGAN2 generator at 32x32: z normalized by its 2nd moment, 4 EqualLinear +
        LeakyReLU mapping layers (lr multiplier 0.01), a learned 4x4 constant repeated over
        the batch, modulated / demodulated 3x3 convs (non-fused: the input scaled by the style,
        the output by the demodulation coefficients) with fixed noise maps, bilinear x2
        upsampling between resolutions (128, 128, 64, 32 channels), modulated 1x1 toRGBs
        without demodulation summed through upsampled skips."""

        def __init__(s, zdim=128, wdim=128, chs=(128, 128, 64, 32)):
            super().__init__()
            maps = []
            for i in range(4):
                maps += [EqualLinear(zdim if i == 0 else wdim, wdim, lr_mul=0.01), nn.LeakyReLU(0.2)]
            s.mapping = nn.Sequential(*maps)
            s.const = nn.Parameter(torch.randn(1, chs[0], 4, 4))
            s.layers, s.rgbs = nn.ModuleList(), nn.ModuleList()
            cin, res = chs[0], 4
            for i, c in enumerate(chs):
                if i:
                    res *= 2
                s.layers.append(nn.ModuleList([StyledLayer(cin, c, wdim, res),
                                               StyledLayer(c, c, wdim, res)]))
                s.rgbs.append(ModConv(c, 3, 1, wdim, demod=False))
                cin = c

        def forward(s, z):                                    # [B, 128]
            z = z * torch.rsqrt((z * z).mean(1, keepdim=True) + 1e-8)
            w = s.mapping(z)
            x = s.const.repeat(z.shape[0], 1, 1, 1)
            rgb = None
            for i, (pair, to_rgb) in enumerate(zip(s.layers, s.rgbs)):
                if i:
                    x = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
                for layer in pair:
                    x = layer(x, w)
                y = to_rgb(x, w)
                if rgb is not None:
                    y = y + F.interpolate(rgb, scale_factor=2, mode="bilinear", align_corners=False)
                rgb = y
            return rgb

    # -- SchNet ----------------------------------------------------------------------------

    def ssp(x):
        return F.softplus(x) - math.log(2.0)

    class Interaction(nn.Module):
        def __init__(s, d, rbf):
            super().__init__()
            s.f1, s.f2 = nn.Linear(rbf, d), nn.Linear(d, d)
            s.lin1 = nn.Linear(d, d, bias=False)
            s.lin2, s.lin3 = nn.Linear(d, d), nn.Linear(d, d)

        def forward(s, h, e, cut):                            # [B,N,D] [B,N,N,R] [B,N,N]
            w = s.f2(ssp(s.f1(e))) * cut[..., None]
            msg = torch.einsum("bjf,bijf->bif", s.lin1(h), w)
            return h + s.lin3(ssp(s.lin2(msg)))

    class SchNet(nn.Module):
        """SchNet on molecules of 16 atoms: atom-type embeddings, pairwise distances of the 3-D
        positions by a norm of differences, 50 Gaussians over linspace(0, 5) centres, a cosine
        cutoff at 5 with the self-pairs masked by 1 - eye, 3 interaction blocks (filter-
        generating MLP, continuous-filter convolution summed over neighbours by einsum,
        shifted softplus), an atom-wise MLP summed to an energy."""

        def __init__(s, types=10, d=64, rbf=50, cutoff=5.0, blocks=3, atoms=16):
            super().__init__()
            s.emb, s.cutoff = nn.Embedding(types, d), cutoff
            s.register_buffer("mu", torch.linspace(0, cutoff, rbf))
            s.gamma = 0.5 / float(s.mu[1] - s.mu[0]) ** 2
            s.register_buffer("offdiag", 1 - torch.eye(atoms))
            s.blocks = nn.ModuleList([Interaction(d, rbf) for _ in range(blocks)])
            s.out1, s.out2 = nn.Linear(d, d // 2), nn.Linear(d // 2, 1)

        def forward(s, z, pos):                               # [B, 16] int64, [B, 16, 3]
            h = s.emb(z)
            dist = (pos[:, :, None, :] - pos[:, None, :, :]).norm(dim=-1)
            e = torch.exp(-s.gamma * (dist[..., None] - s.mu) ** 2)
            cut = 0.5 * (torch.cos(dist * math.pi / s.cutoff) + 1) * (dist < s.cutoff).float()
            cut = cut * s.offdiag
            for blk in s.blocks:
                h = blk(h, e, cut)
            return s.out2(ssp(s.out1(h))).sum(1)

    # -- LSTNet ----------------------------------------------------------------------------

    class LSTNet(nn.Module):
        """LSTNet over a 168-step window of 8 series: a conv2d of kernel (6, 8) over the window
        with ReLU (50 channels), a GRU of 64 on it; a skip-GRU of 16 over the last 6 x 24
        steps with the 24 phases folded into the batch (view / permute / reshape); a linear
        head over both, plus an autoregressive highway (a linear over each series' last 24
        values)."""

        def __init__(s, m=8, window=168, hid_c=50, hid_r=64, hid_s=16, k=6, period=24, hw=24):
            super().__init__()
            s.p, s.hw, s.hid_s = period, hw, hid_s
            s.pt = (window - k) // period
            s.conv = nn.Conv2d(1, hid_c, (k, m))
            s.gru = nn.GRU(hid_c, hid_r)
            s.gru_skip = nn.GRU(hid_c, hid_s)
            s.fc = nn.Linear(hid_r + period * hid_s, m)
            s.ar = nn.Linear(hw, 1)

        def forward(s, x):                                    # [B, 168, 8]
            b = x.shape[0]
            c = F.relu(s.conv(x[:, None])).squeeze(3)        # [B, 50, 163]
            _, r = s.gru(c.permute(2, 0, 1))
            r = r[0]
            sk = c[:, :, -s.pt * s.p:].contiguous().view(b, -1, s.pt, s.p)
            sk = sk.permute(2, 0, 3, 1).reshape(s.pt, b * s.p, -1)
            _, sk = s.gru_skip(sk)
            sk = sk[0].view(b, s.p * s.hid_s)
            res = s.fc(torch.cat([r, sk], 1))
            z = x[:, -s.hw:, :].permute(0, 2, 1)
            return res + s.ar(z).squeeze(-1)

    # -- ECAPA-TDNN ------------------------------------------------------------------------

    class TDNN(nn.Module):
        def __init__(s, cin, cout, k, dil=1):
            super().__init__()
            s.conv = nn.Conv1d(cin, cout, k, dilation=dil, padding=dil * (k - 1) // 2)
            s.bn = nn.BatchNorm1d(cout)

        def forward(s, x):
            return s.bn(F.relu(s.conv(x)))

    class SERes2Block(nn.Module):
        def __init__(s, c, dil, scale=4, se=64):
            super().__init__()
            s.scale = scale
            s.t1, s.t2 = TDNN(c, c, 1), TDNN(c, c, 1)
            s.convs = nn.ModuleList([TDNN(c // scale, c // scale, 3, dil) for _ in range(scale - 1)])
            s.se1, s.se2 = nn.Conv1d(c, se, 1), nn.Conv1d(se, c, 1)

        def forward(s, x):
            y = s.t1(x)
            parts = list(torch.chunk(y, s.scale, 1))
            outs, prev = [parts[0]], None
            for i, conv in enumerate(s.convs):
                prev = conv(parts[i + 1] if prev is None else parts[i + 1] + prev)
                outs.append(prev)
            y = s.t2(torch.cat(outs, 1))
            g = torch.sigmoid(s.se2(F.relu(s.se1(y.mean(2, keepdim=True)))))
            return x + y * g

    class ECAPA(nn.Module):
        """ECAPA-TDNN at width 256 over 80 x 200 filterbanks: a k=5 TDNN, 3 SE-Res2Net blocks
        (dilations 2, 3, 4, scale 4 by chunk, running sums), their outputs cat'ed into a 1x1
        TDNN of 768, attentive statistics pooling with global context (the mean and the std
        broadcast over time and cat'ed, tanh attention, softmax over time, a weighted mean and
        std with a clamp), BatchNorm1d, a 192-d embedding."""

        def __init__(s, feats=80, c=256, emb=192):
            super().__init__()
            s.t0 = TDNN(feats, c, 5)
            s.blocks = nn.ModuleList([SERes2Block(c, d) for d in (2, 3, 4)])
            s.mfa = TDNN(3 * c, 3 * c, 1)
            s.att = nn.Sequential(nn.Conv1d(9 * c, 128, 1), nn.ReLU(), nn.BatchNorm1d(128),
                                  nn.Tanh(), nn.Conv1d(128, 3 * c, 1))
            s.bn = nn.BatchNorm1d(6 * c)
            s.fc = nn.Linear(6 * c, emb)

        def forward(s, x):                                    # [B, 80, 200]
            y = s.t0(x)
            outs = []
            for blk in s.blocks:
                y = blk(y)
                outs.append(y)
            h = s.mfa(torch.cat(outs, 1))
            t = h.shape[-1]
            mean = h.mean(2, keepdim=True)
            std = torch.sqrt(h.var(2, keepdim=True, unbiased=False).clamp(min=1e-4))
            ctx = torch.cat([h, mean.expand(-1, -1, t), std.expand(-1, -1, t)], 1)
            w = s.att(ctx).softmax(2)
            mu = (w * h).sum(2)
            sg = torch.sqrt(((w * h * h).sum(2) - mu * mu).clamp(min=1e-4))
            return s.fc(s.bn(torch.cat([mu, sg], 1)))

    # -- Octave convolution ResNet ---------------------------------------------------------

    class OctConv(nn.Module):
        def __init__(s, cin, cout, alpha_in, alpha_out, k=3):
            super().__init__()
            li, lo = int(alpha_in * cin), int(alpha_out * cout)
            hi, ho = cin - li, cout - lo
            p = k // 2
            s.hh = nn.Conv2d(hi, ho, k, padding=p, bias=False) if ho else None
            s.hl = nn.Conv2d(hi, lo, k, padding=p, bias=False) if lo else None
            s.lh = nn.Conv2d(li, ho, k, padding=p, bias=False) if li and ho else None
            s.ll = nn.Conv2d(li, lo, k, padding=p, bias=False) if li and lo else None

        def forward(s, xh, xl):
            yh = s.hh(xh) if s.hh is not None else None
            yl = s.hl(F.avg_pool2d(xh, 2)) if s.hl is not None else None
            if xl is not None:
                if s.lh is not None:
                    yh = yh + F.interpolate(s.lh(xl), scale_factor=2, mode="nearest")
                if s.ll is not None:
                    yl = yl + s.ll(xl)
            return yh, yl

    class OctBNReLU(nn.Module):
        def __init__(s, cin, cout, ai, ao, relu=True):
            super().__init__()
            s.conv = OctConv(cin, cout, ai, ao)
            s.bh = nn.BatchNorm2d(cout - int(ao * cout))
            s.bl = nn.BatchNorm2d(int(ao * cout)) if ao else None
            s.relu = relu

        def forward(s, xh, xl):
            yh, yl = s.conv(xh, xl)
            yh = s.bh(yh)
            yl = s.bl(yl) if yl is not None else None
            if s.relu:
                yh = F.relu(yh)
                yl = F.relu(yl) if yl is not None else None
            return yh, yl

    class OctBlock(nn.Module):
        def __init__(s, c):
            super().__init__()
            s.a, s.b = OctBNReLU(c, c, 0.5, 0.5), OctBNReLU(c, c, 0.5, 0.5, relu=False)

        def forward(s, xh, xl):
            yh, yl = s.b(*s.a(xh, xl))
            return F.relu(xh + yh), F.relu(xl + yl)

    class OctResNet(nn.Module):
        """an Octave-convolution ResNet (alpha 0.5) over 64x64: a stem conv and max pool, a
        first OctConv splitting into high (32x32) and low (16x16) frequency maps, residual
        blocks at 64 then 128 channels (a stride-2 avg pool of both branches between), each
        OctConv the sum of high->high, avg-pooled high->low, nearest-upsampled low->high and
        low->low 3x3 convs; a last OctConv merging to the high branch, global pooling."""

        def __init__(s, classes=10):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32),
                                   nn.ReLU(), nn.MaxPool2d(2))
            s.first = OctBNReLU(32, 64, 0.0, 0.5)
            s.stage1 = nn.ModuleList([OctBlock(64), OctBlock(64)])
            s.widen = OctBNReLU(64, 128, 0.5, 0.5)
            s.stage2 = nn.ModuleList([OctBlock(128), OctBlock(128)])
            s.last = OctBNReLU(128, 128, 0.5, 0.0)
            s.fc = nn.Linear(128, classes)

        def forward(s, x):                                    # [B, 3, 64, 64]
            xh, xl = s.first(s.stem(x), None)
            for blk in s.stage1:
                xh, xl = blk(xh, xl)
            xh, xl = s.widen(F.avg_pool2d(xh, 2), F.avg_pool2d(xl, 2))
            for blk in s.stage2:
                xh, xl = blk(xh, xl)
            y, _ = s.last(xh, xl)
            return s.fc(y.mean((2, 3)))

    # -- BlazeFace -------------------------------------------------------------------------

    class BlazeBlock(nn.Module):
        def __init__(s, cin, cout, stride=1):
            super().__init__()
            s.stride, s.pad_ch = stride, cout - cin
            s.dw = nn.Conv2d(cin, cin, 5, stride, 0 if stride == 2 else 2, groups=cin)
            s.pw = nn.Conv2d(cin, cout, 1)

        def forward(s, x):
            if s.stride == 2:
                h = F.pad(x, (1, 2, 1, 2))
                x = F.max_pool2d(x, 2)
            else:
                h = x
            if s.pad_ch:
                x = F.pad(x, (0, 0, 0, 0, 0, s.pad_ch))
            return F.relu(s.pw(s.dw(h)) + x)

    class BlazeFace(nn.Module):
        """BlazeFace (front model) over 128x128: a 5x5 stride-2 stem, BlazeBlocks (5x5
        depthwise + 1x1, stride-2 ones padded asymmetrically by F.pad with a max-pool shortcut,
        channels grown by F.pad of the shortcut's channel axis) down to 16x16 (88 ch) and 8x8
        (96 ch), 1x1 heads of 2 and 6 anchors per cell permuted, reshaped and cat'ed to 896
        anchors: 16 box coordinates and a clamped sigmoid score each."""

        def __init__(s):
            super().__init__()
            s.stem = nn.Conv2d(3, 24, 5, 2, 2)
            chans = [(24, 24, 1), (24, 28, 1), (28, 32, 2), (32, 36, 1), (36, 42, 1),
                     (42, 48, 2), (48, 56, 1), (56, 64, 1), (64, 72, 1), (72, 80, 1),
                     (80, 88, 1)]
            s.b1 = nn.Sequential(*[BlazeBlock(a, b, st) for a, b, st in chans])
            s.b2 = nn.Sequential(BlazeBlock(88, 96, 2), *[BlazeBlock(96, 96) for _ in range(4)])
            s.cls1, s.cls2 = nn.Conv2d(88, 2, 1), nn.Conv2d(96, 6, 1)
            s.reg1, s.reg2 = nn.Conv2d(88, 32, 1), nn.Conv2d(96, 96, 1)

        def forward(s, x):                                    # [B, 3, 128, 128]
            b = x.shape[0]
            x = F.relu(s.stem(x))
            f1 = s.b1(x)                                      # [B, 88, 16, 16]
            f2 = s.b2(f1)                                     # [B, 96, 8, 8]
            c = torch.cat([s.cls1(f1).permute(0, 2, 3, 1).reshape(b, -1, 1),
                           s.cls2(f2).permute(0, 2, 3, 1).reshape(b, -1, 1)], 1)
            r = torch.cat([s.reg1(f1).permute(0, 2, 3, 1).reshape(b, -1, 16),
                           s.reg2(f2).permute(0, 2, 3, 1).reshape(b, -1, 16)], 1)
            return r, torch.sigmoid(c.clamp(-100, 100))

    # -- BiDAF -----------------------------------------------------------------------------

    class Highway(nn.Module):
        def __init__(s, d, n=2):
            super().__init__()
            s.t = nn.ModuleList([nn.Linear(d, d) for _ in range(n)])
            s.g = nn.ModuleList([nn.Linear(d, d) for _ in range(n)])

        def forward(s, x):
            for t, g in zip(s.t, s.g):
                gate = torch.sigmoid(g(x))
                x = gate * F.relu(t(x)) + (1 - gate) * x
            return x

    class BiDAF(nn.Module):
        """BiDAF over a 64-token context and a 16-token question (id 0 = padding): shared
        embeddings and a 2-layer highway, a shared BiLSTM, the trilinear similarity w . [c; q;
        c * q] as three products, the question's padding masked by masked_fill, context-to-
        query attention (softmax over the question), query-to-context attention (softmax of
        the row maxima, tiled over the context), G = [c; a; c * a; c * b], a 2-layer modeling
        BiLSTM, start and end log-probabilities (the end through one more BiLSTM)."""

        def __init__(s, vocab=2000, d=64, h=48):
            super().__init__()
            s.emb = nn.Embedding(vocab, d, padding_idx=0)
            s.hw = Highway(d)
            s.ctx = nn.LSTM(d, h, batch_first=True, bidirectional=True)
            s.w_c, s.w_q = nn.Linear(2 * h, 1), nn.Linear(2 * h, 1, bias=False)
            s.w_cq = nn.Parameter(torch.randn(2 * h) * 0.1)
            s.model = nn.LSTM(8 * h, h, 2, batch_first=True, bidirectional=True)
            s.end_rnn = nn.LSTM(2 * h, h, batch_first=True, bidirectional=True)
            s.p1, s.p2 = nn.Linear(10 * h, 1), nn.Linear(10 * h, 1)

        def forward(s, context, question):                    # [B, 64], [B, 16] int64
            c, _ = s.ctx(s.hw(s.emb(context)))
            q, _ = s.ctx(s.hw(s.emb(question)))
            qmask = (question != 0)[:, None, :]
            sim = s.w_c(c) + s.w_q(q).transpose(1, 2) + (c * s.w_cq) @ q.transpose(1, 2)
            sim = sim.masked_fill(~qmask, -1e30)
            a = sim.softmax(-1) @ q                                      # [B, T, 2h]
            bw = sim.max(-1).values.softmax(-1)                          # [B, T]
            bv = (bw[:, :, None] * c).sum(1, keepdim=True).expand_as(c)
            g = torch.cat([c, a, c * a, c * bv], -1)
            m, _ = s.model(g)
            m2, _ = s.end_rnn(m)
            start = s.p1(torch.cat([g, m], -1)).squeeze(-1)
            end = s.p2(torch.cat([g, m2], -1)).squeeze(-1)
            cmask = context == 0
            start = start.masked_fill(cmask, -1e30).log_softmax(-1)
            end = end.masked_fill(cmask, -1e30).log_softmax(-1)
            return start, end

    # -- Deep Interest Network ---------------------------------------------------------------

    class Dice(nn.Module):
        def __init__(s, d):
            super().__init__()
            s.bn = nn.BatchNorm1d(d, affine=False, eps=1e-8)
            s.alpha = nn.Parameter(torch.full((d,), 0.25))

        def forward(s, x):                                    # [B, d] or [B, T, d]
            # (as DeepCTR's Dice: a 3-D input normalized transposed; flattened by
            # reshape(-1, d), the TorchScript-based exporter loses the channel count and refuses
            # the batch_norm, "ONNX export of batch_norm for unknown channel size")
            if x.dim() == 3:
                p = torch.sigmoid(s.bn(x.transpose(1, 2)).transpose(1, 2))
            else:
                p = torch.sigmoid(s.bn(x))
            return p * x + (1 - p) * s.alpha * x

    class DIN(nn.Module):
        """the Deep Interest Network: item and category embeddings (the category an item id's
        remainder), a target item attending over 50 behaviours by an activation unit (an MLP
        with Dice over [q, k, q - k, q * k]), padded behaviours (id 0) zeroed by a mask, the
        unnormalized weighted sum pooled, cat'ed with the target, the behaviours' mean and 8
        dense features, an MLP with Dice, a sigmoid click probability."""

        def __init__(s, items=5000, cats=100, d=32, dense=8):
            super().__init__()
            s.cats = cats
            s.item, s.cat = nn.Embedding(items, d), nn.Embedding(cats, d)
            e = 2 * d
            s.a1, s.d1, s.a2, s.d2 = nn.Linear(4 * e, 80), Dice(80), nn.Linear(80, 40), Dice(40)
            s.a3 = nn.Linear(40, 1)
            s.m1, s.md1 = nn.Linear(3 * e + dense, 200), Dice(200)
            s.m2, s.md2 = nn.Linear(200, 80), Dice(80)
            s.m3 = nn.Linear(80, 1)

        def embed(s, ids):
            return torch.cat([s.item(ids), s.cat(ids % s.cats)], -1)

        def forward(s, hist, target, dense):                  # [B, 50], [B, 1] int64, [B, 8]
            k = s.embed(hist)                                 # [B, T, E]
            q = s.embed(target).expand_as(k)
            a = s.d1(s.a1(torch.cat([q, k, q - k, q * k], -1)))
            w = s.a3(s.d2(s.a2(a)))                           # [B, T, 1]
            mask = (hist != 0).float()[..., None]
            pooled = (w * mask * k).sum(1)
            mean = (k * mask).sum(1) / mask.sum(1).clamp(min=1)
            x = torch.cat([pooled, s.embed(target)[:, 0], mean, dense], -1)
            return torch.sigmoid(s.m3(s.md2(s.m2(s.md1(s.m1(x))))))

    # -- Neural Turing Machine -------------------------------------------------------------

    class NTMHead(nn.Module):
        def __init__(s, ctrl, m, write):
            super().__init__()
            s.m, s.write = m, write
            s.fc = nn.Linear(ctrl, m + 1 + 1 + 3 + 1 + (2 * m if write else 0))

        def address(s, o, mem, w_prev):
            m = s.m
            k, beta, g = o[:, :m], F.softplus(o[:, m:m + 1]), torch.sigmoid(o[:, m + 1:m + 2])
            shift = o[:, m + 2:m + 5].softmax(-1)
            gamma = 1 + F.softplus(o[:, m + 5:m + 6])
            sim = F.cosine_similarity(mem, k[:, None, :], dim=-1, eps=1e-8)
            wc = (beta * sim).softmax(-1)
            wg = g * wc + (1 - g) * w_prev
            ws = (shift[:, 0:1] * torch.roll(wg, -1, 1) + shift[:, 1:2] * wg
                  + shift[:, 2:3] * torch.roll(wg, 1, 1))
            w = ws ** gamma
            return w / (w.sum(-1, keepdim=True) + 1e-16)

        def forward(s, h, mem, w_prev):
            o = s.fc(h)
            w = s.address(o, mem, w_prev)
            if not s.write:
                return w, (w[:, :, None] * mem).sum(1), mem
            m = s.m
            erase, add = torch.sigmoid(o[:, m + 6:2 * m + 6]), torch.tanh(o[:, 2 * m + 6:])
            mem = mem * (1 - w[:, :, None] * erase[:, None, :]) + w[:, :, None] * add[:, None, :]
            return w, None, mem

    class NTM(nn.Module):
        """a Neural Turing Machine unrolled over 20 steps of 8-bit vectors: a GRUCell controller
        of 100 fed the input and the last read, one read and one write head over a 32 x 20
        memory (a learned initial memory expanded over the batch): content addressing by
        F.cosine_similarity and a softmax sharpened by softplus(beta), interpolation with the
        last weights, a 3-way circular shift by torch.roll, sharpening by a pow of 1 +
        softplus(gamma), erase and add writes; sigmoid outputs per step."""

        def __init__(s, x_dim=8, ctrl=100, n=32, m=20):
            super().__init__()
            s.n, s.m, s.ctrl = n, m, ctrl
            s.cell = nn.GRUCell(x_dim + m, ctrl)
            s.read, s.wr = NTMHead(ctrl, m, False), NTMHead(ctrl, m, True)
            s.mem0 = nn.Parameter(torch.randn(1, n, m) * 0.05)
            s.out = nn.Linear(ctrl + m, x_dim)

        def forward(s, x):                                    # [B, 20, 8]
            b, t, _ = x.shape
            mem = s.mem0.expand(b, -1, -1)
            h = x.new_zeros(b, s.ctrl)
            r = x.new_zeros(b, s.m)
            w0 = torch.zeros_like(mem[:, :, 0])
            wr, ww = w0 + 1.0 / s.n, w0 + 1.0 / s.n
            ys = []
            for i in range(t):
                h = s.cell(torch.cat([x[:, i], r], 1), h)
                ww, _, mem = s.wr(h, mem, ww)
                wr, r, _ = s.read(h, mem, wr)
                ys.append(torch.sigmoid(s.out(torch.cat([h, r], 1))))
            return torch.stack(ys, 1)

    # -- p4 group-equivariant CNN -----------------------------------------------------------

    def rot90(w, r):
        # torch.rot90 over the last two axes, as flips and a transpose (the TorchScript-based
        # exporter has no opset-17 symbolic for aten::rot90)
        for _ in range(r % 4):
            w = w.transpose(-1, -2).flip(-2)
        return w

    class LiftConv(nn.Module):
        def __init__(s, cin, cout, k=3):
            super().__init__()
            s.weight = nn.Parameter(torch.randn(cout, cin, k, k) / math.sqrt(cin * k * k))

        def forward(s, x):
            w = torch.stack([rot90(s.weight, r) for r in range(4)], 1)
            return F.conv2d(x, w.flatten(0, 1), padding=1)            # [B, C*4, H, W]

    class P4Conv(nn.Module):
        def __init__(s, cin, cout, k=3):
            super().__init__()
            s.weight = nn.Parameter(torch.randn(cout, cin, 4, k, k) / math.sqrt(cin * 4 * k * k))

        def forward(s, x):
            ws = [rot90(torch.roll(s.weight, r, 2), r) for r in range(4)]
            w = torch.stack(ws, 1)                                    # [Cout, 4, Cin, 4, k, k]
            return F.conv2d(x, w.flatten(0, 1).flatten(1, 2), padding=1)

    class P4BN(nn.Module):
        def __init__(s, c):
            super().__init__()
            s.bn = nn.BatchNorm3d(c)

        def forward(s, x):
            b, _, h, w = x.shape
            return F.relu(s.bn(x.view(b, -1, 4, h, w))).view(b, -1, h, w)

    class P4CNN(nn.Module):
        """a p4 group-equivariant CNN (Cohen & Welling) over 1 x 28 x 28: a lifting conv whose
        kernel is stacked over 4 torch.rot90 rotations, p4 group convs whose kernels are
        rotated spatially and cycled along the orientation axis by torch.roll in the forward,
        BatchNorm3d over (channels, orientations), max pools, a max over the orientations,
        global pooling, a classifier."""

        def __init__(s, c=(10, 16, 24, 32), classes=10):
            super().__init__()
            s.lift, s.bn0 = LiftConv(1, c[0]), P4BN(c[0])
            s.convs = nn.ModuleList([P4Conv(c[i], c[i + 1]) for i in range(3)])
            s.bns = nn.ModuleList([P4BN(c[i + 1]) for i in range(3)])
            s.fc = nn.Linear(c[-1], classes)

        def forward(s, x):                                    # [B, 1, 28, 28]
            y = s.bn0(s.lift(x))
            for i, (conv, bn) in enumerate(zip(s.convs, s.bns)):
                y = bn(conv(y))
                if i < 2:
                    y = F.max_pool2d(y, 2)
            b, _, h, w = y.shape
            y = y.view(b, -1, 4, h, w).amax(2)
            return s.fc(y.mean((2, 3)))

    # -- Hierarchical Attention Network -----------------------------------------------------

    class AttnPool(nn.Module):
        def __init__(s, d, a):
            super().__init__()
            s.proj = nn.Linear(d, a)
            s.ctx = nn.Linear(a, 1, bias=False)

        def forward(s, h, mask=None):                         # [N, T, d]
            u = s.ctx(torch.tanh(s.proj(h))).squeeze(-1)
            if mask is not None:
                u = u.masked_fill(~mask, -1e4)
            a = u.softmax(-1)
            return (a[..., None] * h).sum(1), a

    class HAN(nn.Module):
        """a Hierarchical Attention Network over documents of 8 sentences x 20 words (id 0 =
        padding): embeddings, a word BiGRU over the sentences folded into the batch, attention
        pooling with a learned context vector (padding masked), a sentence BiGRU and
        attention pooling; log-probabilities of 5 classes and the sentence weights out."""

        def __init__(s, vocab=3000, d=64, h=32, classes=5):
            super().__init__()
            s.emb = nn.Embedding(vocab, d, padding_idx=0)
            s.wrnn = nn.GRU(d, h, batch_first=True, bidirectional=True)
            s.watt = AttnPool(2 * h, 64)
            s.srnn = nn.GRU(2 * h, h, batch_first=True, bidirectional=True)
            s.satt = AttnPool(2 * h, 64)
            s.fc = nn.Linear(2 * h, classes)

        def forward(s, ids):                                  # [B, 8, 20] int64
            b, ns, nw = ids.shape
            flat = ids.reshape(b * ns, nw)
            hw, _ = s.wrnn(s.emb(flat))
            sent, _ = s.watt(hw, flat != 0)
            hs, _ = s.srnn(sent.view(b, ns, -1))
            doc, a = s.satt(hs)
            return s.fc(doc).log_softmax(-1), a

    # -- Masked autoregressive flow ---------------------------------------------------------

    class MaskedLinear(nn.Linear):
        def __init__(s, cin, cout, mask):
            super().__init__(cin, cout)
            s.register_buffer("mask", mask)

        def forward(s, x):
            return F.linear(x, s.weight * s.mask, s.bias)

    class MADE(nn.Module):
        def __init__(s, d, hidden, layers=2):
            super().__init__()
            g = torch.Generator().manual_seed(d + hidden)
            degrees = [torch.arange(1, d + 1)]
            for _ in range(layers):
                degrees.append(torch.randint(1, d, (hidden,), generator=g))
            net, cin = [], d
            for i in range(layers):
                mask = (degrees[i + 1][:, None] >= degrees[i][None, :]).float()
                net += [MaskedLinear(cin, hidden, mask), nn.ReLU()]
                cin = hidden
            out_mask = (degrees[0][:, None] > degrees[-1][None, :]).float()
            s.net = nn.Sequential(*net)
            s.mu = MaskedLinear(hidden, d, out_mask)
            s.alpha = MaskedLinear(hidden, d, out_mask)

        def forward(s, x):
            h = s.net(x)
            alpha = torch.tanh(s.alpha(h))
            return (x - s.mu(h)) * torch.exp(-alpha), -alpha.sum(-1)

    class BatchNormFlow(nn.Module):
        def __init__(s, d):
            super().__init__()
            s.log_gamma, s.beta = nn.Parameter(torch.randn(d) * 0.1), nn.Parameter(torch.randn(d) * 0.1)
            s.register_buffer("running_mean", torch.randn(d) * 0.1)
            s.register_buffer("running_var", torch.rand(d) + 0.5)

        def forward(s, x):
            var = s.running_var + 1e-5
            y = (x - s.running_mean) / torch.sqrt(var) * torch.exp(s.log_gamma) + s.beta
            return y, (s.log_gamma - 0.5 * torch.log(var)).sum().expand(x.shape[0])

    class MAF(nn.Module):
        """a masked autoregressive flow over 16 dimensions: 5 MADEs (2 hidden layers of 128,
        degrees drawn once with a seeded generator, weights multiplied by mask buffers,
        shift and tanh-bounded log-scale outputs), each followed by a batch-norm flow layer
        in its eval form and a reversal of the order by flip; the standard normal
        log-likelihood plus the log-determinants out, and the latent."""

        def __init__(s, d=16, hidden=128, flows=5):
            super().__init__()
            s.mades = nn.ModuleList([MADE(d, hidden) for _ in range(flows)])
            s.bns = nn.ModuleList([BatchNormFlow(d) for _ in range(flows)])

        def forward(s, x):                                    # [B, 16]
            logdet = 0
            for made, bn in zip(s.mades, s.bns):
                x, ld = made(x)
                x, ld2 = bn(x)
                logdet = logdet + ld + ld2
                x = x.flip(-1)
            logp = -0.5 * (x * x).sum(-1) - 0.5 * x.shape[-1] * math.log(2 * math.pi)
            return logp + logdet, x

    # -- soft-DTW --------------------------------------------------------------------------

    class SoftDTW(nn.Module):
        """soft-DTW between two encoded series: a shared Conv1d encoder (4 -> 32 -> 16
        channels, stride 2) over two 24-step series, squared distances of the 12 x 12
        encoded steps, the soft-DTW dynamic programme (gamma 0.1) written as a user would: a
        Python double loop over a list of lists, each cell its cost plus a softmin of its
        three predecessors by -gamma * logsumexp(-r / gamma); the final value, and its
        normalized form with the two self-alignments' values subtracted (three programmes)."""

        def __init__(s, cin=4, gamma=0.1):
            super().__init__()
            s.gamma = gamma
            s.enc = nn.Sequential(nn.Conv1d(cin, 32, 5, 2, 2), nn.ReLU(), nn.Conv1d(32, 16, 3, 1, 1))

        def dtw(s, d):                                        # [B, N, M]
            n, m = d.shape[1], d.shape[2]
            inf = torch.full_like(d[:, 0, 0], 1e10)
            r = [[None] * (m + 1) for _ in range(n + 1)]
            r[0][0] = torch.zeros_like(inf)
            for j in range(1, m + 1):
                r[0][j] = inf
            for i in range(1, n + 1):
                r[i][0] = inf
                for j in range(1, m + 1):
                    prev = torch.stack([r[i - 1][j - 1], r[i - 1][j], r[i][j - 1]], -1)
                    r[i][j] = d[:, i - 1, j - 1] - s.gamma * torch.logsumexp(-prev / s.gamma, -1)
            return r[n][m]

        def forward(s, x, ref):                               # [B, 24, 4] each
            a = s.enc(x.transpose(1, 2)).transpose(1, 2)      # [B, 12, 16]
            b = s.enc(ref.transpose(1, 2)).transpose(1, 2)
            def dist(u, v):
                return ((u[:, :, None] - v[:, None]) ** 2).sum(-1)
            xy = s.dtw(dist(a, b))
            return xy, xy - 0.5 * (s.dtw(dist(a, a)) + s.dtw(dist(b, b)))

    return {c.__name__: c for c in (Reformer, SuperGlue, StyleGAN2, SchNet, LSTNet, ECAPA,
                                     OctResNet, BlazeFace, BiDAF, DIN, NTM, P4CNN, HAN, MAF,
                                     SoftDTW)}


# the tests' tolerance per model: atol, rtol
TOLERANCES: dict[str, tuple[float, float]] = {}

_floats = zoo_more._floats
_ids = zoo_more._ids


def _superglue_inputs(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"kpts0": rng.uniform(-1, 1, (batch, 64, 2)).astype(np.float32),
            "desc0": rng.standard_normal((batch, 64, 64)).astype(np.float32) / 8,
            "kpts1": rng.uniform(-1, 1, (batch, 48, 2)).astype(np.float32),
            "desc1": rng.standard_normal((batch, 48, 64)).astype(np.float32) / 8}


def _schnet_inputs(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"z": rng.integers(0, 10, (batch, 16)).astype(np.int64),
            "pos": (rng.standard_normal((batch, 16, 3)) * 1.5).astype(np.float32)}


def _bidaf_inputs(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    ctx = rng.integers(1, 2000, (batch, 64)).astype(np.int64)
    q = rng.integers(1, 2000, (batch, 16)).astype(np.int64)
    for i in range(batch):            # some padding of each, so the masks matter
        ctx[i, 64 - 3 * (i % 5):] = 0
        q[i, 16 - 4 - i % 4:] = 0
    return {"context": ctx, "question": q}


def _din_inputs(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    hist = rng.integers(1, 5000, (batch, 50)).astype(np.int64)
    for i in range(batch):
        hist[i, 10 + (7 * i) % 40:] = 0
    return {"hist": hist, "target": rng.integers(1, 5000, (batch, 1)).astype(np.int64),
            "dense": rng.standard_normal((batch, 8)).astype(np.float32)}


def _ntm_inputs(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"x": rng.integers(0, 2, (batch, 20, 8)).astype(np.float32)}


def _han_inputs(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    ids = rng.integers(1, 3000, (batch, 8, 20)).astype(np.int64)
    for i in range(batch):
        for j in range(8):
            ids[i, j, 20 - (3 * i + 5 * j) % 12:] = 0
    return {"ids": ids}


def _model(name: str, cls_name: str, make_inputs) -> ZooModel:
    return zoo_more._model(name, cls_name, make_inputs, _classes)


PROBE18: dict[str, ZooModel] = {
    m.name: m
    for m in [
        _model("reformer_lsh", "Reformer", _ids(128, 1000)),
        _model("superglue", "SuperGlue", _superglue_inputs),
        _model("stylegan2_gen", "StyleGAN2", _floats(128)),
        _model("schnet", "SchNet", _schnet_inputs),
        _model("lstnet", "LSTNet", _floats(168, 8)),
        _model("ecapa_tdnn", "ECAPA", _floats(80, 200)),
        _model("octave_resnet", "OctResNet", _floats(3, 64, 64)),
        _model("blazeface", "BlazeFace", _floats(3, 128, 128)),
        _model("bidaf", "BiDAF", _bidaf_inputs),
        _model("din", "DIN", _din_inputs),
        _model("ntm", "NTM", _ntm_inputs),
        _model("p4_gcnn", "P4CNN", _floats(1, 28, 28)),
        _model("han_doc", "HAN", _han_inputs),
        _model("maf_flow", "MAF", _floats(16)),
        _model("soft_dtw", "SoftDTW", _floats(24, 4, names=("x", "ref"))),
    ]
}
