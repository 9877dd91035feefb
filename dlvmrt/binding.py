"""Named-dim binding and argument/result checks at function entry and return.

A named dim (`N`) binds to the size it first meets in a call and must agree everywhere after;
unknown dims (`?`) match anything. Mismatches are traps that name the parameter or result.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from isa.errors import Trap
from isa.module import Function
from isa.types import TensorType


def describe(value: Any) -> str:
    a = np.asarray(value)
    from isa.dtypes import dtype_from_numpy
    dt = dtype_from_numpy(a.dtype)
    return f"{dt.text if dt else a.dtype}[{', '.join(str(n) for n in a.shape)}]"


def bind_value(what: str, t: TensorType, value: Any, bindings: dict[str, int],
               check_dtype: bool) -> None:
    if check_dtype:
        dt = getattr(value, "dtype", None)
        if dt != t.dtype.np or np.ndim(value) != t.rank:
            raise Trap(f"{what} must be {t}, got {describe(value)}")
    shape = np.shape(value)
    for d, n in zip(t.shape, shape):
        if isinstance(d, int):
            if d != n:
                raise Trap(f"{what} must be {t}, got {describe(value)}")
        elif isinstance(d, str):
            bound = bindings.get(d)
            if bound is None:
                bindings[d] = n
            elif bound != n:
                raise Trap(f"{what} has {d} = {n}, but {d} = {bound} from an earlier argument "
                           f"(type {t}, got {describe(value)})")


def bind_arguments(func: Function, args: list, check_dtype: bool) -> dict[str, int]:
    if len(args) != len(func.params):
        raise Trap(f"@{func.name} takes {len(func.params)} argument"
                   f"{'s' if len(func.params) != 1 else ''}, got {len(args)}")
    bindings: dict[str, int] = {}
    for p, a in zip(func.params, args):
        bind_value(f"argument %{p.name} of @{func.name}", p.type, a, bindings, check_dtype)
    return bindings


def check_results(func: Function, outs: list, bindings: dict[str, int]) -> None:
    # dtype and rank too: the verifier proves them, this is the last line of defence
    for k, (t, v) in enumerate(zip(func.results, outs)):
        bind_value(f"result {k} of @{func.name}", t, v, bindings, check_dtype=True)
