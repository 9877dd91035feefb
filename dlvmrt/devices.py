"""Devices the VM can place work on: the CPU (always), CUDA GPUs (a driver plus pycuda or
cuda-python), and a simulated GPU backed by host memory (for tests and for trying placements).

The VM runs on the CPU unless asked otherwise. `device="auto"` silently uses the CPU when no GPU
is usable (and lets the scheduler place regions when one is); `device="cuda"` / `"cuda:N"`
without one is an error that says why.
Which devices exist is the target registry's answer (jit/targets/registry.py): this module
names no target, it wraps what a target offers with the runtime's memory pool.

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

from jit.regions import ELEMENTWISE
from jit.targets import registry
from jit.targets.registry import DeviceBackend, DeviceUnavailable

from .device_tensor import DeviceTensor, TransferStats, empty
from .memory import HostMemory, MemoryPool


def device_names() -> tuple[str, ...]:
    """What `device=` and `--device` accept: "auto", "cpu" and each device kind the target
    registry offers (each also as KIND:N)."""
    return ("auto", "cpu", *registry.device_kinds())


@dataclass(eq=False)
class Device:
    name: str                       # "cpu", "cuda:0", "sim:0"
    kind: str                       # "cpu", a device kind of the registry, or "sim"
    throughput: float               # bytes/s a fused kernel reads + writes
    launch_overhead: float          # seconds per kernel launch (with the status read)
    flops: float = 1e11             # matmul flop/s (BLAS on the CPU, the device's library on one)
    link_bandwidth: float = 0.0     # bytes/s between host and device (0: the host itself)
    link_latency: float = 0.0       # seconds per transfer
    pool: MemoryPool | None = None
    transfers: TransferStats = field(default_factory=TransferStats)
    deny_ops: frozenset[str] = frozenset()     # kernel-IR ops refused on top of the backend's own
    make_launcher: Callable[[], Any] | None = None
    matmul_fn: Callable[[DeviceTensor, DeviceTensor, DeviceTensor], None] | None = None
    backend: DeviceBackend | None = None       # what its target gave (None: the host)
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

    def unsupported(self, kernel, region_kind: str = ELEMENTWISE, product=None) -> str | None:
        """None when this device can run `kernel`, else why not (the backend's declaration)."""
        if self.is_host:
            return None
        denied = sorted({n.op for n in kernel.nodes} & self.deny_ops)
        if denied:
            return f"{self.name} does not run {', '.join(denied)}"
        return self.backend.unsupported(kernel, region_kind, product)

    def region_code(self, kernel):
        """The kernel's code on this device (plan() per shapes, run() with device handles)."""
        return self.backend.region_code(kernel, self.launcher)

    def matmul(self, a: DeviceTensor, b: DeviceTensor) -> DeviceTensor:
        batch, m, _, n = self.backend.gemm_shape(a.shape, b.shape)
        out = empty(self, a.dtype, (batch, m, n) if a.ndim == 3 else (m, n))
        self.matmul_fn(a, b, out)
        return out

    def __repr__(self) -> str:
        return f"Device({self.name})"


CPU = Device("cpu", "cpu", throughput=10e9, launch_overhead=2e-6, flops=1e11)


def _device_of(b: DeviceBackend, deny_ops: frozenset[str] = frozenset()) -> Device:
    """A target's device backend with the runtime's memory pool and transfer counters."""
    raw = b.memory if b.memory is not None else HostMemory()
    if b.matmul is not None:
        def matmul(x: DeviceTensor, y: DeviceTensor, out: DeviceTensor) -> None:
            b.matmul(x.dtype, x.shape, y.shape, x.handle, y.handle, out.handle)
    else:       # host memory: NumPy multiplies the buffers in place
        def matmul(x: DeviceTensor, y: DeviceTensor, out: DeviceTensor) -> None:
            xv = raw.view(x.handle, x.nbytes).view(x.dtype).reshape(x.shape)
            yv = raw.view(y.handle, y.nbytes).view(y.dtype).reshape(y.shape)
            raw.view(out.handle, out.nbytes).view(out.dtype).reshape(out.shape)[...] = xv @ yv
    return Device(b.name, b.kind, b.throughput, b.launch_overhead, b.flops, b.link_bandwidth,
                  b.link_latency, MemoryPool(raw), deny_ops=deny_ops,
                  make_launcher=b.make_launcher, matmul_fn=matmul, backend=b)


def sim_device(name: str = "sim:0", *, deny_ops: frozenset[str] = frozenset(),
               **numbers: float) -> Device:
    """A GPU stand-in: host memory, kernels run by the host emulation of an accelerator target's
    kernels, products by NumPy. The numbers (throughput, launch_overhead, flops, link_bandwidth,
    link_latency) default to the target's assumed ones, so placements match a real device;
    `deny_ops` makes it refuse kernels using those ops (to test fallbacks)."""
    for target in registry.targets():
        try:
            return _device_of(target.simulated_device(name, **numbers), deny_ops)
        except NotImplementedError:
            continue
    raise DeviceUnavailable("no target can simulate a device")


@functools.cache
def open_device(name: str) -> Device:
    """The accelerator device `name` ("cuda", "cuda:1"): its target's backend, opened once per
    process; DeviceUnavailable says why it cannot be used."""
    kind, ordinal = registry.parse_device(name)
    if f"{kind}:{ordinal}" != name:
        return open_device(f"{kind}:{ordinal}")
    return _device_of(registry.device(name))


@functools.cache
def accelerator_available() -> tuple[bool, str]:
    """Whether an accelerator device can be used here, and why not (asked once per process)."""
    kind = registry.first_available_kind()
    if kind is not None:
        return True, ""
    whys = [f"{k}: {registry.target_of_kind(k).available()[1]}" for k in registry.device_kinds()]
    return False, "; ".join(whys) or "no target offers accelerator devices"


def resolve_device(device: str) -> str:
    """Check a device string. "auto" becomes "cpu" when no accelerator is usable, silently."""
    if device in ("auto", "cpu"):
        if device == "auto" and not accelerator_available()[0]:
            return "cpu"
        return device
    try:
        kind, ordinal = registry.parse_device(device)
    except ValueError:
        raise ValueError(f"device must be one of {', '.join(device_names())} or KIND:N, "
                         f"got {device!r}") from None
    ok, why = registry.target_of_kind(kind).available()
    if not ok:
        raise DeviceUnavailable(f"device {device} was requested, but {why}")
    if ":" in device:
        open_device(device)
    return device


def default_accelerator() -> str | None:
    """The device "auto" places work on: the first usable accelerator kind's device 0."""
    kind = registry.first_available_kind()
    return None if kind is None else f"{kind}:0"


def get_device(name: str) -> Device:
    """The Device object for a resolved name ("cpu", "KIND", "KIND:N")."""
    if name == "cpu":
        return CPU
    return open_device(name)


__all__ = ["CPU", "Device", "DeviceUnavailable", "accelerator_available", "default_accelerator",
           "device_names", "get_device", "open_device", "resolve_device", "sim_device"]
