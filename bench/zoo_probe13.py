"""A probe set of torch.nn models (probe13): kinds the earlier sets did not cover: a GPT
decoding step with a KV cache (the past keys and values of every layer as inputs of their own
shape, concatenated with the new token's; logits and the grown cache out), models quantized by
onnxruntime's own tooling after export (`quantize_dynamic` on an MLP and on a transformer
encoder: DynamicQuantizeLinear + MatMulInteger; `quantize_static` in QDQ format, per-channel, on
a residual CNN: QuantizeLinear / DequantizeLinear around every Conv, which onnxruntime's
optimizer turns into QLinearConv), nn.EmbeddingBag with offsets (sum with per-sample weights,
mean, max: both exporters write ONNX Loops, the dynamo one with sequences), a 64-layer width-64
MLP (per-instruction overhead at batch 1), a 512 -> 32000 vocabulary head with log_softmax (a
memory-bound product at batch 1), a 192 x 192 channels_last input through a 7x7 stride-2 stem,
kNN by torch.cdist and topk with a label vote and cosine similarity to prototypes, convolutions
under the weight_norm / spectral_norm parametrizations, nn.PixelUnshuffle + nn.ChannelShuffle +
nn.Fold (col2im), transposed convolutions of the rarer forms (grouped with output_padding,
dilated, 1-D, 3-D), RoBERTa's position ids from a cumsum over the int attention mask with
token type embeddings, a hypernetwork (a kernel computed in the graph for F.conv2d, and a kernel
per sample applied by unfold + bmm), 8 greedy decoding steps unrolled by tracing (GRUCell,
attention, argmax feeding an embedding), a gated convolutional LM (nn.GLU, Mish,
Softplus(beta), LogSigmoid, Hardtanh) and a mixture-density head (log_softmax, softplus,
logsumexp). Seeded random weights. `bench/zoo.py --set probe13`.

Where a torch exporter cannot write one of these (torch 2.13), the model is checked through the
other: the TorchScript-based exporter has no opset-17 symbolic for aten::vdot (spectral_norm's
sigma = u . W v, the parametrized CNN) or aten::channel_shuffle (and Col2Im is opset 18: the
fold/shuffle model). A bfloat16 MLP (`.bfloat16()`, float32 in and out) was screened and left out:
both exports load in onnxruntime 1.32 but its CPU provider has no bfloat16 Gemm ("Could not
find an implementation for Gemm(13) node"), so there is nothing to compare with (dlvm runs both
exports, within 3.2e-4 of torch's bfloat16 result: the class stays, BF16MLP).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import os
import tempfile

import numpy as np
import zoo_more
from zoo_models import ZooModel, _torch


@functools.cache
def _classes() -> dict:
    torch = _torch()
    nn, F = torch.nn, torch.nn.functional

    # -- sequence models -------------------------------------------------------------------

    class KVBlock(nn.Module):
        def __init__(s, d, heads):
            super().__init__()
            s.h, s.dh = heads, d // heads
            s.n1, s.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            s.qkv, s.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            s.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"),
                                  nn.Linear(4 * d, d))

        def forward(s, x, pk, pv):                           # x [B, 1, d], pk/pv [B, H, T, dh]
            b = x.shape[0]
            q, k, v = s.qkv(s.n1(x)).view(b, 1, 3, s.h, s.dh).permute(2, 0, 3, 1, 4)
            k, v = torch.cat([pk, k], 2), torch.cat([pv, v], 2)
            a = (q @ k.transpose(-1, -2) / math.sqrt(s.dh)).softmax(-1) @ v
            x = x + s.o(a.transpose(1, 2).reshape(b, 1, -1))
            return x + s.mlp(s.n2(x)), k, v

    class KVCacheStep(nn.Module):
        """one GPT decoding step: a new token, the past keys and values of every layer in,
        the next-token logits and the grown cache out."""

        def __init__(s, vocab=2000, d=128, heads=4, layers=2, max_pos=64):
            super().__init__()
            s.emb, s.pos = nn.Embedding(vocab, d), nn.Embedding(max_pos, d)
            s.blocks = nn.ModuleList([KVBlock(d, heads) for _ in range(layers)])
            s.ln = nn.LayerNorm(d)

        def forward(s, ids, past_k, past_v):                 # [B, 1], [B, L, H, T, dh] x 2
            t = past_k.shape[3]
            x = s.emb(ids) + s.pos.weight[t]
            ks, vs = [], []
            for i, blk in enumerate(s.blocks):
                x, k, v = blk(x, past_k[:, i], past_v[:, i])
                ks.append(k)
                vs.append(v)
            logits = s.ln(x[:, 0]) @ s.emb.weight.t()
            return logits, torch.stack(ks, 1), torch.stack(vs, 1)

    class Encoder(nn.Module):
        def __init__(s, vocab=1000, d=128, seq=32, layers=2, classes=4):
            super().__init__()
            s.emb = nn.Embedding(vocab, d)
            s.pos = nn.Parameter(0.02 * torch.randn(1, seq, d))
            s.enc = nn.TransformerEncoder(
                nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True,
                                           activation="gelu"), layers, enable_nested_tensor=False)
            s.fc = nn.Linear(d, classes)

        def forward(s, ids):                                 # [B, 32]
            return s.fc(s.enc(s.emb(ids) + s.pos).mean(1))

    class RobertaLayer(nn.Module):
        def __init__(s, d, heads):
            super().__init__()
            s.h = heads
            s.qkv, s.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            s.n1, s.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            s.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(s, x, keep):                             # keep [B, 1, 1, T] bool
            b, t, d = x.shape
            q, k, v = s.qkv(x).view(b, t, 3, s.h, -1).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
            x = s.n1(x + s.o(a.transpose(1, 2).reshape(b, t, d)))
            return s.n2(x + s.ff(x))

    class RobertaPos(nn.Module):
        """RoBERTa's embeddings: position ids counted from the attention mask (a cumsum over the
        int mask, padding_idx + 1 onward, pads at padding_idx), token type embeddings."""

        def __init__(s, vocab=1000, d=128, seq=40, layers=2, pad=1):
            super().__init__()
            s.pad = pad
            s.word = nn.Embedding(vocab, d, padding_idx=pad)
            s.posemb = nn.Embedding(seq + pad + 1, d, padding_idx=pad)
            s.tt = nn.Embedding(2, d)
            s.ln = nn.LayerNorm(d)
            s.layers = nn.ModuleList([RobertaLayer(d, 4) for _ in range(layers)])
            s.pool = nn.Linear(d, d)
            s.fc = nn.Linear(d, 3)

        def forward(s, ids, mask, types):                    # [B, 40] int64 x 3
            pos = torch.cumsum(mask, 1) * mask + s.pad
            x = s.ln(s.word(ids) + s.posemb(pos) + s.tt(types))
            keep = mask.bool()[:, None, None, :]
            for layer in s.layers:
                x = layer(x, keep)
            return s.fc(torch.tanh(s.pool(x[:, 0])))

    class EmbeddingBagNet(nn.Module):
        """bags of ids pooled by nn.EmbeddingBag with offsets (sum with per-sample weights,
        and mean, and max), then an MLP."""

        def __init__(s, vocab=5000, d=64, bag=12):
            super().__init__()
            s.bag = bag
            s.sum = nn.EmbeddingBag(vocab, d, mode="sum")
            s.mean = nn.EmbeddingBag(vocab, d, mode="mean")
            s.max = nn.EmbeddingBag(vocab, d, mode="max")
            s.mlp = nn.Sequential(nn.Linear(3 * d, 128), nn.ReLU(), nn.Linear(128, 1))

        def forward(s, ids, w):                              # [B, 12] int64, [B, 12] f32
            flat = ids.reshape(-1)
            offsets = torch.arange(ids.shape[0]) * s.bag
            e = torch.cat([s.sum(flat, offsets, per_sample_weights=w.reshape(-1)),
                           s.mean(flat, offsets), s.max(flat, offsets)], 1)
            return torch.sigmoid(s.mlp(e))

    class GreedyDecoder(nn.Module):
        """a conv encoder, then 8 greedy decoding steps (unrolled by tracing): a GRU cell
        attends over the encoder states, argmax picks the next token, whose embedding feeds the
        next step."""

        def __init__(s, vocab=100, d=96, steps=8, bos=1):
            super().__init__()
            s.steps, s.bos = steps, bos
            s.src = nn.Embedding(vocab, d)
            s.conv = nn.Sequential(nn.Conv1d(d, d, 3, padding=1), nn.ReLU(),
                                   nn.Conv1d(d, d, 3, padding=1))
            s.tgt = nn.Embedding(vocab, d)
            s.cell = nn.GRUCell(2 * d, d)
            s.out = nn.Linear(2 * d, vocab)

        def forward(s, ids):                                 # [B, 20]
            enc = s.conv(s.src(ids).transpose(1, 2)).transpose(1, 2)     # [B, T, d]
            h = enc.mean(1)
            ctx = torch.zeros_like(h)
            tok = torch.full((ids.shape[0],), s.bos, dtype=torch.long)
            toks, score = [], torch.zeros(ids.shape[0])
            for _ in range(s.steps):
                h = s.cell(torch.cat([s.tgt(tok), ctx], 1), h)
                a = (enc @ h.unsqueeze(-1)).squeeze(-1).softmax(-1)        # [B, T]
                ctx = (a.unsqueeze(1) @ enc).squeeze(1)
                logp = s.out(torch.cat([h, ctx], 1)).log_softmax(-1)
                best, tok = logp.max(-1)
                score = score + best
                toks.append(tok)
            return torch.stack(toks, 1), score

    class GatedConvLM(nn.Module):
        """a gated convolutional language model (Dauphin et al.): causal Conv1d + nn.GLU
        blocks, with Mish, Softplus(beta), LogSigmoid and Hardtanh in the head."""

        def __init__(s, vocab=1000, d=128, k=4, blocks=4):
            super().__init__()
            s.k = k
            s.emb = nn.Embedding(vocab, d)
            s.convs = nn.ModuleList([nn.Conv1d(d, 2 * d, k) for _ in range(blocks)])
            s.glu = nn.GLU(dim=1)
            s.mish, s.sp, s.ls = nn.Mish(), nn.Softplus(beta=2.0, threshold=10.0), nn.LogSigmoid()
            s.ht = nn.Hardtanh(-2.0, 2.0)
            s.proj = nn.Linear(d, d)
            s.fc = nn.Linear(2 * d, vocab)

        def forward(s, ids):                                 # [B, 48]
            x = s.emb(ids).transpose(1, 2)
            for c in s.convs:
                x = x + s.glu(c(F.pad(x, (s.k - 1, 0))))
            h = x.transpose(1, 2)[:, -1]
            h = s.ht(s.proj(s.mish(h)))
            return s.fc(torch.cat([s.sp(h), s.ls(h)], 1)).log_softmax(-1)

    # -- dense / tabular ---------------------------------------------------------------------

    class DeepNarrowMLP(nn.Module):
        """64 layers of width 64 (per-instruction overhead at batch 1)."""

        def __init__(s, d=64, layers=64):
            super().__init__()
            s.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(layers)])
            s.fc = nn.Linear(d, 10)

        def forward(s, x):                                   # [B, 64]
            for i, layer in enumerate(s.layers):
                y = torch.relu(layer(x))
                x = x + y if i % 2 else y
            return s.fc(x)

    class BigVocabHead(nn.Module):
        """a language model's output layer: LayerNorm, Linear 512 -> 32000, log_softmax."""

        def __init__(s, d=512, vocab=32000):
            super().__init__()
            s.ln = nn.LayerNorm(d)
            s.head = nn.Linear(d, vocab)

        def forward(s, x):                                   # [B, 512]
            return s.head(s.ln(x)).log_softmax(-1)

    class BF16MLP(nn.Module):
        """an MLP with bfloat16 weights (`.bfloat16()`), float32 in and out."""

        def __init__(s, feats=64, d=256):
            super().__init__()
            s.mlp = nn.Sequential(nn.Linear(feats, d), nn.GELU(), nn.LayerNorm(d),
                                  nn.Linear(d, d), nn.SiLU(), nn.Linear(d, 8))
            s.mlp.bfloat16()

        def forward(s, x):                                   # [B, 64] float32
            return s.mlp(x.to(torch.bfloat16)).float().softmax(-1)

    class MLP(nn.Module):
        def __init__(s, feats=64, d=256, out=8):
            super().__init__()
            s.mlp = nn.Sequential(nn.Linear(feats, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU(),
                                  nn.Linear(d, out))

        def forward(s, x):
            return s.mlp(x)

    class KNN(nn.Module):
        """an embedding tower, Euclidean distances to a 1024-item memory bank (torch.cdist),
        the 8 nearest by topk, a label vote, and cosine similarity to class prototypes."""

        def __init__(s, feats=64, d=32, items=1024, classes=10, k=8):
            super().__init__()
            s.k, s.classes = k, classes
            s.tower = nn.Sequential(nn.Linear(feats, 128), nn.ReLU(), nn.Linear(128, d))
            g = torch.Generator().manual_seed(7)
            s.register_buffer("bank", torch.randn(items, d, generator=g))
            s.register_buffer("labels", torch.randint(0, classes, (items,), generator=g))
            s.protos = nn.Parameter(torch.randn(classes, d))

        def forward(s, x):                                   # [B, 64]
            e = s.tower(x)
            dist = torch.cdist(e, s.bank)                    # [B, 1024]
            dk, idx = dist.topk(s.k, -1, largest=False)
            votes = F.one_hot(s.labels[idx], s.classes).float() * torch.softmax(-dk, -1)[..., None]
            cos = F.cosine_similarity(e[:, None, :], s.protos[None], dim=-1)
            return votes.sum(1), cos, dk

    class MDNHead(nn.Module):
        """a mixture-density network: the negative log-likelihood of a 2-D target under a
        predicted mixture of 8 Gaussians (log_softmax, softplus, logsumexp), and its mean."""

        def __init__(s, feats=32, d=128, k=8, dim=2):
            super().__init__()
            s.k, s.dim = k, dim
            s.body = nn.Sequential(nn.Linear(feats, d), nn.Tanh(), nn.Linear(d, d), nn.Tanh())
            s.pi, s.mu, s.sig = nn.Linear(d, k), nn.Linear(d, k * dim), nn.Linear(d, k * dim)

        def forward(s, x, y):                                # [B, 32], [B, 2]
            h = s.body(x)
            logpi = s.pi(h).log_softmax(-1)
            mu = s.mu(h).view(-1, s.k, s.dim)
            sig = F.softplus(s.sig(h)).view(-1, s.k, s.dim) + 1e-3
            z = (y[:, None, :] - mu) / sig
            logn = (-0.5 * z * z - sig.log() - 0.5 * math.log(2 * math.pi)).sum(-1)
            nll = -torch.logsumexp(logpi + logn, -1)
            return nll, (logpi.exp()[..., None] * mu).sum(1)

    # -- convolutional ----------------------------------------------------------------------

    def cbr(cin, cout, k=3, stride=1, groups=1):
        return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU())

    class Basic(nn.Module):
        def __init__(s, cin, cout, stride=1):
            super().__init__()
            s.body = nn.Sequential(cbr(cin, cout, 3, stride), nn.Conv2d(cout, cout, 3, 1, 1,
                                                                         bias=False),
                                   nn.BatchNorm2d(cout))
            s.skip = (nn.Identity() if stride == 1 and cin == cout else
                      nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                    nn.BatchNorm2d(cout)))

        def forward(s, x):
            return torch.relu(s.body(x) + s.skip(x))

    class QCNN(nn.Module):
        """a small residual CNN, to be quantized by onnxruntime's quantize_static (QDQ)."""

        def __init__(s, classes=10):
            super().__init__()
            s.net = nn.Sequential(cbr(3, 32), Basic(32, 32), Basic(32, 64, 2), Basic(64, 64),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, classes))

        def forward(s, x):                                   # [B, 3, 32, 32]
            return s.net(x)

    class HiResStem(nn.Module):
        """a 192 x 192 input, a 7x7 stride-2 stem and max pool, two stages (large activations
        at batch 1); weights and input in channels_last memory format."""

        def __init__(s, w=16, classes=100):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, w, 7, 2, 3, bias=False), nn.BatchNorm2d(w),
                                   nn.ReLU(), nn.MaxPool2d(3, 2, 1))
            s.s1 = nn.Sequential(Basic(w, w), Basic(w, w))
            s.s2 = nn.Sequential(Basic(w, 2 * w, 2), Basic(2 * w, 2 * w))
            s.fc = nn.Linear(2 * w, classes)
            s.to(memory_format=torch.channels_last)

        def forward(s, x):                                   # [B, 3, 192, 192]
            x = x.contiguous(memory_format=torch.channels_last)
            return s.fc(s.s2(s.s1(s.stem(x))).mean((2, 3)))

    class ParamNormCNN(nn.Module):
        """convolutions and a linear under torch.nn.utils.parametrizations' weight_norm and
        spectral_norm (evaluated: the weight is computed in the graph)."""

        def __init__(s, classes=10):
            super().__init__()
            P = nn.utils.parametrizations
            s.c1 = P.weight_norm(nn.Conv2d(3, 32, 3, 1, 1))
            s.c2 = P.spectral_norm(nn.Conv2d(32, 64, 3, 2, 1))
            s.c3 = P.weight_norm(nn.Conv2d(64, 64, 3, 1, 1), dim=None)
            s.c4 = P.spectral_norm(nn.Conv2d(64, 128, 3, 2, 1))
            s.fc = P.spectral_norm(nn.Linear(128, classes))

        def forward(s, x):                                   # [B, 3, 32, 32]
            x = F.leaky_relu(s.c1(x), 0.2)
            x = F.leaky_relu(s.c2(x), 0.2)
            x = F.leaky_relu(s.c3(x), 0.2)
            x = F.leaky_relu(s.c4(x), 0.2)
            return s.fc(x.mean((2, 3)))

    class FoldShuffle(nn.Module):
        """PixelUnshuffle, nn.ChannelShuffle, overlapping patches by nn.Unfold, a per-patch
        linear, and nn.Fold (col2im: overlapping sums) back, then PixelShuffle."""

        def __init__(s, c=32):
            super().__init__()
            s.unshuf = nn.PixelUnshuffle(2)
            s.c1 = cbr(12, c)
            s.shuffle = nn.ChannelShuffle(4)
            s.g = cbr(c, c, 3, 1, groups=4)
            s.unfold = nn.Unfold(3, padding=1)
            s.patch = nn.Linear(c * 9, 4 * 9)
            s.fold = nn.Fold((32, 32), 3, padding=1)
            s.shuf = nn.PixelShuffle(2)

        def forward(s, x):                                   # [B, 3, 64, 64]
            h = s.g(s.shuffle(s.c1(s.unshuf(x))))            # [B, 32, 32, 32]
            p = s.patch(s.unfold(h).transpose(1, 2)).transpose(1, 2)    # [B, 36, 1024]
            return s.shuf(s.fold(p)) - x.mean(1, True)     # [B, 1, 64, 64]

    class OddDeconv(nn.Module):
        """transposed convolutions of the rarer forms: grouped with output_padding, dilated,
        1-D grouped, 3-D with output_padding."""

        def __init__(s):
            super().__init__()
            s.t1 = nn.ConvTranspose2d(16, 32, 3, stride=2, padding=1, output_padding=1, groups=4)
            s.t2 = nn.ConvTranspose2d(32, 16, 3, stride=1, padding=2, dilation=2)
            s.t3 = nn.ConvTranspose1d(16, 8, 4, stride=2, padding=1, groups=2)
            s.t4 = nn.ConvTranspose3d(4, 4, (2, 3, 3), stride=2, padding=(0, 1, 1),
                                      output_padding=(0, 1, 1))
            s.fc = nn.Linear(16 + 8 + 4, 10)

        def forward(s, x):                                   # [B, 16, 16, 16]
            h = torch.relu(s.t2(torch.relu(s.t1(x))))        # [B, 16, 32, 32]
            a = torch.relu(s.t3(h.mean(2)))                  # [B, 8, 64]
            v = s.t4(h.reshape(h.shape[0], 4, 4, 32, 32)[:, :, :, ::2, ::2])  # [B,4,8,32,32]
            return s.fc(torch.cat([h.mean((2, 3)), a.mean(2), v.mean((2, 3, 4))], 1))

    class HyperNet(nn.Module):
        """a hypernetwork: a static one (learned layer embeddings -> an MLP -> a conv kernel,
        used by F.conv2d) and a dynamic one (the input's features -> a kernel per sample,
        applied by unfold + bmm)."""

        def __init__(s, c=16, z=8, classes=10):
            super().__init__()
            s.c = c
            s.stem = cbr(3, c)
            s.layer_emb = nn.Parameter(torch.randn(1, z))
            s.hyper = nn.Sequential(nn.Linear(z, 64), nn.ReLU(), nn.Linear(64, c * c * 9))
            s.ctx = nn.Linear(c, 32)
            s.dyn = nn.Linear(32, c * c * 9)
            s.fc = nn.Linear(c, classes)

        def forward(s, x):                                   # [B, 3, 32, 32]
            b = x.shape[0]
            h = s.stem(x)
            w = s.hyper(s.layer_emb).view(s.c, s.c, 3, 3) * 0.1
            h = torch.relu(F.conv2d(h, w, padding=1)) + h
            k = s.dyn(torch.relu(s.ctx(h.mean((2, 3))))).view(b, s.c, s.c * 9) * 0.05
            cols = F.unfold(h, 3, padding=1)                 # [B, c*9, 1024]
            h = torch.relu(torch.bmm(k, cols)).view(b, s.c, 32, 32) + h
            return s.fc(h.mean((2, 3)))

    return {c.__name__: c for c in (KVCacheStep, Encoder, RobertaPos, EmbeddingBagNet,
                                     GreedyDecoder, GatedConvLM, DeepNarrowMLP, BigVocabHead,
                                     BF16MLP, MLP, KNN, MDNHead, QCNN, HiResStem, ParamNormCNN,
                                     FoldShuffle, OddDeconv, HyperNet)}


