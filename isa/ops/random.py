"""Random numbers: random_uniform and random_normal (ONNX RandomUniform(Like),
RandomNormal(Like); Bernoulli, Multinomial and Dropout in training mode are built on them).

These are the only ops whose result is not a function of their operands: each run draws new
values from a random stream. The VM carries the streams (dlvmrt/random_streams.py, semantics in
specs/semantics.md "Random numbers"): an instruction with a `seed` has a generator of its own,
seeded once when the VM prepares it, so a fresh VM repeats the same sequence call by call (as
onnxruntime does per session); one without a seed draws from the VM's stream, seeded by
`VM(seed=...)`, $DLVM_SEED or the operating system. The record says `random=True`, and every
stage that evaluates, merges or moves instructions reads that: the importers and constant
folding never fold them, CSE never merges two, the JIT never fuses them.

The operand only gives the result's shape (its values are not read), so a result may have the
shape of a run-time value (RandomUniformLike) as easily as a static one.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import DType
from ..errors import OpTypeError
from ..types import TensorType
from .opdef import NO_GRADIENT, AttrKind, AttrSpec, Family, OpDef

NO_SEED = -1          # the `seed` of an instruction that draws from the VM's stream
RESULT_DTYPES = (DType.F16, DType.F32, DType.F64)


def random_rule(types: list[TensorType], attrs) -> list[TensorType]:
    dt = attrs["dtype"]
    if dt not in RESULT_DTYPES:
        raise OpTypeError(f"random numbers are drawn as f16, f32 or f64, not {dt.name}")
    if attrs["seed"] < NO_SEED:
        raise OpTypeError(f"seed must be a non-negative integer (or -1: the VM's stream), "
                          f"got {attrs['seed']}")
    return [types[0].with_dtype(dt)]


def generator(attrs, rng: np.random.Generator | None) -> np.random.Generator:
    """The stream to draw from: the VM's (passed by the interpreter), else a fresh one (a
    stage that calls the reference on its own, e.g. a probe for traps)."""
    if rng is not None:
        return rng
    return np.random.default_rng(None if attrs["seed"] == NO_SEED else attrs["seed"])


def uniform_ref(attrs, like, rng: np.random.Generator | None = None) -> np.ndarray:
    low, high, dt = attrs["low"], attrs["high"], attrs["dtype"].np
    u = generator(attrs, rng).random(np.shape(like))
    r = (low + (high - low) * u).astype(dt)
    if high > low:      # rounding to a narrower dtype may reach `high`, which is excluded
        np.minimum(r, np.nextafter(dt.type(high), dt.type(low)), out=r)
    return r


def normal_ref(attrs, like, rng: np.random.Generator | None = None) -> np.ndarray:
    z = generator(attrs, rng).standard_normal(np.shape(like))
    return (attrs["mean"] + attrs["scale"] * z).astype(attrs["dtype"].np)


_SEED = AttrSpec("seed", AttrKind.INT, NO_SEED,
                 "a generator of the instruction's own, seeded once per VM; -1: the VM's stream")
_DTYPE = AttrSpec("dtype", AttrKind.DTYPE, DType.F32, "the result dtype (f16, f32 or f64)")

OPS = [
    OpDef("random_uniform", 225, Family.MISC, (1, 1), random_rule, uniform_ref,
          "r := numbers drawn uniformly from [low, high), of a's shape (a's values are not "
          "read); each run draws new ones (see specs/semantics.md, Random numbers)",
          attrs=(AttrSpec("low", AttrKind.FLOAT, 0.0, "the lower bound"),
                 AttrSpec("high", AttrKind.FLOAT, 1.0, "the upper bound (excluded)"),
                 _DTYPE, _SEED),
          dtypes="any (only its shape is read)", extra={"operands": ("a",)},
          vjp=NO_GRADIENT, random=True),
    OpDef("random_normal", 226, Family.MISC, (1, 1), random_rule, normal_ref,
          "r := numbers drawn from the normal distribution of `mean` and standard deviation "
          "`scale`, of a's shape (a's values are not read); each run draws new ones",
          attrs=(AttrSpec("mean", AttrKind.FLOAT, 0.0, "the mean"),
                 AttrSpec("scale", AttrKind.FLOAT, 1.0, "the standard deviation"),
                 _DTYPE, _SEED),
          dtypes="any (only its shape is read)", extra={"operands": ("a",)},
          vjp=NO_GRADIENT, random=True),
]
