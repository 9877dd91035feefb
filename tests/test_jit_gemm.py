"""The JIT's own f32 GEMM (jit/targets/cpu/gemm.py) and the conv2d heads built on it (conv.py), against
NumPy in float64 and against the conv2d reference, within specs/tolerances.md's GEMM bound."""
from __future__ import annotations

import os
import signal
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dlvmrt
from isa.builder import ModuleBuilder
from isa.ops import OPS
from jit.cache import DiskCache
from jit.targets.cpu import conv as jconv
from jit.targets.cpu.gemm import Epilogue, Gemm, _aligned, gemm

U32 = 2.0 ** -24


def gemm_bound(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """specs/tolerances.md: |c - exact| <= gamma_K * (|a| @ |b|) + a few ulps of the result."""
    k = a.shape[1]
    gamma = k * U32 / (1 - k * U32)
    return gamma * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))) + 1e-30


def check(a: np.ndarray, b: np.ndarray, c: np.ndarray, base: np.ndarray | None = None) -> None:
    exact = a.astype(np.float64) @ b.astype(np.float64)
    if base is not None:
        exact = exact + base
    err = np.abs(c.astype(np.float64) - exact)
    bound = gemm_bound(a, b) + (0 if base is None else np.abs(base) * U32)
    assert (err <= bound).all(), f"max err {err.max()}, bound there {bound.flat[err.argmax()]}"


@pytest.fixture(scope="module")
def g() -> Gemm:
    return gemm()


def rand(rng, *shape) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


SHAPES = [(1, 1, 1), (1, 7, 1), (3, 5, 2), (8, 48, 48), (9, 257, 49), (17, 1, 95), (64, 576, 200),
          (130, 300, 100), (33, 1000, 97), (1, 784, 512), (200, 129, 7), (5, 3, 3100),
          (129, 513, 145)]


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_matches_float64(g, m, k, n):
    rng = np.random.default_rng(m * 1000 + k + n)
    a, b = rand(rng, m, k), rand(rng, k, n)
    c = np.full((m, n), np.nan, np.float32)
    g.matmul(a, b, c)
    check(a, b, c)


@pytest.mark.parametrize("m,k,n", [(40, 300, 100), (100, 70, 9), (7, 260, 50)])
@pytest.mark.parametrize("layout", ["aT", "bT", "both", "sliced"])
def test_any_operand_strides(g, m, k, n, layout):
    rng = np.random.default_rng(7)
    a, b = rand(rng, m, k), rand(rng, k, n)
    if layout in ("aT", "both"):
        a = np.asfortranarray(a)
    if layout in ("bT", "both"):
        b = np.asfortranarray(b)
    if layout == "sliced":
        a = rand(rng, m * 2, k + 3)[::2, 1:k + 1]
        b = rand(rng, k, n * 3)[:, ::3]
    c = np.empty((m, n), np.float32)
    g.matmul(a, b, c)
    check(a, b, c)


def test_output_with_a_row_stride_and_accumulate(g):
    rng = np.random.default_rng(3)
    a, b = rand(rng, 50, 70), rand(rng, 70, 60)
    big = rand(rng, 50, 100)
    before = big.copy()
    view = big[:, 20:80]
    g.matmul(a, b, view, accumulate=True)
    check(a, b, view, base=before[:, 20:80].astype(np.float64))
    assert np.array_equal(big[:, :20], before[:, :20]) and np.array_equal(big[:, 80:], before[:, 80:])


@pytest.mark.parametrize("m,k,n", [(512, 300, 49), (64, 600, 3000), (300, 1000, 300)])
def test_split_across_threads(g, m, k, n):
    rng = np.random.default_rng(11)
    a, b = rand(rng, m, k), rand(rng, k, n)
    one, two = np.empty((m, n), np.float32), np.empty((m, n), np.float32)
    g.matmul(a, b, one, threads=1)
    g.matmul(a, b, two, threads=2)
    check(a, b, two)
    # each output element is summed by the same kernel in the same order either way
    assert np.array_equal(one, two)


def test_special_values_propagate(g):
    a = np.ones((9, 300), np.float32)
    b = np.ones((300, 50), np.float32)
    a[2, 5] = np.nan
    b[7, 3] = np.inf
    c = np.empty((9, 50), np.float32)
    g.matmul(a, b, c)
    ref = a @ b
    assert np.array_equal(np.isnan(c), np.isnan(ref)) and np.array_equal(np.isinf(c), np.isinf(ref))


