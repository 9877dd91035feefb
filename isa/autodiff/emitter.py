"""The emitter adjoint rules write dlvm instructions with.

A rule calls ops by name (`g.mul(ct, y)`, `g.reduce_sum(ct, axes=[0])`); each call appends one
instruction with a fresh register and infers its type with the op's own type rule, so a rule can
ask `g.type(v)` about anything it made. Helpers cover what many rules need: scalars of a value's
dtype, zeros shaped like a value, broadcasting to a value's shape and its reverse (summing a
cotangent back to an operand's shape).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..dtypes import BY_NAME, DType
from ..errors import InvalidError
from ..module import ConstRef, Imm, Instr, Module, Operand, Reg
from ..ops import OPS, Family
from ..types import TensorType

I64 = BY_NAME["i64"]


class GradError(InvalidError):
    """A program, or a request, that cannot be differentiated (with the reason)."""


class NameGen:
    """Fresh register names that collide with nothing the function already uses."""

    def __init__(self, taken: set[str]):
        self.taken = set(taken)
        self.counts: dict[str, int] = {}

    def fresh(self, base: str) -> str:
        base = base.split(".")[0] or "t"
        n = self.counts.get(base, 0)
        while True:
            n += 1
            name = f"{base}.{n}"
            if name not in self.taken:
                self.counts[base] = n
                self.taken.add(name)
                return name


class Emitter:
    def __init__(self, module: Module, names: NameGen, types: dict[str, TensorType],
                 bound_dims: set[str]):
        self.module = module
        self.names = names
        self.types = types              # register name -> type, shared with the transform
        self.bound_dims = bound_dims    # named dims the function being written binds
        self.instrs: list[Instr] = []
        self.scalars: dict[tuple, Reg] = {}

    # -- types ---------------------------------------------------------------------------------
    def type(self, v: Operand) -> TensorType:
        if isinstance(v, Reg):
            return self.types[v.name]
        if isinstance(v, ConstRef):
            return self.module.constants[v.name].type
        raise TypeError(f"an immediate has no type of its own: {v}")

    def dtype(self, v: Operand) -> DType:
        return self.type(v).dtype

    def rank(self, v: Operand) -> int:
        return self.type(v).rank

    def shape_is_known(self, t: TensorType) -> bool:
        """True when `t`'s shape can be written in a SHAPE attribute of this function."""
        return all(isinstance(d, int) or (isinstance(d, str) and d in self.bound_dims)
                   for d in t.shape)

    # -- emitting ------------------------------------------------------------------------------
    def emit(self, op: str, operands: list[Any], attrs: dict[str, Any] | None = None,
             n_results: int = 1, hint: str = "g") -> Any:
        opdef = OPS[op]
        ops = [v if isinstance(v, (Reg, ConstRef, Imm)) else Imm(v) for v in operands]
        attrs = dict(attrs or {})
        types = [self.type(v) if not isinstance(v, Imm) else None for v in ops]
        if any(t is None for t in types):
            peer = next((t for i, t in enumerate(types) if t is not None
                         and not (opdef.family is Family.SELECT and i == 0)), None)
            if peer is None:
                raise TypeError(f"{op}: immediates need a typed peer")
            types = [t if t is not None else TensorType(peer.dtype, ()) for t in types]
        results = opdef.infer(types, opdef.with_defaults(attrs))
        regs = [Reg(self.names.fresh(hint)) for _ in range(n_results)]
        for r, t in zip(regs, results):
            self.types[r.name] = t
        self.instrs.append(Instr(op, [r.name for r in regs], ops, attrs))
        return regs[0] if n_results == 1 else regs

    def __getattr__(self, op: str):
        if op not in OPS:
            raise AttributeError(op)

        def call(*operands, **attrs):
            return self.emit(op, list(operands), attrs)
        return call

    def call_function(self, callee: str, args: list[Operand], result_types: list[TensorType],
                      param_types: list[TensorType] | None = None, hint: str = "r") -> list[Reg]:
        if param_types is not None:     # the callee's named dims take the arguments' dims
            bound: dict[str, object] = {}
            for p, a in zip(param_types, args):
                for d, x in zip(p.shape, self.type(a).shape):
                    if isinstance(d, str):
                        bound[d] = x if bound.get(d, x) == x else None
            result_types = [t.with_shape(tuple(bound.get(d) if isinstance(d, str) else d
                                               for d in t.shape)) for t in result_types]
        regs = [Reg(self.names.fresh(hint)) for _ in result_types]
        for r, t in zip(regs, result_types):
            self.types[r.name] = t
        self.instrs.append(Instr("call", [r.name for r in regs], list(args), {"callee": callee}))
        return regs

    # -- values --------------------------------------------------------------------------------
    def scalar(self, value: float, dtype: DType) -> Reg:
        key = (value, dtype.text)
        if key not in self.scalars:
            t = TensorType(dtype, ())
            self.scalars[key] = self.emit("const", [], {"value": np.array(value, dtype=dtype.np),
                                                        "type": t}, hint="c")
        return self.scalars[key]

    def vector(self, values: list[int]) -> Reg:
        t = TensorType(I64, (len(values),))
        return self.emit("const", [], {"value": np.array(values, dtype=np.int64), "type": t},
                         hint="c")

    def zeros_like(self, v: Operand) -> Reg:
        t = self.type(v)
        if t.is_static:
            return self.emit("const", [], {"value": np.zeros((), t.dtype.np), "type": t}, hint="z")
        return self.emit("fill", [self.shape_of(v), self.scalar(0, t.dtype)], hint="z")

    def ones_like(self, v: Operand) -> Reg:
        t = self.type(v)
        if t.is_static:
            return self.emit("const", [], {"value": np.ones((), t.dtype.np), "type": t}, hint="o")
        return self.emit("fill", [self.shape_of(v), self.scalar(1, t.dtype)], hint="o")

    def broadcast_like(self, v: Operand, like: Operand) -> Operand:
        """`v` broadcast (NumPy rules) to `like`'s shape."""
        tv, tl = self.type(v), self.type(like)
        if tv.shape == tl.shape:
            return v
        if self.shape_is_known(tl):
            return self.emit("broadcast_to", [v], {"shape": list(tl.shape)})
        return self.emit("broadcast_dyn", [v, self.shape_of(like)])

    def reshape_like(self, v: Operand, like: Operand) -> Operand:
        tv, tl = self.type(v), self.type(like)
        if tv.shape == tl.shape and all(isinstance(d, (int, str)) for d in tl.shape):
            return v
        unknown = [i for i, d in enumerate(tl.shape) if not isinstance(d, int)]
        if len(unknown) <= 1:
            return self.emit("reshape", [v], {"shape": [d if isinstance(d, int) else -1
                                                        for d in tl.shape]})
        return self.emit("reshape_dyn", [v, self.shape_of(like)])

    def sum_to(self, ct: Operand, target: TensorType, like: Operand | None = None) -> Operand:
        """Undo broadcasting: sum `ct` over the axes that broadcasting added or stretched to go
        from `target`'s shape to `ct`'s. `like` (a value of the target's shape) is used when
        the shapes alone cannot tell which axes were stretched."""
        tc = self.type(ct)
        if tc.shape == target.shape and all(d is not None for d in tc.shape):
            return ct
        lead = tc.rank - target.rank
        if lead < 0:
            raise GradError(f"internal: cotangent {tc} is smaller than its operand {target}")
        axes = list(range(lead))
        unknown = False
        for i, d in enumerate(target.shape):
            c = tc.shape[lead + i]
            if d == 1 and c != 1:
                axes.append(lead + i)
            elif d is None or c is None or (d != c and not (isinstance(d, int) and d == 1)):
                unknown = True
        if unknown:
            if like is None:
                raise GradError(f"cannot tell how {target} was broadcast to {tc}")
            return self.emit("unbroadcast", [ct, like])
        if axes == list(range(lead)):     # only leading axes: one reduction drops them
            return self.emit("reduce_sum", [ct], {"axes": axes})
        out = ct
        if axes:
            out = self.emit("reduce_sum", [out], {"axes": axes, "keepdims": True})
        if lead:
            out = self.emit("squeeze", [out], {"axes": list(range(lead))})
        return out
