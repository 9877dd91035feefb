"""The verifier's rejections, one row per rule (WebAssembly's assert_invalid, as a table): each
program is well-formed text that must be rejected at the named line with the named message."""
from __future__ import annotations

import textwrap

import pytest

import assembler
from isa.errors import DlvmError

HEAD = "module v\n"

INVALID = [
    # (body, line of the error, message)
    ("""func @main(%x: f32[4]) -> f32[4] {
          %y = add %x, %x
        }""", 3, "block 'entry' must end in jmp, br or ret"),
    ("""func @main(%x: f32[4]) -> f32[4] {
          ret %x
          %y = add %x, %x
        }""", 3, "ret must end its block"),
    ("""func @main(%x: f32[4]) -> f32[4] {
        a:
          jmp a
        a:
          ret %x
        }""", 5, "label 'a' is defined twice"),
    ("""func @main(%x: f32[4]) -> f32[4] {
          %y = cast %x {to = i32}
          %y = add %x, 1.0
          ret %x
        }""", 4, "%y holds i32 of rank 1; it cannot be assigned f32 of rank 1"),
    ("""func @main(%x: f32[4], %c: bool[]) -> f32[4] {
        entry:
          br %c, then, join
        then:
          %y = neg %x
          jmp join
        join:
          %z = add %x, %y
          ret %z
        }""", 9, "%y may be used before it is defined"),
    ("""func @main(%x: f32[4]) -> f32[4] {
          br %x, a, a
        a:
          ret %x
        }""", 3, "br needs a bool scalar condition, got f32[4]"),
    ("""func @main(%x: f32[4]) -> (f32[4], f32[4]) {
          ret %x
        }""", 3, "ret gives 1 value, but @main returns 2"),
    ("""func @main(%x: f32[4]) -> i32[4] {
          ret %x
        }""", 3, "ret value 0 has type f32[4], but @main returns i32[4]"),
    ("""func @f(%a: f32[N], %b: f32[N]) -> f32[N] {
          ret %a
        }
        func @main(%x: f32[4]) -> f32[4] {
          %y = call @f(%x)
          ret %y
        }""", 6, "@f takes 2 arguments, got 1"),
    ("""func @main(%x: f32[4]) -> f32[4] {
          %y = call @nowhere(%x)
          ret %y
        }""", 3, "call to an undefined function @nowhere"),
    ("""func @main(%x: f32[4]) -> f32[4] {
          %y = add %x, @w
          ret %y
        }""", 3, "@w is not a constant of this module"),
    ("""func @main(%x: i32[4]) -> i32[4] {
          %y = add %x, 1.5
          ret %y
        }""", 3, "immediate 1.5 is not a valid i32"),
    ("""func @main(%x: i8[4]) -> i8[4] {
          %y = add %x, 300
          ret %y
        }""", 3, "immediate 300 is not a valid i8"),
    ("""func @main(%x: f32[4]) -> f32[4] {
          %y = matmul %x, 1.0
          ret %y
        }""", 3, "matmul does not take immediate operands"),
    ("""func @main(%x: f32[4], %y: i32[4]) -> f32[4] {
          %z = add %x, %y
          ret %z
        }""", 3, "add operand dtypes f32 and i32 differ; insert a cast"),
    ("""func @main(%x: f32[3], %y: f32[4]) -> f32[4] {
          %z = mul %x, %y
          ret %z
        }""", 3, "mul: shapes [3] and [4] do not broadcast"),
    ("""func @main(%x: i32[4]) -> i32[4] {
          %y = exp %x
          ret %y
        }""", 3, "exp takes float operands, got i32"),
    ("""func @main(%x: f32[4]) -> f32[] {
          %y = reduce_sum %x {axes = [1]}
          ret %y
        }""", 3, "reduce_sum: axis 1 is out of range for rank 1"),
    ("""func @main(%x: f32[4]) -> f32[4] {
          %c = const 0.0 : f32[M]
          ret %x
        }""", 3, "dim M is not bound by the parameters of @main"),
    ("""func @main(%x: f32[4]) -> f32[4] {
          %c = gt %x, 0.0
          assert %x, "positive"
          ret %x
        }""", 4, "assert needs a bool condition, got f32[4]"),
    ("""func @main(%x: f32[N]) -> f32[N] {
          %y = gelu %x {approximate = "fast"}
          ret %y
        }""", 3, 'gelu approximate must be "none" or "tanh", got "fast"'),
]


