"""A seventh set of torch.nn models, written on 2026-11-26 (eighth session) as a probe of the
convolution shapes the earlier probes touched only once: a convolutional autoencoder whose
decoder is 3x3, stride-2 ConvTranspose2d with output_padding, a RegNet-style network (grouped
3x3 convolutions of 8 and 16 channels per group, squeeze-excite), a pix2pix U-Net (4x4,
stride-2 convolutions and transposed convolutions, LeakyReLU, skip concats, dropout in eval
mode), a ConvMixer (9x9 depthwise convolutions with GELU and BatchNorm, a patch-embedding stem)
and a MobileNetV3-style network (hardswish, hardsigmoid squeeze-excite, 5x5 and stride-2
depthwise convolutions down to 4x4 planes). All matched onnxruntime from the start; they found
depthwise convolutions of small planes (6.7x onnxruntime's time for a 3x3, stride-2 one on 8x8
planes), grouped ones of 16 channels per group (1.2-1.9x) and strided transposed convolutions
that multiplied padding (the 3x3 decoder at batch 32 1.18x) slow, each fixed in the native
library or the importer. Seeded random weights; `bench/zoo.py --set probe5` times them against
onnxruntime and tests/test_zoo_more.py checks them.
"""
from __future__ import annotations

import functools

import zoo_more
from zoo_models import ZooModel, _torch


