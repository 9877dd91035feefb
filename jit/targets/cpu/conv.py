"""conv2d heads of compiled regions: implicit GEMM on the JIT's kernel.

The op's definition (isa/ops/nn.py) builds the whole patch matrix [C*kH*kW, N*Ho*Wo] and
multiplies it once: for ResNet's first stages that matrix is 7 MB, written to fresh memory, read
back and packed again. Here the GEMM kernel packs its B panels straight from the padded input
(jit/llvm/gemm_kernel.py, pack_b_conv): no patch matrix exists, and the weights, a constant,
are packed once (Gemm.pack). The padded input is a buffer reused from call to call whose border
is zeroed once. Splitting across threads is the kernel's (columns, i.e. output pixels, or rows,
i.e. output channels).

The same products summed by the same kernel as a plain GEMM of the patch matrix, so results
match the reference within the GEMM tolerance of specs/tolerances.md.
"""
from __future__ import annotations

import numpy as np

from .gemm import SLACK, Epilogue, Gemm, Prepacked, use_for

# output rows narrower than this take the explicit patch matrix. ResNet's 14x14 stage is
# faster implicit (256 channels, 2 threads: 1.0 against 1.36 ms, timed in turn), its 7x7 stage
# explicit and transposed (1.73 against 2.12 ms: 49 pixels fill 56 rows of 8-row tiles, but
# 64 columns of 48- and 16-wide ones)
NARROW_ROWS = 8


def supported(x: np.ndarray, w: np.ndarray, attrs: dict) -> bool:
    """f32, ungrouped convolutions where the kernel beats the op's definition.

    That is every one but a plain product: the definition pads the input with np.pad and
    copies the patch matrix afresh on every call (50-90 us of fixed cost for a 32x32 image,
    and a copy N times larger at batch N), where the kernel reuses a padded buffer and packs
    from it, so even a 3x3 convolution of 576 multiply-adds runs faster on it (25 against 63 us,
    bench/small_convs.py). Only a 1x1, stride-1, unpadded one, which the definition
    multiplies as the input itself, goes by the GEMM's own rule for a product of its size.
    """
    if x.dtype != np.float32 or w.dtype != np.float32 or attrs["groups"] != 1:
        return False
    if x.ndim != 4 or w.ndim != 4 or x.shape[1] != w.shape[1]:
        return False            # the definition reports the mismatch as its trap
    o, c, kh, kw = w.shape
    if x.shape[0] >= BATCHED_FROM and _output_pixels(x.shape, w.shape, attrs) < BATCHED_BELOW:
        return False
    if (kh, kw) == (1, 1) and tuple(attrs["strides"]) == (1, 1) and not any(attrs["pads"]):
        return use_for(o, x.shape[0] * x.shape[2] * x.shape[3], c)
    return o > 0 and c > 0


# a batch of small images (digits' 8x8, a CNN's late 4x4 stages) runs one product per image
# here, each too small to pay its dispatch: the definition's single batched product wins below
# this many output pixels per image (batch 64: 8x8 0.22 against 0.76 ms, 12x12 0.87 against
# 1.05; batch 16 16x16 is 0.66 against 0.43 the other way)
BATCHED_BELOW = 192
BATCHED_FROM = 8      # a few images keep the kernel: the definition's fixed cost (np.pad) wins


def _output_pixels(x_shape, w_shape, attrs) -> int:
    (sh, sw), (dh, dw), p = attrs["strides"], attrs["dilations"], attrs["pads"]
    ho = (x_shape[2] + p[0] + p[2] - dh * (w_shape[2] - 1) - 1) // sh + 1
    wo = (x_shape[3] + p[1] + p[3] - dw * (w_shape[3] - 1) - 1) // sw + 1
    return max(ho, 0) * max(wo, 0)


