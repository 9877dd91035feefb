"""Build modules from Python: what a framework calls to emit dlvm.

    mb = ModuleBuilder("mlp")
    w = mb.constant("w", np.ones((4, 3), np.float32))
    f = mb.function("main", [("x", "f32[N, 4]")], ["f32[N, 3]"])
    y = f.matmul(f.arg("x"), w)
    y = f.relu(y)
    f.ret(y)
    module = mb.finish()            # verified; raises InvalidError naming the instruction

Every op of the op table is a method of FunctionBuilder (`f.add(a, b)`, `f.softmax(x, axis=-1)`),
found through the table, so a new op needs no builder change. Operands are registers returned by
earlier calls, constants, or Python numbers (immediates).
"""
from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any, Union

import numpy as np

from .dtypes import DType, dtype_from_name, dtype_from_numpy
from .errors import InvalidError, OpTypeError
from .module import Block, Constant, ConstRef, Function, Imm, Instr, Module, Operand, Param, Reg
from .ops import OPS, Syntax
from .types import TensorType, parse_type
from .verify import verify_module

TypeLike = Union[TensorType, str]
OperandLike = Union[Reg, ConstRef, bool, int, float]


def as_type(t: TypeLike) -> TensorType:
    return t if isinstance(t, TensorType) else parse_type(t)


def as_operand(v: OperandLike) -> Operand:
    if isinstance(v, (Reg, ConstRef)):
        return v
    if isinstance(v, (bool, np.bool_)):
        return Imm(bool(v))
    if isinstance(v, (int, np.integer)):
        return Imm(int(v))
    if isinstance(v, (float, np.floating)):
        return Imm(float(v))
    raise TypeError(f"an operand must be a register, a constant or a number, got {type(v).__name__}")


class ModuleBuilder:
    def __init__(self, name: str):
        self.module = Module(name)

    def constant(self, name: str, value: np.ndarray) -> ConstRef:
        value = np.asarray(value, order="C")   # ascontiguousarray would make a 0-d array 1-d
        dt = dtype_from_numpy(value.dtype)
        if dt is None:
            raise TypeError(f"constant @{name}: dtype {value.dtype} has no dlvm equivalent")
        if name in self.module.constants:
            raise ValueError(f"constant @{name} is defined twice")
        self.module.constants[name] = Constant(name, TensorType(dt, tuple(value.shape)), value)
        return ConstRef(name)

    def function(self, name: str, params: Sequence[tuple[str, TypeLike]],
                 results: Sequence[TypeLike]) -> FunctionBuilder:
        if name in self.module.functions:
            raise ValueError(f"function @{name} is defined twice")
        f = Function(name, [Param(p, as_type(t)) for p, t in params], [as_type(t) for t in results])
        self.module.functions[name] = f
        return FunctionBuilder(f, self.module)

    def finish(self, verify: bool = True) -> Module:
        if verify:
            verify_module(self.module)
        return self.module


def _did_you_mean(op: str) -> str:
    close = difflib.get_close_matches(op, list(OPS), n=3)
    return f" (did you mean {', '.join(close)}?)" if close else ""


