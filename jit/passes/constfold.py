"""Constant folding and propagation.

A register is known when every path into a point leaves it holding the same literal: a `const`
of static type, a module constant moved into it, or an earlier folded result (a forward
must-analysis over the CFG, so reassignment and loops are handled: a loop counter is known on
entry but not at the loop head). An instruction whose operands are all known is evaluated with
its op's NumPy reference, the interpreter's own semantics, so the literal is exactly what the
program would have computed.

Never folded: control flow and calls; instructions whose reference traps (the trap must still
happen at run time, so the instruction stays); ops whose attributes name dims bound only at run
time; results larger than FOLD_MAX_ELEMENTS (they would bloat the module), except the cheap
elementwise, reduction and movement ops' results that take no more bytes than an operand (the
cast or transpose of a weight: as much as the module holds already).
A `br` on a known condition becomes a `jmp`; an `assert` of a known all-true condition is
removed (a known false one stays: it must trap).
"""
from __future__ import annotations

import numpy as np

from isa.errors import Trap
from isa.module import ConstRef, Imm, Instr, Module, Reg
from isa.narrow import touches_narrow, widened
from isa.ops import OPS, AttrKind, Family
from isa.types import TensorType
from isa.verify import FunctionTypes, InstrTypes, verify_module

from .cfg import Fact, Facts, forward_facts, kill
from .common import add_constant, const_literal, imm_array, is_uniform, same_array

FOLD_MAX_ELEMENTS = 1 << 20     # larger results stay computed at run time
LITERAL_MAX_ELEMENTS = 64       # larger non-uniform results become module constants @fold<n>
# op families that fold at any size where the result is no larger than an operand (evaluate)
CHEAP_AT_ANY_SIZE = frozenset({Family.UNARY, Family.BINARY, Family.SELECT, Family.CAST,
                               Family.REDUCE, Family.MOVEMENT})


def foldable(ins: Instr) -> bool:
    """Whether the op could be evaluated at compile time given known operands."""
    op = OPS[ins.op]
    if op.family is Family.CONTROL or op.reference is None or ins.op == "const" or op.random:
        return False
    if not ins.operands:       # e.g. ops that build values from run-time dims
        return False
    for spec in op.attrs:      # a shape attribute naming dims needs the run-time bindings
        v = ins.attrs.get(spec.name)
        if spec.kind is AttrKind.SHAPE and isinstance(v, list) and any(isinstance(d, str) for d in v):
            return False
    return True


class Folder:
    """Evaluates instructions of one function over the known-register facts."""

    def __init__(self, module: Module, types: FunctionTypes):
        self.module = module
        self.types = types
        self.cache: dict[tuple[int, int], tuple[list[np.ndarray], list[np.ndarray] | None]] = {}

    def operand_values(self, ins: Instr, t: InstrTypes, facts: Facts) -> list[np.ndarray] | None:
        vals: list[np.ndarray] = []
        for o, ot in zip(ins.operands, t.operands):
            if isinstance(o, Reg):
                fact = facts.get(o.name)
                if fact is None:
                    return None
                vals.append(fact.value)
            elif isinstance(o, ConstRef):
                vals.append(self.module.constants[o.name].value)
            else:
                assert isinstance(o, Imm)
                vals.append(imm_array(o, ot))
        return vals

    def evaluate(self, bi: int, ii: int, ins: Instr, facts: Facts) -> list[np.ndarray] | None:
        """The results of the instruction when they can be computed now, else None."""
        if not foldable(ins) or ii >= len(self.types[bi]):
            return None
        t = self.types[bi][ii]
        # the cheap work of an elementwise, reduction or movement op whose result takes no more
        # bytes than an operand folds at any size: the module holds as much already (the
        # operands, dropped by dce where nothing else reads them; a weight also read elsewhere,
        # as a tied embedding, is held twice, as onnxruntime's constant folding and prepacking
        # hold it). The widen pass casts an f16 model's weights to f32, an exporter transposes
        # a vocabulary head's [32000, 512] weight: done on every call, the cast cost a pass over
        # the weights, and the transposed operand kept the GEMM from packing the constant once
        # (2.2x onnxruntime's time). A product or convolution of constants keeps the limit.
        # The cast of a module constant folds at any size too (the f16 weights' f32 copy).
        largest = max((_bytes(ot) for ot in t.operands if ot.is_static), default=0) \
            if OPS[ins.op].family in CHEAP_AT_ANY_SIZE else 0
        weights_cast = ins.op == "cast" and isinstance(ins.operands[0], ConstRef)
        if any(not rt.is_static or (_size(rt) > FOLD_MAX_ELEMENTS and _bytes(rt) > largest
                                    and not weights_cast) for rt in t.results):
            return None
        args = self.operand_values(ins, t, facts)
        if args is None:
            return None
        hit = self.cache.get((bi, ii))
        if hit is not None and len(hit[0]) == len(args) and all(a is b for a, b in zip(hit[0], args)):
            return hit[1]
        out = self.run_reference(ins, t, args)
        self.cache[(bi, ii)] = (args, out)
        return out

    @staticmethod
    def run_reference(ins: Instr, t: InstrTypes, args: list[np.ndarray]) -> list[np.ndarray] | None:
        op = OPS[ins.op]
        ref = op.reference
        if touches_narrow(t.operands + t.results, op):
            ref = widened(ref, [r.dtype for r in t.results])
        try:
            with np.errstate(all="ignore"):
                out = ref(op.with_defaults(ins.attrs), *args)
        except Trap:
            return None          # it must trap at run time: leave it there
        except Exception:        # noqa: BLE001 - anything the reference rejects is left to run time
            return None
        outs = list(out) if isinstance(out, tuple) else [out]
        if len(outs) != len(t.results):
            return None
        values = []
        for v, rt in zip(outs, t.results):
            v = np.asarray(v)
            # only a result of exactly the inferred type may replace the instruction
            if v.dtype != rt.dtype.np or tuple(v.shape) != rt.shape:
                return None
            values.append(v)
        return values

    def step(self, bi: int, ii: int, ins: Instr, facts: Facts) -> None:
        values = self.evaluate(bi, ii, ins, facts)
        kill(facts, ins.results)
        if values is None:
            lit = const_literal(ins)
            values = [lit] if lit is not None else None
        if values is not None:
            for r, v in zip(ins.results, values):
                facts[r] = Fact(v, frozenset([r]))