class ConvPlan:
    """Geometry and the reused padded-input buffer of one conv2d input shape."""

    def __init__(self, x_shape: tuple[int, ...], w_shape: tuple[int, ...], attrs: dict):
        n, c, h, w = x_shape
        o, _, kh, kw = w_shape
        sh, sw = attrs["strides"]
        dh, dw = attrs["dilations"]
        top, left, bottom, right = attrs["pads"]
        self.pads = (top, left, bottom, right)
        hp, wp = h + top + bottom, w + left + right
        self.ho = (hp - dh * (kh - 1) - 1) // sh + 1
        self.wo = (wp - dw * (kw - 1) - 1) // sw + 1
        if self.ho <= 0 or self.wo <= 0:
            raise ValueError("window larger than the padded input")   # the definition traps
        self.k = c * kh * kw
        self.o = o
        # a 1x1, stride-1 convolution multiplies the input itself, a plain [C, H*W] matrix
        self.direct = (kh, kw) == (1, 1) and (sh, sw) == (1, 1)
        # the padded input, with SLACK floats after it that the kernel's vector copies may read
        self.padded = None
        if not self.direct or any(self.pads):
            raw = np.zeros(n * c * hp * wp + SLACK, np.float32)
            self.padded = raw[:n * c * hp * wp].reshape(n, c, hp, wp)
        # (one image per product: px = its output pixels; the image stride is then never used)
        self.geometry = np.array([kh, kw, self.wo, sh, sw, dh, dw, hp * wp, wp,
                                  self.ho * self.wo, c * hp * wp], np.int64)
        # narrow output rows make the implicit packing copy many short runs (7 floats for
        # ResNet's last stage): there the patch matrix, small by then, is built once per call
        # into a reused buffer and multiplied as a plain matrix
        self.window = (kh, kw, sh, sw, dh, dw)
        self.cols = None
        if not self.direct and self.wo < NARROW_ROWS:
            # with SLACK floats after it: the kernel's im2col writes whole vectors per row
            raw = np.empty(self.k * self.ho * self.wo + SLACK, np.float32)
            self.cols = raw[:self.k * self.ho * self.wo].reshape(self.k, self.ho * self.wo)
        # fewer output pixels than channels (ResNet's last stage: 49 and 512): out^T =
        # patches^T x w^T fills whole register tiles where out = w x patches would leave most
        # of its last column tile empty; the weights are then packed as w^T, a right operand
        self.transposed = self.cols is not None and self.ho * self.wo < o
        self.out_t = np.empty((self.ho * self.wo, o), np.float32) if self.transposed else None

    def run(self, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, out: np.ndarray,
            gemm: Gemm, threads: int, w_matrix: np.ndarray | Prepacked | None = None,
            relu: bool = False) -> np.ndarray:
        """out [N, O, Ho, Wo] = conv2d(x, w) (+ bias) (then relu); w_matrix: the weights as
        `weights()` says (possibly packed once by Gemm.pack: constant weights). The bias and
        relu are applied by the kernel as it stores the result (Epilogue)."""
        if self.padded is not None:
            top, left = self.pads[0], self.pads[1]
            np.copyto(self.padded[:, :, top:top + x.shape[2], left:left + x.shape[3]], x)
            xp = self.padded
        else:
            xp = np.ascontiguousarray(x)
        wm = w_matrix if w_matrix is not None else self.weights(w)[1]
        if bias is not None:
            bias = np.ascontiguousarray(bias, np.float32).reshape(self.o)
        # one bias per output channel: a row of the product, a column of the transposed one
        per_channel = Epilogue(bias, None, relu)
        flat = out.reshape(out.shape[0], self.o, self.ho * self.wo)
        for img in range(xp.shape[0]):
            if self.direct:
                gemm.matmul(wm, xp[img].reshape(self.k, -1), flat[img], threads, epilogue=per_channel)
            elif self.transposed:
                gemm.matmul(self._patches(xp[img], gemm).T, wm, self.out_t, threads,
                            epilogue=per_channel.transposed())
                np.copyto(flat[img], self.out_t.T)
            elif self.cols is not None:
                gemm.matmul(wm, self._patches(xp[img], gemm), flat[img], threads, epilogue=per_channel)
            else:
                gemm.conv_image(wm, xp[img], self.geometry, flat[img], threads, epilogue=per_channel)
        return out

    def weights(self, w: np.ndarray) -> tuple[str, np.ndarray]:
        """How the product takes the weights: ("a", [O, K]) or, transposed, ("b", [K, O])."""
        m = np.ascontiguousarray(w).reshape(self.o, self.k)
        return ("b", m.T) if self.transposed else ("a", m)

    def _patches(self, image: np.ndarray, gemm: Gemm) -> np.ndarray:
        """The patch matrix [C*kH*kW, Ho*Wo] of one padded image, in the reused buffer (by the
        kernel's im2col: NumPy's copy of the strided view took 140 us for ResNet's 7x7 stage)."""
        return gemm.im2col(image, self.geometry, self.cols)
