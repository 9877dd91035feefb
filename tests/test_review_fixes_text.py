"""Regressions from the assembler review: surrogate escapes and the full u64 / i64 literal range
(what the printer writes must read back)."""
from __future__ import annotations

import numpy as np
import pytest

from assembler import assemble, disassemble, parse
from dlvmrt import VM
from isa.bytecode.decode import decode
from isa.bytecode.encode import encode
from isa.errors import InvalidError, MalformedError

U64_MAX = 2 ** 64 - 1
I64_MIN = -2 ** 63


# ---- surrogate escapes -------------------------------------------------------------------------

@pytest.mark.parametrize("esc", ["d800", "DFFF", "dc00"])
def test_surrogate_escape_is_rejected_with_a_location(esc):
    text = f'func @main(%x: f32[]) -> f32[] {{\n  %"a\\u{{{esc}}}" = neg %x\n  ret %x\n}}'
    with pytest.raises(MalformedError) as e:
        parse(text)
    msg = str(e.value)
    assert "<input>:2:6:" in msg and "surrogate code point" in msg


def test_raw_surrogate_in_a_python_string_is_rejected():
    with pytest.raises(MalformedError) as e:
        parse('func @main(%x: f32[]) -> f32[] {\n  %"a\ud800" = neg %x\n  ret %x\n}')
    assert "surrogate code point" in str(e.value)


def test_non_surrogate_escapes_still_read():
    m = parse('func @main(%x: f32[]) -> f32[] {\n  %"a\\u{e9}\\u{1F600}" = neg %x\n  ret %x\n}')
    assert m.functions["main"].blocks[0].instrs[0].results == ["a\u00e9\U0001F600"]


# ---- u64 and i64 extremes ----------------------------------------------------------------------

EXTREMES = [
    f"""func @main(%x: u64[2]) -> u64[2] {{
  %y = add %x, {U64_MAX}
  ret %y
}}""",
    f"""const @c : u64[2] = [{U64_MAX}, 0]
const @d : i64[2] = [{I64_MIN}, {2 ** 63 - 1}]
func @main(%x: i64[2]) -> i64[2] {{
  %a = const {U64_MAX} : u64[1]
  %b = add %x, {I64_MIN}
  %c = add %b, @d
  ret %c
}}""",
]


@pytest.mark.parametrize("text", EXTREMES)
def test_u64_max_and_i64_min_round_trip(text):
    m = assemble(text)
    printed = disassemble(m)
    assert parse(printed) == m
    assert disassemble(parse(printed)) == printed
    data = encode(m)
    again = disassemble(decode(data))
    assert encode(assemble(again)) == data


def test_u64_max_immediate_runs():
    (y,) = VM(assemble(EXTREMES[0]), jit="off").run("main", np.array([0, 1], np.uint64))
    np.testing.assert_array_equal(y, np.array([U64_MAX, 0], np.uint64))


@pytest.mark.parametrize("text, err, words", [
    (f"func @main(%x: i64[2]) -> i64[2] {{\n  %y = add %x, {U64_MAX}\n  ret %y\n}}",
     InvalidError, "not a valid i64"),
    (f"func @main() -> i64[1] {{\n  %a = const {2 ** 63} : i64[1]\n  ret %a\n}}",
     MalformedError, "out of range for i64"),
    ("const @c : u64[1] = [-1]\nfunc @main() -> u64[1] {\n  ret @c\n}",
     MalformedError, "out of range for u64"),
    (f"func @main(%x: u64[2]) -> u64[2] {{\n  %y = add %x, {2 ** 64}\n  ret %y\n}}",
     MalformedError, "does not fit in 64 bits"),
    (f"func @main(%x: i64[2]) -> i64[2] {{\n  %y = add %x, {I64_MIN - 1}\n  ret %y\n}}",
     MalformedError, "does not fit in 64 bits"),
])
def test_the_dtype_decides_what_fits(text, err, words):
    with pytest.raises(err) as e:
        assemble(text)
    assert words in str(e.value)
