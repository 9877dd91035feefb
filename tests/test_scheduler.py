"""The scheduler's placements, transfers and fallback reports, against the simulated device
(host memory, kernels run by the host emulation of the CUDA kernels)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import assembler
import dlvmrt
from dlvmrt.device_runner import DeviceRegionRunner, region_info
from dlvmrt.device_tensor import DeviceTensor, to_device, to_host
from dlvmrt.devices import CPU, sim_device
from dlvmrt.scheduler import DeviceFallbackWarning, Scheduler, estimate, transfer_seconds
from isa.verify import verify_module
from jit.build import build_kernel
from jit.regions import form_regions

CHAIN = """module t
const @b : f32[64] = 0.5
func @main(%x: f32[N, 64]) -> f32[N, 64] {
  %h = add %x, @b
  %h = tanh %h
  %y = softmax %h {axis = -1}
  ret %y
}
"""
TANH = """module t
func @main(%x: f32[N, 8]) -> f32[N, 8] {
  %h = add %x, %x
  %h = tanh %h
  ret %h
}
"""
IDIV = """module t
func @main(%x: i32[N], %y: i32[N]) -> i32[N] {
  %q = div %x, %y
  %q = add %q, 1
  ret %q
}
"""


def _setup(src: str):
    m = assembler.assemble(src)
    types = verify_module(m)["main"]
    (region,) = form_regions(m, "main", types)
    return m, types, region, build_kernel(m, types, region)


def test_small_host_region_stays_on_cpu():
    m, types, region, k = _setup(CHAIN)
    s = Scheduler([sim_device()])
    x = np.zeros((4, 64), np.float32)
    p = s.place(region_info(k, region, [x, np.zeros(64, np.float32)]))
    assert p.device is CPU and p.fallback is None and p.transfers == []
    assert p.costs["cpu"] < p.costs["sim:0"]            # launch + link latency dominate


def test_large_region_with_device_resident_data_goes_to_gpu():
    m, types, region, k = _setup(CHAIN)
    gpu = sim_device()
    s = Scheduler([gpu])
    x = to_device(np.zeros((4096, 64), np.float32), gpu)
    b = to_device(np.zeros(64, np.float32), gpu)
    p = s.place(region_info(k, region, [x, b], out_to_host=False))
    assert p.device is gpu and p.transfers == [] and s.stats.placed == {"sim:0": 1}
    # the same call with host data and a host consumer: the link costs more than the CPU saves
    p2 = s.place(region_info(k, region, [np.zeros((4096, 64), np.float32), np.zeros(64, np.float32)]))
    assert p2.device is CPU


def test_cost_formula():
    gpu = sim_device(link_bandwidth=1e9, link_latency=1e-5, throughput=1e12, launch_overhead=2e-5)
    devs = {"cpu": CPU, "sim:0": gpu}
    assert transfer_seconds(10**6, "cpu", "sim:0", devs) == pytest.approx(1e-5 + 1e-3)
    assert transfer_seconds(10**6, "sim:0", "sim:0", devs) == 0.0
    m, types, region, k = _setup(CHAIN)
    info = region_info(k, region, [np.zeros((250, 1000), np.float32), np.zeros(64, np.float32)])
    t, moves = estimate(info, gpu, devs)
    expect = 2 * (1e-5 + 1e6 / 1e9) + 1e-5 + 256 / 1e9 + 2e-5 + (1e6 + 256 + 1e6) / 1e12
    assert t == pytest.approx(expect) and [i for i, _, _ in moves] == [0, 1]


def test_hint_forces_device_and_inserts_transfers():
    m, types, region, k = _setup(CHAIN)
    gpu = sim_device()
    s = Scheduler([gpu], hint="sim:0")
    p = s.place(region_info(k, region, [np.zeros((2, 64), np.float32), np.zeros(64, np.float32)]))
    assert p.device is gpu and p.reason == "requested device sim:0"
    assert p.transfers == [(0, "cpu", "sim:0"), (1, "cpu", "sim:0")]
    host_args = [np.zeros((2, 64), np.float32), np.zeros(64, np.float32)]
    assert Scheduler([gpu], hint="cpu").place(region_info(k, region, host_args)).device is CPU
    with pytest.raises(ValueError, match="not in use"):
        Scheduler([gpu], hint="cuda:1")


def test_unsupported_region_falls_back_with_warning():
    m, types, region, k = _setup(TANH)
    x = np.zeros((3, 8), np.float32)
    s = Scheduler([sim_device(deny_ops=frozenset({"tanh"}))], hint="sim:0")
    with pytest.warns(DeviceFallbackWarning, match="cannot run on sim:0: sim:0 does not run tanh"):
        p = s.place(region_info(k, region, [x]))
    assert p.device is CPU and "tanh" in p.fallback and s.stats.fallbacks == 1
    s2 = Scheduler([sim_device(deny_ops=frozenset({"tanh"}))])   # auto, GPU present: reported
    with pytest.warns(DeviceFallbackWarning, match="cannot run on a GPU"):
        s2.place(region_info(k, region, [x]))
    assert s2.stats.fallbacks == 1 and s2.stats.placed == {"cpu": 1}


def test_cpu_only_is_silent():
    m, types, region, k = _setup(TANH)
    s = Scheduler([])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = s.place(region_info(k, region, [np.zeros((3, 8), np.float32)]))
    assert p.device is CPU and p.fallback is None and s.stats.fallbacks == 0


def test_backend_declares_dtypes_and_ops():
    from isa.dtypes import DType
    from jit.kernel_ir import Kernel, Node
    from jit.targets.cuda.support import unsupported
    k = Kernel("k")
    k.add(Node("load", DType.F16, (), 0))
    assert "f16" in unsupported(k)
    m, types, region, kt = _setup(TANH)
    assert unsupported(kt) is None
    assert "cuBLAS" in unsupported(kt, "matmul+epilogue", DType.I32)


def test_run_on_sim_device_matches_interpreter_and_counts_transfers():
    m, types, region, k = _setup(CHAIN)
    gpu = sim_device()
    s = Scheduler([gpu], hint="sim:0")
    runner = DeviceRegionRunner(m, region, types, gpu, s)
    x = np.random.default_rng(3).standard_normal((5, 64)).astype(np.float32)
    want = dlvmrt.VM(m, jit="off").run("main", x)[0]
    bconst = m.constants["b"].value
    for _ in range(3):
        (y,) = runner([x, bconst])
        assert isinstance(y, DeviceTensor) and y.device is gpu
        np.testing.assert_allclose(to_host(y), want, rtol=2e-5, atol=1e-6)
    # x goes up every call, the constant once; three results came down
    assert gpu.transfers.h2d == 3 + 1 and gpu.transfers.d2h == 3
    assert gpu.transfers.h2d_bytes == 3 * x.nbytes + 64 * 4
    # a device-resident input needs no copy
    xd = to_device(x, gpu)
    before = gpu.transfers.h2d
    runner([xd, bconst])
    assert gpu.transfers.h2d == before
    assert runner.code.launches == 4 and len(runner.code.variants) == 1


def test_runtime_trap_declines_with_report():
    m, types, region, k = _setup(IDIV)
    gpu = sim_device()
    s = Scheduler([gpu], hint="sim:0")
    runner = DeviceRegionRunner(m, region, types, gpu, s)
    x = np.arange(6, dtype=np.int32)
    (q,) = runner([x, np.full(6, 2, np.int32)])
    np.testing.assert_array_equal(to_host(q), x // 2 + 1)
    with pytest.warns(DeviceFallbackWarning, match="declined: the kernel found a trap"):
        assert runner([x, np.array([1, 0, 1, 1, 1, 1], np.int32)]) is None
    assert runner.fallbacks == 1 and s.stats.fallbacks == 1


def test_matmul_epilogue_on_sim_device():
    src = """module t
