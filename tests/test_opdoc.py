"""specs/ops.md is generated from the op table; these tests keep the two from drifting."""
from __future__ import annotations

from pathlib import Path

from isa.opdoc import REGENERATE, render_ops_markdown, syntax_line
from isa.ops import OPS

SPEC = Path(__file__).resolve().parent.parent / "specs" / "ops.md"


def test_committed_op_reference_is_current():
    committed = SPEC.read_text(encoding="utf-8") if SPEC.exists() else ""
    assert committed == render_ops_markdown(), \
        f"specs/ops.md is stale: regenerate it with `{REGENERATE}` and commit the result"


def test_every_op_has_a_section_with_its_code():
    text = render_ops_markdown()
    for op in OPS.values():
        section = text.split(f"### `{op.name}`\n", 1)
        assert len(section) == 2, f"{op.name} has no section"
        body = section[1].split("\n### ", 1)[0]
        assert f"- code: {op.code}\n" in body
        assert op.doc.rstrip(".") in body
        for a in op.attrs:
            assert f"| `{a.name}` | {a.kind.value} |" in body


def test_syntax_lines_show_optional_and_variadic_operands():
    assert syntax_line(OPS["conv2d"]) == "%r = conv2d %x, %w[, %bias] {strides, pads, dilations, groups}"
    assert syntax_line(OPS["layer_norm"]) == "%r = layer_norm %x[, %scale[, %bias]] {axis, epsilon}"
    assert syntax_line(OPS["concat"]) == "%r = concat %a[, %b, ...] {axis}"
    assert syntax_line(OPS["add"]) == "%r = add %a, %b"
    assert syntax_line(OPS["iota"]) == "%r = iota {shape, dtype, axis}"
    assert syntax_line(OPS["const"]) == "%r = const VALUE : TYPE"


def test_required_attributes_and_defaults_are_rendered():
    text = render_ops_markdown()
    assert "| `kernel` | int list | required |" in text
    assert "| `strides` | int list | `[1, 1]` |" in text
    assert "| `keepdims` | bool | `false` |" in text
    assert "| `dtype` | dtype | `i64` |" in text
