"""Neural-network ops: convolution (NCHW), softmax and normalizations (pooling: pooling.py).

The convolution reference is vectorized NumPy, never Python loops over pixels: a convolution
copies its patches once into a matrix (im2col through a strided view) and makes one BLAS matmul;
depthwise convolutions loop over the kH * kW kernel taps only, each a whole-tensor ufunc on a
strided view. Softmax, log_softmax, layer_norm and
batch_norm also carry a decomposition into reductions and elementwise ops, which backends that
lack them use (and which fusing backends turn into a few kernels); their references perform the
same steps in the same order, so the two agree to rounding.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import OpTypeError, Trap
from ..types import Dim, TensorType
from . import adjoints_nn as adj
from .opdef import AttrKind, AttrSpec, Family, OpDef
from .shapes import broadcast_shapes, is_float, normalize_axis, require_dtype, same_dtype

# ---- shared window arithmetic ------------------------------------------------------------------


def check_conv_channels(op: str, types, g: int):
    """A convolution's groups, channels and bias against each other (conv2d, conv3d); its
    output channels."""
    x, w = types[0], types[1]
    if g < 1:
        raise OpTypeError(f"{op} groups must be >= 1, got {g}")
    c, o, cg = x.shape[1], w.shape[0], w.shape[1]
    if isinstance(c, int) and isinstance(cg, int) and c != cg * g:
        raise OpTypeError(f"{op} input has {c} channels, but the weights take {cg} per group "
                          f"x {g} groups = {cg * g}")
    if isinstance(o, int) and o % g:
        raise OpTypeError(f"{op} output channels {o} do not divide into {g} groups")
    if len(types) == 3:
        b = types[2]
        if b.rank != 1 or (isinstance(b.shape[0], int) and isinstance(o, int) and b.shape[0] != o):
            raise OpTypeError(f"{op} bias must be [{o}] (one per output channel), got {b}")
    return o


def _check_window_attrs(op: str, attrs, names: tuple[str, ...]) -> None:
    for name in names:
        want = 4 if name == "pads" else 2
        v = attrs[name]
        if len(v) != want:
            raise OpTypeError(f"{op} {name} must have {want} entries, got {list(v)}")
        lowest = 0 if name == "pads" else 1
        if any(x < lowest for x in v):
            raise OpTypeError(f"{op} {name} must be >= {lowest}, got {list(v)}")


def window_out(size: Dim, kernel: Dim, stride: int, pad_sum: int, dilation: int, op: str,
               what: str) -> Dim:
    """Output length of a sliding window along one spatial axis (floor mode, as ONNX)."""
    if not (isinstance(size, int) and isinstance(kernel, int)):
        return None
    span = dilation * (kernel - 1) + 1
    if size + pad_sum < span:
        raise OpTypeError(f"{op}: the {what} window ({span}) is larger than the padded input "
                          f"({size + pad_sum})")
    return (size + pad_sum - span) // stride + 1


def _pad_hw(x: np.ndarray, pads, fill) -> np.ndarray:
    top, left, bottom, right = pads
    return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)


def _check_spatial(op: str, x: np.ndarray, span_h: int, span_w: int, pads) -> None:
    h, w = x.shape[2] + pads[0] + pads[2], x.shape[3] + pads[1] + pads[3]
    if h < span_h or w < span_w:
        raise Trap(f"{op}: the window ({span_h}x{span_w}) is larger than the padded input "
                   f"({h}x{w})")


# ---- conv2d ------------------------------------------------------------------------------------

def conv2d_rule(types: list[TensorType], attrs) -> list[TensorType]:
    x, w = types[0], types[1]
    dt = same_dtype("conv2d", types)
    require_dtype("conv2d", x, is_float, "float")
    if x.rank != 4 or w.rank != 4:
        raise OpTypeError(f"conv2d needs an NCHW input and OIHW weights (rank 4), got {x} and {w}")
    _check_window_attrs("conv2d", attrs, ("strides", "pads", "dilations"))
    o = check_conv_channels("conv2d", types, attrs["groups"])
    s, p, d = attrs["strides"], attrs["pads"], attrs["dilations"]
    ho = window_out(x.shape[2], w.shape[2], s[0], p[0] + p[2], d[0], "conv2d", "kernel")
    wo = window_out(x.shape[3], w.shape[3], s[1], p[1] + p[3], d[1], "conv2d", "kernel")
    return [TensorType(dt, (x.shape[0], o, ho, wo))]


def _im2col(xp: np.ndarray, groups: int, kernel: tuple[int, int], strides, dilations,
            out_hw: tuple[int, int]) -> np.ndarray:
    """[groups, C/groups * kH * kW, N * Ho * Wo] patch matrix of the padded NCHW xp (one copy).

    The rows run over (c, p, q) in the order of OIHW weights, so the weights reshape to
    [groups, O/groups, C/groups * kH * kW] without a copy and one batched matmul (sgemm/dgemm for
    f32/f64) does the whole convolution. The columns run over (n, i, j): for N = 1 the product
    is already NCHW.
    """
    n, c = xp.shape[:2]
    kh, kw = kernel
    ho, wo = out_hw
    if n == 1 and kh == kw == 1 and tuple(strides) == (1, 1) and xp.flags.c_contiguous:
        return xp.reshape(groups, c // groups, ho * wo)    # a 1x1 convolution reads x as is
    sn, sc, sh, sw = xp.strides
    view = np.lib.stride_tricks.as_strided(
        xp, (c, kh, kw, n, ho, wo),
        (sc, sh * dilations[0], sw * dilations[1], sn, sh * strides[0], sw * strides[1]),
        writeable=False)
    cols = np.empty((c, kh, kw, n, ho, wo), xp.dtype)
    np.copyto(cols, view)
    return cols.reshape(groups, (c // groups) * kh * kw, n * ho * wo)


def _depthwise(xp: np.ndarray, w: np.ndarray, groups: int, strides, dilations,
               out_hw: tuple[int, int]) -> np.ndarray:
    """Convolution with one input channel per group: a sum of kH * kW scaled shifted views.

    A patch matrix would hold kH * kW rows per group and feed a matmul of [O/groups, kH * kW]
    by [kH * kW, N * Ho * Wo] per group, which is all loop overhead; multiplying whole shifted
    views keeps every step one vectorized pass over the output.
    """
    o, _, kh, kw = w.shape
    ho, wo = out_hw
    # output channel o reads input channel o // (O/groups)
    src = xp if o == groups else np.repeat(xp, o // groups, axis=1)
    out = np.zeros((xp.shape[0], o, ho, wo), xp.dtype)
    term = np.empty_like(out)
    for p in range(kh):
        for q in range(kw):
            top, left = p * dilations[0], q * dilations[1]
            shifted = src[:, :, top:top + strides[0] * (ho - 1) + 1:strides[0],
                          left:left + strides[1] * (wo - 1) + 1:strides[1]]
            np.multiply(shifted, w[:, 0, p, q].reshape(1, o, 1, 1), out=term)
            out += term
    return out


def conv2d_ref(attrs, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    g = attrs["groups"]
    n, c = x.shape[:2]
    o, cg, kh, kw = w.shape
    if c != cg * g:
        raise Trap(f"conv2d input has {c} channels, but the weights take {cg} per group x {g} "
                   f"groups = {cg * g}")
    if bias is not None and bias.shape != (o,):
        raise Trap(f"conv2d bias has shape {list(bias.shape)}, not [{o}]")
    d, p, s = attrs["dilations"], attrs["pads"], attrs["strides"]
    _check_spatial("conv2d", x, d[0] * (kh - 1) + 1, d[1] * (kw - 1) + 1, p)
    if x.dtype == np.float16:
        # f16 products are summed in f32 and rounded once (as NumPy's f16 matmul and the
        # einsum this replaced do); f32 also reaches sgemm, which f16 has no BLAS kernel for
        x, w, bias = (None if a is None else a.astype(np.float32) for a in (x, w, bias))
        return conv2d_ref(attrs, x, w, bias).astype(np.float16)
    xp = _pad_hw(x, p, 0) if any(p) else x
    ho = (xp.shape[2] - d[0] * (kh - 1) - 1) // s[0] + 1
    wo = (xp.shape[3] - d[1] * (kw - 1) - 1) // s[1] + 1
    if cg == 1 and g > 1:
        out = _depthwise(xp, w, g, s, d, (ho, wo))
    else:
        cols = _im2col(xp, g, (kh, kw), s, d, (ho, wo))              # [g, K, N*Ho*Wo]
        wg = np.ascontiguousarray(w).reshape(g, o // g, cg * kh * kw)  # [g, O/g, K]
        out = np.matmul(wg, cols).reshape(o, n, ho, wo).transpose(1, 0, 2, 3)
        if n > 1:
            out = np.ascontiguousarray(out)
    if bias is not None:
        out += bias.reshape(1, o, 1, 1)
    return out.astype(x.dtype, copy=False)


# ---- softmax and log_softmax -------------------------------------------------------------------

def float_same_rule(op: str):
    def rule(types: list[TensorType], attrs) -> list[TensorType]:
        (x,) = types
        require_dtype(op, x, is_float, "float")
        if x.rank == 0:
            raise OpTypeError(f"{op} needs an operand of rank 1 or more")
        normalize_axis(op, attrs["axis"], x.rank)
        return [x]
    return rule


def _softmax_parts(op: str, attrs, x: np.ndarray):
    axis = attrs["axis"] % x.ndim
    if x.shape[axis] == 0:
        raise Trap(f"{op} over an empty axis")   # as its decomposition's reduce_max traps
    # ufunc reductions and in-place steps: the same arithmetic as np.max / np.sum, without
    # their Python-level dispatch, which dominates on the small rows of attention scores
    m = np.maximum.reduce(x, axis=axis, keepdims=True)
    d = x - m                                   # the largest exponent is 0: no overflow
    e = np.exp(d)
    return axis, d, e, np.add.reduce(e, axis=axis, keepdims=True, dtype=x.dtype)


def softmax_ref(attrs, x: np.ndarray) -> np.ndarray:
    _, _, e, s = _softmax_parts("softmax", attrs, x)
    e /= s
    return e


def log_softmax_ref(attrs, x: np.ndarray) -> np.ndarray:
    _, d, _, s = _softmax_parts("log_softmax", attrs, x)
    return d - np.log(s)


def _axis_list(attrs, t: TensorType) -> list[int]:
    return [normalize_axis("softmax", attrs["axis"], t.rank)]


def softmax_decompose(emit, operands, attrs, types):
    axes = _axis_list(attrs, types[0])
    (x,) = operands
    m = emit("reduce_max", [x], {"axes": axes, "keepdims": True})
    e = emit("exp", [emit("sub", [x, m], {})], {})
    s = emit("reduce_sum", [e], {"axes": axes, "keepdims": True})
    return emit("div", [e, s], {})


def log_softmax_decompose(emit, operands, attrs, types):
    axes = _axis_list(attrs, types[0])
    (x,) = operands
    m = emit("reduce_max", [x], {"axes": axes, "keepdims": True})
    d = emit("sub", [x, m], {})
    s = emit("reduce_sum", [emit("exp", [d], {})], {"axes": axes, "keepdims": True})
    return emit("sub", [d, emit("log", [s], {})], {})


# ---- layer_norm --------------------------------------------------------------------------------

def layer_norm_rule(types: list[TensorType], attrs) -> list[TensorType]:
    x = types[0]
    same_dtype("layer_norm", types)
    require_dtype("layer_norm", x, is_float, "float")
    if x.rank == 0:
        raise OpTypeError("layer_norm needs an operand of rank 1 or more")
    axis = normalize_axis("layer_norm", attrs["axis"], x.rank)
    normalized = x.shape[axis:]
    for name, t in zip(("scale", "bias"), types[1:]):
        fits = t.rank <= len(normalized)
        if fits:
            try:
                got = broadcast_shapes([normalized, t.shape], "layer_norm")
                # the parameter may stretch over x, never x over the parameter
                fits = all(not (isinstance(a, int) and isinstance(b, int) and a != b)
                           for a, b in zip(normalized, got))
            except OpTypeError:
                fits = False
        if not fits:
            raise OpTypeError(f"layer_norm {name} {t} does not broadcast to the normalized dims "
                              f"{TensorType(x.dtype, normalized)}")
    return [x]


def _norm_axes(attrs, rank: int) -> tuple[int, ...]:
    return tuple(range(attrs["axis"] % rank, rank))


def layer_norm_ref(attrs, x: np.ndarray, scale: np.ndarray | None = None,
                   bias: np.ndarray | None = None) -> np.ndarray:
    axes = _norm_axes(attrs, x.ndim)
    count = math.prod(x.shape[a] for a in axes)
    # np.mean's own steps (a pairwise sum in x's dtype, then a division by the count), called
    # directly; the temporaries are updated in place
    mu = np.add.reduce(x, axis=axes, keepdims=True, dtype=x.dtype)
    mu /= count
    xc = x - mu
    sq = xc * xc
    var = np.add.reduce(sq, axis=axes, keepdims=True, dtype=x.dtype)
    var /= count
    var += x.dtype.type(attrs["epsilon"])
    r = (1 / np.sqrt(var)).astype(x.dtype)
    y = np.multiply(xc, r, out=xc)
    if scale is not None:
        y = y * scale
    if bias is not None:
        y = y + bias
    return y.astype(x.dtype, copy=False)


def layer_norm_decompose(emit, operands, attrs, types):
    x = operands[0]
    red = {"axes": list(_norm_axes(attrs, types[0].rank)), "keepdims": True}
    xc = emit("sub", [x, emit("reduce_mean", [x], red)], {})
    var = emit("reduce_mean", [emit("mul", [xc, xc], {})], red)
    r = emit("rsqrt", [emit("add", [var, float(attrs["epsilon"])], {})], {})
    y = emit("mul", [xc, r], {})
    if len(operands) > 1:
        y = emit("mul", [y, operands[1]], {})
    if len(operands) > 2:
        y = emit("add", [y, operands[2]], {})
    return y


# ---- batch_norm (inference) --------------------------------------------------------------------

def batch_norm_rule(types: list[TensorType], attrs) -> list[TensorType]:
    x = types[0]
    same_dtype("batch_norm", types)
    require_dtype("batch_norm", x, is_float, "float")
    if x.rank < 2:
        raise OpTypeError(f"batch_norm needs an input of rank 2 or more (N, C, ...), got {x}")
    c = x.shape[1]
    for name, t in zip(("scale", "bias", "mean", "var"), types[1:]):
        if t.rank != 1 or (isinstance(c, int) and isinstance(t.shape[0], int) and t.shape[0] != c):
            raise OpTypeError(f"batch_norm {name} must be [{c}] (one per channel), got {t}")
    return [x]


def batch_norm_ref(attrs, x, scale, bias, mean, var) -> np.ndarray:
    c = x.shape[1]
    for name, t in (("scale", scale), ("bias", bias), ("mean", mean), ("var", var)):
        if t.shape != (c,):
            raise Trap(f"batch_norm {name} has shape {list(t.shape)}, not [{c}]")
    per_channel = (c,) + (1,) * (x.ndim - 2)
    a = scale * (1 / np.sqrt(var + x.dtype.type(attrs["epsilon"]))).astype(x.dtype)
    y = (x - mean.reshape(per_channel)) * a.reshape(per_channel) + bias.reshape(per_channel)
    return y.astype(x.dtype, copy=False)


def batch_norm_decompose(emit, operands, attrs, types):
    x, scale, bias, mean, var = operands
    spatial = list(range(1, types[0].rank - 1))   # [C] -> [C, 1, ...] against [N, C, ...]

    def per_channel(v):
        return emit("expand_dims", [v], {"axes": spatial}) if spatial else v

    r = emit("rsqrt", [emit("add", [var, float(attrs["epsilon"])], {})], {})
    a = per_channel(emit("mul", [scale, r], {}))
    y = emit("mul", [emit("sub", [x, per_channel(mean)], {}), a], {})
    return emit("add", [y, per_channel(bias)], {})


# ---- the rows ----------------------------------------------------------------------------------

WINDOW_DOC = "pads are [top, left, bottom, right] (ONNX order: x1_begin, x2_begin, x1_end, x2_end)"
EPSILON = AttrSpec("epsilon", AttrKind.FLOAT, 1e-5, "added to the variance")

OPS = [
    OpDef("conv2d", 136, Family.NN, (2, 3), conv2d_rule, conv2d_ref,
          "r[n, o, i, j] := bias[o] + sum over c, p, q of x[n, g*C/groups + c, i*s0 + p*d0 - top, "
          "j*s1 + q*d1 - left] * w[o, c, p, q], where g = o's group; NCHW input, OIHW weights "
          "with C/groups input channels per group, zero padding, floor output size",
          attrs=(AttrSpec("strides", AttrKind.INTS, [1, 1], "step [height, width]"),
                 AttrSpec("pads", AttrKind.INTS, [0, 0, 0, 0], WINDOW_DOC),
                 AttrSpec("dilations", AttrKind.INTS, [1, 1], "kernel spacing [height, width]"),
                 AttrSpec("groups", AttrKind.INT, 1, "channel groups; C and O divide by it")),
          dtypes="float, all operands of one dtype", extra={"operands": ("x", "w", "bias")},
          vjp=adj.conv2d_vjp),
    OpDef("softmax", 139, Family.NN, (1, 1), float_same_rule("softmax"), softmax_ref,
          "r := e^(x - m) / sum(e^(x - m)) along axis, m = max along axis (no overflow); "
          "traps on an empty axis",
          attrs=(AttrSpec("axis", AttrKind.INT, -1, "the axis normalized"),),
          decompose=softmax_decompose, dtypes="float", extra={"operands": ("x",)},
          vjp=adj.softmax_vjp),
    OpDef("log_softmax", 140, Family.NN, (1, 1), float_same_rule("log_softmax"), log_softmax_ref,
          "r := (x - m) - log(sum(e^(x - m))) along axis, m = max along axis; traps on an empty "
          "axis",
          attrs=(AttrSpec("axis", AttrKind.INT, -1, "the axis normalized"),),
          decompose=log_softmax_decompose, dtypes="float", extra={"operands": ("x",)},
          vjp=adj.log_softmax_vjp),
    OpDef("layer_norm", 141, Family.NN, (1, 3), layer_norm_rule, layer_norm_ref,
          "r := (x - mean) / sqrt(var + epsilon) * scale + bias, mean and (biased) var over "
          "axes axis .. rank-1 (ONNX LayerNormalization); scale and bias broadcast against those "
          "dims",
          attrs=(AttrSpec("axis", AttrKind.INT, -1, "the first normalized axis"), EPSILON),
          decompose=layer_norm_decompose, dtypes="float, all operands of one dtype",
          extra={"operands": ("x", "scale", "bias")},
          vjp=adj.layer_norm_vjp),
    OpDef("batch_norm", 142, Family.NN, (5, 5), batch_norm_rule, batch_norm_ref,
          "r := (x - mean) * (scale / sqrt(var + epsilon)) + bias per channel (axis 1), with "
          "given statistics (inference); scale, bias, mean and var are [C]",
          attrs=(EPSILON,), decompose=batch_norm_decompose,
          dtypes="float, all operands of one dtype",
          extra={"operands": ("x", "scale", "bias", "mean", "var")},
          vjp=adj.batch_norm_vjp),
]
