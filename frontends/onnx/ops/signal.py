"""DFT and STFT on the `dft` row; GridSample, Col2Im and RoiAlign on their rows.

STFT frames the signal with one `gather` of an index matrix known at import (frame f, tap k
reads sample f * step + k), multiplies by the window and transforms each frame with `dft`.
"""
from __future__ import annotations

import numpy as np

from ..registry import NodeCtx, onnx_op
from ..values import Value, known
from .common import cast


def _one_int(ctx: NodeCtx, i: int, what: str) -> int | None:
    vals = ctx.const_ints(i, what)
    if vals is None:
        return None
    if len(vals) != 1:
        raise ctx.fail(f"{what} must be a single integer")
    return vals[0]


@onnx_op("DFT", since=17)
def dft(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    length = _one_int(ctx, 1, "dft_length") or 0
    if ctx.version >= 20:
        axis = _one_int(ctx, 2, "axis")
        axis = -2 if axis is None else axis
    else:
        axis = int(ctx.attr("axis", 1))
    return [ctx.e.emit("dft", [x], ctx.node.output[0], axis=axis, length=length,
                       inverse=bool(ctx.attr("inverse", 0)),
                       onesided=bool(ctx.attr("onesided", 0)))]


@onnx_op("STFT", since=17)
def stft(ctx: NodeCtx) -> list[Value]:
    e, x = ctx.e, ctx.req(0)
    step = _one_int(ctx, 1, "frame_step")
    window = ctx.input(2)
    frame_len = _one_int(ctx, 3, "frame_length")
    if frame_len is None:
        if window is None or not isinstance(window.shape[0], int):
            raise ctx.fail("STFT needs frame_length or a window of static length")
        frame_len = window.shape[0]
    n = x.shape[1] if x.rank == 3 else None
    if not isinstance(n, int) or step is None or step <= 0 or frame_len > n:
        raise ctx.fail("STFT needs a (batch, length, 1 or 2) signal of static length, a positive "
                       "frame_step and frame_length <= length")
    frames = 1 + (n - frame_len) // step
    idx = np.arange(frames)[:, None] * step + np.arange(frame_len)[None, :]
    framed = e.emit("gather", [x, known(idx.astype(np.int64))], "frames", axis=1)
    if window is not None:
        w = e.emit("reshape", [cast(e, window, x.dtype)], "window", shape=[frame_len, 1])
        framed = e.emit("mul", [framed, w], "frames")
    return [e.emit("dft", [framed], ctx.node.output[0], axis=2,
                   onesided=bool(ctx.attr("onesided", 1)))]


@onnx_op("GridSample", since=16)     # 20 renamed the modes and added N-d
def grid_sample(ctx: NodeCtx) -> list[Value]:
    mode = str(ctx.attr("mode", "linear"))
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)   # opset 16 names
    padding = str(ctx.attr("padding_mode", "zeros"))
    if mode not in ("linear", "nearest", "cubic") or padding not in ("zeros", "border",
                                                                     "reflection"):
        raise ctx.fail(f"mode {mode} / padding_mode {padding} is not supported")
    return [ctx.e.emit("grid_sample", [ctx.req(0), ctx.req(1)], ctx.node.output[0], mode=mode,
                       padding_mode=padding, align_corners=bool(ctx.attr("align_corners", 0)))]


@onnx_op("Col2Im", since=18)
def col2im(ctx: NodeCtx) -> list[Value]:
    img = ctx.const_ints(1, "image_shape")
    blk = ctx.const_ints(2, "block_shape")
    return [ctx.e.emit("col2im", [ctx.req(0)], ctx.node.output[0], image_shape=img,
                       block_shape=blk, strides=list(ctx.attr("strides", [])),
                       pads=list(ctx.attr("pads", [])), dilations=list(ctx.attr("dilations", [])))]


@onnx_op("RoiAlign", since=10)
def roi_align(ctx: NodeCtx) -> list[Value]:
    # RoiAlign-10 had no such attribute and behaved as output_half_pixel
    ctm = str(ctx.attr("coordinate_transformation_mode",
                       "half_pixel" if ctx.version >= 16 else "output_half_pixel"))
    if ctm not in ("half_pixel", "output_half_pixel"):
        raise ctx.fail(f"coordinate_transformation_mode {ctm} is not supported")
    x = ctx.req(0)
    return [ctx.e.emit("roi_align", [x, cast(ctx.e, ctx.req(1), x.dtype), ctx.req(2)],
                       ctx.node.output[0], output_height=int(ctx.attr("output_height", 1)),
                       output_width=int(ctx.attr("output_width", 1)),
                       sampling_ratio=int(ctx.attr("sampling_ratio", 0)),
                       spatial_scale=float(ctx.attr("spatial_scale", 1.0)),
                       mode=str(ctx.attr("mode", "avg")), half_pixel=ctm == "half_pixel")]


@onnx_op("MelWeightMatrix", since=17)
def mel_weight_matrix(ctx: NodeCtx) -> list[Value]:
    # a constant of the model: every input sizes or places the triangles, so all are needed at
    # import (an audio front end gives them as initializers)
    from ..graph import onnx_dtype
    names = ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz")
    args = [np.asarray(ctx.const_input(i, what)) for i, what in enumerate(names)]
    if any(a.size != 1 for a in args):
        raise ctx.fail("MelWeightMatrix takes scalar inputs")
    to = onnx_dtype(int(ctx.attr("output_datatype", 1)), ctx.label)
    matrix = mel_triangles(*(a.reshape(()) for a in args))
    return [known(matrix.astype(to.np))]


def mel_triangles(num_mel_bins, dft_length, sample_rate, low_hz, high_hz) -> np.ndarray:
    """ONNX's mel filter bank: [dft_length // 2 + 1, num_mel_bins] triangles between
    num_mel_bins + 2 points equally spaced in mel (2595 log10(1 + f / 700)) from low_hz to
    high_hz, each point as the spectrogram bin floor((dft_length + 1) f / sample_rate).
    The arithmetic keeps the operators' dtypes and order: the bins are floors, and ONNX's
    expected values come from this sequence."""
    bins_n = int(dft_length) // 2 + 1
    points = np.arange(0, int(num_mel_bins) + 2)
    mel_low = 2595 * np.log1p(low_hz / 700) / np.log(10)
    mel_high = 2595 * np.log1p(high_hz / 700) / np.log(10)
    step = (mel_high - mel_low) / points.shape[0]
    hz = 700 * np.expm1((points * step + mel_low) / 2595 * np.log(10))
    edge = (((dft_length + 1) * hz) // sample_rate).astype(np.int64)
    lo, mid, hi = edge[:-2], edge[1:-1], edge[2:]          # one triangle per mel bin
    j = np.arange(bins_n)[:, None]
    rising = (j - lo) / np.maximum(mid - lo, 1)
    falling = (hi - j) / np.maximum(hi - mid, 1)
    out = np.where((j >= lo) & (j < mid), rising, 0.0)
    out = np.where((j > mid) & (j < hi), falling, out)
    return np.where(j == mid, 1.0, out)
