"""Devices the VM can place work on: the CPU (always), CUDA GPUs (a driver plus pycuda or
cuda-python), and a simulated GPU backed by host memory (for tests and for trying placements).

`device="auto"` silently uses the CPU when no GPU is usable (and lets the scheduler place
regions when one is); `device="cuda"` / `"cuda:N"` without one is an error that says why.

Each `Device` carries what the scheduler's cost model reads (link bandwidth to the host, the
bytes per second a fused kernel streams, the fixed cost of one launch) and what running needs
(memory pool, transfer counters, kernel launcher, matmul). The numbers are assumptions written
down in specs/scheduler.md, not measurements; `bench` on a GPU machine can refine them.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .device_tensor import DeviceTensor, TransferStats, empty
from .memory import CudaMemory, HostMemory, MemoryPool

DEVICES = ("auto", "cpu", "cuda")


class DeviceUnavailable(Exception):
    pass


@dataclass(eq=False)
class Device:
    name: str                       # "cpu", "cuda:0", "sim:0"
    kind: str                       # "cpu", "cuda" or "sim"
    throughput: float               # bytes/s a fused kernel reads + writes
    launch_overhead: float          # seconds per kernel launch (with the status read)
    flops: float = 1e11             # matmul flop/s (BLAS on the CPU, cuBLAS on a GPU)
    link_bandwidth: float = 0.0     # bytes/s between host and device (0: the host itself)
    link_latency: float = 0.0       # seconds per transfer
    pool: MemoryPool | None = None
    transfers: TransferStats = field(default_factory=TransferStats)
    deny_ops: frozenset[str] = frozenset()     # kernel-IR ops refused on top of the backend's own
    make_launcher: Callable[[], Any] | None = None
    matmul_fn: Callable[[DeviceTensor, DeviceTensor, DeviceTensor], None] | None = None
    _launcher: Any = None

    @property
    def is_host(self) -> bool:
        return self.kind == "cpu"

    @property
    def launcher(self):
        if self._launcher is None:
            if self.make_launcher is None:
                raise DeviceUnavailable(f"{self.name} runs no kernels")
            self._launcher = self.make_launcher()
        return self._launcher

    def unsupported(self, kernel, region_kind: str = "elementwise", product=None) -> str | None:
        """None when this device can run `kernel`, else why not (the backend's declaration)."""
        if self.is_host:
            return None
        denied = sorted({n.op for n in kernel.nodes} & self.deny_ops)
        if denied:
            return f"{self.name} does not run {', '.join(denied)}"
        from jit.targets.cuda.support import unsupported
        return unsupported(kernel, region_kind, product)

    def matmul(self, a: DeviceTensor, b: DeviceTensor) -> DeviceTensor:
        from jit.targets.cuda.cublas import gemm_args
        batch, m, _, n = gemm_args(a.shape, b.shape)
        out = empty(self, a.dtype, (batch, m, n) if a.ndim == 3 else (m, n))
        self.matmul_fn(a, b, out)
        return out

    def __repr__(self) -> str:
        return f"Device({self.name})"


CPU = Device("cpu", "cpu", throughput=10e9, launch_overhead=2e-6, flops=1e11)


def sim_device(name: str = "sim:0", *, throughput: float = 1e12, launch_overhead: float = 20e-6,
               flops: float = 2e13, link_bandwidth: float = 8e9, link_latency: float = 10e-6,
               deny_ops: frozenset[str] = frozenset()) -> Device:
    """A GPU stand-in: host memory, kernels run by the host emulation of the CUDA kernels, matmul
    by NumPy. Defaults are the CUDA device's assumed numbers, so placements match a real one;
    `deny_ops` makes it refuse kernels using those ops (to test fallbacks)."""
    raw = HostMemory()

    def matmul(a: DeviceTensor, b: DeviceTensor, out: DeviceTensor) -> None:
        x = raw.view(a.handle, a.nbytes).view(a.dtype).reshape(a.shape)
        y = raw.view(b.handle, b.nbytes).view(b.dtype).reshape(b.shape)
        raw.view(out.handle, out.nbytes).view(out.dtype).reshape(out.shape)[...] = x @ y

    def launcher():
        from jit.targets.cuda.launch import HostLauncher
        return HostLauncher()
    return Device(name, "sim", throughput, launch_overhead, flops, link_bandwidth, link_latency,
                  MemoryPool(raw), deny_ops=deny_ops, make_launcher=launcher, matmul_fn=matmul)


@functools.cache
def _driver(ordinal: int):
    from jit.targets.cuda.driver import open_driver
    return open_driver(ordinal)


@functools.cache
def cuda_device(ordinal: int = 0) -> Device:
    """CUDA device `ordinal` (opens the driver; raises DeviceUnavailable with the reason)."""
    from jit.targets.cuda.driver import DriverUnavailable
    try:
        drv = _driver(ordinal)
    except DriverUnavailable as e:
        raise DeviceUnavailable(f"cuda:{ordinal} is not usable: {e}") from None
    blas: list = []

    def matmul(a: DeviceTensor, b: DeviceTensor, out: DeviceTensor) -> None:
        if not blas:
            from jit.targets.cuda.cublas import Cublas
            blas.append(Cublas())
        blas[0].matmul(a.dtype, a.shape, b.shape, a.handle, b.handle, out.handle)

    def launcher():
        from jit.targets.cuda.launch import GpuLauncher
        return GpuLauncher(drv)
    return Device(f"cuda:{ordinal}", "cuda", throughput=1e12, launch_overhead=20e-6, flops=2e13,
                  link_bandwidth=8e9, link_latency=10e-6, pool=MemoryPool(CudaMemory(drv)),
                  make_launcher=launcher, matmul_fn=matmul)


@functools.cache
def cuda_available() -> tuple[bool, str]:
    """Whether a CUDA device can be used, and why not (asked once per process)."""
    from jit.targets.cuda.driver import DriverUnavailable
    try:
        _driver(0)
    except DriverUnavailable as e:
        return False, str(e)
    return True, ""


def resolve_device(device: str) -> str:
    """Check a device string. "auto" becomes "cpu" when no GPU is usable, silently."""
    if device not in DEVICES and not device.startswith("cuda:"):
        raise ValueError(f"device must be one of {', '.join(DEVICES)} or cuda:N, got {device!r}")
    if device == "auto":
        return "auto" if cuda_available()[0] else "cpu"
    if device.startswith("cuda"):
        ok, why = cuda_available()
        if not ok:
            raise DeviceUnavailable(f"device {device} was requested, but {why}")
        if device != "cuda":
            try:
                ordinal = int(device[5:])
            except ValueError:
                raise ValueError(f"bad CUDA device {device!r}; expected cuda:N") from None
            cuda_device(ordinal)
    return device


def get_device(name: str) -> Device:
    """The Device object for a resolved name ("cpu", "cuda", "cuda:N")."""
    if name == "cpu":
        return CPU
    if name == "cuda":
        return cuda_device(0)
    if name.startswith("cuda:"):
        return cuda_device(int(name[5:]))
    raise ValueError(f"no device {name!r}")


__all__ = ["CPU", "DEVICES", "Device", "DeviceUnavailable", "cuda_available", "cuda_device",
           "get_device", "resolve_device", "sim_device"]