def _bytes(t: TensorType) -> int:
    return _size(t) * t.dtype.itemsize


def _size(t: TensorType) -> int:
    n = 1
    for d in t.shape:
        n *= d
    return n


def literal_instr(module: Module, ins: Instr, result: str, value: np.ndarray,
                  t: TensorType) -> Instr | None:
    """An instruction that sets `result` to `value`, or None when it would not be simpler."""
    rt = ins.result_type if len(ins.results) == 1 else None
    if is_uniform(value) or value.ndim == 0:
        lit = np.asarray(value.reshape(-1)[0]) if value.ndim else value
        return Instr("const", [result], [], {"value": lit, "type": t}, rt, ins.loc)
    if value.size <= LITERAL_MAX_ELEMENTS:
        return Instr("const", [result], [], {"value": value, "type": t}, rt, ins.loc)
    if ins.op == "mov" and isinstance(ins.operands[0], ConstRef):
        return None              # already a module constant
    name = add_constant(module, value, t)
    return Instr("mov", [result], [ConstRef(name)], {}, rt, ins.loc)


def _known_condition(ins: Instr, folder: Folder, bi: int, ii: int, facts: Facts) -> np.ndarray | None:
    if ii >= len(folder.types[bi]):
        return None
    vals = folder.operand_values(ins, folder.types[bi][ii], facts)
    return None if vals is None else vals[0]


def fold_function(module: Module, fname: str, types: FunctionTypes) -> bool:
    func = module.functions[fname]
    folder = Folder(module, types)
    entries = forward_facts(func, folder.step, same_array)
    changed = False
    for bi, block in enumerate(func.blocks):
        entry = entries[bi]
        if entry is None:
            continue             # unreachable: dead-code elimination drops it
        facts = Facts(entry)
        out: list[Instr] = []
        for ii, ins in enumerate(block.instrs):
            new = _rewrite(module, folder, bi, ii, ins, facts)
            folder.step(bi, ii, ins, facts)
            if new is None:
                out.append(ins)
            else:
                out.extend(new)
                changed = True
        block.instrs = out
    return changed


def _rewrite(module: Module, folder: Folder, bi: int, ii: int, ins: Instr,
             facts: Facts) -> list[Instr] | None:
    """The instructions replacing `ins` (possibly none), or None to keep it."""
    if ins.op == "br":
        cond = _known_condition(ins, folder, bi, ii, facts)
        if cond is None:
            return None
        target = ins.attrs["if_true"] if bool(cond) else ins.attrs["if_false"]
        return [Instr("jmp", [], [], {"target": target}, None, ins.loc)]
    if ins.op == "assert":
        cond = _known_condition(ins, folder, bi, ii, facts)
        return [] if cond is not None and bool(np.all(cond)) else None
    if ins.op == "mov" and isinstance(ins.operands[0], Reg):
        # already a copy (copyprop reads through it); as a literal, CSE would turn it back into
        # this copy of the earlier identical literal, and the pipeline would never settle
        return None
    values = folder.evaluate(bi, ii, ins, facts)
    if values is None:
        return None
    t = folder.types[bi][ii]
    new: list[Instr] = []
    for r, v, rt in zip(ins.results, values, t.results):
        lit = literal_instr(module, ins, r, v, rt)
        if lit is None:
            return None
        new.append(lit)
    return new


def fold_constants(module: Module, table: dict | None = None) -> bool:
    """Fold every function of `module` in place; return whether anything changed.
    `table`: the module's verified types, where the caller has them."""
    table = table if table is not None else verify_module(module)
    changed = False
    for name in module.functions:
        changed |= fold_function(module, name, table[name])
    return changed
