"""Algebraic simplification: rewrite an instruction into a cheaper one with the same value,
bit for bit (floats included: NaN, infinities and the sign of zero).

Rules (each exact; see specs/passes.md):
- identities of binary ops, from the op records (Facts.neutral): x*1, 1*x, x/1, x**1, x-0, integer x+0,
  float x+(-0.0), x|0, x^0, x&~0 -> x. Float x+0.0 is *not* x (-0.0 + 0.0 is +0.0). x*0 is never
  rewritten (NaN*0 and Inf*0 are NaN).
- involutions, from the op records (Facts.involution): neg(neg x), not(not x) -> x (also exact for wrapping
  integers: -(-MIN) wraps back to MIN).
- a cast to the operand's own dtype -> x.
- transpose(transpose(x, p), q) -> transpose(x, p∘q), or x when that is the identity; a
  transpose by the identity permutation -> x.
- reshape(reshape(x, s), t) -> reshape(x, t) (both keep row-major element order); reshape to
  x's own shape -> x.
- select with a known all-true / all-false condition -> the chosen operand; select(c, a, a) -> a.
- matmul of [..., M, 1] by [..., 1, N] (an outer product: one term per element) -> a * b, plus
  +0.0 for floats (the product's sum starts from +0.0, so a -0.0 product is +0.0; NaN and the
  infinities pass through): elementwise, it fuses with what produces and consumes it instead of
  a memory-bound GEMM call of its own (an mLSTM step's k v^T inside f * C + i * k v^T).
- conv2d (conv3d) of a zero `pad` of its spatial dims -> conv2d (conv3d) of the unpadded input
  with the pads added to its own (the reference pads with zeros the same way, so the padded
  array is the same); also through the expand_dims of a 1-D convolution (pad on the length,
  then expand_dims: the expand_dims moves before the pad, a new register). An explicit F.pad
  before a causal or "same" convolution otherwise costs a copy of the activations.

A rewrite to x happens only when the instruction's result is surely x's dtype and shape at run
time: every other operand must be broadcast-neutral (rank no larger, each dim 1 or the very
same dim as x), so dropping it cannot drop a broadcast, nor a broadcast that would trap.
The inner instruction of a composed pair is left in place (dead-code elimination removes it
when unused and unable to trap). Facts about which instruction defined a register come from a
forward must-analysis, so a register reassigned in between blocks the rule.
"""
from __future__ import annotations

import numpy as np

from isa.dtypes import DType
from isa.module import ConstRef, Imm, Instr, Module, Operand, Reg
from isa.ops import OPS, Family
from isa.ops.elementwise import RIGHT
from isa.types import Dim, TensorType
from isa.verify import FunctionTypes, InstrTypes, verify_module

from .cfg import Fact, Facts, forward_facts, kill
from .common import const_fill, instr_types_or_none, regs_of


def neutral(other: tuple[Dim, ...], x: tuple[Dim, ...]) -> bool:
    """Whether broadcasting a value of shape `other` against one of shape `x` surely gives x's
    shape: no larger rank, and each dim a literal 1 or the same (known) dim as x's."""
    if len(other) > len(x):
        return False
    return all(o == 1 or (o == d and o is not None) for o, d in zip(reversed(other), reversed(x)))


