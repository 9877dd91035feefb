"""The disassembler: isa.Module -> canonical `.dlasm` text that parses back to an equal module.

Layout: `module NAME`, the `source` directive (debug only), the constants, then each function,
separated by blank lines; instructions are indented by two spaces; a function that is one block
named `entry` prints no label. Attributes print in the op's AttrSpec order, exactly those present
in `Instr.attrs` (defaults are not filled in, so the module round-trips to equality).

Debug locations: with `debug=True`, each entity whose loc differs from where it lands in the
printed text gets a `loc(L:C)` suffix; one whose loc is exactly that position needs none, since
the parser gives it that loc anyway. Together with `source "FILE"` this reproduces every location,
so text -> bytes -> text -> bytes is the identity. Entities without a loc print none and take their
printed position when the text is parsed again.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from isa.dtypes import DType
from isa.errors import SourceLoc
from isa.module import Constant, ConstRef, Function, Imm, Instr, Module, Operand, Reg
from isa.ops import OPS, AttrKind, AttrSpec, Syntax
from isa.types import TensorType

from .instructions import in_place_specs
from .literals import array_text, imm_text, quote, sigil_name, uniform_value, word

INDENT = "  "


def operand_text(o: Operand) -> str:
    if isinstance(o, Reg):
        return sigil_name("%", o.name)
    if isinstance(o, ConstRef):
        return sigil_name("@", o.name)
    if isinstance(o, Imm):
        return imm_text(o.value)
    return f"?{o!r}"   # not an operand: print something the parser will point at


def attr_text(spec: AttrSpec | None, v: Any) -> str:
    """An attribute value as the parser reads it for the spec's kind."""
    kind = spec.kind if spec is not None else None
    if v is None:
        return "none"
    if kind is AttrKind.STR or (kind is None and isinstance(v, str)):
        return quote(v)
    if kind is AttrKind.LABEL:
        return word(v)
    if kind is AttrKind.FUNC:
        return sigil_name("@", v)
    if isinstance(v, (bool, np.bool_, int, float, np.integer, np.floating)):
        return imm_text(v)
    if isinstance(v, DType):
        return v.text
    if isinstance(v, TensorType):
        return str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(str(x) for x in v) + "]"
    return repr(v)


ELIDED = "elided"     # what stands for a left-out literal; the assembler refuses it by name


