"""One torch.nn layer (or a short stack) per model, exported to ONNX as a user would and run by
dlvm with default settings against onnxruntime: a sweep for the slow paths a whole model hides
(a 3-D normalization, a sort, an argmax over channels, a small attention).

    .venv/bin/python bench/torch_layers.py                     # batch 8, TorchScript exporter
    .venv/bin/python bench/torch_layers.py --exporter dynamo --batch 1 --only conv

Each layer: export (dynamic batch), import, dlvm's VM until its background compiles are done,
then dlvm and onnxruntime timed in turn (medians, 2 threads, pools not spinning). The table
gives the ratio dlvm / onnxruntime (above 1: dlvm is slower) and the largest relative
difference of the outputs; a failed export (torch's) or import (dlvm's) is a row that says so.
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import zoo_models as zm  # noqa: E402
from _timing import fmt_time, interleaved_medians, ort_options, table  # noqa: E402

IMAGE, VOLUME, SEQUENCE, VECTOR = (16, 32, 32), (8, 8, 16, 16), (32, 64), (256,)


def layers() -> list[tuple[str, object, tuple[int, ...]]]:
    """(name, module, input shape without the batch) for every layer of the sweep."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Fn(nn.Module):
        """A function of the input, with `m` (if any) as a registered submodule."""

        def __init__(self, f, m=None):
            super().__init__()
            self.f, self.m = f, m

        def forward(self, x):
            return self.f(x) if self.m is None else self.f(x, self.m)

    ids = lambda x: (x.abs() * 100).long() % 1000  # noqa: E731 - token ids from the input
    return [
        ("batchnorm3d + relu", nn.Sequential(nn.BatchNorm3d(8), nn.ReLU()), VOLUME),
        ("instancenorm3d", nn.InstanceNorm3d(8, affine=True), VOLUME),
        ("groupnorm 3-D", nn.GroupNorm(4, 8), VOLUME),
        ("maxpool3d 2", nn.MaxPool3d(2), VOLUME),
        ("avgpool3d 3/1", nn.AvgPool3d(3, 1, 1), VOLUME),
        ("adaptiveavgpool3d", nn.AdaptiveAvgPool3d((2, 4, 4)), VOLUME),
        ("upsample trilinear", nn.Upsample(scale_factor=2, mode="trilinear"), VOLUME),
        ("upsample nearest 3-D", nn.Upsample(scale_factor=2, mode="nearest"), VOLUME),
        ("conv3d 3x3x3", nn.Conv3d(8, 16, 3, padding=1), VOLUME),
        ("conv3d 3x3x3 /2", nn.Conv3d(8, 16, 3, 2, 1), VOLUME),
        ("convtranspose3d 2/2", nn.ConvTranspose3d(8, 8, 2, 2), VOLUME),
        ("convtranspose3d 3/2", nn.ConvTranspose3d(8, 8, 3, 2, 1, 1), VOLUME),
        ("reflectionpad2d", nn.ReflectionPad2d(2), IMAGE),
        ("replicationpad2d", nn.ReplicationPad2d(2), IMAGE),
        ("circularpad2d", nn.CircularPad2d(2), IMAGE),
        ("reflectionpad1d + conv1d", nn.Sequential(nn.ReflectionPad1d(3), nn.Conv1d(32, 32, 7)),
         SEQUENCE),
        ("lppool2d", nn.LPPool2d(2, 2), IMAGE),
        ("upsample bicubic", nn.Upsample(scale_factor=2, mode="bicubic"), IMAGE),
        ("upsample bilinear, corners", nn.Upsample(scale_factor=2, mode="bilinear",
                                                    align_corners=True), IMAGE),
        ("pixelunshuffle", nn.PixelUnshuffle(2), IMAGE),
        ("unfold 3x3", nn.Unfold(3, padding=1), IMAGE),
        ("localresponsenorm", nn.LocalResponseNorm(5), IMAGE),
        ("instancenorm2d", nn.InstanceNorm2d(16), IMAGE),
        ("groupnorm 2-D", nn.GroupNorm(4, 16), IMAGE),
        ("softmax2d", nn.Softmax2d(), IMAGE),
        ("logsoftmax over channels", nn.LogSoftmax(1), IMAGE),
        ("adaptivemaxpool2d", nn.AdaptiveMaxPool2d((4, 8)), IMAGE),
        ("adaptiveavgpool2d", nn.AdaptiveAvgPool2d((4, 8)), IMAGE),
        ("maxpool2d dilated", nn.MaxPool2d(3, 1, 1, dilation=2), IMAGE),
        ("conv2d dilated", nn.Conv2d(16, 16, 3, padding=2, dilation=2), IMAGE),
        ("conv2d 5x5", nn.Conv2d(16, 32, 5, padding=2), IMAGE),
        ("conv2d 1x7", nn.Conv2d(16, 16, (1, 7), padding=(0, 3)), IMAGE),
        ("conv1d dilated", nn.Conv1d(32, 64, 3, padding=4, dilation=4), SEQUENCE),
        ("convtranspose1d 4/2", nn.ConvTranspose1d(32, 16, 4, 2, 1), SEQUENCE),
        ("convtranspose2d 4/2", nn.ConvTranspose2d(16, 8, 4, 2, 1), IMAGE),
        ("cosine similarity", Fn(lambda x: F.cosine_similarity(x[:, :128], x[:, 128:])), VECTOR),
        ("pairwise distance", Fn(lambda x: F.pairwise_distance(x[:, :128], x[:, 128:])), VECTOR),
        ("normalize", Fn(lambda x: F.normalize(x, dim=1)), VECTOR),
        ("gelu, softplus, mish", nn.Sequential(nn.GELU(), nn.Softplus(), nn.Mish()), IMAGE),
        ("selu, celu, elu", nn.Sequential(nn.SELU(), nn.CELU(), nn.ELU()), IMAGE),
        ("prelu per channel", nn.PReLU(16), IMAGE),
        ("hardtanh, rrelu (eval)", nn.Sequential(nn.Hardtanh(), nn.RReLU()), IMAGE),
        ("logsigmoid, tanhshrink", nn.Sequential(nn.LogSigmoid(), nn.Tanhshrink()), IMAGE),
        ("softsign, softshrink", nn.Sequential(nn.Softsign(), nn.Softshrink()), IMAGE),
        ("glu", nn.GLU(1), IMAGE),
        ("cumsum", Fn(lambda x: torch.cumsum(x, 1)), SEQUENCE),
        ("sort", Fn(lambda x: torch.sort(x, -1)[0]), SEQUENCE),
        ("topk 5", Fn(lambda x: torch.topk(x, 5, -1)[0]), SEQUENCE),
        ("argmax over channels", Fn(lambda x: torch.argmax(x, 1).float()), IMAGE),
        ("var and std", Fn(lambda x: x.var(1) + x.std((2, 3), keepdim=True).mean(1)), IMAGE),
        ("vector norm", Fn(lambda x: torch.linalg.vector_norm(x, dim=(2, 3))), IMAGE),
        ("logsumexp", Fn(lambda x: torch.logsumexp(x, 1)), IMAGE),
        ("einsum bchw,bdhw->bcd", Fn(lambda x: torch.einsum("bchw,bdhw->bcd", x, x)), IMAGE),
        ("gram matrix x @ x^T", Fn(lambda x: x.flatten(2) @ x.flatten(2).transpose(1, 2)), IMAGE),
        ("where and clamp", Fn(lambda x: torch.where(x > 0, x.clamp(max=1), x * 0.1)), IMAGE),
        ("embeddingbag mean", Fn(lambda x, m: m(ids(x).flatten(1)),
                                 nn.EmbeddingBag(1000, 64, mode="mean")), SEQUENCE),
        ("embedding", Fn(lambda x, m: m(ids(x)), nn.Embedding(1000, 64)), SEQUENCE),
        ("lstm, 2 layers, bidirectional", Fn(lambda x, m: m(x)[0], nn.LSTM(
            64, 64, 2, batch_first=True, bidirectional=True)), SEQUENCE),
        ("gru", Fn(lambda x, m: m(x)[0], nn.GRU(64, 64, batch_first=True)), SEQUENCE),
        ("multiheadattention", Fn(lambda x, m: m(x, x, x)[0],
                                  nn.MultiheadAttention(64, 4, batch_first=True)), SEQUENCE),
        ("transformerdecoderlayer", Fn(lambda x, m: m(x, x), nn.TransformerDecoderLayer(
            64, 4, 128, batch_first=True)), SEQUENCE),
    ]


