"""A random-program generator for differential testing: the JIT against the interpreter.

Each program is `.dlasm` text with inputs. It draws from every op family the JIT compiles:
elementwise unary and binary ops with NumPy broadcasting (size-1 and size-0 dims included),
comparisons and select, casts (float to int too: they saturate alike in every tier),
reductions over any axes with and without keepdims, softmax and layer_norm, products (batched,
K = 0), transposes, and a counted loop around a body of them. Values include NaN, infinities
and zeros (integer division by zero traps in both tiers alike).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

FLOAT_UNARY = ["neg", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "gelu", "erf",
               "sin", "cos", "floor", "ceil", "round", "sign", "reciprocal", "rsqrt"]
INT_UNARY = ["neg", "abs", "sign", "relu"]
FLOAT_BINARY = ["add", "sub", "mul", "div", "max", "min", "pow", "mod"]
INT_BINARY = ["add", "sub", "mul", "max", "min", "div", "mod"]
COMPARE = ["eq", "ne", "lt", "le", "gt", "ge"]
REDUCE = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"]
FLOATS = ["f32", "f64"]
INTS = ["i32", "i64", "i8", "u8"]


@dataclass
class Value:
    name: str
    dtype: str
    shape: tuple[int, ...]


@dataclass
class Program:
    text: str
    inputs: dict[str, np.ndarray]
    lines: list[str] = field(default_factory=list)


def _t(dtype: str, shape: tuple[int, ...]) -> str:
    return f"{dtype}[{', '.join(map(str, shape))}]"


class Generator:
    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.np = np.random.default_rng(seed)
        self.n = 0
        self.lines: list[str] = []
        self.params: list[Value] = []
        self.values: list[Value] = []

    def fresh(self) -> str:
        self.n += 1
        return f"v{self.n}"

    def shape(self) -> tuple[int, ...]:
        rank = self.r.choice([0, 1, 1, 2, 2, 2, 3, 3, 4])
        dims = []
        for _ in range(rank):
            dims.append(self.r.choice([1, 1, 2, 3, 4, 5, 7, 8, 16, 17, 33]) if self.r.random() > 0.04
                        else 0)
        return tuple(dims)

    def param(self, dtype: str, shape: tuple[int, ...]) -> Value:
        v = Value(f"p{len(self.params)}", dtype, shape)
        self.params.append(v)
        self.values.append(v)
        return v

    def data(self, v: Value) -> np.ndarray:
        if v.dtype == "bool":
            return self.np.random(v.shape) < 0.5
        if v.dtype in FLOATS:
            x = self.np.standard_normal(v.shape) * self.r.choice([1.0, 3.0, 100.0])
            if x.size and self.r.random() < 0.3:
                flat = x.reshape(-1)
                for special in (np.nan, np.inf, -np.inf, 0.0):
                    if self.r.random() < 0.4:
                        flat[self.r.randrange(flat.size)] = special
            return x.astype(v.dtype.replace("f", "float"))
        lo, hi = (0, 255) if v.dtype == "u8" else (-100, 100)
        x = self.np.integers(lo, hi, v.shape)
        if x.size and self.r.random() < 0.5:      # a zero divisor now and then
            x.reshape(-1)[self.r.randrange(x.size)] = 0
        return x.astype({"i32": np.int32, "i64": np.int64, "i8": np.int8, "u8": np.uint8}[v.dtype])

    def pick(self, dtype: str | None = None, kinds=None) -> Value | None:
        cands = [v for v in self.values if (dtype is None or v.dtype == dtype) and
                 (kinds is None or v.dtype in kinds)]
        return self.r.choice(cands) if cands else None

    def broadcast_partner(self, v: Value) -> tuple[int, ...]:
        """A shape that broadcasts with v's: some dims 1, maybe fewer dims."""
        shape = list(v.shape)
        if shape and self.r.random() < 0.4:
            shape = shape[self.r.randrange(len(shape) + 1):]
        return tuple(1 if (d and self.r.random() < 0.3) else d for d in shape)

    def emit(self, text: str, dtype: str, shape: tuple[int, ...]) -> Value:
        name = self.fresh()
        self.lines.append(f"  %{name} = {text}")
        v = Value(name, dtype, shape)
        self.values.append(v)
        return v

    def operand_like(self, v: Value) -> Value:
        """Another value of v's dtype that broadcasts with it (a new parameter if needed)."""
        shape = self.broadcast_partner(v)
        for c in self.values:
            if c.dtype == v.dtype and c.shape == shape and c is not v:
                return c
        return self.param(v.dtype, shape)

    def step(self) -> None:
        kind = self.r.choice(["unary", "binary", "binary", "compare", "cast", "reduce", "softmax",
                              "layer_norm", "matmul", "transpose", "imm"])
        v = self.pick() if kind == "cast" else self.pick(kinds=FLOATS + INTS)
        if v is None:
            return
        isf = v.dtype in FLOATS
        bshape = lambda a, b: tuple(np.broadcast_shapes(a, b))  # noqa: E731
        if kind == "unary":
            op = self.r.choice(FLOAT_UNARY if isf else INT_UNARY)
            self.emit(f"{op} %{v.name}", v.dtype, v.shape)
        elif kind in ("binary", "imm"):
            op = self.r.choice(FLOAT_BINARY if isf else INT_BINARY)
            if kind == "imm":
                lit = self.r.choice(["2.0", "0.5", "-1.5"]) if isf else self.r.choice(["2", "3", "-1"])
                if v.dtype == "u8" and lit.startswith("-"):
                    lit = "3"
                self.emit(f"{op} %{v.name}, {lit}", v.dtype, v.shape)
            else:
                w = self.operand_like(v)
                self.emit(f"{op} %{v.name}, %{w.name}", v.dtype, bshape(v.shape, w.shape))
        elif kind == "compare":
            w = self.operand_like(v)
            c = self.emit(f"{self.r.choice(COMPARE)} %{v.name}, %{w.name}", "bool",
                          bshape(v.shape, w.shape))
            s = self.emit(f"select %{c.name}, %{v.name}, %{w.name}", v.dtype, c.shape)
            del s
        elif kind == "cast":
            to = self.r.choice(FLOATS + INTS)
            self.emit(f"cast %{v.name} {{to = {to}}}", to, v.shape)
        elif kind == "reduce" and v.shape:
            rank = len(v.shape)
            axes = sorted(self.r.sample(range(rank), self.r.randint(1, rank)))
            keep = self.r.random() < 0.4
            op = self.r.choice(REDUCE if isf else ["reduce_sum", "reduce_max", "reduce_min"])
            if op in ("reduce_max", "reduce_min") and any(v.shape[a] == 0 for a in axes):
                return        # traps in both tiers: fine, but it ends the program early
            out = tuple(1 if i in axes else d for i, d in enumerate(v.shape)) if keep else \
                tuple(d for i, d in enumerate(v.shape) if i not in axes)
            self.emit(f"{op} %{v.name} {{axes = {axes}, keepdims = {'true' if keep else 'false'}}}",
                      v.dtype, out)
        elif kind == "softmax" and isf and v.shape and v.shape[-1]:
            self.emit(f"softmax %{v.name} {{axis = -1}}", v.dtype, v.shape)
        elif kind == "layer_norm" and isf and v.shape and v.shape[-1]:
            d = v.shape[-1]
            g, b = self.param(v.dtype, (d,)), self.param(v.dtype, (d,))
            self.emit(f"layer_norm %{v.name}, %{g.name}, %{b.name} {{axis = -1}}", v.dtype, v.shape)
        elif kind == "matmul" and isf and len(v.shape) >= 2:
            k = v.shape[-1]
            n = self.r.choice([1, 3, 16, 65])
            w = self.param(v.dtype, (k, n))
            self.emit(f"matmul %{v.name}, %{w.name}", v.dtype, v.shape[:-1] + (n,))
        elif kind == "transpose" and len(v.shape) >= 2:
            perm = list(range(len(v.shape)))
            self.r.shuffle(perm)
            self.emit(f"transpose %{v.name} {{perm = {perm}}}", v.dtype,
                      tuple(v.shape[p] for p in perm))

    def program(self, steps: int) -> Program:
        dtype = self.r.choice(FLOATS + FLOATS + INTS)
        self.param(dtype, self.shape())
        for _ in range(steps):
            self.step()
        outs = self.r.sample(self.values, min(len(self.values), self.r.randint(1, 3)))
        loop = self.r.random() < 0.2
        body = list(self.lines)
        params = ", ".join(f"%{p.name}: {_t(p.dtype, p.shape)}" for p in self.params)
        results = ", ".join(_t(o.dtype, o.shape) for o in outs)
        lines = ["module fuzz", f"func @main({params}) -> ({results}) {{", "entry:"]
        if loop:
            # run the body twice over (a loop the interpreter and the JIT tier up alike)
            lines += ["  %i = const 0 : i64[]", "  jmp head", "head:",
                      "  %c = lt %i, 2", "  br %c, body, done", "body:"]
            lines += body
            lines += ["  %i = add %i, 1", "  jmp head", "done:"]
            # values defined in the body are read after the loop: define them before it too
            pre = [ln for ln in body]
            lines = lines[:3] + pre + lines[3:]
        else:
            lines += body
        lines.append("  ret " + ", ".join(f"%{o.name}" for o in outs))
        lines.append("}")
        inputs = {p.name: self.data(p) for p in self.params}
        return Program("\n".join(lines) + "\n", inputs)


def generate(seed: int, steps: int = 8) -> Program:
    return Generator(seed).program(steps)
