"""Core ATen math ops beyond the basic table in `aten.py`: inverse trigonometric and hyperbolic
functions (the formulas shared with the ONNX importer, `frontends.base.mathfn`), atan2, fmod,
trunc, isinf, rounding to decimals, reductions over every element, norms and distances, and
the evaluation forms of randomized activations."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from frontends.base import mathfn
from frontends.base.values import Value, known
from isa.dtypes import DType

from .aten import Lowerer, _axis, _compute_dtype, _var, lowers
from .errors import TorchImportError


def _float_in(lo: Lowerer, x: Value) -> tuple[Value, DType]:
    """x in the float dtype torch computes a math function in (f16 in f32), and the result's."""
    out = lo.out_dtype()
    work = DType.F32 if out == DType.F16 else out
    return lo.cast(x, work), out


def _math(name: str):
    def lower(lo: Lowerer, x: Value) -> Value:
        xf, out = _float_in(lo, x)
        return lo.cast(mathfn.BY_NAME[name](lo.e, xf), out)
    return lower


for _name in mathfn.BY_NAME:
    lowers(f"aten.{_name}.default")(_math(_name))


@lowers("aten.atan2.default")
def _atan2(lo: Lowerer, y: Value, x: Value) -> Value:
    out = lo.out_dtype()
    work = DType.F32 if out == DType.F16 else out
    return lo.cast(mathfn.atan2(lo.e, lo.cast(y, work), lo.cast(x, work)), out)


@lowers("aten.fmod.Tensor", "aten.fmod.Scalar")
def _fmod(lo: Lowerer, a: Any, b: Any) -> Value:
    """C's fmod (the sign of the dividend): dlvm's `mod` has the divisor's sign (Python's %,
    torch.remainder), so a non-zero remainder whose operands' signs differ moves by b."""
    dt = _compute_dtype(lo, a, b)
    av, bv = lo.tensor(a, dt), lo.tensor(b, dt)
    r = lo.emit("mod", [av, bv])
    zero = lo.tensor(0, dt)
    differ = lo.emit("ne", [lo.emit("lt", [av, zero]), lo.emit("lt", [bv, zero])])
    fix = lo.emit("and", [lo.emit("ne", [r, zero]), differ])
    return lo.cast(lo.emit("select", [fix, lo.emit("sub", [r, bv]), r]), lo.out_dtype())


@lowers("aten.trunc.default")
def _trunc(lo: Lowerer, x: Value) -> Value:
    if not x.dtype.is_float:
        return x
    neg = lo.emit("lt", [x, lo.tensor(0, x.dtype)])
    return lo.emit("select", [neg, lo.emit("ceil", [x]), lo.emit("floor", [x])])


@lowers("aten.isinf.default", "aten.isposinf.default", "aten.isneginf.default")
def _isinf(lo: Lowerer, x: Value) -> Value:
    if not x.dtype.is_float:
        return lo.emit("ne", [x, x])           # integers are never infinite
    name = lo.node.target.__name__
    if "isposinf" in name:
        return lo.emit("eq", [x, lo.tensor(math.inf, x.dtype)])
    if "isneginf" in name:
        return lo.emit("eq", [x, lo.tensor(-math.inf, x.dtype)])
    return lo.emit("eq", [lo.emit("abs", [x]), lo.tensor(math.inf, x.dtype)])


@lowers("aten.round.decimals")
def _round_decimals(lo: Lowerer, x: Value, decimals: int = 0) -> Value:
    """round(x * 10^d) / 10^d (for d < 0: round(x / 10^-d) * 10^-d), half to even, as torch."""
    if decimals == 0:
        return lo.emit("round", [x])
    scale = lo.tensor(10.0 ** abs(decimals), x.dtype)
    up, down = ("mul", "div") if decimals > 0 else ("div", "mul")
    return lo.emit(down, [lo.emit("round", [lo.emit(up, [x, scale])]), scale])


@lowers("aten.max.default", "aten.min.default")
def _extreme_all(lo: Lowerer, x: Value) -> Value:
    op = "reduce_max" if "max" in lo.node.target.__name__ else "reduce_min"
    return lo.emit(op, [x], axes=None, keepdims=False)


@lowers("aten.var_mean.correction", "aten.var_mean.dim")
def _var_mean(lo: Lowerer, x: Value, dims: Any = None, correction: Any = None,
              keepdim: bool = False, unbiased: Any = None) -> tuple:
    if isinstance(dims, int):
        dims = [dims]
    axes = list(range(x.rank)) if not dims else [_axis(d, x.rank) for d in dims]
    var = _var(lo, x, axes, correction, keepdim, unbiased)
    return var, lo.emit("reduce_mean", [x], axes=axes, keepdims=bool(keepdim))


