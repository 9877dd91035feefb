"""Random `.dlasm` programs over every op family the JIT compiles, with inputs.

`generate(seed)` is deterministic in its seed. A program has 1-3 tensor parameters of one base
shape (ranks 0-4, size-1 and sometimes size-0 dims, each parameter a broadcastable suffix), in
one float dtype (f32 or f64) and/or one integer dtype (i8, i16, i32, i64, u8) with booleans from
comparisons; a chain of instructions drawn from: elementwise unary and binary ops with
broadcasting and immediates, comparisons and select, casts between every pair of dtypes,
reductions over any axes with and without keepdims, softmax, log_softmax, layer_norm, matmul
(batched, K = 0 where the shape has a 0), and the movement ops between regions (transpose,
slice, reshape, expand_dims); and sometimes a branch or a loop around part of the chain.
Arguments are passed as non-contiguous views (transposed or strided) about half the time.

The tiers must agree bitwise on integers and booleans, so a comparison, a cast to an integer
or `floor`/`round` never sees a float that the tiers may round differently. Each value carries
`exact`: it holds the mathematically exact result, which every tier computes bit for bit (an
exact input, then add/sub/mul/max/min/neg/abs/select, sums and products while the magnitudes and
binary fractions fit the mantissa). Inexact floats (exp, div, mean, ...) feed only float ops,
and are squashed (tanh) before they grow large, so that the "programs" tolerance holds.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

FLOATS = ["f32", "f64"]
INTS = ["i8", "i16", "i32", "i64", "u8"]
NP = {"f32": np.float32, "f64": np.float64, "i8": np.int8, "i16": np.int16, "i32": np.int32,
      "i64": np.int64, "u8": np.uint8, "bool": np.bool_}
MANTISSA = {"f32": 22, "f64": 50}    # exact while |v| * 2^frac_bits stays below 2^this

EXACT_UNARY = ["neg", "abs", "relu", "floor", "ceil", "round", "sign"]
SQUASH_UNARY = ["tanh", "sigmoid", "sin", "cos", "erf"]
WILD_UNARY = ["exp", "log", "sqrt", "rsqrt", "reciprocal", "gelu"]
FLOAT_BINARY = ["add", "sub", "mul", "max", "min", "div", "pow", "mod"]
INT_BINARY = ["add", "sub", "mul", "max", "min", "and", "or", "xor", "div", "mod", "pow"]
INT_UNARY = ["neg", "abs", "not", "sign"]
COMPARE = ["eq", "ne", "lt", "le", "gt", "ge"]
REDUCE = ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_mean"]


@dataclass
class Val:
    name: str
    dtype: str
    shape: tuple[int, ...]
    exact: bool = True        # the exact result: every tier has the same bits
    bound: float = 4.0        # |value| <= bound (floats that are not NaN/inf)
    frac: int = 2             # exact floats are multiples of 2^-frac

    @property
    def rank(self) -> int:
        return len(self.shape)

    def fits(self, bound: float, frac: int) -> bool:
        return bound * 2.0 ** frac <= 2.0 ** MANTISSA[self.dtype]


@dataclass
class Case:
    seed: int
    text: str
    args: list[np.ndarray]
    jit_options: dict = field(default_factory=dict)


def _type(dtype: str, shape: tuple[int, ...]) -> str:
    return f"{dtype}[{', '.join(map(str, shape))}]"


def _open(dtype: str, rank: int) -> str:
    return f"{dtype}[{', '.join('?' * rank)}]"


class Gen:
    def __init__(self, seed: int):
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.lines: list[str] = []
        self.pool: list[Val] = []
        self.params: list[tuple[Val, np.ndarray]] = []
        self.counter = 0

    # ---- helpers ---------------------------------------------------------------------------

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def fresh(self) -> str:
        self.counter += 1
        return f"v{self.counter}"

    def emit(self, text: str, val: Val) -> Val:
        self.lines.append(f"  %{val.name} = {text}")
        self.pool.append(val)
        return val

    def of(self, pred) -> list[Val]:
        return [v for v in self.pool if pred(v)]

    # ---- inputs ----------------------------------------------------------------------------

    def base_shape(self) -> tuple[int, ...]:
        rank = int(self.pick([0, 1, 1, 2, 2, 2, 3, 3, 4]))
        dims = [1, 1, 2, 3, 4, 5, 7, 17, 33]
        shape = [int(self.pick(dims)) for _ in range(rank)]
        if rank and self.chance(0.08):
            shape[int(self.rng.integers(rank))] = 0
        return tuple(shape)

    def data(self, dtype: str, shape: tuple[int, ...], specials: bool) -> np.ndarray:
        n = int(np.prod(shape, dtype=np.int64))
        if dtype in FLOATS:
            v = self.rng.integers(-16, 17, n) / 4.0
            if specials and n:
                k = int(self.rng.integers(1, 3))
                v[self.rng.integers(0, n, k)] = self.rng.choice(
                    [np.nan, np.inf, -np.inf, 0.0, -0.0], k)
        elif dtype == "bool":
            v = self.rng.random(n) < 0.5
        else:
            lo = 0 if dtype == "u8" else -6
            v = self.rng.integers(lo, 7, n)
            if not specials:
                v[v == 0] = 1               # no zero divisors, unless traps are wanted
        return np.asarray(v, dtype=NP[dtype]).reshape(shape)

    def layout(self, a: np.ndarray) -> np.ndarray:
        """`a` itself, or an equal non-contiguous view: transposed storage or a strided slice."""
        if a.ndim >= 2 and self.chance(0.3):
            return np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)
        if a.ndim >= 1 and self.chance(0.3):
            big = np.repeat(a, 2, axis=-1)
            return big[..., ::2]
        return a

    def param(self, dtype: str, shape: tuple[int, ...], specials: bool) -> Val:
        v = Val(f"p{len(self.params)}", dtype, shape)
        self.params.append((v, self.layout(self.data(dtype, shape, specials))))
        self.pool.append(v)
        return v

    # ---- instructions ----------------------------------------------------------------------

    def squash(self, v: Val) -> Val:
        if not v.exact and v.bound > 16:
            # only the squashed value stays usable: sin of a large inexact value, or anything
            # that subtracts two of them, would turn its relative error into any difference
            self.pool = [w for w in self.pool if w is not v]
        op = self.pick(SQUASH_UNARY[:2])
        return self.emit(f"{op} %{v.name}", Val(self.fresh(), v.dtype, v.shape, False, 1.0))

    def tame(self, v: Val) -> Val:
        """A float value small enough for the next op (squashed when it may be large)."""
        if v.dtype in FLOATS and not v.exact and v.bound > 16:
            return self.squash(v)
        return v

    def partner(self, v: Val) -> Val | str:
        """A second operand for a binary op on v: a value of its dtype whose shape broadcasts
        with v's, or an immediate."""
        ok = self.of(lambda w: w.dtype == v.dtype and _broadcasts(v.shape, w.shape))
        if not ok or self.chance(0.2):
            if v.dtype in FLOATS:
                return self.pick(["0.5", "-1.25", "2.0", "3.0", "-0.0"])
            return self.pick(["2", "3", "-1", "1"]) if v.dtype != "u8" else self.pick(["2", "3", "1"])
        return self.pick(ok)

    def float_unary(self, v: Val) -> Val:
        r = self.rng.random()
        shape = v.shape
        if r < 0.4:
            op = self.pick(EXACT_UNARY)
            if not v.exact and op in ("floor", "ceil", "round", "sign"):
                op = "neg"          # a step function turns one ulp into a difference of one
            frac = v.frac if op in ("neg", "abs", "relu") else 0
            return self.emit(f"{op} %{v.name}", Val(self.fresh(), v.dtype, shape, v.exact, v.bound + 1, frac))
        if r < 0.7:
            op = self.pick(SQUASH_UNARY)
            return self.emit(f"{op} %{v.name}", Val(self.fresh(), v.dtype, shape, False, 1.0))
        op = self.pick(WILD_UNARY)
        v = self.tame(v)
        if not v.exact and op in ("log", "sqrt", "rsqrt", "reciprocal"):
            # an inexact value near 0 may have either sign in either tier (NaN against a
            # number), and its relative error is unbounded there: |v| + 1 keeps it away
            v = self.emit(f"abs %{v.name}", Val(self.fresh(), v.dtype, shape, False, v.bound))
            v = self.emit(f"add %{v.name}, 1.0", Val(self.fresh(), v.dtype, shape, False, v.bound + 1))
        bound = float(np.exp(min(v.bound, 30))) if op == "exp" else 1e30
        return self.emit(f"{op} %{v.name}", Val(self.fresh(), v.dtype, shape, False, bound))

    def float_binary(self, v: Val) -> Val:
        op = self.pick(FLOAT_BINARY)
        w = self.partner(v)
        wb, wf, wexact = (abs(float(w)), 2, True) if isinstance(w, str) else (w.bound, w.frac, w.exact)
        shape = v.shape if isinstance(w, str) else tuple(np.broadcast_shapes(v.shape, w.shape))
        wname = w if isinstance(w, str) else f"%{w.name}"
        exact = v.exact and wexact
        if (op == "div" and not wexact) or (op == "mod" and not exact):
            # an inexact divisor near 0 may change sign between the tiers, and mod jumps by
            # the divisor where an inexact dividend crosses a multiple of it
            op = "mul"
        if op == "pow" and not (exact or isinstance(w, str)):
            # a negative base to an inexact power: NaN in one tier, a number in the other
            v = self.emit(f"abs %{v.name}", Val(self.fresh(), v.dtype, v.shape, False, v.bound))
        if op in ("add", "sub", "max", "min"):
            bound, frac = v.bound + wb, max(v.frac, wf)
        elif op == "mul":
            bound, frac = v.bound * wb, v.frac + wf
        elif op == "mod":
            bound, frac = max(v.bound, wb), max(v.frac, wf)
        else:
            exact, bound, frac = False, 1e30, 0
        out = Val(self.fresh(), v.dtype, shape, exact, bound, frac)
        out.exact = exact and out.fits(bound, frac)
        if not out.exact and bound > 16:
            # keep inexact values O(1) before they meet the tolerance
            out = self.emit(f"{op} %{v.name}, {wname}", out)
            return self.squash(out)
        return self.emit(f"{op} %{v.name}, {wname}", out)

    def int_op(self, v: Val) -> Val:
        if self.chance(0.25):
            op = self.pick(INT_UNARY)
            if op == "neg" and v.dtype == "u8":
                op = "not"
            return self.emit(f"{op} %{v.name}", Val(self.fresh(), v.dtype, v.shape))
        op = self.pick(INT_BINARY)
        w = self.partner(v)
        shape = v.shape if isinstance(w, str) else tuple(np.broadcast_shapes(v.shape, w.shape))
        wname = w if isinstance(w, str) else f"%{w.name}"
        return self.emit(f"{op} %{v.name}, {wname}", Val(self.fresh(), v.dtype, shape))

    def compare(self, v: Val) -> Val | None:
        if not v.exact:
            return None
        w = self.partner(v)
        if not isinstance(w, str) and not w.exact:
            return None
        shape = v.shape if isinstance(w, str) else tuple(np.broadcast_shapes(v.shape, w.shape))
        wname = w if isinstance(w, str) else f"%{w.name}"
        return self.emit(f"{self.pick(COMPARE)} %{v.name}, {wname}", Val(self.fresh(), "bool", shape))

    def select(self, v: Val) -> Val | None:
        conds = self.of(lambda c: c.dtype == "bool" and _broadcasts(v.shape, c.shape))
        others = self.of(lambda w: w.dtype == v.dtype and _broadcasts(v.shape, w.shape))
        if not conds or not others:
            return None
        c, w = self.pick(conds), self.pick(others)
        shape = tuple(np.broadcast_shapes(c.shape, v.shape, w.shape))
        ok = v.exact and w.exact
        return self.emit(f"select %{c.name}, %{v.name}, %{w.name}",
                         Val(self.fresh(), v.dtype, shape, ok, max(v.bound, w.bound), max(v.frac, w.frac)))

    def cast(self, v: Val) -> Val | None:
        to = self.pick(FLOATS + INTS + ["bool"])
        if to == v.dtype:
            return None
        if v.dtype in FLOATS and to not in FLOATS and not v.exact:
            return None                    # truncating an inexact float may differ by one
        if v.dtype == "f32" and to == "f64" and not v.exact:
            return None                    # f32 rounding differences would meet f64 tolerances
        out = Val(self.fresh(), to, v.shape)
        if to in FLOATS:
            if v.dtype in FLOATS:
                out.bound, out.frac = v.bound, v.frac
            else:        # integers may have wrapped anywhere in their range
                out.bound = 1.0 if v.dtype == "bool" else float(-np.iinfo(NP[v.dtype]).min or 255)
                out.frac = 0
            out.exact = v.exact and out.fits(out.bound, out.frac)
        return self.emit(f"cast %{v.name} {{to = {to}}}", out)

    def reduce(self, v: Val) -> Val | None:
        if v.rank == 0:
            return None
        op = self.pick(REDUCE)
        if op == "reduce_mean" and v.dtype not in FLOATS:
            op = "reduce_sum"
        if op in ("reduce_max", "reduce_min") and 0 in v.shape:
            if not self.chance(0.1):
                return None                # traps in both tiers: now and then
        if op == "reduce_prod" and v.dtype in FLOATS:
            v = self.tame(v)
        count = int(np.prod([v.shape[i % v.rank] for i in range(v.rank)], dtype=np.int64))
        if op == "reduce_prod" and v.dtype in FLOATS and \
                count * np.log(max(v.bound, 1.0)) > (60.0 if v.dtype == "f32" else 600.0):
            # whether a long product overflows (inf * 0 = NaN) depends on the order and the
            # precision of the accumulator: a maximum instead
            op = "reduce_max"
        if v.dtype in FLOATS and not v.exact and op in ("reduce_sum", "reduce_prod"):
            # a sum of many values one ulp apart in the two tiers cancels to an absolute error
            # beyond the tolerance of a small result: inexact rows are averaged instead
            op = "reduce_mean"
        axes = sorted({int(a) for a in self.rng.integers(0, v.rank, int(self.rng.integers(1, v.rank + 1)))})
        if self.chance(0.3):
            axes = [a - v.rank for a in axes]        # negative axes
        if self.chance(0.1):
            attr_axes = ""                           # all axes
            red = list(range(v.rank))
        else:
            attr_axes = f"axes = {axes}, "
            red = [a % v.rank for a in axes]
        keep = self.chance(0.5)
        shape = tuple((1 if i in red else d) for i, d in enumerate(v.shape) if keep or i not in red)
        count = int(np.prod([v.shape[i] for i in red], dtype=np.int64))
        out = Val(self.fresh(), v.dtype, shape)
        if v.dtype in FLOATS:
            if op == "reduce_sum":
                out.bound, out.frac = v.bound * max(count, 1), v.frac
            elif op == "reduce_prod":
                out.bound, out.frac = v.bound ** min(count, 64), v.frac * min(count, 64)
            else:
                out.bound, out.frac = v.bound, v.frac
            out.exact = (v.exact and op != "reduce_mean" and out.bound < 1e300
                         and out.fits(out.bound, out.frac))
            if op == "reduce_mean":
                out.bound = v.bound
        text = f"{op} %{v.name} {{{attr_axes}keepdims = {str(keep).lower()}}}"
        out = self.emit(text, out)
        return self.tame(out) if v.dtype in FLOATS else out

    def normalize(self, v: Val) -> Val | None:
        if v.dtype not in FLOATS or v.rank == 0 or v.shape[-1] == 0:
            return None
        v = self.tame(v)
        op = self.pick(["softmax", "log_softmax", "layer_norm"])
        if op == "layer_norm":
            # a large epsilon: a nearly constant row divides ulp differences by sqrt(epsilon)
            return self.emit(f"layer_norm %{v.name} {{axis = -1, epsilon = 0.5}}",
                             Val(self.fresh(), v.dtype, v.shape, False, 1e3))
        axis = int(self.rng.integers(-v.rank, v.rank))
        if v.shape[axis] == 0:
            return None
        return self.emit(f"{op} %{v.name} {{axis = {axis}}}",
                         Val(self.fresh(), v.dtype, v.shape, False, 1.0 if op == "softmax" else 1e3))

    def matmul(self, v: Val) -> Val | None:
        if v.rank == 0 or v.dtype == "bool":
            return None
        k = v.shape[-1]
        if v.dtype in FLOATS and not (v.exact and v.fits(v.bound * 4 * max(k, 1), v.frac + 2)):
            # a product's error is bounded relative to |A| @ |B| (specs/tolerances.md), not to
            # the result: a sum that cancels may differ by more than the "programs" tolerance,
            # so floats are multiplied only where the products and sums are exact
            return None
        n = int(self.pick([1, 2, 3, 5, 8, 17]))
        w = self.param(v.dtype, (k, n) if v.rank >= 2 or self.chance(0.5) else (k,), False)
        shape = v.shape[:-1] + w.shape[1:]
        out = Val(self.fresh(), v.dtype, shape)
        if v.dtype in FLOATS:
            out.bound, out.frac = v.bound * w.bound * max(k, 1), v.frac + w.frac
            out.exact = v.exact and out.fits(out.bound, out.frac)
        out = self.emit(f"matmul %{v.name}, %{w.name}", out)
        return self.tame(out) if v.dtype in FLOATS else out

    def movement(self, v: Val) -> Val | None:
        if v.rank == 0:
            return None
        r = self.rng.random()
        keep = dict(exact=v.exact, bound=v.bound, frac=v.frac)
        if r < 0.35 and v.rank >= 2:
            perm = [int(i) for i in self.rng.permutation(v.rank)]
            return self.emit(f"transpose %{v.name} {{perm = {perm}}}",
                             Val(self.fresh(), v.dtype, tuple(v.shape[i] for i in perm), **keep))
        if r < 0.6:
            ax = int(self.rng.integers(v.rank))
            d = v.shape[ax]
            start = int(self.rng.integers(0, d + 1)) if d else 0
            step = int(self.pick([1, 1, 2]))
            size = len(range(start, d, step))
            return self.emit(f"slice %{v.name} {{starts = [{start}], ends = [{d}], axes = [{ax}], "
                             f"steps = [{step}]}}", Val(self.fresh(), v.dtype,
                                                        v.shape[:ax] + (size,) + v.shape[ax + 1:], **keep))
        if r < 0.8:
            ax = int(self.rng.integers(0, v.rank + 1))
            return self.emit(f"expand_dims %{v.name} {{axes = [{ax}]}}",
                             Val(self.fresh(), v.dtype, v.shape[:ax] + (1,) + v.shape[ax:], **keep))
        n = int(np.prod(v.shape, dtype=np.int64))
        return self.emit(f"reshape %{v.name} {{shape = [{n}]}}", Val(self.fresh(), v.dtype, (n,), **keep))

    def step(self) -> None:
        v = self.pick(self.pool[-4:] if self.chance(0.6) else self.pool)
        r = self.rng.random()
        out = None
        if v.dtype == "bool":
            if r < 0.4:
                out = self.select(self.pick(self.of(lambda w: w.dtype != "bool") or [v])) \
                    if self.of(lambda w: w.dtype != "bool") else None
            elif r < 0.7:
                out = self.cast(v)
            else:
                w = self.of(lambda c: c.dtype == "bool" and _broadcasts(v.shape, c.shape))
                op = self.pick(["and", "or", "xor", "not"])
                if op == "not" or not w:
                    out = self.emit(f"not %{v.name}", Val(self.fresh(), "bool", v.shape))
                else:
                    c = self.pick(w)
                    out = self.emit(f"{op} %{v.name}, %{c.name}",
                                    Val(self.fresh(), "bool", tuple(np.broadcast_shapes(v.shape, c.shape))))
        elif r < 0.35:
            out = self.float_unary(v) if v.dtype in FLOATS else self.int_op(v)
        elif r < 0.55:
            out = self.float_binary(v) if v.dtype in FLOATS else self.int_op(v)
        elif r < 0.62:
            out = self.compare(v)
        elif r < 0.67:
            out = self.select(v)
        elif r < 0.74:
            out = self.cast(v)
        elif r < 0.84:
            out = self.reduce(v)
        elif r < 0.89:
            out = self.normalize(v)
        elif r < 0.93:
            out = self.matmul(v)
        else:
            out = self.movement(v)
        if out is None and v.dtype != "bool":
            self.float_unary(v) if v.dtype in FLOATS else self.int_op(v)