func @main(%x: f32[N, 8], %w: f32[8, 4], %b: f32[4]) -> f32[N, 4] {
  %h = matmul %x, %w
  %h = add %h, %b
  %h = relu %h
  ret %h
}
"""
    m, types, region, k = _setup(src)
    gpu = sim_device()
    s = Scheduler([gpu])
    rng = np.random.default_rng(1)
    x, w, b = (rng.standard_normal(s_).astype(np.float32) for s_ in ((6, 8), (8, 4), (4,)))
    info = region_info(k, region, [x, w, b], matmul=(0, 1))
    assert info.matmul_flops == 2 * 6 * 8 * 4 and info.product is not None
    runner = DeviceRegionRunner(m, region, types, gpu, s)
    (h,) = runner([x, w, b])
    np.testing.assert_allclose(to_host(h), np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)


def test_device_runner_plans_each_shape_once():
    # planning costs as much as a small kernel's launch: a shape seen before reuses its plan,
    # a new shape gets its own, and every call's result is still the interpreter's
    m, types, region, k = _setup(TANH)
    gpu = sim_device()
    runner = DeviceRegionRunner(m, region, types, gpu, Scheduler([gpu]), kernel=k)
    for n in (3, 5, 3):
        x = np.linspace(-2, 2, n * 8, dtype=np.float32).reshape(n, 8)
        (y,) = runner([x])
        np.testing.assert_allclose(to_host(y), np.tanh(x + x), rtol=1e-6)
    assert len(runner.code._plans) == 2
    first = runner.code.plan([(3, 8)])
    assert runner.code.plan([(3, 8)]) is first
