"""Which instructions may be deleted when their results are never read.

A trap is observable (a program that traps must still trap after optimization), so an unused
instruction may go only when it cannot trap. Control flow, `assert` and `call` always stay.

What can trap is derived, not listed:
- `const` and `mov` cannot fail (a literal, a copy); nor can `expand_dims`, a `pad` that only
  grows (no negative pads, a fill the dtype holds) or a `concat` whose sizes off its axis are
  equal by their types (one literal or one name per position), whatever the sizes.
- Elementwise ops (unary, binary, select, cast) trap in two ways: operand shapes that do not
  broadcast at run time (possible only when dims are named or unknown), and values their
  reference rejects (integer division by zero, negative integer exponents). The first is read
  off the verifier's operand types; the second is found by running the op's own reference on
  probe values of the operand dtype: zero, one, minus one, the extremes, NaN and infinities,
  every pair of them for binary ops. The references trap only on such boundary values, and
  `tests/test_passes_effects.py` checks that every op whose doc mentions a trap is caught.
- Everything else (reductions, contractions, movement, nn ops): when every operand has a
  static shape (so the verifier already checked the shapes), the reference is run once on
  operands of exactly those shapes filled with the probe values; it may go when that runs
  cleanly (an index op fed the extremes does trap, so gathers stay). With named or unknown
  dims it is kept: a size bound at run time may make it trap.
"""
from __future__ import annotations

import math

import numpy as np

from isa.dtypes import DType
from isa.errors import Trap
from isa.module import Instr
from isa.narrow import widened
from isa.ops import OPS, Family
from isa.types import Dim, TensorType
from isa.verify import InstrTypes

from .common import attr_key

# a dead instruction whose static result has more elements stays: allocating it may fail, and
# an out-of-memory trap is as observable as any other (2^28 f32 elements: 1 GiB)
HUGE_RESULT_ELEMENTS = 1 << 28

_ELEMENTWISE = (Family.UNARY, Family.BINARY, Family.SELECT, Family.CAST)


def probe_values(dtype: DType) -> np.ndarray:
    """Boundary values of a dtype: the inputs on which references trap, if they ever do."""
    if dtype.is_bool:
        return np.array([False, True])
    if dtype.is_str:
        # text a cast may fail to parse, numbers it parses, empty and non-ASCII
        return np.array(["", "a", "1", "-1.5", "nan", "\u00e9"], dtype=object)
    if dtype.is_int:
        lo, hi = dtype.int_range()
        vals = [0, 1, lo, hi] + ([2] if hi >= 2 else []) + ([-1] if dtype.is_signed else []) + \
            ([-2] if lo <= -2 else [])
        return np.array(vals, dtype=dtype.np)
    info = dtype.finfo()
    big, tiny = float(info.max), float(info.tiny)
    with np.errstate(over="ignore", invalid="ignore"):     # formats without inf hold NaN there
        return np.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, np.nan, np.inf, -np.inf, big, -big,
                         tiny], dtype=np.float64).astype(dtype.np)


_PROBE_CACHE: dict[tuple, bool] = {}
STATIC_PROBE_MAX_ELEMENTS = 1 << 14     # larger operands: assume the op may trap


def value_traps(ins: Instr, dtypes: tuple[DType, ...]) -> bool:
    """Whether the op's reference traps on some combination of probe values of `dtypes`."""
    key = (ins.op, dtypes, tuple(sorted((k, attr_key(v)) for k, v in ins.attrs.items())))
    hit = _PROBE_CACHE.get(key)
    if hit is None:
        hit = _PROBE_CACHE[key] = _probe(ins, dtypes)
    return hit


def _probe(ins: Instr, dtypes: tuple[DType, ...]) -> bool:
    op = OPS[ins.op]
    probes = [probe_values(d) for d in dtypes]
    n = len(probes)
    # every combination of probe values: operand k varies along axis k
    args = [p.reshape((1,) * k + (-1,) + (1,) * (n - k - 1)) for k, p in enumerate(probes)]
    try:
        with np.errstate(all="ignore"):
            widened(op.reference, None)(op.with_defaults(ins.attrs), *args)
    except Trap:
        return True
    except Exception:    # noqa: BLE001 - anything unexpected: assume it may fail at run time
        return True
    return False


def static_shape_traps(ins: Instr, operand_types: list[TensorType]) -> bool:
    """Whether the reference traps on operands of these static shapes holding probe values."""
    key = (ins.op, tuple(operand_types), tuple(sorted((k, attr_key(v)) for k, v in ins.attrs.items())))
    hit = _PROBE_CACHE.get(key)
    if hit is None:
        hit = _PROBE_CACHE[key] = _probe_static(ins, operand_types)
    return hit