def test_empty_and_zero_k(g):
    c = np.full((3, 4), 5.0, np.float32)
    g.matmul(np.empty((3, 0), np.float32), np.empty((0, 4), np.float32), c)
    assert (c == 0).all()
    g.matmul(np.empty((0, 2), np.float32), np.empty((2, 4), np.float32), np.empty((0, 4), np.float32))


def test_rejects_what_it_does_not_compute(g):
    with pytest.raises(TypeError):
        g.matmul(np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError):
        g.matmul(np.ones((2, 3), np.float32), np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))
    frozen = np.zeros((2, 2), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        g.matmul(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32), frozen)
    assert not frozen.any()


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40), st.integers(1, 300), st.integers(1, 120), st.booleans(), st.booleans())
def test_hypothesis_shapes(m, k, n, ta, tb):
    rng = np.random.default_rng(m + 41 * k + 977 * n)
    a, b = rand(rng, m, k), rand(rng, k, n)
    a = np.asfortranarray(a) if ta else a
    b = np.asfortranarray(b) if tb else b
    c = np.empty((m, n), np.float32)
    gemm().matmul(a, b, c)
    check(a, b, c)


def test_disk_cache_loads_the_kernel(tmp_path):
    first = Gemm(DiskCache(tmp_path))
    second = Gemm(DiskCache(tmp_path))
    assert (first.source, second.source) == ("compiled", "disk")


def _relu(x: np.ndarray) -> np.ndarray:
    """llvm.maximum(x, 0): NaN stays NaN, -0 < +0."""
    return np.where(np.isnan(x), x, np.maximum(x, np.float32(0)) + np.float32(0))


@pytest.mark.parametrize("m,k,n", [(9, 257, 49), (64, 576, 200), (130, 600, 100), (200, 129, 7),
                                   (40, 40, 3100)])
@pytest.mark.parametrize("bias", ["row", "col", None])
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("packed", [None, "a", "b"])
def test_epilogue_is_the_separate_pass_fused(g, m, k, n, bias, relu, threads, packed):
    """Bias and relu applied as the last K block is stored give exactly what a pass over the
    finished product gives (the same additions in the same order)."""
    rng = np.random.default_rng(m + k + n)
    a, b = rand(rng, m, k), rand(rng, k, n)
    vec = rand(rng, m if bias == "row" else n)
    plain = np.empty((m, n), np.float32)
    g.matmul(a, b, plain, threads)
    want = plain + (vec[:, None] if bias == "row" else vec if bias == "col" else np.float32(0))
    want = _relu(want) if relu else want
    epi = Epilogue(vec if bias == "row" else None, vec if bias == "col" else None, relu)
    ops = [g.pack(a, "a") if packed == "a" else a, g.pack(b, "b") if packed == "b" else b]
    got = np.full((m, n), np.nan, np.float32)
    g.matmul(*ops, got, threads, epilogue=epi)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 12, 49, 50, 52, 56, 60, 99])
@pytest.mark.parametrize("m", [1, 8, 13, 40, 65, 300])
def test_column_tails_of_many_row_panels(g, m, n):
    """The last few columns of N (a 7x7 image's 49th pixel) are computed several row panels
    at a time, the panels past M's end reading the last one again: every width of tail, rows
    ending mid-panel and mid-group, two K blocks, a row bias and relu, against float64 and,
    bit for bit, against the same product with B prepacked (its own code path)."""
    rng = np.random.default_rng(m * 100 + n)
    a, b, vec = rand(rng, m, 300), rand(rng, 300, n), rand(rng, m)
    plain = np.full((m, n), np.nan, np.float32)
    g.matmul(a, b, plain)
    check(a, b, plain)
    got = np.full((m, n), np.nan, np.float32)
    g.matmul(a, g.pack(b, "b"), got, 2, epilogue=Epilogue(row_bias=vec, relu=True))
    np.testing.assert_array_equal(got, _relu(plain + vec[:, None]))


