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