def _probe_static(ins: Instr, operand_types: list[TensorType]) -> bool:
    if sum(int(np.prod(t.shape)) for t in operand_types) > STATIC_PROBE_MAX_ELEMENTS:
        return True
    op = OPS[ins.op]
    attrs = op.with_defaults(ins.attrs)
    probes = [probe_values(t.dtype) for t in operand_types]
    mixed = [np.resize(p, t.shape) for p, t in zip(probes, operand_types)]
    # one run with every probe value spread over each operand, then each operand filled with
    # each probe value in turn (a small index operand must also meet the extremes)
    runs = [mixed] + [[np.full(t.shape, p[j]) if i == k else m
                       for i, (p, t, m) in enumerate(zip(probes, operand_types, mixed))]
                      for k in range(len(probes)) for j in range(len(probes[k]))]
    for args in runs:
        try:
            with np.errstate(all="ignore"):
                widened(op.reference, None)(attrs, *args)
        except Exception:    # noqa: BLE001 - a Trap, or anything unexpected: it may fail
            return True
    return False


def broadcast_is_safe(shapes: list[tuple[Dim, ...]]) -> bool:
    """Whether shapes that passed the verifier surely broadcast at run time: aligned from the
    right, every position holds at most one dim other than a literal 1, and it is not unknown."""
    rank = max((len(s) for s in shapes), default=0)
    for pos in range(1, rank + 1):
        dims = {s[-pos] for s in shapes if len(s) >= pos and s[-pos] != 1}
        if len(dims) > 1 or None in dims:
            return False
    return True


def may_trap(ins: Instr, types: InstrTypes | None) -> bool:
    """Whether executing `ins` may trap (conservative: True when unsure)."""
    op = OPS[ins.op]
    if ins.op in ("const", "mov"):
        return False
    if types is None or not ins.operands:
        return True
    operand_types: list[TensorType] = types.operands
    if ins.op == "expand_dims" or (ins.op == "pad" and _growing_pad(ins, operand_types[0])):
        return False             # only adds elements: no size makes them fail
    if ins.op == "concat" and _joins_surely(ins, operand_types):
        return False             # the sizes that must agree are equal by their types
    if op.family not in _ELEMENTWISE:
        if all(t.is_static for t in operand_types):
            return static_shape_traps(ins, operand_types)
        return True
    if not broadcast_is_safe([t.shape for t in operand_types]):
        return True
    return value_traps(ins, tuple(t.dtype for t in operand_types))


def _joins_surely(ins: Instr, operand_types: list[TensorType]) -> bool:
    """A concat whose operands have one rank and, off the joined axis, the same literal or named
    size at every position: no run-time size can make it fail (a recurrent loop's outputs
    appended step by step: [?, batch, 128] and [1, batch, 128])."""
    rank = operand_types[0].rank
    if rank == 0 or any(t.rank != rank for t in operand_types):
        return False
    axis = OPS["concat"].with_defaults(ins.attrs)["axis"]
    axis = axis + rank if axis < 0 else axis
    for pos in range(rank):
        if pos != axis:
            dims = {t.shape[pos] for t in operand_types}
            if len(dims) != 1 or None in dims:
                return False
    return True


def _growing_pad(ins: Instr, t: TensorType) -> bool:
    """A pad with no negative pads (a crop may go below size 0) and a fill its dtype can hold."""
    value = float(OPS["pad"].with_defaults(ins.attrs)["value"])
    return min(ins.attrs["pads"], default=0) >= 0 and (t.dtype.is_float or math.isfinite(value))


def removable_if_unused(ins: Instr, types: InstrTypes | None) -> bool:
    """Whether `ins` may be deleted when none of its results is read."""
    return not kept_anyway(ins, types) and not may_trap(ins, types)


def kept_anyway(ins: Instr, types: InstrTypes | None) -> bool:
    """The reasons to keep an unused `ins` that cost nothing to learn (may_trap runs the
    reference on probe values: asked only where the answer matters)."""
    op = OPS[ins.op]
    if op.family is Family.CONTROL:
        return True              # jumps, returns, asserts and calls (which may trap inside)
    if op.random:
        return True              # an unused draw still advances its stream: the later draws
                                 # are the same numbers with and without the optimizer
    # its allocation may run out of memory: a trap, observable too
    return types is not None and any(r.is_static and math.prod(r.shape) > HUGE_RESULT_ELEMENTS
                                     for r in types.results)
