"""The verifier: a module is valid when every name resolves, every instruction fits its op's
schema, and every register has one dtype and rank with shapes that agree.

Types flow forward over each function's control-flow graph to a fixed point: a register's dims
widen to unknown where paths that disagree meet, so loops terminate. Errors are raised only on the
final pass (over the fixed point), in program order, as InvalidError with the instruction's
location. The interpreter and the JIT may assume a verified module.

`verify_module` returns the inferred operand and result types of every instruction, which the
interpreter and the JIT use (immediates take their dtype from them).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .dtypes import BY_NAME, DType
from .errors import InvalidError, OpTypeError
from .module import ConstRef, Function, Imm, Instr, Module, Reg
from .ops import OPS, AttrKind, Family, OpDef
from .types import Dim, TensorType, join_dim, refine_dim, types_compatible

BOOL = BY_NAME["bool"]
_MAX_PASSES = 64


@dataclass
class InstrTypes:
    operands: list[TensorType]
    results: list[TensorType]


# FunctionTypes[block_index][instr_index]
FunctionTypes = list[list[InstrTypes]]


def verify_module(module: Module) -> dict[str, FunctionTypes]:
    """Check `module`; raise InvalidError on the first problem; return per-instruction types."""
    for c in module.constants.values():
        _check_constant(c)
    return {f.name: FunctionVerifier(module, f).run() for f in module.functions.values()}


def check_dims(t: TensorType, what: str, error) -> None:
    """Sizes are non-negative; dim names are identifiers."""
    for d in t.shape:
        if isinstance(d, int) and not isinstance(d, bool) and d < 0:
            raise error(f"type {t} of {what} has a negative dim")


def _check_constant(c) -> None:
    if not c.type.is_static:
        raise InvalidError(f"constant @{c.name} must have a static type, got {c.type}", c.loc)
    if c.value.dtype != c.type.dtype.np or tuple(c.value.shape) != c.type.shape:
        raise InvalidError(f"constant @{c.name} holds {c.value.dtype}{list(c.value.shape)}, "
                           f"not {c.type}", c.loc)


# ---- attribute schema ---------------------------------------------------------------------

def _attr_ok(kind: AttrKind, v: Any) -> bool:
    if kind is AttrKind.INT:
        return isinstance(v, int) and not isinstance(v, bool)
    if kind is AttrKind.INTS:
        return isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
    if kind is AttrKind.FLOAT:
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if kind is AttrKind.BOOL:
        return isinstance(v, bool)
    if kind is AttrKind.DTYPE:
        return isinstance(v, DType)
    if kind in (AttrKind.STR, AttrKind.LABEL, AttrKind.FUNC):
        return isinstance(v, str)
    if kind is AttrKind.SHAPE:
        return isinstance(v, list) and all(
            (isinstance(x, int) and not isinstance(x, bool)) or isinstance(x, str) for x in v)
    if kind is AttrKind.TYPE:
        return isinstance(v, TensorType)
    if kind is AttrKind.TENSOR:
        return isinstance(v, np.ndarray)
    return False


def check_attrs(op: OpDef, attrs: dict[str, Any]) -> dict[str, Any]:
    """Validate names and kinds of an instruction's attributes; return them with defaults."""
    for name, v in attrs.items():
        spec = op.attr(name)
        if spec is None:
            known = ", ".join(a.name for a in op.attrs) or "none"
            raise OpTypeError(f"{op.name} has no attribute '{name}' (it takes: {known})")
        if v is None and spec.default is None:
            continue           # an optional attribute explicitly left absent
        if not _attr_ok(spec.kind, v):
            article = "an" if spec.kind.value[0] in "aeiou" else "a"
            raise OpTypeError(f"{op.name} attribute '{name}' must be {article} {spec.kind.value}")
    for spec in op.attrs:
        if spec.required and spec.name not in attrs:
            raise OpTypeError(f"{op.name} needs the attribute '{spec.name}'")
    return op.with_defaults(attrs)


def imm_fits(value: Any, dtype: DType) -> bool:
    if dtype.is_bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if dtype.is_int:
        if not isinstance(value, int):
            return False
        lo, hi = dtype.int_range()
        return lo <= value <= hi
    if isinstance(value, int):      # an integer literal must be representable in the float type
        return abs(value) <= dtype.float_max()   # Python compares int/float exactly
    return isinstance(value, float)


# ---- per-function verification --------------------------------------------------------------

class _Env:
    """Register types on entry to (or exit from) a block, and which registers are surely set."""

    def __init__(self, types: dict[str, TensorType], must: set[str]):
        self.types = types
        self.must = must

    def copy(self) -> _Env:
        return _Env(dict(self.types), set(self.must))

    def same(self, other: _Env) -> bool:
        return self.types == other.types and self.must == other.must