@functools.cache
def _classes() -> dict:
    torch = _torch()
    nn, F = torch.nn, torch.nn.functional

    class ConvAutoencoder(nn.Module):
        """64x64 RGB -> 8x8x128 by stride-2 3x3 convolutions -> back by 3x3, stride-2
        ConvTranspose2d with output_padding=1, sigmoid"""

        def __init__(s):
            super().__init__()
            s.enc = nn.Sequential(
                nn.Conv2d(3, 32, 3, 2, 1), nn.ReLU(), nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU(),
                nn.Conv2d(64, 128, 3, 2, 1), nn.ReLU())
            s.dec = nn.Sequential(
                nn.ConvTranspose2d(128, 64, 3, 2, 1, output_padding=1), nn.ReLU(),
                nn.ConvTranspose2d(64, 32, 3, 2, 1, output_padding=1), nn.ReLU(),
                nn.ConvTranspose2d(32, 3, 3, 2, 1, output_padding=1), nn.Sigmoid())

        def forward(s, x):
            return s.dec(s.enc(x))

    class RegBlock(nn.Module):
        """RegNetY-style: 1x1, grouped 3x3 (group width gw), squeeze-excite, 1x1, residual"""

        def __init__(s, c, gw, stride):
            super().__init__()
            s.a = nn.Sequential(nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU())
            s.b = nn.Sequential(nn.Conv2d(c, c, 3, stride, 1, groups=c // gw, bias=False),
                                nn.BatchNorm2d(c), nn.ReLU())
            s.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(c, c // 4, 1), nn.ReLU(),
                                 nn.Conv2d(c // 4, c, 1), nn.Sigmoid())
            s.c = nn.Sequential(nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c))
            s.down = stride > 1

        def forward(s, x):
            y = s.b(s.a(x))
            y = s.c(y * s.se(y))
            return F.relu(y if s.down else x + y)

    class RegNet(nn.Module):
        """a stride-2 stem and three stages of RegBlocks at group widths 8, 16 and 16"""

        def __init__(s):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32),
                                   nn.ReLU())
            s.body = nn.Sequential(
                nn.Conv2d(32, 48, 1), RegBlock(48, 8, 2), RegBlock(48, 8, 1),
                nn.Conv2d(48, 96, 1), RegBlock(96, 16, 2), RegBlock(96, 16, 1),
                nn.Conv2d(96, 240, 1), RegBlock(240, 16, 2))
            s.fc = nn.Linear(240, 10)

        def forward(s, x):
            return s.fc(s.body(s.stem(x)).mean((2, 3)))

    class Pix2Pix(nn.Module):
        """pix2pix's U-Net generator at 64x64: 4x4, stride-2 convolutions with LeakyReLU down,
        4x4, stride-2 transposed convolutions with BatchNorm, dropout (eval) and ReLU up, skip
        concats, tanh"""

        def __init__(s):
            super().__init__()

            def down(i, o, bn=True):
                return nn.Sequential(nn.Conv2d(i, o, 4, 2, 1, bias=False),
                                     *([nn.BatchNorm2d(o)] if bn else []), nn.LeakyReLU(0.2))

            def up(i, o):
                return nn.Sequential(nn.ConvTranspose2d(i, o, 4, 2, 1, bias=False),
                                     nn.BatchNorm2d(o), nn.Dropout(0.5), nn.ReLU())

            s.d1, s.d2, s.d3, s.d4 = down(3, 32, False), down(32, 64), down(64, 128), down(128, 128)
            s.u1, s.u2, s.u3 = up(128, 128), up(256, 64), up(128, 32)
            s.out = nn.Sequential(nn.ConvTranspose2d(64, 3, 4, 2, 1), nn.Tanh())

        def forward(s, x):
            d1 = s.d1(x)
            d2 = s.d2(d1)
            d3 = s.d3(d2)
            d4 = s.d4(d3)
            u1 = s.u1(d4)
            u2 = s.u2(torch.cat([u1, d3], 1))
            u3 = s.u3(torch.cat([u2, d2], 1))
            return s.out(torch.cat([u3, d1], 1))

    class ConvMixer(nn.Module):
        """ConvMixer-128/4: a 4x4 patch stem, 9x9 depthwise convolutions ('same' padding) with
        GELU and BatchNorm and a residual, pointwise mixing, mean pooling"""

        def __init__(s, d=128, depth=4, k=9, p=4):
            super().__init__()
            s.stem = nn.Sequential(nn.Conv2d(3, d, p, p), nn.GELU(), nn.BatchNorm2d(d))
            s.blocks = nn.ModuleList([nn.ModuleList([
                nn.Sequential(nn.Conv2d(d, d, k, groups=d, padding="same"), nn.GELU(),
                              nn.BatchNorm2d(d)),
                nn.Sequential(nn.Conv2d(d, d, 1), nn.GELU(), nn.BatchNorm2d(d))])
                for _ in range(depth)])
            s.fc = nn.Linear(d, 10)

        def forward(s, x):
            x = s.stem(x)
            for dw, pw in s.blocks:
                x = pw(x + dw(x))
            return s.fc(x.mean((2, 3)))

    class SE(nn.Module):
        def __init__(s, c):
            super().__init__()
            s.f = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(c, c // 4, 1), nn.ReLU(),
                                nn.Conv2d(c // 4, c, 1), nn.Hardsigmoid())

        def forward(s, x):
            return x * s.f(x)

    class MobileNetV3(nn.Module):
        """MobileNetV3-small-style at 112x112: inverted residuals with hardswish, 3x3 and 5x5
        depthwise convolutions (stride 2 down to 4x4 planes), hardsigmoid squeeze-excite"""

        def __init__(s):
            super().__init__()

            def block(i, e, o, k, stride, se):
                return nn.Sequential(
                    nn.Conv2d(i, e, 1, bias=False), nn.BatchNorm2d(e), nn.Hardswish(),
                    nn.Conv2d(e, e, k, stride, k // 2, groups=e, bias=False), nn.BatchNorm2d(e),
                    nn.Hardswish(), *([SE(e)] if se else []),
                    nn.Conv2d(e, o, 1, bias=False), nn.BatchNorm2d(o))

            s.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16),
                                   nn.Hardswish())
            s.blocks = nn.Sequential(
                block(16, 16, 16, 3, 2, True), block(16, 72, 24, 3, 2, False),
                block(24, 88, 24, 3, 1, False), block(24, 96, 40, 5, 2, True),
                block(40, 240, 40, 5, 1, True), block(40, 288, 96, 5, 2, True))
            s.head = nn.Sequential(nn.Conv2d(96, 576, 1), nn.Hardswish(), nn.AdaptiveAvgPool2d(1),
                                   nn.Flatten(), nn.Linear(576, 10))

        def forward(s, x):
            return s.head(s.blocks(s.stem(x)))

    return {c.__name__: c for c in (ConvAutoencoder, RegNet, Pix2Pix, ConvMixer, MobileNetV3)}


_floats = zoo_more._floats


def _model(name: str, cls_name: str, make_inputs) -> ZooModel:
    return zoo_more._model(name, cls_name, make_inputs, _classes)


PROBE5: dict[str, ZooModel] = {
    m.name: m
    for m in [
        _model("conv_autoencoder", "ConvAutoencoder", _floats(3, 64, 64)),
        _model("regnet", "RegNet", _floats(3, 64, 64)),
        _model("pix2pix", "Pix2Pix", _floats(3, 64, 64)),
        _model("convmixer", "ConvMixer", _floats(3, 64, 64)),
        _model("mobilenet_v3", "MobileNetV3", _floats(3, 112, 112)),
    ]
}
