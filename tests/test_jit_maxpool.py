"""The JIT's native f32 max pooling (jit/targets/cpu/: maxpool.py, maxpool_kernel.py) against the op's
reference, isa/ops/pooling.py: maxpool_ref. Max is exact, so results must be equal element for
element (NaN where the reference has NaN)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isa.ops import OPS
from isa.ops.pooling import maxpool_ref
from jit.cache import DiskCache
from jit.targets.cpu import maxpool as jmp
from jit.targets.cpu.maxpool_kernel import SCRATCH


def attrs_of(kernel, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), ceil=False) -> dict:
    return OPS["maxpool2d"].with_defaults({"kernel": list(kernel), "strides": list(strides),
                                           "pads": list(pads), "dilations": list(dilations),
                                           "ceil_mode": ceil})


def data(shape, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def check(x: np.ndarray, attrs: dict, threads: int = 1, kern: jmp.MaxPool | None = None,
          out: np.ndarray | None = None) -> np.ndarray:
    assert jmp.supported(x, attrs)
    want = maxpool_ref(attrs, x)
    got = (kern or jmp.kernel()).run(x, attrs, out, threads)
    assert got.shape == want.shape and got.dtype == np.float32
    # equal, NaN where the reference has NaN; also no -0/+0 mix-up beyond what max allows
    np.testing.assert_array_equal(got, want)
    return got


@pytest.fixture(scope="module")
def narrow() -> list[jmp.MaxPool]:
    """The kernel as AVX2 (8 floats) and SSE (4 floats) hosts build it (this host runs both)."""
    return [jmp.MaxPool(None, vw=8), jmp.MaxPool(None, vw=4)]


def test_resnet18_maxpool() -> None:
    attrs = attrs_of((3, 3), (2, 2), (1, 1, 1, 1))
    x = data((1, 64, 112, 112))
    y = check(x, attrs)
    assert y.shape == (1, 64, 56, 56)
    check(x, attrs, threads=2)


def test_geometry_grid() -> None:
    """Kernels 1..5, strides 1..3, dilations 1..2, pads, ceil mode; rows wide enough for the
    vector interior (and its shifted last block) and narrow ones."""
    x = data((1, 2, 13, 37))
    for k, s, d, ceil in itertools.product(range(1, 6), range(1, 4), (1, 2), (False, True)):
        for pad in {0, (k - 1) // 2, k - 1}:
            attrs = attrs_of((k, k), (s, s), (pad, pad, pad, pad), (d, d), ceil)
            check(x, attrs)


@pytest.mark.parametrize("shape", [(1, 1, 1, 1), (1, 3, 5, 7), (2, 3, 17, 16), (1, 2, 9, 33),
                                   (3, 2, 20, 65)])
@pytest.mark.parametrize("geo", [((3, 3), (2, 2), (1, 1, 1, 1)), ((2, 2), (2, 2), (0, 0, 0, 0)),
                                 ((1, 3), (1, 2), (0, 1, 0, 1)), ((3, 1), (2, 1), (1, 0, 0, 0)),
                                 ((2, 3), (3, 1), (1, 0, 0, 2))])
def test_odd_shapes(shape, geo) -> None:
    k, s, p = geo
    if any(shape[2 + i] + p[i] + p[i + 2] < k[i] for i in range(2)):
        pytest.skip("window larger than the padded input: the reference traps")
    for ceil in (False, True):
        check(data(shape), attrs_of(k, s, p, ceil=ceil))


def test_asymmetric_pads_and_ceil_overhang() -> None:
    x = data((2, 3, 10, 23))
    for pads in ((0, 0, 2, 1), (2, 1, 0, 0), (1, 2, 2, 0)):
        for ceil in (False, True):
            check(x, attrs_of((3, 3), (2, 3), pads, ceil=ceil))
            check(x, attrs_of((3, 2), (3, 2), pads, (2, 1), ceil=ceil))


def test_windows_wholly_in_padding_are_minus_inf() -> None:
    """pads >= kernel (the type rule forbids it, the reference computes it) and dilated taps
    that all miss the input: such windows hold only padding, -inf in the reference."""
    check(data((1, 2, 6, 20)), attrs_of((2, 2), (1, 1), (3, 3, 3, 3)))
    y = check(data((1, 1, 2, 18)), attrs_of((2, 2), (1, 1), (1, 1, 1, 1), (3, 3)))
    assert np.isneginf(y).any()


def test_nan_propagates() -> None:
    attrs = attrs_of((3, 3), (2, 2), (1, 1, 1, 1))
    x = data((2, 4, 40, 50))
    rng = np.random.default_rng(1)
    x.reshape(-1)[rng.choice(x.size, 40, replace=False)] = np.nan
    y = check(x, attrs)
    assert np.isnan(y).sum() >= 40 // 4
    # NaN in every position of a window (first, middle, last tap) and at the row ends
    for i, j in itertools.product(range(5), range(5)):
        z = data((1, 1, 5, 40))
        z[0, 0, i, j] = np.nan
        z[0, 0, i, 39 - j] = np.nan
        check(z, attrs)
        check(z, attrs_of((2, 2), (1, 1)))


def test_minus_inf_and_ties() -> None:
    attrs = attrs_of((3, 3), (2, 2), (1, 1, 1, 1))
    check(np.full((1, 2, 20, 40), -np.inf, np.float32), attrs)
    x = data((1, 2, 20, 40))
    x[:, :, ::3] = -np.inf
    x[:, 1] = np.inf
    check(x, attrs)
    check(np.round(data((1, 3, 21, 41)) * 2), attrs)     # many equal values


def test_batch_and_threads_identical() -> None:
    attrs = attrs_of((3, 3), (2, 2), (1, 1, 1, 1))
    x = data((3, 5, 30, 44))
    one = check(x, attrs, threads=1)
    saved = jmp._PARALLEL_TAPS
    jmp._PARALLEL_TAPS = 0          # split even this small call
    try:
        for t in (2, 3, 16):
            assert np.array_equal(check(x, attrs, threads=t), one, equal_nan=True)
    finally:
        jmp._PARALLEL_TAPS = saved


def test_non_contiguous_input() -> None:
    attrs = attrs_of((3, 3), (2, 2), (1, 1, 1, 1))
    big = data((2, 6, 30, 50))
    check(big[:, ::2], attrs)                      # channel stride: read in place
    check(big[:, :, 1:25, 3:45], attrs)            # row stride: read in place
    check(big[::-1, ::-1], attrs)                  # negative strides
    check(big[:, :, :, ::2], attrs)                # column stride 2: copied
    check(big.transpose(0, 1, 3, 2), attrs)        # columns down a row: copied
    check(np.asfortranarray(big), attrs)


def test_out_argument() -> None:
    attrs = attrs_of((3, 3), (2, 2), (1, 1, 1, 1))
    x = data((2, 3, 20, 40))
    out = np.full((2, 3, 10, 20), 7, np.float32)
    assert check(x, attrs, out=out) is out
    wide = np.zeros((2, 5, 10, 24), np.float32)
    view = wide[:, 1:4, :, 2:22]                   # rows contiguous, strided: written in place
    assert check(x, attrs, out=view) is view
    assert (wide[:, 0] == 0).all() and (wide[:, :, :, :2] == 0).all()
    tview = np.zeros((2, 3, 20, 10), np.float32).transpose(0, 1, 3, 2)   # through a temporary
    check(x, attrs, out=tview)
    with pytest.raises(ValueError):
        jmp.maxpool2d(x, attrs, out=np.empty((2, 3, 10, 21), np.float32))
    with pytest.raises(ValueError):
        jmp.maxpool2d(x, attrs, out=np.empty((2, 3, 10, 20), np.float64))
    frozen = np.zeros((2, 3, 10, 20), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        jmp.maxpool2d(x, attrs, out=frozen)
    assert not frozen.any()


def test_empty() -> None:
    attrs = attrs_of((2, 2), (2, 2))
    assert jmp.maxpool2d(np.zeros((0, 3, 8, 8), np.float32), attrs).shape == (0, 3, 4, 4)
    assert jmp.maxpool2d(np.zeros((2, 0, 8, 8), np.float32), attrs).shape == (2, 0, 4, 4)


def test_rows_wider_than_the_row_buffer() -> None:
    """Rows wider than SCRATCH take the direct path (every tap row read per output row)."""
    check(data((1, 1, 3, SCRATCH)), attrs_of((3, 3), (2, 2), (1, 1, 1, 1)))   # the widest buffered
    x = data((1, 2, 5, SCRATCH + 37))
    check(x, attrs_of((3, 3), (2, 2), (1, 1, 1, 1)))
    check(x, attrs_of((2, 3), (1, 3), (0, 1, 1, 2), (2, 1), ceil=True))
    x[0, 1, 2, SCRATCH - 7] = np.nan
    check(x, attrs_of((3, 3), (2, 2), (1, 1, 1, 1)))


def test_supported() -> None:
    attrs = attrs_of((3, 3), (2, 2), (1, 1, 1, 1))
    assert jmp.supported(data((1, 2, 8, 8)), attrs)
    assert not jmp.supported(data((1, 2, 8, 8)).astype(np.float64), attrs)
    assert not jmp.supported(data((1, 2, 8, 8)).astype(np.float16), attrs)
    assert not jmp.supported(data((2, 8, 8)), attrs)
    assert not jmp.supported(data((1, 2, 8, 8, 8)), attrs_of((3, 3, 3)))
    assert not jmp.supported(data((1, 2, 8)), OPS["maxpool2d"].with_defaults(
        {"kernel": [3], "strides": [1], "pads": [0, 0], "dilations": [1]}))
    # a window larger than the padded input: the reference traps, so the caller runs it
    assert not jmp.supported(data((1, 2, 2, 8)), attrs_of((3, 3), (1, 1), (0, 0, 0, 0)))
    assert not jmp.supported(data((1, 2, 8, 8)), attrs_of((3, 3), (0, 1)))
    with pytest.raises(ValueError):
        jmp.maxpool2d(data((1, 2, 8, 8)).astype(np.float64), attrs)


def test_narrow_vector_hosts(narrow) -> None:
    """The code an AVX2 (8-wide) or SSE (4-wide) host would build."""
    x = data((2, 3, 19, 45))
    x[0, 1, 4, 7] = np.nan
    for kern in narrow:
        for k, s, p, d in (((3, 3), (2, 2), (1, 1, 1, 1), (1, 1)), ((2, 2), (1, 1), (0, 0, 1, 1), (1, 1)),
                           ((3, 2), (3, 3), (1, 1, 0, 0), (1, 2)), ((5, 5), (1, 2), (2, 2, 2, 2), (1, 1))):
            for ceil in (False, True):
                check(x, attrs_of(k, s, p, d, ceil), kern=kern)


def test_disk_cache(tmp_path) -> None:
    disk = DiskCache(tmp_path)
    first = jmp.MaxPool(disk)
    second = jmp.MaxPool(disk)
    assert (first.source, second.source) == ("compiled", "disk")
    attrs = attrs_of((3, 3), (2, 2), (1, 1, 1, 1))
    x = data((1, 3, 30, 40))
    assert np.array_equal(first.run(x, attrs), second.run(x, attrs))


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 2), c=st.integers(1, 3), h=st.integers(1, 24), w=st.integers(1, 70),
       kh=st.integers(1, 5), kw=st.integers(1, 5), sh=st.integers(1, 4), sw=st.integers(1, 4),
       dh=st.integers(1, 3), dw=st.integers(1, 3), ceil=st.booleans(),
       pads=st.tuples(*[st.integers(0, 4)] * 4), seed=st.integers(0, 2 ** 16),
       nans=st.integers(0, 3))
def test_random_geometry(n, c, h, w, kh, kw, sh, sw, dh, dw, ceil, pads, seed, nans) -> None:
    # pads below the kernel, as the type rule requires of programs (wider ones have a test)
    pads = (min(pads[0], kh - 1), min(pads[1], kw - 1), min(pads[2], kh - 1), min(pads[3], kw - 1))
    attrs = attrs_of((kh, kw), (sh, sw), pads, (dh, dw), ceil)
    x = data((n, c, h, w), seed)
    if nans:
        rng = np.random.default_rng(seed)
        x.reshape(-1)[rng.integers(0, x.size, nans)] = np.nan
    if not jmp.supported(x, attrs):
        with pytest.raises(Exception):      # noqa: B017 - the reference traps
            maxpool_ref(attrs, x)
        return
    check(x, attrs)


def _pool_module(dtype: str, relu: bool):
    from isa.builder import ModuleBuilder
    mb = ModuleBuilder("p")
    f = mb.function("main", [("x", f"{dtype}[1, 8, 21, 21]")], [f"{dtype}[1, 8, 11, 11]"])
    y = f.maxpool2d(f.arg("x"), kernel=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    f.ret(f.relu(y) if relu else y)
    return mb.finish()


@pytest.mark.parametrize("relu", [False, True])
def test_vm_runs_maxpool_as_a_region_head(relu):
    """An f32 maxpool2d heads a region (the native kernel, then any epilogue), matching the
    interpreter; an f64 one stays interpreted."""
    import dlvmrt
    x = np.random.default_rng(4).standard_normal((1, 8, 21, 21)).astype(np.float32)
    x[0, 3, 5, 5] = np.nan
    m = _pool_module("f32", relu)
    (ref,) = dlvmrt.VM(m, jit="off").run("main", x)
    vm = dlvmrt.VM(m, jit="always")
    for _ in range(2):
        (got,) = vm.run("main", x)
        np.testing.assert_array_equal(got, ref)
    (d,) = [runner.describe() for *_, runner in vm.runners]
    assert d["kind"] == "maxpool2d+epilogue" and d["compiled_calls"] == 2 and d["fallbacks"] == 0
    assert len(d["variants"]) == (1 if relu else 0)
    m64 = _pool_module("f64", relu)
    vm64 = dlvmrt.VM(m64, jit="always")
    (got,) = vm64.run("main", x.astype(np.float64))
    np.testing.assert_array_equal(got, ref.astype(np.float64))
    assert all(runner.region.kind != "maxpool2d+epilogue" for *_, runner in vm64.runners)
