"""The region former keeps values that can never broadcast together out of one region (a kernel
computes a region over one domain): an optimizer's update of weights of different shapes is
several regions, each compiled, not one region that declines on every call."""
from __future__ import annotations

import numpy as np

import assembler
from dlvmrt.vm import VM
from isa.verify import verify_module
from jit.regions import form_regions

UPDATE = """module u
func @main(%a: f32[16, 3], %ga: f32[16, 3], %b: f32[16], %gb: f32[16]) -> (f32[16, 3], f32[16]) {
  %sa = mul %ga, 0.1
  %a = sub %a, %sa
  %sb = mul %gb, 0.1
  %b = sub %b, %sb
  ret %a, %b
}
"""


def test_values_of_conflicting_shapes_form_separate_regions():
    m = assembler.assemble(UPDATE)
    regions = form_regions(m, "main", verify_module(m)["main"])
    assert [(r.start, r.end) for r in regions] == [(0, 2), (2, 4)]


def test_and_every_region_runs_compiled():
    m = assembler.assemble(UPDATE)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in [(16, 3), (16, 3), (16,), (16,)]]
    vm = VM(m, jit="always", profile=True)
    for _ in range(3):
        got = vm.run("main", *args)
    want = VM(m, jit="off").run("main", *args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)   # mul+sub may fuse (FMA)
    assert "fell back" not in vm.profiler.table(vm)


def test_an_epilogue_takes_only_values_of_the_products_domain():
    m = assembler.assemble("""module e
func @main(%a: f32[8, 4], %b: f32[8, 3], %c: f32[8, 5]) -> (f32[4, 3], f32[8, 5]) {
  %t = transpose %a {perm = [1, 0]}
  %p = matmul %t, %b
  %q = relu %c
  ret %p, %q
}
""")
    regions = form_regions(m, "main", verify_module(m)["main"])
    assert [(r.start, r.end) for r in regions if r.kind.startswith("matmul")] == [(1, 2)]


SCORES = """module s
func @main(%x: f32[N, 100], %k: i64[1]) -> (f32[N, 100], f32[N, ?]) {
  %v, %i = topk %x, %k {axis = 1}
  %g = gather_elements %x, %i {axis = 1}
  %c = max %x, -3.0
  %c = mul %c, 2.0
  %s = add %v, %g
  %s = exp %s
  ret %c, %s
}
"""


def test_an_independent_value_of_unknown_size_starts_its_own_region():
    # [N, ?] is taken as fitting [N, 100] only where the values flow into each other; beside an
    # independent computation it would make one kernel that fails whenever ? is not 100
    m = assembler.assemble(SCORES)
    regions = form_regions(m, "main", verify_module(m)["main"])
    assert [(r.start, r.end) for r in regions] == [(2, 4), (4, 6)]


def test_and_the_native_library_runs_the_program():
    m = assembler.assemble(SCORES)
    x = np.random.default_rng(1).standard_normal((3, 100)).astype(np.float32)
    vm = VM(m, jit="auto", native="always")
    for _ in range(3):
        got = vm.run("main", x, np.array([5]))
    want = VM(m, jit="off").run("main", x, np.array([5]))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    if vm.native.state == "ready":
        assert vm.native.native_calls == 2, vm.native.status()


# attention over one key (a decoder's first step): softmax over an axis of size 1, then the
# product with the values, K = 1, which the pipeline writes as a broadcast multiply
ONE_KEY = """module k
func @main(%a: f32[N, 3, 1, 1], %v: f32[N, 3, 1, 40]) -> f32[N, 3, 1, 40] {
  %s = softmax %a {axis = 3}
  %y = mul %s, %v
  %y = add %y, 1.0
  ret %y
}
"""


def test_a_reduction_is_not_fused_with_a_broadcast_along_its_axis():
    # one kernel's inner loop would run over the 40 values while the softmax has 1
    m = assembler.assemble(ONE_KEY)
    regions = form_regions(m, "main", verify_module(m)["main"])
    assert [(r.start, r.end) for r in regions] == [(0, 1), (1, 3)]


def _one_key_args(n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, 3, 1, 1)).astype(np.float32)
    a[0, 0, 0, 0] = np.inf                  # softmax over one element: NaN for an infinity
    return [a, rng.standard_normal((n, 3, 1, 40)).astype(np.float32)]


def test_and_the_one_key_attention_runs_compiled_and_native():
    m = assembler.assemble(ONE_KEY)
    ref = VM(m, jit="off")
    jit_vm = VM(m, jit="always", profile=True)
    native = VM(m, jit="auto", native="always")
    for n in (1, 4, 4):
        want = ref.run("main", *_one_key_args(n))
        for vm in (jit_vm, native):
            np.testing.assert_allclose(vm.run("main", *_one_key_args(n))[0], want[0], rtol=1e-6)
    assert "fell back" not in jit_vm.profiler.table(jit_vm)
    native.wait_compiled()
    assert native.native.state == "ready", native.native.status()


def test_a_region_without_a_plan_is_compiled_instruction_by_instruction(monkeypatch, tmp_path):
    # a region no shape can take a kernel for (here, the former's check above switched off)
    # is built one instruction at a time: the library builds, where it failed as a whole
    import jit.regions
    from dlvmrt import aot
    from jit.targets.aot import compile_library
    monkeypatch.setattr(jit.regions, "_reductions_span", lambda *a: True)
    m = assembler.assemble(ONE_KEY)
    assert [(r.start, r.end) for r in form_regions(m, "main", verify_module(m)["main"])] == [(0, 3)]
    compile_library(m, tmp_path)
    lib = aot.load(tmp_path)
    args = _one_key_args(2)
    np.testing.assert_allclose(lib.run("main", *args)[0], VM(m, jit="off").run("main", *args)[0],
                               rtol=1e-6)
