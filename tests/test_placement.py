"""The VM places JIT regions on devices through the scheduler, inserts the transfers, reports
every CPU fallback, and shows placements in the profile. A simulated GPU (host memory, the CUDA
kernels' host emulation) stands in for a real one, so this runs on any machine."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from shared_paths import PROJECT_EXAMPLES, example_programs

import dlvmrt
from dlvmrt import devices
from dlvmrt.devices import sim_device
from dlvmrt.scheduler import DeviceFallbackWarning

GELU = PROJECT_EXAMPLES / "gelu.dlasm"


def gelu_input(n: int = 4096) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(n).astype(np.float32)


@pytest.mark.skipif(devices.accelerator_available()[0], reason="a GPU is present")
def test_auto_without_a_gpu_is_the_cpu_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vm = dlvmrt.VM(dlvmrt.load(GELU), jit="always", device="auto")
        vm.run("main", gelu_input())
    assert vm.scheduler is None and vm.device == "cpu"


def test_requested_gpu_runs_the_region_there_with_counted_transfers():
    sim = sim_device()
    vm = dlvmrt.VM(dlvmrt.load(GELU), jit="always", device=sim, profile=True)
    x = gelu_input()
    (y,) = vm.run("main", x)
    (want,) = dlvmrt.VM(dlvmrt.load(GELU)).run("main", x)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    assert isinstance(y, np.ndarray)
    assert vm.scheduler.stats.placed == {"sim:0": 1}
    assert (sim.transfers.h2d, sim.transfers.d2h) == (1, 1)
    table = vm.profiler.table(vm)
    assert "sim:0" in table and "transfers sim:0: 1 to the device" in table


def test_a_refused_region_falls_back_to_the_cpu_with_a_warning():
    sim = sim_device(deny_ops=frozenset({"tanh"}))
    vm = dlvmrt.VM(dlvmrt.load(GELU), jit="always", device=sim)
    with pytest.warns(DeviceFallbackWarning, match="does not run tanh"):
        (y,) = vm.run("main", gelu_input())
    assert vm.scheduler.stats.fallbacks == 1
    assert vm.scheduler.stats.placed == {"cpu": 1}
    assert sim.transfers.total() == 0
    (want,) = dlvmrt.VM(dlvmrt.load(GELU)).run("main", gelu_input())
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


def dense_relu():
    from isa.builder import ModuleBuilder
    mb = ModuleBuilder("dense")
    w = mb.constant("w", np.full((512, 512), 1 / 512, np.float32))
    f = mb.function("main", [("x", "f32[N, 512]")], ["f32[N, 512]"])
    f.ret(f.relu(f.add(f.matmul(f.arg("x"), w), 0.5)))
    return mb.finish()


def test_the_cost_model_keeps_light_work_on_the_cpu_and_moves_heavy_work():
    sim = sim_device()
    vm = dlvmrt.VM(dlvmrt.load(GELU), jit="always", device="auto", gpus=[sim])
    vm.run("main", gelu_input(1 << 20))   # one pass over host data: two transfers cost more
    assert vm.scheduler.stats.placed == {"cpu": 1}
    vm = dlvmrt.VM(dense_relu(), jit="always", device="auto", gpus=[sim])
    x = np.ones((4, 512), np.float32)
    vm.run("main", x)                     # a tiny matmul: the launch and transfers dominate
    assert vm.scheduler.stats.placed == {"cpu": 1}
    (y,) = vm.run("main", np.ones((1024, 512), np.float32))   # 0.5 GFLOP: the GPU wins
    assert vm.scheduler.stats.placed == {"cpu": 1, "sim:0": 1}
    np.testing.assert_allclose(y, 1.5, rtol=1e-5)
    assert vm.scheduler.stats.fallbacks == 0


@pytest.mark.parametrize("prog", example_programs(PROJECT_EXAMPLES), ids=lambda p: p.stem)
def test_examples_on_a_simulated_gpu_match_the_expected_outputs(prog):
    inputs = dict(np.load(prog.with_suffix(".inputs.npz")))
    want = np.load(prog.with_suffix(".expect.npz"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeviceFallbackWarning)
        vm = dlvmrt.VM(dlvmrt.load(prog), jit="always", device=sim_device())
        outs = vm.run("main", **inputs)
        outs = vm.run("main", **inputs)
    for i, o in enumerate(outs):
        w = want[f"out{i}"]
        assert o.dtype == w.dtype and o.shape == w.shape
        if w.dtype.kind == "f":
            np.testing.assert_allclose(o, w, rtol=1e-4, atol=1e-5)
        else:
            np.testing.assert_array_equal(o, w)


def test_a_placed_region_builds_its_kernel_once(monkeypatch):
    # the CPU runner, the placement and the device runner share one kernel IR
    import dlvmrt.device_runner as dr
    import jit.build
    import jit.targets.cpu.runner as cpu_runner
    calls = []
    real = jit.build.build_kernel

    def counting(*args, **kw):
        calls.append(args[2])
        return real(*args, **kw)
    for mod in (jit.build, cpu_runner, dr):
        monkeypatch.setattr(mod, "build_kernel", counting)
    vm = dlvmrt.VM(dlvmrt.load(GELU), jit="always", device=sim_device())
    x = gelu_input()
    vm.run("main", x)
    vm.run("main", x)
    assert vm.scheduler.stats.placed.get("sim:0")
    assert len(calls) == len({(r.func, r.block, r.start) for r in calls}), calls


def test_the_default_device_is_the_cpu_even_with_a_gpu():
    # as in onnxruntime and PyTorch, a GPU is used when asked for (device="auto" or "cuda"); the
    # default keeps the CPU's whole-program native tier and background compiles
    vm = dlvmrt.VM(dlvmrt.load(GELU), jit="always")
    vm.run("main", gelu_input())
    assert vm.scheduler is None and vm.device == "cpu"
