"""A fifth set of torch.nn models, written on 2026-11-26 (sixth session) as a probe of models
nobody tuned for: a DenseNet-BC (concats), EfficientNet-style MBConv blocks (SiLU,
squeeze-excite, 5x5 depthwise), GroupNorm / InstanceNorm with a residual, a GPT-style decoder
(nanoGPT's masked_fill attention and nn.MultiheadAttention with a float causal mask, a tied LM
head), a bidirectional 2-layer GRU tagger masking its padding with torch.where, a DCGAN
generator, ESPCN's PixelShuffle, a temporal conv net of dilated causal Conv1d, a Conv3d net, a
zoo of activations and pooling modes (PReLU, ELU, Mish, Softplus, SELU, CELU, Hardswish,
ceil-mode and count_include_pad=False pooling, align_corners interpolation), a Siamese pair with
cosine similarity and pairwise distance, an EmbeddingBag recommender with an FM term, a scoring
head (cumsum, topk, gather, argmax, clamp) and einsum attention with LayerNorm over two dims.
Three of them found whole-program fallbacks the others had not (a fill of a computed shape, an
unknown-size value fused beside an independent one) and two found slow paths (narrow 2x2
pooling, a transposed convolution of one pixel). Seeded random weights; `bench/zoo.py --set
probe3` times them against onnxruntime and tests/test_zoo_more.py checks them.
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

    class DenseNet(nn.Module):
        """DenseNet-BC: 3 dense blocks of 4 BN-ReLU-1x1-BN-ReLU-3x3 layers (many concats)"""

        def __init__(s, g=12):
            super().__init__()
            s.stem = nn.Conv2d(3, 24, 3, padding=1, bias=False)
            blocks, c = [], 24
            for i in range(3):
                layers = nn.ModuleList()
                for _ in range(4):
                    layers.append(
                        nn.Sequential(
                            nn.BatchNorm2d(c),
                            nn.ReLU(),
                            nn.Conv2d(c, 4 * g, 1, bias=False),
                            nn.BatchNorm2d(4 * g),
                            nn.ReLU(),
                            nn.Conv2d(4 * g, g, 3, padding=1, bias=False),
                        )
                    )
                    c += g
                trans = (
                    nn.Sequential(
                        nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, c // 2, 1, bias=False), nn.AvgPool2d(2)
                    )
                    if i < 2
                    else nn.Identity()
                )
                blocks.append(nn.ModuleDict({"layers": layers, "trans": trans}))
                c = c // 2 if i < 2 else c
            s.blocks = nn.ModuleList(blocks)
            s.bn = nn.BatchNorm2d(c)
            s.fc = nn.Linear(c, 10)

        def forward(s, x):
            x = s.stem(x)
            for b in s.blocks:
                for l in b["layers"]:
                    x = torch.cat([x, l(x)], 1)
                x = b["trans"](x)
            return s.fc(F.adaptive_avg_pool2d(F.relu(s.bn(x)), 1).flatten(1))

    class MBConv(nn.Module):
        def __init__(s, cin, cout, exp, k, stride):
            super().__init__()
            mid = cin * exp
            s.expand = (
                nn.Sequential(nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.SiLU())
                if exp != 1
                else nn.Identity()
            )
            s.dw = nn.Sequential(
                nn.Conv2d(mid, mid, k, stride, k // 2, groups=mid, bias=False), nn.BatchNorm2d(mid), nn.SiLU()
            )
            sq = max(1, cin // 4)
            s.se1, s.se2 = nn.Conv2d(mid, sq, 1), nn.Conv2d(sq, mid, 1)
            s.proj = nn.Sequential(nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
            s.res = stride == 1 and cin == cout

        def forward(s, x):
            h = s.dw(s.expand(x))
            w = torch.sigmoid(s.se2(F.silu(s.se1(h.mean((2, 3), keepdim=True)))))
            h = s.proj(h * w)
            return x + h if s.res else h

    class EfficientNet(nn.Module):
        """EfficientNet-B0-ish at 64x64: MBConv with SiLU, squeeze-excite, 3x3 and 5x5 depthwise"""

        def __init__(s):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.SiLU())
            cfg = [
                (32, 16, 1, 3, 1),
                (16, 24, 6, 3, 2),
                (24, 24, 6, 3, 1),
                (24, 40, 6, 5, 2),
                (40, 40, 6, 5, 1),
                (40, 80, 6, 3, 2),
            ]
            s.blocks = nn.Sequential(*[MBConv(*c) for c in cfg])
            s.head = nn.Sequential(nn.Conv2d(80, 320, 1, bias=False), nn.BatchNorm2d(320), nn.SiLU())
            s.fc = nn.Linear(320, 100)

        def forward(s, x):
            return s.fc(F.adaptive_avg_pool2d(s.head(s.blocks(s.stem(x))), 1).flatten(1))

    class NormCNN(nn.Module):
        """GroupNorm and InstanceNorm (affine) instead of BatchNorm, with a residual"""

        def __init__(s):
            super().__init__()
            s.c1, s.n1 = nn.Conv2d(3, 32, 3, padding=1), nn.GroupNorm(8, 32)
            s.c2, s.n2 = nn.Conv2d(32, 64, 3, 2, 1), nn.InstanceNorm2d(64, affine=True)
            s.c3, s.n3 = nn.Conv2d(64, 64, 3, padding=1), nn.GroupNorm(4, 64)
            s.c4, s.n4 = nn.Conv2d(64, 128, 3, 2, 1), nn.GroupNorm(32, 128)
            s.fc = nn.Linear(128, 10)

        def forward(s, x):
            x = F.relu(s.n1(s.c1(x)))
            x = F.relu(s.n2(s.c2(x)))
            x = F.relu(s.n3(s.c3(x)) + x)
            x = F.relu(s.n4(s.c4(x)))
            return s.fc(x.mean((2, 3)))

    class GPT(nn.Module):
        """GPT-style decoder: token + learned position embeddings, 2 pre-LN blocks with a causal mask
        (block 1: nanoGPT manual attention, masked_fill with a sliced tril buffer; block 2:
        nn.MultiheadAttention with a float attn_mask), tied LM head"""

        def __init__(s, V=512, d=128, h=4, T=64):
            super().__init__()
            s.h = h
            s.tok, s.pos = nn.Embedding(V, d), nn.Embedding(T, d)
            s.ln1a, s.qkv, s.proj = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
            s.ln1b, s.mlp1 = (
                nn.LayerNorm(d),
                nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d)),
            )
            s.register_buffer("tril", torch.tril(torch.ones(T, T)).view(1, 1, T, T))
            s.ln2a, s.mha = nn.LayerNorm(d), nn.MultiheadAttention(d, h, batch_first=True)
            s.ln2b, s.mlp2 = (
                nn.LayerNorm(d),
                nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)),
            )
            s.lnf = nn.LayerNorm(d)
            s.head = nn.Linear(d, V, bias=False)
            s.head.weight = s.tok.weight

        def forward(s, idx):
            B, T = idx.shape
            x = s.tok(idx) + s.pos(torch.arange(T, device=idx.device))
            q, k, v = s.qkv(s.ln1a(x)).split(x.shape[-1], dim=2)
            q, k, v = [t.view(B, T, s.h, -1).transpose(1, 2) for t in (q, k, v)]
            att = (q @ k.transpose(-2, -1)) * (1.0 / (q.shape[-1] ** 0.5))
            att = att.masked_fill(s.tril[:, :, :T, :T] == 0, float("-inf"))
            y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(B, T, -1)
            x = x + s.proj(y)
            x = x + s.mlp1(s.ln1b(x))
            mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
            h = s.ln2a(x)
            x = x + s.mha(h, h, h, attn_mask=mask, need_weights=False)[0]
            x = x + s.mlp2(s.ln2b(x))
            return s.head(s.lnf(x))

    class BiGRUTagger(nn.Module):
        """embedding (padding_idx 0) -> 2-layer bidirectional GRU -> per-token tags, padding
        positions masked with where"""

        def __init__(s, V=1000, d=64, hid=64, tags=17):
            super().__init__()
            s.emb = nn.Embedding(V, d, padding_idx=0)
            s.gru = nn.GRU(d, hid, num_layers=2, batch_first=True, bidirectional=True)
            s.fc = nn.Linear(2 * hid, tags)

        def forward(s, tok):
            h, _ = s.gru(s.emb(tok))
            logits = s.fc(h)
            return torch.where((tok == 0).unsqueeze(-1), torch.zeros_like(logits), logits)

    class DCGAN(nn.Module):
        """DCGAN generator: z [B,100,1,1] -> 32x32 RGB, ConvTranspose2d + BatchNorm + ReLU, tanh"""

        def __init__(s, nz=100, ngf=64):
            super().__init__()
            s.net = nn.Sequential(
                nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
                nn.BatchNorm2d(ngf * 4),
                nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ngf * 2),
                nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ngf),
                nn.ReLU(True),
                nn.ConvTranspose2d(ngf, 3, 4, 2, 1, bias=False),
                nn.Tanh(),
            )

        def forward(s, z):
            return s.net(z)

    class ESPCN(nn.Module):
        """ESPCN super-resolution x3: tanh convs then PixelShuffle"""

        def __init__(s, r=3):
            super().__init__()
            s.c1, s.c2, s.c3 = (
                nn.Conv2d(1, 64, 5, padding=2),
                nn.Conv2d(64, 32, 3, padding=1),
                nn.Conv2d(32, r * r, 3, padding=1),
            )
            s.ps = nn.PixelShuffle(r)

        def forward(s, x):
            return torch.sigmoid(s.ps(s.c3(torch.tanh(s.c2(torch.tanh(s.c1(x)))))))

    class TCN(nn.Module):
        """temporal conv net: residual blocks of dilated causal Conv1d (left F.pad), dilations
        1..8"""

        def __init__(s, cin=8, c=48, k=3):
            super().__init__()
            s.k = k
            s.blocks = nn.ModuleList()
            prev = cin
            for d in (1, 2, 4, 8):
                s.blocks.append(
                    nn.ModuleDict(
                        {
                            "c1": nn.Conv1d(prev, c, k, dilation=d),
                            "c2": nn.Conv1d(c, c, k, dilation=d),
                            "down": nn.Conv1d(prev, c, 1) if prev != c else nn.Identity(),
                        }
                    )
                )
                prev = c
            s.out = nn.Linear(c, 5)

        def forward(s, x):  # [B, 8, 128]
            for i, b in enumerate(s.blocks):
                d = 2**i
                p = (s.k - 1) * d
                h = F.relu(b["c1"](F.pad(x, (p, 0))))
                h = F.relu(b["c2"](F.pad(h, (p, 0))))
                x = F.relu(h + b["down"](x))
            return s.out(x[:, :, -1])

    class Conv3D(nn.Module):
        """small video / volume net: Conv3d + BatchNorm3d + ReLU, MaxPool3d, AdaptiveAvgPool3d"""

        def __init__(s):
            super().__init__()
            s.f = nn.Sequential(
                nn.Conv3d(1, 16, 3, padding=1),
                nn.BatchNorm3d(16),
                nn.ReLU(),
                nn.MaxPool3d(2),
                nn.Conv3d(16, 32, 3, padding=1),
                nn.BatchNorm3d(32),
                nn.ReLU(),
                nn.MaxPool3d(2),
                nn.Conv3d(32, 64, 3, padding=1),
                nn.BatchNorm3d(64),
                nn.ReLU(),
                nn.AdaptiveAvgPool3d(1),
            )
            s.fc = nn.Linear(64, 4)

        def forward(s, x):  # [B, 1, 16, 32, 32]
            return s.fc(s.f(x).flatten(1))

    class ActZoo(nn.Module):
        """PReLU, ELU, LeakyReLU, Softplus, Mish, Hardsigmoid, Hardswish, SELU, CELU; MaxPool2d(ceil_mode),
        AvgPool2d(count_include_pad=False), bilinear interpolate align_corners=True"""

        def __init__(s):
            super().__init__()
            s.c1, s.a1 = nn.Conv2d(3, 32, 3, padding=1), nn.PReLU(32)
            s.c2 = nn.Conv2d(32, 32, 3, padding=1)
            s.c3 = nn.Conv2d(32, 48, 3, padding=1)
            s.c4 = nn.Conv2d(48, 48, 3, padding=1)
            s.c5 = nn.Conv2d(48, 32, 3, padding=1)
            s.fc = nn.Linear(32, 10)

        def forward(s, x):  # [B, 3, 30, 30]
            x = s.a1(s.c1(x))
            x = F.elu(s.c2(x)) + F.leaky_relu(x, 0.1)
            x = F.max_pool2d(x, 2, ceil_mode=True)  # 30 -> 15
            x = F.max_pool2d(x, 2, ceil_mode=True)  # 15 -> 8
            x = F.mish(s.c3(x)) * F.hardsigmoid(x.mean(1, keepdim=True))
            x = F.avg_pool2d(x, 3, 1, 1, count_include_pad=False)
            x = F.softplus(s.c4(x)) + F.hardswish(x) + F.selu(x) - F.celu(x, 0.5)
            x = F.interpolate(x, size=(13, 13), mode="bilinear", align_corners=True)
            x = F.avg_pool2d(s.c5(x), 3, 2, 1, count_include_pad=False, ceil_mode=True)
            return s.fc(x.amax((2, 3)))

    class Siamese(nn.Module):
        """Siamese net on a pair [B, 2, 1, 28, 28]: shared CNN tower, F.normalize embeddings,
        F.cosine_similarity, pairwise_distance, contrastive-style head"""

        def __init__(s):
            super().__init__()
            s.tower = nn.Sequential(
                nn.Conv2d(1, 32, 5),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(32, 64, 5),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Flatten(),
                nn.Linear(64 * 16, 128),
            )
            s.head = nn.Linear(3, 1)

        def forward(s, pair):
            a, b = s.tower(pair[:, 0]), s.tower(pair[:, 1])
            na, nb = F.normalize(a, dim=1), F.normalize(b, dim=1)
            cos = F.cosine_similarity(a, b, dim=1)
            dist = F.pairwise_distance(na, nb)
            l1 = (na - nb).abs().sum(1)
            return torch.sigmoid(s.head(torch.stack([cos, dist, l1], 1))), na

    class Recommender(nn.Module):
        """DLRM / FM-like recommender: 6 categorical fields [B, 6] (one shared table with per-field offsets)
        plus a multi-hot bag [B, 10] via nn.EmbeddingBag(mode='mean'), FM pairwise term, MLP, sigmoid"""

        def __init__(s, V=200, d=32):
            super().__init__()
            s.register_buffer("offs", torch.arange(6) * V)
            s.emb = nn.Embedding(6 * V, d)
            s.bag = nn.EmbeddingBag(500, d, mode="mean")
            s.lin = nn.Embedding(6 * V, 1)
            s.mlp = nn.Sequential(
                nn.Linear(7 * d, 256), nn.ReLU(), nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 1)
            )

        def forward(s, ids):  # [B, 16] int64: 6 fields then a 10-item bag
            f = ids[:, :6] + s.offs
            e = s.emb(f)  # [B, 6, d]
            bag = s.bag(ids[:, 6:])  # [B, d]
            e = torch.cat([e, bag.unsqueeze(1)], 1)  # [B, 7, d]
            sm = e.sum(1)
            fm = 0.5 * (sm * sm - (e * e).sum(1)).sum(1, keepdim=True)
            return torch.sigmoid(s.mlp(e.flatten(1)) + fm + s.lin(f).sum(1))

    class OpsMix(nn.Module):
        """cumsum, topk, argmax, where, clamp, gather, sort-free ranking: a scoring head returning
        (scores, topk values, topk indices, argmax)"""

        def __init__(s):
            super().__init__()
            s.l1, s.l2 = nn.Linear(64, 256), nn.Linear(256, 100)

        def forward(s, x):  # [B, 64]
            h = torch.clamp(s.l1(x), -1.5, 2.0)
            h = torch.where(h > 0, h, 0.1 * h)
            sc = s.l2(h)
            c = torch.cumsum(F.softmax(sc, -1), dim=-1)
            sc = sc + torch.where(c < 0.5, torch.ones_like(c), -torch.ones_like(c))
            v, i = torch.topk(sc, 5, dim=-1)
            g = torch.gather(sc, 1, i)
            am = torch.argmax(sc, dim=-1)
            return sc.clamp(min=-3.0), v + g, i, am

    class EinsumAttn(nn.Module):
        """LayerNorm over the last two dims, einsum multi-head attention with a learned relative bias"""

        def __init__(s, T=32, d=64, h=4):
            super().__init__()
            s.h = h
            s.ln = nn.LayerNorm([T, d])
            s.wq, s.wk, s.wv = (
                nn.Parameter(torch.randn(h, d, d // h) * 0.1),
                nn.Parameter(torch.randn(h, d, d // h) * 0.1),
                nn.Parameter(torch.randn(h, d, d // h) * 0.1),
            )
            s.wo = nn.Parameter(torch.randn(h, d // h, d) * 0.1)
            s.bias = nn.Parameter(torch.randn(h, T, T) * 0.1)
            s.ln2 = nn.LayerNorm([T, d])
            s.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
            s.out = nn.Linear(d, 6)

        def forward(s, x):  # [B, T, d]
            y = s.ln(x)
            q = torch.einsum("btd,hdk->bhtk", y, s.wq)
            k = torch.einsum("btd,hdk->bhtk", y, s.wk)
            v = torch.einsum("btd,hdk->bhtk", y, s.wv)
            a = torch.einsum("bhqk,bhsk->bhqs", q, k) / 4.0 + s.bias
            o = torch.einsum("bhqs,bhsk->bhqk", a.softmax(-1), v)
            x = x + torch.einsum("bhtk,hkd->btd", o, s.wo)
            x = x + s.ff(s.ln2(x))
            return s.out(x.mean(1))

    return {
        c.__name__: c
        for c in (
            DenseNet,
            EfficientNet,
            NormCNN,
            GPT,
            BiGRUTagger,
            DCGAN,
            ESPCN,
            TCN,
            Conv3D,
            ActZoo,
            Siamese,
            Recommender,
            OpsMix,
            EinsumAttn,
        )
    }


def _floats(*shape: int):
    def make(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": rng.standard_normal((batch, *shape)).astype(np.float32)}

    return make


def _tokens(length: int, vocab: int, padded: bool = False):
    def make(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
        t = rng.integers(1, vocab, (batch, length)).astype(np.int64)
        if padded:  # ragged lengths, padded with token 0
            for row, n in enumerate(rng.integers(length // 2, length + 1, batch)):
                t[row, n:] = 0
        return {"x": t}

    return make


def _fields(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    # 6 categorical fields, then a bag of 10 items
    return {
        "x": np.concatenate([rng.integers(0, 200, (batch, 6)), rng.integers(0, 500, (batch, 10))], 1).astype(
            np.int64
        )
    }


def _model(name: str, cls_name: str, make_inputs) -> ZooModel:
    return zoo_more._model(name, cls_name, make_inputs, _classes)


PROBE3: dict[str, ZooModel] = {
    m.name: m
    for m in [
        _model("densenet_bc", "DenseNet", _floats(3, 32, 32)),
        _model("efficientnet", "EfficientNet", _floats(3, 64, 64)),
        _model("norm_cnn", "NormCNN", _floats(3, 32, 32)),
        _model("gpt_decoder", "GPT", _tokens(64, 512)),
        _model("bigru_tagger", "BiGRUTagger", _tokens(32, 1000, padded=True)),
        _model("dcgan_gen", "DCGAN", _floats(100, 1, 1)),
        _model("espcn_x3", "ESPCN", _floats(1, 32, 32)),
        _model("tcn", "TCN", _floats(8, 128)),
        _model("conv3d_net", "Conv3D", _floats(1, 16, 32, 32)),
        _model("activations", "ActZoo", _floats(3, 30, 30)),
        _model("siamese", "Siamese", _floats(2, 1, 28, 28)),
        _model("recommender", "Recommender", _fields),
        _model("scoring_head", "OpsMix", _floats(64)),
        _model("einsum_attn", "EinsumAttn", _floats(32, 64)),
    ]
}
