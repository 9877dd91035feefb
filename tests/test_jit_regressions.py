"""JIT bugs found by running real models, kept as tests; and the DLVM_JIT_CHECK mode that found
them (every compiled region also run through the interpreter and compared)."""
from __future__ import annotations

import numpy as np
import pytest

import dlvmrt
from isa.builder import ModuleBuilder
from isa.errors import InternalError


def rotary_module():
    mb = ModuleBuilder("rotary")
    f = mb.function("main", [("c", "f32[2, 3, 1, 4]"), ("s", "f32[2, 3, 1, 4]"),
                             ("x1", "f32[2, 3, 4, 4]"), ("x2", "f32[2, 3, 4, 4]")],
                    ["f32[2, 3, 4, 4]", "f32[2, 3, 4, 4]"])
    c, s, x1, x2 = f.args()
    real = f.sub(f.mul(c, x1), f.mul(s, x2))
    imag = f.add(f.mul(s, x1), f.mul(c, x2))
    f.ret(real, imag)
    return mb.finish()


def test_strided_view_inputs_stay_alive_during_the_kernel(monkeypatch):
    # the runner copied non-contiguous inputs and dropped the copy before the kernel read it
    monkeypatch.setenv("DLVM_JIT_CHECK", "1")
    rng = np.random.default_rng(0)
    c, s = (rng.standard_normal((2, 3, 1, 4)).astype(np.float32) for _ in range(2))
    big = rng.standard_normal((2, 4, 3, 8)).astype(np.float32).transpose(0, 2, 1, 3)
    x1, x2 = big[..., :4], big[..., 4:]
    assert not x1.flags.c_contiguous
    real, imag = dlvmrt.VM(rotary_module(), jit="always").run("main", c, s, x1, x2)
    np.testing.assert_allclose(real, c * x1 - s * x2, rtol=1e-6)
    np.testing.assert_allclose(imag, s * x1 + c * x2, rtol=1e-6)


def test_check_mode_reports_a_wrong_kernel(monkeypatch):
    monkeypatch.setenv("DLVM_JIT_CHECK", "1")
    vm = dlvmrt.VM(rotary_module(), jit="always")
    x = np.ones((2, 3, 4, 4), np.float32)
    c = np.ones((2, 3, 1, 4), np.float32)
    vm.run("main", c, c, x, x)
    (_, _, region, runner) = vm.runners[0]
    real_call = runner.__call__

    class Wrong:
        def __call__(self, args):
            outs = real_call(args)
            return [o + 1 for o in outs]
    code = vm.code("main")
    blk = code.blocks[0]
    from dlvmrt.vm import _splice_region
    blk.steps = list(blk.interp_steps)
    blk.steps = _splice_region(code, blk, region, Wrong(), None)
    with pytest.raises(InternalError, match="JIT check: region"):
        vm.run("main", c, c, x, x)


def test_a_jit_failure_keeps_the_block_on_the_interpreter():
    from dlvmrt.vm import JitWarning
    vm = dlvmrt.VM(rotary_module(), jit="always")

    def broken(module, region):
        raise RuntimeError("simulated JIT bug")
    vm.jit.runner = broken
    x = np.full((2, 3, 4, 4), 2.0, np.float32)
    c = np.ones((2, 3, 1, 4), np.float32)
    with pytest.warns(JitWarning, match="simulated JIT bug"):
        real, imag = vm.run("main", c, c, x, x)
    np.testing.assert_array_equal(real, np.zeros_like(x))
    np.testing.assert_array_equal(imag, np.full_like(x, 4.0))


def test_dtypes_without_kernels_decline_to_the_interpreter():
    # u32 has no CPU kernels: the region must decline, not raise KeyError from the lowering
    mb = ModuleBuilder("u")
    f = mb.function("main", [("a", "u32[N]"), ("b", "u32[N]")], ["u32[N]"])
    f.ret(f.add(f.mul(*f.args()), 1))
    a = np.arange(5, dtype=np.uint32)
    (y,) = dlvmrt.VM(mb.finish(), jit="always").run("main", a, a)
    assert y.dtype == np.uint32 and y.tolist() == [1, 2, 5, 10, 17]


def test_float_to_int_casts_saturate_in_both_tiers(monkeypatch):
    # NaN gives 0 and out-of-range values the nearest end of the range, compiled or not (the
    # interpreter gave NumPy's INT_MIN, the JIT LLVM's saturated value); check mode compares all
    monkeypatch.setenv("DLVM_JIT_CHECK", "1")
    mb = ModuleBuilder("c")
    f = mb.function("main", [("x", "f32[N]")], ["i8[N]"])
    f.ret(f.cast(f.mul(f.arg("x"), 100.0), to="i8"))
    x = np.array([np.nan, 1e6, -1e6, 0.5, np.inf, -np.inf, -0.013], np.float32)
    want = [0, 127, -128, 50, 127, -128, -1]
    for mode in ("always", "off"):
        (y,) = dlvmrt.VM(mb.finish(), jit=mode).run("main", x)
        assert y.dtype == np.int8 and y.tolist() == want


def test_signed_zeros_follow_ieee_in_compiled_code(monkeypatch):
    # with LLVM's nsz flag, x + 0.0 folded to x: -0.0 stayed -0.0 and 1/x became -inf
    monkeypatch.setenv("DLVM_JIT_CHECK", "1")
    mb = ModuleBuilder("z")
    f = mb.function("main", [("z", "f32[N]")], ["f32[N]", "f32[N]"])
    f.ret(f.reciprocal(f.add(f.neg(f.arg("z")), 0.0)), f.reciprocal(f.mul(f.sin(f.neg(f.arg("z"))), 1.0)))
    z = np.zeros(64, np.float32)
    pos, neg = dlvmrt.VM(mb.finish(), jit="always").run("main", z)
    assert np.all(pos == np.inf) and np.all(neg == -np.inf)
