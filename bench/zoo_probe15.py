"""A probe set of torch.nn models (probe15): recent architectures written from scratch as a user
would, of kinds the earlier sets did not cover: an RWKV language model (time-mixing with token
shift by a negative ZeroPad2d, the WKV recurrence unrolled over time with RWKV-4's exp / max
stabilization, channel-mixing with squared ReLU), RetNet's retention in its parallel form (a
decay mask from per-head gammas built in the forward, |QK^T| row normalization, GroupNorm per
head, a swish gate), a Hyena operator (an implicit long filter from sine-activated MLPs of
positional features with exponential modulation, applied by torch.fft.rfft / irfft of length
2L, order 2 with short causal depthwise convs and multiplicative gates), xLSTM's mLSTM cell
(matrix memory, normalizer, exponential input and sigmoid forget gates with the log-space
stabilizer, unrolled over time), CaiT (talking-heads self-attention with LayerScale, then
class-attention layers where only the CLS token queries), BEiT's relative position bias (a
shared table indexed by a precomputed relative index with CLS entries, query and value biases
but none on keys), XCiT (cross-covariance attention over channels with L2-normalized q and k and
a per-head temperature, local patch interaction by depthwise convs), FocalNet's focal modulation
(hierarchical depthwise convs with GELU, gated aggregation, a global average context, a 1x1
modulator), VAN's large-kernel attention (5x5 depthwise, 7x7 depthwise at dilation 3, 1x1,
multiplied with the input), InceptionNeXt's token mixer (channels split into identity, a 3x3
depthwise and 1x11 / 11x1 band depthwise convs), SLaK's sparse large kernels (51x5 and 5x51
depthwise convs plus a 5x5 on 32x32 maps), FasterNet's partial convolution (a 3x3 conv on a
quarter of the channels, in place by slice assignment as its inference mode, or by split and
cat), a Gemma-style decoder (RMSNorm scaled by 1 + weight, GeGLU, multi-query attention with
one key-value head broadcast by matmul, rotary embeddings, attention and final logits
soft-capped by tanh, a tied embedding head), a Falcon / Phi-style parallel block (attention and
MLP from one LayerNorm output summed, rotary on half of each head's dims, grouped-query
attention) and EfficientFormer (4-D stages of pooling token mixers and conv MLPs, a last 3-D
stage of attention after flattening, a distillation head averaged in). Seeded random weights.
`bench/zoo.py --set probe15`.

Where a torch exporter cannot write one of these (torch 2.13), the model is checked through the
other: the TorchScript-based exporter has no opset-17 symbolic for aten::fft_rfft (Hyena).
Every other model exports with both.
"""
from __future__ import annotations

import functools
import math

import zoo_more
from zoo_models import ZooModel, _torch


