"""The module model: a module holds constants and functions; a function holds blocks of
instructions over virtual registers.

Operands are registers (`%x`), module constants (`@w`) or immediates (`0.5`, which take the dtype
of the instruction's other operands). Control-flow targets, callees, messages and const literals
are attributes, so every instruction has the same shape: op, results, operands, attrs, an optional
declared result type and a source location.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np

from .errors import SourceLoc
from .types import TensorType


@dataclass(frozen=True)
class Reg:
    name: str

    def __str__(self) -> str:
        return f"%{self.name}"


@dataclass(frozen=True)
class ConstRef:
    name: str

    def __str__(self) -> str:
        return f"@{self.name}"


@dataclass(frozen=True)
class Imm:
    value: Union[bool, int, float]

    def __str__(self) -> str:
        return format_scalar(self.value)


Operand = Union[Reg, ConstRef, Imm]


def format_scalar(v: Any) -> str:
    """Text of a literal that reads back to the same value (bool, int, or a float's repr)."""
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    f = float(v)
    if f != f:
        return "nan"
    if f in (float("inf"), float("-inf")):
        return "inf" if f > 0 else "-inf"
    text = repr(f)
    return text


@dataclass
class Instr:
    op: str
    results: list[str] = field(default_factory=list)
    operands: list[Operand] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    result_type: TensorType | None = None   # the optional `: TYPE` annotation, checked
    loc: SourceLoc | None = None

    def __eq__(self, other: object) -> bool:
        # locations are debug info, not meaning; const literals compare by value
        if not isinstance(other, Instr):
            return NotImplemented
        return (self.op, self.results, self.operands, self.result_type) == \
            (other.op, other.results, other.operands, other.result_type) and \
            attrs_equal(self.attrs, other.attrs)


def same_array(x: np.ndarray, y: np.ndarray) -> bool:
    """The same dtype, shape and elements: bytes for numbers (NaN payloads and -0.0 count),
    the texts for str (object arrays hold pointers)."""
    if x.dtype != y.dtype or x.shape != y.shape:
        return False
    if x.dtype == object:
        return x.tolist() == y.tolist()
    return x.tobytes() == y.tobytes()


def attrs_equal(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a.keys() != b.keys():
        return False
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)):
                return False
            if not same_array(x, y):
                return False
        elif x != y:
            return False
    return True


@dataclass
class Block:
    label: str
    instrs: list[Instr] = field(default_factory=list)


@dataclass
class Param:
    name: str
    type: TensorType


@dataclass
class Function:
    name: str
    params: list[Param] = field(default_factory=list)
    results: list[TensorType] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    loc: SourceLoc | None = None

    def block(self, label: str) -> Block | None:
        for b in self.blocks:
            if b.label == label:
                return b
        return None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Function):
            return NotImplemented
        return (self.name, self.params, self.results, self.blocks) == \
            (other.name, other.params, other.results, other.blocks)


@dataclass
class Constant:
    name: str
    type: TensorType
    value: np.ndarray        # always of the type's dtype and (static) shape
    loc: SourceLoc | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Constant):
            return NotImplemented
        return self.name == other.name and self.type == other.type and \
            same_array(self.value, other.value)


@dataclass
class Module:
    name: str
    constants: dict[str, Constant] = field(default_factory=dict)
    functions: dict[str, Function] = field(default_factory=dict)
    source: str | None = None    # the source file name recorded in debug info, when known

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Module):
            return NotImplemented
        return (self.name, self.constants, self.functions) == \
            (other.name, other.constants, other.functions)