@pytest.mark.parametrize("body, line, message", INVALID, ids=[m for _, _, m in INVALID])
def test_invalid_program_is_rejected_at_its_line(body, line, message):
    text = HEAD + textwrap.dedent("        " + body) + "\n"
    with pytest.raises(DlvmError) as e:
        assembler.assemble(text, "v.dlasm")
    err = e.value
    assert message in err.message
    assert err.loc is not None and err.loc.line == line, err.format()
    assert f"v.dlasm:{line}:" in err.format()


def test_a_loop_whose_shape_changes_widens_to_unknown_dims():
    # a register may change its dims (not its dtype or rank) around a loop: the verifier joins
    # the paths to '?' instead of rejecting, and the run-time shapes are checked where they meet
    text = HEAD + textwrap.dedent("""
        func @main(%x: f32[2], %n: i64[]) -> f32[?] {
        entry:
          %i = const 0 : i64[]
          jmp head
        head:
          %c = lt %i, %n
          br %c, body, done
        body:
          %x = concat %x, %x {axis = 0}
          %i = add %i, 1
          jmp head
        done:
          ret %x
        }
        """)
    m = assembler.assemble(text, "v.dlasm")
    import numpy as np

    import dlvmrt
    (y,) = dlvmrt.VM(m).run("main", np.ones(2, np.float32), np.int64(3))
    assert y.shape == (16,)


def test_a_register_keeps_its_dtype_across_paths_that_meet():
    # each path alone is consistent; where they meet %x would be f32 or i64
    text = HEAD + textwrap.dedent("""
        func @main(%c: bool[]) -> f32[] {
        entry:
          br %c, a, b
        a:
          %x = const 1.5 : f32[]
          jmp done
        b:
          %x = const 7 : i64[]
          jmp done
        done:
          %y = add %x, 1.0
          ret %y
        }
        """)
    with pytest.raises(DlvmError) as e:
        assembler.assemble(text, "v.dlasm")
    assert "%x holds f32 of rank 0 (from line 7); it cannot be assigned i64" in e.value.message
    assert e.value.loc.line == 10


def builder_module(build):
    from isa.builder import ModuleBuilder
    mb = ModuleBuilder("m")
    build(mb)
    return mb.module


def test_an_integer_immediate_too_large_for_a_float_dtype_is_invalid():
    from isa.verify import verify_module
    m = builder_module(lambda mb: (lambda f: f.ret(f.add(f.arg("x"), 10**400)))(
        mb.function("main", [("x", "f32[2]")], ["f32[2]"])))
    with pytest.raises(DlvmError, match="immediate 1000.* is not a valid f32"):
        verify_module(m)


def test_negative_dims_and_duplicate_parameters_are_invalid():
    from isa.dtypes import DType
    from isa.module import Function, Param
    from isa.types import TensorType
    from isa.verify import verify_module
    m = builder_module(lambda mb: (lambda f: f.ret(f.arg("x")))(
        mb.function("main", [("x", "f32[2]")], ["f32[2]"])))
    f: Function = m.functions["main"]
    f.params.append(Param("x", TensorType(DType.F32, (2,))))
    with pytest.raises(DlvmError, match="parameter %x of @main is declared twice"):
        verify_module(m)
    f.params.pop()
    f.results[0] = TensorType(DType.F32, (-2,))
    with pytest.raises(DlvmError, match="negative dim"):
        verify_module(m)
