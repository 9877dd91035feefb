"""Adjoint rules of the neural-network ops (see OpDef.vjp).

softmax, log_softmax, layer_norm and batch_norm are elementwise work around reductions, so their
adjoints are too (and fuse the same way). A convolution's adjoints are convolutions: the input's
is the transposed convolution (the cotangent spread by the stride, correlated with the flipped,
channel-swapped kernel), the kernel's is a convolution of the input with the cotangent as its
kernel (stride and dilation trade places). Pooling's adjoint is its own op, `pool_grad`.
"""
from __future__ import annotations

from ..errors import InvalidError
from .shapes import normalize_axis


def softmax_vjp(g, attrs, xs, y, ct):
    axis = normalize_axis("softmax", attrs["axis"], g.rank(y))
    inner = g.reduce_sum(g.mul(ct, y), axes=[axis], keepdims=True)
    return [g.mul(y, g.sub(ct, inner))]


def log_softmax_vjp(g, attrs, xs, y, ct):
    axis = normalize_axis("log_softmax", attrs["axis"], g.rank(y))
    total = g.reduce_sum(ct, axes=[axis], keepdims=True)
    return [g.sub(ct, g.mul(g.exp(y), total))]


def layer_norm_vjp(g, attrs, xs, y, ct):
    x = xs[0]
    rank = g.rank(x)
    axes = list(range(normalize_axis("layer_norm", attrs["axis"], rank), rank))
    red = {"axes": axes, "keepdims": True}
    xc = g.sub(x, g.reduce_mean(x, **red))
    rstd = g.rsqrt(g.add(g.reduce_mean(g.mul(xc, xc), **red), float(attrs["epsilon"])))
    xhat = g.mul(xc, rstd)
    out = [None] * len(xs)
    dxhat = ct
    if len(xs) > 1:
        dxhat = g.mul(ct, xs[1])
        out[1] = g.mul(ct, xhat)          # summed to scale's shape by the transform
    if len(xs) > 2:
        out[2] = ct
    # dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) over the normalized axes
    m1 = g.reduce_mean(dxhat, **red)
    m2 = g.reduce_mean(g.mul(dxhat, xhat), **red)
    out[0] = g.mul(rstd, g.sub(g.sub(dxhat, m1), g.mul(xhat, m2)))
    return out


def batch_norm_vjp(g, attrs, xs, y, ct):
    x, scale, bias, mean, var = xs
    rank = g.rank(x)

    def per_channel(v):      # [C] -> [C, 1, ...] against [N, C, ...]
        return g.reshape(v, shape=[-1] + [1] * (rank - 2)) if rank > 2 else v

    def channel_sum(v):      # [N, C, ...] -> [C]
        return g.reduce_sum(v, axes=[0] + list(range(2, rank)))

    inv = g.rsqrt(g.add(var, float(attrs["epsilon"])))
    k = g.mul(scale, inv)
    xc = g.sub(x, per_channel(mean))
    s_ct = channel_sum(ct)
    s_ctxc = channel_sum(g.mul(ct, xc))
    return [g.mul(ct, per_channel(k)),
            g.mul(s_ctxc, inv),
            s_ct,
            g.neg(g.mul(s_ct, k)),
            g.mul(g.mul(s_ctxc, g.mul(k, g.mul(inv, inv))), -0.5)]


# ---- convolution ---------------------------------------------------------------------------------

def _static(g, v, op: str, what: str) -> list[int]:
    shape = g.type(v).shape
    if not all(isinstance(d, int) for d in shape[1:]):
        raise InvalidError(f"the adjoint of {op} needs static channel and spatial sizes; "
                           f"{what} is {g.type(v)}")
    return list(shape)


def _spread(g, ct, s: list[int], out: list[int]):
    """The cotangent with s-1 zeros between neighbours on each spatial axis (the stride undone):
    [N, O, *out] -> [N, O, *((out - 1) * s + 1)]."""
    if all(v == 1 for v in s):
        return ct
    nd = len(s)
    o = g.type(ct).shape[1]
    v = g.expand_dims(ct, axes=[3 + 2 * i for i in range(nd)])      # [N, O, Ho, 1, Wo, 1]
    gaps = [0] * (2 + 2 * nd) + [0, 0] + [e for i in range(nd) for e in (0, s[i] - 1)]
    v = g.pad(v, pads=gaps)
    v = g.reshape(v, shape=[-1, o] + [out[i] * s[i] for i in range(nd)])
    return g.slice(v, starts=[0] * nd, ends=[(out[i] - 1) * s[i] + 1 for i in range(nd)],
                   axes=list(range(2, 2 + nd)))


