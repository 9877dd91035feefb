"""Turn each instruction into a small closure over the register file: `step(r) -> None`.

This is the reference interpreter's inner loop: one closure call per instruction, operands read
by slot index, results written by slot index. The semantics are the op table's NumPy references;
where a reference is exactly one ufunc, the ufunc is called directly (same semantics, one call
fewer). Nothing here decides what an op means.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from isa.errors import Trap
from isa.module import Instr
from isa.narrow import widened
from isa.ops import OPS
from isa.types import TensorType

from .frame_layout import BINDINGS_SLOT, FrameLayout, readonly
from .memory_ceiling import ceiling_bytes, nbytes
from .random_streams import RandomStreams

Step = Callable[[list], None]


def make_step(ins: Instr, ins_slots: list[int], out_slots: list[int],
              narrow_outs: list | None = None,
              streams: RandomStreams | None = None, where: tuple = ()) -> Step:
    """`narrow_outs`: the result dtypes of an instruction that touches a narrow storage format
    (computed wide and rounded back, see narrow.py); None for every other instruction.
    `streams`: the VM's random state, which a random op at `where` draws from."""
    op = OPS[ins.op]
    attrs = op.with_defaults(ins.attrs)
    if op.random:
        return _random_step(op.reference, attrs, ins_slots[0], out_slots[0],
                            (streams or RandomStreams()).for_instruction(attrs, where))
    if op.name == "const":
        return _const_step(attrs, out_slots[0])
    if op.name == "mov":
        (a,), (o,) = ins_slots, out_slots
        def mov(r):
            r[o] = r[a]
        return mov
    named = op.named_shape_attrs(attrs)
    ref = op.reference
    if narrow_outs is not None:
        ref = widened(ref, narrow_outs)
    ufunc = getattr(ref, "ufunc", None)
    if ufunc is not None and not named and len(out_slots) == 1:
        return _ufunc_step(ufunc, ins_slots, out_slots[0])
    if named:
        return _named_attr_step(ref, attrs, named, ins_slots, out_slots)
    return _ref_step(ref, attrs, ins_slots, out_slots)


def _ufunc_step(uf, ins_slots: list[int], o: int) -> Step:
    if len(ins_slots) == 1:
        (a,) = ins_slots
        def unary(r):
            r[o] = uf(r[a])
        return unary
    a, b = ins_slots
    def binary(r):
        r[o] = uf(r[a], r[b])
    return binary


def _ref_step(ref, attrs, ins_slots: list[int], out_slots: list[int]) -> Step:
    n = len(ins_slots)
    if len(out_slots) == 1:
        o = out_slots[0]
        if n == 1:
            (a,) = ins_slots
            def one(r):
                r[o] = ref(attrs, r[a])
            return one
        if n == 2:
            a, b = ins_slots
            def two(r):
                r[o] = ref(attrs, r[a], r[b])
            return two
        def many(r):
            r[o] = ref(attrs, *[r[i] for i in ins_slots])
        return many

    def multi(r):
        outs = ref(attrs, *[r[i] for i in ins_slots])
        for s, v in zip(out_slots, outs):
            r[s] = v
    return multi


def _random_step(ref, attrs, a: int, o: int, rng) -> Step:
    def draw(r):
        r[o] = ref(attrs, r[a], rng)
    return draw


def _named_attr_step(ref, attrs, named: list[str], ins_slots, out_slots) -> Step:
    def step(r):
        b = r[BINDINGS_SLOT]
        full = dict(attrs)
        for k in named:
            full[k] = [b[d] if isinstance(d, str) else d for d in attrs[k]]
        outs = ref(full, *[r[i] for i in ins_slots])
        if len(out_slots) == 1:
            r[out_slots[0]] = outs
        else:
            for s, v in zip(out_slots, outs):
                r[s] = v
    return step


def _const_step(attrs, o: int) -> Step:
    t: TensorType = attrs["type"]
    ref = OPS["const"].reference
    if t.is_static:
        try:
            if nbytes(t) > ceiling_bytes():     # never made (see memory_ceiling.py)
                raise MemoryError
            value = readonly(ref(attrs))
        except (MemoryError, ValueError):
            # too large to hold: made (and failing as out of memory, at this instruction) when
            # it runs, as any other allocation, not while the function is prepared
            def too_large_const(r):
                r[o] = ref(attrs)
            return too_large_const
        def static_const(r):
            r[o] = value
        return static_const
    def bound_const(r):
        r[o] = ref(attrs, r[BINDINGS_SLOT])
    return bound_const


def make_assert(ins: Instr, slot: int) -> Step:
    message = ins.attrs["message"]
    def check(r):
        if not np.all(r[slot]):
            raise Trap(f"assertion failed: {message}")
    return check


def make_type_check(declared: TensorType, slot: int) -> Step:
    """A declared `: TYPE` whose dims the verifier could not prove is checked when it runs."""
    dims = declared.shape
    def check(r):
        shape = np.shape(r[slot])
        b = r[BINDINGS_SLOT]
        for d, n in zip(dims, shape):
            if (isinstance(d, int) and d != n) or (isinstance(d, str) and b.get(d, n) != n):
                raise Trap(f"result has shape {list(shape)}, but its declared type is {declared}")
    check.checks_slot = slot      # a tier-up keeps it after a fused region that computes it
    return check


def make_call(code_of: Callable[[], Any], ins_slots: list[int], out_slots: list[int]) -> Step:
    def call(r):
        outs = code_of().call([r[i] for i in ins_slots])
        for s, v in zip(out_slots, outs):
            r[s] = v
    return call


def frame_slots(layout: FrameLayout, bi: int, ii: int, ins: Instr) -> tuple[list[int], list[int]]:
    return layout.operand_slots[(bi, ii)], [layout.reg(n) for n in ins.results]
