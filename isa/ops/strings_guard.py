"""The str dtype's gate: an op takes str operands or gives str results only where its record
says so (`OpDef.strings`).

Type rules were written for numbers, and many accept "any" dtype (add, max, reductions), whose
NumPy references would then run on object arrays and compute nonsense (or concatenate). So the
table wraps the rule of every op that does not take strings with one check, here, instead of
each rule testing for str on its own.
"""
from __future__ import annotations

import dataclasses

from ..errors import OpTypeError
from ..types import TensorType
from .opdef import OpDef


def refusing_str(op: OpDef) -> OpDef:
    """`op` itself when it takes strings (or has no type rule: control flow passes values on
    untouched); else `op` with a rule that refuses str operands and str results first."""
    if op.strings or op.infer is None:
        return op
    rule = op.infer

    def guarded(types: list[TensorType], attrs) -> list[TensorType]:
        if any(t is not None and t.dtype.is_str for t in types):
            raise OpTypeError(f"{op.name} does not take str operands (strings take movement "
                              f"ops, eq/ne, select, cast and the string ops)")
        results = rule(types, attrs)
        if any(t.dtype.is_str for t in results):
            raise OpTypeError(f"{op.name} cannot give a str result")
        return results

    guarded.__doc__ = rule.__doc__
    guarded.__wrapped__ = rule
    return dataclasses.replace(op, infer=guarded)