def _vector_norm(lo: Lowerer, x: Value, ord_: float, axes: list[int] | None,
                 keepdim: bool) -> Value:
    a = lo.emit("abs", [x])
    if ord_ == 2:
        return lo.emit("sqrt", [lo.emit("reduce_sum", [lo.emit("mul", [x, x])], axes=axes,
                                        keepdims=keepdim)])
    if ord_ == 1:
        return lo.emit("reduce_sum", [a], axes=axes, keepdims=keepdim)
    if ord_ == math.inf:
        return lo.emit("reduce_max", [a], axes=axes, keepdims=keepdim)
    if ord_ == -math.inf:
        return lo.emit("reduce_min", [a], axes=axes, keepdims=keepdim)
    if ord_ == 0:
        nz = lo.cast(lo.emit("ne", [x, lo.tensor(0, x.dtype)]), x.dtype)
        return lo.emit("reduce_sum", [nz], axes=axes, keepdims=keepdim)
    p = lo.tensor(float(ord_), x.dtype)
    s = lo.emit("reduce_sum", [lo.emit("pow", [a, p])], axes=axes, keepdims=keepdim)
    return lo.emit("pow", [s, lo.tensor(1.0 / float(ord_), x.dtype)])


@lowers("aten.linalg_vector_norm.default")
def _linalg_vector_norm(lo: Lowerer, x: Value, ord: Any = 2, dim: Any = None,  # noqa: A002
                        keepdim: bool = False, dtype: Any = None) -> Value:
    xf, out = _float_in(lo, x)
    if isinstance(dim, int):
        dim = [dim]
    axes = None if not dim else [_axis(d, x.rank) for d in dim]
    return lo.cast(_vector_norm(lo, xf, float(ord), axes, bool(keepdim)), out)


# a p=2 distance matrix from products (|a|^2 + |b|^2 - 2 a.b, as torch's own large-input
# path) once the broadcast differences would exceed this many elements
CDIST_DIRECT_LIMIT = 1 << 22


def _pairwise(lo: Lowerer, x1: Value, x2: Value, p: float) -> Value:
    """dist[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p."""
    sizes = [x1.shape[-2], x2.shape[-2], x1.shape[-1]]
    direct = all(isinstance(n, int) for n in sizes) and math.prod(sizes) <= CDIST_DIRECT_LIMIT
    if p == 2 and not direct:
        sq1 = lo.emit("reduce_sum", [lo.emit("mul", [x1, x1])], axes=[x1.rank - 1], keepdims=True)
        sq2 = lo.emit("reduce_sum", [lo.emit("mul", [x2, x2])], axes=[x2.rank - 1], keepdims=True)
        perm = list(range(x2.rank - 2)) + [x2.rank - 1, x2.rank - 2]
        dot = lo.emit("matmul", [x1, lo.emit("transpose", [x2], perm=perm)])
        d2 = lo.emit("sub", [lo.emit("add", [sq1, lo.emit("transpose", [sq2], perm=perm)]),
                             lo.emit("mul", [dot, lo.tensor(2.0, x1.dtype)])])
        return lo.emit("sqrt", [lo.emit("max", [d2, lo.tensor(0.0, x1.dtype)])])
    a = lo.emit("expand_dims", [x1], axes=[x1.rank - 1])          # [..., P, 1, M]
    b = lo.emit("expand_dims", [x2], axes=[x2.rank - 2])          # [..., 1, R, M]
    diff = lo.emit("sub", [a, b])
    return _vector_norm(lo, diff, p, [x1.rank], False)


@lowers("aten._cdist_forward.default")
def _cdist(lo: Lowerer, x1: Value, x2: Value, p: float, compute_mode: Any = None) -> Value:
    return _pairwise(lo, x1, x2, float(p))


@lowers("aten._pdist_forward.default")
def _pdist(lo: Lowerer, x: Value, p: float = 2.0) -> Value:
    """The distances of the pairs i < j of x's rows, in row-major order."""
    n = x.shape[0]
    if not isinstance(n, int):
        raise TorchImportError("pdist of a symbolic number of rows is not supported")
    full = lo.emit("reshape", [_pairwise(lo, x, x, float(p))], shape=[n * n])
    i, j = np.triu_indices(n, 1)
    return lo.emit("gather", [full, known((i * n + j).astype(np.int64))], axis=0)


