"""Value ops: const (a literal of a declared type) and mov (copy a register)."""
from __future__ import annotations

import numpy as np

from ..errors import OpTypeError
from ..types import TensorType
from . import adjoints_movement as adj
from .opdef import NO_GRADIENT, AttrKind, AttrSpec, Family, OpDef, Syntax


def const_rule(types: list[TensorType], attrs) -> list[TensorType]:
    t: TensorType = attrs["type"]
    if any(d is None for d in t.shape):
        raise OpTypeError(f"const type {t} has an unknown dim; give every dim")
    value = attrs["value"]
    if value.ndim != 0 and tuple(value.shape) != t.shape:
        raise OpTypeError(f"const literal of shape {list(value.shape)} does not fit {t}")
    return [t]


def const_ref(attrs, bindings=None):
    """The value of a const: a 0-d literal fills the shape (named dims resolved by the VM)."""
    t: TensorType = attrs["type"]
    value = attrs["value"]
    if value.ndim == 0 and t.rank:
        shape = tuple(bindings[d] if isinstance(d, str) else d for d in t.shape)
        return np.full(shape, value, dtype=t.dtype.np)
    return value.astype(t.dtype.np, copy=False)


OPS = [
    OpDef("const", 96, Family.MISC, (0, 0), const_rule, const_ref,
          "r := VALUE of TYPE; a scalar literal fills the shape, a nested list gives every element",
          attrs=(AttrSpec("value", AttrKind.TENSOR, doc="the literal"),
                 AttrSpec("type", AttrKind.TYPE, doc="the result type")),
          syntax=Syntax.CONST, dtypes="any",
          vjp=NO_GRADIENT,
          strings=True),
    OpDef("mov", 97, Family.MISC, (1, 1), lambda types, attrs: [types[0]],
          lambda attrs, a: a, "r := a", dtypes="any",
          vjp=adj.mov_vjp,
          strings=True),
]
