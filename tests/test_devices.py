"""Devices, memory pools and device tensors, without a GPU (the simulated device)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from dlvmrt import devices
from dlvmrt.device_tensor import DeviceTensor, empty, to_device, to_host, where
from dlvmrt.memory import LARGE, MIN_CLASS, HostMemory, MemoryPool, size_class

HAVE_GPU = devices.accelerator_available()[0]


@pytest.mark.parametrize("n,cls", [(0, MIN_CLASS), (1, MIN_CLASS), (512, 512), (513, 1024), (4096, 4096),
                                   (4097, 8192), (LARGE, LARGE), (LARGE + 1, 2 * LARGE),
                                   (5 * LARGE - 3, 5 * LARGE)])
def test_size_classes(n, cls):
    assert size_class(n) == cls


def test_pool_reuses_freed_blocks():
    pool = MemoryPool(HostMemory())
    a = pool.alloc(1000)
    pool.release(a)
    b = pool.alloc(700)                 # same class (1024): the freed block comes back
    assert b.handle == a.handle and pool.stats.raw_allocs == 1 and pool.stats.reuses == 1
    c = pool.alloc(3000)
    assert c.handle != b.handle and pool.stats.raw_allocs == 2
    pool.release(b)
    pool.release(c)
    assert pool.stats.in_use == 0 and pool.stats.cached == 1024 + 4096
    assert pool.trim() == 1024 + 4096 and pool.stats.cached == 0


def test_pool_limit_trims_then_raises():
    pool = MemoryPool(HostMemory(), limit=4096)
    a = pool.alloc(2048)
    pool.release(a)
    b = pool.alloc(4096)                # needs the cached 2048 given back first
    assert pool.stats.cached == 0 and b.size == 4096
    with pytest.raises(MemoryError, match="limit"):
        pool.alloc(10)


def test_transfers_are_explicit_and_counted():
    dev = devices.sim_device()
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = to_device(x, dev)
    assert isinstance(t, DeviceTensor) and t.shape == (3, 4) and t.dtype == np.float32
    assert where(t) == "sim:0" and where(x) == "cpu"
    assert (dev.transfers.h2d, dev.transfers.h2d_bytes) == (1, 48)
    y = to_host(t)
    np.testing.assert_array_equal(x, y)
    assert (dev.transfers.d2h, dev.transfers.d2h_bytes) == (1, 48)
    handle = t.handle
    t.release()
    assert dev.pool.stats.in_use == 0
    u = empty(dev, np.float64, (6,))     # same size class: the released block is reused
    assert u.handle == handle and dev.transfers.total() == 2


def test_dropping_a_device_tensor_returns_its_block():
    dev = devices.sim_device()
    t = to_device(np.ones(100, np.int64), dev)
    assert dev.pool.stats.in_use == 1024
    del t
    assert dev.pool.stats.in_use == 0 and dev.pool.stats.cached == 1024


def test_sim_matmul():
    dev = devices.sim_device()
    a = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((5, 2)).astype(np.float32)
    c = dev.matmul(to_device(a, dev), to_device(b, dev))
    np.testing.assert_allclose(to_host(c), a @ b, rtol=1e-6)


@pytest.mark.skipif(HAVE_GPU, reason="a GPU is present")
def test_auto_stays_on_cpu_silently():
    ok, why = devices.accelerator_available()
    assert not ok and why
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert devices.resolve_device("auto") == "cpu"
        assert devices.resolve_device("cpu") == "cpu"


@pytest.mark.skipif(HAVE_GPU, reason="a GPU is present")
@pytest.mark.parametrize("name", ["cuda", "cuda:0", "cuda:3"])
def test_cuda_without_gpu_says_why(name):
    with pytest.raises(devices.DeviceUnavailable, match=f"device {name} was requested, but"):
        devices.resolve_device(name)


def test_bad_device_names():
    for bad in ("gpu", "tpu:0", ""):
        with pytest.raises(ValueError, match="device must be one of"):
            devices.resolve_device(bad)


@pytest.mark.skipif(HAVE_GPU, reason="a GPU is present")
def test_vm_auto_runs_on_cpu_without_warnings():
    import assembler
    import dlvmrt
    m = assembler.assemble("module t\nfunc @main(%x: f32[4]) -> f32[4] {\n  %y = exp %x\n"
                           "  %y = add %y, 1.0\n  ret %y\n}\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vm = dlvmrt.VM(m, jit="always", device="auto")
        (y,) = vm.run("main", np.zeros(4, np.float32))
    assert vm.device == "cpu"
    np.testing.assert_allclose(y, 2.0)


def test_asking_for_a_gpu_does_not_load_the_compiler():
    import subprocess
    import sys
    code = ("import sys, dlvmrt.devices as d; d.resolve_device('auto'); d.accelerator_available(); "
            "import jit.targets.cuda; print('llvmlite' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
