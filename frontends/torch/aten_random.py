"""Random numbers from torch programs: dropout in training mode (aten.dropout,
aten.native_dropout), rand/randn and their _like forms, bernoulli.

They become dlvm's random ops (isa/ops/random.py), drawing from the VM's stream: the numbers are
not torch's (torch's generator is not dlvm's), their distribution is. A dropout mask is drawn
once per run, so a gradient of the program (grad, training) sees the mask the forward run used.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from frontends.base.values import Value, known
from isa.dtypes import BY_NAME
from isa.ops.random import RESULT_DTYPES

from .aten import Lowerer, _same_shape, lowers
from .errors import TorchImportError

F32 = BY_NAME["f32"]


def _like(lo: Lowerer) -> Value:
    """A value of the node's result shape, for a random op to take its shape from."""
    t = lo.out_type()
    if all(d is not None for d in t.shape):
        return lo.e.emit_shape_like(t.with_dtype(BY_NAME["bool"]))
    sizes = [lo.emit("reshape", [lo.size_value(d)], shape=[1]) for d in lo.node.meta["val"].shape]
    shape = sizes[0] if len(sizes) == 1 else lo.emit("concat", sizes, axis=0)
    return _same_shape(lo, lo.emit("fill", [shape, known(np.array(False))]))


def _dtype(lo: Lowerer):
    dt = lo.out_dtype()
    if dt not in RESULT_DTYPES:
        raise TorchImportError(f"random numbers of dtype {dt.name}: only float16, float32 and "
                               f"float64")
    return dt


@lowers("aten.rand.default", "aten.rand_like.default")
def _rand(lo: Lowerer, x: Any, *_: Any, **__: Any) -> Value:
    like = x if isinstance(x, Value) else _like(lo)
    return lo.emit("random_uniform", [like], dtype=_dtype(lo))


@lowers("aten.randn.default", "aten.randn_like.default")
def _randn(lo: Lowerer, x: Any, *_: Any, **__: Any) -> Value:
    like = x if isinstance(x, Value) else _like(lo)
    return lo.emit("random_normal", [like], dtype=_dtype(lo))


def keep_mask(lo: Lowerer, x: Value, p: Value) -> Value:
    """True with probability 1 - p per element of x."""
    wide = x.dtype if x.dtype in RESULT_DTYPES else F32
    u = lo.emit("random_uniform", [x], dtype=wide)
    return lo.emit("ge", [u, lo.tensor(p, wide)])


def dropout(lo: Lowerer, x: Value, p: float) -> tuple[Value, Value]:
    """torch's dropout in training mode: (x scaled by 1 / (1 - p) where kept, else 0; the mask).
    p = 1 drops everything (no division by zero); p = 0 keeps everything (the mask all true)."""
    if not x.dtype.is_float:
        raise TorchImportError(f"dropout of a {x.dtype.name} tensor")
    keep = keep_mask(lo, x, p)
    scale = 0.0 if p >= 1 else 1.0 / (1.0 - p)
    kept = lo.emit("mul", [x, lo.tensor(scale, x.dtype)])
    return lo.emit("select", [keep, kept, lo.tensor(0, x.dtype)]), keep


@lowers("aten.bernoulli.default", "aten.bernoulli.p")
def _bernoulli(lo: Lowerer, x: Value, p: Any = None, **_: Any) -> Value:
    """1 with probability p (the tensor's own values for bernoulli(x), else the scalar p)."""
    prob = x if p is None else lo.tensor(p, x.dtype if x.dtype.is_float else F32)
    wide = prob.dtype if prob.dtype in RESULT_DTYPES else F32
    u = lo.emit("random_uniform", [x], dtype=wide)
    return lo.cast(lo.emit("lt", [u, lo.cast(prob, wide)]), lo.out_dtype())