class Printer:
    def __init__(self, module: Module, debug: bool, elide_above: int | None = None):
        self.module = module
        self.debug = debug
        self.elide_above = elide_above
        self.lines: list[str] = []

    def emit(self, text: str, loc: SourceLoc | None = None, col: int = 1, before: str = "") -> None:
        """Append a line; with debug, add `loc(L:C)` (ahead of `before`) unless the entity's loc
        is where the line itself will be read from."""
        if self.debug and loc is not None and (loc.line, loc.col) != (len(self.lines) + 1, col):
            text += f" loc({loc.line}:{loc.col})"
        self.lines.append(text + before)

    def run(self) -> str:
        m = self.module
        self.emit(f"module {word(m.name)}")
        if self.debug and m.source is not None:
            self.emit(f"source {quote(m.source)}")
        if m.constants:
            self.lines.append("")
            for c in m.constants.values():
                self.constant(c)
        for f in m.functions.values():
            self.lines.append("")
            self.function(f)
        return "\n".join(self.lines) + "\n"

    def constant(self, c: Constant) -> None:
        fill = uniform_value(c.value)
        if fill is None and self.elide_above is not None and c.value.size > self.elide_above:
            self.emit(f"const {sigil_name('@', c.name)} : {c.type} = {ELIDED}", c.loc,
                      before=f"  ; {summary(c.value)}")
            return
        literal = array_text(fill if fill is not None else c.value)
        self.emit(f"const {sigil_name('@', c.name)} : {c.type} = {literal}", c.loc)

    def function(self, f: Function) -> None:
        params = ", ".join(f"{sigil_name('%', p.name)}: {p.type}" for p in f.params)
        results = str(f.results[0]) if len(f.results) == 1 else \
            "(" + ", ".join(str(t) for t in f.results) + ")"
        self.emit(f"func {sigil_name('@', f.name)}({params}) -> {results}", f.loc, before=" {")
        bare_entry = len(f.blocks) == 1 and f.blocks[0].label == "entry"
        for b in f.blocks:
            if not bare_entry:
                self.lines.append(f"{word(b.label)}:")
            for ins in b.instrs:
                self.emit(INDENT + self.instruction(ins), ins.loc, col=len(INDENT) + 1)
        self.lines.append("}")

    def instruction(self, ins: Instr) -> str:
        op = OPS.get(ins.op)
        head = ", ".join(sigil_name("%", r) for r in ins.results)
        head = f"{head} = {ins.op}" if head else ins.op
        if op is None:   # not an op of the table: print it plainly, the parser will say so
            return " ".join([head, ", ".join(operand_text(o) for o in ins.operands)]).rstrip()
        specs = in_place_specs(op)
        attrs = dict(ins.attrs)
        in_place = [attrs.pop(s.name, None) for s in specs]
        body = self.in_place_text(op.syntax, ins, in_place)
        text = f"{head} {body}".rstrip()
        ordered = [a.name for a in op.attrs if a.name in attrs] + \
            [k for k in attrs if op.attr(k) is None]
        if ordered:
            text += " {" + ", ".join(f"{k} = {attr_text(op.attr(k), attrs[k])}"
                                     for k in ordered) + "}"
        if op.syntax is Syntax.CONST:
            text += f" : {in_place[1]}"
        elif ins.result_type is not None:
            text += f" : {ins.result_type}"
        return text

    @staticmethod
    def in_place_text(syntax: Syntax, ins: Instr, vals: list[Any]) -> str:
        ops = [operand_text(o) for o in ins.operands]
        missing = "?"   # an instruction lacking a required in-place attribute (unverified module)
        if syntax is Syntax.CONST:
            return array_text(vals[0]) if vals[0] is not None else missing
        if syntax is Syntax.JMP:
            return word(vals[0]) if vals[0] is not None else missing
        if syntax is Syntax.BR:
            labels = [word(v) if v is not None else missing for v in vals]
            return ", ".join(ops + labels)
        if syntax is Syntax.CALL:
            callee = sigil_name("@", vals[0]) if vals[0] is not None else missing
            return f"{callee}({', '.join(ops)})"
        if syntax is Syntax.ASSERT:
            return ", ".join(ops + [quote(vals[0]) if vals[0] is not None else missing])
        return ", ".join(ops)


def instruction_text(ins: Instr) -> str:
    """One instruction as it appears in a listing, without indentation or location."""
    return Printer(Module("main"), debug=False).instruction(ins)


def summary(value: np.ndarray) -> str:
    """What an elided constant holds: count, range, mean and a digest of its bytes."""
    import hashlib
    v = np.asarray(value)
    if v.dtype == object:     # str: the texts, not the pointers
        data = "\0".join(v.reshape(-1).tolist()).encode("utf-8", "surrogatepass")
    else:
        data = np.ascontiguousarray(v).tobytes()
    digest = hashlib.sha256(data).hexdigest()[:12]
    if v.dtype.kind in "fiu" and v.size:
        with np.errstate(all="ignore"):
            rng = f", min {v.min():.4g}, max {v.max():.4g}, mean {float(v.mean()):.4g}"
    else:
        rng = ""
    return f"{v.size} values{rng}, sha256 {digest}; `--weights` prints them"


def disassemble_module(module: Module, debug: bool = True, elide_above: int | None = None) -> str:
    """Canonical text of `module`; with `debug`, the source file and locations too. Constants
    with more than `elide_above` elements (and not one value repeated) are printed as `elided`
    with a summary: such text shows the code, and does not assemble."""
    return Printer(module, debug, elide_above).run()
