"""The transposed convolution both importers emit (ONNX ConvTranspose, torch's
`aten.convolution` with transposed=True), in dlvm ops.

A transposed convolution is a stride-1 convolution of the input with s-1 zeros inserted
between its elements, padded by (k_eff - 1 - pad) (plus output_padding at the end), with the
kernel flipped and its two channel axes swapped per group. When the stride is the kernel (and
nothing is padded), or the input is one pixel, the windows do not overlap and it is one
product and a reshuffle. Other strided ones (ungrouped, undilated) are one stride-1
convolution per output phase, each with only its own taps (_sub_pixel), or, where that saves
few multiplies or the layer has few output channels (_phases_pay), one convolution over all
phases sharing a window (_shared_window); then a reshuffle. The inserted zeros are never
multiplied.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from isa.types import TensorType

from .values import Emitter, Value, known, reshape_named


def conv_transpose_2d(e: Emitter, x: Value, w: Value, b: Value | None, *, strides: list[int],
                      dilations: list[int], pads: list[int], output_padding: list[int],
                      groups: int, hint: str = "t") -> Value:
    """x: [N, C, H, W] (C static; N, H and W may be named or unknown), w: [C, M/groups, kH, kW]
    (static), pads [top, left, bottom, right] -> [N, M, Ho, Wo]. Sizes known only at run time
    (an audio model's length) take the zero-inserted form, whose reshapes read the run-time
    shape; static ones the faster forms below."""
    n, c, h, wd = x.shape
    s0, s1 = strides
    g = groups
    if not (isinstance(h, int) and isinstance(wd, int)):
        return _zero_inserted(e, x, w, b, strides=strides, dilations=dilations, pads=pads,
                              output_padding=output_padding, groups=g, hint=hint)

    def batch_reshape(v: Value, dims: list[int]) -> Value:
        # a named batch is the one -1 of the target, and stays named in the result type
        if isinstance(n, int):
            return e.emit("reshape", [v], shape=[n, *dims])
        return e.emit("reshape", [v], shape=[-1, *dims],
                      result_type=TensorType(v.dtype, (n, *dims)))
    kh, kw = w.shape[2], w.shape[3]
    if (g == 1 and (kh, kw) == (s0, s1) and (s0, s1) != (1, 1) and list(dilations) == [1, 1]
            and not any(pads) and not any(output_padding)):
        return _pixel_shuffle(e, x, w, b, batch_reshape, hint)
    if (g == 1 and (h, wd) == (1, 1) and list(dilations) == [1, 1] and not any(output_padding)
            and pads[0] + pads[2] < kh and pads[1] + pads[3] < kw):
        # one input pixel (a generator's latent vector): nothing overlaps whatever the stride,
        # and the padded form would multiply kH*kW - 1 zeros per output; pads crop the kernel
        y = _pixel_shuffle(e, x, w, b, batch_reshape, hint)
        if not any(pads):
            return y
        return e.emit("slice", [y], starts=[pads[0], pads[1]],
                      ends=[kh - pads[2], kw - pads[3]], axes=[2, 3])
    if g == 1 and (s0 > 1 or s1 > 1) and list(dilations) == [1, 1]:
        return _sub_pixel(e, x, w, b, batch_reshape, strides, pads, output_padding, hint)
    if s0 > 1 or s1 > 1:
        t = batch_reshape(x, [c, h, 1, wd, 1])
        t = e.emit("pad", [t], pads=[0] * 6 + [0, 0, 0, s0 - 1, 0, s1 - 1])
        t = batch_reshape(t, [c, h * s0, wd * s1])
        x = e.emit("slice", [t], starts=[0, 0], ends=[(h - 1) * s0 + 1, (wd - 1) * s1 + 1],
                   axes=[2, 3])
    return _flipped_convolution(e, x, w, b, dilations=dilations, pads=pads,
                                output_padding=output_padding, groups=g, hint=hint)


def _zero_inserted(e: Emitter, x: Value, w: Value, b: Value | None, *, strides: list[int],
                   dilations: list[int], pads: list[int], output_padding: list[int],
                   groups: int, hint: str) -> Value:
    """The general form for sizes known only at run time: s - 1 zeros after every element of
    each strided axis (a unit axis after it, padded to s, merged back by a reshape to the
    run-time shape, the trailing zeros cut), then the flipped stride-1 convolution."""
    for a, s in ((2, strides[0]), (3, strides[1])):
        if s == 1:
            continue
        dims = list(x.shape)
        t = e.emit("expand_dims", [x], axes=[a + 1])
        grow = [0] * (2 * t.rank)
        grow[t.rank + a + 1] = s - 1
        t = e.emit("pad", [t], pads=grow)
        sizes = e.emit("shape_of", [x])
        parts = [e.emit("slice", [sizes], starts=[0], ends=[a], axes=[0]),
                 known(np.array([-1], np.int64)),
                 e.emit("slice", [sizes], starts=[a + 1], ends=[x.rank], axes=[0])]
        merged = dims[a] * s if isinstance(dims[a], int) else None
        t = e.emit("reshape_dyn", [t, e.emit("concat", parts, axis=0)],
                   result_type=TensorType(x.dtype, tuple(dims[:a] + [merged] + dims[a + 1:])))
        x = e.emit("slice", [t], starts=[0], ends=[-(s - 1)], axes=[a])
    return _flipped_convolution(e, x, w, b, dilations=dilations, pads=pads,
                                output_padding=output_padding, groups=groups, hint=hint)


def _flipped_convolution(e: Emitter, x: Value, w: Value, b: Value | None, *,
                         dilations: list[int], pads: list[int], output_padding: list[int],
                         groups: int, hint: str) -> Value:
    """The stride-1 convolution of a zero-inserted input with the kernel flipped and its two
    channel axes swapped per group, padded to the kernel's reach."""
    c = x.shape[1]
    g = groups
    c_out_g, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    wt = e.emit("reshape", [w], shape=[g, c // g, c_out_g, kh, kw])
    wt = e.emit("transpose", [wt], perm=[0, 2, 1, 3, 4])
    wt = e.emit("reshape", [wt], shape=[g * c_out_g, c // g, kh, kw])
    wt = e.emit("slice", [wt], starts=[-1, -1], ends=[-(kh + 1), -(kw + 1)], axes=[2, 3],
                steps=[-1, -1])
    full = []
    for i, k in enumerate((kh, kw)):
        k_eff = (k - 1) * dilations[i] + 1
        full.append((k_eff - 1 - pads[i], k_eff - 1 - pads[i + 2] + output_padding[i]))
    conv_pads = [full[0][0], full[1][0], full[0][1], full[1][1]]
    if min(conv_pads) < 0:      # pads wider than the kernel's reach crop: an explicit pad op
        x = e.emit("pad", [x], pads=[0, 0, conv_pads[0], conv_pads[1], 0, 0, conv_pads[2],
                                     conv_pads[3]])
        conv_pads = [0, 0, 0, 0]
    args = [x, wt] + ([b] if b is not None else [])
    return e.emit("conv2d", args, hint, strides=[1, 1], pads=conv_pads,
                  dilations=list(dilations), groups=g)


def _pixel_shuffle(e: Emitter, x: Value, w: Value, b: Value | None, batch_reshape,
                   hint: str) -> Value:
    """A transposed convolution whose stride is its kernel (UNet's 2x2, stride-2 upsampling):
    the windows do not overlap, so each input pixel's C values times w [C, M*kH*kW] are the
    kH x kW output pixels it covers. One product and a reshuffle, where the general form
    convolves an input with zeros between its pixels (kH*kW times the work)."""
    n, c, h, wd = x.shape
    m, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    xt = e.emit("transpose", [x], perm=[0, 2, 3, 1])                       # [N, H, W, C]
    wm = e.emit("reshape", [w], shape=[c, m * kh * kw])
    prod = e.emit("matmul", [xt, wm])                                      # [N, H, W, M*kH*kW]
    t = batch_reshape(prod, [h, wd, m, kh, kw])
    t = e.emit("transpose", [t], perm=[0, 3, 1, 4, 2, 5])                 # [N, M, H, kH, W, kW]
    y = batch_reshape(t, [m, h * kh, wd * kw])
    if b is not None:
        y = e.emit("add", [y, e.emit("reshape", [b], shape=[m, 1, 1])], hint)
    return y


@dataclass(frozen=True)
class _Phase:
    """Outputs o = rho + s*t (t < length) along one axis of a transposed convolution: each is
    sum over j < taps of x[t + shift - j] * w[r + s*j], a stride-1 correlation of x with the
    taps r, r + s, ... reversed, reading x from t + shift - (taps - 1)."""
    r: int
    taps: int
    shift: int
    length: int


def _axis_phases(k: int, s: int, pad: int, out: int) -> list[_Phase]:
    """The s output phases of one axis (o = q*s + r - pad, so r = (rho + pad) mod s and
    q = t + (rho + pad) // s). A phase of a kernel shorter than the stride may have no taps
    (0), and one past a short output no outputs."""
    phases = []
    for rho in range(s):
        r = (rho + pad) % s
        taps, length = max(0, -(-(k - r) // s)), max(0, -(-(out - rho) // s))
        phases.append(_Phase(r, taps, (rho + pad) // s, length))
    return phases


def _shared_window(e: Emitter, x: Value, w: Value, b: Value | None, batch_reshape,
               strides: list[int], pads: list[int], output_padding: list[int],
               hint: str) -> Value:
    """A strided transposed convolution as one convolution over all output phases. Along one axis,
    output o = q*s + r - pad_begin takes sum over j of x[q - j] * w[r + s*j]: for phase r a
    correlation of x with the taps r, r + s, ... reversed, K = ceil(k/s) of them (zeros past
    the kernel). The s0*s1 phases are the output channels (r0, r1, m) of one stride-1
    convolution over x padded by K-1 before (and after, as far as the last output needs); a
    reshuffle interleaves them and a slice drops the begin pads. Every phase computes the shared
    window (a row and a column more than its own outputs) with the longest phase's taps: more
    multiplies than _sub_pixel's, but one product of s0*s1 times the output channels, which a
    layer of few output channels needs to fill the register tiles (a 64 -> 3 layer ran 2x
    slower as four products of 3 rows)."""
    n, c, h, wd = x.shape
    m, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    s0, s1 = strides
    k = [-(-kh // s0), -(-kw // s1)]
    out = [(h - 1) * s0 - pads[0] - pads[2] + kh + output_padding[0],
           (wd - 1) * s1 - pads[1] - pads[3] + kw + output_padding[1]]
    # the last phase position any output needs, past the input's end
    after = [max(0, (out[0] - 1 + pads[0]) // s0 + 1 - h),
             max(0, (out[1] - 1 + pads[1]) // s1 + 1 - wd)]
    q = [h + after[0], wd + after[1]]
    # weights [C, M, kH, kW] -> [s0, s1, M, C, K0, K1]: tap r + s*(K-1-j) of phase r at j
    wp = e.emit("pad", [w], pads=[0, 0, 0, 0, 0, 0, k[0] * s0 - kh, k[1] * s1 - kw])
    wp = e.emit("reshape", [wp], shape=[c, m, k[0], s0, k[1], s1])
    wp = e.emit("slice", [wp], starts=[-1, -1], ends=[-(k[0] + 1), -(k[1] + 1)], axes=[2, 4],
                steps=[-1, -1])
    wp = e.emit("transpose", [wp], perm=[3, 5, 1, 0, 2, 4])
    wp = e.emit("reshape", [wp], shape=[s0 * s1 * m, c, k[0], k[1]])
    y = e.emit("conv2d", [x, wp], strides=[1, 1],
               pads=[k[0] - 1, k[1] - 1, after[0], after[1]], dilations=[1, 1], groups=1)
    t = batch_reshape(y, [s0, s1, m, q[0], q[1]])
    t = e.emit("transpose", [t], perm=[0, 3, 4, 1, 5, 2])                  # [N, M, Q0, s0, Q1, s1]
    t = batch_reshape(t, [m, q[0] * s0, q[1] * s1])
    y = e.emit("slice", [t], starts=[pads[0], pads[1]], ends=[pads[0] + out[0], pads[1] + out[1]],
               axes=[2, 3])
    if b is not None:
        return e.emit("add", [y, e.emit("reshape", [b], shape=[m, 1, 1])], hint)
    return e.emit("mov", [y], hint)


# Per-phase products pay where the shared window does 1.3x their multiplies and each still has rows
# enough to fill the register tiles; measured one layer at a time, batch 1 and 32 (bench/README.md
# "eighth session"): 256 -> 128 at 4x4 and 3x3 kernels 0.65-0.9x the shared window's time;
# 64 -> 3 at 16x16 2x, 32 -> 16 at 32x32 (6% fewer multiplies) 1.0-1.25x; 4x4 kernels at 8x8
# (a fifth fewer) 0.75-0.9x at batch 32 but 1.0-1.15x at batch 1, where four products and the
# stacking cost what they save.
PHASES_MIN_SAVING = 1.3
PHASES_MIN_CHANNELS = 16


def _phases_pay(axes: list[list[_Phase]], lengths: list[int], window: list[int], m: int) -> bool:
    """Whether per-phase products (_sub_pixel) beat one product over the shared window
    (_shared_window, `window` positions per axis), by the multiplies each does per output
    channel and input channel."""
    exact = sum(max(1, p0.taps) * max(1, p1.taps) for p0 in axes[0] for p1 in axes[1])
    exact *= lengths[0] * lengths[1]
    shared = 1
    for a, q in zip(axes, window):
        shared *= len(a) * max(p.taps for p in a) * q
    return m >= PHASES_MIN_CHANNELS and shared >= PHASES_MIN_SAVING * exact


def _sub_pixel(e: Emitter, x: Value, w: Value, b: Value | None, batch_reshape,
               strides: list[int], pads: list[int], output_padding: list[int],
               hint: str) -> Value:
    """A strided transposed convolution as one stride-1 convolution per output phase (rho0,
    rho1): phase rho of an axis reads only the taps r, r + s, ... of the kernel (_Phase), so
    no zero is multiplied, and each phase computes exactly its own outputs. The phases,
    stacked, are interleaved by one reshuffle. (The zero-inserted form multiplied s0*s1 times
    as many zeros as values; one convolution over all phases sharing a window computed a row
    and a column more per phase and padded every phase to the longest kernel: a 4x4, stride-2
    layer of a DCGAN generator did 25 outputs per 16 needed, a 3x3 one 4 taps per 2.25.)"""
    n, c, h, wd = x.shape
    m, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    s0, s1 = strides
    out = [(h - 1) * s0 - pads[0] - pads[2] + kh + output_padding[0],
           (wd - 1) * s1 - pads[1] - pads[3] + kw + output_padding[1]]
    axes = [_axis_phases(kh, s0, pads[0], out[0]), _axis_phases(kw, s1, pads[1], out[1])]
    # every phase computes the longest phase's length (ceil(out / s)); the extra end is cut
    lengths = [max(1, *(p.length for p in a)) for a in axes]
    # the shared window: each input position and those past the end the last output reads
    window = [max(size, (o - 1 + pad) // st + 1) for size, o, pad, st in
              ((h, out[0], pads[0], s0), (wd, out[1], pads[1], s1))]
    if not _phases_pay(axes, lengths, window, m):
        return _shared_window(e, x, w, b, batch_reshape, strides, pads, output_padding, hint)
    ys = []
    for p0 in axes[0]:
        for p1 in axes[1]:
            # x rows [first, last] feed this phase: pad where they fall outside, crop inside
            first = [p0.shift - (p0.taps - 1), p1.shift - (p1.taps - 1)]
            last = [lengths[0] - 1 + p0.shift, lengths[1] - 1 + p1.shift]
            lo, hi = [max(0, f) for f in first], [min(h, last[0] + 1), min(wd, last[1] + 1)]
            if not p0.taps or not p1.taps or hi[0] <= lo[0] or hi[1] <= lo[1]:
                # no taps (a kernel under the stride) or no input in reach (pads past the
                # kernel): zeros (the bias alone), not x times zero weights (an inf in x would
                # make NaN); a batch of unknown size takes the product's shape
                if n is not None:
                    zeros = e.emit_const_fill(0.0, TensorType(x.dtype, (n, m, *lengths)))
                    ys.append(e.emit("expand_dims", [zeros], axes=[2]))
                    continue
                wz = known(np.zeros((m, c, 1, 1), dtype=w.dtype.np))
                y = e.emit("conv2d", [x, wz], strides=[1, 1],
                           pads=[0, 0, max(0, lengths[0] - h), max(0, lengths[1] - wd)],
                           dilations=[1, 1], groups=1)
                if h > lengths[0] or wd > lengths[1]:
                    y = e.emit("slice", [y], starts=[0, 0], ends=lengths, axes=[2, 3])
                ys.append(e.emit("expand_dims", [y], axes=[2]))
                continue
            begin = [max(0, -f) for f in first]
            end = [max(0, last[0] - (h - 1)), max(0, last[1] - (wd - 1))]
            xs = x
            if lo != [0, 0] or hi != [h, wd]:
                xs = e.emit("slice", [x], starts=lo, ends=hi, axes=[2, 3])
            # taps r + s*j of [C, M, kH, kW], reversed, as [M, C, K0, K1]
            wp = e.emit("slice", [w], starts=[p0.r, p1.r], ends=[kh, kw], axes=[2, 3],
                        steps=[s0, s1])
            wp = e.emit("slice", [wp], starts=[-1, -1], ends=[-(p0.taps + 1), -(p1.taps + 1)],
                        axes=[2, 3], steps=[-1, -1])
            wp = e.emit("transpose", [wp], perm=[1, 0, 2, 3])
            y = e.emit("conv2d", [xs, wp], strides=[1, 1],
                       pads=[begin[0], begin[1], end[0], end[1]], dilations=[1, 1], groups=1)
            ys.append(e.emit("expand_dims", [y], axes=[2]))                # [N, M, 1, L0, L1]
    t = e.emit("concat", ys, axis=2)                                       # [N, M, s0*s1, L0, L1]
    t = batch_reshape(t, [m, s0, s1, lengths[0], lengths[1]])
    t = e.emit("transpose", [t], perm=[0, 1, 4, 2, 5, 3])                 # [N, M, L0, s0, L1, s1]
    y = batch_reshape(t, [m, lengths[0] * s0, lengths[1] * s1])
    if lengths[0] * s0 != out[0] or lengths[1] * s1 != out[1]:
        y = e.emit("slice", [y], starts=[0, 0], ends=out, axes=[2, 3])
    if b is not None:
        return e.emit("add", [y, e.emit("reshape", [b], shape=[m, 1, 1])], hint)
    return e.emit("mov", [y], hint)


def conv_transpose_3d(e: Emitter, x: Value, w: Value, b: Value | None, *, strides: list[int],
                      dilations: list[int], pads: list[int], output_padding: list[int],
                      groups: int, fail: Callable[[str], Exception], hint: str = "t") -> Value:
    """x: [N, C, D, H, W] (static but for the batch), w: [C, M/groups, kD, kH, kW] (static),
    pads [d, h, w begins, d, h, w ends] -> [N, M, Do, Ho, Wo]: the 2-D construction (zeros
    inserted between the input's elements, padding to the kernel's reach, the kernel flipped
    with its channel axes swapped per group) with a stride-1 3-D convolution (conv3d)."""
    from .conv3d import conv3d
    c, spatial = x.shape[1], list(x.shape[2:])
    if not (all(isinstance(d, int) for d in [c, *spatial]) and w.type.is_static):
        raise fail("a 3-D transposed convolution needs static channels, sizes and weights")
    g = groups
    c_out_g, ks = w.shape[1], list(w.shape[2:])
    if (g == 1 and ks == list(strides) and ks != [1, 1, 1] and list(dilations) == [1, 1, 1]
            and not any(pads) and not any(output_padding)):
        return _voxel_shuffle(e, x, w, b, hint)
    if g == 1 and any(s > 1 for s in strides) and list(dilations) == [1, 1, 1]:
        return _shared_window_3d(e, x, w, b, strides, pads, output_padding, hint, fail)
    for ax, s in enumerate(strides):
        if s == 1:
            continue
        # s - 1 zeros after every element of this axis: a new unit axis after it, padded to s,
        # merged back, and the trailing zeros cut
        a = 2 + ax
        t = e.emit("expand_dims", [x], axes=[a + 1])
        grow = [0] * (2 * t.rank)
        grow[t.rank + a + 1] = s - 1
        t = e.emit("pad", [t], pads=grow)
        t = reshape_named(e, t, list(t.shape[:a]) + [t.shape[a] * s] + list(t.shape[a + 2:]))
        x = e.emit("slice", [t], starts=[0], ends=[(spatial[ax] - 1) * s + 1], axes=[a])
    wt = e.emit("reshape", [w], shape=[g, c // g, c_out_g, *ks])
    wt = e.emit("transpose", [wt], perm=[0, 2, 1, 3, 4, 5])
    wt = e.emit("reshape", [wt], shape=[g * c_out_g, c // g, *ks])
    wt = e.emit("slice", [wt], starts=[-1, -1, -1], ends=[-(k + 1) for k in ks], axes=[2, 3, 4],
                steps=[-1, -1, -1])
    begins, ends = [], []
    for i, k in enumerate(ks):
        k_eff = (k - 1) * dilations[i] + 1
        begins.append(k_eff - 1 - pads[i])
        ends.append(k_eff - 1 - pads[i + 3] + output_padding[i])
    # negative pads (pads wider than the kernel's reach) crop
    x = e.emit("pad", [x], pads=[0, 0, *begins, 0, 0, *ends])
    return conv3d(e, x, wt, b, strides=[1, 1, 1], pads=[0] * 6, dilations=list(dilations),
                  groups=g, hint=hint, fail=fail)


def _shared_window_3d(e: Emitter, x: Value, w: Value, b: Value | None, strides: list[int],
                      pads: list[int], output_padding: list[int], hint: str,
                      fail: Callable[[str], Exception]) -> Value:
    """_shared_window in 3-D: the s0*s1*s2 output phases as the output channels of one stride-1
    conv3d with ceil(k/s) taps per axis, interleaved by one reshuffle and cropped by the pads.
    The zero-inserted form multiplied every output by all k0*k1*k2 taps, most of them against
    inserted zeros: a 3x3x3, stride-2 layer did 216 multiplies per input voxel and channel
    pair where this does 64 (and the exact per-phase form 27, in 8 smaller products)."""
    from .conv3d import conv3d
    n, c, *sp = x.shape
    m, ks = w.shape[1], list(w.shape[2:])
    k = [-(-kk // st) for kk, st in zip(ks, strides)]
    out = [(sp[i] - 1) * strides[i] - pads[i] - pads[i + 3] + ks[i] + output_padding[i]
           for i in range(3)]
    # the last phase position any output needs, past the input's end
    after = [max(0, (out[i] - 1 + pads[i]) // strides[i] + 1 - sp[i]) for i in range(3)]
    q = [sp[i] + after[i] for i in range(3)]
    # weights [C, M, k0, k1, k2] -> [s0, s1, s2, M, C, K0, K1, K2]: tap r + s*(K-1-j) at j
    wp = e.emit("pad", [w], pads=[0] * 5 + [0, 0] + [kk * st - kw for kk, st, kw in
                                                      zip(k, strides, ks)])
    wp = e.emit("reshape", [wp], shape=[c, m, k[0], strides[0], k[1], strides[1], k[2],
                                        strides[2]])
    wp = e.emit("slice", [wp], starts=[-1, -1, -1], ends=[-(kk + 1) for kk in k], axes=[2, 4, 6],
                steps=[-1, -1, -1])
    wp = e.emit("transpose", [wp], perm=[3, 5, 7, 1, 0, 2, 4, 6])
    phases = strides[0] * strides[1] * strides[2]
    wp = e.emit("reshape", [wp], shape=[phases * m, c, *k])
    y = conv3d(e, x, wp, None, strides=[1, 1, 1], pads=[kk - 1 for kk in k] + after,
               dilations=[1, 1, 1], groups=1, hint=hint, fail=fail)
    t = reshape_named(e, y, [n, *strides, m, *q])
    t = e.emit("transpose", [t], perm=[0, 4, 5, 1, 6, 2, 7, 3])     # [N, M, Q0, s0, Q1, s1, ...]
    t = reshape_named(e, t, [n, m, q[0] * strides[0], q[1] * strides[1], q[2] * strides[2]])
    y = e.emit("slice", [t], starts=pads[:3], ends=[pads[i] + out[i] for i in range(3)],
               axes=[2, 3, 4])
    if b is not None:
        return e.emit("add", [y, e.emit("reshape", [b], shape=[m, 1, 1, 1])], hint)
    return e.emit("mov", [y], hint)


def _voxel_shuffle(e: Emitter, x: Value, w: Value, b: Value | None, hint: str) -> Value:
    """_pixel_shuffle in 3-D (a 3-D UNet's 2x2x2, stride-2 upsampling): each input voxel's C
    values times w [C, M*kD*kH*kW] are the output voxels it covers; one product and a
    reshuffle instead of a convolution of an input with 7 zeros per value."""
    n, c, d, h, wd = x.shape
    m, kd, kh, kw = w.shape[1], w.shape[2], w.shape[3], w.shape[4]
    xt = e.emit("transpose", [x], perm=[0, 2, 3, 4, 1])                    # [N, D, H, W, C]
    wm = e.emit("reshape", [w], shape=[c, m * kd * kh * kw])
    prod = e.emit("matmul", [xt, wm])                                      # [N, D, H, W, M*k]
    t = reshape_named(e, prod, [n, d, h, wd, m, kd, kh, kw])
    t = e.emit("transpose", [t], perm=[0, 4, 1, 5, 2, 6, 3, 7])        # [N, M, D, kD, H, ...]
    y = reshape_named(e, t, [n, m, d * kd, h * kh, wd * kw])
    if b is not None:
        return e.emit("add", [y, e.emit("reshape", [b], shape=[m, 1, 1, 1])], hint)
    return y
