"""torch.nn models for the torch frontend's tests and benchmark: the architectures of
torchvision's resnet18, mobilenet_v3_small, efficientnet_b0, squeezenet and ViT (smaller widths
so the default test run stays fast), a GPT-2-style decoder with its causal mask, a BERT-style
encoder, and an LSTM. Written here because torchvision does not import beside this torch build."""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    """resnet18's layout (2 blocks per stage) at a chosen width."""

    def __init__(self, width=16, classes=10):
        super().__init__()
        w = width
        self.stem = nn.Sequential(nn.Conv2d(3, w, 7, 2, 3, bias=False), nn.BatchNorm2d(w),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        layers, cin = [], w
        for i, cout in enumerate([w, 2 * w, 4 * w, 8 * w]):
            layers += [BasicBlock(cin, cout, 1 if i == 0 else 2), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class SqueezeExcite(nn.Module):
    def __init__(self, c, r, act=nn.ReLU, gate=nn.Hardsigmoid):
        super().__init__()
        self.f1 = nn.Conv2d(c, r, 1)
        self.f2 = nn.Conv2d(r, c, 1)
        self.act, self.gate = act(), gate()

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * self.gate(self.f2(self.act(self.f1(s))))


class InvertedResidual(nn.Module):
    def __init__(self, cin, exp, cout, k, stride, se, act, se_act=nn.ReLU, se_gate=nn.Hardsigmoid):
        super().__init__()
        layers = []
        if exp != cin:
            layers += [nn.Conv2d(cin, exp, 1, bias=False), nn.BatchNorm2d(exp), act()]
        layers += [nn.Conv2d(exp, exp, k, stride, k // 2, groups=exp, bias=False),
                   nn.BatchNorm2d(exp), act()]
        if se:
            layers.append(SqueezeExcite(exp, max(exp // 4, 8), se_act, se_gate))
        layers += [nn.Conv2d(exp, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.block(x)
        return x + y if self.residual else y


class MobileNetV3Small(nn.Module):
    """mobilenet_v3_small's block table (hardswish, squeeze-excite, depthwise convs)."""

    def __init__(self, classes=10):
        super().__init__()
        HS, RE = nn.Hardswish, nn.ReLU
        cfg = [(16, 16, 16, 3, 2, True, RE), (16, 72, 24, 3, 2, False, RE),
               (24, 88, 24, 3, 1, False, RE), (24, 96, 40, 5, 2, True, HS),
               (40, 240, 40, 5, 1, True, HS), (40, 120, 48, 5, 1, True, HS),
               (48, 288, 96, 5, 2, True, HS)]
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), HS())
        self.blocks = nn.Sequential(*[InvertedResidual(*c) for c in cfg])
        self.head = nn.Sequential(nn.Conv2d(96, 576, 1, bias=False), nn.BatchNorm2d(576), HS())
        self.cls = nn.Sequential(nn.Linear(576, 256), HS(), nn.Dropout(0.2), nn.Linear(256, classes))

    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        return self.cls(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class EfficientNetB0Lite(nn.Module):
    """efficientnet_b0's MBConv blocks (SiLU, sigmoid-gated squeeze-excite), fewer stages."""

    def __init__(self, classes=10):
        super().__init__()
        S = nn.SiLU
        cfg = [(32, 32, 16, 3, 1, True, S, S, nn.Sigmoid), (16, 96, 24, 3, 2, True, S, S, nn.Sigmoid),
               (24, 144, 24, 3, 1, True, S, S, nn.Sigmoid), (24, 144, 40, 5, 2, True, S, S, nn.Sigmoid)]
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), S())
        self.blocks = nn.Sequential(*[InvertedResidual(*c) for c in cfg])
        self.head = nn.Sequential(nn.Conv2d(40, 128, 1, bias=False), nn.BatchNorm2d(128), S())
        self.fc = nn.Linear(128, classes)

    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class Fire(nn.Module):
    def __init__(self, cin, s, e):
        super().__init__()
        self.s = nn.Conv2d(cin, s, 1)
        self.e1 = nn.Conv2d(s, e, 1)
        self.e3 = nn.Conv2d(s, e, 3, padding=1)

    def forward(self, x):
        x = F.relu(self.s(x))
        return torch.cat([F.relu(self.e1(x)), F.relu(self.e3(x))], 1)


class SqueezeNet(nn.Module):
    """squeezenet1_1's fire modules with ceil-mode max pools."""

    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 3, 2), nn.ReLU(), nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(64, 16, 64), Fire(128, 16, 64), nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(128, 32, 128), Fire(256, 32, 128))
        self.cls = nn.Sequential(nn.Dropout(0.5), nn.Conv2d(256, classes, 1), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d(1))

    def forward(self, x):
        return torch.flatten(self.cls(self.features(x)), 1)


class ViT(nn.Module):
    """A ViT-B-style model: patch embedding, class token, pre-norm encoder layers."""

    def __init__(self, image=32, patch=8, dim=64, depth=2, heads=4, classes=10):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, patch)
        n = (image // patch) ** 2
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], 1) + self.pos
        return self.head(self.norm(self.encoder(x))[:, 0])


class GPTBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * dim, dim))
        self.heads = heads

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, 2)
        h = self.heads
        q, k, v = (z.view(b, t, h, c // h).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (c // h) ** 0.5)
        mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """GPT-2's layout (token and position embeddings, causal blocks, tied head), 2 layers."""

    def __init__(self, vocab=100, ctx=16, dim=32, heads=4, depth=2):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(ctx, dim)
        self.blocks = nn.Sequential(*[GPTBlock(dim, heads) for _ in range(depth)])
        self.ln = nn.LayerNorm(dim)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(t))
        return self.ln(self.blocks(x)) @ self.wte.weight.t()


class BertLike(nn.Module):
    """A BERT-style encoder (post-norm, GELU, attention mask), 2 layers."""

    def __init__(self, vocab=100, dim=32, heads=4, depth=2, ctx=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(ctx, dim)
        self.norm = nn.LayerNorm(dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, activation="gelu",
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.pool = nn.Linear(dim, dim)

    def forward(self, ids):
        x = self.norm(self.tok(ids) + self.pos(torch.arange(ids.shape[1])))
        x = self.encoder(x)
        return torch.tanh(self.pool(x[:, 0]))


class LSTMTagger(nn.Module):
    def __init__(self, vocab=50, dim=16, hidden=24, classes=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, batch_first=True)
        self.out = nn.Linear(hidden, classes)

    def forward(self, ids):
        y, _ = self.lstm(self.emb(ids))
        return self.out(y)


def image(batch=2, size=32):
    return torch.randn(batch, 3, size, size)


def tokens(batch=2, t=8, vocab=50):
    return torch.randint(0, vocab, (batch, t))


# name -> (constructor, example input maker, the dynamic-batch test's batch sizes)
MODELS = {
    "resnet18": (lambda: ResNet(16), lambda b: image(b, 32)),
    "mobilenet_v3_small": (MobileNetV3Small, lambda b: image(b, 32)),
    "efficientnet_b0": (EfficientNetB0Lite, lambda b: image(b, 32)),
    "squeezenet": (SqueezeNet, lambda b: image(b, 33)),
    "vit": (ViT, lambda b: image(b, 32)),
    "gpt2": (GPT, lambda b: tokens(b, 8, 100)),
    "bert": (BertLike, lambda b: tokens(b, 8, 100)),
    "lstm": (LSTMTagger, lambda b: tokens(b, 6, 50)),
}
