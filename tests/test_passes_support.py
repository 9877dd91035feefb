"""Helpers for the optimizer tests: run a module before and after a pass and compare bit for bit
(traps included), a tiny tracing evaluator for the memory-plan checks, and a generator of random
straight-line and branching programs. Its own tests check the evaluator against the VM."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import dlvmrt
from isa.builder import ModuleBuilder
from isa.errors import Trap
from isa.module import ConstRef, Imm, Module, Reg
from isa.ops import OPS
from isa.verify import verify_module


def run_vm(module: Module, *args, entry: str = "main", **named):
    """The results as a tuple, or ("trap", message) when the program traps."""
    try:
        return dlvmrt.VM(module, jit="off").run(entry, *args, **named)
    except Trap as e:
        return ("trap", e.message)


def _trapped(outcome) -> bool:
    return isinstance(outcome[0], str) and outcome[0] == "trap"


def same_outcome(a, b) -> bool:
    if _trapped(a) or _trapped(b):
        return _trapped(a) and _trapped(b)
    return len(a) == len(b) and all(
        x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes() for x, y in zip(a, b))


def ops_of(module: Module, func: str = "main") -> list[str]:
    return [ins.op for b in module.functions[func].blocks for ins in b.instrs]


def count_instrs(module: Module) -> int:
    return sum(len(b.instrs) for f in module.functions.values() for b in f.blocks)


# ---- a tracing evaluator -------------------------------------------------------------------

@dataclass
class Instance:
    """One dynamic value of the traced function: which static value wrote it, and when."""
    value: tuple[int, int, int]       # (block index, instruction index, result index)
    written: int
    last_read: int
    reads: list[int] = field(default_factory=list)


class Tracer:
    """Runs a function with the op references, recording when each value is written and read
    (a step is one instruction). Calls run untraced, through the same evaluator."""

    def __init__(self, module: Module):
        self.module = module
        self.types = verify_module(module)
        self.instances: list[Instance] = []

    def run(self, fname: str, args: list[np.ndarray], trace: bool = True) -> list[np.ndarray]:
        func = self.module.functions[fname]
        types = self.types[fname]
        regs: dict[str, tuple[np.ndarray, Instance | None]] = {}
        bindings: dict[str, int] = {}
        for p, a in zip(func.params, args):
            regs[p.name] = (a, None)
            for d, n in zip(p.type.shape, a.shape):
                if isinstance(d, str):
                    bindings[d] = n
        labels = {b.label: i for i, b in enumerate(func.blocks)}
        bi, step = 0, 0
        while True:
            block = func.blocks[bi]
            for ii, ins in enumerate(block.instrs):
                step += 1
                t = types[bi][ii]
                vals = []
                for o, ot in zip(ins.operands, t.operands):
                    if isinstance(o, Reg):
                        v, inst = regs[o.name]
                        if inst is not None and trace:
                            inst.last_read = step
                        vals.append(v)
                    elif isinstance(o, ConstRef):
                        vals.append(self.module.constants[o.name].value)
                    else:
                        assert isinstance(o, Imm)
                        vals.append(np.asarray(o.value, dtype=ot.dtype.np))
                if ins.op == "ret":
                    return vals
                if ins.op == "jmp":
                    bi = labels[ins.attrs["target"]]
                    break
                if ins.op == "br":
                    bi = labels[ins.attrs["if_true" if bool(vals[0]) else "if_false"]]
                    break
                if ins.op == "assert":
                    if not np.all(vals[0]):
                        raise Trap(ins.attrs["message"])
                    continue
                if ins.op == "call":
                    outs = self.run(ins.attrs["callee"], vals, trace=False)
                elif ins.op == "const":
                    outs = [OPS["const"].reference(ins.attrs, bindings)]
                else:
                    op = OPS[ins.op]
                    attrs = op.with_defaults(ins.attrs)
                    if "shape" in attrs and isinstance(attrs["shape"], list):
                        attrs["shape"] = [bindings.get(d, d) for d in attrs["shape"]]
                    with np.errstate(all="ignore"):
                        out = op.reference(attrs, *vals)
                    outs = list(out) if isinstance(out, tuple) else [out]
                for k, (r, v) in enumerate(zip(ins.results, outs)):
                    inst = Instance((bi, ii, k), step, step) if trace else None
                    if inst is not None:
                        self.instances.append(inst)
                    regs[r] = (np.asarray(v), inst)


# ---- random programs -----------------------------------------------------------------------

_UNARY = ["neg", "abs", "exp", "tanh", "relu", "sqrt"]
_BINARY = ["add", "sub", "mul", "div", "max", "min"]


def random_program(seed: int) -> tuple[Module, list[np.ndarray]]:
    """A random f32 program over one input x: f32[N] with constants, immediates (0, -0.0, 1,
    2.5), identities, repeats (for CSE), reassignment and an optional branch on a constant."""
    rng = np.random.default_rng(seed)
    mb = ModuleBuilder(f"rand{seed}")
    wc = mb.constant("w", rng.standard_normal(4).astype(np.float32))
    f = mb.function("main", [("x", "f32[4]")], ["f32[4]", "f32[]"])
    pool = [f.arg("x"), wc, f.const(float(rng.integers(-2, 3)), "f32[4]"),
            f.const(rng.standard_normal(4).astype(np.float32), "f32[4]")]
    imms = [0.0, -0.0, 1.0, 2.5]
    for _ in range(int(rng.integers(4, 12))):
        kind = rng.integers(0, 5)
        a = pool[int(rng.integers(0, len(pool)))]
        into = f"v{int(rng.integers(0, 3))}" if rng.random() < 0.3 else None
        if kind == 0:
            r = f.emit(_UNARY[int(rng.integers(0, len(_UNARY)))], [a], results=[into] if into else None)
        elif kind in (1, 2):
            b = imms[int(rng.integers(0, 4))] if kind == 2 else pool[int(rng.integers(0, len(pool)))]
            ops = [a, b] if rng.random() < 0.5 or kind == 1 else [b, a]
            if all(not isinstance(o, Reg) and not isinstance(o, ConstRef) for o in ops):
                ops = [a, b]
            r = f.emit(_BINARY[int(rng.integers(0, len(_BINARY)))], ops,
                       results=[into] if into else None)
        elif kind == 3:
            r = f.neg(f.neg(a))
        else:
            c = f.gt(a, 0.0)
            r = f.select(c, a, pool[int(rng.integers(0, len(pool)))])
        pool.append(r)
    last = pool[-1]
    if not isinstance(last, Reg):
        last = f.mov(last, into="last")
    total = f.reduce_sum(last)
    if rng.random() < 0.5:
        flag = f.const(bool(rng.random() < 0.5), "bool[]")
        f.br(flag, "yes", "no")
        f.label("yes")
        f.ret(last, total)
        f.label("no")
        f.ret(f.neg(last), total)
    else:
        f.ret(last, total)
    x = rng.standard_normal(4).astype(np.float32)
    x[int(rng.integers(0, 4))] = -0.0
    return mb.finish(), [x]


def test_tracer_matches_vm():
    for seed in range(10):
        m, args = random_program(seed)
        want = run_vm(m, *args)
        got = Tracer(m).run("main", list(args))
        assert same_outcome(tuple(np.asarray(g) for g in got), want)


def test_same_outcome_is_bit_exact():
    a = (np.array([0.0], np.float32),)
    b = (np.array([-0.0], np.float32),)
    assert not same_outcome(a, b)
    assert same_outcome(("trap", "x"), ("trap", "y"))
    assert not same_outcome(("trap", "x"), a)
