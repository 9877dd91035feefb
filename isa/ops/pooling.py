"""Max and average pooling over 1, 2 or 3 spatial dims (N, C, D1..Dk), with strides, pads,
dilations and ceil mode (ONNX MaxPool / AveragePool).

The rows keep their 2-D names and codes (`maxpool2d`, `avgpool2d`); the kernel's length gives
the number of spatial dims. The references loop over the kernel taps only: each tap is one
strided view of the padded input covering every window, reduced in place with a ufunc, so a
pool makes prod(kernel) passes over the (small) output instead of walking a (2k+2)-D view
element by element.

Ceil mode adds windows that run past the end padding; those extra positions never win a max and
never count in an average's divisor, while the explicit pads count with count_include_pad.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..errors import OpTypeError, Trap
from ..types import Dim, TensorType
from . import adjoints_nn as adj
from .opdef import AttrKind, AttrSpec, Family, OpDef
from .shapes import is_float, is_numeric, require_dtype


def _geometry(op: str, attrs, nd: int) -> tuple[list[int], list[int], list[int], list[int]]:
    k, s, p, d = (list(attrs[n]) for n in ("kernel", "strides", "pads", "dilations"))
    for name, v, want, lowest in (("kernel", k, nd, 1), ("strides", s, nd, 1),
                                  ("pads", p, 2 * nd, 0), ("dilations", d, nd, 1)):
        if len(v) != want:
            raise OpTypeError(f"{op} {name} must have {want} entries for a {len(k)}-entry "
                              f"kernel, got {v}")
        if any(x < lowest for x in v):
            raise OpTypeError(f"{op} {name} must be >= {lowest}, got {v}")
    return k, s, p, d


def pool_out(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int, dilation: int,
             ceil: bool) -> int:
    """Windows along one dim; in ceil mode the last must start inside the input or the begin
    pad (ONNX, PyTorch)."""
    span = dilation * (kernel - 1) + 1
    room = size + pad_begin + pad_end - span
    if not ceil:
        return room // stride + 1
    out = -(-room // stride) + 1
    return out - 1 if (out - 1) * stride >= size + pad_begin else out


def pool_rule(op: str, ok, what: str):
    def rule(types: list[TensorType], attrs) -> list[TensorType]:
        (x,) = types
        require_dtype(op, x, ok, what)
        nd = len(attrs["kernel"])
        if x.rank != nd + 2 or not 1 <= nd <= 3:
            raise OpTypeError(f"{op} with a {nd}-entry kernel needs an (N, C, D1..D{nd}) input, "
                              f"got {x}")
        k, s, p, d = _geometry(op, attrs, nd)
        # every window must hold at least one input element (ONNX: pads smaller than kernel)
        if any(p[i] >= k[i % nd] for i in range(2 * nd)):
            raise OpTypeError(f"{op} pads {p} must be smaller than the kernel {k}")
        dims: list[Dim] = []
        for i in range(nd):
            size = x.shape[2 + i]
            if not isinstance(size, int):
                dims.append(None)
                continue
            span = d[i] * (k[i] - 1) + 1
            if size + p[i] + p[i + nd] < span:
                raise OpTypeError(f"{op}: the pooling window ({span}) is larger than the padded "
                                  f"input ({size + p[i] + p[i + nd]})")
            dims.append(pool_out(size, k[i], s[i], p[i], p[i + nd], d[i], attrs["ceil_mode"]))
        return [x.with_shape(x.shape[:2] + tuple(dims))]
    return rule


def _lowest(dtype: np.dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _padded(op: str, attrs, x: np.ndarray, fill) -> tuple[np.ndarray, list[int], list[int]]:
    """x padded with the explicit pads and the ceil-mode overhang; the output sizes; the
    overhang per dim."""
    nd = x.ndim - 2
    k, s, p, d = _geometry(op, attrs, nd)
    outs, extra = [], []
    for i in range(nd):
        span = d[i] * (k[i] - 1) + 1
        if x.shape[2 + i] + p[i] + p[i + nd] < span:
            raise Trap(f"{op}: the window ({span}) is larger than the padded input")
        o = pool_out(x.shape[2 + i], k[i], s[i], p[i], p[i + nd], d[i], attrs["ceil_mode"])
        outs.append(o)
        extra.append(max((o - 1) * s[i] + span - (x.shape[2 + i] + p[i] + p[i + nd]), 0))
    widths = [(0, 0), (0, 0)] + [(p[i], p[i + nd] + extra[i]) for i in range(nd)]
    xp = np.pad(x, widths, constant_values=fill) if any(map(any, widths)) else x
    return xp, outs, extra


def _taps(xp: np.ndarray, attrs, outs: list[int]):
    """For each kernel position, row-major: the strided view of xp that tap sees in every
    window."""
    k, s, d = attrs["kernel"], attrs["strides"], attrs["dilations"]
    for pos in itertools.product(*(range(n) for n in k)):
        idx = tuple(slice(q * d[i], q * d[i] + s[i] * (outs[i] - 1) + 1, s[i])
                    for i, q in enumerate(pos))
        yield xp[(slice(None), slice(None)) + idx]


def maxpool_ref(attrs, x: np.ndarray) -> np.ndarray:
    xp, outs, _ = _padded("maxpool2d", attrs, x, _lowest(x.dtype))
    taps = _taps(xp, attrs, outs)
    out = np.array(next(taps))
    for tap in taps:
        np.maximum(out, tap, out=out)      # propagates NaN, as max does
    return out


def _window_sums(xp: np.ndarray, attrs, outs: list[int]) -> np.ndarray:
    taps = _taps(xp, attrs, outs)
    out = np.array(next(taps))
    for tap in taps:
        out += tap
    return out


def avgpool_ref(attrs, x: np.ndarray) -> np.ndarray:
    xp, outs, extra = _padded("avgpool2d", attrs, x, 0)
    sums = _window_sums(xp, attrs, outs)
    if attrs["count_include_pad"] and not any(extra):
        return (sums / x.dtype.type(np.prod(attrs["kernel"]))).astype(x.dtype)
    return (sums / _window_counts(attrs, x, outs, extra)).astype(x.dtype)


def _window_counts(attrs, x: np.ndarray, outs: list[int], extra: list[int]) -> np.ndarray:
    """The divisor of each average window: the positions it covers that count (the input, plus
    the explicit pads with count_include_pad; never the ceil-mode overhang)."""
    nd, p = x.ndim - 2, attrs["pads"]
    if attrs["count_include_pad"]:
        core = [x.shape[2 + i] + p[i] + p[i + nd] for i in range(nd)]
        widths = [(0, 0), (0, 0)] + [(0, e) for e in extra]
    else:
        core = list(x.shape[2:])
        widths = [(0, 0), (0, 0)] + [(p[i], p[i + nd] + extra[i]) for i in range(nd)]
    ones = np.pad(np.ones([1, 1] + core, dtype=x.dtype), widths)
    return _window_sums(ones, attrs, outs)


WINDOW_DOC = ("pads are [begin of each spatial dim..., end of each...] (2-D: [top, left, "
              "bottom, right], ONNX order)")
POOL_ATTRS = (
    AttrSpec("kernel", AttrKind.INTS, doc="window size per spatial dim (its length: 1, 2 or 3)"),
    AttrSpec("strides", AttrKind.INTS, [1, 1], "step per spatial dim (ONNX default, not kernel); "
             "the default fits 2-D only"),
    AttrSpec("pads", AttrKind.INTS, [0, 0, 0, 0], WINDOW_DOC + "; each smaller than the kernel; "
             "the default fits 2-D only"),
    AttrSpec("dilations", AttrKind.INTS, [1, 1], "spacing of the window's taps per spatial dim; "
             "the default fits 2-D only"),
    AttrSpec("ceil_mode", AttrKind.BOOL, False, "round the output size up (the last window "
             "starts inside the input or begin pad)"),
)

OPS = [
    OpDef("maxpool2d", 137, Family.NN, (1, 1), pool_rule("maxpool2d", is_numeric, "numeric"),
          maxpool_ref,
          "r[n, c, i..] := max of the window of x at (i*s - begin pad) with taps d apart; "
          "(N, C, D1..Dk) with k = len(kernel) in 1..3; padding never wins (-inf, or the "
          "integer minimum); NaN propagates",
          attrs=POOL_ATTRS, dtypes="numeric", extra={"operands": ("x",)},
          vjp=adj.maxpool_vjp),
    OpDef("avgpool2d", 138, Family.NN, (1, 1), pool_rule("avgpool2d", is_float, "float"),
          avgpool_ref,
          "r[n, c, i..] := mean of the window of x at (i*s - begin pad) with taps d apart; "
          "(N, C, D1..Dk) with k = len(kernel) in 1..3; padded positions count in the divisor "
          "only with count_include_pad, the ceil-mode overhang never",
          attrs=POOL_ATTRS + (AttrSpec("count_include_pad", AttrKind.BOOL, False,
                                       "divide by the whole window, padding included"),),
          dtypes="float", extra={"operands": ("x",)},
          vjp=adj.avgpool_vjp),
]


# ---- the adjoint of pooling (what reverse-mode autodiff emits) ------------------------------

def pool_grad_rule(types: list[TensorType], attrs) -> list[TensorType]:
    x, ct = types
    if attrs["kind"] not in ("max", "avg"):
        raise OpTypeError(f'pool_grad kind must be "max" or "avg", got "{attrs["kind"]}"')
    if ct.dtype != x.dtype or ct.rank != x.rank:
        raise OpTypeError(f"pool_grad: the cotangent {ct} must have x's dtype and rank ({x})")
    pool_rule("pool_grad", is_float, "float")([x], attrs)
    return [x]


def pool_grad_ref(attrs, x: np.ndarray, ct: np.ndarray) -> np.ndarray:
    """The gradient of maxpool2d / avgpool2d at x for the output cotangent ct: a max window
    sends its cotangent to its first maximum (row-major, as PyTorch's index does), an average
    window spreads it over the positions its divisor counted."""
    nd = x.ndim - 2
    if attrs["kind"] == "max":
        xp, outs, _ = _padded("pool_grad", attrs, x, _lowest(x.dtype))
        best = maxpool_ref(attrs, x)
        if ct.shape != best.shape:
            raise Trap(f"pool_grad: cotangent shape {list(ct.shape)} is not the pool's output "
                       f"{list(best.shape)}")
        gp = np.zeros(xp.shape, dtype=x.dtype)
        taken = np.zeros(best.shape, dtype=bool)
        for tap, gtap in zip(_taps(xp, attrs, outs), _taps(gp, attrs, outs)):
            hit = (tap == best) & ~taken
            gtap += np.where(hit, ct, x.dtype.type(0))
            taken |= hit
    else:
        xp, outs, extra = _padded("pool_grad", attrs, x, 0)
        counts = _window_counts(attrs, x, outs, extra)
        if ct.shape[2:] != counts.shape[2:] or ct.shape[:2] != x.shape[:2]:
            raise Trap(f"pool_grad: cotangent shape {list(ct.shape)} is not the pool's output")
        share = ct / counts      # each window spreads its cotangent over what it averaged
        gp = np.zeros(xp.shape, dtype=x.dtype)
        for gtap in _taps(gp, attrs, outs):
            gtap += share
    p = attrs["pads"]
    core = (slice(None), slice(None)) + tuple(slice(p[i], p[i] + x.shape[2 + i])
                                              for i in range(nd))
    return np.ascontiguousarray(gp[core]).astype(x.dtype)


OPS.append(
    OpDef("pool_grad", 143, Family.NN, (2, 2), pool_grad_rule, pool_grad_ref,
          "r := the gradient of maxpool2d (kind \"max\": each window's cotangent goes to its "
          "first maximum) or avgpool2d (kind \"avg\": spread evenly over the positions its "
          "divisor counts) at x, for the pool's output cotangent ct; the pool's attributes",
          attrs=POOL_ATTRS + (AttrSpec("count_include_pad", AttrKind.BOOL, False,
                                       "as avgpool2d's"),
                              AttrSpec("kind", AttrKind.STR, "max", 'one of "max", "avg"')),
          dtypes="float", extra={"operands": ("x", "ct")},
          vjp=adj.pool_grad_vjp))