def measure(name: str, net, shape: tuple[int, ...], args) -> list[str]:
    import onnxruntime as ort

    import dlvmrt
    from frontends.onnx import import_onnx
    feeds = {"x": np.random.default_rng(0).standard_normal((2, *shape)).astype(np.float32)}
    try:
        # (not under no_grad: there the TorchScript exporter meets nn.MultiheadAttention's fast
        # path, aten::_native_multi_head_attention, which it cannot export)
        data = zm.export_onnx(None, net.eval(), feeds, args.exporter, True)
    except Exception as e:  # noqa: BLE001 - torch's exporter failing is a row, not a crash
        return [name, "export failed (torch)", "", "", "", type(e).__name__]
    try:
        vm = dlvmrt.VM(import_onnx(data))
    except Exception as e:  # noqa: BLE001
        return [name, "import failed (dlvm)", "", "", "", f"{type(e).__name__}: {str(e)[:80]}"]
    sess = ort.InferenceSession(data, ort_options(ort, args.threads),
                                providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).standard_normal((args.batch, *shape)).astype(np.float32)
    for _ in range(4):
        got = vm.run("main", x)
        vm.wait_compiled()
    want = sess.run(None, {"x": x})
    err = max(float(np.max(np.abs(np.asarray(g, np.float64) - w))) /
              max(float(np.max(np.abs(w))), 1e-30) if w.size else 0.0 for g, w in zip(got, want))
    t = interleaved_medians({"dlvm": lambda: vm.run("main", x),
                             "ort": lambda: sess.run(None, {"x": x})}, args.budget)
    return [name, fmt_time(t["dlvm"]), fmt_time(t["ort"]), f"{t['dlvm'] / t['ort']:.2f}",
            f"{err:.1e}", ""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--exporter", default="torchscript", choices=zm.EXPORTERS)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--budget", type=float, default=0.3, help="seconds per competitor and layer")
    ap.add_argument("--only", default="", help="layers whose name contains this")
    args = ap.parse_args()
    os.environ.setdefault("DLVM_THREADS", str(args.threads))
    warnings.filterwarnings("ignore")
    import torch
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    rows, ratios = [], []
    for name, net, shape in layers():
        if args.only and args.only not in name:
            continue
        row = measure(name, net, shape, args)
        rows.append(row)
        if row[3]:
            ratios.append(float(row[3]))
        print(" | ".join(row), flush=True)
    rows.append(["geomean", "", "", f"{zm.geomean(ratios):.2f}", "", f"{len(ratios)} layers"])
    print(table(f"torch.nn layers ({args.exporter}, batch {args.batch}, {args.threads} threads)",
                ["layer", "dlvm", "onnxruntime", "ratio", "max rel diff", "note"], rows))


if __name__ == "__main__":
    main()
