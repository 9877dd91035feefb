"""Reverse-mode autodiff as a module transform: adjoint code generation.

For a function F and the set of its results that receive a cotangent (the *mask*), each tree of
F's control flow (see cfg.py) becomes one adjoint function: it takes the registers live into the
tree's head plus the cotangents of F's masked results, runs the tree's forward code (renamed to
SSA: no two paths meet inside a tree), and at each way out of the tree
  - `ret`: seeds the returned values with the incoming cotangents,
  - an edge into another head: calls that head's adjoint function, which returns F's results
    and the cotangents of the head's live-in registers,
then runs the adjoint of the path it took, instruction by instruction in reverse (each op's rule
from its record in the op table), and returns F's results, the cotangents of its own live-in
registers and of the module constants being differentiated. A loop therefore becomes a chain of
calls, one per iteration: the call stack holds each iteration's values (the tape), so memory is
one frame of live values per iteration and the VM's call-depth limit bounds the trip count
(`VM(max_call_depth=...)`; see specs/autodiff.md).

A `call` in F is run forward as it is; its adjoint calls the callee's own adjoint function
(generated once per callee and mask), which recomputes the callee's forward values.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..callgraph import constants_read, draws_random, unused_name
from ..dtypes import BY_NAME, DType
from ..errors import InvalidError, OpTypeError
from ..module import Block, ConstRef, Function, Imm, Instr, Module, Operand, Param, Reg
from ..ops import OPS
from ..ops.opdef import NOT_DIFFERENTIABLE
from ..ops.shapes import is_float
from ..types import TensorType, join_dim
from ..verify import FunctionTypes
from .cfg import Tree, successors, trees
from .emitter import Emitter, GradError, NameGen


def _is_float(t: TensorType | DType) -> bool:
    return is_float(t.dtype if isinstance(t, TensorType) else t)


def register_types(func: Function, table: FunctionTypes) -> dict[str, TensorType]:
    """Each register's type over the whole function: its definitions' types joined."""
    out: dict[str, TensorType] = {p.name: p.type for p in func.params}
    for b, rows in zip(func.blocks, table):
        for ins, row in zip(b.instrs, rows):
            for r, t in zip(ins.results, row.results):
                old = out.get(r)
                out[r] = t if old is None else old.with_shape(
                    tuple(join_dim(x, y) for x, y in zip(old.shape, t.shape)))
    return out


def varied_registers(func: Function, varied_params: set[str], wrt_consts: set[str],
                     const_users: dict[str, set[str]]) -> set[str]:
    """Registers that may depend on a differentiated input (flow-insensitive, so safe)."""
    varied = set(varied_params)
    changed = True
    while changed:
        changed = False
        for b in func.blocks:
            for ins in b.instrs:
                if not ins.results or set(ins.results) <= varied:
                    continue
                hit = any((isinstance(o, Reg) and o.name in varied) or
                          (isinstance(o, ConstRef) and o.name in wrt_consts)
                          for o in ins.operands)
                if ins.op == "call" and const_users.get(ins.attrs["callee"]):
                    hit = True
                if hit:
                    varied.update(ins.results)
                    changed = True
    return varied


def useful_registers(func: Function, mask: tuple[int, ...]) -> set[str]:
    """Registers that may flow into a result that gets a cotangent (flow-insensitive): the
    others need none, and a cotangent of zeros sent back through them could only turn into NaN
    (0 * inf) on the way."""
    useful: set[str] = set()
    for b in func.blocks:
        for ins in b.instrs:
            if ins.op == "ret":
                useful.update(o.name for i, o in enumerate(ins.operands)
                              if i in mask and isinstance(o, Reg))
    changed = True
    while changed:
        changed = False
        for b in func.blocks:
            for ins in b.instrs:
                if any(r in useful for r in ins.results):
                    new = {o.name for o in ins.operands if isinstance(o, Reg)} - useful
                    if new:
                        useful |= new
                        changed = True
    return useful


def _sanitize(t: TensorType, bound: set[str]) -> TensorType:
    return t.with_shape(tuple(d if not isinstance(d, str) or d in bound else None
                              for d in t.shape))


@dataclass
class Variant:
    """One adjoint of a function: which results get cotangents, which parameters vary."""
    func: Function
    mask: tuple[int, ...]
    varied_params: frozenset[str]
    tag: str
    types: dict[str, TensorType] = field(default_factory=dict)
    varied: set[str] = field(default_factory=set)
    trees: dict[str, Tree] = field(default_factory=dict)
    consts: list[str] = field(default_factory=list)       # differentiated constants it returns
    names: dict[str, str] = field(default_factory=dict)   # head -> adjoint function name

    def seed(self, i: int) -> str:
        """The parameter holding the cotangent of result i (a name no register of F has)."""
        return unused_name(self.types, f"ct.{i}", "_")

    def ct_live_in(self, head: str) -> list[str]:
        return [r for r in self.trees[head].live_in
                if r in self.varied and _is_float(self.types[r])]


class ReverseBuilder:
    def __init__(self, module: Module, tables: dict[str, FunctionTypes], wrt_consts: set[str]):
        self.module = module
        self.tables = tables
        self.wrt_consts = wrt_consts
        self.const_users = constants_read(module, wrt_consts)
        self.variants: dict[tuple, Variant] = {}
        self.pending: list[tuple[Variant, str]] = []
        self.taken_names = set(module.functions)

    # -- naming and bookkeeping ----------------------------------------------------------------
    def fresh_function_name(self, base: str) -> str:
        name = unused_name(self.taken_names, base)
        self.taken_names.add(name)
        return name

    def variant(self, fname: str, mask: tuple[int, ...], varied_params: frozenset[str]) -> Variant:
        key = (fname, mask, varied_params)
        v = self.variants.get(key)
        if v is not None:
            return v
        func = self.module.functions[fname]
        v = Variant(func, mask, varied_params, tag=f"{fname}.vjp")
        v.types = register_types(func, self.tables[fname])
        v.varied = varied_registers(func, set(varied_params), self.wrt_consts,
                                    self.const_users) & useful_registers(func, mask)
        v.trees = trees(func)
        v.consts = sorted(self.const_users[fname])
        base = self.fresh_function_name(f"{fname}.vjp")
        for head in v.trees:
            v.names[head] = base if head == func.blocks[0].label else \
                self.fresh_function_name(f"{base}.{head}")
        self.variants[key] = v
        for head in v.trees:
            self.pending.append((v, head))
        return v

    def entry_name(self, v: Variant) -> str:
        return v.names[v.func.blocks[0].label]

    def run(self) -> None:
        while self.pending:
            v, head = self.pending.pop(0)
            fn = TreeAdjoint(self, v, head).build()
            self.module.functions[fn.name] = fn

    def signature(self, v: Variant, head: str) -> tuple[list[Param], list[TensorType]]:
        """The adjoint function of `head`: (live-ins, result cotangents) -> (F's results,
        live-in cotangents, constant cotangents)."""
        params = [Param(r, v.types[r]) for r in v.trees[head].live_in]
        bound = {d for p in params for d in p.type.shape if isinstance(d, str)}
        params += [Param(v.seed(i), _sanitize(v.func.results[i], bound)) for i in v.mask]
        bound |= {d for p in params for d in p.type.shape if isinstance(d, str)}
        results = [_sanitize(t, bound) for t in v.func.results]
        results += [_sanitize(v.types[r], bound) for r in v.ct_live_in(head)]
        results += [self.module.constants[c].type for c in v.consts]
        return params, results


class TreeAdjoint:
    """Writes the adjoint function of one tree of one variant."""

    def __init__(self, rb: ReverseBuilder, v: Variant, head: str):
        self.rb, self.v, self.head = rb, v, head
        self.module = rb.module
        self.tree = v.trees[head]
        self.params, self.results = rb.signature(v, head)
        taken = set(v.types) | {p.name for p in self.params}
        self.names = NameGen(taken)
        self.types: dict[str, TensorType] = {p.name: p.type for p in self.params}
        self.bound = {d for p in self.params for d in p.type.shape if isinstance(d, str)}
        self.orig: dict[str, str] = {p.name: p.name for p in self.params}   # ssa -> register
        self.labels = {lab for lab in (b.label for b in v.func.blocks)}
        self.blocks: list[Block] = []
        self.by_label = {b.label: (bi, b) for bi, b in enumerate(v.func.blocks)}

    def build(self) -> Function:
        env = {r: Reg(r) for r in self.tree.live_in}
        self.walk(self.head, env, [])
        name = self.v.names[self.head]
        return Function(name, self.params, self.results, self.blocks, loc=self.v.func.loc)

    # -- forward: the tree in SSA form ---------------------------------------------------------
    def rename(self, o: Operand, env: dict[str, Reg]) -> Operand:
        return env[o.name] if isinstance(o, Reg) else o

    def walk(self, label: str, env: dict[str, Reg], path: list[tuple[Instr, Instr]]) -> None:
        bi, block = self.by_label[label]
        rows = self.rb.tables[self.v.func.name][bi]
        out = Block(label)
        self.blocks.append(out)
        env = dict(env)
        path = list(path)
        for ii, ins in enumerate(block.instrs):
            if OPS[ins.op].terminator:
                self.terminate(out, ins, env, path)
                return
            new = Instr(ins.op, [], [self.rename(o, env) for o in ins.operands], dict(ins.attrs),
                        ins.result_type, ins.loc)
            for r, t in zip(ins.results, rows[ii].results):
                s = self.names.fresh(r)
                self.types[s] = t
                self.orig[s] = r
                env[r] = Reg(s)
                new.results.append(s)
            out.instrs.append(new)
            path.append((ins, new))

    def terminate(self, out: Block, ins: Instr, env: dict[str, Reg], path) -> None:
        if ins.op == "ret":
            values = [self.rename(o, env) for o in ins.operands]
            self.leaf_ret(out, values, path)
            return
        targets = successors(Block("", [ins]))
        new_targets = []
        for t in targets:
            if t in self.tree.blocks and t != self.head:
                self.walk(t, env, path)
                new_targets.append(t)
            elif ins.op == "jmp":
                self.leaf_edge(out, t, env, path)
                return
            else:
                edge = Block(self.fresh_label(f"{out.label}.to.{t}"))
                self.blocks.append(edge)
                self.leaf_edge(edge, t, env, path)
                new_targets.append(edge.label)
        if ins.op == "jmp":
            out.instrs.append(Instr("jmp", [], [], {"target": new_targets[0]}, loc=ins.loc))
        else:
            out.instrs.append(Instr("br", [], [self.rename(ins.operands[0], env)],
                                    {"if_true": new_targets[0], "if_false": new_targets[1]},
                                    loc=ins.loc))

    def fresh_label(self, base: str) -> str:
        lab = unused_name(self.labels, base, ".")
        self.labels.add(lab)
        return lab

    # -- the ways out of the tree ----------------------------------------------------------------
    def emitter(self) -> Emitter:
        return Emitter(self.module, self.names, self.types, self.bound)

    def leaf_ret(self, out: Block, values: list[Operand], path) -> None:
        g = self.emitter()
        adj = Adjoints(self, g)
        for i in self.v.mask:
            adj.add(values[i], Reg(self.v.seed(i)))
        self.finish(out, g, adj, values, path)

    def leaf_edge(self, out: Block, target: str, env: dict[str, Reg], path) -> None:
        g = self.emitter()
        adj = Adjoints(self, g)
        n_res = len(self.v.func.results)
        _, callee_results = self.rb.signature(self.v, target)
        live = self.v.trees[target].live_in
        args = [env[r] for r in live] + [Reg(self.v.seed(i)) for i in self.v.mask]
        params, _ = self.rb.signature(self.v, target)
        rets = g.call_function(self.v.names[target], args, callee_results,
                               [p.type for p in params])
        for r, ct in zip(self.v.ct_live_in(target), rets[n_res:]):
            adj.add(env[r], ct)
        for c, ct in zip(self.v.consts, rets[n_res + len(self.v.ct_live_in(target)):]):
            adj.add(ConstRef(c), ct)
        self.finish(out, g, adj, rets[:n_res], path)

    def finish(self, out: Block, g: Emitter, adj: Adjoints, values: list[Operand], path) -> None:
        for orig, new in reversed(path):
            adj.through(orig, new)
        rets: list[Operand] = list(values)
        for r in self.v.ct_live_in(self.head):
            rets.append(adj.get(Reg(r)) or g.zeros_like(Reg(r)))
        for c in self.v.consts:
            rets.append(adj.get(ConstRef(c)) or g.zeros_like(ConstRef(c)))
        g.instrs.append(Instr("ret", [], rets))
        out.instrs.extend(dead_code_removed(g.instrs))


class Adjoints:
    """The cotangents accumulated so far along one path, and the rules that propagate them."""

    def __init__(self, ta: TreeAdjoint, g: Emitter):
        self.ta, self.g = ta, g
        self.regs: dict[str, Operand] = {}
        self.consts: dict[str, Operand] = {}

    def active(self, o: Operand) -> bool:
        if isinstance(o, Reg):
            orig = self.ta.orig.get(o.name, o.name)
            return orig in self.ta.v.varied and _is_float(self.g.type(o))
        return isinstance(o, ConstRef) and o.name in self.ta.rb.wrt_consts

    def get(self, o: Operand) -> Operand | None:
        if isinstance(o, Reg):
            return self.regs.get(o.name)
        if isinstance(o, ConstRef):
            return self.consts.get(o.name)
        return None

    def add(self, o: Operand, ct: Operand) -> None:
        if not self.active(o):
            return
        ct = self.g.sum_to(ct, self.g.type(o), like=o)
        store = self.regs if isinstance(o, Reg) else self.consts
        old = store.get(o.name)
        store[o.name] = ct if old is None else self.g.add(old, ct)

    def through(self, orig: Instr, ins: Instr) -> None:
        """Propagate the results' cotangents to the operands of one forward instruction."""
        cts = [self.regs.get(r) for r in ins.results]
        if all(c is None for c in cts):
            return
        if ins.op == "call":      # a callee may read differentiated constants itself
            if any(self.active(o) for o in ins.operands) or \
                    self.ta.rb.const_users[ins.attrs["callee"]]:
                self.through_call(ins, cts)
            return
        if not any(self.active(o) for o in ins.operands):
            return
        op = OPS[ins.op]
        if op.vjp is None or op.vjp is NOT_DIFFERENTIABLE:
            raise GradError(f"{ins.op} is not differentiable in this version (no adjoint rule): "
                            f"it lies between the differentiated inputs and the result",
                            ins.loc, context=f"in @{self.ta.v.func.name}")
        attrs = op.with_defaults(ins.attrs)
        ys = [Reg(r) for r in ins.results]
        # an index given as a literal (gather %v, 0) becomes a typed register the rule can use
        fixed = op.extra.get("immediates", {})
        xs = [self.g.scalar(o.value, BY_NAME[fixed[i]]) if isinstance(o, Imm) and i in fixed
              else o for i, o in enumerate(ins.operands)]
        try:
            if len(ys) == 1:
                got = op.vjp(self.g, attrs, xs, ys[0], cts[0])
            else:
                got = op.vjp(self.g, attrs, xs, ys, cts)
        except (InvalidError, OpTypeError) as e:
            raise GradError(getattr(e, "message", str(e)), ins.loc,
                            context=f"in @{self.ta.v.func.name}, differentiating {ins.op}") from e
        for o, ct in zip(ins.operands, got):
            if ct is not None and not isinstance(o, Imm):
                self.add(o, ct)

    def through_call(self, ins: Instr, cts: list[Operand | None]) -> None:
        rb = self.ta.rb
        callee = rb.module.functions[ins.attrs["callee"]]
        if draws_random(rb.module, callee.name):
            # the adjoint reruns the callee's forward code, which would draw other numbers
            # (another dropout mask) than the forward run did
            raise GradError(f"@{callee.name} draws random numbers, and the adjoint of a call "
                            f"recomputes its callee: inline it into @{self.ta.v.func.name} "
                            f"(isa.inline.inline_calls) to differentiate it", ins.loc,
                            context=f"in @{self.ta.v.func.name}")
        mask = tuple(i for i, c in enumerate(cts) if c is not None)
        varied = frozenset(p.name for p in callee.params if _is_float(p.type))
        v = rb.variant(callee.name, mask, varied)
        head = callee.blocks[0].label
        params, results = rb.signature(v, head)
        by_param = dict(zip((p.name for p in callee.params), ins.operands))
        args = [by_param[r] for r in v.trees[head].live_in] + [cts[i] for i in mask]
        rets = self.g.call_function(v.names[head], args, results, [p.type for p in params])
        n_res = len(callee.results)
        live_ct = v.ct_live_in(head)
        for r, ct in zip(live_ct, rets[n_res:]):
            self.add(by_param[r], ct)
        for c, ct in zip(v.consts, rets[n_res + len(live_ct):]):
            self.add(ConstRef(c), ct)


def dead_code_removed(instrs: list[Instr]) -> list[Instr]:
    """Drop generated instructions whose results nothing reads (rules compute what an operand
    might need; the transform keeps only what reaches a returned cotangent)."""
    live: set[str] = set()
    kept: list[Instr] = []
    for ins in reversed(instrs):
        if ins.results and not any(r in live for r in ins.results):
            continue
        kept.append(ins)
        live.update(o.name for o in ins.operands if isinstance(o, Reg))
    return list(reversed(kept))
