"""Fuzzing the assembler: random and mutated text either assembles or raises a DlvmError subclass
with a location inside the text, never any other exception."""
from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shared_paths import SHARED_EXAMPLES

from assembler import assemble
from isa.errors import DlvmError
from isa.ops import OPS, Syntax

FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])

SEED_TEXTS = [p.read_text(encoding="utf-8") for p in sorted(SHARED_EXAMPLES.glob("*.dlasm"))
              if "file " not in p.read_text(encoding="utf-8")] if SHARED_EXAMPLES.is_dir() else []
SEED_TEXTS += [
    "module m\nconst @b : f32[2, 2] = [[1, 2], [3, 4]]\n"
    "func @f(%x: f32[N, 2], %n: i64[]) -> (f32[N, 2], f32[]) {\n"
    "  %y = add %x, @b\n  %s = reduce_sum %y {axes = [0, 1], keepdims = false}\n"
    "  %c = gt %n, 0\n  br %c, yes, no\nyes:\n  %a, %b = call @g(%s)\n"
    '  assert %c, "n \\"must\\" be positive"\n  ret %y, %a\n'
    "no:\n  %z = const 0.0 : f32[]\n  ret %y, %z loc(3:4)\n}\n"
    "func @g(%s: f32[]) -> (f32[], f32[]) {\n  %t = cast %s {to = f32}\n  ret %t, %s\n}\n",
]
# pieces that mutations splice in: every token kind and the usual troublemakers
TOKENS = ["%x", "%y", "@b", "@g", "@f", "0", "-1", "1.5", "1e999", "99999999999999999999", "nan",
          "-inf", "true", ",", "=", ":", "(", ")", "[", "]", "{", "}", "->", "?", '"s"', '"',
          "\\", ";", "\n", " ", "f32[N, 2]", "i8[]", "bool[?]", "loc(1:1)", "loc(0:0)", "add",
          "call", "const", "jmp", "br", "ret", "assert", "func", "module", "source", "file",
          "entry:", "yes", "none", "{axes = [9]}", "{perm = [1, 0]}", "{to = i64}", "#", "\t", "é"]


def check(text: str) -> None:
    try:
        assemble(text, "fuzz.dlasm")
    except DlvmError as e:
        e.format()   # the diagnostic itself must render
        if e.loc is not None and e.loc.file == "fuzz.dlasm":
            assert 1 <= e.loc.line <= text.count("\n") + 1, e.format()
            assert e.loc.col >= 1


@FUZZ
@given(st.text(alphabet=st.sampled_from(list("%@[](){},:=-?.;\"\\ \n\tabcfirxyz0129eE")),
               max_size=120))
def test_random_text(text: str):
    check(text)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=40))
def test_random_token_soup(tokens: list[str]):
    check(" ".join(tokens))


def mutate(text: str, ops: list[tuple[int, int, int, int]]) -> str:
    """Apply (kind, position, length, token index) edits: delete, insert, replace characters, or
    replace a whole word with another token."""
    for kind, pos, length, tok in ops:
        pos %= len(text) + 1
        piece = TOKENS[tok % len(TOKENS)]
        if kind == 0:
            text = text[:pos] + text[pos + length:]
        elif kind == 1:
            text = text[:pos] + piece + text[pos:]
        elif kind == 2:
            text = text[:pos] + piece + text[pos + length:]
        else:
            words = [m.span() for m in re.finditer(r"\S+", text)]
            if words:
                a, b = words[pos % len(words)]
                text = text[:a] + piece + text[b:]
    return text


EDITS = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 10_000), st.integers(1, 4),
                           st.integers(0, 1000)), min_size=1, max_size=4)


@FUZZ
@given(st.sampled_from(SEED_TEXTS), EDITS)
def test_mutated_examples(text: str, edits):
    check(mutate(text, edits))


PLAIN_OPS = sorted(name for name, op in OPS.items() if op.syntax is Syntax.PLAIN)
NUMBERS = [-3, -1, 0, 1, 2, 3, 5, 2**63 - 1, -2**63]


@FUZZ
@given(st.sampled_from(SEED_TEXTS), st.lists(st.integers(0, 10_000), min_size=1, max_size=6),
       st.lists(st.sampled_from(NUMBERS), min_size=1, max_size=6))
def test_well_formed_text_with_other_ops_and_numbers(text: str, picks, numbers):
    """Still parses, so the verifier and every op's type rule see odd but well-formed input."""
    names = list(re.finditer(r"(?<== )[a-z_0-9]+(?= )", text))
    for k, pick in enumerate(picks):
        if names:
            m = names[pick % len(names)]
            text = text[:m.start()] + PLAIN_OPS[(pick + k) % len(PLAIN_OPS)].ljust(
                m.end() - m.start()) + text[m.end():]
            names = list(re.finditer(r"(?<== )[a-z_0-9]+(?= )", text))
    ints = list(re.finditer(r"(?<=[\[ ])-?\d+(?=[\],])", text))
    for k, n in enumerate(numbers):
        if ints:
            m = ints[(k * 7919) % len(ints)]
            text = text[:m.start()] + str(n) + text[m.end():]
            ints = list(re.finditer(r"(?<=[\[ ])-?\d+(?=[\],])", text))
    check(text)


def test_seeds_assemble():
    for text in SEED_TEXTS:
        assemble(text)
