"""A probe set of torch.nn models (probe14): kinds the earlier sets did not cover: FastSpeech's
length regulator, twice (phoneme states repeated by predicted integer durations: as a frame ->
phoneme map counted from the durations' cumsum and gathered into frames padded to 4 x T, and
as written with torch.repeat_interleave into one sequence of a data-dependent length), CRF
Viterbi decoding (max / argmax over tags unrolled over time, backtracking by gathers, and the
forward algorithm's logsumexp), a spiking network of leaky integrate-and-fire neurons over 16
unrolled steps (spikes by (v > threshold).float(), resets), DeBERTa's disentangled attention
(content-to-position and position-to-content scores gathered at clamped relative distances),
Nystromformer (landmarks by segment means, an iterative Moore-Penrose pseudo-inverse by
matmuls), Autoformer's auto-correlation (torch.fft.rfft / irfft, top-k delays, a roll by gathers)
with series decomposition, Informer's ProbSparse attention (sampled keys, the top queries by a
sparsity measure, their outputs scattered into the values' mean) with distilling, QuartzNet's
time-channel separable Conv1d blocks (depthwise kernels 33 to 65), a neural cellular automaton
(a fixed Sobel perception conv, a 1x1 update, 8 steps under an alive mask from a max pool),
inpainting by partial convolutions (mask-renormalized convs, masks updated by max pools), RAFT's
all-pairs correlation volume with an avg_pool pyramid looked up by grid_sample around a flow,
a stereo cost volume (left and shifted right features over 8 disparities, 3-D convs,
soft-argmin), VQ-VAE quantization (distances to a codebook, argmin, an embedding lookup,
straight-through), a two-level Glow (squeeze, ActNorm, an invertible 1x1 conv, affine coupling,
a split prior; log-determinants) and a DLA-like CNN (hierarchical deep aggregation trees,
a HarDNet harmonic dense block, iterative deep aggregation up to a heat map). Seeded random
weights. `bench/zoo.py --set probe14`.

Where a torch exporter cannot write one of these (torch 2.13), the model is checked through the
other: the TorchScript-based exporter has no opset-17 symbolic for aten::fft_rfft (Autoformer).
For the repeat_interleave length regulator the TorchScript-based exporter writes a graph that
neither runtime runs: repeats computed in the graph become SplitToSequence with a computed
split, then ConcatFromSequence, which onnxruntime 1.32 rejects at every batch ("Non concat axis
dimensions must match") and dlvm's import refuses (a sequence of computed shapes); the dynamo
export (CumSum, Range, GatherND) runs in both. Every other model exports with both.
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

    # -- sequence models -------------------------------------------------------------------

    class LengthRegulator(nn.Module):
        """FastSpeech's length regulator: a conv encoder over phoneme ids, a duration predictor
        (log durations rounded, clamped to 1..4 frames), each phoneme's state repeated by its
        duration: the frame -> phoneme map counted from the durations' cumsum (a frame's
        phoneme is the number of phonemes ended before it), padded to 4 x T frames, then a
        conv decoder to 40 mel bins; the durations and mel lengths are outputs too."""

        def __init__(s, vocab=100, d=96, max_dur=4, mel=40):
            super().__init__()
            s.max_dur = max_dur
            s.emb = nn.Embedding(vocab, d)
            s.enc = nn.ModuleList([nn.Conv1d(d, d, 5, padding=2) for _ in range(2)])
            s.enc_ln = nn.ModuleList([nn.LayerNorm(d) for _ in range(2)])
            s.dur = nn.Sequential(nn.Conv1d(d, d, 3, padding=1), nn.ReLU())
            s.dur_out = nn.Linear(d, 1)
            s.dec = nn.Conv1d(d, d, 5, padding=2)
            s.dec_ln = nn.LayerNorm(d)
            s.mel = nn.Linear(d, mel)

        def encode(s, ids):                                  # [B, T] int64
            h = s.emb(ids)
            for conv, ln in zip(s.enc, s.enc_ln):
                h = ln(h + torch.relu(conv(h.transpose(1, 2))).transpose(1, 2))
            logd = s.dur_out(s.dur(h.transpose(1, 2)).transpose(1, 2)).squeeze(-1) + 0.7
            return h, torch.clamp(torch.round(torch.exp(logd)), 1, s.max_dur).long()  # [B, T]

        def forward(s, ids):                                 # [B, T] int64
            t = ids.shape[1]
            h, dur = s.encode(ids)
            ends = torch.cumsum(dur, 1)
            frames = torch.arange(t * s.max_dur, device=ids.device)                # [L]
            idx = (ends[:, None, :] <= frames[None, :, None]).long().sum(-1)       # [B, L]
            valid = (frames[None, :] < ends[:, -1:]).float()                       # [B, L]
            up = torch.gather(h, 1, idx.clamp(max=t - 1)[..., None].expand(-1, -1, h.shape[2]))
            up = up * valid[..., None]
            y = s.dec_ln(up + torch.relu(s.dec(up.transpose(1, 2))).transpose(1, 2))
            return s.mel(y) * valid[..., None], dur, ends[:, -1]

    class LengthRegulatorRI(LengthRegulator):
        """the length regulator as written with torch.repeat_interleave: the batch's phoneme
        states repeated by their predicted durations into one sequence of a data-dependent
        length (every sample's frames in turn), a per-frame MLP to 40 mel bins; the frames,
        the durations and each sample's frame count out."""

        def __init__(s, d=96, mel=40):
            super().__init__(d=d, mel=mel)
            s.frame = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, mel))

        def forward(s, ids):                                 # [B, T] int64
            h, dur = s.encode(ids)
            frames = torch.repeat_interleave(h.reshape(-1, h.shape[2]), dur.reshape(-1), dim=0)
            return s.frame(frames), dur, dur.sum(1)          # [sum(dur), 40], [B, T], [B]

    class CRFTagger(nn.Module):
        """a CRF tagger's decoding: a conv emission head (no BiLSTM) over token ids, then
        Viterbi over 12 tags unrolled over time (max and argmax of score + transitions +
        emissions), backtracking by gathers; the best path, its score and the log-partition
        (the forward algorithm's logsumexp recursion)."""

        def __init__(s, vocab=500, d=96, tags=12):
            super().__init__()
            s.emb = nn.Embedding(vocab, d)
            s.conv = nn.Conv1d(d, d, 5, padding=2)
            s.em = nn.Linear(d, tags)
            s.trans = nn.Parameter(torch.randn(tags, tags))
            s.start = nn.Parameter(torch.randn(tags))
            s.end = nn.Parameter(torch.randn(tags))

        def forward(s, ids):                                 # [B, T] int64
            h = s.emb(ids)
            em = s.em(h + torch.relu(s.conv(h.transpose(1, 2))).transpose(1, 2))   # [B, T, K]
            score = s.start + em[:, 0]
            alpha = score
            bps = []
            for t in range(1, ids.shape[1]):
                nxt = score[:, :, None] + s.trans[None] + em[:, t, None, :]
                score, bp = nxt.max(1)
                bps.append(bp)
                alpha = torch.logsumexp(alpha[:, :, None] + s.trans[None], 1) + em[:, t]
            score = score + s.end
            best, tag = score.max(1)
            path = [tag]
            for bp in reversed(bps):
                tag = bp.gather(1, tag[:, None]).squeeze(1)
                path.append(tag)
            return (torch.stack(path[::-1], 1), best,
                    torch.logsumexp(alpha + s.end, 1))

    class SpikingNet(nn.Module):
        """a spiking MLP: leaky integrate-and-fire neurons unrolled over 16 time steps
        (membrane v = beta v + W x, spike = (v > threshold).float(), a hard reset in the first
        layer and a reset by subtraction in the second), a non-spiking leaky readout; the
        readout membrane and the spike rates out."""

        def __init__(s, feats=64, d=256, classes=10, steps=16, beta=0.9, th=1.0):
            super().__init__()
            s.steps, s.beta, s.th = steps, beta, th
            s.fc1, s.fc2 = nn.Linear(feats, d), nn.Linear(d, d)
            s.fc3 = nn.Linear(d, classes)

        def forward(s, x):                                   # [B, 16, 64] input currents
            v1 = torch.zeros_like(s.fc1(x[:, 0]))
            v2, v3 = torch.zeros_like(v1), torch.zeros_like(s.fc3(v1))
            rate = torch.zeros_like(v1)
            for t in range(s.steps):
                v1 = s.beta * v1 + s.fc1(x[:, t])
                s1 = (v1 > s.th).float()
                v1 = v1 * (1.0 - s1)
                v2 = s.beta * v2 + s.fc2(s1) * 2.0
                s2 = (v2 > s.th).float()
                v2 = v2 - s2 * s.th
                v3 = s.beta * v3 + s.fc3(s2)
                rate = rate + s2
            return v3, rate / s.steps

    class DebertaLayer(nn.Module):
        def __init__(s, d, heads, span):
            super().__init__()
            s.h, s.dh, s.span = heads, d // heads, span
            s.qkv, s.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            s.pos_q, s.pos_k = nn.Linear(d, d), nn.Linear(d, d, bias=False)
            s.n1, s.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            s.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(s, x, rel, idx, keep):  # rel [2k, d], idx [1, 1, T, T], keep [B,1,1,T]
            b, t, d = x.shape
            q, k, v = s.qkv(x).view(b, t, 3, s.h, s.dh).permute(2, 0, 3, 1, 4)
            pq = s.pos_q(rel).view(-1, s.h, s.dh).transpose(0, 1)       # [H, 2k, dh]
            pk = s.pos_k(rel).view(-1, s.h, s.dh).transpose(0, 1)
            gidx = idx.expand(b, s.h, t, t)
            c2c = q @ k.transpose(-1, -2)
            c2p = torch.gather(q @ pk.transpose(-1, -2), -1, gidx)     # query i, delta(i, j)
            p2c = torch.gather(k @ pq.transpose(-1, -2), -1, gidx).transpose(-1, -2)
            att = (c2c + c2p + p2c) / math.sqrt(3 * s.dh)
            att = att.masked_fill(~keep, -1e4).softmax(-1)
            x = s.n1(x + s.o((att @ v).transpose(1, 2).reshape(b, t, d)))
            return s.n2(x + s.ff(x))

    class Deberta(nn.Module):
        """DeBERTa's disentangled attention: content-to-content, content-to-position and
        position-to-content scores, the relative-position terms picked by torch.gather on
        relative distances clamped to +-12 (a [2k, d] relative embedding, its own query and
        key projections), a padding mask from the ids; 2 layers, a pooled classifier."""

        def __init__(s, vocab=1000, d=96, heads=4, t=32, span=12, layers=2, classes=3):
            super().__init__()
            s.emb = nn.Embedding(vocab, d, padding_idx=0)
            s.ln = nn.LayerNorm(d)
            s.rel = nn.Parameter(0.1 * torch.randn(2 * span, d))
            s.rel_ln = nn.LayerNorm(d)
            pos = torch.arange(t)
            s.register_buffer("idx", torch.clamp(pos[:, None] - pos[None, :] + span, 0,
                                                 2 * span - 1)[None, None])
            s.layers = nn.ModuleList([DebertaLayer(d, heads, span) for _ in range(layers)])
            s.fc = nn.Linear(d, classes)

        def forward(s, ids):                                 # [B, 32] int64, 0 = padding
            keep = (ids != 0)[:, None, None, :]
            x = s.ln(s.emb(ids))
            rel = s.rel_ln(s.rel)
            for layer in s.layers:
                x = layer(x, rel, s.idx, keep)
            return s.fc(x[:, 0])

    class NystromLayer(nn.Module):
        def __init__(s, d, heads, landmarks, iters=6, conv_k=17):
            super().__init__()
            s.h, s.dh, s.m, s.iters = heads, d // heads, landmarks, iters
            s.qkv, s.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            s.conv = nn.Conv2d(heads, heads, (conv_k, 1), padding=(conv_k // 2, 0), groups=heads,
                               bias=False)
            s.n1, s.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            s.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
            s.register_buffer("eye", torch.eye(landmarks))

        def pinv(s, k):                                      # [B, H, m, m]
            # (a per-sample scale: the paper's max over the whole batch couples the samples)
            z = k.transpose(-1, -2) / (k.sum(-1).amax(-1)[..., None, None] *
                                       k.sum(-2).amax(-1)[..., None, None])
            for _ in range(s.iters):
                kz = k @ z
                z = 0.25 * z @ (13 * s.eye - kz @ (15 * s.eye - kz @ (7 * s.eye - kz)))
            return z

        def forward(s, x):                                   # [B, N, d]
            b, n, d = x.shape
            y = s.n1(x)
            q, k, v = s.qkv(y).view(b, n, 3, s.h, s.dh).permute(2, 0, 3, 1, 4)
            q, k = q / s.dh ** 0.25, k / s.dh ** 0.25
            ql = q.reshape(b, s.h, s.m, n // s.m, s.dh).mean(-2)
            kl = k.reshape(b, s.h, s.m, n // s.m, s.dh).mean(-2)
            k1 = (q @ kl.transpose(-1, -2)).softmax(-1)
            k2 = (ql @ kl.transpose(-1, -2)).softmax(-1)
            k3 = (ql @ k.transpose(-1, -2)).softmax(-1)
            a = (k1 @ s.pinv(k2)) @ (k3 @ v) + s.conv(v)
            x = x + s.o(a.transpose(1, 2).reshape(b, n, d))
            return x + s.ff(s.n2(x))

    class Nystromformer(nn.Module):
        """Nystromformer: attention approximated through 8 landmarks (segment means of the
        queries and keys), the landmark kernel's Moore-Penrose pseudo-inverse by 6 iterations
        of matrix products, a depthwise conv skip on the values; 2 layers over 64 tokens."""

        def __init__(s, feats=32, d=64, heads=4, landmarks=8, layers=2, classes=10):
            super().__init__()
            s.inp = nn.Linear(feats, d)
            s.layers = nn.ModuleList([NystromLayer(d, heads, landmarks) for _ in range(layers)])
            s.ln, s.fc = nn.LayerNorm(d), nn.Linear(d, classes)

        def forward(s, x):                                   # [B, 64, 32]
            x = s.inp(x)
            for layer in s.layers:
                x = layer(x)
            return s.fc(s.ln(x).mean(1))

    class AutoCorrelation(nn.Module):
        def __init__(s, d, factor=1.0):
            super().__init__()
            s.factor = factor
            s.q, s.k, s.v, s.o = (nn.Linear(d, d) for _ in range(4))

        def forward(s, x):                                   # [B, L, d]
            length = x.shape[1]
            q, k, v = s.q(x), s.k(x), s.v(x)
            corr = torch.fft.irfft(torch.fft.rfft(q, dim=1) * torch.conj(torch.fft.rfft(k, dim=1)),
                                   n=length, dim=1)          # [B, L, d]
            top = int(s.factor * math.log(length))
            w, delay = torch.topk(corr.mean(-1), top, dim=-1)                      # [B, top]
            w = w.softmax(-1)
            vv = torch.cat([v, v], 1)
            init = torch.arange(length, device=x.device)[None, :, None]
            agg = 0
            for i in range(top):
                idx = (init + delay[:, i, None, None]).expand(-1, -1, v.shape[2])
                agg = agg + torch.gather(vv, 1, idx) * w[:, i, None, None]
            return s.o(agg)

    class Decomp(nn.Module):
        """series decomposition: a moving average (replicate padded) is the trend."""

        def __init__(s, k=13):
            super().__init__()
            s.k = k

        def forward(s, x):                                   # [B, L, d]
            t = x.transpose(1, 2)
            trend = F.avg_pool1d(F.pad(t, ((s.k - 1) // 2, (s.k - 1) // 2), mode="replicate"),
                                 s.k, 1).transpose(1, 2)
            return x - trend, trend

    class Autoformer(nn.Module):
        """Autoformer's encoder: auto-correlation (torch.fft.rfft of queries and keys, the
        product with the conjugate, irfft: the correlation over every delay; the top
        log(L) delays per sample by topk, values rolled by gathers from a doubled sequence and
        summed with softmax weights) and series decomposition by a moving average; 2 layers,
        a forecast head over 64 steps of 7 series."""

        def __init__(s, feats=7, d=64, length=64, layers=2, horizon=16):
            super().__init__()
            s.emb = nn.Linear(feats, d)
            s.attn = nn.ModuleList([AutoCorrelation(d) for _ in range(layers)])
            s.ff = nn.ModuleList([nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(),
                                                nn.Linear(2 * d, d)) for _ in range(layers)])
            s.decomp = Decomp()
            s.proj = nn.Linear(d, feats)
            s.time = nn.Linear(length, horizon)

        def forward(s, x):                                   # [B, 64, 7]
            seasonal, trend = s.decomp(x)
            h = s.emb(seasonal)
            for attn, ff in zip(s.attn, s.ff):
                h, _ = s.decomp(h + attn(h))
                h, _ = s.decomp(h + ff(h))
            y = s.proj(h) + trend                            # [B, 64, 7]
            return s.time(y.transpose(1, 2)).transpose(1, 2)

    class ProbAttention(nn.Module):
        def __init__(s, d, heads, length, factor=3):
            super().__init__()
            s.h, s.dh = heads, d // heads
            s.u = factor * math.ceil(math.log(length))
            g = torch.Generator().manual_seed(length)
            s.register_buffer("sample", torch.randint(0, length, (length, s.u), generator=g))
            s.qkv, s.o = nn.Linear(d, 3 * d), nn.Linear(d, d)

        def forward(s, x):                                   # [B, L, d]
            b, length, d = x.shape
            q, k, v = s.qkv(x).view(b, length, 3, s.h, s.dh).permute(2, 0, 3, 1, 4)
            ks = k[:, :, s.sample, :]                        # [B, H, L, u, dh]
            qk = (q.unsqueeze(-2) @ ks.transpose(-2, -1)).squeeze(-2)               # [B, H, L, u]
            sparsity = qk.amax(-1) - qk.sum(-1) / length
            top = sparsity.topk(s.u, -1, sorted=False)[1]    # [B, H, u]
            tidx = top[..., None].expand(-1, -1, -1, s.dh)
            qr = torch.gather(q, 2, tidx)
            att = (qr @ k.transpose(-1, -2) / math.sqrt(s.dh)).softmax(-1)
            ctx = v.mean(2, keepdim=True).expand(-1, -1, length, -1)
            ctx = ctx.scatter(2, tidx, att @ v)
            return s.o(ctx.transpose(1, 2).reshape(b, length, d))

    class Informer(nn.Module):
        """Informer's encoder: ProbSparse self-attention (a fixed seeded sample of keys per
        query, the queries' sparsity max - mean, the top u = 3 ceil(ln L) queries by topk
        attend fully, gathered, and their outputs scattered into the values' mean for the
        rest) and self-attention distilling (Conv1d, BatchNorm, ELU, a stride-2 max pool)
        between the 2 layers (96 -> 48 steps)."""

        def __init__(s, feats=7, d=64, heads=4, length=96):
            super().__init__()
            s.emb = nn.Conv1d(feats, d, 3, padding=1)
            s.a1, s.a2 = ProbAttention(d, heads, length), ProbAttention(d, heads, length // 2)
            s.f1, s.f2 = (nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
                          for _ in range(2))
            s.n = nn.ModuleList([nn.LayerNorm(d) for _ in range(4)])
            s.distil = nn.Sequential(nn.Conv1d(d, d, 3, padding=1), nn.BatchNorm1d(d), nn.ELU(),
                                     nn.MaxPool1d(3, 2, 1))
            s.fc = nn.Linear(d, feats)

        def forward(s, x):                                   # [B, 96, 7]
            h = s.emb(x.transpose(1, 2)).transpose(1, 2)
            h = s.n[0](h + s.a1(h))
            h = s.n[1](h + s.f1(h))
            h = s.distil(h.transpose(1, 2)).transpose(1, 2)  # [B, 48, d]
            h = s.n[2](h + s.a2(h))
            h = s.n[3](h + s.f2(h))
            return s.fc(h)

    class QTCS(nn.Module):
        """a time-channel separable conv: depthwise Conv1d (a large kernel), pointwise, BN."""

        def __init__(s, cin, cout, k, stride=1, dilation=1):
            super().__init__()
            s.dw = nn.Conv1d(cin, cin, k, stride, dilation * (k // 2), dilation, groups=cin,
                             bias=False)
            s.pw = nn.Conv1d(cin, cout, 1, bias=False)
            s.bn = nn.BatchNorm1d(cout)

        def forward(s, x):
            return s.bn(s.pw(s.dw(x)))

    class QBlock(nn.Module):
        def __init__(s, cin, cout, k, repeat=2):
            super().__init__()
            s.subs = nn.ModuleList([QTCS(cin if i == 0 else cout, cout, k) for i in range(repeat)])
            s.res = nn.Sequential(nn.Conv1d(cin, cout, 1, bias=False), nn.BatchNorm1d(cout))

        def forward(s, x):
            y = x
            for i, sub in enumerate(s.subs):
                y = sub(y)
                if i < len(s.subs) - 1:
                    y = torch.relu(y)
            return torch.relu(y + s.res(x))

    class QuartzNet(nn.Module):
        """QuartzNet / Jasper: 1-D time-channel separable blocks (depthwise Conv1d with kernels
        33, 39, 51, 63, pointwise, BatchNorm, a residual 1x1 + BN), a stride-2 prologue and a
        dilated k=65 epilogue, CTC log-probabilities over 29 symbols."""

        def __init__(s, feats=64, c=64, vocab=29):
            super().__init__()
            s.pro = QTCS(feats, c, 33, stride=2)
            s.blocks = nn.Sequential(QBlock(c, c, 33), QBlock(c, c, 39), QBlock(c, 96, 51),
                                     QBlock(96, 96, 63))
            s.epi = QTCS(96, 128, 65, dilation=2)
            s.out = nn.Conv1d(128, vocab, 1)

        def forward(s, x):                                   # [B, 64 mel, 64 frames]
            h = torch.relu(s.pro(x))
            h = torch.relu(s.epi(s.blocks(h)))
            return s.out(h).transpose(1, 2).log_softmax(-1)  # [B, 32, 29]

    # -- vision ------------------------------------------------------------------------------

    class NCA(nn.Module):
        """a neural cellular automaton: a fixed perception (identity, Sobel x, Sobel y as a
        depthwise 3x3 conv over 16 state channels), a 1x1 update MLP, 8 unrolled steps, cells
        alive where a 3x3 max pool of the alpha channel exceeds 0.1 before and after the
        update."""

        def __init__(s, ch=16, hidden=48, steps=8):
            super().__init__()
            s.ch, s.steps = ch, steps
            ident = torch.tensor([[0.0, 0, 0], [0, 1, 0], [0, 0, 0]])
            sx = torch.tensor([[-1.0, 0, 1], [-2, 0, 2], [-1, 0, 1]]) / 8
            k = torch.stack([ident, sx, sx.t()])             # [3, 3, 3]
            s.register_buffer("perceive", k.repeat(ch, 1, 1)[:, None])              # [3ch,1,3,3]
            s.w1 = nn.Conv2d(3 * ch, hidden, 1)
            s.w2 = nn.Conv2d(hidden, ch, 1)
            with torch.no_grad():
                s.w2.weight.mul_(0.3)

        def alive(s, x):
            return F.max_pool2d(x[:, 3:4], 3, 1, 1) > 0.1

        def forward(s, x):                                   # [B, 16, 24, 24]
            for _ in range(s.steps):
                pre = s.alive(x)
                y = F.conv2d(x, s.perceive, padding=1, groups=s.ch)
                x = x + s.w2(torch.relu(s.w1(y)))
                x = x * (pre & s.alive(x)).float()
            return torch.sigmoid(x[:, :4]), x

    class PConv(nn.Module):
        """a partial convolution: the conv of the masked input renormalized by the mask's
        coverage of each window (k^2 / sum(mask)), zero where the window saw no valid pixel;
        the mask updated by a max pool."""

        def __init__(s, cin, cout, k, stride=1):
            super().__init__()
            s.k, s.stride = k, stride
            s.conv = nn.Conv2d(cin, cout, k, stride, k // 2, bias=False)
            s.bias = nn.Parameter(0.1 * torch.randn(cout))
            s.register_buffer("ones", torch.ones(1, 1, k, k))

        def forward(s, x, m):                                # [B, C, H, W], [B, 1, H, W]
            cover = F.conv2d(m, s.ones, stride=s.stride, padding=s.k // 2)
            nm = F.max_pool2d(m, s.k, s.stride, s.k // 2)
            y = s.conv(x * m) * (s.k * s.k / cover.clamp(min=1.0)) + s.bias[None, :, None, None]
            return y * nm, nm

    class PartialConvNet(nn.Module):
        """inpainting with partial convolutions: 3 encoder layers (7x7, 5x5, 3x3, stride 2)
        and 2 decoder layers over nearest-upsampled features concatenated with the skips
        (their masks merged by a max), the known pixels composited back."""

        def __init__(s):
            super().__init__()
            s.e1, s.e2, s.e3 = PConv(3, 32, 7, 2), PConv(32, 48, 5, 2), PConv(48, 48, 3, 2)
            s.d2, s.d1 = PConv(96, 48, 3), PConv(80, 24, 3)
            s.out = nn.Conv2d(27, 3, 3, padding=1)

        def forward(s, x, mask):                             # [B, 3, 32, 32], [B, 1, 32, 32]
            up = functools.partial(F.interpolate, scale_factor=2.0, mode="nearest")
            h1, m1 = s.e1(x, mask)
            h1 = torch.relu(h1)
            h2, m2 = s.e2(h1, m1)
            h2 = torch.relu(h2)
            h3, m3 = s.e3(h2, m2)
            h3 = torch.relu(h3)
            g2, n2 = s.d2(torch.cat([up(h3), h2], 1), torch.maximum(up(m3), m2))
            g2 = F.leaky_relu(g2, 0.2)
            g1, n1 = s.d1(torch.cat([up(g2), h1], 1), torch.maximum(up(n2), m1))
            g1 = F.leaky_relu(g1, 0.2)
            y = torch.sigmoid(s.out(torch.cat([up(g1), x], 1)))
            return y * (1 - mask) + x * mask, up(n1)

    class RAFTCorr(nn.Module):
        """RAFT's correlation lookup: a conv feature encoder (stride 4) on both images, the
        all-pairs correlation volume by one matmul, a 3-level pyramid of it by avg_pool, an
        initial flow from the features, a 5x5 window of the volume around each pixel's flow
        target at each level by grid_sample, and a conv update of the flow."""

        def __init__(s, c=32, levels=3, r=2):
            super().__init__()
            s.levels, s.r = levels, r
            s.fnet = nn.Sequential(nn.Conv2d(3, 16, 7, 2, 3), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1),
                                   nn.ReLU(), nn.Conv2d(32, c, 1))
            s.init = nn.Conv2d(2 * c, 2, 3, padding=1)
            s.update = nn.Sequential(nn.Conv2d(levels * (2 * r + 1) ** 2 + 2, 32, 3, padding=1),
                                     nn.ReLU(), nn.Conv2d(32, 2, 3, padding=1))
            d = torch.arange(-r, r + 1, dtype=torch.float32)
            dy, dx = torch.meshgrid(d, d, indexing="ij")
            s.register_buffer("delta", torch.stack([dx, dy], -1)[None])            # [1,5,5,2]

        def forward(s, im1, im2):                            # [B, 3, 48, 48] x 2
            f1, f2 = s.fnet(im1), s.fnet(im2)
            b, c, h, w = f1.shape
            corr = (f1.flatten(2).transpose(1, 2) @ f2.flatten(2)) / math.sqrt(c)   # [B,HW,HW]
            pyramid = [corr.reshape(-1, 1, h, w)]
            for _ in range(s.levels - 1):
                pyramid.append(F.avg_pool2d(pyramid[-1], 2))
            flow = 2.0 * torch.tanh(s.init(torch.cat([f1, f2], 1)))                 # [B,2,H,W]
            ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float32),
                                    torch.arange(w, dtype=torch.float32), indexing="ij")
            coords = torch.stack([xs, ys])[None] + flow                            # pixels
            coords = coords.permute(0, 2, 3, 1).reshape(-1, 1, 1, 2)                # [BHW,1,1,2]
            feats = []
            for i, level in enumerate(pyramid):
                hi, wi = level.shape[-2:]
                at = coords / 2 ** i + s.delta                                     # [BHW,5,5,2]
                scale = torch.tensor([2.0 / (wi - 1), 2.0 / (hi - 1)])
                look = F.grid_sample(level, at * scale - 1, mode="bilinear",
                                     padding_mode="zeros", align_corners=True)      # [BHW,1,5,5]
                feats.append(look.reshape(b, h, w, -1))
            cf = torch.cat(feats, -1).permute(0, 3, 1, 2)
            return flow + s.update(torch.cat([cf, flow], 1))

    class StereoNet(nn.Module):
        """a stereo network's concatenation cost volume: shared conv features of the left and
        right images, for each of 8 disparities the left features beside the right ones shifted
        by the disparity (slices and zero pads, stacked along a depth dim), a 3-D conv
        aggregation, soft-argmin over the disparities, bilinear upsampling."""

        def __init__(s, c=8, disp=8):
            super().__init__()
            s.disp = disp
            s.feat = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16),
                                   nn.ReLU(), nn.Conv2d(16, c, 3, 1, 1, bias=False),
                                   nn.BatchNorm2d(c), nn.ReLU())
            s.agg = nn.Sequential(nn.Conv3d(2 * c, 8, 3, padding=1, bias=False), nn.BatchNorm3d(8),
                                  nn.ReLU(), nn.Conv3d(8, 8, 3, padding=1, bias=False),
                                  nn.BatchNorm3d(8), nn.ReLU(), nn.Conv3d(8, 1, 3, padding=1))

        def forward(s, left, right):                         # [B, 3, 24, 48] x 2
            fl, fr = s.feat(left), s.feat(right)             # [B, c, 12, 24]
            vols = [torch.cat([fl, fr], 1)]
            for d in range(1, s.disp):
                vols.append(torch.cat([F.pad(fl[..., d:], (d, 0)), F.pad(fr[..., :-d], (d, 0))], 1))
            cost = s.agg(torch.stack(vols, 2)).squeeze(1)    # [B, D, 12, 24]
            p = (-cost).softmax(1)
            disp = (p * torch.arange(s.disp, dtype=torch.float32)[None, :, None, None]).sum(1)
            return 2 * F.interpolate(disp[:, None], scale_factor=2.0, mode="bilinear",
                                     align_corners=False)

    class VQVAE(nn.Module):
        """VQ-VAE: a conv encoder to 8x8 latents of 32 dims, each snapped to the nearest of 256
        codebook vectors (squared distances by a matmul, argmin, an embedding lookup,
        straight-through), a transposed-conv decoder; the reconstruction, the codes and the
        commitment loss out."""

        def __init__(s, d=32, codes=256):
            super().__init__()
            s.enc = nn.Sequential(nn.Conv2d(3, 32, 4, 2, 1), nn.ReLU(), nn.Conv2d(32, 64, 4, 2, 1),
                                  nn.ReLU(), nn.Conv2d(64, 64, 3, 1, 1), nn.ReLU(),
                                  nn.Conv2d(64, d, 1))
            s.codebook = nn.Embedding(codes, d)
            s.dec = nn.Sequential(nn.Conv2d(d, 64, 3, 1, 1), nn.ReLU(),
                                  nn.ConvTranspose2d(64, 32, 4, 2, 1), nn.ReLU(),
                                  nn.ConvTranspose2d(32, 3, 4, 2, 1), nn.Tanh())

        def forward(s, x):                                   # [B, 3, 32, 32]
            z = s.enc(x)
            b, d, h, w = z.shape
            flat = z.permute(0, 2, 3, 1).reshape(-1, d)
            e = s.codebook.weight
            dist = (flat * flat).sum(1, keepdim=True) - 2 * flat @ e.t() + (e * e).sum(1)[None]
            codes = dist.argmin(1)
            q = s.codebook(codes).view(-1, h, w, d).permute(0, 3, 1, 2)
            commit = ((q - z) ** 2).mean((1, 2, 3))
            q = z + (q - z).detach()
            return s.dec(q), codes.view(-1, h, w), commit

    class ActNorm(nn.Module):
        def __init__(s, c):
            super().__init__()
            s.bias = nn.Parameter(0.1 * torch.randn(1, c, 1, 1))
            s.logs = nn.Parameter(0.1 * torch.randn(1, c, 1, 1))

        def forward(s, x):
            return (x + s.bias) * s.logs.exp(), s.logs.sum() * x.shape[2] * x.shape[3]

    class InvConv(nn.Module):
        def __init__(s, c):
            super().__init__()
            g = torch.Generator().manual_seed(c)
            q = torch.linalg.qr(torch.randn(c, c, generator=g))[0]
            w = q @ (torch.eye(c) + 0.1 * torch.triu(torch.randn(c, c, generator=g), 1))
            w = w * torch.exp(0.1 * torch.randn(c, generator=g))[None]
            s.register_buffer("w", w[:, :, None, None])
            s.logdet = float(torch.linalg.slogdet(w)[1])

        def forward(s, x):
            return F.conv2d(x, s.w), s.logdet * x.shape[2] * x.shape[3]

    class Coupling(nn.Module):
        def __init__(s, c, hidden):
            super().__init__()
            s.nn = nn.Sequential(nn.Conv2d(c // 2, hidden, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(hidden, hidden, 1), nn.ReLU(),
                                 nn.Conv2d(hidden, c, 3, padding=1))
            with torch.no_grad():
                s.nn[-1].weight.mul_(0.1)

        def forward(s, x):
            xa, xb = x.chunk(2, 1)
            h = s.nn(xa)
            shift, scale = h[:, 0::2], torch.sigmoid(h[:, 1::2] + 2.0)
            return torch.cat([xa, (xb + shift) * scale], 1), scale.log().sum((1, 2, 3))

    class Glow(nn.Module):
        """Glow: a squeeze (space to depth by reshape and permute), flow steps of ActNorm, an
        invertible 1x1 conv (a fixed seeded matrix, its log-determinant a constant) and an
        affine coupling, a split with a learned conv prior, a second level; the latent, the
        log-determinant and the log-likelihood in bits per dim out."""

        def __init__(s, hidden=48, steps=3):
            super().__init__()
            s.l1 = nn.ModuleList([m for _ in range(steps)
                                  for m in (ActNorm(12), InvConv(12), Coupling(12, hidden))])
            s.prior = nn.Conv2d(6, 12, 3, padding=1)
            s.l2 = nn.ModuleList([m for _ in range(steps)
                                  for m in (ActNorm(24), InvConv(24), Coupling(24, hidden))])

        @staticmethod
        def squeeze(x):
            b, c, h, w = x.shape
            x = x.reshape(-1, c, h // 2, 2, w // 2, 2).permute(0, 1, 3, 5, 2, 4)
            return x.reshape(-1, 4 * c, h // 2, w // 2)

        @staticmethod
        def gauss(z, mean, logs):
            return (-0.5 * (math.log(2 * math.pi) + 2 * logs + (z - mean) ** 2 * torch.exp(-2 * logs))
                    ).sum((1, 2, 3))

        def forward(s, x):                                   # [B, 3, 32, 32]
            z = s.squeeze(x)                                 # [B, 12, 16, 16]
            logdet = 0.0
            for m in s.l1:
                z, ld = m(z)
                logdet = logdet + ld
            z1, z2 = z.chunk(2, 1)
            mean, logs = s.prior(z1).chunk(2, 1)
            logp = s.gauss(z2, mean, torch.tanh(logs))
            z = s.squeeze(z1)                                # [B, 24, 8, 8]
            for m in s.l2:
                z, ld = m(z)
                logdet = logdet + ld
            logp = logp + s.gauss(z, torch.zeros_like(z), torch.zeros_like(z))
            bpd = -(logp + logdet) / (math.log(2.0) * 3 * 32 * 32)
            return z, logdet, bpd

    def bn_relu(cin, cout, k=3, stride=1):
        return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU())

    class DLABasic(nn.Module):
        def __init__(s, cin, cout, stride=1):
            super().__init__()
            s.c1 = bn_relu(cin, cout, 3, stride)
            s.c2 = nn.Sequential(nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))

        def forward(s, x, residual=None):
            return torch.relu(s.c2(s.c1(x)) + (x if residual is None else residual))

    class Root(nn.Module):
        def __init__(s, cin, cout, residual):
            super().__init__()
            s.conv = nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout))
            s.residual = residual

        def forward(s, *xs):
            y = s.conv(torch.cat(xs, 1))
            return torch.relu(y + xs[0] if s.residual else y)

    class Tree(nn.Module):
        """DLA's hierarchical deep aggregation: a tree of blocks whose nodes' outputs are
        concatenated (with the level's input, at a level root) and aggregated by a 1x1 conv."""

        def __init__(s, levels, cin, cout, stride=1, level_root=False, root_dim=0):
            super().__init__()
            root_dim = (root_dim or 2 * cout) + (cin if level_root else 0)
            s.levels, s.level_root = levels, level_root
            if levels == 1:
                s.tree1, s.tree2 = DLABasic(cin, cout, stride), DLABasic(cout, cout)
                s.root = Root(root_dim, cout, residual=True)
            else:
                s.tree1 = Tree(levels - 1, cin, cout, stride)
                s.tree2 = Tree(levels - 1, cout, cout, root_dim=root_dim + cout)
            s.down = nn.MaxPool2d(stride, stride) if stride > 1 else nn.Identity()
            s.project = (nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout))
                         if cin != cout else nn.Identity())

        def forward(s, x, residual=None, children=None):
            children = [] if children is None else children
            bottom = s.down(x)
            if s.level_root:
                children.append(bottom)
            x1 = s.tree1(x, s.project(bottom))
            if s.levels == 1:
                return s.root(s.tree2(x1), x1, *children)
            children.append(x1)
            return s.tree2(x1, children=children)

    class HarDBlock(nn.Module):
        """HarDNet's harmonic dense block: layer k takes the concatenation of layers k - 2^n;
        the odd layers and the last are concatenated out."""

        def __init__(s, cin, growth, layers=6):
            super().__init__()
            s.links, chans, s.convs = [], [cin], nn.ModuleList()
            for k in range(1, layers + 1):
                link = [k - 2 ** n for n in range(int(math.log2(k)) + 1) if k % 2 ** n == 0]
                s.links.append(link)
                s.convs.append(bn_relu(sum(chans[i] for i in link), growth))
                chans.append(growth)
            s.out_idx = [i for i in range(1, layers + 1) if i % 2 == 1 or i == layers]
            s.out_ch = len(s.out_idx) * growth

        def forward(s, x):
            outs = [x]
            for link, conv in zip(s.links, s.convs):
                outs.append(conv(torch.cat([outs[i] for i in link], 1)))
            return torch.cat([outs[i] for i in s.out_idx], 1)

    class DLANet(nn.Module):
        """a DLA-34-like CNN: tree levels of 1 and 2 (hierarchical aggregation with 1x1 root
        convs over many concatenations of different depths), a HarDNet harmonic dense block,
        and iterative deep aggregation up (each deeper stage upsampled, added, merged by a 3x3
        conv) to a stride-8 heat map; the logits and the map out."""

        def __init__(s, classes=10, heads=4):
            super().__init__()
            s.base = nn.Sequential(bn_relu(3, 16, 7, 2), bn_relu(16, 16), bn_relu(16, 32, 3, 2))
            s.level2 = Tree(1, 32, 32, 2, level_root=False)                         # /8
            s.level3 = Tree(2, 32, 48, 2, level_root=True)                          # /16
            s.hard = HarDBlock(48, 16)
            s.trans = bn_relu(s.hard.out_ch, 64, 1)
            s.level4 = Tree(2, 64, 96, 2, level_root=True)                          # /32
            s.proj = nn.ModuleList([bn_relu(c, 32, 1) for c in (32, 64, 96)])
            s.node = nn.ModuleList([bn_relu(32, 32) for _ in range(2)])
            s.heat = nn.Conv2d(32, heads, 1)
            s.fc = nn.Linear(96, classes)

        def forward(s, x):                                   # [B, 3, 64, 64]
            x2 = s.level2(s.base(x))                         # [B, 32, 8, 8]
            x3 = s.trans(s.hard(s.level3(x2)))               # [B, 64, 4, 4]
            x4 = s.level4(x3)                                # [B, 96, 2, 2]
            y = s.proj[2](x4)
            for p, node, skip in ((s.proj[1], s.node[0], x3), (s.proj[0], s.node[1], x2)):
                y = node(F.interpolate(y, scale_factor=2.0, mode="bilinear", align_corners=False)
                         + p(skip))
            return s.fc(x4.mean((2, 3))), torch.sigmoid(s.heat(y))

    return {c.__name__: c for c in (LengthRegulator, LengthRegulatorRI, CRFTagger, SpikingNet, Deberta,
                                     Nystromformer, Autoformer, Informer, QuartzNet, NCA,
                                     PartialConvNet, RAFTCorr, StereoNet, VQVAE, Glow, DLANet)}


# the tests' tolerance per model: atol, rtol
TOLERANCES: dict[str, tuple[float, float]] = {}

_floats = zoo_more._floats
_ids = zoo_more._ids


def _padded_ids(length: int, vocab: int):
    """token ids with a tail of padding (id 0) of a random length per sample."""
    def make(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
        ids = rng.integers(1, vocab, (batch, length))
        lengths = rng.integers(length // 3, length + 1, batch)
        return {"ids": np.where(np.arange(length)[None] < lengths[:, None], ids, 0).astype(np.int64)}
    return make


def _nca(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    x = 0.5 * rng.standard_normal((batch, 16, 24, 24))
    x[:, :, :, 15:] = 0.0                                    # dead on the right: the mask matters
    return {"x": x.astype(np.float32)}


def _holes(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    mask = np.ones((batch, 1, 32, 32), np.float32)
    for i in range(batch):
        for _ in range(3):                                   # 3 rectangular holes
            y, x = rng.integers(0, 24, 2)
            h, w = rng.integers(4, 13, 2)
            mask[i, 0, y:y + h, x:x + w] = 0.0
    return {"x": rng.standard_normal((batch, 3, 32, 32)).astype(np.float32), "mask": mask}


def _model(name: str, cls_name: str, make_inputs) -> ZooModel:
    return zoo_more._model(name, cls_name, make_inputs, _classes)


PROBE14: dict[str, ZooModel] = {
    m.name: m
    for m in [
        _model("length_regulator", "LengthRegulator", _ids(24, 100)),
        _model("length_regulator_ri", "LengthRegulatorRI", _ids(24, 100)),
        _model("crf_viterbi", "CRFTagger", _ids(20, 500)),
        _model("spiking_lif", "SpikingNet", _floats(16, 64)),
        _model("deberta", "Deberta", _padded_ids(32, 1000)),
        _model("nystromformer", "Nystromformer", _floats(64, 32)),
        _model("autoformer", "Autoformer", _floats(64, 7)),
        _model("informer", "Informer", _floats(96, 7)),
        _model("quartznet", "QuartzNet", _floats(64, 64)),
        _model("neural_ca", "NCA", _nca),
        _model("partial_conv", "PartialConvNet", _holes),
        _model("raft_corr", "RAFTCorr", _floats(3, 48, 48, names=("im1", "im2"))),
        _model("stereo_cost", "StereoNet", _floats(3, 24, 48, names=("left", "right"))),
        _model("vqvae", "VQVAE", _floats(3, 32, 32)),
        _model("glow", "Glow", _floats(3, 32, 32)),
        _model("dla_ida", "DLANet", _floats(3, 64, 64)),
    ]
}
