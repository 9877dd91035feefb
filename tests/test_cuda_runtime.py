"""The CUDA runtime pieces: what can be checked here (no driver) runs always; launching kernels,
cuBLAS and bandwidth are marked `gpu` and skip cleanly without a CUDA driver."""
from __future__ import annotations

import time

import numpy as np
import pytest

import assembler
import dlvmrt
import jit
from dlvmrt import devices
from dlvmrt.device_runner import DeviceRegionRunner
from dlvmrt.device_tensor import to_device, to_host
from dlvmrt.scheduler import Scheduler
from isa.verify import verify_module
from jit.regions import form_regions
from jit.targets.cuda import cublas, target
from jit.targets.cuda.driver import DriverUnavailable, open_driver
from jit.targets.cuda.launch import arch_for

HAVE_GPU, WHY = devices.accelerator_available()
gpu = pytest.mark.skipif(not HAVE_GPU, reason=f"no CUDA driver: {WHY}")

MLP = """module mlp
func @main(%x: f32[N, 64], %w: f32[64, 32], %b: f32[32]) -> f32[N, 32] {
  %h = matmul %x, %w
  %h = add %h, %b
  %h = gelu %h
  %y = softmax %h {axis = -1}
  %n = layer_norm %y {axis = -1, epsilon = 1e-5}
  ret %n
}
"""


@pytest.mark.skipif(HAVE_GPU, reason="a GPU is present")
def test_no_driver_is_reported_cleanly():
    with pytest.raises(DriverUnavailable) as e:
        open_driver()
    assert "pycuda" in str(e.value) and "cuda-python" in str(e.value)
    with pytest.raises(devices.DeviceUnavailable, match="cuda:0 is not usable"):
        devices.open_device("cuda:0")


def test_arch_choice():
    assert arch_for((9, 0)) == "sm_90" and arch_for((8, 6)) == "sm_80" and arch_for((10, 0)) == "sm_90"
    from jit.plan import Decline
    with pytest.raises(Decline, match="older"):
        arch_for((7, 5))


def test_gemm_args():
    assert cublas.gemm_args((3, 4), (4, 5)) == (1, 3, 4, 5)
    assert cublas.gemm_args((2, 3, 4), (2, 4, 5)) == (2, 3, 4, 5)
    for a, b in (((3, 4), (5, 6)), ((2, 3, 4), (4, 5)), ((4,), (4, 2))):
        with pytest.raises(ValueError):
            cublas.gemm_args(a, b)


def test_cublas_library_is_found_and_fails_cleanly_without_a_driver():
    path = cublas.find_cublas()
    if path is None:
        pytest.skip("no nvidia-cublas wheel or toolkit cuBLAS here")
    assert "libcublas.so" in path.name
    if HAVE_GPU:
        return
    with pytest.raises(cublas.CublasError, match="cublasCreate failed: CUBLAS_STATUS_NOT_INITIALIZED"):
        cublas.Cublas(path)


def test_compile_program_writes_ptx_per_region(tmp_path):
    m = assembler.assemble(MLP)
    paths = jit.compile_program(m, target="cuda", emit="ptx", dims={"N": 8}, out_dir=tmp_path)
    regions = form_regions(m, "main", verify_module(m)["main"])
    assert [p.name for p in paths] == [f"mlp.main.b0_{r.start}_{r.end}.sm_80.ptx" for r in regions]
    assert [r.kind for r in regions] == ["matmul+epilogue", "reduce"]
    texts = [p.read_text() for p in paths]
    assert all(".entry dlvm_main_b0_" in t and ".target sm_80" in t for t in texts)
    assert "bar.sync" not in texts[0] and "bar.sync" in texts[1]
    ll = jit.compile_program(m, target="cuda", emit="llvm", out_dir=tmp_path / "ll")
    assert all(p.suffixes[-2:] == [".nvptx", ".ll"] and "nvptx64-nvidia-cuda" in p.read_text() for p in ll)
    kir = jit.compile_program(m, target="cuda", emit="kernel-ir", out_dir=tmp_path / "k")
    assert f"kernel @main_b0_{regions[1].start}_{regions[1].end}" in kir[1].read_text()
    if target.ptxas_path():
        target.ptxas_check(texts[1], "sm_80")
    with pytest.raises(ValueError, match="emit for target cuda"):
        jit.compile_program(m, target="cuda", emit="obj", out_dir=tmp_path)


# ---- on a GPU ---------------------------------------------------------------------------------

@pytest.mark.gpu
@gpu
def test_gpu_kernels_match_interpreter():
    m = assembler.assemble(MLP)
    types = verify_module(m)["main"]
    dev = devices.open_device("cuda:0")
    s = Scheduler([dev], hint=dev.name)
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(sh).astype(np.float32) for sh in ((300, 64), (64, 32), (32,)))
    want = dlvmrt.VM(m, jit="off").run("main", x, w, b)[0]
    env = {"x": x, "w": w, "b": b}
    for region in form_regions(m, "main", types):
        r = DeviceRegionRunner(m, region, types, dev, s)
        outs = r([env[o.name] for o in region.inputs])
        assert outs is not None, s.stats.reasons
        env.update({name: to_host(t) for name, t in zip(region.outputs, outs)})
    np.testing.assert_allclose(env["n"], want, rtol=1e-4, atol=1e-5)
    assert s.stats.fallbacks == 0


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shapes", [((70, 33), (33, 5)), ((3, 16, 8), (3, 8, 12))])
def test_gpu_cublas_matmul(dtype, shapes):
    dev = devices.open_device("cuda:0")
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(s).astype(dtype) for s in shapes)
    c = to_host(dev.matmul(to_device(a, dev), to_device(b, dev)))
    np.testing.assert_allclose(c, a @ b, rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-4)


@pytest.mark.gpu
@gpu
def test_gpu_link_bandwidth_is_near_the_assumed_one():
    dev = devices.open_device("cuda:0")
    x = np.ones(64 << 20, np.uint8)
    to_host(to_device(x, dev))                 # warm up the pool and the driver
    t0 = time.perf_counter()
    for _ in range(4):
        to_device(x, dev).release()
    bw = 4 * x.nbytes / (time.perf_counter() - t0)
    print(f"host-to-device: {bw / 1e9:.1f} GB/s (assumed {dev.link_bandwidth / 1e9:.1f})")
    assert bw > dev.link_bandwidth / 4, "the scheduler's link bandwidth is far too optimistic"