def _conv_vjp(op: str, nd: int):
    """The adjoint rule of the `nd`-D convolution `op` (conv2d, conv3d): pads are the begins of
    each spatial axis, then the ends."""
    spatial = list(range(2, 2 + nd))

    def rule(g, attrs, xs, y, ct):
        conv = getattr(g, op)
        x, w = xs[0], xs[1]
        s, d, p, groups = attrs["strides"], attrs["dilations"], attrs["pads"], attrs["groups"]
        _, c, *size = _static(g, x, op, "the input")
        o, cg, *kernel = _static(g, w, op, "the kernel")
        out_size = _static(g, y, op, "the output")[2:]
        og = o // groups
        out = [None] * len(xs)
        if len(xs) > 2:
            out[2] = g.reduce_sum(ct, axes=[0, *spatial])
        # input: correlate the spread cotangent with the flipped kernel, its in/out channels
        # swapped within each group: w [O, C/g, *k] -> [C, O/g, *k]
        wf = g.slice(w, starts=[-1] * nd, ends=[-(2**31)] * nd, axes=spatial, steps=[-1] * nd)
        wf = g.reshape(wf, shape=[groups, og, cg, *kernel])
        wf = g.reshape(g.transpose(wf, perm=[0, 2, 1, *range(3, 3 + nd)]), shape=[c, og, *kernel])
        spread = _spread(g, ct, s, out_size)
        begins, ends, crop, past = [], [], [], []
        for i in range(nd):
            span = d[i] * (kernel[i] - 1)
            begin = span - p[i]
            # rows of the padded input after the last window's reach got no cotangent
            end = span - p[i + nd] + (size[i] + p[i] + p[i + nd] - ((out_size[i] - 1) * s[i] + 1 + span))
            begins.append(max(begin, 0))
            ends.append(max(end, 0))
            crop.append(max(-begin, 0))
            past.append(max(-end, 0))
        dx = conv(spread, wf, pads=begins + ends, dilations=list(d), groups=groups)
        if any(crop) or any(past):
            dx = g.slice(dx, starts=crop, ends=[size[i] + crop[i] for i in range(nd)], axes=spatial)
        out[0] = dx
        # kernel: dw[o, c, *t] = sum over n and the output positions of xpad[n, c, i*s + t*d] *
        # ct[n, o, i]: a convolution with the batch as channels (grouped), stride d, dilation s
        later = list(range(3, 3 + nd))
        xt = g.reshape(x, shape=[-1, groups, cg, *size])
        xt = g.reshape(g.transpose(xt, perm=[2, 1, 0, *later]), shape=[cg, -1, *size])
        ctt = g.reshape(ct, shape=[-1, groups, og, *out_size])
        ctt = g.reshape(g.transpose(ctt, perm=[1, 2, 0, *later]), shape=[o, -1, *out_size])
        dw = conv(xt, ctt, strides=list(d), pads=list(p), dilations=list(s), groups=groups)
        dw = g.slice(dw, starts=[0] * nd, ends=list(kernel), axes=spatial)
        out[1] = g.transpose(dw, perm=[1, 0, *spatial])
        return out
    return rule


conv2d_vjp = _conv_vjp("conv2d", 2)
conv3d_vjp = _conv_vjp("conv3d", 3)


def _pool_vjp(kind: str):
    def rule(g, attrs, xs, y, ct):
        extra = {"count_include_pad": attrs["count_include_pad"]} if kind == "avg" else {}
        keys = ("kernel", "strides", "pads", "dilations", "ceil_mode")
        return [g.pool_grad(xs[0], ct, kind=kind, **{k: attrs[k] for k in keys}, **extra)]
    return rule


maxpool_vjp = _pool_vjp("max")
avgpool_vjp = _pool_vjp("avg")


def pool_grad_vjp(g, attrs, xs, y, ct):
    """pool_grad is linear in its cotangent operand; for averages its transpose is the average
    pool itself (the same windows and divisors). The max form's transpose is not written yet."""
    if attrs["kind"] != "avg":
        raise InvalidError("the adjoint of pool_grad kind \"max\" (a second derivative through "
                           "max pooling) is not supported in this version")
    keys = ("kernel", "strides", "pads", "dilations", "ceil_mode", "count_include_pad")
    return [None, g.avgpool2d(ct, **{k: attrs[k] for k in keys})]