@lowers("aten.rrelu_with_noise_functional.default", "aten.rrelu_with_noise.default")
def _rrelu(lo: Lowerer, x: Value, noise: Value, lower: float = 1 / 8, upper: float = 1 / 3,
           training: bool = False, generator: Any = None) -> Any:
    """RReLU in evaluation: a leaky ReLU with the mean slope (training draws random slopes)."""
    if training:
        raise TorchImportError("RReLU in training mode (random slopes) is not supported")
    slope = lo.tensor((float(lower) + float(upper)) / 2, x.dtype)
    r = lo.emit("select", [lo.emit("ge", [x, lo.tensor(0, x.dtype)]), x,
                           lo.emit("mul", [x, slope])])
    return (r, noise) if "functional" in lo.node.target.__name__ else r


@lowers("aten._trilinear.default")
def _trilinear(lo: Lowerer, i1: Value, i2: Value, i3: Value, expand1: list, expand2: list,
               expand3: list, sumdim: list, unroll_dim: int = 1) -> Value:
    """sum over `sumdim` of i1 * i2 * i3, each first given size-1 dims at its `expand` positions
    (nn.Bilinear: x1 W x2 for each output feature)."""
    xs = []
    for x, ex in ((i1, expand1), (i2, expand2), (i3, expand3)):
        xs.append(lo.emit("expand_dims", [x], axes=sorted(ex)) if ex else x)
    prod = lo.emit("mul", [lo.emit("mul", [xs[0], xs[1]]), xs[2]])
    if not sumdim:
        return prod
    return lo.emit("reduce_sum", [prod], axes=sorted(sumdim), keepdims=False)


@lowers("aten.scaled_dot_product_attention.default")
def _sdpa(lo: Lowerer, q: Value, k: Value, v: Value, attn_mask: Value | None = None,
          dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
          enable_gqa: bool = False) -> Value:
    """softmax(q k^T * scale + mask) v (F.scaled_dot_product_attention in evaluation): a bool
    mask (or is_causal's lower triangle) keeps the scores where it is true; a row with nothing
    kept is zeros, as torch's math implementation gives."""
    if dropout_p:
        raise TorchImportError("scaled_dot_product_attention with dropout is not supported")
    if enable_gqa and isinstance(q.shape[-3], int) and isinstance(k.shape[-3], int) and \
            q.shape[-3] != k.shape[-3]:
        reps = q.shape[-3] // k.shape[-3]
        k, v = (_repeat_heads(lo, t, reps) for t in (k, v))
    e = q.shape[-1]
    if scale is None:
        if not isinstance(e, int):
            raise TorchImportError("attention over a symbolic embedding size is not supported")
        scale = 1.0 / math.sqrt(e)
    perm = list(range(k.rank - 2)) + [k.rank - 1, k.rank - 2]
    s = lo.emit("matmul", [q, lo.emit("transpose", [k], perm=perm)])
    s = lo.emit("mul", [s, lo.tensor(float(scale), s.dtype)])
    keep = None
    if is_causal:
        n, m = q.shape[-2], k.shape[-2]
        rows = lo.emit("iota", [], shape=[n, m], axis=0, dtype=DType.I64)
        cols = lo.emit("iota", [], shape=[n, m], axis=1, dtype=DType.I64)
        keep = lo.emit("le", [cols, rows])
    if attn_mask is not None:
        if attn_mask.dtype == DType.BOOL:
            keep = attn_mask if keep is None else lo.emit("and", [keep, attn_mask])
        else:
            s = lo.emit("add", [s, lo.cast(attn_mask, s.dtype)])
    if keep is not None:
        s = lo.emit("select", [keep, s, lo.tensor(-math.inf, s.dtype)])
    p = lo.emit("softmax", [s], axis=s.rank - 1)
    if keep is not None and not is_causal:      # causal rows always keep their first key
        any_kept = lo.emit("gt", [lo.emit("reduce_max", [lo.cast(keep, DType.I32)],
                                          axes=[keep.rank - 1], keepdims=True),
                                  known(np.array(0, np.int32))])
        p = lo.emit("select", [any_kept, p, lo.tensor(0, p.dtype)])
    return lo.emit("matmul", [p, v])


