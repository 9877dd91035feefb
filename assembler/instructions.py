"""Parsing one instruction line. The op's record (`isa.ops.OPS`) decides everything: its `syntax`
picks the shape of the line, its AttrSpecs say which attributes exist and how their values are
written. No op name appears here.

Every instruction line has the shape

    [%r, %s =] OP <part given by the op's Syntax> [{attr = value, ...}] [: TYPE] [loc(L:C)]

Attributes that the syntax writes in place (a jump's label, a call's callee, an assert's message,
a const's literal and type) are taken from the op's AttrSpecs by kind, in their table order.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from isa.dtypes import BY_NAME
from isa.errors import InternalError
from isa.module import Instr
from isa.ops import OPS, AttrKind, AttrSpec, OpDef, Syntax

from .cursor import Cursor, did_you_mean
from .lexer import Token
from .literals import INT64, LiteralError, is_scalar_token, scalar_value, tree_to_array

# which attribute kinds each syntax writes in place, in order
IN_PLACE: dict[Syntax, tuple[AttrKind, ...]] = {
    Syntax.PLAIN: (),
    Syntax.CONST: (AttrKind.TENSOR, AttrKind.TYPE),
    Syntax.JMP: (AttrKind.LABEL,),
    Syntax.BR: (AttrKind.LABEL, AttrKind.LABEL),
    Syntax.RET: (),
    Syntax.CALL: (AttrKind.FUNC,),
    Syntax.ASSERT: (AttrKind.STR,),
}


def in_place_specs(op: OpDef) -> list[AttrSpec]:
    """The AttrSpecs the op's syntax writes in place, matched to IN_PLACE by kind."""
    out: list[AttrSpec] = []
    pool = list(op.attrs)
    for kind in IN_PLACE.get(op.syntax, ()):
        spec = next((a for a in pool if a.kind is kind), None)
        if spec is None:
            raise InternalError(f"op {op.name} has syntax {op.syntax.name} but no {kind.value} "
                                f"attribute to write in place")
        pool.remove(spec)
        out.append(spec)
    return out


def article(kind: AttrKind) -> str:
    return f"{'an' if kind.value[0] in 'aeiou' else 'a'} {kind.value}"