def _broadcasts(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """b broadcasts into a's shape (the result has a's shape)."""
    try:
        return tuple(np.broadcast_shapes(a, b)) == tuple(a)
    except ValueError:
        return False


def generate(seed: int) -> Case:
    """A random program (text) and its arguments, deterministic in `seed`."""
    g = Gen(seed)
    base = g.base_shape()
    specials = g.chance(0.3)
    kinds = g.pick([["float"], ["float"], ["int"], ["float", "int"]])
    fdt, idt = g.pick(FLOATS), g.pick(INTS)
    for i in range(int(g.rng.integers(1, 4))):
        shape = base[int(g.rng.integers(0, len(base) + 1)):] if i else base
        shape = tuple(d if g.chance(0.7) else 1 for d in shape) if i else shape
        g.param(fdt if g.pick(kinds) == "float" else idt, shape, specials)
    for _ in range(int(g.rng.integers(3, 12))):
        g.step()
    body, control = g.lines, _control(g)
    results = _results(g)
    params = ", ".join(f"%{v.name}: {_type(v.dtype, v.shape)}" for v, _ in g.params)
    args = [a for _, a in g.params]
    if control is not None:
        params += ", %flag: bool[], %n: i64[]"
        args += [np.asarray(g.chance(0.5)), np.asarray(int(g.rng.integers(0, 4)), dtype=np.int64)]
    sig = ", ".join(_open(v.dtype, v.rank) for v in results)
    lines = [f"module fuzz{seed}", f"func @main({params}) -> ({sig}) {{", "entry:"] + body
    if control is not None:
        lines += control
    lines += [f"  ret {', '.join('%' + v.name for v in results)}", "}"]
    threads = int(g.pick([1, 1, 2]))
    return Case(seed, "\n".join(lines) + "\n", args, {"threads": threads})


def _results(g: Gen) -> list[Val]:
    last = g.pool[-1]
    extra = [g.pick(g.pool) for _ in range(int(g.rng.integers(0, 3)))]
    out: list[Val] = []
    for v in [last] + extra:
        if v not in out and not v.name.startswith("p"):
            out.append(v)
    return out or [last]


def _control(g: Gen) -> list[str] | None:
    """Sometimes: a branch on %flag and a loop %n times around more of the chain; the values
    they assign keep one dtype and shape on every path (a register's type is fixed)."""
    r = g.rng.random()
    if r > 0.35:
        return None
    v = g.pick(g.of(lambda w: w.dtype != "bool"))
    j = Val(g.fresh(), v.dtype, v.shape, False, 1e3)
    if v.dtype in FLOATS:
        one, other = "tanh", "sigmoid"
    else:
        one, other = ("not" if v.dtype == "u8" else "neg"), "abs"
    lines = ["  br %flag, then, else", "then:", f"  %{j.name} = {one} %{v.name}", "  jmp join",
             "else:", f"  %{j.name} = {other} %{v.name}", "  jmp join", "join:"]
    if r < 0.2:
        acc = g.fresh()
        lines = lines[:-1] + ["join:", "  %i = const 0 : i64[]", f"  %{acc} = mov %{j.name}", "  jmp head",
                              "head:", "  %c = lt %i, %n", "  br %c, body, done", "body:"]
        g.pool.append(Val(acc, v.dtype, v.shape, False, 1e3))
        w = g.partner(g.pool[-1])
        wname = w if isinstance(w, str) else f"%{w.name}"
        step = "add" if v.dtype in FLOATS else "xor"
        lines += [f"  %{acc} = {step} %{acc}, {wname}"]
        if v.dtype in FLOATS:
            lines += [f"  %{acc} = tanh %{acc}"]
        lines += ["  %i = add %i, 1", "  jmp head", "done:"]
        g.pool[-1] = Val(acc, v.dtype, v.shape, False, 1.0)
    else:
        g.pool.append(j)
    g.lines = []
    for _ in range(int(g.rng.integers(1, 5))):
        g.step()
    return lines + g.lines