# the QDQ CNN's float convolutions (over dequantized int8) sum in another order than onnxruntime's:
# a last-bit difference that lands on a rounding tie of the next QuantizeLinear (x / scale =
# 3.5000005) moves that activation one quantization step, 1.2e-3 at the output (seen at batch 32,
# as written and optimized alike); the tests' tolerance per model: atol, rtol
TOLERANCES: dict[str, tuple[float, float]] = {"ort_qdq_cnn": (5e-3, 1e-4)}

_floats = zoo_more._floats
_ids = zoo_more._ids


def _kv(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    shape = (batch, 2, 4, 31, 32)
    return {"ids": rng.integers(0, 2000, (batch, 1)).astype(np.int64),
            "past_k": rng.standard_normal(shape).astype(np.float32),
            "past_v": rng.standard_normal(shape).astype(np.float32)}


def _roberta(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    t = 40
    lengths = rng.integers(6, t + 1, batch)
    mask = (np.arange(t)[None, :] < lengths[:, None]).astype(np.int64)
    ids = np.where(mask == 1, rng.integers(3, 1000, (batch, t)), 1).astype(np.int64)
    types = (np.arange(t)[None, :] >= lengths[:, None] // 2).astype(np.int64) * mask
    return {"ids": ids, "mask": mask, "types": types}


def _bags(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"ids": rng.integers(0, 5000, (batch, 12)).astype(np.int64),
            "w": rng.random((batch, 12)).astype(np.float32)}


def _mdn(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"x": rng.standard_normal((batch, 32)).astype(np.float32),
            "target": rng.standard_normal((batch, 2)).astype(np.float32)}


def _quantize_dynamic(onnx_bytes: bytes) -> bytes:
    """onnxruntime's dynamic quantization of an export: int8 weights, MatMulInteger after a
    DynamicQuantizeLinear of the activations."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "q.onnx")
        quantize_dynamic(onnx.load_from_string(onnx_bytes), out, weight_type=QuantType.QInt8)
        return open(out, "rb").read()


def _quantize_static(onnx_bytes: bytes) -> bytes:
    """onnxruntime's static quantization (QDQ format, per-channel int8 weights, calibrated
    on 8 seeded batches)."""
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self, name):
            rng = np.random.default_rng(123)
            self.it = iter([{name: rng.standard_normal((4, 3, 32, 32)).astype(np.float32)}
                            for _ in range(8)])

        def get_next(self):
            return next(self.it, None)

    model = onnx.load_from_string(onnx_bytes)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "q.onnx")
        quantize_static(model, out, Reader(model.graph.input[0].name),
                        quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
        return open(out, "rb").read()


def _model(name: str, cls_name: str, make_inputs, post_export=None) -> ZooModel:
    m = zoo_more._model(name, cls_name, make_inputs, _classes)
    return dataclasses.replace(m, post_export=post_export) if post_export else m


PROBE13: dict[str, ZooModel] = {
    m.name: m
    for m in [
        _model("kv_cache_step", "KVCacheStep", _kv),
        _model("ort_dynquant_encoder", "Encoder", _ids(32, 1000), _quantize_dynamic),
        _model("ort_dynquant_mlp", "MLP", _floats(64), _quantize_dynamic),
        _model("ort_qdq_cnn", "QCNN", _floats(3, 32, 32), _quantize_static),
        _model("embedding_bag", "EmbeddingBagNet", _bags),
        _model("deep_narrow_mlp", "DeepNarrowMLP", _floats(64)),
        _model("big_vocab_head", "BigVocabHead", _floats(512)),
        _model("hires_stem", "HiResStem", _floats(3, 192, 192)),
        _model("knn_cdist", "KNN", _floats(64)),
        _model("param_norm_cnn", "ParamNormCNN", _floats(3, 32, 32)),
        _model("fold_shuffle", "FoldShuffle", _floats(3, 64, 64)),
        _model("odd_deconv", "OddDeconv", _floats(16, 16, 16)),
        _model("roberta_pos", "RobertaPos", _roberta),
        _model("hypernet", "HyperNet", _floats(3, 32, 32)),
        _model("greedy_decode", "GreedyDecoder", _ids(20, 100)),
        _model("gated_conv_lm", "GatedConvLM", _ids(48, 1000)),
        _model("mdn_head", "MDNHead", _mdn),
    ]
}
