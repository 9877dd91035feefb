"""conv2d heads of compiled regions: patch matrices in cache-sized segments and the JIT's GEMM.

The op's definition (isa/ops/nn.py, conv2d_by_product) builds the whole patch matrix
[C*kH*kW, Ho*Wo] and multiplies once: for ResNet's first stages that matrix is 7 MB, written to
fresh memory and read back from DRAM. Here, as ONNX Runtime's MLAS does, the output is cut into
segments of whole output rows whose patch matrix fits in the L2 cache; each segment is expanded
into a buffer that is reused from call to call and multiplied straight into its columns of the
output. Segments are spread over the worker threads (NumPy's copy and the GEMM call both release
the GIL). The padded input is also a reused buffer whose border is zeroed once.

Same arithmetic as the definition (the same products, summed by the same kernel), so results
match the reference within the GEMM tolerance of specs/tolerances.md.
"""
from __future__ import annotations

import numpy as np

from .gemm import Gemm, Prepacked, use_for

# bytes of one segment's patch matrix: about half of this machine's 1 MiB L2 per core, leaving
# room for the packed weights and B panels
SEGMENT_BYTES = 512 * 1024
MIN_SEGMENT = 256
# a patch matrix up to this size is built whole (one product, split across threads inside)
WHOLE_BYTES = 2 * 1024 * 1024


def supported(x: np.ndarray, w: np.ndarray, attrs: dict) -> bool:
    """f32, ungrouped convolutions big enough for the GEMM kernel to pay."""
    if x.dtype != np.float32 or w.dtype != np.float32 or attrs["groups"] != 1:
        return False
    if x.ndim != 4 or w.ndim != 4 or x.shape[1] != w.shape[1]:
        return False            # the definition reports the mismatch as its trap
    o, c, kh, kw = w.shape
    return use_for(o, 64, c * kh * kw)


class ConvPlan:
    """Geometry and reused buffers of one conv2d input shape."""

    def __init__(self, x_shape: tuple[int, ...], w_shape: tuple[int, ...], attrs: dict, threads: int):
        n, c, h, w = x_shape
        o, _, kh, kw = w_shape
        self.kernel = (kh, kw)
        self.strides = tuple(attrs["strides"])
        self.dilations = tuple(attrs["dilations"])
        top, left, bottom, right = attrs["pads"]
        self.pads = (top, left, bottom, right)
        hp, wp = h + top + bottom, w + left + right
        dh, dw = self.dilations
        self.ho = (hp - dh * (kh - 1) - 1) // self.strides[0] + 1
        self.wo = (wp - dw * (kw - 1) - 1) // self.strides[1] + 1
        if self.ho <= 0 or self.wo <= 0:
            raise ValueError("window larger than the padded input")   # the definition traps
        self.k = c * kh * kw
        self.o = o
        self.padded = np.zeros((n, c, hp, wp), np.float32) if any(self.pads) else None
        # a 1x1, stride-1 convolution multiplies the input itself: no patch matrix
        self.direct = (kh, kw) == (1, 1) and self.strides == (1, 1)
        # segments of at least MIN_SEGMENT columns: narrower products lose more to packing the
        # weights again than they save in cache misses
        cols = max(SEGMENT_BYTES // (self.k * 4), MIN_SEGMENT)
        rows = max(1, cols // self.wo)
        if self.k * self.ho * self.wo * 4 <= WHOLE_BYTES:
            rows = self.ho
        self.segments = [(img, i, min(i + rows, self.ho)) for img in range(n)
                         for i in range(0, self.ho, rows)]
        self.threads = max(1, min(threads, len(self.segments)))
        seg = min(rows, self.ho) * self.wo
        self.cols = [np.empty(self.k * seg, np.float32) for _ in range(self.threads)]

    def run(self, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, out: np.ndarray,
            gemm: Gemm, threads: int, w_matrix: np.ndarray | Prepacked | None = None) -> np.ndarray:
        """out [N, O, Ho, Wo] = conv2d(x, w) (+ bias); w_matrix: the weights as [O, C*kH*kW],
        possibly packed once by Gemm.pack (constant weights)."""
        if self.padded is not None:
            top, left = self.pads[0], self.pads[1]
            np.copyto(self.padded[:, :, top:top + x.shape[2], left:left + x.shape[3]], x)
            xp = self.padded
        else:
            xp = np.ascontiguousarray(x)
        wm = w_matrix if w_matrix is not None else np.ascontiguousarray(w).reshape(self.o, self.k)
        flat = out.reshape(out.shape[0], self.o, self.ho * self.wo)
        if self.direct:
            for img in range(xp.shape[0]):
                gemm.matmul(wm, xp[img].reshape(self.k, -1), flat[img], threads)
        elif len(self.segments) == 1:
            img, i0, i1 = self.segments[0]
            self._segment(xp, wm, flat, gemm, 0, img, i0, i1, threads)
        else:
            chunks = [(t,) for t in range(self.threads)]

            def work(t: int) -> int:
                segs = self.segments
                lo, hi = len(segs) * t // self.threads, len(segs) * (t + 1) // self.threads
                for img, i0, i1 in segs[lo:hi]:
                    self._segment(xp, wm, flat, gemm, t, img, i0, i1, 1)
                return 0

            from .threads import pool
            pool(self.threads).run(work, chunks)
        if bias is not None:
            out += bias.reshape(1, self.o, 1, 1)
        return out

    def _segment(self, xp: np.ndarray, wm: np.ndarray | Prepacked, flat: np.ndarray, gemm: Gemm, t: int,
                 img: int, i0: int, i1: int, threads: int) -> None:
        """Output rows [i0, i1) of image img: expand their patches, multiply into place."""
        (kh, kw), (sh, sw), (dh, dw) = self.kernel, self.strides, self.dilations
        c = xp.shape[1]
        rows = i1 - i0
        s_c, s_h, s_w = xp.strides[1:]
        src = xp[img, :, i0 * sh:, :]
        view = np.lib.stride_tricks.as_strided(
            src, (c, kh, kw, rows, self.wo), (s_c, s_h * dh, s_w * dw, s_h * sh, s_w * sw),
            writeable=False)
        cols = self.cols[t][:self.k * rows * self.wo].reshape(self.k, rows * self.wo)
        np.copyto(cols.reshape(c, kh, kw, rows, self.wo), view)     # a view: cols is contiguous
        gemm.matmul(wm, cols, flat[img][:, i0 * self.wo:i1 * self.wo], threads)
