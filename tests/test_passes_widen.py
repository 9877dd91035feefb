"""f16: every instruction that computes does so in f32 and rounds its results once
(isa/narrow.py), and the widen pass (jit/passes/widen.py) writes that out as f32 instructions
between casts, bit for bit; the CPU JIT then compiles what was f16 arithmetic."""
from __future__ import annotations

import numpy as np
import pytest
from test_passes_support import random_program, run_vm, same_outcome

import assembler
import dlvmrt
from isa.builder import ModuleBuilder
from isa.dtypes import DType
from isa.module import ConstRef
from isa.narrow import computes
from isa.ops import OPS
from isa.verify import verify_module
from jit.passes import optimize

PROGRAM = """module half
const @w : f16[8, 8] = {w}
const @g : f16[8] = {g}
func @main(%x: f16[N, 8], %y: f16[N, 8]) -> (f16[N, 8], f16[N], i64[N], bool[N, 8], f16[N, 8]) {{
entry:
  %a = add %x, 0.1
  %b = mul %a, %y
  %c = matmul %b, @w
  %d = gelu %c
  %e = layer_norm %d, @g {{axis = -1}}
  %f = softmax %e {{axis = -1}}
  %s = reduce_sum %f {{axes = [1]}}
  %m = argmax %e {{axis = 1}}
  %lt = lt %x, %y
  %p = select %lt, %x, %e
  %q = div %p, 3.0
  %r = sqrt %q
  %t = tanh %r
  %u = max %t, %d
  %v = exp %u
  ret %f, %s, %m, %lt, %v
}}
"""


def _module():
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((8, 8)) * 0.5).astype(np.float16)
    g = rng.standard_normal(8).astype(np.float16)
    return assembler.parse(PROGRAM.format(w=w.astype(float).tolist(), g=g.astype(float).tolist()))


def _inputs(n: int = 5, seed: int = 1):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, 8)) * 3).astype(np.float16)
    y = (rng.standard_normal((n, 8)) * 3).astype(np.float16)
    x.flat[:4] = [np.nan, np.inf, -0.0, 65504]          # NaN, overflow, signed zero
    y.flat[:3] = [1.0, -np.inf, 0.0]
    return x, y


def _f16_arithmetic(module) -> list[str]:
    """The instructions left that compute on f16."""
    table = verify_module(module)
    left = []
    for name, func in module.functions.items():
        for bi, block in enumerate(func.blocks):
            for ii, ins in enumerate(block.instrs):
                t = table[name][bi][ii]
                if computes(OPS[ins.op]) and any(d.dtype is DType.F16
                                                 for d in t.operands + t.results):
                    left.append(ins.op)
    return left


def test_the_interpreter_computes_f16_in_f32_and_rounds_once():
    x, y = _inputs()
    m = assembler.parse("""module s
func @main(%x: f16[N, 8]) -> f16[N, 8] {
entry:
  %y = softmax %x {axis = -1}
  ret %y
}
""")
    got = dlvmrt.VM(m, jit="off").run(x)[0]
    with np.errstate(invalid="ignore"):
        e = np.exp(x.astype(np.float32) - np.max(x.astype(np.float32), -1, keepdims=True))
        want = (e / e.sum(-1, keepdims=True)).astype(np.float16)
    np.testing.assert_array_equal(got, want)


def test_widen_leaves_no_f16_arithmetic_and_is_bit_exact():
    m = _module()
    assert _f16_arithmetic(m)
    for passes in (["widen"], None):
        out = optimize(m, passes)
        assert _f16_arithmetic(out) == []
        for n, seed in ((5, 1), (1, 2), (17, 3)):
            x, y = _inputs(n, seed)
            assert same_outcome(run_vm(m, x, y), run_vm(out, x, y))


def test_an_f16_immediate_keeps_its_f16_value():
    m = assembler.parse("""module i
func @main(%x: f16[3]) -> f16[3] {
entry:
  %y = mul %x, 0.1
  ret %y
}
""")
    out = optimize(m, ["widen"])
    x = np.array([1.0, 3.0, 1000.0], np.float16)
    assert same_outcome(run_vm(m, x), run_vm(out, x))
    np.testing.assert_array_equal(run_vm(out, x)[0],
                                  (x.astype(np.float32) * np.float32(np.float16(0.1)))
                                  .astype(np.float16))


@pytest.mark.parametrize("seed", range(25))
def test_random_f16_programs_are_widened_exactly(seed):
    f32, args = random_program(seed)
    m = assembler.parse(assembler.disassemble(f32).replace("f32", "f16"))
    args = [a.astype(np.float16) if a.dtype == np.float32 else a for a in args]
    out = optimize(m)
    assert _f16_arithmetic(out) == []
    assert same_outcome(run_vm(m, *args), run_vm(out, *args))


def test_the_cpu_jit_compiles_widened_f16():
    # the casts fuse with the f32 arithmetic around them: the model's instructions run compiled,
    # within f16's rounding of the interpreter (an f32 sum in another order moves a step)
    m = _module()
    vm = dlvmrt.VM(m, jit="always", native="off")
    x, y = _inputs(6, 4)
    got = vm.run(x, y)
    want = dlvmrt.VM(m, jit="off").run(x, y)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if g.dtype == np.float16:
            np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=1e-2,
                                       atol=1e-2)
        elif g.dtype != bool:
            # argmax: a near tie in f16 may flip; most rows agree
            assert np.mean(g == w) >= 0.5
        else:
            np.testing.assert_array_equal(g, w)
    compiled = [r for *_, r in vm.runners if r.describe().get("compiled_calls", 0)]
    assert len(compiled) >= 3, [r.describe() for *_, r in vm.runners]


def test_large_f16_weights_become_f32_constants():
    # the cast of a module constant folds at any size: an f16 model's weights are not cast on
    # every call
    rng = np.random.default_rng(5)
    w = rng.standard_normal((1100, 1024)).astype(np.float16)      # over 2^20 elements
    mb = ModuleBuilder("big")
    f = mb.function("main", [("x", "f16[N, 1100]")], ["f16[N, 1024]"])
    f.ret(f.matmul(f.arg("x"), mb.constant("w", w)))
    m = mb.finish()
    out = optimize(m)
    casts_of_constants = [ins for b in out.functions["main"].blocks for ins in b.instrs
                          if ins.op == "cast" and isinstance(ins.operands[0], ConstRef)]
    assert casts_of_constants == []
    assert any(c.value.dtype == np.float32 and c.value.shape == w.shape
               for c in out.constants.values())
    x = rng.standard_normal((2, 1100)).astype(np.float16)
    assert same_outcome(run_vm(m, x), run_vm(out, x))


def test_an_f64_to_f16_cast_leaves_the_rest_of_its_region_compiled():
    # (double -> half would round twice through float, and is a library call on x86)
    m = assembler.parse("""module c
func @main(%x: f32[N, 8], %d: f64[N, 8]) -> (f32[N, 8], f16[N, 8]) {
entry:
  %a = mul %x, 2.0
  %b = exp %a
  %h = cast %d {to = f16}
  %c = add %b, 1.0
  ret %c, %h
}
""")
    vm = dlvmrt.VM(m, jit="always", native="off")
    rng = np.random.default_rng(0)
    x, d = rng.standard_normal((3, 8)).astype(np.float32), rng.standard_normal((3, 8))
    got, want = vm.run(x, d), dlvmrt.VM(m, jit="off").run(x, d)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    np.testing.assert_array_equal(got[1], want[1])
    assert sum(r.compiled_calls for *_, r in vm.runners) >= 1, \
        [r.describe() for *_, r in vm.runners]