@functools.cache
def _classes() -> dict:
    torch = _torch()
    nn, F = torch.nn, torch.nn.functional

    # -- sequence models -------------------------------------------------------------------

    class RWKVTimeMix(nn.Module):
        def __init__(s, d, layer):
            super().__init__()
            g = torch.Generator().manual_seed(layer)
            ratio = torch.arange(d) / d
            s.time_decay = nn.Parameter(-5 + 8 * ratio ** 0.7 + 0.1 * torch.randn(d, generator=g))
            s.time_first = nn.Parameter(math.log(0.3) + 0.5 * torch.randn(d, generator=g))
            s.mix_k = nn.Parameter(ratio ** 0.5)
            s.mix_v = nn.Parameter(ratio ** 0.5 + 0.1)
            s.mix_r = nn.Parameter(0.5 * ratio ** 0.5)
            s.shift = nn.ZeroPad2d((0, 0, 1, -1))            # x[t - 1], zeros at t = 0
            s.key, s.value = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
            s.receptance, s.output = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)

        def forward(s, x):                                   # [B, T, d]
            xx = s.shift(x)
            k = s.key(x * s.mix_k + xx * (1 - s.mix_k))
            v = s.value(x * s.mix_v + xx * (1 - s.mix_v))
            r = torch.sigmoid(s.receptance(x * s.mix_r + xx * (1 - s.mix_r)))
            w, u = -torch.exp(s.time_decay), s.time_first
            aa = torch.zeros_like(k[:, 0])
            bb = torch.zeros_like(aa)
            pp = torch.full_like(aa, -1e30)
            out = []
            for t in range(x.shape[1]):
                kk, vv = k[:, t], v[:, t]
                ww = u + kk
                p = torch.maximum(pp, ww)
                e1, e2 = torch.exp(pp - p), torch.exp(ww - p)
                out.append((e1 * aa + e2 * vv) / (e1 * bb + e2))
                ww = pp + w
                p = torch.maximum(ww, kk)
                e1, e2 = torch.exp(ww - p), torch.exp(kk - p)
                aa, bb, pp = e1 * aa + e2 * vv, e1 * bb + e2, p
            return s.output(r * torch.stack(out, 1))

    class RWKVChannelMix(nn.Module):
        def __init__(s, d):
            super().__init__()
            ratio = torch.arange(d) / d
            s.mix_k, s.mix_r = nn.Parameter(ratio ** 0.3), nn.Parameter(ratio ** 0.6)
            s.shift = nn.ZeroPad2d((0, 0, 1, -1))
            s.key, s.value = nn.Linear(d, 4 * d, bias=False), nn.Linear(4 * d, d, bias=False)
            s.receptance = nn.Linear(d, d, bias=False)

        def forward(s, x):
            xx = s.shift(x)
            k = torch.square(torch.relu(s.key(x * s.mix_k + xx * (1 - s.mix_k))))
            return torch.sigmoid(s.receptance(x * s.mix_r + xx * (1 - s.mix_r))) * s.value(k)

    class RWKV(nn.Module):
        """an RWKV-4 language model: token shift by nn.ZeroPad2d((0, 0, 1, -1)) (a negative
        pad), time-mixing whose WKV recurrence (per-channel decay w = -exp(time_decay), a bonus
        u for the current token) is unrolled over the 24 tokens with the running max p that
        keeps exp() in range, channel-mixing with a squared ReLU; 2 layers, a vocabulary head."""

        def __init__(s, vocab=500, d=128, layers=2):
            super().__init__()
            s.emb, s.ln0 = nn.Embedding(vocab, d), nn.LayerNorm(d)
            s.ln1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            s.ln2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            s.att = nn.ModuleList([RWKVTimeMix(d, i) for i in range(layers)])
            s.ffn = nn.ModuleList([RWKVChannelMix(d) for _ in range(layers)])
            s.ln_out, s.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(s, ids):                                 # [B, T] int64
            x = s.ln0(s.emb(ids))
            for ln1, att, ln2, ffn in zip(s.ln1, s.att, s.ln2, s.ffn):
                x = x + att(ln1(x))
                x = x + ffn(ln2(x))
            return s.head(s.ln_out(x))

    class Retention(nn.Module):
        def __init__(s, d, heads):
            super().__init__()
            s.h, s.dh = heads, d // heads
            gammas = 1 - 2.0 ** (-5 - torch.arange(heads, dtype=torch.float32))
            s.register_buffer("log_gamma", torch.log(gammas))
            s.q, s.k, s.v = (nn.Linear(d, d, bias=False) for _ in range(3))
            s.g, s.o = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
            s.gn = nn.GroupNorm(heads, d, affine=False)

        def forward(s, x):                                   # [B, T, d]
            b, t, d = x.shape
            n = torch.arange(t, device=x.device, dtype=torch.float32)
            diff = n[:, None] - n[None, :]                   # [T, T]
            decay = torch.exp(s.log_gamma[:, None, None] * diff.clamp(min=0))
            decay = torch.where(diff >= 0, decay, torch.zeros_like(decay))          # [H, T, T]
            decay = decay / decay.sum(-1, keepdim=True).sqrt()
            q, k, v = (f(x).view(b, t, s.h, s.dh).transpose(1, 2) for f in (s.q, s.k, s.v))
            qk = (q @ k.transpose(-1, -2)) * s.dh ** -0.5 * decay
            qk = qk / qk.abs().sum(-1, keepdim=True).clamp(min=1)
            y = (qk @ v).transpose(1, 2).reshape(b * t, d)
            y = s.gn(y).view(b, t, d)
            return s.o(F.silu(s.g(x)) * y)

    class RetNet(nn.Module):
        """RetNet: multi-scale retention in its parallel form: a decay mask D[n, m] =
        gamma^(n - m) (n >= m, per-head gammas 1 - 2^(-5 - h)) built in the forward from an
        arange, rows scaled by their norm, (QK^T * D) normalized by its absolute row sums, a
        GroupNorm over heads, a swish gate; 2 layers with GELU FFNs over 32 tokens."""

        def __init__(s, vocab=1000, d=128, heads=4, layers=2):
            super().__init__()
            s.emb = nn.Embedding(vocab, d)
            s.n1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            s.ret = nn.ModuleList([Retention(d, heads) for _ in range(layers)])
            s.n2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            s.ff = nn.ModuleList([nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(),
                                                nn.Linear(2 * d, d)) for _ in range(layers)])
            s.ln, s.head = nn.LayerNorm(d), nn.Linear(d, vocab)

        def forward(s, ids):                                 # [B, T] int64
            x = s.emb(ids)
            for n1, ret, n2, ff in zip(s.n1, s.ret, s.n2, s.ff):
                x = x + ret(n1(x))
                x = x + ff(n2(x))
            return s.head(s.ln(x))

    class Sin(nn.Module):
        def __init__(s, dim, w=10.0):
            super().__init__()
            s.freq = nn.Parameter(w * torch.ones(1, dim))

        def forward(s, x):
            return torch.sin(s.freq * x)

    class HyenaFilter(nn.Module):
        """the implicit filter: positional features (t, and cos / sin of 4 frequencies) through
        a sine-activated MLP, one filter per channel and order, times an exponential decay."""

        def __init__(s, d, length, order, emb=9, hidden=32):
            super().__init__()
            s.d, s.order = d, order
            t = torch.linspace(0, 1, length)[None, :, None]                         # [1, L, 1]
            bands = (emb - 1) // 2
            w = 2 * math.pi * torch.arange(length)[None, :, None] / length
            f = torch.linspace(1e-4, bands - 1, bands)[None, None]
            z = torch.cat([t, torch.cos(f * w), -torch.sin(f * w)], -1)            # [1, L, emb]
            s.register_buffer("z", z)
            s.register_buffer("t", t)
            s.mlp = nn.Sequential(nn.Linear(emb, hidden), Sin(hidden), nn.Linear(hidden, hidden),
                                  Sin(hidden), nn.Linear(hidden, d * order, bias=False))
            s.deltas = nn.Parameter(torch.linspace(math.log(1e-2) / 0.3, math.log(1e-2) / 1.5,
                                                   d * order)[None, None])

        def forward(s):
            h = s.mlp(s.z) * torch.exp(-s.t * s.deltas.abs())                     # [1, L, d*o]
            return h[0].transpose(0, 1).reshape(s.order, s.d, -1)                  # [o, d, L]

    class HyenaOperator(nn.Module):
        def __init__(s, d, length, order=2):
            super().__init__()
            s.order, s.length = order, length
            s.in_proj = nn.Linear(d, (order + 1) * d)
            s.short = nn.Conv1d((order + 1) * d, (order + 1) * d, 3, padding=2,
                                groups=(order + 1) * d)
            s.filt = HyenaFilter(d, length, order)
            s.bias = nn.Parameter(torch.randn(order, d))
            s.out_proj = nn.Linear(d, d)

        @staticmethod
        def fftconv(u, k, bias):                             # u [B, d, L], k [d, L], bias [d]
            n = 2 * u.shape[-1]
            k_f = torch.fft.rfft(k, n=n) / n
            u_f = torch.fft.rfft(u, n=n)
            y = torch.fft.irfft(u_f * k_f, n=n, norm="forward")[..., :u.shape[-1]]
            return y + u * bias[:, None]

        def forward(s, x):                                   # [B, L, d]
            length = x.shape[1]
            u = s.short(s.in_proj(x).transpose(1, 2))[..., :length]   # causal: the first L
            *gates, v = u.chunk(s.order + 1, 1)
            k = s.filt()
            for o in range(s.order):
                v = s.fftconv(v * gates[o], k[o], s.bias[o])
            return s.out_proj(v.transpose(1, 2))

    class Hyena(nn.Module):
        """a Hyena operator stack: input projection to (order + 1) x d, short causal depthwise
        convs (k = 3), then per order a gate product and a long convolution by an implicit
        filter as long as the sequence (64), computed with torch.fft.rfft / irfft of length 2L;
        2 layers with MLPs, a mean-pooled classifier."""

        def __init__(s, feats=16, d=32, length=64, layers=2, classes=10):
            super().__init__()
            s.inp = nn.Linear(feats, d)
            s.n1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            s.mix = nn.ModuleList([HyenaOperator(d, length) for _ in range(layers)])
            s.n2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            s.ff = nn.ModuleList([nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(),
                                                nn.Linear(2 * d, d)) for _ in range(layers)])
            s.fc = nn.Linear(d, classes)

        def forward(s, x):                                   # [B, 64, 16]
            x = s.inp(x)
            for n1, mix, n2, ff in zip(s.n1, s.mix, s.n2, s.ff):
                x = x + mix(n1(x))
                x = x + ff(n2(x))
            return s.fc(x.mean(1))

    class MLSTMCell(nn.Module):
        def __init__(s, d, heads):
            super().__init__()
            s.h, s.dh = heads, d // heads
            s.q, s.k, s.v = (nn.Linear(d, d, bias=False) for _ in range(3))
            s.igate, s.fgate = nn.Linear(3 * d, heads), nn.Linear(3 * d, heads)
            with torch.no_grad():
                s.fgate.bias.copy_(torch.linspace(3.0, 6.0, heads))
                s.igate.bias.fill_(-2.0)
            s.norm = nn.GroupNorm(heads, d)

        def forward(s, x):                                   # [B, T, d]
            b, t, d = x.shape
            q, k, v = (f(x).view(b, t, s.h, s.dh) for f in (s.q, s.k, s.v))
            gin = torch.cat([s.q(x), s.k(x), s.v(x)], -1)
            ig, fg = s.igate(gin), s.fgate(gin)              # [B, T, H]
            c = torch.zeros(b, s.h, s.dh, s.dh, dtype=x.dtype, device=x.device)
            n = torch.zeros(b, s.h, s.dh, 1, dtype=x.dtype, device=x.device)
            m = torch.zeros(b, s.h, 1, 1, dtype=x.dtype, device=x.device)
            hs = []
            for i in range(t):
                qt, kt, vt = q[:, i, :, :, None], k[:, i, :, :, None] / math.sqrt(s.dh), v[:, i, :, :, None]
                log_f = F.logsigmoid(fg[:, i])[..., None, None]                     # [B, H, 1, 1]
                it = ig[:, i][..., None, None]
                m_new = torch.maximum(log_f + m, it)
                f_act, i_act = torch.exp(log_f + m - m_new), torch.exp(it - m_new)
                c = f_act * c + i_act * (kt @ vt.transpose(-1, -2))                 # [B, H, dh, dh]
                n = f_act * n + i_act * kt
                num = c.transpose(-1, -2) @ qt                                      # [B, H, dh, 1]
                den = torch.maximum((n.transpose(-1, -2) @ qt).abs(), torch.exp(-m_new)) + 1e-6
                hs.append((num / den).reshape(b, d))
                m = m_new
            return s.norm(torch.stack(hs, 1).reshape(b * t, d)).view(b, t, d)

    class MLSTM(nn.Module):
        """xLSTM's mLSTM block: an up-projection, a causal conv feeding q and k, the mLSTM cell
        unrolled over 16 steps (matrix memory C += i v k^T, normalizer n, exponential input gate
        and sigmoid forget gate stabilized by a running log-space max m, h = C q / max(|n.q|,
        exp(-m))), a GroupNorm per head, a SiLU output gate, a down-projection; 2 blocks."""

        def __init__(s, feats=32, d=64, heads=4, layers=2, classes=10):
            super().__init__()
            s.inp = nn.Linear(feats, d)
            s.norm = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            s.up = nn.ModuleList([nn.Linear(d, 4 * d) for _ in range(layers)])
            s.conv = nn.ModuleList([nn.Conv1d(2 * d, 2 * d, 4, padding=3, groups=2 * d)
                                    for _ in range(layers)])
            s.cell = nn.ModuleList([MLSTMCell(2 * d, heads) for _ in range(layers)])
            s.down = nn.ModuleList([nn.Linear(2 * d, d) for _ in range(layers)])
            s.fc = nn.Linear(d, classes)

        def forward(s, x):                                   # [B, 16, 32]
            x = s.inp(x)
            t = x.shape[1]
            for norm, up, conv, cell, down in zip(s.norm, s.up, s.conv, s.cell, s.down):
                a, z = up(norm(x)).chunk(2, -1)
                a = F.silu(conv(a.transpose(1, 2))[..., :t].transpose(1, 2))
                x = x + down(cell(a) * F.silu(z))
            return s.fc(x[:, -1])

    # -- vision transformers ---------------------------------------------------------------

    def layer_scale(d, init=0.1):
        return nn.Parameter(init * (1 + 0.5 * torch.randn(d)))

    class TalkingHeadsAttention(nn.Module):
        def __init__(s, d, heads):
            super().__init__()
            s.h, s.dh = heads, d // heads
            s.qkv, s.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            s.proj_l, s.proj_w = nn.Linear(heads, heads), nn.Linear(heads, heads)

        def forward(s, x):
            b, n, d = x.shape
            q, k, v = s.qkv(x).view(b, n, 3, s.h, s.dh).permute(2, 0, 3, 1, 4)
            a = (q * s.dh ** -0.5) @ k.transpose(-1, -2)                           # [B, H, N, N]
            a = s.proj_l(a.permute(0, 2, 3, 1)).permute(0, 3, 1, 2).softmax(-1)
            a = s.proj_w(a.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
            return s.proj((a @ v).transpose(1, 2).reshape(b, n, d))

    class ClassAttention(nn.Module):
        def __init__(s, d, heads):
            super().__init__()
            s.h, s.dh = heads, d // heads
            s.q, s.k, s.v, s.proj = (nn.Linear(d, d) for _ in range(4))

        def forward(s, x):                                   # [B, 1 + N, d]: the CLS first
            b, n, d = x.shape
            q = s.q(x[:, :1]).view(b, 1, s.h, s.dh).transpose(1, 2)                 # [B, H, 1, dh]
            k = s.k(x).view(b, n, s.h, s.dh).transpose(1, 2)
            v = s.v(x).view(b, n, s.h, s.dh).transpose(1, 2)
            a = ((q * s.dh ** -0.5) @ k.transpose(-1, -2)).softmax(-1)
            return s.proj((a @ v).transpose(1, 2).reshape(b, 1, d))

    def mlp(d, ratio=4):
        return nn.Sequential(nn.Linear(d, ratio * d), nn.GELU(), nn.Linear(ratio * d, d))

    class CaiT(nn.Module):
        """CaiT: a 4x4 patch encoder over 32x32 images (64 tokens) of talking-heads
        self-attention (linear maps across heads before and after the softmax) with LayerScale,
        then 2 class-attention layers where only the CLS token queries the CLS and patch tokens
        and only the CLS is updated; the head reads the CLS."""

        def __init__(s, d=64, heads=4, layers=2, ca_layers=2, classes=10):
            super().__init__()
            s.patch = nn.Conv2d(3, d, 4, 4)
            s.pos = nn.Parameter(0.02 * torch.randn(1, 64, d))
            s.cls = nn.Parameter(0.02 * torch.randn(1, 1, d))
            s.sa_n1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            s.sa = nn.ModuleList([TalkingHeadsAttention(d, heads) for _ in range(layers)])
            s.sa_n2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            s.sa_ff = nn.ModuleList([mlp(d) for _ in range(layers)])
            s.sa_g = nn.ParameterList([layer_scale(d) for _ in range(2 * layers)])
            s.ca_n1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(ca_layers)])
            s.ca = nn.ModuleList([ClassAttention(d, heads) for _ in range(ca_layers)])
            s.ca_n2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(ca_layers)])
            s.ca_ff = nn.ModuleList([mlp(d) for _ in range(ca_layers)])
            s.ca_g = nn.ParameterList([layer_scale(d) for _ in range(2 * ca_layers)])
            s.norm, s.head = nn.LayerNorm(d), nn.Linear(d, classes)

        def forward(s, x):                                   # [B, 3, 32, 32]
            x = s.patch(x).flatten(2).transpose(1, 2) + s.pos
            for i, (n1, att, n2, ff) in enumerate(zip(s.sa_n1, s.sa, s.sa_n2, s.sa_ff)):
                x = x + s.sa_g[2 * i] * att(n1(x))
                x = x + s.sa_g[2 * i + 1] * ff(n2(x))
            cls = s.cls.expand(x.shape[0], -1, -1)
            for i, (n1, att, n2, ff) in enumerate(zip(s.ca_n1, s.ca, s.ca_n2, s.ca_ff)):
                cls = cls + s.ca_g[2 * i] * att(n1(torch.cat([cls, x], 1)))
                cls = cls + s.ca_g[2 * i + 1] * ff(n2(cls))
            return s.head(s.norm(cls)[:, 0])

    class BEiTAttention(nn.Module):
        def __init__(s, d, heads, window):
            super().__init__()
            s.h, s.dh = heads, d // heads
            wh, ww = window
            s.num_rel = (2 * wh - 1) * (2 * ww - 1) + 3
            s.table = nn.Parameter(0.02 * torch.randn(s.num_rel, heads))
            coords = torch.stack(torch.meshgrid(torch.arange(wh), torch.arange(ww),
                                                indexing="ij")).flatten(1)          # [2, N]
            rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0)        # [N, N, 2]
            rel[..., 0] += wh - 1
            rel[..., 1] += ww - 1
            rel[..., 0] *= 2 * ww - 1
            n = wh * ww + 1
            idx = torch.zeros(n, n, dtype=torch.long)
            idx[1:, 1:] = rel.sum(-1)
            idx[0, :] = s.num_rel - 3                        # cls to token
            idx[:, 0] = s.num_rel - 2                        # token to cls
            idx[0, 0] = s.num_rel - 1                        # cls to cls
            s.register_buffer("rel_index", idx)
            s.qkv = nn.Linear(d, 3 * d, bias=False)
            s.q_bias, s.v_bias = nn.Parameter(0.1 * torch.randn(d)), nn.Parameter(0.1 * torch.randn(d))
            s.proj = nn.Linear(d, d)

        def forward(s, x):
            b, n, d = x.shape
            bias = torch.cat([s.q_bias, torch.zeros_like(s.v_bias), s.v_bias])
            q, k, v = F.linear(x, s.qkv.weight, bias).view(b, n, 3, s.h, s.dh).permute(2, 0, 3, 1, 4)
            a = (q * s.dh ** -0.5) @ k.transpose(-1, -2)
            rel = s.table[s.rel_index.view(-1)].view(n, n, -1).permute(2, 0, 1)    # [H, N, N]
            a = (a + rel[None]).softmax(-1)
            return s.proj((a @ v).transpose(1, 2).reshape(b, n, d))

    class BEiT(nn.Module):
        """BEiT: a relative position bias per layer, gathered from a learned table of
        (2*8-1)^2 + 3 entries by a precomputed [65, 65] relative index buffer (its 3 extra
        entries for cls-to-token, token-to-cls and cls-to-cls), added to the attention logits;
        q and v biases but none on k (the bias a cat with zeros); LayerScale; mean-pooled
        patch tokens through a LayerNorm to the head."""

        def __init__(s, d=64, heads=4, layers=2, classes=10):
            super().__init__()
            s.patch = nn.Conv2d(3, d, 4, 4)
            s.cls = nn.Parameter(0.02 * torch.randn(1, 1, d))
            s.n1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            s.att = nn.ModuleList([BEiTAttention(d, heads, (8, 8)) for _ in range(layers)])
            s.n2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            s.ff = nn.ModuleList([mlp(d) for _ in range(layers)])
            s.g = nn.ParameterList([layer_scale(d) for _ in range(2 * layers)])
            s.fc_norm, s.head = nn.LayerNorm(d), nn.Linear(d, classes)

        def forward(s, x):                                   # [B, 3, 32, 32]
            x = s.patch(x).flatten(2).transpose(1, 2)
            x = torch.cat([s.cls.expand(x.shape[0], -1, -1), x], 1)
            for i, (n1, att, n2, ff) in enumerate(zip(s.n1, s.att, s.n2, s.ff)):
                x = x + s.g[2 * i] * att(n1(x))
                x = x + s.g[2 * i + 1] * ff(n2(x))
            return s.head(s.fc_norm(x[:, 1:].mean(1)))

    class XCA(nn.Module):
        def __init__(s, d, heads):
            super().__init__()
            s.h = heads
            s.temperature = nn.Parameter(1 + 0.2 * torch.randn(heads, 1, 1))
            s.qkv, s.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

        def forward(s, x):                                   # [B, N, d]
            b, n, d = x.shape
            q, k, v = s.qkv(x).view(b, n, 3, s.h, d // s.h).permute(2, 0, 3, 4, 1)  # [B, H, dh, N]
            q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
            a = ((q @ k.transpose(-1, -2)) * s.temperature).softmax(-1)             # [B, H, dh, dh]
            return s.proj((a @ v).permute(0, 3, 1, 2).reshape(b, n, d))

    class LPI(nn.Module):
        def __init__(s, d):
            super().__init__()
            s.c1 = nn.Conv2d(d, d, 3, padding=1, groups=d)
            s.bn = nn.BatchNorm2d(d)
            s.c2 = nn.Conv2d(d, d, 3, padding=1, groups=d)

        def forward(s, x, hw):                               # [B, N, d]
            b, n, d = x.shape
            y = x.transpose(1, 2).reshape(b, d, hw, hw)
            return s.c2(s.bn(F.gelu(s.c1(y)))).reshape(b, d, n).transpose(1, 2)

    class XCiT(nn.Module):
        """XCiT: a conv patch embedding (3x3 stride-2 convs, BN, GELU) to 8x8 tokens,
        cross-covariance attention (attention over the channels: softmax of L2-normalized q^T k
        times a per-head temperature, a [dh, dh] map per head) with local patch interaction
        (depthwise 3x3 convs, GELU, BN over the token grid), LayerScale; 3 layers."""

        def __init__(s, d=64, heads=4, layers=2, classes=10):
            super().__init__()
            s.patch = nn.Sequential(nn.Conv2d(3, d // 2, 3, 2, 1), nn.BatchNorm2d(d // 2),
                                    nn.GELU(), nn.Conv2d(d // 2, d, 3, 2, 1), nn.BatchNorm2d(d))
            s.pos = nn.Parameter(0.02 * torch.randn(1, 64, d))
            s.n1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            s.xca = nn.ModuleList([XCA(d, heads) for _ in range(layers)])
            s.n3 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            s.lpi = nn.ModuleList([LPI(d) for _ in range(layers)])
            s.n2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
            s.ff = nn.ModuleList([mlp(d) for _ in range(layers)])
            s.g = nn.ParameterList([layer_scale(d) for _ in range(3 * layers)])
            s.norm, s.head = nn.LayerNorm(d), nn.Linear(d, classes)

        def forward(s, x):                                   # [B, 3, 32, 32]
            x = s.patch(x)
            hw = x.shape[-1]
            x = x.flatten(2).transpose(1, 2) + s.pos
            for i in range(len(s.xca)):
                x = x + s.g[3 * i] * s.xca[i](s.n1[i](x))
                x = x + s.g[3 * i + 1] * s.lpi[i](s.n3[i](x), hw)
                x = x + s.g[3 * i + 2] * s.ff[i](s.n2[i](x))
            return s.head(s.norm(x).mean(1))

    # -- modern convnets -------------------------------------------------------------------

    class FocalModulation(nn.Module):
        def __init__(s, d, levels=3, k=3):
            super().__init__()
            s.levels = levels
            s.f = nn.Linear(d, 2 * d + levels + 1)
            s.h = nn.Conv2d(d, d, 1)
            s.focal = nn.ModuleList([nn.Sequential(nn.Conv2d(d, d, k + 2 * i, padding=(k + 2 * i) // 2,
                                                             groups=d, bias=False), nn.GELU())
                                     for i in range(levels)])
            s.proj = nn.Linear(d, d)

        def forward(s, x):                                   # [B, H, W, d]
            d = x.shape[-1]
            x = s.f(x).permute(0, 3, 1, 2)
            q, ctx, gates = torch.split(x, (d, d, s.levels + 1), 1)
            ctx_all = 0
            for i, layer in enumerate(s.focal):
                ctx = layer(ctx)
                ctx_all = ctx_all + ctx * gates[:, i:i + 1]
            ctx_global = F.gelu(ctx.mean((2, 3), keepdim=True))
            ctx_all = ctx_all + ctx_global * gates[:, s.levels:]
            return s.proj((q * s.h(ctx_all)).permute(0, 2, 3, 1))

    class FocalNet(nn.Module):
        """FocalNet: focal modulation in place of attention (a linear to the query, the context
        and L + 1 gates; L = 3 levels of depthwise convs, kernels 3, 5, 7, with GELU, each
        level's context gated and summed, plus a GELU'd global average; a 1x1 conv modulator
        multiplied with the query), channels-last LayerNorms and MLPs, LayerScale; 2 stages."""

        def __init__(s, dims=(32, 64), depths=(1, 2), classes=10):
            super().__init__()
            s.stems = nn.ModuleList([nn.Conv2d(3, dims[0], 4, 4), nn.Conv2d(dims[0], dims[1], 2, 2)])
            s.stages = nn.ModuleList()
            for d, n in zip(dims, depths):
                s.stages.append(nn.ModuleList([nn.ModuleDict({
                    "n1": nn.LayerNorm(d), "mod": FocalModulation(d), "n2": nn.LayerNorm(d),
                    "ff": mlp(d)}) for _ in range(n)]))
            s.g = nn.ParameterList([layer_scale(d) for d, n in zip(dims, depths)
                                    for _ in range(2 * n)])
            s.norm, s.head = nn.LayerNorm(dims[-1]), nn.Linear(dims[-1], classes)

        def forward(s, x):                                   # [B, 3, 64, 64]
            j = 0
            for stem, stage in zip(s.stems, s.stages):
                x = stem(x).permute(0, 2, 3, 1)              # channels last
                for blk in stage:
                    x = x + s.g[j] * blk["mod"](blk["n1"](x))
                    x = x + s.g[j + 1] * blk["ff"](blk["n2"](x))
                    j += 2
                x = x.permute(0, 3, 1, 2)
            return s.head(s.norm(x.mean((2, 3))))

    class LKA(nn.Module):
        def __init__(s, d):
            super().__init__()
            s.conv0 = nn.Conv2d(d, d, 5, padding=2, groups=d)
            s.conv_spatial = nn.Conv2d(d, d, 7, padding=9, groups=d, dilation=3)
            s.conv1 = nn.Conv2d(d, d, 1)

        def forward(s, x):
            return x * s.conv1(s.conv_spatial(s.conv0(x)))

    class VANBlock(nn.Module):
        def __init__(s, d):
            super().__init__()
            s.n1, s.n2 = nn.BatchNorm2d(d), nn.BatchNorm2d(d)
            s.proj1, s.lka, s.proj2 = nn.Conv2d(d, d, 1), LKA(d), nn.Conv2d(d, d, 1)
            s.fc1, s.dw = nn.Conv2d(d, 4 * d, 1), nn.Conv2d(4 * d, 4 * d, 3, padding=1, groups=4 * d)
            s.fc2 = nn.Conv2d(4 * d, d, 1)
            s.g1 = nn.Parameter(layer_scale(d).detach()[:, None, None])
            s.g2 = nn.Parameter(layer_scale(d).detach()[:, None, None])

        def forward(s, x):
            y = s.n1(x)
            x = x + s.g1 * (s.proj2(s.lka(F.gelu(s.proj1(y)))) + y)
            return x + s.g2 * s.fc2(F.gelu(s.dw(s.fc1(s.n2(x)))))

    class VAN(nn.Module):
        """VAN: large-kernel attention (a 5x5 depthwise conv, a 7x7 depthwise conv at dilation 3
        (a 19x19 receptive field), a 1x1 conv, the result multiplied with the input) in blocks of
        BatchNorm, 1x1 convs with GELU and an MLP with a 3x3 depthwise conv; overlapping patch
        embeddings (7x7 stride 4, 3x3 stride 2); 2 stages over 64x64 images."""

        def __init__(s, dims=(32, 64), depths=(2, 2), classes=10):
            super().__init__()
            s.embeds = nn.ModuleList([
                nn.Sequential(nn.Conv2d(3, dims[0], 7, 4, 3), nn.BatchNorm2d(dims[0])),
                nn.Sequential(nn.Conv2d(dims[0], dims[1], 3, 2, 1), nn.BatchNorm2d(dims[1]))])
            s.stages = nn.ModuleList([nn.Sequential(*[VANBlock(d) for _ in range(n)])
                                      for d, n in zip(dims, depths)])
            s.norm, s.head = nn.LayerNorm(dims[-1]), nn.Linear(dims[-1], classes)

        def forward(s, x):                                   # [B, 3, 64, 64]
            for embed, stage in zip(s.embeds, s.stages):
                x = stage(embed(x))
            return s.head(s.norm(x.flatten(2).transpose(1, 2)).mean(1))

    class InceptionDW(nn.Module):
        def __init__(s, d, k=3, band=11, ratio=0.125):
            super().__init__()
            gc = int(d * ratio)
            s.hw = nn.Conv2d(gc, gc, k, padding=k // 2, groups=gc)
            s.w = nn.Conv2d(gc, gc, (1, band), padding=(0, band // 2), groups=gc)
            s.h = nn.Conv2d(gc, gc, (band, 1), padding=(band // 2, 0), groups=gc)
            s.split = (d - 3 * gc, gc, gc, gc)

        def forward(s, x):
            x_id, x_hw, x_w, x_h = torch.split(x, s.split, 1)
            return torch.cat((x_id, s.hw(x_hw), s.w(x_w), s.h(x_h)), 1)

    class InceptionNeXt(nn.Module):
        """InceptionNeXt's MetaNeXt blocks: the inception depthwise token mixer (channels split
        into 5/8 identity, a 3x3 depthwise, a 1x11 and an 11x1 band depthwise conv, then
        concatenated), BatchNorm, a conv MLP (1x1, GELU, 1x1), LayerScale; 2 stages over 64x64
        images, an MLP head with LayerNorm."""

        def __init__(s, dims=(48, 96), depths=(2, 2), classes=10):
            super().__init__()
            s.downs = nn.ModuleList([
                nn.Sequential(nn.Conv2d(3, dims[0], 4, 4), nn.BatchNorm2d(dims[0])),
                nn.Sequential(nn.BatchNorm2d(dims[0]), nn.Conv2d(dims[0], dims[1], 2, 2))])
            s.mix = nn.ModuleList([InceptionDW(d) for d, n in zip(dims, depths) for _ in range(n)])
            s.bn = nn.ModuleList([nn.BatchNorm2d(d) for d, n in zip(dims, depths) for _ in range(n)])
            s.ff = nn.ModuleList([nn.Sequential(nn.Conv2d(d, 4 * d, 1), nn.GELU(),
                                                nn.Conv2d(4 * d, d, 1))
                                  for d, n in zip(dims, depths) for _ in range(n)])
            s.g = nn.ParameterList([nn.Parameter(layer_scale(d).detach()[:, None, None])
                                    for d, n in zip(dims, depths) for _ in range(n)])
            s.depths = depths
            s.head = nn.Sequential(nn.Linear(dims[-1], 3 * dims[-1]), nn.GELU(),
                                   nn.LayerNorm(3 * dims[-1]), nn.Linear(3 * dims[-1], classes))

        def forward(s, x):                                   # [B, 3, 64, 64]
            j = 0
            for down, n in zip(s.downs, s.depths):
                x = down(x)
                for _ in range(n):
                    x = x + s.g[j] * s.ff[j](s.bn[j](s.mix[j](x)))
                    j += 1
            return s.head(x.mean((2, 3)))

    class SparseLK(nn.Module):
        def __init__(s, d, big, small=5):
            super().__init__()
            s.lk1 = nn.Sequential(nn.Conv2d(d, d, (big, small), padding=(big // 2, small // 2),
                                            groups=d, bias=False), nn.BatchNorm2d(d))
            s.lk2 = nn.Sequential(nn.Conv2d(d, d, (small, big), padding=(small // 2, big // 2),
                                            groups=d, bias=False), nn.BatchNorm2d(d))
            s.sk = nn.Sequential(nn.Conv2d(d, d, small, padding=small // 2, groups=d, bias=False),
                                 nn.BatchNorm2d(d))

        def forward(s, x):
            return s.lk1(x) + s.lk2(x) + s.sk(x)

    class SLaK(nn.Module):
        """SLaK's sparse large kernels in ConvNeXt blocks: each 51x51 kernel decomposed into a
        51x5 and a 5x51 depthwise conv (each BatchNorm'd) plus a 5x5 depthwise one, summed, on
        32x32 maps, then a channels-last LayerNorm and MLP with LayerScale; a second stage of
        31x5 / 5x31 kernels on 16x16 maps."""

        def __init__(s, dims=(16, 32), kernels=(51, 31), classes=10):
            super().__init__()
            s.downs = nn.ModuleList([nn.Conv2d(3, dims[0], 3, padding=1),
                                     nn.Conv2d(dims[0], dims[1], 2, 2)])
            s.dw = nn.ModuleList([SparseLK(d, k) for d, k in zip(dims, kernels)])
            s.ln = nn.ModuleList([nn.LayerNorm(d) for d in dims])
            s.ff = nn.ModuleList([mlp(d) for d in dims])
            s.g = nn.ParameterList([layer_scale(d) for d in dims])
            s.norm, s.head = nn.LayerNorm(dims[-1]), nn.Linear(dims[-1], classes)

        def forward(s, x):                                   # [B, 3, 32, 32]
            for down, dw, ln, ff, g in zip(s.downs, s.dw, s.ln, s.ff, s.g):
                x = down(x)
                y = ff(ln(dw(x).permute(0, 2, 3, 1)))
                x = x + (g * y).permute(0, 3, 1, 2)
            return s.head(s.norm(x.mean((2, 3))))

    class PConv(nn.Module):
        def __init__(s, d, n_div=4, mode="slicing"):
            super().__init__()
            s.dc, s.mode = d // n_div, mode
            s.conv = nn.Conv2d(s.dc, s.dc, 3, padding=1, bias=False)

        def forward(s, x):
            if s.mode == "slicing":                          # FasterNet's inference mode
                x = x.clone()
                x[:, :s.dc] = s.conv(x[:, :s.dc])
                return x
            x1, x2 = torch.split(x, [s.dc, x.shape[1] - s.dc], 1)                  # training's
            return torch.cat((s.conv(x1), x2), 1)

    class FasterBlock(nn.Module):
        def __init__(s, d, mode):
            super().__init__()
            s.mix = PConv(d, mode=mode)
            s.mlp = nn.Sequential(nn.Conv2d(d, 2 * d, 1, bias=False), nn.BatchNorm2d(2 * d),
                                  nn.ReLU(), nn.Conv2d(2 * d, d, 1, bias=False))

        def forward(s, x):
            return x + s.mlp(s.mix(x))

    class FasterNet(nn.Module):
        """FasterNet: partial convolution (a 3x3 conv on a quarter of the channels, the rest
        passed through: by in-place slice assignment on a clone, FasterNet's inference mode, in
        the first two stages, by split and cat in the third), then a pointwise MLP (1x1, BN,
        ReLU, 1x1) with a residual; patch merging by 2x2 stride-2 convs; 3 stages over 64x64."""

        def __init__(s, dims=(40, 80, 160), depths=(1, 2, 1), classes=10):
            super().__init__()
            s.embed = nn.Sequential(nn.Conv2d(3, dims[0], 4, 4, bias=False), nn.BatchNorm2d(dims[0]))
            layers = []
            for i, (d, n) in enumerate(zip(dims, depths)):
                if i:
                    layers += [nn.Conv2d(dims[i - 1], d, 2, 2, bias=False), nn.BatchNorm2d(d)]
                layers += [FasterBlock(d, "slicing" if i < 2 else "split_cat") for _ in range(n)]
            s.stages = nn.Sequential(*layers)
            s.head = nn.Sequential(nn.Conv2d(dims[-1], 256, 1, bias=False), nn.ReLU())
            s.fc = nn.Linear(256, classes)

        def forward(s, x):                                   # [B, 3, 64, 64]
            x = s.stages(s.embed(x))
            return s.fc(s.head(x.mean((2, 3), keepdim=True)).flatten(1))

    # -- decoder-only language models ------------------------------------------------------

    def rotary(dim, seq, base=10000.0):
        inv = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
        ang = torch.arange(seq, dtype=torch.float32)[:, None] * inv[None]
        ang = torch.cat([ang, ang], -1)                      # [T, dim]
        return ang.cos(), ang.sin()

    def rotate_half(x):
        x1, x2 = x.chunk(2, -1)
        return torch.cat([-x2, x1], -1)

    class GemmaRMSNorm(nn.Module):
        def __init__(s, d, eps=1e-6):
            super().__init__()
            s.eps, s.weight = eps, nn.Parameter(0.1 * torch.randn(d))

        def forward(s, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + s.eps) * (1.0 + s.weight)

    class GemmaLayer(nn.Module):
        def __init__(s, d, heads, ff, seq, cap):
            super().__init__()
            s.h, s.dh, s.cap = heads, d // heads, cap
            s.q = nn.Linear(d, d, bias=False)
            s.kv = nn.Linear(d, 2 * s.dh, bias=False)        # one key-value head
            s.o = nn.Linear(d, d, bias=False)
            s.gate, s.up = nn.Linear(d, ff, bias=False), nn.Linear(d, ff, bias=False)
            s.down = nn.Linear(ff, d, bias=False)
            s.n1, s.n2, s.n3, s.n4 = (GemmaRMSNorm(d) for _ in range(4))
            cos, sin = rotary(s.dh, seq)
            s.register_buffer("cos", cos)
            s.register_buffer("sin", sin)
            s.register_buffer("causal", torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

        def forward(s, x):
            b, t, d = x.shape
            h = s.n1(x)
            q = s.q(h).view(b, t, s.h, s.dh).transpose(1, 2)                        # [B, H, T, dh]
            k, v = s.kv(h).view(b, t, 1, 2 * s.dh).transpose(1, 2).chunk(2, -1)     # [B, 1, T, dh]
            cos, sin = s.cos[:t], s.sin[:t]
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            a = (q * s.dh ** -0.5) @ k.transpose(-1, -2)    # k broadcast over the heads
            a = s.cap * torch.tanh(a / s.cap)
            a = a.masked_fill(~s.causal[:t, :t], float("-inf")).softmax(-1)
            x = x + s.n2(s.o((a @ v).transpose(1, 2).reshape(b, t, d)))
            h = s.n3(x)
            return x + s.n4(s.down(F.gelu(s.gate(h), approximate="tanh") * s.up(h)))

    class Gemma(nn.Module):
        """a Gemma-2-style decoder: embeddings scaled by sqrt(d), RMSNorm with (1 + weight)
        before and after attention and MLP, multi-query attention (4 query heads, one key-value
        head broadcast by the matmul) with rotary embeddings, attention logits soft-capped by
        50 tanh(s / 50) before the causal mask, a GeGLU MLP (tanh GELU), the head tied to the
        embedding matrix, final logits soft-capped at 30; 2 layers over 32 tokens."""

        def __init__(s, vocab=1000, d=128, heads=4, ff=384, layers=2, seq=32):
            super().__init__()
            s.d = d
            s.emb = nn.Embedding(vocab, d)
            s.layers = nn.ModuleList([GemmaLayer(d, heads, ff, seq, 50.0) for _ in range(layers)])
            s.norm = GemmaRMSNorm(d)

        def forward(s, ids):                                 # [B, T] int64
            x = s.emb(ids) * math.sqrt(s.d)
            for layer in s.layers:
                x = layer(x)
            logits = s.norm(x) @ s.emb.weight.t()
            return 30.0 * torch.tanh(logits / 30.0)

    class ParallelLayer(nn.Module):
        def __init__(s, d, heads, kv_heads, seq, rot_frac=0.5):
            super().__init__()
            s.h, s.kv, s.dh = heads, kv_heads, d // heads
            s.rd = int(s.dh * rot_frac)
            s.ln = nn.LayerNorm(d)
            s.qkv = nn.Linear(d, (heads + 2 * kv_heads) * s.dh)
            s.o = nn.Linear(d, d)
            s.fc1, s.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            cos, sin = rotary(s.rd, seq)
            s.register_buffer("cos", cos)
            s.register_buffer("sin", sin)
            s.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

        def rope(s, x, t):                                   # rotary on the first rd dims only
            xr, xp = x[..., :s.rd], x[..., s.rd:]
            xr = xr * s.cos[:t] + rotate_half(xr) * s.sin[:t]
            return torch.cat([xr, xp], -1)

        def forward(s, x):
            b, t, d = x.shape
            h = s.ln(x)
            q, k, v = s.qkv(h).split([s.h * s.dh, s.kv * s.dh, s.kv * s.dh], -1)
            q = s.rope(q.view(b, t, s.h, s.dh).transpose(1, 2), t)
            k = s.rope(k.view(b, t, s.kv, s.dh).transpose(1, 2), t)
            v = v.view(b, t, s.kv, s.dh).transpose(1, 2)
            rep = s.h // s.kv                                # grouped-query: kv heads repeated
            k = k[:, :, None].expand(b, s.kv, rep, t, s.dh).reshape(b, s.h, t, s.dh)
            v = v[:, :, None].expand(b, s.kv, rep, t, s.dh).reshape(b, s.h, t, s.dh)
            a = ((q @ k.transpose(-1, -2)) / math.sqrt(s.dh) + s.mask[:t, :t]).softmax(-1)
            att = s.o((a @ v).transpose(1, 2).reshape(b, t, d))
            return x + att + s.fc2(F.gelu(s.fc1(h)))         # attention and MLP in parallel

    class ParallelLM(nn.Module):
        """a Falcon / Phi-style decoder: each layer's attention and MLP read the same LayerNorm
        output and are summed into the residual (a parallel block); grouped-query attention
        (8 query heads, 2 key-value heads expanded), rotary embeddings on the first half of each
        head's 16 dims only (the rest pass through), a causal mask added; 2 layers, 32 tokens."""

        def __init__(s, vocab=1000, d=128, heads=8, kv_heads=2, layers=2, seq=32):
            super().__init__()
            s.emb = nn.Embedding(vocab, d)
            s.layers = nn.ModuleList([ParallelLayer(d, heads, kv_heads, seq) for _ in range(layers)])
            s.ln, s.head = nn.LayerNorm(d), nn.Linear(d, vocab)

        def forward(s, ids):                                 # [B, T] int64
            x = s.emb(ids)
            for layer in s.layers:
                x = layer(x)
            return s.head(s.ln(x))

    class Meta4D(nn.Module):
        def __init__(s, d):
            super().__init__()
            s.pool = nn.AvgPool2d(3, 1, 1, count_include_pad=False)
            s.mlp = nn.Sequential(nn.Conv2d(d, 4 * d, 1), nn.BatchNorm2d(4 * d), nn.GELU(),
                                  nn.Conv2d(4 * d, d, 1), nn.BatchNorm2d(d))
            s.g1 = nn.Parameter(layer_scale(d).detach()[:, None, None])
            s.g2 = nn.Parameter(layer_scale(d).detach()[:, None, None])

        def forward(s, x):
            x = x + s.g1 * (s.pool(x) - x)
            return x + s.g2 * s.mlp(x)

    class Meta3D(nn.Module):
        def __init__(s, d, heads):
            super().__init__()
            s.h, s.dh = heads, d // heads
            s.n1, s.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            s.qkv, s.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            s.ff = mlp(d)
            s.g1, s.g2 = layer_scale(d), layer_scale(d)

        def forward(s, x):
            b, n, d = x.shape
            q, k, v = s.qkv(s.n1(x)).view(b, n, 3, s.h, s.dh).permute(2, 0, 3, 1, 4)
            a = ((q @ k.transpose(-1, -2)) * s.dh ** -0.5).softmax(-1)
            x = x + s.g1 * s.proj((a @ v).transpose(1, 2).reshape(b, n, d))
            return x + s.g2 * s.ff(s.n2(x))

    class EfficientFormer(nn.Module):
        """EfficientFormer: a conv stem (two 3x3 stride-2 convs, BN, ReLU), 4-D stages of
        MetaBlocks (a pooling token mixer, pool(x) - x, with count_include_pad=False, and a
        conv MLP with BN, LayerScale), 3x3 stride-2 downsampling convs, then the last stage's
        map flattened to 16 tokens for 3-D MetaBlocks of attention and MLP; a classifier and
        a distillation head averaged."""

        def __init__(s, dims=(24, 48, 96), depths=(2, 2, 1), attn_layers=2, heads=4, classes=10):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, dims[0] // 2, 3, 2, 1), nn.BatchNorm2d(dims[0] // 2),
                                   nn.ReLU(), nn.Conv2d(dims[0] // 2, dims[0], 3, 2, 1),
                                   nn.BatchNorm2d(dims[0]), nn.ReLU())
            layers = []
            for i, (d, n) in enumerate(zip(dims, depths)):
                if i:
                    layers += [nn.Conv2d(dims[i - 1], d, 3, 2, 1), nn.BatchNorm2d(d)]
                layers += [Meta4D(d) for _ in range(n)]
            s.stages = nn.Sequential(*layers)
            s.attn = nn.Sequential(*[Meta3D(dims[-1], heads) for _ in range(attn_layers)])
            s.norm = nn.LayerNorm(dims[-1])
            s.head, s.dist_head = nn.Linear(dims[-1], classes), nn.Linear(dims[-1], classes)

        def forward(s, x):                                   # [B, 3, 64, 64]
            x = s.stages(s.stem(x))                          # [B, 96, 4, 4]
            x = s.norm(s.attn(x.flatten(2).transpose(1, 2))).mean(1)
            return (s.head(x) + s.dist_head(x)) / 2

    return {c.__name__: c for c in (RWKV, RetNet, Hyena, MLSTM, CaiT, BEiT, XCiT, FocalNet, VAN,
                                     InceptionNeXt, SLaK, FasterNet, Gemma, ParallelLM,
                                     EfficientFormer)}


# the tests' tolerance per model: atol, rtol
TOLERANCES: dict[str, tuple[float, float]] = {}

_floats = zoo_more._floats
_ids = zoo_more._ids


def _model(name: str, cls_name: str, make_inputs) -> ZooModel:
    return zoo_more._model(name, cls_name, make_inputs, _classes)


PROBE15: dict[str, ZooModel] = {
    m.name: m
    for m in [
        _model("rwkv", "RWKV", _ids(24, 500)),
        _model("retnet", "RetNet", _ids(32, 1000)),
        _model("hyena", "Hyena", _floats(64, 16)),
        _model("mlstm", "MLSTM", _floats(16, 32)),
        _model("cait", "CaiT", _floats(3, 32, 32)),
        _model("beit_relpos", "BEiT", _floats(3, 32, 32)),
        _model("xcit", "XCiT", _floats(3, 32, 32)),
        _model("focalnet", "FocalNet", _floats(3, 64, 64)),
        _model("van_lka", "VAN", _floats(3, 64, 64)),
        _model("inception_next", "InceptionNeXt", _floats(3, 64, 64)),
        _model("slak", "SLaK", _floats(3, 32, 32)),
        _model("fasternet", "FasterNet", _floats(3, 64, 64)),
        _model("gemma_block", "Gemma", _ids(32, 1000)),
        _model("parallel_block", "ParallelLM", _ids(32, 1000)),
        _model("efficientformer", "EfficientFormer", _floats(3, 64, 64)),
    ]
}
