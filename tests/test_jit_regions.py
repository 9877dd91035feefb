"""Region formation: which instructions fuse, the regions' inputs and outputs under register
reassignment and control flow, and the kernel IR's printed form."""
from __future__ import annotations

import numpy as np

from isa.builder import ModuleBuilder
from isa.module import ConstRef, Reg
from isa.verify import verify_module
from jit import form_regions
from jit.build import build_kernel


def regions_of(m, func="main"):
    return form_regions(m, func, verify_module(m)[func])


def gelu_chain():
    mb = ModuleBuilder("gelu")
    f = mb.function("main", [("x", "f32[N]")], ["f32[N]"])
    x = f.arg("x")
    x3 = f.mul(x, x, into="x3")
    x3 = f.mul(x3, x, into="x3")
    t = f.mul(x3, 0.044715, into="t")
    t = f.add(x, t, into="t")
    t = f.mul(t, 0.7978845608, into="t")
    t = f.tanh(t, into="t")
    t = f.add(t, 1.0, into="t")
    y = f.mul(x, 0.5, into="y")
    y = f.mul(y, t, into="y")
    f.ret(y)
    return mb.finish()


def test_elementwise_chain_is_one_region_with_reassigned_registers():
    (r,) = regions_of(gelu_chain())
    assert (r.start, r.end, r.kind) == (0, 9, "elementwise")
    assert r.inputs == [Reg("x")]
    assert r.outputs == ["y"]          # x3 and t are dead after the region


def test_kernel_ir_text():
    m = gelu_chain()
    (r,) = regions_of(m)
    text = build_kernel(m, verify_module(m)["main"], r).text()
    assert text.splitlines()[0] == "kernel @main_b0_0_9 (inner axes 0)"
    assert "  in0 = %x : f32 rank 1" in text
    assert "tanh v" in text and "const 0.044715 : f32" in text
    assert text.rstrip().splitlines()[-1].startswith("  out %y = v")
    # every node is printed once, numbered in order
    nodes = [ln for ln in text.splitlines() if ln.startswith("  v")]
    assert [ln.split()[0] for ln in nodes] == [f"v{i}" for i in range(len(nodes))]


def test_value_read_after_region_is_an_output_even_if_overwritten_later():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", "f32[4]")], ["f32[4]", "f32[4]"])
    x = f.arg("x")
    a = f.exp(x, into="a")
    b = f.add(a, 1.0, into="b")
    f.transpose(b, into="c")               # not fusible: ends the region
    a2 = f.neg(b, into="a")                 # the old a is overwritten before anyone reads it
    f.ret(a2, b)
    (r,) = [r for r in regions_of(mb.finish()) if r.start == 0]
    assert r.end == 2 and r.outputs == ["b"]


def test_outputs_follow_liveness_across_blocks():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", "f32[4]"), ("c", "bool[]")], ["f32[4]"])
    x, c = f.args()
    a = f.exp(x, into="a")
    f.add(a, 1.0, into="b")
    f.br(c, "yes", "no")
    f.label("yes")
    f.ret(a)
    f.label("no")
    f.ret(x)
    (r,) = regions_of(mb.finish())
    assert r.outputs == ["a"]              # b is dead, a is live into block "yes"


def test_constants_are_inputs_and_immediates_are_embedded():
    mb = ModuleBuilder("m")
    w = mb.constant("w", np.ones(4, np.float32))
    f = mb.function("main", [("x", "f32[4]")], ["f32[4]"])
    y = f.add(f.mul(f.arg("x"), w), 2)
    f.ret(y)
    m = mb.finish()
    (r,) = regions_of(m)
    assert r.inputs == [Reg("x"), ConstRef("w")]
    k = build_kernel(m, verify_module(m)["main"], r)
    assert any(n.op == "const" and n.attr == 2.0 and str(n.dtype) == "f32" for n in k.nodes)


def test_single_instruction_is_not_a_region_and_f16_is_not_fused():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", "f32[4]"), ("h", "f16[4]")], ["f32[4]", "f16[4]"])
    x, h = f.args()
    y = f.exp(x)
    g = f.add(f.mul(h, h), h)
    f.ret(y, g)
    assert regions_of(mb.finish()) == []


def test_reductions_join_on_trailing_axes_and_split_otherwise():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", "f32[8, 16]")], ["f32[8, 16]", "f32[16]"])
    x = f.arg("x")
    s = f.reduce_sum(x, axes=[-1], keepdims=True)
    y = f.div(x, s)
    y = f.exp(y)
    col = f.reduce_sum(y, axes=[0])        # a column sum: not trailing, stays interpreted
    col = f.neg(col)
    f.ret(y, col)
    rs = regions_of(mb.finish())
    assert [(r.start, r.end, r.kind) for r in rs] == [(0, 3, "reduce")]


def test_keepdims_false_reduction_ends_a_region():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", "f32[8, 16]")], ["f32[8]"])
    x = f.arg("x")
    s = f.reduce_sum(f.exp(x), axes=[1])
    s = f.add(s, 1.0)
    s = f.log(s)
    f.ret(s)
    rs = regions_of(mb.finish())
    assert [(r.start, r.end, r.kind) for r in rs] == [(0, 2, "reduce"), (2, 4, "elementwise")]


def test_matmul_with_epilogue():
    mb = ModuleBuilder("m")
    w = mb.constant("w", np.ones((4, 3), np.float32))
    bias = mb.constant("b", np.ones(3, np.float32))
    f = mb.function("main", [("x", "f32[N, 4]")], ["f32[N, 3]"])
    h = f.matmul(f.arg("x"), w)
    h = f.add(h, bias)
    h = f.relu(h)
    f.ret(h)
    (r,) = regions_of(mb.finish())
    assert (r.kind, r.start, r.end) == ("matmul+epilogue", 0, 3)
    assert r.inputs == [Reg("x"), ConstRef("w"), ConstRef("b")]


def test_lone_composite_op_is_a_region_but_a_lone_primitive_is_not():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", "f32[N]")], ["f32[N]", "f32[N]"])
    x = f.arg("x")
    g = f.gelu(x, approximate="tanh")
    f.transpose(g, into="sep")
    e = f.exp(x)
    f.ret(g, e)
    rs = regions_of(mb.finish())
    assert [(r.start, r.end) for r in rs] == [(0, 1)]


def test_reduction_after_a_matmul_epilogue_starts_its_own_region():
    # a transformer block's "matmul, bias, residual add, layer_norm": the layer_norm cannot join
    # the (elementwise-only) epilogue; it used to be left interpreted instead of compiled alone
    mb = ModuleBuilder("m")
    w = mb.constant("w", np.ones((4, 4), np.float32))
    g = mb.constant("g", np.ones(4, np.float32))
    f = mb.function("main", [("x", "f32[N, 4]")], ["f32[N, 4]"])
    h = f.add(f.matmul(f.arg("x"), w), f.arg("x"))
    y = f.layer_norm(h, g, g, axis=1)
    f.ret(f.softmax(f.mul(y, 2.0), axis=-1))
    rs = regions_of(mb.finish())
    assert [(r.kind, r.start, r.end) for r in rs] == [("matmul+epilogue", 0, 2), ("reduce", 2, 5)]
