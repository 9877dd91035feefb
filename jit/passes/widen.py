"""f16 instructions written out as f32 instructions between casts.

An instruction that computes on f16 computes in f32 and rounds its results to f16 once
(isa/narrow.py, specs/semantics.md). This pass writes that out: each operand of f16 is cast to
f32, the instruction runs on f32, and each f16 result is the cast of its f32 result back:

    %y = gelu %x                  %y.f32 = gelu %x.f32_0    (%x.f32_0 = cast %x {to = f32})
                                  %y = cast %y.f32 {to = f16}

Exact by the semantics: the casts to f32 are exact, the instruction's f32 result is the value
its f16 form rounds, and the cast back is that rounding. An immediate typed f16 by its peers is
rounded to f16 first (it was an f16 value). Every tier then sees f32 arithmetic, which it
compiles (products on the GEMM, the rest fused), and f16 only in casts, loads and stores (the
CPU JIT keeps an f16 value in a float register, rounded: jit/llvm/ops.py). A transformer run
after `model.half()` went from the interpreter's NumPy f16 loops to compiled f32 code. Constant
folding then turns the casts of f16 weights into f32 constants, CSE merges the casts of one
value, and a value cast back and forth between two widened instructions stays a rounding.
"""
from __future__ import annotations

import numpy as np

from isa.dtypes import DType
from isa.module import ConstRef, Imm, Instr, Module, Reg
from isa.narrow import computes
from isa.ops import OPS
from isa.verify import verify_module

from .common import rewrite_instructions


def _widens(ins: Instr, types) -> bool:
    if types is None:
        return False
    op = OPS[ins.op]
    all_types = [*types.operands, *types.results]
    return computes(op) and any(t.dtype is DType.F16 for t in all_types) and \
        not any(t.dtype.is_narrow for t in all_types)


def widen_f16(module: Module, table: dict | None = None) -> bool:
    """Write out every f16 instruction that computes as its f32 form between casts, in place;
    return whether anything changed. `table`: the module's verified types, where the caller
    has them."""
    table = table if table is not None else verify_module(module)
    return rewrite_instructions(
        module, table, lambda ins, t, taken: _widened(ins, t, taken) if _widens(ins, t) else None)


def _widened(ins: Instr, t, taken: set[str]) -> list[Instr]:
    def fresh(stem: str) -> str:
        name, n = stem, 0
        while name in taken:
            n += 1
            name = f"{stem}{n}"
        taken.add(name)
        return name

    made: list[Instr] = []
    operands = []
    for k, (o, ot) in enumerate(zip(ins.operands, t.operands)):
        if ot.dtype is not DType.F16:
            operands.append(o)
        elif isinstance(o, Imm):
            with np.errstate(over="ignore"):                     # (beyond f16's range: inf)
                operands.append(Imm(float(np.float16(o.value))))     # the f16 value it stood for
        elif isinstance(o, (Reg, ConstRef)):
            wide = fresh(f"{ins.results[0] if ins.results else 'w'}.f32_{k}")
            made.append(Instr("cast", [wide], [o], {"to": DType.F32}, loc=ins.loc))
            operands.append(Reg(wide))
        else:
            operands.append(o)
    results, back = [], []
    for r, rt in zip(ins.results, t.results):
        if rt.dtype is DType.F16:
            wide = fresh(f"{r}.f32")
            results.append(wide)
            back.append(Instr("cast", [r], [Reg(wide)], {"to": DType.F16},
                              result_type=ins.result_type if len(ins.results) == 1 else None,
                              loc=ins.loc))
        else:
            results.append(r)
    result_type = ins.result_type
    if result_type is not None and result_type.dtype is DType.F16:
        result_type = None          # the annotation moves to the cast that writes the f16 result
    made.append(Instr(ins.op, results, operands, dict(ins.attrs), result_type=result_type,
                      loc=ins.loc))
    return made + back
