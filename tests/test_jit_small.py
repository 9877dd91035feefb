"""The JIT's cost model: regions over tiny tensors stay interpreted (a kernel call's fixed cost
exceeds the interpreter's), larger ones compile, and results are the interpreter's either way."""
from __future__ import annotations

import numpy as np
import pytest

import assembler
from dlvmrt.vm import VM

CHAIN = """module s
func @main(%a: f32[N, 64], %b: f32[N, 64]) -> f32[N, 64] {
  %t = sigmoid %a
  %u = tanh %b
  %v = mul %t, %u
  %w = add %v, %a
  ret %w
}
"""


@pytest.fixture
def policy_on(monkeypatch):
    monkeypatch.delenv("DLVM_JIT_SMALL", raising=False)


@pytest.mark.parametrize("rows, compiled", [(1, False), (2048, True)])
def test_tiny_regions_stay_interpreted(policy_on, rows, compiled):
    m = assembler.assemble(CHAIN)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((rows, 64)).astype(np.float32) for _ in range(2)]
    vm = VM(m, jit="always")
    for _ in range(3):
        got = vm.run("main", *args)
    want = VM(m, jit="off").run("main", *args)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    (runner,) = [r for *_, r in vm.runners]
    assert (runner.compiled_calls > 0) == compiled
    if not compiled:
        assert runner.fallbacks == runner.calls


def test_small_products_stay_interpreted_large_ones_compile(policy_on):
    src = ("module p\nfunc @main(%x: f32[N, 64], %w: f32[64, 256], %b: f32[256]) -> f32[N, 256] {\n"
           "  %y = matmul %x, %w\n  %y = add %y, %b\n  ret %y\n}\n")
    m = assembler.assemble(src)
    rng = np.random.default_rng(1)
    w, b = rng.standard_normal((64, 256)).astype(np.float32), rng.standard_normal(256).astype(np.float32)
    for rows, compiled in ((1, False), (2048, True)):     # 33M multiply-adds: the kernel
        x = rng.standard_normal((rows, 64)).astype(np.float32)
        vm = VM(m, jit="always")
        got = vm.run("main", x, w, b)
        np.testing.assert_allclose(got[0], x @ w + b, rtol=1e-4, atol=1e-4)
        (runner,) = [r for *_, r in vm.runners]
        assert (runner.compiled_calls > 0) == compiled
