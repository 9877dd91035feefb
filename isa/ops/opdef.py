"""The op record: everything any stage knows about one opcode, defined once.

The assembler, printer, bytecode codec, verifier, interpreter, JIT, REPL completion and
`specs/ops.md` all read these records (see ARCHITECTURE.md, principle 1). A family carries the
shared rules (broadcasting, immediates, fusion eligibility, syntax), so an elementwise op is one
row plus its reference.
"""
from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..types import TensorType


class Family(enum.Enum):
    UNARY = "elementwise unary"
    BINARY = "elementwise binary"
    SELECT = "select"
    CAST = "cast"
    REDUCE = "reduction"
    ARGREDUCE = "arg-reduction"
    CONTRACTION = "contraction"
    NN = "neural network"
    MOVEMENT = "movement"
    MISC = "value"          # const, mov, shape_of, iota
    CONTROL = "control"     # jmp, br, ret, call, assert

    @property
    def elementwise(self) -> bool:
        return self in (Family.UNARY, Family.BINARY, Family.SELECT, Family.CAST)


class Syntax(enum.Enum):
    """How an instruction is written in text; the parser and printer switch on this, not on
    op names."""
    PLAIN = "%r = op %a, %b {attrs}"
    CONST = "%r = const VALUE : TYPE"
    JMP = "jmp LABEL"
    BR = "br %c, LABEL, LABEL"
    RET = "ret %a, %b"
    CALL = "%r, %s = call @f(%a, %b)"
    ASSERT = 'assert %c, "message"'


class AttrKind(enum.Enum):
    INT = "int"
    INTS = "int list"
    FLOAT = "float"
    BOOL = "bool"
    DTYPE = "dtype"
    STR = "string"
    SHAPE = "shape"        # list of dims (ints or dim names), resolved against named dims at run time
    TYPE = "type"          # a tensor type, e.g. the type of a const
    LABEL = "label"        # control flow targets, carried as attributes
    FUNC = "function"      # call target
    TENSOR = "tensor"      # const literal (numpy array)


REQUIRED = object()   # default of an attribute that must be given


@dataclass(frozen=True)
class AttrSpec:
    name: str
    kind: AttrKind
    default: Any = REQUIRED
    doc: str = ""

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


# type rule: (operand types, attrs) -> result types; raises OpTypeError with a user message
TypeRule = Callable[[list[TensorType], dict[str, Any]], list[TensorType]]
# NumPy reference: (attrs, *arrays) -> array or tuple of arrays; raises isa.errors.Trap
Reference = Callable[..., Any]
# instruction-level decomposition into other ops of the table, for backends that lack the op:
# (emit, operands, attrs, operand_types) -> result operand(s), where emit(op, operands, attrs)
# appends one instruction and returns its result register.
Decomposition = Callable[..., Any]
# adjoint (reverse-mode) rule: (g, attrs, operands, result, cotangent) -> one cotangent per
# operand (None: none flows there). g is an emitter (isa/autodiff/emitter.py) whose methods are
# the ops (`g.mul(ct, y)`), so a rule is written in dlvm instructions; a cotangent may keep the
# result's broadcast shape (the transform sums it back to the operand's). For a one-result op
# `result` and `cotangent` are that result's; for several results, lists (None where no
# cotangent reaches a result).
Adjoint = Callable[..., Any]
# an op whose results carry no gradient: integer, boolean or index results, or piecewise
# constant functions (floor, sign): nothing flows back through it
NO_GRADIENT: Adjoint = lambda g, attrs, xs, y, ct: [None] * len(xs)   # noqa: E731


def NOT_DIFFERENTIABLE(g, attrs, xs, y, ct):
    """The rule of an op whose adjoint is not written yet: `grad` reports the op, with its line,
    when it lies between the differentiated inputs and the result. A row must say this (or
    give a rule) explicitly: a new row left at vjp=None fails the op table's gradient test."""
    raise NotImplementedError("no adjoint rule in this version")
@dataclass(frozen=True)
class Facts:
    """What a backend needs to know about an op beyond its reference, read by every backend
    from the op's record (no backend keeps a list of its own):
    - mathfn: the C math-library function that computes it (libm / CUDA's libdevice base name,
      "rint" for round); costly: it is a call or a polynomial, not one instruction (the JIT's
      cost model counts these).
    - combine: for a reduction, the binary op that merges two partial results; mean: the
      result is then divided by the count of elements reduced.
    - neutral: for a binary op, (the sides where its neutral element may stand, the element for
      a dtype): x * 1 == x; the optimizer removes such operations.
    - involution: applying it twice is the identity (neg, not)."""
    mathfn: str | None = None
    costly: bool = False
    combine: str | None = None
    mean: bool = False
    neutral: tuple[tuple[str, ...], Callable[[Any], object]] | None = None
    involution: bool = False


NO_FACTS = Facts()


# scalar expansion for fusing backends: (scalar_ops, attrs, *values) -> value. None means the op
# is a primitive that each backend lowers itself (see isa/scalar.py for the primitive set).
Expansion = Callable[..., Any]


@dataclass(frozen=True)
class OpDef:
    name: str
    code: int                       # bytecode number: stable forever, never reused
    family: Family
    arity: tuple[int, int | None]   # (min, max) operands; max None = variadic
    infer: TypeRule | None
    reference: Reference | None
    doc: str                        # one-line semantics, in the notation of specs/ops.md
    attrs: tuple[AttrSpec, ...] = ()
    syntax: Syntax = Syntax.PLAIN
    n_results: int | None = 1       # None: decided by the instruction (call)
    terminator: bool = False
    expand: Expansion | None = None
    decompose: Decomposition | None = None
    dtypes: str = ""                # which operand dtypes are accepted, in words (for the spec)
    vjp: Adjoint | None = None      # the adjoint rule (NO_GRADIENT, NOT_DIFFERENTIABLE or a rule)
    extra: dict[str, Any] = field(default_factory=dict)
    facts: Facts = NO_FACTS         # what backends need beyond the reference (Facts)
    # takes str operands or gives str results (movement, equality, casts, the string ops): the
    # table refuses str for every other op before its own rule runs (isa/ops/strings_guard.py)
    strings: bool = False
    # draws from a random stream (isa/ops/random.py): its result is not a function of its
    # operands, so no stage folds, merges, moves or fuses it; the interpreter passes the stream
    random: bool = False
    # its result jumps where an operand crosses a point (rounding; a choice by order, as
    # argmax): a last-bit difference upstream, from another summation order, can change it by
    # a whole step (the native tier compares such programs' results as wholes)
    steps: bool = False

    def attr(self, name: str) -> AttrSpec | None:
        for a in self.attrs:
            if a.name == name:
                return a
        return None

    @property
    def arity_text(self) -> str:
        lo, hi = self.arity
        if hi is None:
            return f"at least {lo} operand{'s' if lo != 1 else ''}"
        if lo == hi:
            return f"{lo} operand{'s' if lo != 1 else ''}"
        return f"{lo} to {hi} operands"

    def with_defaults(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The attributes an instruction means: the given ones plus every default."""
        full = {a.name: a.default for a in self.attrs if not a.required}
        full.update(attrs)
        return full

    def named_shape_attrs(self, attrs: dict[str, Any]) -> list[str]:
        """Names of the SHAPE attributes in `attrs` that mention a named dim (their sizes come
        from each call's dims)."""
        return [a.name for a in self.attrs if a.kind is AttrKind.SHAPE and
                isinstance(attrs.get(a.name), list)
                and any(isinstance(d, str) for d in attrs[a.name])]
