"""Per-layer time of the conv2d and maxpool2d references on ResNet-18's layer shapes.

    .venv/bin/python bench/conv_layers.py [--batch 1] [--budget 0.3]

Columns: the op reference (`isa.ops` conv2d: im2col + one matmul), the formulation it replaced
(one einsum over a 6-D window view, kept here as the baseline) and torch's CPU convolution when
torch is installed. Each is the median of batches (bench/_timing.py); on a shared machine run it
twice and compare the ratios rather than the absolute times.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from _timing import fmt_time, median_seconds, optional, table  # noqa: E402

# (name, input C, H, output O, kernel, stride, pad, how many times ResNet-18 runs it)
RESNET18_CONVS = [
    ("conv1 7x7/2", 3, 224, 64, 7, 2, 3, 1),
    ("layer1 3x3", 64, 56, 64, 3, 1, 1, 4),
    ("layer2.0 3x3/2", 64, 56, 128, 3, 2, 1, 1),
    ("layer2 down 1x1/2", 64, 56, 128, 1, 2, 0, 1),
    ("layer2 3x3", 128, 28, 128, 3, 1, 1, 3),
    ("layer3.0 3x3/2", 128, 28, 256, 3, 2, 1, 1),
    ("layer3 down 1x1/2", 128, 28, 256, 1, 2, 0, 1),
    ("layer3 3x3", 256, 14, 256, 3, 1, 1, 3),
    ("layer4.0 3x3/2", 256, 14, 512, 3, 2, 1, 1),
    ("layer4 down 1x1/2", 256, 14, 512, 1, 2, 0, 1),
    ("layer4 3x3", 512, 7, 512, 3, 1, 1, 3),
]


def einsum_conv2d(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """The previous reference (groups = 1, no dilation): one einsum over a window view."""
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    k = w.shape[2]
    win = sliding_window_view(xp, (k, k), axis=(2, 3))[:, :, ::stride, ::stride]
    return np.einsum("nchwij,ocij->nohw", win, w, optimize=True)


def einsum_maxpool(x: np.ndarray) -> np.ndarray:
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    return sliding_window_view(xp, (3, 3), axis=(2, 3))[:, :, ::2, ::2].max(axis=(4, 5))


def _time_conv(conv, torch, spec, batch: int, budget: float, rng) -> tuple[float, float, float]:
    """(reference, einsum, torch) seconds of one layer; torch is NaN when it is missing."""
    _, c, h, o, k, s, p, _ = spec
    x = rng.standard_normal((batch, c, h, h)).astype(np.float32)
    w = rng.standard_normal((o, c, k, k)).astype(np.float32)
    attrs = conv.with_defaults({"strides": [s, s], "pads": [p, p, p, p]})
    np.testing.assert_allclose(conv.reference(attrs, x, w), einsum_conv2d(x, w, s, p),
                               rtol=1e-3, atol=1e-3)
    t_ref = median_seconds(lambda: conv.reference(attrs, x, w), budget)
    t_old = median_seconds(lambda: einsum_conv2d(x, w, s, p), budget)
    t_torch = float("nan")
    if torch is not None:
        tx, tw = torch.from_numpy(x), torch.from_numpy(w)
        t_torch = median_seconds(lambda: torch.nn.functional.conv2d(tx, tw, stride=s, padding=p),
                                 budget)
    return t_ref, t_old, t_torch


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="ResNet-18 conv2d / maxpool2d reference timings")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--budget", type=float, default=0.3, help="seconds per measurement")
    args = ap.parse_args(argv)
    from isa.ops import OPS
    conv, pool = OPS["conv2d"], OPS["maxpool2d"]
    torch = optional("torch")
    rng = np.random.default_rng(0)
    rows, totals = [], [0.0, 0.0, 0.0]
    for spec in RESNET18_CONVS:
        times = _time_conv(conv, torch, spec, args.batch, args.budget, rng)
        for i, t in enumerate(times):
            totals[i] += spec[-1] * t
        name, c, h, o = spec[:4]
        rows.append([f"{name} x{spec[-1]}", f"{c}x{h}x{h} -> {o}", fmt_time(times[0]),
                     fmt_time(times[1]), f"{times[1] / times[0]:.1f}x", fmt_time(times[2]),
                     f"{times[0] / times[2]:.1f}x"])
    x = rng.standard_normal((args.batch, 64, 112, 112)).astype(np.float32)
    attrs = pool.with_defaults({"kernel": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})
    np.testing.assert_array_equal(pool.reference(attrs, x), einsum_maxpool(x))
    t_ref = median_seconds(lambda: pool.reference(attrs, x), args.budget)
    t_old = median_seconds(lambda: einsum_maxpool(x), args.budget)
    rows.append(["maxpool 3x3/2 x1", "64x112x112", fmt_time(t_ref), fmt_time(t_old),
                 f"{t_old / t_ref:.1f}x", "", ""])
    rows.append(["all convs (weighted)", "", fmt_time(totals[0]), fmt_time(totals[1]),
                 f"{totals[1] / totals[0]:.1f}x", fmt_time(totals[2]), f"{totals[0] / totals[2]:.1f}x"])
    print(table(f"ResNet-18 layers, batch {args.batch}, f32",
                ["layer", "shape", "reference", "einsum (before)", "speed-up", "torch", "ref/torch"],
                rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
