"""Inputs for `dlvm run` without an --inputs file: random arrays generated from the signature.

Named dims take their size from `--dim N=8`, else DEFAULT_DIM; unknown dims take DEFAULT_DIM.
Floats are standard normal, integers are small non-negative (safe as sizes and indices), bools
are fair coins, strings short lowercase words. A seed makes runs repeatable.
"""
from __future__ import annotations

import numpy as np

from isa.module import Function
from isa.types import TensorType

DEFAULT_DIM = 4


def shape_for(t: TensorType, dims: dict[str, int]) -> tuple[int, ...]:
    return tuple(d if isinstance(d, int) else dims.get(d, DEFAULT_DIM) if isinstance(d, str)
                 else DEFAULT_DIM for d in t.shape)


def random_value(t: TensorType, dims: dict[str, int], rng: np.random.Generator) -> np.ndarray:
    shape = shape_for(t, dims)
    if t.dtype.is_float:
        return rng.standard_normal(shape).astype(t.dtype.np)
    if t.dtype.is_bool:
        return rng.random(shape) < 0.5
    if t.dtype.is_str:
        letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
        out = np.empty(shape, dtype=object)
        for i in np.ndindex(*shape):
            out[i] = "".join(rng.choice(letters, size=int(rng.integers(0, 6))))
        return out
    return rng.integers(0, 8, size=shape).astype(t.dtype.np)


def make_inputs(func: Function, dims: dict[str, int], seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {p.name: random_value(p.type, dims, rng) for p in func.params}
