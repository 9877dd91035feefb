"""Generate `specs/ops.md`, the op reference, from the op table (the only source of op facts).

    python -m isa.opdoc > specs/ops.md

tests/test_opdoc.py fails when the committed file differs from what this prints, so the reference
cannot drift from the table (as CPython generates its opcode metadata from one definition).
"""
from __future__ import annotations

import sys
from typing import Any

from .dtypes import DType
from .ops import OPS, AttrSpec, Family, OpDef, Syntax
from .ops.opdef import NO_GRADIENT, NOT_DIFFERENTIABLE

REGENERATE = "python -m isa.opdoc > specs/ops.md"

HEADER = f"""# dlvm op reference

<!-- Generated from the op table (isa/ops/) by `{REGENERATE}`. Do not edit by hand. -->

Every instruction of dlvm is one row of the op table; this page lists them by family. Each entry
gives how the instruction is written, how many operands it takes, which dtypes it accepts, its
attributes (with defaults; an attribute without one is required), its meaning, and its stable
bytecode number.

Notation: `r` is the result, `a`, `b`, ... (or the operand names in the syntax line) the operands.
Shapes follow NumPy; see `specs/semantics.md` for broadcasting, immediates, integer division,
overflow, NaN, rounding, casts, reductions and named dims.
"""

_FAMILY_TEXT = {
    Family.UNARY: "One operand; the result has its shape. A fusing backend lowers these, or "
                  "their scalar expansion into primitives, inside one kernel.",
    Family.BINARY: "Two operands of one dtype, broadcast together as in NumPy; either may be an "
                   "immediate, which takes the other operand's dtype.",
    Family.SELECT: "Three operands broadcast together; the two values may be immediates.",
    Family.CAST: "One operand converted to another dtype.",
    Family.REDUCE: "Reduce over `axes` (absent: all axes); `keepdims` defaults to false (NumPy).",
    Family.ARGREDUCE: "The i64 position of an extremum along one axis.",
    Family.CONTRACTION: "Sums of products over a shared dim.",
    Family.NN: "Neural-network layers. Those with a decomposition rule are rewritten into "
               "reductions and elementwise ops for backends that lack them.",
    Family.MOVEMENT: "Rearrange elements without arithmetic.",
    Family.MISC: "Values that come from literals, registers or shapes.",
    Family.CONTROL: "Jumps, branches, returns, calls and asserts; a block ends in jmp, br or ret.",
}


def _operand_names(op: OpDef) -> list[str]:
    names = op.extra.get("operands")
    if names is not None:
        return list(names)
    lo, hi = op.arity
    count = lo if hi is None else hi
    letters = [chr(ord("a") + i) for i in range(count)]
    return letters + (["..."] if hi is None else [])


def _operand_text(op: OpDef) -> str:
    """`%x, %w[, %bias]`: optional operands in brackets, `...` for variadic tails."""
    names = _operand_names(op)
    lo, _ = op.arity
    parts: list[str] = []
    for i, n in enumerate(names):
        item = n if n == "..." else f"%{n}"
        sep = ", " if parts else ""
        if i < lo or n == "...":
            parts.append(sep + item)
        else:
            parts.append(f"[{sep}{item}")
    closing = "]" * sum(1 for i, n in enumerate(names) if i >= lo and n != "...")
    return "".join(parts) + closing


def syntax_line(op: OpDef) -> str:
    """How one instruction of `op` is written in .dlasm text."""
    if op.syntax is not Syntax.PLAIN:
        return op.syntax.value
    text = f"%r = {op.name}"
    operands = _operand_text(op)
    if operands:
        text += " " + operands
    if op.attrs:
        text += " {" + ", ".join(a.name for a in op.attrs) + "}"
    return text


def format_value(v: Any) -> str:
    """An attribute default as it is written in .dlasm text."""
    if v is None:
        return "absent"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, DType):
        return v.text
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(format_value(x) for x in v) + "]"
    return repr(v)


def _attr_row(a: AttrSpec) -> str:
    default = "required" if a.required else f"`{format_value(a.default)}`"
    doc = a.doc.replace("|", "\\|")
    return f"| `{a.name}` | {a.kind.value} | {default} | {doc} |"


def gradient_text(op: OpDef) -> str:
    """What `grad` does with the op (specs/autodiff.md)."""
    if op.family is Family.CONTROL:
        return "control flow and calls are differentiated by the transform itself"
    if op.vjp is NO_GRADIENT:
        return "none flows through it (integer, boolean or index results, or piecewise constant)"
    if op.vjp is None or op.vjp is NOT_DIFFERENTIABLE:
        return "not differentiable in this version (`grad` reports it when it lies on the path)"
    return "differentiable (adjoint rule in its record)"


def render_op(op: OpDef) -> list[str]:
    out = [f"### `{op.name}`", "", "```", syntax_line(op), "```", ""]
    out.append(f"- code: {op.code}")
    out.append(f"- operands: {op.arity_text}")
    if op.dtypes:
        # `any` means every dtype but str unless the record takes strings (OpDef.strings)
        shown = op.dtypes
        if op.strings and "str" not in shown:
            shown += " (str included)"
        out.append(f"- dtypes: {shown}")
    out.append(f"- gradient: {gradient_text(op)}")
    if op.n_results != 1:
        results = "decided by the instruction" if op.n_results is None else str(op.n_results)
        out.append(f"- results: {results}")
    if op.expand is not None:
        out.append("- fusing backends expand it into primitive scalar ops")
    if op.decompose is not None:
        out.append("- has a decomposition into other ops of this table")
    out += ["", op.doc.rstrip(".") + ".", ""]
    if op.attrs:
        out += ["| attribute | kind | default | meaning |", "|---|---|---|---|"]
        out += [_attr_row(a) for a in op.attrs]
        out.append("")
    return out


def render_ops_markdown() -> str:
    """The whole of specs/ops.md: a section per family, ops in bytecode order within it."""
    lines = HEADER.splitlines() + [""]
    families = [f for f in Family if any(op.family is f for op in OPS.values())]
    lines += ["## Contents", ""]
    for fam in families:
        names = sorted((op for op in OPS.values() if op.family is fam), key=lambda o: o.code)
        anchor = fam.value.replace(" ", "-")
        lines.append(f"- [{fam.value.capitalize()}](#{anchor}): "
                     + ", ".join(f"`{op.name}`" for op in names))
    lines.append("")
    for fam in families:
        lines += [f"## {fam.value.capitalize()}", "", _FAMILY_TEXT.get(fam, ""), ""]
        for op in sorted((op for op in OPS.values() if op.family is fam), key=lambda o: o.code):
            lines += render_op(op)
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.rstrip("\n") + "\n"


def main() -> None:
    sys.stdout.write(render_ops_markdown())


if __name__ == "__main__":
    main()
