"""Composite ops whose parts need a movement op, written out as program instructions.

A fused kernel computes elementwise over one index space, and the kernel builder decomposes a
composite op into scalar ops (OpDef.decompose). batch_norm's decomposition lines its
per-channel vectors [C] up with an [N, C, H, W] input through `expand_dims`, which a kernel
cannot express, so a batch_norm the exporter could not fold into a convolution (one after a
concat or an activation: DenseNet's and pre-activation ResNet's blocks) made every region it
was in fail to build and ran interpreted, in the native library as well.

This pass emits that decomposition as instructions: the per-channel parts (the rsqrt of the
variance, the expand_dims) become their own instructions, which constant folding evaluates
when the statistics are weights, and the rest is sub, mul, add on the input, which fuse with
their neighbours. Exact: the decomposition computes the reference's operations on the same
values in the same order (`(x - mean) * (scale * (1 / sqrt(var + eps))) + bias`), and it is
applied only where the vectors' shapes are known to be [C] for the input's static C, so the
reference's shape trap cannot be lost.
"""
from __future__ import annotations

from isa.dtypes import DType
from isa.errors import InternalError
from isa.module import ConstRef, Imm, Instr, Module, Reg
from isa.ops import OPS
from isa.types import TensorType
from isa.verify import verify_module

from .common import rewrite_instructions

EXPANDED = frozenset({"batch_norm"})


def _expandable(ins: Instr, types) -> bool:
    if ins.op not in EXPANDED or types is None or len(ins.results) != 1:
        return False
    x: TensorType = types.operands[0]
    if x.dtype is DType.F16 or x.dtype.is_narrow:
        # computed in f32 and rounded once (isa/narrow.py): written out, each part would round
        return False
    c = x.shape[1] if x.rank >= 2 else None
    return isinstance(c, int) and all(t.rank == 1 and t.shape[0] == c
                                      for t in types.operands[1:])


def expand_composites(module: Module, table: dict | None = None) -> bool:
    """Write out every expandable composite in place; return whether anything changed.
    `table`: the module's verified types, where the caller has them."""
    table = table if table is not None else verify_module(module)
    return rewrite_instructions(
        module, table, lambda ins, t, taken: _decompose(ins, t, taken)
        if _expandable(ins, t) else None)


def _decompose(ins: Instr, t, taken: set[str]) -> list[Instr]:
    opdef = OPS[ins.op]
    made: list[Instr] = []
    counter = [0]

    def emit(op: str, operands, attrs=None) -> Reg:
        while True:
            counter[0] += 1
            name = f"{ins.results[0]}.{op}{counter[0]}"
            if name not in taken:
                break
        taken.add(name)
        ops = [o if isinstance(o, Reg | ConstRef | Imm) else Imm(o) for o in operands]
        made.append(Instr(op, [name], ops, dict(attrs or {}), loc=ins.loc))
        return Reg(name)

    final = opdef.decompose(emit, list(ins.operands), opdef.with_defaults(ins.attrs),
                            list(t.operands))
    # the last instruction writes the composite's own result register
    last = made[-1]
    if final != Reg(last.results[0]):
        raise InternalError(f"{ins.op}'s decomposition does not end in its result")
    taken.discard(last.results[0])
    made[-1] = Instr(last.op, list(ins.results), last.operands, last.attrs,
                     result_type=ins.result_type, loc=ins.loc)
    # the per-channel parts first, then the chain on the input: the chain stays contiguous, one
    # fused region with its neighbours (a folded part left between them splits the region)
    on_input = {ins.operands[0]}
    for m in made:
        if any(o in on_input for o in m.operands):
            on_input.add(Reg(m.results[0]))
    return [m for m in made if Reg(m.results[0]) not in on_input] + \
        [m for m in made if Reg(m.results[0]) in on_input]