def _repeat_heads(lo: Lowerer, t: Value, reps: int) -> Value:
    """Each head reps times in a row (repeat_interleave on dim -3), for grouped-query
    attention."""
    ax = t.rank - 3
    x = lo.emit("expand_dims", [t], axes=[ax + 1])
    shape = list(t.shape[:ax + 1]) + [reps] + list(t.shape[ax + 1:])
    x = lo.emit("broadcast_to", [x], shape=shape)
    sizes = [d if isinstance(d, int) else -1 for d in t.shape]
    sizes[ax] = sizes[ax] * reps if sizes[ax] != -1 else -1
    return lo.emit("reshape", [x], shape=sizes)


# erfinv: M. Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), the
# single-precision polynomials in w = -log(1 - x^2) (central: w < 5, tail: sqrt(w)), then one
# Newton step on erf(y) = x, which brings f32 to within an ulp or two and f64 to ~1e-9
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                   0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


@lowers("aten.erfinv.default")
def _erfinv(lo: Lowerer, x0: Value) -> Value:
    x, out = _float_in(lo, x0)
    dt = x.dtype

    def c(v: float) -> Value:
        return lo.tensor(v, dt)

    def poly(coeffs: tuple, w: Value) -> Value:
        p = c(coeffs[0])
        for k in coeffs[1:]:
            p = lo.emit("add", [lo.emit("mul", [p, w]), c(k)])
        return p
    one = c(1.0)
    ax = lo.emit("abs", [x])
    inside = lo.emit("lt", [ax, one])
    safe = lo.emit("select", [inside, x, c(0.0)])      # the polynomials only see |x| < 1
    w = lo.emit("neg", [lo.emit("log", [lo.emit("mul", [lo.emit("sub", [one, safe]),
                                                        lo.emit("add", [one, safe])])])])
    central = poly(_ERFINV_CENTRAL, lo.emit("sub", [w, c(2.5)]))
    tail = poly(_ERFINV_TAIL, lo.emit("sub", [lo.emit("sqrt", [w]), c(3.0)]))
    y = lo.emit("mul", [lo.emit("select", [lo.emit("lt", [w, c(5.0)]), central, tail]), safe])
    # Newton: y -= (erf(y) - x) / (2 / sqrt(pi) * exp(-y^2))
    slope = lo.emit("mul", [c(2.0 / math.sqrt(math.pi)),
                            lo.emit("exp", [lo.emit("neg", [lo.emit("mul", [y, y])])])])
    y = lo.emit("sub", [y, lo.emit("div", [lo.emit("sub", [lo.emit("erf", [y]), safe]), slope])])
    edge = lo.emit("mul", [lo.emit("sign", [x]), c(math.inf)])      # erfinv(+-1) = +-inf
    r = lo.emit("select", [lo.emit("eq", [ax, one]), edge, y])
    r = lo.emit("select", [lo.emit("gt", [ax, one]), c(math.nan), r])
    return lo.cast(lo.emit("select", [lo.emit("isnan", [x]), x, r]), out)


@lowers("aten.fake_quantize_per_tensor_affine_cachemask.default")
def _fake_quantize(lo: Lowerer, x: Value, scale: float, zero_point: int, quant_min: int,
                   quant_max: int) -> tuple:
    """Quantization-aware training's fake quantization (torch's decompositions turn
    fake_quantize_per_tensor_affine into this form, which also returns where q was in range),
    as torch's CPU kernel computes it: q = zero_point + nearbyint(x * (1 / scale)) with the
    reciprocal in x's float type, then (clamp(q, quant_min, quant_max) - zero_point) * scale."""
    dt = x.dtype
    if not dt.is_float:
        raise TorchImportError(f"fake quantization of {dt} values is not supported")
    inv = known(np.array(np.float32(1.0) / np.float32(scale), dt.np))
    q = lo.emit("add", [lo.emit("round", [lo.emit("mul", [x, inv])]),
                        known(np.array(zero_point, dt.np))])
    lo_q, hi_q = known(np.array(quant_min, dt.np)), known(np.array(quant_max, dt.np))
    clamped = lo.emit("min", [lo.emit("max", [q, lo_q]), hi_q])
    steps = lo.emit("sub", [clamped, known(np.array(zero_point, dt.np))])
    # torch multiplies by the scale in f32 for f64 values too
    out = lo.cast(lo.emit("mul", [lo.cast(steps, DType.F32),
                                  known(np.array(np.float32(scale), np.float32))]), dt)
    mask = lo.emit("and", [lo.emit("ge", [q, lo_q]), lo.emit("le", [q, hi_q])])
    return (out, mask)