def test_epilogue_accumulates_and_propagates_nan(g):
    rng = np.random.default_rng(3)
    a, b = rand(rng, 20, 300), rand(rng, 300, 60)
    a[3, 7] = np.nan
    vec = rand(rng, 60)
    c0 = rand(rng, 20, 60)
    got = c0.copy()
    g.matmul(a, b, got, accumulate=True, epilogue=Epilogue(col_bias=vec, relu=True))
    plain = c0.copy()
    g.matmul(a, b, plain, accumulate=True)
    np.testing.assert_array_equal(got, _relu(plain + vec))
    assert np.isnan(got[3]).all() and not np.isnan(np.delete(got, 3, axis=0)).any()


def test_epilogue_is_checked(g):
    a, b, out = np.ones((8, 4), np.float32), np.ones((4, 5), np.float32), np.empty((8, 5), np.float32)
    with pytest.raises(ValueError, match="row bias"):
        g.matmul(a, b, out, epilogue=Epilogue(row_bias=np.ones(5, np.float32)))
    with pytest.raises(ValueError, match="not both"):
        g.matmul(a, b, out, epilogue=Epilogue(np.ones(8, np.float32), np.ones(5, np.float32)))
    z = np.ones((8, 0), np.float32)
    g.matmul(z, np.ones((0, 5), np.float32), out, epilogue=Epilogue(col_bias=-np.arange(5, dtype=np.float32),
                                                                     relu=True))
    np.testing.assert_array_equal(out, np.zeros((8, 5), np.float32))


# ---- conv2d heads ---------------------------------------------------------------------------