def _join(envs: list[_Env]) -> _Env:
    types: dict[str, TensorType] = {}
    for e in envs:
        for r, t in e.types.items():
            old = types.get(r)
            if old is None:
                types[r] = t
            elif old.dtype == t.dtype and old.rank == t.rank:
                types[r] = old.with_shape(tuple(join_dim(a, b) for a, b in zip(old.shape, t.shape)))
    must = set.intersection(*(e.must for e in envs)) if envs else set()
    return _Env(types, must)


class FunctionVerifier:
    def __init__(self, module: Module, func: Function):
        self.module = module
        self.func = func
        self.dim_names = {d for p in func.params for d in p.type.shape if isinstance(d, str)}
        self.defined_anywhere = {p.name for p in func.params} | {
            r for b in func.blocks for i in b.instrs for r in i.results}

    def error(self, msg: str, bi: int | None = None, ii: int | None = None) -> InvalidError:
        f = self.func
        if bi is None:
            return InvalidError(msg, f.loc, context=f"in @{f.name}")
        b = f.blocks[bi]
        ins = b.instrs[ii] if ii is not None and ii < len(b.instrs) else None
        ctx = f"in @{f.name}, block {b.label}"
        if ins is not None:
            ctx += f", instruction {ii} ({ins.op})"
        loc = ins.loc if ins is not None and ins.loc else f.loc
        return InvalidError(msg, loc, context=ctx)

    def run(self) -> FunctionTypes:
        f = self.func
        if not f.blocks:
            raise self.error(f"@{f.name} has no instructions")
        names = [p.name for p in f.params]
        for i, n in enumerate(names):
            if n in names[:i]:
                raise self.error(f"parameter %{n} of @{f.name} is declared twice")
        for t in [p.type for p in f.params] + list(f.results):
            check_dims(t, f"@{f.name}", self.error)
        labels = [b.label for b in f.blocks]
        for i, lab in enumerate(labels):
            if lab in labels[:i]:
                raise self.error(f"label '{lab}' is defined twice", i, 0)
        for bi in range(len(f.blocks)):
            self.check_structure(bi)
        succs = [self.successors(b) for b in f.blocks]
        preds: list[list[int]] = [[] for _ in f.blocks]
        for bi, ss in enumerate(succs):
            for s in ss:
                preds[s].append(bi)
        entry = _Env({p.name: p.type for p in f.params}, {p.name for p in f.params})
        outs: list[_Env | None] = [None] * len(f.blocks)
        for _ in range(_MAX_PASSES):
            changed = False
            for bi in range(len(f.blocks)):
                env = self.block_entry(bi, entry, preds, outs)
                if env is None:
                    continue
                out = self.check_block(bi, env, None)
                if out is not None and (outs[bi] is None or not outs[bi].same(out)):
                    outs[bi], changed = out, True
            if not changed:
                break
        table: FunctionTypes = []
        # the final pass also holds every register to the dtype and rank of its first definition
        # in the function: paths that give it different ones would otherwise meet silently
        self.kinds = {p.name: (p.type.dtype, p.type.rank, "a parameter") for p in f.params}
        for bi in range(len(f.blocks)):
            env = self.block_entry(bi, entry, preds, outs)
            rows: list[InstrTypes] = []
            if env is not None:
                self.check_block(bi, env, rows)
            table.append(rows)
        return table

    @staticmethod
    def block_entry(bi: int, entry: _Env, preds, outs) -> _Env | None:
        if bi == 0:
            return _join([entry] + [outs[p] for p in preds[0] if outs[p] is not None])
        ins = [outs[p] for p in preds[bi] if outs[p] is not None]
        return _join(ins) if ins else None   # None: not reached (yet)

    def successors(self, block) -> list[int]:
        last = block.instrs[-1]
        labels = [b.label for b in self.func.blocks]
        if last.op == "jmp":
            return [labels.index(last.attrs["target"])]
        if last.op == "br":
            return [labels.index(last.attrs["if_true"]), labels.index(last.attrs["if_false"])]
        return []

    # -- structure: everything that does not need types -------------------------------------

    def check_structure(self, bi: int) -> None:
        b = self.func.blocks[bi]
        if not b.instrs:
            raise self.error(f"block '{b.label}' is empty; it must end in jmp, br or ret", bi)
        for ii, ins in enumerate(b.instrs):
            op = OPS.get(ins.op)
            if op is None:
                raise self.error(f"unknown op '{ins.op}'", bi, ii)
            last = ii == len(b.instrs) - 1
            if op.terminator and not last:
                raise self.error(f"{op.name} must end its block; code after it cannot run", bi, ii)
            if last and not op.terminator:
                raise self.error(f"block '{b.label}' must end in jmp, br or ret", bi, ii)
            lo, hi = op.arity
            n = len(ins.operands)
            if n < lo or (hi is not None and n > hi):
                raise self.error(f"{op.name} takes {op.arity_text}, got {n}", bi, ii)
            if op.n_results is not None and len(ins.results) != op.n_results:
                raise self.error(f"{op.name} gives {op.n_results} result"
                                 f"{'s' if op.n_results != 1 else ''}, "
                                 f"but {len(ins.results)} are assigned", bi, ii)
            if len(set(ins.results)) != len(ins.results):
                raise self.error("a register is assigned twice by one instruction", bi, ii)
            try:
                check_attrs(op, ins.attrs)
            except OpTypeError as e:
                raise self.error(str(e), bi, ii) from None
            for key in ("target", "if_true", "if_false"):
                if key in ins.attrs and op.attr(key) is not None and \
                        self.func.block(ins.attrs[key]) is None:
                    raise self.error(f"jump to an undefined label '{ins.attrs[key]}'", bi, ii)
            if op.name == "call" and ins.attrs["callee"] not in self.module.functions:
                raise self.error(f"call to an undefined function @{ins.attrs['callee']}", bi, ii)
            for o in ins.operands:
                if isinstance(o, ConstRef) and o.name not in self.module.constants:
                    raise self.error(f"@{o.name} is not a constant of this module", bi, ii)
                if isinstance(o, Reg) and o.name not in self.defined_anywhere:
                    raise self.error(f"%{o.name} is used but never defined", bi, ii)

    # -- types -----------------------------------------------------------------------------

    def check_block(self, bi: int, env_in: _Env, rows: list[InstrTypes] | None) -> _Env | None:
        """Infer types through block `bi`. With `rows` None this is a silent fixed-point pass
        (stops at the first problem); otherwise problems raise and types are recorded."""
        env = env_in.copy()
        for ii, ins in enumerate(self.func.blocks[bi].instrs):
            try:
                operand_types, result_types = self.infer(ins, env)
                for r, t in zip(ins.results, result_types):
                    old = env.types.get(r)
                    if old is not None and (old.dtype != t.dtype or old.rank != t.rank):
                        raise OpTypeError(f"%{r} holds {old.dtype} of rank {old.rank}; it cannot "
                                          f"be assigned {t.dtype} of rank {t.rank} (a register "
                                          f"keeps one dtype and rank)")
                    if rows is not None:
                        self.check_kind(r, t, ins)
                    env.types[r] = t
                    env.must.add(r)
            except OpTypeError as e:
                if rows is None:
                    return None
                raise self.error(str(e), bi, ii) from None
            if rows is not None:
                rows.append(InstrTypes(operand_types, result_types))
        return env

    def check_kind(self, r: str, t: TensorType, ins: Instr) -> None:
        first = self.kinds.get(r)
        if first is None:
            where = f"line {ins.loc.line}" if ins.loc else f"@{self.func.name}"
            self.kinds[r] = (t.dtype, t.rank, where)
        elif first[:2] != (t.dtype, t.rank):
            raise OpTypeError(f"%{r} holds {first[0]} of rank {first[1]} (from {first[2]}); it "
                              f"cannot be assigned {t.dtype} of rank {t.rank} (a register keeps "
                              f"one dtype and rank on every path)")

    def operand_type(self, o, env: _Env) -> TensorType | None:
        if isinstance(o, Reg):
            if o.name not in env.must:
                raise OpTypeError(f"%{o.name} may be used before it is defined")
            return env.types[o.name]
        if isinstance(o, ConstRef):
            return self.module.constants[o.name].type
        return None   # immediates are typed by their peers

    def infer(self, ins: Instr, env: _Env) -> tuple[list[TensorType], list[TensorType]]:
        op = OPS[ins.op]
        attrs = op.with_defaults(ins.attrs)
        types = [self.operand_type(o, env) for o in ins.operands]
        types = self.type_immediates(op, ins, types)
        if op.family is Family.CONTROL:
            results = self.infer_control(op, ins, types)
        else:
            if op.name == "const":
                self.check_dim_names(attrs["type"].shape)
                check_dims(attrs["type"], "a const", OpTypeError)
            for spec in op.attrs:
                if spec.kind is AttrKind.SHAPE and isinstance(attrs.get(spec.name), list):
                    self.check_dim_names(attrs[spec.name])
            results = list(op.infer(types, attrs))
        if ins.result_type is not None:
            check_dims(ins.result_type, "a result annotation", OpTypeError)
            if len(results) != 1:
                raise OpTypeError("a result type annotation needs exactly one result")
            declared, inferred = ins.result_type, results[0]
            if not types_compatible(declared, inferred):
                raise OpTypeError(f"declared result type {declared} differs from the inferred "
                                  f"{inferred}")
            results = [inferred.with_shape(tuple(
                refine_dim(d, i) for d, i in zip(declared.shape, inferred.shape)))]
        return types, results

    def check_dim_names(self, dims) -> None:
        for d in dims:
            if isinstance(d, str) and d not in self.dim_names:
                raise OpTypeError(f"dim {d} is not bound by the parameters of @{self.func.name}")

    def type_immediates(self, op: OpDef, ins: Instr, types: list) -> list[TensorType]:
        imms = [i for i, o in enumerate(ins.operands) if isinstance(o, Imm)]
        if not imms:
            return types
        fixed = op.extra.get("immediates", {})    # operand -> dtype, e.g. an index: i64
        if op.family is Family.BINARY:
            groups = [[0, 1]]
        elif op.family is Family.SELECT:
            groups = [[1, 2]]
        elif fixed and all(i in fixed for i in imms):
            groups = []
        else:
            where = f" (only as operand{'s' if len(fixed) > 1 else ''} " \
                f"{', '.join(str(k + 1) for k in fixed)})" if fixed else ""
            raise OpTypeError(f"{op.name} does not take immediate operands{where}")
        out = list(types)
        for i in imms:
            if i in fixed:
                peer = BY_NAME[fixed[i]]
            elif op.family is Family.SELECT and i == 0:
                peer = BOOL
            else:
                group = next(g for g in groups if i in g)
                peers = [types[j] for j in group if types[j] is not None]
                if not peers:
                    raise OpTypeError(f"{op.name} needs a register or constant operand to give "
                                      f"its immediates a dtype")
                peer = peers[0].dtype
            value = ins.operands[i].value
            if not imm_fits(value, peer):
                raise OpTypeError(f"immediate {ins.operands[i]} is not a valid {peer}")
            out[i] = TensorType(peer, ())
        return out

    def infer_control(self, op: OpDef, ins: Instr, types: list[TensorType]) -> list[TensorType]:
        f = self.func
        if op.name == "br":
            t = types[0]
            if t.dtype is not BOOL or t.rank != 0:
                raise OpTypeError(f"br needs a bool scalar condition, got {t}")
        elif op.name == "assert":
            if types[0].dtype is not BOOL:
                raise OpTypeError(f"assert needs a bool condition, got {types[0]}")
        elif op.name == "ret":
            if len(types) != len(f.results):
                raise OpTypeError(f"ret gives {len(types)} value{'s' if len(types) != 1 else ''}, "
                                  f"but @{f.name} returns {len(f.results)}")
            for k, (got, want) in enumerate(zip(types, f.results)):
                if not types_compatible(want, got):
                    raise OpTypeError(f"ret value {k} has type {got}, but @{f.name} returns {want}")
        elif op.name == "call":
            return self.infer_call(ins, types)
        return []

    def infer_call(self, ins: Instr, types: list[TensorType]) -> list[TensorType]:
        callee = self.module.functions[ins.attrs["callee"]]
        if len(types) != len(callee.params):
            raise OpTypeError(f"@{callee.name} takes {len(callee.params)} argument"
                              f"{'s' if len(callee.params) != 1 else ''}, got {len(types)}")
        if len(ins.results) != len(callee.results):
            raise OpTypeError(f"@{callee.name} returns {len(callee.results)} value"
                              f"{'s' if len(callee.results) != 1 else ''}, but "
                              f"{len(ins.results)} are assigned")
        bound: dict[str, Dim] = {}
        for p, t in zip(callee.params, types):
            if not types_compatible(p.type, t):
                raise OpTypeError(f"argument %{p.name} of @{callee.name} must be {p.type}, got {t}")
            for d, a in zip(p.type.shape, t.shape):
                if isinstance(d, str):
                    prev = bound.get(d)
                    if isinstance(prev, int) and isinstance(a, int) and prev != a:
                        raise OpTypeError(f"@{callee.name}: dim {d} would be {prev} and {a}")
                    bound[d] = a if d not in bound else (prev if prev == a else None)
        return [t.with_shape(tuple(bound.get(d) if isinstance(d, str) else d for d in t.shape))
                for t in callee.results]
