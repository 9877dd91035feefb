"""Values of a framework graph during import, and the emitter that turns ops on them into dlvm
instructions; shared by every frontend (ONNX, torch.export).

A Value is what a graph's tensor name stands for: its dlvm type, and either a dlvm operand (a
register or module constant) or an array known at import time, or both. Ops whose operands are
all known are folded with the op table's own NumPy reference (the interpreter's semantics), so
the shape arithmetic exporters emit (Shape -> Gather -> Concat -> Reshape) disappears at import.
Known arrays become module constants only when a run-time instruction uses them.

`sym` tracks 1-D integer shape vectors whose entries are sizes or named dims (from `Shape` of a
tensor with dynamic dims), so that reshapes of dynamic-batch models keep their named dims.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from isa.builder import FunctionBuilder, ModuleBuilder
from isa.dtypes import DType, dtype_from_numpy
from isa.errors import DlvmError, OpTypeError
from isa.module import ConstRef, Operand, Reg
from isa.narrow import touches_narrow, widened
from isa.ops import OPS, Family
from isa.types import Dim, TensorType

from .errors import FrontendError
from .names import Namer

# arrays larger than this are not folded at import: folding them would only grow the bytecode
FOLD_LIMIT = 1 << 22


@dataclass
class Value:
    type: TensorType
    operand: Operand | None = None
    const: np.ndarray | None = None
    sym: tuple[Dim, ...] | None = None

    @property
    def dtype(self) -> DType:
        return self.type.dtype

    @property
    def rank(self) -> int:
        return self.type.rank

    @property
    def shape(self) -> tuple[Dim, ...]:
        return self.type.shape

    @property
    def known(self) -> bool:
        return self.const is not None


def _has_named_dim(types: Sequence[TensorType]) -> bool:
    """A result with a named dim (an Expand of a constant to [batch, ...]) depends on the call's
    sizes, so it is not folded even when every operand is known."""
    return any(isinstance(d, str) for t in types for d in t.shape)


def type_of_array(a: np.ndarray, error: type[FrontendError] = FrontendError) -> TensorType:
    dt = dtype_from_numpy(a.dtype)
    if dt is None:
        raise error(f"dtype {a.dtype} has no dlvm equivalent")
    return TensorType(dt, tuple(int(d) for d in a.shape))


def known(a: Any, dtype: Any = None) -> Value:
    """A Value known at import time."""
    arr = np.require(np.asarray(a, dtype=dtype), requirements="C")
    return Value(type_of_array(arr), None, arr)


class Emitter:
    """Emits instructions into one function, folding what is known at import time.

    A frontend subclasses it to set `error`, the exception its import errors are."""

    error: type[FrontendError] = FrontendError

    def __init__(self, mb: ModuleBuilder, fb: FunctionBuilder, regs: Namer, consts: Namer):
        self.mb = mb
        self.fb = fb
        self.regs = regs
        self.consts = consts
        self.labels = Namer({"entry"})
        self._const_cache: dict[tuple, ConstRef] = {}
        self.trainable_names: set[str] = set()   # initializers imported for training
        self.trainable: dict[str, str] = {}      # ... and their constants' names

    # -- operands ------------------------------------------------------------------------

    def materialize(self, v: Value, hint: str = "c") -> Operand:
        """The operand for `v`, making a module constant of a known array on first use."""
        if v.operand is not None:
            return v.operand
        assert v.const is not None, "a value with neither operand nor array"
        arr = v.const
        # str arrays are keyed by their texts: their bytes are pointers, which a freed string's
        # successor may reuse
        data = tuple(arr.reshape(-1).tolist()) if arr.dtype == object else arr.tobytes()
        key = (arr.dtype.str, arr.shape, data) if arr.size <= 4096 else None
        ref = self._const_cache.get(key) if key else None
        if ref is None:
            ref = self.mb.constant(self.consts.fresh(hint, "c"), arr)
            if key:
                self._const_cache[key] = ref
        v.operand = ref
        return ref

    def constant(self, name: str, arr: np.ndarray) -> Value:
        """An initializer: a module constant under (a sanitized form of) its graph name."""
        arr = np.require(arr, requirements="C")
        ref = self.mb.constant(self.consts.fresh(name, "c"), arr)
        if name in self.trainable_names:
            # read as it is at run time: nothing folded into it, so training updates apply
            self.trainable[name] = ref.name
            return Value(type_of_array(arr, self.error), ref, None)
        return Value(type_of_array(arr, self.error), ref, arr)

    # -- instructions --------------------------------------------------------------------

    def emit(self, op: str, args: Sequence[Value], hint: str = "t", n_results: int = 1,
             result_type: TensorType | None = None, **attrs: Any) -> Any:
        """Append `op` on `args` (or fold it when every arg is known); returns the result Value
        (a list of them when n_results > 1). Type errors name the op and the operand types."""
        opdef = OPS[op]
        full = opdef.with_defaults({k: v for k, v in attrs.items() if v is not None})
        given = {k: v for k, v in attrs.items() if v is not None}
        types = [a.type for a in args]
        try:
            results = opdef.infer(types, full)
        except OpTypeError as e:
            shown = ", ".join(str(t) for t in types)
            raise self.error(f"{op}({shown}): {e}") from None
        if all(a.known for a in args) and opdef.reference is not None and not opdef.random and \
                opdef.family is not Family.CONTROL and not _has_named_dim(results) and \
                all(a.const.size <= FOLD_LIMIT for a in args):
            ref = opdef.reference
            if touches_narrow(types + results, opdef):
                ref = widened(ref, [t.dtype for t in results])
            try:
                out = ref(full, *[a.const for a in args])
            except (DlvmError, ValueError, FloatingPointError, ZeroDivisionError):
                out = None       # the run time will trap (or not) on its own
            if out is not None:
                outs = list(out) if isinstance(out, tuple) else [out]
                vals = []
                for arr, t in zip(outs, results):
                    arr = np.require(np.asarray(arr, dtype=t.dtype.np), requirements="C")
                    vals.append(Value(t.with_shape(arr.shape), None, arr))
                return vals if n_results > 1 else vals[0]
        operands = [self.materialize(a) for a in args]
        names = [self.regs.fresh(hint, "t") for _ in results]
        if result_type is not None:
            # a declared type refines unknown dims the rule could not see (e.g. a reshape to a
            # named dim written as -1); the VM checks it when the instruction runs
            results = [result_type]
        self.fb.emit(op, operands, given, names, result_type)
        vals = [Value(t, Reg(n)) for t, n in zip(results, names)]
        return vals if n_results > 1 else vals[0]

    def emit_const_fill(self, value: Any, t: TensorType, hint: str = "fill") -> Value:
        """A tensor of type `t` filled with `value`; dims may be named (bound at run time)."""
        arr = np.asarray(value, dtype=t.dtype.np)
        if t.is_static:
            return known(np.full(t.shape, arr, dtype=t.dtype.np))
        name = self.regs.fresh(hint, "t")
        self.fb.const(arr, t, into=name)
        return Value(t, Reg(name))

    def emit_shape_like(self, t: TensorType, hint: str = "like") -> Value:
        """A register of type `t` (zeros) for an op that reads only its operand's shape (the
        random ops): a `const` instruction, made when the VM prepares the function, where a
        known value would become a module constant of every element in the program's file."""
        name = self.regs.fresh(hint, "t")
        self.fb.const(np.zeros((), dtype=t.dtype.np), t, into=name)
        return Value(t, Reg(name))

    def mov(self, v: Value, into: str) -> None:
        """Copy `v` into register `into` (loop-carried values, branch results)."""
        self.fb.mov(self.materialize(v), into)

    def label(self, hint: str) -> str:
        return self.labels.fresh(hint, "L")


def reshape_named(e: Emitter, v: Value, dims: list) -> Value:
    """A reshape to `dims` whose one non-static dim (a name, or unknown) is written -1 and kept
    in the result type."""
    if all(isinstance(d, int) for d in dims):
        return e.emit("reshape", [v], shape=dims)
    return e.emit("reshape", [v], shape=[d if isinstance(d, int) else -1 for d in dims],
                  result_type=TensorType(v.dtype, tuple(dims)))
