"""Small helpers the passes share: copying a module, comparing literal values, and deciding
whether an operand's value is known at compile time."""
from __future__ import annotations

import copy
import math

import numpy as np

from isa.module import Constant, ConstRef, Function, Imm, Instr, Module, Operand, Reg
from isa.ops import OPS
from isa.types import TensorType
from isa.verify import InstrTypes


def copy_module(module: Module) -> Module:
    """A copy whose functions can be rewritten freely. Constant arrays are shared: passes add
    or drop constants but never write into one."""
    out = Module(module.name, dict(module.constants), {}, module.source)
    for name, f in module.functions.items():
        out.functions[name] = Function(f.name, list(f.params), list(f.results),
                                       copy.deepcopy(f.blocks), f.loc)
    return out


def same_array(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-exact equality: -0.0 differs from 0.0, a NaN equals the same NaN."""
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def is_uniform(a: np.ndarray) -> bool:
    """Whether every element has the bits of the first (so a 0-d literal can stand for it)."""
    if a.size == 0:
        return False
    return np.full_like(a, a.flat[0]).tobytes() == a.tobytes()


def is_static(t: TensorType) -> bool:
    return t.is_static


# a `const` with more elements is not materialized at compile time (the folder's own limit on
# results, constfold.FOLD_MAX_ELEMENTS): a dead f32[1000000, 1000000] must not exhaust the
# optimizer's memory, and a live one traps when it runs, as written
LITERAL_MAX_ELEMENTS = 1 << 20


def const_literal(ins: Instr) -> np.ndarray | None:
    """The full value of a `const` instruction whose type is static and not huge, else None."""
    if ins.op != "const":
        return None
    t: TensorType = ins.attrs["type"]
    if not t.is_static or math.prod(t.shape) > LITERAL_MAX_ELEMENTS:
        return None
    return np.asarray(OPS["const"].reference(ins.attrs))


def const_fill(ins: Instr) -> np.ndarray | None:
    """The 0-d literal of a `const` that fills its type (static or not), else None."""
    if ins.op != "const":
        return None
    value: np.ndarray = ins.attrs["value"]
    t: TensorType = ins.attrs["type"]
    if value.ndim == 0:
        return np.asarray(value, dtype=t.dtype.np)
    return np.asarray(value.reshape(-1)[0], dtype=t.dtype.np) if is_uniform(value) else None


def imm_array(o: Imm, t: TensorType) -> np.ndarray:
    """An immediate as the 0-d array of the dtype the verifier gave it."""
    return np.asarray(o.value, dtype=t.dtype.np)


def operand_key(o: Operand) -> tuple:
    """A hashable key that tells operands apart exactly (Imm(0.0) == Imm(-0.0) in Python, and
    Imm(1) == Imm(True): keys must not confuse them)."""
    if isinstance(o, Imm):
        return ("imm", type(o.value).__name__, repr(o.value))
    if isinstance(o, ConstRef):
        return ("const", o.name)
    return ("reg", o.name)


def attr_key(v) -> object:
    """A hashable, exact key for one attribute value."""
    if isinstance(v, np.ndarray):
        return ("nd", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, list):
        return ("list", tuple(attr_key(x) for x in v))
    if isinstance(v, float):
        return ("float", repr(v))
    return v


def instr_types_or_none(table: list[list[InstrTypes]], bi: int, ii: int) -> InstrTypes | None:
    rows = table[bi]
    return rows[ii] if ii < len(rows) else None


def rewrite_instructions(module: Module, table: dict, rewrite) -> bool:
    """Replace, in place, each instruction for which `rewrite(ins, types, taken)` returns a
    list of instructions (None keeps it); `taken` holds every register name of the module, and
    a rewrite adds the names it makes. Whether anything changed."""
    taken: set[str] = set()
    for func in module.functions.values():
        taken.update(p.name for p in func.params)
        for block in func.blocks:
            for ins in block.instrs:
                taken.update(ins.results)
    changed = False
    for fname, func in module.functions.items():
        types = table[fname]
        for bi, block in enumerate(func.blocks):
            out: list[Instr] = []
            for ii, ins in enumerate(block.instrs):
                made = rewrite(ins, instr_types_or_none(types, bi, ii), taken)
                if made is None:
                    out.append(ins)
                    continue
                out.extend(made)
                changed = True
            block.instrs[:] = out
    return changed


def fresh_constant_name(module: Module, stem: str) -> str:
    n = 0
    while f"{stem}{n}" in module.constants:
        n += 1
    return f"{stem}{n}"


def add_constant(module: Module, value: np.ndarray, t: TensorType, stem: str = "fold") -> str:
    """Name of a module constant holding `value`: an existing equal one, or a new `@fold<n>`."""
    for c in module.constants.values():
        if same_array(c.value, value):
            return c.name
    name = fresh_constant_name(module, stem)
    module.constants[name] = Constant(name, t, np.asarray(value, order="C"))
    return name


def regs_of(ins: Instr) -> set[str]:
    return {o.name for o in ins.operands if isinstance(o, Reg)}


def definition_counts(func) -> dict[str, int]:
    """How many times each register of a function is defined (a parameter counts once): a
    register defined once holds one value wherever it is read after its definition."""
    defs: dict[str, int] = {p.name: 1 for p in func.params}
    for block in func.blocks:
        for ins in block.instrs:
            for r in ins.results:
                defs[r] = defs.get(r, 0) + 1
    return defs


def fuses_elementwise(op: str) -> bool:
    """Whether the region former puts an instruction of `op` in an elementwise run (one fused
    kernel): the op table's elementwise families, and mov (a copy)."""
    return op == "mov" or (op in OPS and OPS[op].family.elementwise)
