"""The CUDA target: PTX per region from LLVM's NVPTX backend, run through a CUDA driver (pycuda
or cuda-python) with cuBLAS for products; without a GPU its kernels still build (and run on a
simulated device through their host emulation)."""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from jit.targets.registry import DeviceBackend, DeviceUnavailable, Target

# the cost model's assumed numbers for a GPU (specs/scheduler.md)
GPU_NUMBERS = dict(throughput=1e12, launch_overhead=20e-6, flops=2e13, link_bandwidth=8e9,
                   link_latency=10e-6)


@functools.cache
def _driver(ordinal: int):
    from .driver import open_driver
    return open_driver(ordinal)


def _common() -> dict[str, Any]:
    from .cublas import gemm_args
    from .launch import RegionCode
    from .support import unsupported
    return dict(gemm_shape=gemm_args, region_code=RegionCode, unsupported=unsupported)


class CudaTarget(Target):
    name = "cuda"
    summary = "NVIDIA GPUs: PTX per region (LLVM NVPTX), cuBLAS products"
    emits = ("ptx", "llvm", "kernel-ir")
    device_kind = "cuda"

    def compile_program(self, module, *, emit: str | None = None, dims=None, out_dir,
                        arch: list[str] | str | None = None, **options) -> list[Path]:
        from .program import compile_program_cuda
        emit = "ptx" if emit in (None, "asm") else emit
        arches = [arch] if isinstance(arch, str) or arch is None else list(arch)
        return [p for a in arches
                for p in compile_program_cuda(module, emit=emit, dims=dims, out_dir=out_dir, arch=a)]

    @functools.cache  # noqa: B019 - one target object per process; asked once
    def available(self) -> tuple[bool, str]:
        from .driver import DriverUnavailable
        try:
            _driver(0)
        except DriverUnavailable as e:
            return False, str(e)
        return True, ""

    @functools.cache  # noqa: B019 - one backend per device per process
    def device(self, ordinal: int) -> DeviceBackend:
        from .driver import DriverUnavailable
        try:
            drv = _driver(ordinal)
        except DriverUnavailable as e:
            raise DeviceUnavailable(f"cuda:{ordinal} is not usable: {e}") from None
        from .memory import CudaMemory
        blas: list = []

        def matmul(dtype, a_shape, b_shape, a, b, out) -> None:
            if not blas:
                from .cublas import Cublas
                blas.append(Cublas())
            blas[0].matmul(dtype, a_shape, b_shape, a, b, out)

        def launcher():
            from .launch import GpuLauncher
            return GpuLauncher(drv)
        return DeviceBackend(f"cuda:{ordinal}", "cuda", memory=CudaMemory(drv),
                             make_launcher=launcher, matmul=matmul, **GPU_NUMBERS, **_common())

    def simulated_device(self, name: str, **numbers: float) -> DeviceBackend:
        """A GPU stand-in: host memory, kernels run by their host emulation, products by the
        host; the numbers default to a GPU's, so placements match a real one."""
        def launcher():
            from .launch import HostLauncher
            return HostLauncher()
        return DeviceBackend(name, "sim", memory=None, make_launcher=launcher, matmul=None,
                             **{**GPU_NUMBERS, **numbers}, **_common())


TARGET = CudaTarget()
