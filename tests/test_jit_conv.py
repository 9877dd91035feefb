"""conv2d+epilogue regions: the convolution runs as the op's reference (im2col and one sgemm),
the elementwise rest (bias, relu, residual add) as one kernel in place on its result."""
from __future__ import annotations

import numpy as np
import pytest

import dlvmrt
from isa.builder import ModuleBuilder
from isa.verify import verify_module
from jit import Jit, form_regions
from jit.testing import assert_matches, reference_run, run_with_jit


@pytest.fixture(scope="module")
def jit(tmp_path_factory):
    return Jit(cache_dir=str(tmp_path_factory.mktemp("jitcache")), threads=2, parallel_threshold_us=0)


def compare(jit, m, args):
    got, runners = run_with_jit(m, "main", args, jit)
    for r in runners:
        assert r.compiled_calls == 1, r.describe()
    for g, r in zip(got, reference_run(m, "main", args)):
        assert_matches(g, r, "programs")
    return runners


def conv_block(dtype: str, n: int, groups: int = 1, stride: int = 1, bias_operand: bool = False,
               keep_conv: bool = False):
    """conv2d, per-channel bias, residual add, relu (a ResNet basic block's tail)."""
    rng = np.random.default_rng(n * 10 + groups + stride)
    np_dt = np.float32 if dtype == "f32" else np.float64
    c, o = 4, 4
    mb = ModuleBuilder("conv")
    w = mb.constant("w", rng.standard_normal((o, c // groups, 3, 3)).astype(np_dt))
    b = mb.constant("b", rng.standard_normal((o, 1, 1)).astype(np_dt))
    hw = 9 if stride == 1 else 5
    outs = [f"{dtype}[{n}, {o}, {hw}, {hw}]"] * (2 if keep_conv else 1)
    params = [("x", f"{dtype}[{n}, {c}, 9, 9]"), ("r", f"{dtype}[{n}, {o}, {hw}, {hw}]")]
    f = mb.function("main", params, outs)
    x, r = f.args()
    extra = [mb.constant("b1", rng.standard_normal(o).astype(np_dt))] if bias_operand else []
    y = f.conv2d(x, w, *extra, strides=[stride, stride], pads=[1, 1, 1, 1], groups=groups)
    z = f.relu(f.add(f.add(y, b), r))
    f.ret(*([z, y] if keep_conv else [z]))
    args = [rng.standard_normal(s).astype(np_dt) for s in [(n, c, 9, 9), (n, o, hw, hw)]]
    return mb.finish(), args


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("n,groups,stride,bias_operand", [(1, 1, 1, False), (2, 1, 2, True),
                                                         (1, 4, 1, False), (3, 2, 1, True)])
def test_conv2d_epilogue_matches_reference(jit, dtype, n, groups, stride, bias_operand):
    m, args = conv_block(dtype, n, groups, stride, bias_operand)
    (region,) = form_regions(m, "main", verify_module(m)["main"])
    assert region.kind == "conv2d+epilogue" and (region.start, region.end) == (0, 4)
    (runner,) = compare(jit, m, args)
    assert "in place of in0" in runner.kernel_ir()


def test_conv2d_result_read_later_is_kept(jit):
    m, args = conv_block("f32", 1, keep_conv=True)
    (runner,) = compare(jit, m, args)
    assert "in place" not in runner.kernel_ir()


def test_conv2d_epilogue_in_the_vm_checked(monkeypatch):
    monkeypatch.setenv("DLVM_JIT_CHECK", "1")
    m, args = conv_block("f32", 2, stride=2, bias_operand=True)
    vm = dlvmrt.VM(m, jit="always")
    want = dlvmrt.VM(m, jit="off").run("main", *args)
    for _ in range(3):      # the second and third calls reuse buffers
        got = vm.run("main", *args)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    kinds = [r.kind for (_, _, r, _) in vm.runners]
    assert kinds == ["conv2d+epilogue"]


def test_conv2d_shape_trap_declines_to_the_interpreter(jit):
    m, args = conv_block("f32", 1)
    (region,) = form_regions(m, "main", verify_module(m)["main"])
    runner = jit.runner(m, region)
    consts = {o.name: m.constants[o.name].value for o in region.inputs if o.name in m.constants}
    vals = {"x": np.zeros((1, 3, 9, 9), np.float32), "r": args[1], **consts}   # 3 channels, not 4
    bad = [vals[o.name] for o in region.inputs]
    assert runner(bad) is None and "channels" in runner.last_reason


def test_conv2d_epilogue_declines_on_a_gpu_and_runs_on_the_cpu():
    # no GPU conv yet: the backend says so, the scheduler reports it and the CPU region runs
    import warnings

    from dlvmrt.devices import sim_device
    from dlvmrt.scheduler import DeviceFallbackWarning
    m, args = conv_block("f32", 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        vm = dlvmrt.VM(m, jit="always", device=sim_device())
        got = vm.run("main", *args)
    assert any(issubclass(w.category, DeviceFallbackWarning) and "conv2d has no GPU" in
               str(w.message) for w in caught)
    for g, r in zip(got, reference_run(m, "main", args)):
        assert_matches(g, r, "programs")


def small_conv(n: int, c: int, hw: int, o: int, k: int, stride: int, pads: list[int],
               dilation: int, epilogue: bool, magnitudes: bool = False):
    """One f32 conv2d (with a per-channel bias operand and relu when `epilogue`) of a small
    CNN's size: the layers the definition used to run (np.pad and a patch matrix per call).
    `magnitudes`: the weights, bias and input made absolute (the sums' error bound)."""
    rng = np.random.default_rng(n * 1000 + c * 100 + o * 10 + k)
    sign = np.abs if magnitudes else (lambda v: v)
    mb = ModuleBuilder("small_conv")
    w = mb.constant("w", sign(rng.standard_normal((o, c, k, k)).astype(np.float32)))
    extra = [mb.constant("b", sign(rng.standard_normal(o).astype(np.float32)))] if epilogue else []
    ho = (hw + pads[0] + pads[2] - dilation * (k - 1) - 1) // stride + 1
    wo = (hw + pads[1] + pads[3] - dilation * (k - 1) - 1) // stride + 1
    f = mb.function("main", [("x", f"f32[{n}, {c}, {hw}, {hw}]")], [f"f32[{n}, {o}, {ho}, {wo}]"])
    (x,) = f.args()
    y = f.conv2d(x, w, *extra, strides=[stride, stride], pads=pads, dilations=[dilation, dilation])
    f.ret(f.relu(y) if epilogue else y)
    return mb.finish(), [sign(rng.standard_normal((n, c, hw, hw)).astype(np.float32))]


@pytest.mark.parametrize("n,c,hw,o,k,stride,pads,dilation,epilogue", [
    (1, 3, 32, 8, 3, 1, [1, 1, 1, 1], 1, True),      # a small CNN's first layer
    (1, 8, 16, 16, 3, 2, [1, 1, 1, 1], 1, False),
    (1, 1, 8, 1, 3, 1, [1, 1, 1, 1], 1, True),       # one output channel: a tile of padding
    (3, 3, 7, 5, 3, 2, [0, 1, 2, 0], 1, True),       # odd batch, asymmetric pads
    (2, 2, 9, 3, 3, 1, [2, 2, 2, 2], 2, False),      # dilated
    (1, 4, 5, 6, 1, 2, [0, 0, 0, 0], 1, True),       # 1x1 strided: not a plain product
    # 8x8 outputs over several images: rows of half a vector packed two at a time
    (3, 8, 8, 16, 3, 1, [1, 1, 1, 1], 1, False),
    (3, 16, 16, 24, 3, 2, [1, 1, 1, 1], 1, True),
    # 4x4 and 2x2 outputs: rows under conv.NARROW_ROWS multiply an explicit patch matrix
    # (their packing several rows to a vector is the native library's: tests/test_aot.py)
    (3, 8, 8, 16, 3, 2, [1, 1, 1, 1], 1, False),
    (3, 8, 4, 16, 3, 2, [1, 1, 1, 1], 1, True),
])
def test_small_conv2d_runs_on_the_kernel(jit, monkeypatch, n, c, hw, o, k, stride, pads,
                                         dilation, epilogue):
    from jit.targets.cpu import conv
    runs = []
    plain = conv.ConvPlan.run
    monkeypatch.setattr(conv.ConvPlan, "run", lambda self, *a, **kw: runs.append(1) or plain(self, *a, **kw))
    m, args = small_conv(n, c, hw, o, k, stride, pads, dilation, epilogue)
    got, runners = run_with_jit(m, "main", args, jit)
    for r in runners:
        assert r.compiled_calls == 1, r.describe()
    assert runs, "the convolution ran its definition, not the JIT's kernel"
    # a product's bound in any order of its sums (specs/tolerances.md): gamma_K (|w| * |x|),
    # for each of the two results (the GEMM's blocking depends on the CPU's vector width: AVX2's
    # and AVX-512's orders differ, and an output that cancels to 0.04 of its terms' magnitude
    # differs by more than the `programs` row)
    terms = c * k * k + (1 if epilogue else 0)
    gamma = terms * 2.0 ** -24 / (1 - terms * 2.0 ** -24)
    (want,) = reference_run(m, "main", args)
    (mags,) = reference_run(small_conv(n, c, hw, o, k, stride, pads, dilation, epilogue, True)[0],
                            "main", [np.abs(args[0])])
    bad = np.abs(got[0].astype(np.float64) - want) > 2 * gamma * mags
    assert not bad.any(), f"{int(bad.sum())} of {bad.size} outside the bound"


def test_tiny_1x1_conv2d_keeps_the_definition():
    # a 1x1, stride-1, unpadded convolution is a product of the input as it is: the definition
    # multiplies it without a copy, and a product this small is not worth the kernel's packing
    from jit.targets.cpu import conv
    x, w = np.zeros((1, 4, 4, 4), np.float32), np.zeros((4, 4, 1, 1), np.float32)
    attrs = {"strides": [1, 1], "pads": [0, 0, 0, 0], "dilations": [1, 1], "groups": 1}
    assert not conv.supported(x, w, attrs)
    assert conv.supported(x, w, {**attrs, "pads": [1, 1, 1, 1]})
    x, w = np.zeros((1, 256, 28, 28), np.float32), np.zeros((128, 256, 1, 1), np.float32)
    assert conv.supported(x, w, attrs)
