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

def _static(g, v, what: str) -> list[int]:
    shape = g.type(v).shape
    if not all(isinstance(d, int) for d in shape[1:]):
        raise InvalidError(f"the adjoint of conv2d needs static channel and spatial sizes; "
                           f"{what} is {g.type(v)}")
    return list(shape)


def _spread(g, ct, s: list[int], ho: list[int]):
    """The cotangent with s-1 zeros between neighbours on each spatial axis (the stride undone):
    [N, O, Ho, Wo] -> [N, O, (Ho-1)*s0+1, (Wo-1)*s1+1]."""
    if s == [1, 1]:
        return ct
    o = g.type(ct).shape[1]
    v = g.expand_dims(ct, axes=[3, 5])                   # [N, O, Ho, 1, Wo, 1]
    v = g.pad(v, pads=[0, 0, 0, 0, 0, 0, 0, 0, 0, s[0] - 1, 0, s[1] - 1])
    v = g.reshape(v, shape=[-1, o, ho[0] * s[0], ho[1] * s[1]])
    return g.slice(v, starts=[0, 0], ends=[(ho[0] - 1) * s[0] + 1, (ho[1] - 1) * s[1] + 1],
                   axes=[2, 3])


def conv2d_vjp(g, attrs, xs, y, ct):
    x, w = xs[0], xs[1]
    s, d, p, groups = attrs["strides"], attrs["dilations"], attrs["pads"], attrs["groups"]
    _, c, h, wd = _static(g, x, "the input")
    o, cg, kh, kw = _static(g, w, "the kernel")
    _, _, ho, wo = _static(g, y, "the output")
    og = o // groups
    out = [None] * len(xs)
    if len(xs) > 2:
        out[2] = g.reduce_sum(ct, axes=[0, 2, 3])
    # input: correlate the spread cotangent with the flipped kernel, its in/out channels swapped
    # within each group: w [O, C/g, kh, kw] -> [C, O/g, kh, kw]
    wf = g.slice(w, starts=[-1, -1], ends=[-(2**31), -(2**31)], axes=[2, 3], steps=[-1, -1])
    wf = g.reshape(wf, shape=[groups, og, cg, kh, kw])
    wf = g.reshape(g.transpose(wf, perm=[0, 2, 1, 3, 4]), shape=[c, og, kh, kw])
    spread = _spread(g, ct, s, [ho, wo])
    pads, crop = [], []
    for i, (size, k, n) in enumerate(((h, kh, ho), (wd, kw, wo))):
        span = d[i] * (k - 1)
        begin = span - p[i]
        # rows of the padded input after the last window's reach got no cotangent
        end = span - p[i + 2] + (size + p[i] + p[i + 2] - ((n - 1) * s[i] + 1 + span))
        pads.append((begin, end))
        crop.append((max(-begin, 0), max(-end, 0)))
    dx = g.conv2d(spread, wf, pads=[max(pads[0][0], 0), max(pads[1][0], 0),
                                    max(pads[0][1], 0), max(pads[1][1], 0)],
                  dilations=list(d), groups=groups)
    if any(a or b for a, b in crop):
        dx = g.slice(dx, starts=[crop[0][0], crop[1][0]],
                     ends=[h + crop[0][0], wd + crop[1][0]], axes=[2, 3])
    out[0] = dx
    # kernel: dw[o, c, p, q] = sum over n, i, j of xpad[n, c, i*s + p*d] * ct[n, o, i, j]: a
    # convolution with the batch as channels (grouped), stride d and dilation s
    xt = g.reshape(x, shape=[-1, groups, cg, h, wd])
    xt = g.reshape(g.transpose(xt, perm=[2, 1, 0, 3, 4]), shape=[cg, -1, h, wd])
    ctt = g.reshape(ct, shape=[-1, groups, og, ho, wo])
    ctt = g.reshape(g.transpose(ctt, perm=[1, 2, 0, 3, 4]), shape=[o, -1, ho, wo])
    dw = g.conv2d(xt, ctt, strides=list(d), pads=list(p), dilations=list(s), groups=groups)
    dw = g.slice(dw, starts=[0, 0], ends=[kh, kw], axes=[2, 3])
    out[1] = g.transpose(dw, perm=[1, 0, 2, 3])
    return out


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