class FunctionBuilder:
    def __init__(self, func: Function, module: Module | None = None):
        self.func = func
        self.module = module
        self.block = Block("entry")
        func.blocks.append(self.block)
        self._names = {p.name for p in func.params}
        self._counter = 0
        # the types known so far, so that a bad instruction fails at the call that makes it
        self._types: dict[str, TensorType] = {p.name: p.type for p in func.params}

    def arg(self, name: str) -> Reg:
        if not any(p.name == name for p in self.func.params):
            raise KeyError(f"@{self.func.name} has no parameter %{name}")
        return Reg(name)

    def args(self) -> list[Reg]:
        return [Reg(p.name) for p in self.func.params]

    def fresh(self, hint: str = "t") -> str:
        while True:
            self._counter += 1
            name = f"{hint}{self._counter}"
            if name not in self._names:
                self._names.add(name)
                return name

    def label(self, name: str) -> None:
        """Start a new block called `name`; following instructions go there. A label before any
        instruction names the entry block itself."""
        if self.block is self.func.blocks[0] and not self.block.instrs:
            self.block.label = name
            return
        self.block = Block(name)
        self.func.blocks.append(self.block)

    def emit(self, op: str, operands: Sequence[OperandLike] = (), attrs: dict[str, Any] | None = None,
             results: Sequence[str] | int | None = None, result_type: TypeLike | None = None,
             ) -> Any:
        """Append one instruction. `results` names the result registers (or gives how many to
        create); returns the result register, a list of them, or None."""
        opdef = OPS.get(op)
        if opdef is None:
            raise InvalidError(f"unknown op '{op}'{_did_you_mean(op)}")
        if results is None:
            results = opdef.n_results or 0
        names = [self.fresh() for _ in range(results)] if isinstance(results, int) else list(results)
        self._names.update(names)
        rt = as_type(result_type) if result_type is not None else None
        ops = [as_operand(o) for o in operands]
        attrs = dict(attrs or {})
        self._check(opdef, ops, attrs, names)
        self.block.instrs.append(Instr(op, names, ops, attrs, rt))
        regs = [Reg(n) for n in names]
        return regs[0] if len(regs) == 1 and opdef.n_results == 1 else (regs or None)

    def _type_of(self, o: Operand) -> TensorType | None:
        if isinstance(o, Reg):
            return self._types.get(o.name)
        if isinstance(o, ConstRef) and self.module is not None and o.name in self.module.constants:
            return self.module.constants[o.name].type
        return None

    def _check(self, opdef, ops: list[Operand], attrs: dict[str, Any], names: list[str]) -> None:
        """Infer the instruction's types now where every operand's is known, and raise a type
        error here, at the user's call, rather than at finish(). Control flow and calls are
        left to the verifier."""
        if opdef.infer is None:
            return
        known = [self._type_of(o) for o in ops if not isinstance(o, Imm)]
        if any(t is None for t in known):
            return
        dtype = known[0].dtype if known else None
        types = []
        for o in ops:
            if isinstance(o, Imm):
                if dtype is None:
                    return
                types.append(TensorType(dtype, ()))      # an immediate takes the other dtype
            else:
                types.append(self._type_of(o))
        try:
            results = opdef.infer(types, opdef.with_defaults(attrs))
        except OpTypeError as e:
            raise InvalidError(f"{opdef.name}: {e}") from None
        except Exception:  # noqa: BLE001 - anything else is the verifier's to report at finish()
            return
        for n, t in zip(names, results):
            self._types.setdefault(n, t)

    def const(self, value: Any, type: TypeLike, into: str | None = None) -> Reg:
        t = as_type(type)
        arr = np.asarray(value, dtype=t.dtype.np)
        return self.emit("const", [], {"value": arr, "type": t}, [into] if into else None)

    def mov(self, src: OperandLike, into: str) -> Reg:
        return self.emit("mov", [src], results=[into])

    def declare(self, name: str, type: TypeLike) -> None:
        """The type register `name` is checked with while the function is built, whatever its
        first definition gives: a loop-carried value whose first value has dims its later ones
        do not (an empty stack standing in for elements of unknown dims). The verifier still
        checks every definition at finish()."""
        self._types[name] = as_type(type)

    def call(self, callee: str, *args: OperandLike, n_results: int = 1,
             into: str | Sequence[str] | None = None) -> Any:
        """`callee`'s results into new registers, or into the register(s) named by `into`."""
        results: Any = n_results if into is None else [into] if isinstance(into, str) else list(into)
        regs = self.emit("call", args, {"callee": callee}, results=results)
        if isinstance(regs, Reg):
            return regs
        return regs[0] if regs and len(regs) == 1 else regs

    def jmp(self, target: str) -> None:
        self.emit("jmp", [], {"target": target})

    def br(self, cond: OperandLike, if_true: str, if_false: str) -> None:
        self.emit("br", [cond], {"if_true": if_true, "if_false": if_false})

    def ret(self, *values: OperandLike) -> None:
        self.emit("ret", values)

    def assert_(self, cond: OperandLike, message: str) -> None:
        self.emit("assert", [cond], {"message": message})

    def __getattr__(self, op: str):
        opdef = OPS.get(op)
        if opdef is None or opdef.syntax is not Syntax.PLAIN:
            raise AttributeError(f"FunctionBuilder has no method or op '{op}'{_did_you_mean(op)}")

        def emit_op(*operands: OperandLike, result_type: TypeLike | None = None,
                    into: str | None = None, **attrs: Any) -> Reg:
            if "to" in attrs and isinstance(attrs["to"], str):
                attrs["to"] = dtype_of(attrs["to"])     # cast(x, to="f32") reads naturally
            return self.emit(op, operands, attrs, [into] if into else None, result_type)
        emit_op.__name__ = op
        emit_op.__doc__ = opdef.doc
        return emit_op


def dtype_of(name: str) -> DType:
    d = dtype_from_name(name)
    if d is None:
        raise ValueError(f"unknown dtype {name!r}")
    return d