CONVS = [  # x shape, w shape, strides, pads, dilations
    ((1, 3, 30, 30), (16, 3, 7, 7), (2, 2), (3, 3, 3, 3), (1, 1)),
    ((1, 16, 20, 20), (32, 16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    ((2, 16, 15, 17), (24, 16, 3, 3), (2, 2), (1, 0, 1, 2), (1, 1)),
    ((1, 32, 14, 14), (64, 32, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),
    ((2, 32, 14, 14), (64, 32, 1, 1), (2, 2), (0, 0, 0, 0), (1, 1)),
    ((1, 8, 19, 19), (16, 8, 3, 3), (1, 1), (2, 2, 2, 2), (2, 2)),
    ((1, 64, 7, 7), (128, 64, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    # narrow rows, more pixels than channels: the explicit patch matrix, not transposed
    ((2, 4, 12, 12), (8, 4, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
    ((1, 8, 9, 9), (16, 8, 3, 3), (2, 2), (2, 2, 2, 2), (2, 2)),     # dilated, stride 2
    ((1, 4, 13, 13), (8, 4, 3, 3), (3, 3), (1, 1, 1, 1), (1, 1)),    # stride 3: element-wise
    # big enough to split across threads: by output pixels, then by output channels
    ((1, 64, 40, 41), (64, 64, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    ((1, 256, 7, 7), (512, 256, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
]


@pytest.mark.parametrize("xs,ws,strides,pads,dil", CONVS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("relu", [False, True])
def test_conv_plan_matches_reference(g, xs, ws, strides, pads, dil, threads, packed, relu):
    rng = np.random.default_rng(5)
    x, w, bias = rand(rng, *xs), rand(rng, *ws), rand(rng, ws[0])
    attrs = OPS["conv2d"].with_defaults({"strides": list(strides), "pads": list(pads),
                                         "dilations": list(dil), "groups": 1})
    plan = jconv.ConvPlan(x.shape, w.shape, attrs)
    which, matrix = plan.weights(w)
    wm = g.pack(matrix, which) if packed else None
    for _ in range(2):     # the reused padded input holds nothing stale
        ref = OPS["conv2d"].reference(attrs, x, w, bias)
        ref = np.maximum(ref, 0) if relu else ref
        out = np.full(ref.shape, np.nan, np.float32)
        plan.run(x, w, bias, out, g, threads, wm, relu=relu)
        k = ws[1] * ws[2] * ws[3]
        tol = 2 * k * U32 * (np.abs(x).max() * np.abs(w).max() * k) + 4 * U32 * np.abs(bias).max()
        np.testing.assert_allclose(out, ref, rtol=0, atol=tol)
        x = x * 0.5


def _conv_module(relu: bool):
    mb = ModuleBuilder("c")
    w = mb.constant("w", np.random.default_rng(1).standard_normal((32, 16, 3, 3)).astype(np.float32))
    f = mb.function("main", [("x", "f32[1, 16, 24, 24]")], ["f32[1, 32, 24, 24]"])
    y = f.conv2d(f.arg("x"), w, pads=[1, 1, 1, 1])
    f.ret(f.relu(y) if relu else y)
    return mb.finish()


@pytest.mark.parametrize("relu", [False, True])
def test_vm_conv_and_lone_heads_match_the_interpreter(relu):
    m = _conv_module(relu)
    x = np.random.default_rng(2).standard_normal((1, 16, 24, 24)).astype(np.float32)
    (ref,) = dlvmrt.VM(m, jit="off").run("main", x)
    vm = dlvmrt.VM(m, jit="always")
    for _ in range(3):
        (got,) = vm.run("main", x)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)
    described = [runner.describe() for *_, runner in vm.runners]
    assert [d["kind"] for d in described] == ["conv2d+epilogue"]
    assert described[0]["compiled_calls"] == 3 and described[0]["fallbacks"] == 0
    # a lone convolution compiles no epilogue kernel, nor does one with relu (the GEMM kernel
    # applies it as it stores: jit/store_epilogue.py)
    assert len(described[0]["variants"]) == 0
    # the constant weights were packed once, on the first call
    runner = vm.runners[0][-1]
    (packed,) = runner._packs.values()
    vm.run("main", x)
    assert runner._packs[next(iter(runner._packs))] is packed


def test_lone_matmul_compiles_no_kernel_and_keeps_results_apart():
    mb = ModuleBuilder("mm")
    w = mb.constant("w", np.random.default_rng(4).standard_normal((128, 96)).astype(np.float32))
    f = mb.function("main", [("x", "f32[N, 128]")], ["f32[N, 96]"])
    f.ret(f.matmul(f.arg("x"), w))
    m = mb.finish()
    vm = dlvmrt.VM(m, jit="always")
    x1 = np.random.default_rng(5).standard_normal((64, 128)).astype(np.float32)
    (r1,) = vm.run("main", x1)
    (r2,) = vm.run("main", x1 * 2)
    assert r1 is not r2 and not np.shares_memory(r1, r2)
    np.testing.assert_allclose(r2, 2 * r1, rtol=1e-5, atol=1e-4)
    check(x1, m.constants["w"].value, r1)


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("k,n,shapes", [(48, 40, ((3, 70), (3, 70), (2, 9))),
                                        (256, 512, ((4, 300), (4, 300)))])   # on the GEMM
def test_a_transposed_stack_of_rows_is_one_product(relu, k, n, shapes):
    # seq-first attention's in-projection: [S, B, K] = transpose of [B, S, K], times one matrix.
    # The region copies the strided stack into a buffer kept for the shape and multiplies it
    # once (np.matmul looped over S products of B rows), call after call; a relu is the GEMM's
    # store epilogue where the product is large enough for it
    rng = np.random.default_rng(8)
    mb = ModuleBuilder("tmm")
    w = mb.constant("w", rng.standard_normal((k, n)).astype(np.float32))
    f = mb.function("main", [("x", f"f32[B, S, {k}]")], [f"f32[S, B, {n}]"])
    y = f.matmul(f.transpose(f.arg("x"), perm=[1, 0, 2]), w)
    f.ret(f.relu(y) if relu else y)
    m = mb.finish()
    vm, ref = dlvmrt.VM(m, jit="always", native="off"), dlvmrt.VM(m, jit="off")
    buffers = []
    for b, s in shapes:
        x = rng.standard_normal((b, s, k)).astype(np.float32)
        (got,), (want,) = vm.run("main", x), ref.run("main", x)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
        calls = [c for *_, r in vm.runners for c in r._calls.values() if c.mm_rows is not None]
        assert calls
        buffers.append(id(calls[0].mm_rows))
    assert buffers[0] == buffers[1]             # kept for the shape, not allocated per call


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (9, 257, 49), (64, 576, 300), (130, 700, 97), (33, 1000, 5)])
@pytest.mark.parametrize("which", ["a", "b", "ab"])
@pytest.mark.parametrize("threads", [1, 2])
def test_prepacked_operands(g, m, k, n, which, threads):
    rng = np.random.default_rng(m + k + n)
    a, b = rand(rng, m, k), rand(rng, k, n)
    if which == "b":
        b = np.asfortranarray(b)          # packing reads any strides
    pa = g.pack(a, "a") if "a" in which else a
    pb = g.pack(b, "b") if "b" in which else b
    c = np.full((m, n), np.nan, np.float32)
    g.matmul(pa, pb, c, threads=threads)
    check(a, b, c)
    plain = np.empty_like(c)
    g.matmul(a, b, plain, threads=threads)
    assert np.array_equal(c, plain)       # same sums in the same order


def test_prepacked_operand_sides_are_checked(g):
    p = g.pack(np.ones((4, 5), np.float32), "a")
    with pytest.raises(ValueError):
        g.matmul(np.ones((3, 4), np.float32), p, np.empty((3, 5), np.float32))


@pytest.mark.parametrize("m,k,n", [(64, 600, 3000), (512, 1400, 49)])   # column / row split
@pytest.mark.parametrize("which", ["a", "b", "ab"])
def test_prepacked_operands_split_across_threads(g, m, k, n, which):
    rng = np.random.default_rng(m + n)
    a, b = rand(rng, m, k), rand(rng, k, n)
    pa = g.pack(a, "a") if "a" in which else a
    pb = g.pack(b, "b") if "b" in which else b
    one, two = np.empty((m, n), np.float32), np.empty((m, n), np.float32)
    g.matmul(a, b, one, threads=1)
    g.matmul(pa, pb, two, threads=2)     # a_row0 / b_col0 offsets into the packed operand
    assert np.array_equal(one, two)


def test_two_python_threads_split_products_at_once(g):
    """Each calling thread has its own packing buffers: a larger product on another thread
    once replaced (and freed) the buffers a running split was writing."""
    import threading
    rng = np.random.default_rng(9)
    jobs = [(rand(rng, 1024, 2048), rand(rng, 2048, 192)), (rand(rng, 64, 512), rand(rng, 512, 4096))]
    want = []
    for a, b in jobs:
        w = np.empty((a.shape[0], b.shape[1]), np.float32)
        g.matmul(a, b, w, threads=1)
        want.append(w)
    bad = []

    def work(i: int) -> None:
        a, b = jobs[i]
        out = np.empty_like(want[i])
        for _ in range(6):
            g.matmul(a, b, out, threads=2)
            if not np.array_equal(out, want[i]):
                bad.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def test_runner_keeps_a_bounded_number_of_shapes():
    from jit.targets.cpu.runner import _MAX_SHAPES
    mb = ModuleBuilder("mm")
    w = mb.constant("w", np.ones((64, 64), np.float32))
    f = mb.function("main", [("x", "f32[N, 64]")], ["f32[N, 64]"])
    f.ret(f.matmul(f.arg("x"), w))
    vm = dlvmrt.VM(mb.finish(), jit="always")
    for n in range(8, 8 + _MAX_SHAPES + 10):
        vm.run("main", np.ones((n, 64), np.float32))
    runner = vm.runners[0][-1]
    assert runner.describe()["compiled_calls"] == _MAX_SHAPES + 10
    assert len(runner._calls) <= _MAX_SHAPES


def test_products_fall_back_to_blas_when_the_kernel_cannot_be_built(monkeypatch):
    import jit.targets.cpu.runner as runner_mod

    def broken(disk=None):
        raise RuntimeError("no LLVM here")
    monkeypatch.setattr(runner_mod, "gemm", broken)
    mb = ModuleBuilder("mm")
    weights = np.random.default_rng(3).standard_normal((128, 96)).astype(np.float32)
    f = mb.function("main", [("x", "f32[64, 128]")], ["f32[64, 96]"])
    f.ret(f.matmul(f.arg("x"), mb.constant("w", weights)))
    x = np.random.default_rng(4).standard_normal((64, 128)).astype(np.float32)
    vm = dlvmrt.VM(mb.finish(), jit="always")
    with pytest.warns(RuntimeWarning, match="GEMM kernel is unavailable"):
        (got,) = vm.run("main", x)
    np.testing.assert_allclose(got, x @ weights, rtol=1e-5, atol=1e-4)
    (again,) = vm.run("main", x)            # one warning; BLAS from then on
    np.testing.assert_array_equal(again, got)


def _epilogue_case(case: str):
    """(module, inputs, whether the GEMM kernel's store takes the epilogue) of one case."""
    rng = np.random.default_rng(7)
    mb = ModuleBuilder("e")
    if case.startswith("conv"):
        w = mb.constant("w", rand(rng, 32, 16, 3, 3))
        cb = mb.constant("cb", rand(rng, 32))
        v = mb.constant("v", rand(rng, 1, 32, 1, 1))
        f = mb.function("main", [("x", "f32[2, 16, 20, 20]")], ["f32[2, 32, 20, 20]"])
        x = f.arg("x")
        if case == "conv_bias_relu":
            y, fused = f.relu(f.conv2d(x, w, cb, pads=[1, 1, 1, 1])), True
        elif case == "conv_channel_add":
            y, fused = f.relu(f.add(f.conv2d(x, w, pads=[1, 1, 1, 1]), v)), True
        else:   # two biases: the kernel adds one, so the epilogue kernel runs
            y, fused = f.add(f.conv2d(x, w, cb, pads=[1, 1, 1, 1]), v), False
        f.ret(y)
        return mb.finish(), [rand(rng, 2, 16, 20, 20)], fused
    wt = mb.constant("w", rand(rng, 96, 80))
    col = mb.constant("col", rand(rng, 80))
    row = mb.constant("row", rand(rng, 64, 1))
    full = mb.constant("full", rand(rng, 64, 80))
    shape = "f32[2, 32, 96]" if case == "stacked_bias_relu" else "f32[64, 96]"
    out = "f32[2, 32, 80]" if case == "stacked_bias_relu" else "f32[64, 80]"
    f = mb.function("main", [("x", shape)], [out])
    p = f.matmul(f.arg("x"), wt)
    y, fused = {
        "bias_relu": (lambda: (f.relu(f.add(p, col)), True)),
        "stacked_bias_relu": (lambda: (f.relu(f.add(col, p)), True)),
        "row_bias": (lambda: (f.add(p, row), True)),
        "relu": (lambda: (f.relu(p), True)),
        "full_add": (lambda: (f.add(p, full), False)),
        "bias_tanh": (lambda: (f.tanh(f.add(p, col)), False)),
    }[case]()
    f.ret(y)
    return mb.finish(), [rand(rng, *((2, 32, 96) if case == "stacked_bias_relu" else (64, 96)))], fused


@pytest.mark.parametrize("case", ["conv_bias_relu", "conv_channel_add", "conv_two_biases", "bias_relu",
                                  "stacked_bias_relu", "row_bias", "relu", "full_add", "bias_tanh"])
def test_store_epilogues_match_the_interpreter(case):
    """Bias and relu epilogues become the GEMM kernel's store (no epilogue kernel compiled);
    anything else keeps its compiled epilogue. Both match the interpreter."""
    m, inputs, fused = _epilogue_case(case)
    (ref,) = dlvmrt.VM(m, jit="off").run("main", *inputs)
    vm = dlvmrt.VM(m, jit="always")
    for _ in range(2):
        (got,) = vm.run("main", *inputs)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)
    (d,) = [runner.describe() for *_, runner in vm.runners]
    assert d["compiled_calls"] == 2 and d["fallbacks"] == 0
    assert len(d["variants"]) == (0 if fused else 1), d


def test_store_epilogue_without_the_gemm_kernel_matches(monkeypatch):
    """Products on NumPy's BLAS (DLVM_GEMM=blas) apply the same epilogue in NumPy."""
    m, inputs, _ = _epilogue_case("bias_relu")
    (ref,) = dlvmrt.VM(m, jit="off").run("main", *inputs)
    vm = dlvmrt.VM(m, jit="always")
    vm.run("main", *inputs)
    (*_, runner), = vm.runners
    runner.jit.gemm = False          # as when the kernel cannot be built on this host
    (got,) = vm.run("main", *inputs)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("features", ["+avx,+avx2,+fma", "+sse2"])
def test_narrower_tiles_compute_the_same(features):
    """The AVX2 (6x16) and SSE (4x8) tiles, as hosts without AVX-512 build them: products,
    epilogues and strided convolutions (masked partial vectors of 8 and 4 lanes)."""
    from jit.targets.cpu.gemm_kernel import shape_for
    g = Gemm(None, shape_for(features))
    rng = np.random.default_rng(11)
    for m, k, n in [(9, 257, 49), (64, 300, 70)]:
        a, b, vec = rand(rng, m, k), rand(rng, k, n), rand(rng, n)
        out = np.empty((m, n), np.float32)
        g.matmul(a, g.pack(b, "b"), out, 2, epilogue=Epilogue(col_bias=vec, relu=True))
        plain = np.empty((m, n), np.float32)
        g.matmul(a, b, plain)
        check(a, b, plain)
        np.testing.assert_array_equal(out, _relu(plain + vec))
    for xs, ws, strides, pads in [((1, 3, 30, 30), (16, 3, 7, 7), (2, 2), (3, 3, 3, 3)),
                                  ((1, 8, 20, 21), (24, 8, 3, 3), (1, 1), (1, 1, 1, 1))]:
        x, w, bias = rand(rng, *xs), rand(rng, *ws), rand(rng, ws[0])
        attrs = OPS["conv2d"].with_defaults({"strides": list(strides), "pads": list(pads)})
        plan = jconv.ConvPlan(x.shape, w.shape, attrs)
        ref = np.maximum(OPS["conv2d"].reference(attrs, x, w, bias), 0)
        out = np.full(ref.shape, np.nan, np.float32)
        plan.run(x, w, bias, out, g, 2, relu=True)
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("per_row", [1, 3])
@pytest.mark.parametrize("features", ["host", "+avx,+avx2,+fma", "+sse2"])
def test_columns_read_in_place_by_vectors(features, per_row):
    """Flag 8 with sbn > 0 (dlvm_aot_conv.c's convolutions of whole-vector output rows): row k
    of B at rows[k], its columns vectors of VW floats, `per_row` of them (n_pad) a row, rows
    `sbn` apart, from column b_col0 on. Two K blocks, an edge row panel, an edge column panel
    of one vector; added to C (beta) with a row bias and relu, and written fresh."""
    from jit.llvm import target
    from jit.targets.cpu.gemm_kernel import shape_for
    shape = shape_for(target.host().features if features == "host" else features)
    if per_row > 1 and shape.nr != 2 * shape.vw:
        pytest.skip("rows of several vectors are read by tiles of two vectors only")
    g = Gemm(None, shape)
    vw, rng = shape.vw, np.random.default_rng(12)
    m, k, vectors, col0 = 2 * shape.mr + 1, shape.kc + 40, 2 * shape.nr // vw + 5, vw
    vstep = per_row * vw + 5
    rows = (np.arange(k, dtype=np.int64) * 7 * vw) % 4001        # anywhere in B, overlapping
    mem = rand(rng, 4001 + (col0 // vw + vectors) * vstep + vw)
    a, bias = rand(rng, m, k), rand(rng, m)
    n = vectors * vw
    q = (col0 + np.arange(n)) // vw                                # each column's vector
    cols = q // per_row * vstep + q % per_row * vw + (col0 + np.arange(n)) % vw
    b = mem[rows[:, None] + cols[None, :]].astype(np.float64)    # the B the kernel should see
    pa, pb = _aligned(shape.mc * shape.kc), _aligned(16)
    for beta, bits in ((0, 0), (1, 1 | 4)):
        c = rand(rng, m, n)
        want = (c if beta else 0) + a.astype(np.float64) @ b
        if bits:
            want = np.maximum(want + bias[:, None], 0)
        g._fn(m, n, k, a.ctypes.data, k, 1, mem.ctypes.data, rows.ctypes.data, vstep,
              c.ctypes.data, n, pa.ctypes.data, pb.ctypes.data, beta, 8, 0, 0, col0, per_row,
              bias.ctypes.data if bits else None, bits)
        np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-3)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_runs_cached_split_products(g):
    """A product prepared before a fork (its job holds the parent's worker pool) runs in the
    child on the child's own pool, even when another thread held the parent's pool at the fork
    (its lock would stay locked in the child)."""
    rng = np.random.default_rng(8)
    a, b = rand(rng, 512, 512), rand(rng, 512, 512)
    out = np.empty((512, 512), np.float32)
    g.matmul(a, b, out, 2)
    want = out.copy()
    stop, running = threading.Event(), threading.Event()

    def busy():
        o = np.empty_like(out)
        while not stop.is_set():
            g.matmul(a, b, o, 2)
            running.set()
    t = threading.Thread(target=busy)
    t.start()
    try:
        assert running.wait(20)       # forks from here on find the pool inside a job
        for _ in range(3):
            pid = os.fork()
            if pid == 0:        # the child: exit status 0 only if the product comes out right
                signal.alarm(20)
                out.fill(0)
                g.matmul(a, b, out, 2)          # the same arguments: the cached job
                os._exit(0 if np.array_equal(out, want) else 1)
            _, status = os.waitpid(pid, 0)
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    finally:
        stop.set()
        t.join()