class InstrParser:
    """Parses instruction lines from a Cursor (the caller positions it at the line's start)."""

    def __init__(self, cur: Cursor):
        self.cur = cur
        self.pending_literal: tuple[Any, Token] | None = None   # a const's literal, until its type
        self.by_syntax: dict[Syntax, Callable[[OpDef, Instr, list[AttrSpec]], None]] = {
            Syntax.PLAIN: self.plain,
            Syntax.CONST: self.const,
            Syntax.JMP: self.jmp,
            Syntax.BR: self.br,
            Syntax.RET: self.ret,
            Syntax.CALL: self.call,
            Syntax.ASSERT: self.assert_,
        }

    def instruction(self) -> Instr:
        cur = self.cur
        first = cur.tok
        results: list[str] = []
        if cur.at("REG"):
            results.append(cur.advance().value)
            while cur.accept_punct(","):
                results.append(cur.expect("REG", "a result register").value)
            if not cur.at_punct("="):
                raise cur.fail(f"expected '=' after the result register{'s' * (len(results) > 1)}"
                               f", got {cur.tok.describe()}")
            cur.advance()
        op_tok = cur.expect("NAME", "an op name")
        op = OPS.get(op_tok.value)
        if op is None:
            raise cur.fail(f"unknown op '{op_tok.text}'{did_you_mean(op_tok.text, OPS)}", op_tok)
        ins = Instr(op.name, results, [], {}, None, cur.loc_of(first))
        specs = in_place_specs(op)
        handler = self.by_syntax.get(op.syntax)
        if handler is None:
            raise InternalError(f"the assembler has no text form for syntax {op.syntax.name}")
        handler(op, ins, specs)
        if cur.at_punct("{"):
            self.attributes(op, ins, specs)
        if op.syntax is Syntax.CONST:
            self.const_type(op, ins, specs)
        elif cur.accept_punct(":"):
            ins.result_type = cur.type()
        ins.loc = cur.loc_suffix(ins.loc)
        cur.expect_newline("the instruction")
        # attributes in table order, whatever order the text used, so equal text means equal bytes
        ins.attrs = {a.name: ins.attrs[a.name] for a in op.attrs if a.name in ins.attrs}
        return ins

    # ---- the part of the line that each syntax owns -------------------------------------------

    def plain(self, op: OpDef, ins: Instr, specs: list[AttrSpec]) -> None:
        ins.operands = self.cur.operand_list()

    def ret(self, op: OpDef, ins: Instr, specs: list[AttrSpec]) -> None:
        ins.operands = self.cur.operand_list()

    def jmp(self, op: OpDef, ins: Instr, specs: list[AttrSpec]) -> None:
        ins.attrs[specs[0].name] = self.cur.label(f"a label after {op.name}")

    def br(self, op: OpDef, ins: Instr, specs: list[AttrSpec]) -> None:
        cur = self.cur
        ins.operands = [cur.operand()]
        for spec in specs:
            cur.expect_punct(",", f" before the {spec.name} label of {op.name}")
            ins.attrs[spec.name] = cur.label(f"the {spec.name} label of {op.name}")

    def call(self, op: OpDef, ins: Instr, specs: list[AttrSpec]) -> None:
        cur = self.cur
        ins.attrs[specs[0].name] = cur.expect("GLOBAL", f"the @function that {op.name} calls").value
        cur.expect_punct("(", " before the arguments")
        ins.operands = cur.operand_list(closer=")")
        cur.expect_punct(")", " after the arguments")

    def assert_(self, op: OpDef, ins: Instr, specs: list[AttrSpec]) -> None:
        cur = self.cur
        ins.operands = [cur.operand()]
        cur.expect_punct(",", f" before the message of {op.name}")
        ins.attrs[specs[0].name] = cur.expect("STRING", 'a "message" string').value

    def const(self, op: OpDef, ins: Instr, specs: list[AttrSpec]) -> None:
        # the literal's dtype comes from the type after it; keep the tree until then
        first = self.cur.tok
        self.pending_literal = (self.cur.literal_tree(), first)

    def const_type(self, op: OpDef, ins: Instr, specs: list[AttrSpec]) -> None:
        cur = self.cur
        value_spec, type_spec = specs
        if not cur.accept_punct(":"):
            raise cur.fail(f"{op.name} needs its type after the literal, as in "
                           f"'{op.name} 0.0 : f32[4]'; got {cur.tok.describe()}")
        t = cur.type()
        assert self.pending_literal is not None
        tree, first = self.pending_literal
        self.pending_literal = None
        static = t.shape if t.is_static else None
        try:
            value = tree_to_array(tree, t.dtype, static, first)
        except LiteralError as e:
            raise cur.literal_fail(e) from None
        ins.attrs[value_spec.name] = value
        ins.attrs[type_spec.name] = t

    # ---- {attr = value, ...} ----------------------------------------------------------------

    def attributes(self, op: OpDef, ins: Instr, specs: list[AttrSpec]) -> None:
        cur = self.cur
        cur.advance()
        in_place = {s.name for s in specs}
        seen: set[str] = set()
        while not cur.at_punct("}"):
            if seen:
                cur.expect_punct(",", " between attributes")
            name_tok = cur.expect("NAME", "an attribute name")
            name = name_tok.value
            spec = op.attr(name)
            if spec is None:
                known = ", ".join(a.name for a in op.attrs if a.name not in in_place) or "none"
                raise cur.fail(f"{op.name} has no attribute '{name}' (it takes: {known})", name_tok)
            if name in in_place:
                raise cur.fail(f"the {spec.kind.value} '{name}' of {op.name} is written in the "
                               f"instruction, not in braces", name_tok)
            if name in seen:
                raise cur.fail(f"attribute '{name}' is given twice", name_tok)
            seen.add(name)
            cur.expect_punct("=", f" after the attribute name '{name}'")
            ins.attrs[name] = self.attr_value(op, spec)
        cur.advance()

    def attr_value(self, op: OpDef, spec: AttrSpec) -> Any:
        cur = self.cur
        tok = cur.tok
        if cur.at_word("none") and not spec.required:
            cur.advance()
            return None
        try:
            value = self.attr_by_kind(spec.kind)
        except LiteralError as e:
            raise cur.literal_fail(e) from None
        if value is _BAD:
            got = "a list" if tok.kind == "PUNCT" and tok.text == "[" else tok.describe()
            raise cur.fail(f"{op.name} attribute '{spec.name}' must be {article(spec.kind)}, "
                           f"got {got}", tok)
        return value

    def attr_by_kind(self, kind: AttrKind) -> Any:
        """The value of the kind at the cursor, or _BAD (cursor unmoved) when it is not one."""
        cur = self.cur
        tok = cur.tok
        if kind is AttrKind.INT:
            return self.int_value() if tok.kind == "INT" else _BAD
        if kind is AttrKind.FLOAT:
            if is_scalar_token(tok) and tok.value not in ("true", "false"):
                return scalar_value(cur.advance())
            return _BAD
        if kind is AttrKind.BOOL:
            if tok.kind == "NAME" and tok.value in ("true", "false"):
                return scalar_value(cur.advance())
            return _BAD
        if kind in (AttrKind.INTS, AttrKind.SHAPE):
            return self.int_list(allow_names=kind is AttrKind.SHAPE) if cur.at_punct("[") else _BAD
        if kind is AttrKind.DTYPE:
            if tok.kind == "NAME" and tok.value in BY_NAME:
                return BY_NAME[cur.advance().value]
            if tok.kind == "NAME":
                raise cur.fail(f"unknown dtype '{tok.text}'{did_you_mean(tok.text, BY_NAME)} "
                               f"(dtypes: {', '.join(BY_NAME)})")
            return _BAD
        if kind is AttrKind.STR:
            return cur.advance().value if tok.kind == "STRING" else _BAD
        if kind is AttrKind.TYPE:
            return cur.type() if tok.kind == "NAME" else _BAD
        if kind is AttrKind.LABEL:
            return cur.label() if tok.kind in ("NAME", "STRING") else _BAD
        if kind is AttrKind.FUNC:
            return cur.advance().value if tok.kind == "GLOBAL" else _BAD
        return _BAD   # TENSOR: only a const's literal, written in place

    def int_value(self) -> int:
        tok = self.cur.advance()
        if not INT64.min <= tok.value <= INT64.max:
            raise self.cur.fail(f"integer {tok.text} does not fit in 64 bits", tok)
        return tok.value

    def int_list(self, allow_names: bool) -> list[int | str]:
        cur = self.cur
        cur.advance()
        out: list[int | str] = []
        while not cur.at_punct("]"):
            if out:
                cur.expect_punct(",", " between list elements")
            tok: Token = cur.tok
            if tok.kind == "INT":
                out.append(self.int_value())
            elif allow_names and tok.kind == "NAME":
                out.append(cur.advance().value)
            else:
                what = "an integer or a dim name" if allow_names else "an integer"
                raise cur.fail(f"expected {what} in the list, got {tok.describe()}")
        cur.advance()
        return out


_BAD = object()