class Simplifier:
    def __init__(self, module: Module, types: FunctionTypes, taken: set[str] | None = None):
        self.module = module
        self.types = types
        self.taken = taken if taken is not None else set()    # register names in use

    # -- what is known about an operand --------------------------------------------------

    def fill_value(self, o: Operand, t: TensorType, facts: Facts) -> np.ndarray | None:
        """The single value every element of the operand has, when known (0-d array)."""
        if isinstance(o, Imm):
            return np.asarray(o.value, dtype=t.dtype.np)
        if isinstance(o, ConstRef):
            v = self.module.constants[o.name].value
            if v.size and np.full_like(v, v.reshape(-1)[0]).tobytes() == v.tobytes():
                return np.asarray(v.reshape(-1)[0])
            return None
        fact = facts.get(o.name)
        return const_fill(fact.value) if fact is not None else None

    @staticmethod
    def definition(o: Operand, facts: Facts) -> Instr | None:
        if not isinstance(o, Reg):
            return None
        fact = facts.get(o.name)
        return fact.value if fact is not None else None

    # -- the rules -----------------------------------------------------------------------

    def rewrite(self, ins: Instr, t: InstrTypes, facts: Facts) -> Instr | list[Instr] | None:
        op = OPS[ins.op]
        if op.family is Family.BINARY and op.facts.neutral is not None:
            return self.identity(ins, t, facts)
        if op.family is Family.UNARY and op.facts.involution:
            inner = self.definition(ins.operands[0], facts)
            if inner is not None and inner.op == ins.op:
                return self.copy_of(ins, inner.operands[0])
            return None
        if op.family is Family.CAST:
            same = ins.attrs["to"] == t.operands[0].dtype
            return self.copy_of(ins, ins.operands[0]) if same else None
        if op.family is Family.SELECT:
            return self.select(ins, t, facts)
        if ins.op == "transpose":
            return self.transpose(ins, t, facts)
        if ins.op == "reshape":
            return self.reshape(ins, t, facts)
        if ins.op == "conv2d":
            return self.conv_of_pad(ins, t, facts)
        if ins.op == "conv3d":
            return self.conv3d_of_pad(ins, facts)
        if ins.op in ("softmax", "log_softmax"):
            return self.softmax_last(ins, t)
        if ins.op == "matmul":
            return self.outer_product(ins, t)
        return None

    def outer_product(self, ins: Instr, t: InstrTypes) -> list[Instr] | None:
        """A matmul whose contracted dim is a literal 1 on both sides, as a broadcast multiply.
        Only where the batch dims surely broadcast (equal, or a literal 1 on one side): the
        rewrite must not turn a matmul's trap into a multiply's."""
        a, b = t.operands
        if a.rank < 2 or b.rank < 2 or a.shape[-1] != 1 or b.shape[-2] != 1:
            return None
        for x, y in zip(reversed(a.shape[:-2]), reversed(b.shape[:-2])):
            if not (x == 1 or y == 1 or (x == y and x is not None)):
                return None
        if a.dtype in (DType.F16, DType.BF16, DType.F32, DType.F64):
            product = self.fresh(ins.results[0] + ".outer")
            return [Instr("mul", [product], list(ins.operands), {}, None, ins.loc),
                    Instr("add", list(ins.results), [Reg(product), Imm(0.0)], {},
                          ins.result_type, ins.loc)]
        if not a.dtype.is_int:
            return None     # the narrow floats: some have no zero (f8e8m0fnu), so no "+ 0.0"
        return [Instr("mul", list(ins.results), list(ins.operands), {}, ins.result_type, ins.loc)]

    def softmax_last(self, ins: Instr, t: InstrTypes) -> list[Instr] | None:
        """A softmax over an axis that is not the last, as one over the last axis: compiled
        kernels reduce over trailing axes (a region with softmax over axis 1 of [B, T, 1], an
        attention's scores, kept a whole program off the native tier). With only unit dims
        after the axis a squeeze moves it (no copy); else transposes move it there and back."""
        x = t.operands[0]
        axis = ins.attrs.get("axis", -1)
        axis = axis + x.rank if axis < 0 else axis
        if x.rank < 2 or axis == x.rank - 1:
            return None
        name = self.fresh(ins.results[0] + ".last")
        done = self.fresh(ins.results[0] + ".sm")
        if all(d == 1 for d in x.shape[axis + 1:]):
            ones = list(range(axis + 1, x.rank))
            move = Instr("squeeze", [name], [ins.operands[0]], {"axes": ones}, None, ins.loc)
            undo = Instr("expand_dims", list(ins.results), [Reg(done)], {"axes": ones},
                         ins.result_type, ins.loc)
        else:
            perm = [d for d in range(x.rank) if d != axis] + [axis]
            inverse = [perm.index(d) for d in range(x.rank)]
            move = Instr("transpose", [name], [ins.operands[0]], {"perm": perm}, None, ins.loc)
            undo = Instr("transpose", list(ins.results), [Reg(done)], {"perm": inverse},
                         ins.result_type, ins.loc)
        attrs = dict(ins.attrs)
        attrs["axis"] = -1
        return [move, Instr(ins.op, [done], [Reg(name)], attrs, None, ins.loc), undo]

    def conv_of_pad(self, ins: Instr, t: InstrTypes, facts: Facts) -> Instr | list[Instr] | None:
        x = self.definition(ins.operands[0], facts)
        through = None                 # a 1-D convolution's expand_dims between pad and conv
        if x is not None and x.op == "expand_dims" and list(x.attrs["axes"]) == [2] \
                and t.operands[0].rank == 4:
            through, x = x, self.definition(x.operands[0], facts)
        if x is None or x.op != "pad" or not isinstance(x.operands[0], Reg):
            return None
        value = float(x.attrs.get("value", 0.0))
        pads = list(x.attrs["pads"])
        rank = len(pads) // 2
        if value != 0.0 or np.signbit(value) or min(pads) < 0 or rank != (3 if through else 4):
            return None
        begins, ends = pads[:rank], pads[rank:]
        if any(begins[:2]) or any(ends[:2]):
            return None                # batch or channel padding is not the convolution's
        h = (begins[2], ends[2]) if not through else (0, 0)
        w = (begins[-1], ends[-1])
        attrs = OPS["conv2d"].with_defaults(ins.attrs)
        old = list(attrs["pads"])
        attrs["pads"] = [old[0] + h[0], old[1] + w[0], old[2] + h[1], old[3] + w[1]]
        if through is None:
            return Instr("conv2d", list(ins.results), [x.operands[0], *ins.operands[1:]], attrs,
                         ins.result_type, ins.loc)
        name = self.fresh(ins.results[0] + ".unpadded")
        lifted = Instr("expand_dims", [name], [x.operands[0]], dict(through.attrs), None,
                       through.loc)
        return [lifted, Instr("conv2d", list(ins.results), [Reg(name), *ins.operands[1:]], attrs,
                              ins.result_type, ins.loc)]

    def conv3d_of_pad(self, ins: Instr, facts: Facts) -> Instr | None:
        """conv3d of a zero pad of its spatial dims (a 3-D transposed convolution's) -> conv3d
        of the unpadded input with the pads added: the library pads as it reads."""
        x = self.definition(ins.operands[0], facts)
        if x is None or x.op != "pad" or not isinstance(x.operands[0], Reg):
            return None
        value = float(x.attrs.get("value", 0.0))
        pads = list(x.attrs["pads"])
        if value != 0.0 or np.signbit(value) or min(pads) < 0 or len(pads) != 10 or \
                any(pads[:2]) or any(pads[5:7]):
            return None
        attrs = OPS["conv3d"].with_defaults(ins.attrs)
        old = list(attrs["pads"])
        attrs["pads"] = [old[i] + pads[2 + i] for i in range(3)] + \
                        [old[3 + i] + pads[7 + i] for i in range(3)]
        return Instr("conv3d", list(ins.results), [x.operands[0], *ins.operands[1:]], attrs,
                     ins.result_type, ins.loc)

    def fresh(self, stem: str) -> str:
        name, n = stem, 0
        while name in self.taken:
            n += 1
            name = f"{stem}{n}"
        self.taken.add(name)
        return name

    @staticmethod
    def copy_of(ins: Instr, src: Operand) -> Instr | None:
        if isinstance(src, Imm):
            return None          # mov takes no immediates
        return Instr("mov", list(ins.results), [src], {}, ins.result_type, ins.loc)

    def identity(self, ins: Instr, t: InstrTypes, facts: Facts) -> Instr | None:
        sides, unit = OPS[ins.op].facts.neutral
        dtype = t.operands[0].dtype
        want = np.asarray(unit(dtype), dtype=dtype.np).tobytes()
        for side in sides:
            k = 1 if side == RIGHT else 0          # the operand that must be the neutral element
            x, c = ins.operands[1 - k], ins.operands[k]
            v = self.fill_value(c, t.operands[k], facts)
            if v is None or v.astype(dtype.np).tobytes() != want:
                continue
            if neutral(t.operands[k].shape, t.operands[1 - k].shape):
                return self.copy_of(ins, x)
        return None

    def select(self, ins: Instr, t: InstrTypes, facts: Facts) -> Instr | None:
        c, a, b = ins.operands
        if a == b and not isinstance(a, Imm):
            pick = 1
        else:
            v = self.fill_value(c, t.operands[0], facts)
            if v is None:
                return None
            pick = 1 if bool(v) else 2
        shape = t.operands[pick].shape
        if all(neutral(t.operands[k].shape, shape) for k in range(3) if k != pick):
            return self.copy_of(ins, ins.operands[pick])
        return None

    def transpose(self, ins: Instr, t: InstrTypes, facts: Facts) -> Instr | None:
        rank = t.operands[0].rank
        outer = _perm(ins.attrs.get("perm"), rank)
        inner_ins = self.definition(ins.operands[0], facts)
        src = ins.operands[0]
        perm = outer
        if inner_ins is not None and inner_ins.op == "transpose":
            inner = _perm(inner_ins.attrs.get("perm"), rank)
            perm = [inner[p] for p in outer]       # r[i] = t[outer[i]] = x[inner[outer[i]]]
            src = inner_ins.operands[0]
        if perm == list(range(rank)):
            return self.copy_of(ins, src)
        if src is ins.operands[0]:
            return None
        return Instr("transpose", list(ins.results), [src], {"perm": perm}, ins.result_type, ins.loc)

    def reshape(self, ins: Instr, t: InstrTypes, facts: Facts) -> Instr | None:
        target = list(ins.attrs["shape"])
        if -1 not in target and tuple(target) == t.operands[0].shape:
            return self.copy_of(ins, ins.operands[0])
        inner = self.definition(ins.operands[0], facts)
        if inner is not None and inner.op == "reshape":
            return Instr("reshape", list(ins.results), [inner.operands[0]], dict(ins.attrs),
                         ins.result_type, ins.loc)
        return None


