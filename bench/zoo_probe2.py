"""A fourth set of torch.nn models, written on 2026-11-26 (later) as a probe of models nobody
tuned for, after the probe of zoo_probe.py had been tuned: they reach for the indexing,
ordering and scattering ops models use beyond convolutions and products. A Swin block (shifted
windows by torch.roll, a relative position bias read through an index buffer), DLRM
(EmbeddingBags, pairwise feature interactions by bmm and an upper-triangle gather), a top-2
routed mixture of experts (topk, gather), a graph attention layer (index_select of edge ends, a
scatter softmax by scatter_reduce, index_add aggregation), DGCNN's EdgeConv (k nearest
neighbours by topk over pairwise distances, gathered features), a YOLO detection head (meshgrid
offsets, sigmoid and exp decoding), a GRU seq2seq with additive attention (GRUCell steps),
capsules with dynamic routing (squash norms, three routing iterations), a Perceiver (a learned
latent array cross-attending to the input) and a small 3-D UNet (Conv3d, ConvTranspose3d,
skip concat). Seeded random weights; `bench/zoo.py --set probe2` times them against
onnxruntime and tests/test_zoo_more.py checks them.
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

    class Swin(nn.Module):
        def __init__(s, c=32, win=4, heads=4, size=16):
            super().__init__()
            s.win, s.heads, s.size = win, heads, size
            s.embed = nn.Conv2d(3, c, 2, stride=2)
            s.norm1, s.norm2 = nn.LayerNorm(c), nn.LayerNorm(c)
            s.qkv, s.proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
            s.mlp = nn.Sequential(nn.Linear(c, 2 * c), nn.GELU(), nn.Linear(2 * c, c))
            s.bias = nn.Parameter(torch.randn((2 * win - 1) ** 2, heads) * 0.1)
            ys, xs = torch.meshgrid(torch.arange(win), torch.arange(win), indexing="ij")
            pos = torch.stack([ys.flatten(), xs.flatten()])               # [2, win*win]
            rel = (pos[:, :, None] - pos[:, None, :]).permute(1, 2, 0) + (win - 1)
            s.register_buffer("index", rel[..., 0] * (2 * win - 1) + rel[..., 1])
            s.head = nn.Linear(c, 10)

        def forward(s, x):
            h = s.embed(x).permute(0, 2, 3, 1)                        # [B, H, W, C]
            b, hh, ww, c = h.shape
            w = s.win
            t = torch.roll(s.norm1(h), shifts=(-w // 2, -w // 2), dims=(1, 2))
            t = t.reshape(b, hh // w, w, ww // w, w, c).permute(0, 1, 3, 2, 4, 5)
            t = t.reshape(-1, w * w, c)                                   # windows
            q, k, v = s.qkv(t).reshape(t.shape[0], w * w, 3, s.heads, c // s.heads) \
                .permute(2, 0, 3, 1, 4)
            a = (q @ k.transpose(-2, -1)) * (c // s.heads) ** -0.5
            bias = s.bias[s.index.reshape(-1)].reshape(w * w, w * w, -1).permute(2, 0, 1)
            a = (a + bias).softmax(-1)
            t = (a @ v).transpose(1, 2).reshape(-1, w * w, c)
            t = s.proj(t).reshape(b, hh // w, ww // w, w, w, c).permute(0, 1, 3, 2, 4, 5)
            t = torch.roll(t.reshape(b, hh, ww, c), shifts=(w // 2, w // 2), dims=(1, 2))
            h = h + t
            h = h + s.mlp(s.norm2(h))
            return s.head(h.mean((1, 2)))

    class DLRM(nn.Module):
        def __init__(s, tables=3, rows=1000, d=16):
            super().__init__()
            s.emb = nn.ModuleList([nn.EmbeddingBag(rows, d, mode="sum") for _ in range(tables)])
            s.bottom = nn.Sequential(nn.Linear(13, 32), nn.ReLU(), nn.Linear(32, d), nn.ReLU())
            n = tables + 1
            i, j = torch.triu_indices(n, n, 1)
            s.register_buffer("pairs", i * n + j)
            s.top = nn.Sequential(nn.Linear(d + n * (n - 1) // 2, 32), nn.ReLU(),
                                  nn.Linear(32, 1))

        def forward(s, dense, ids):
            z = s.bottom(dense)
            feats = [z] + [e(ids[:, k]) for k, e in enumerate(s.emb)]
            f = torch.stack(feats, 1)                                    # [B, n, d]
            inter = torch.bmm(f, f.transpose(1, 2)).flatten(1)[:, s.pairs]
            return torch.sigmoid(s.top(torch.cat([z, inter], 1)))

    class TopKMoE(nn.Module):
        def __init__(s, d=32, experts=4):
            super().__init__()
            s.router = nn.Linear(d, experts)
            s.w1 = nn.Parameter(torch.randn(experts, d, 2 * d) * 0.1)
            s.w2 = nn.Parameter(torch.randn(experts, 2 * d, d) * 0.1)

        def forward(s, x):                                               # [B, T, d]
            logits = s.router(x)
            top, idx = torch.topk(logits, 2, dim=-1)
            gates = top.softmax(-1)                                      # [B, T, 2]
            h = F.gelu(torch.einsum("btd,edh->bteh", x, s.w1))
            y = torch.einsum("bteh,ehd->bted", h, s.w2)                  # every expert
            pick = torch.gather(y, 2, idx[..., None].expand(-1, -1, -1, y.shape[-1]))
            return x + (pick * gates[..., None]).sum(2)

    class GAT(nn.Module):
        def __init__(s, nodes=24, f=16, hidden=32):
            super().__init__()
            g = torch.Generator().manual_seed(1)
            src = torch.randint(0, nodes, (64,), generator=g)
            dst = torch.randint(0, nodes, (64,), generator=g)
            loops = torch.arange(nodes)
            s.register_buffer("src", torch.cat([src, loops]))
            s.register_buffer("dst", torch.cat([dst, loops]))
            s.nodes = nodes
            s.lin = nn.Linear(f, hidden, bias=False)
            s.att_src = nn.Parameter(torch.randn(hidden) * 0.1)
            s.att_dst = nn.Parameter(torch.randn(hidden) * 0.1)
            s.out = nn.Linear(hidden, 4)

        def forward(s, x):                                               # [B, N, F]
            h = s.lin(x)
            e = F.leaky_relu((h * s.att_src).sum(-1).index_select(1, s.src)
                             + (h * s.att_dst).sum(-1).index_select(1, s.dst), 0.2)
            idx = s.dst.expand(x.shape[0], -1)
            top = torch.full((x.shape[0], s.nodes), -1e9).scatter_reduce(
                1, idx, e, "amax", include_self=True)
            p = torch.exp(e - top.gather(1, idx))
            den = torch.zeros(x.shape[0], s.nodes).scatter_add(1, idx, p)
            alpha = p / den.gather(1, idx)
            msg = h.index_select(1, s.src) * alpha[..., None]
            agg = torch.zeros_like(h).index_add(1, s.dst, msg)
            return s.out(F.elu(agg)).mean(1)

    class EdgeConv(nn.Module):
        def __init__(s, k=8):
            super().__init__()
            s.k = k
            s.conv = nn.Sequential(nn.Conv2d(6, 32, 1), nn.BatchNorm2d(32), nn.LeakyReLU(0.2))
            s.head = nn.Linear(32, 5)

        def forward(s, x):                                               # [B, 3, N]
            pts = x.transpose(1, 2)                                      # [B, N, 3]
            d = torch.cdist(pts, pts)
            idx = d.topk(s.k, dim=-1, largest=False)[1]                  # [B, N, k]
            b, n, _ = pts.shape
            nb = torch.gather(pts[:, None].expand(b, n, n, 3), 2,
                              idx[..., None].expand(b, n, s.k, 3))       # [B, N, k, 3]
            center = pts[:, :, None].expand(b, n, s.k, 3)
            edge = torch.cat([center, nb - center], -1).permute(0, 3, 1, 2)
            return s.head(s.conv(edge).amax(-1).amax(-1))

    class YOLOHead(nn.Module):
        def __init__(s, classes=3, anchors=((10, 13), (16, 30), (33, 23))):
            super().__init__()
            s.na, s.no = len(anchors), classes + 5
            s.backbone = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.SiLU(),
                                       nn.Conv2d(16, 32, 3, 2, 1), nn.SiLU())
            s.pred = nn.Conv2d(32, s.na * s.no, 1)
            s.register_buffer("anchors", torch.tensor(anchors, dtype=torch.float32))

        def forward(s, x):
            p = s.pred(s.backbone(x))
            b, _, h, w = p.shape
            p = p.reshape(b, s.na, s.no, h, w).permute(0, 1, 3, 4, 2)
            ys, xs = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
            grid = torch.stack([xs, ys], -1).float()                     # [h, w, 2]
            xy = (p[..., :2].sigmoid() * 2 - 0.5 + grid) * 4
            wh = (p[..., 2:4].sigmoid() * 2) ** 2 * s.anchors[None, :, None, None]
            return torch.cat([xy, wh, p[..., 4:].sigmoid()], -1).reshape(b, -1, s.no)

    class Seq2Seq(nn.Module):
        def __init__(s, f=8, hidden=32, steps=6):
            super().__init__()
            s.enc = nn.GRU(f, hidden, batch_first=True)
            s.cell = nn.GRUCell(hidden, hidden)
            s.wq, s.wk = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)
            s.v = nn.Linear(hidden, 1)
            s.out = nn.Linear(hidden, 4)
            s.steps = steps

        def forward(s, x):                                               # [B, T, f]
            enc, h = s.enc(x)
            h, keys, outs = h[0], s.wk(enc), []
            for _ in range(s.steps):
                score = s.v(torch.tanh(keys + s.wq(h)[:, None]))        # [B, T, 1]
                ctx = torch.bmm(score.softmax(1).transpose(1, 2), enc)[:, 0]
                h = s.cell(ctx, h)
                outs.append(s.out(h))
            return torch.stack(outs, 1)

    class Capsules(nn.Module):
        def __init__(s, caps=8, dim=8, out_caps=5, out_dim=12, iters=3):
            super().__init__()
            s.conv = nn.Conv2d(1, caps * dim, 5, stride=2)
            s.caps, s.dim, s.iters = caps, dim, iters
            s.w = nn.Parameter(torch.randn(1, caps * 36, out_caps, out_dim, dim) * 0.05)

        @staticmethod
        def squash(v, dim=-1):
            n2 = (v * v).sum(dim, keepdim=True)
            return n2 / (1 + n2) * v / torch.sqrt(n2 + 1e-8)

        def forward(s, x):                                               # [B, 1, 16, 16]
            u = s.conv(x)                                                # [B, 64, 6, 6]
            b = u.shape[0]
            u = s.squash(u.reshape(b, s.caps, s.dim, 36).permute(0, 1, 3, 2)
                         .reshape(b, -1, s.dim))                         # [B, 288, 8]
            uhat = (s.w @ u[:, :, None, :, None])[..., 0]                # [B, 288, 5, 12]
            logits = torch.zeros(b, uhat.shape[1], uhat.shape[2])
            for it in range(s.iters):
                c = logits.softmax(2)
                v = s.squash((c[..., None] * uhat).sum(1))               # [B, 5, 12]
                if it < s.iters - 1:
                    logits = logits + (uhat * v[:, None]).sum(-1)
            return torch.linalg.vector_norm(v, dim=-1)

    class Perceiver(nn.Module):
        def __init__(s, f=16, d=32, latents=8):
            super().__init__()
            s.latent = nn.Parameter(torch.randn(latents, d) * 0.2)
            s.cross = nn.MultiheadAttention(d, 4, kdim=f, vdim=f, batch_first=True)
            s.self_attn = nn.TransformerEncoderLayer(d, 4, 64, dropout=0.0, batch_first=True)
            s.head = nn.Linear(d, 6)

        def forward(s, x):                                               # [B, T, f]
            q = s.latent.expand(x.shape[0], -1, -1)
            z = q + s.cross(q, x, x, need_weights=False)[0]
            return s.head(s.self_attn(z).mean(1))

    class UNet3d(nn.Module):
        def __init__(s, c=8):
            super().__init__()
            s.down1 = nn.Sequential(nn.Conv3d(1, c, 3, padding=1), nn.ReLU())
            s.down2 = nn.Sequential(nn.Conv3d(c, 2 * c, 3, stride=2, padding=1), nn.ReLU())
            s.up = nn.ConvTranspose3d(2 * c, c, 2, stride=2)
            s.out = nn.Conv3d(2 * c, 2, 1)

        def forward(s, x):                                               # [B, 1, 8, 16, 16]
            a = s.down1(x)
            return s.out(torch.cat([a, F.relu(s.up(s.down2(a)))], 1))

    return {c.__name__: c for c in (Swin, DLRM, TopKMoE, GAT, EdgeConv, YOLOHead, Seq2Seq,
                                     Capsules, Perceiver, UNet3d)}


def _floats(*shapes: tuple[int, ...], names=("x",)):
    def make(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {n: rng.standard_normal((batch, *s)).astype(np.float32)
                for n, s in zip(names, shapes)}
    return make


def _dlrm_inputs(batch: int, size: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"dense": rng.standard_normal((batch, 13)).astype(np.float32),
            "ids": rng.integers(0, 1000, (batch, 3, 4)).astype(np.int64)}


def _model(name: str, cls_name: str, make_inputs) -> ZooModel:
    return zoo_more._model(name, cls_name, make_inputs, _classes)


PROBE2: dict[str, ZooModel] = {m.name: m for m in [
    _model("swin_block", "Swin", _floats((3, 32, 32))),
    _model("dlrm", "DLRM", _dlrm_inputs),
    _model("topk_moe", "TopKMoE", _floats((12, 32))),
    _model("gat", "GAT", _floats((24, 16))),
    _model("edgeconv", "EdgeConv", _floats((3, 64))),
    _model("yolo_head", "YOLOHead", _floats((3, 32, 32))),
    _model("seq2seq_attn", "Seq2Seq", _floats((10, 8))),
    _model("capsules", "Capsules", _floats((1, 16, 16))),
    _model("perceiver", "Perceiver", _floats((20, 16))),
    _model("unet3d", "UNet3d", _floats((1, 8, 16, 16))),
]}
