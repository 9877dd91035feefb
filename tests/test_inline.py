"""Inlining calls of one-block functions (isa.inline): same results, fewer calls; callees
with control flow, calls or recursion stay calls."""
from __future__ import annotations

import numpy as np

import assembler
from dlvmrt.vm import VM
from isa.inline import inline_calls
from isa.verify import verify_module

SRC = """module c
func @affine(%x: f32[N, 3], %s: f32[]) -> (f32[N, 3], f32[]) {
  %y = mul %x, %s
  %y = add %y, 1.0
  %m = reduce_max %y {axes = [0, 1]}
  ret %y, %m
}
func @loop(%n: i64[]) -> i64[] {
entry:
  %i = const 0 : i64[]
  jmp head
head:
  %c = lt %i, %n
  br %c, body, done
body:
  %i = add %i, 1
  jmp head
done:
  ret %i
}
func @main(%x: f32[N, 3], %n: i64[]) -> (f32[N, 3], f32[], i64[]) {
  %two = const 2.0 : f32[]
  %y, %m = call @affine(%x, %two)
  %y2, %m2 = call @affine(%y, %m)
  %k = call @loop(%n)
  ret %y2, %m2, %k
}
"""


def test_one_block_callees_are_inlined_and_results_agree():
    m = assembler.assemble(SRC)
    out = inline_calls(m, "main")
    verify_module(out)
    calls = [i.attrs["callee"] for i in out.functions["main"].blocks[0].instrs if i.op == "call"]
    assert calls == ["loop"]                      # the loop keeps its call
    wrapper = inline_calls(assembler.assemble(SRC + "func @wrap(%x: f32[N, 3], %n: i64[]) -> "
                                              "i64[] {\n  %k = call @loop(%n)\n  ret %k\n}\n"
                                              "func @top(%x: f32[N, 3], %n: i64[]) -> i64[] {\n"
                                              "  %k = call @wrap(%x, %n)\n  ret %k\n}\n"), "top")
    inner = [i.attrs["callee"] for i in wrapper.functions["top"].blocks[0].instrs if i.op == "call"]
    assert inner == ["loop"]                      # a wrapper's own call stays a call
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    want = VM(m, jit="off").run("main", x, np.int64(3))
    got = VM(out, jit="off").run("main", x, np.int64(3))
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert assembler.assemble(assembler.disassemble(out)) == out