def _perm(perm: list[int] | None, rank: int) -> list[int]:
    return list(range(rank - 1, -1, -1)) if perm is None else list(perm)


def _step(bi: int, ii: int, ins: Instr, facts: Facts) -> None:
    kill(facts, ins.results)
    if len(ins.results) == 1 and not (set(ins.results) & regs_of(ins)):
        # "%r was computed by this instruction": true until %r or an operand is reassigned
        facts[ins.results[0]] = Fact(ins, frozenset(regs_of(ins) | set(ins.results)))


def simplify_function(module: Module, fname: str, types: FunctionTypes) -> bool:
    func = module.functions[fname]
    taken = {p.name for p in func.params}
    for block in func.blocks:
        for ins in block.instrs:
            taken.update(ins.results)
    simp = Simplifier(module, types, taken)
    entries = forward_facts(func, _step, lambda a, b: a is b)
    changed = False
    for bi, block in enumerate(func.blocks):
        if entries[bi] is None:
            continue
        facts = Facts(entries[bi])
        out: list[Instr] = []
        for ii, ins in enumerate(block.instrs):
            t = instr_types_or_none(types, bi, ii)
            new = simp.rewrite(ins, t, facts) if t is not None else None
            _step(bi, ii, ins, facts)
            if new is None or new == ins:
                out.append(ins)
                continue
            out.extend(new if isinstance(new, list) else [new])
            changed = True
        block.instrs = out
    return changed


def simplify(module: Module, table: dict | None = None) -> bool:
    """Apply the algebraic rules to every function in place; return whether anything changed.
    `table`: the module's verified types, where the caller has them."""
    table = table if table is not None else verify_module(module)
    changed = False
    for name in module.functions:
        changed |= simplify_function(module, name, table[name])
    return changed
