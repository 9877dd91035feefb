"""The VM's side of device placement: each JIT region, once hot, runs where the scheduler puts
it (the CPU runner, or a device runner on a GPU), with the transfers that needs.

- A placement is asked for once per call signature (input devices and shapes) and cached.
- A region's outputs stay on the device only when every reader of them in the function is
  another region (jit="always": every block is tiered before it runs); otherwise they come back
  to the host at once, so the interpreter only ever sees host arrays.
- A GPU that declines a call (guard, status word, unsupported dtype) falls back to the CPU
  runner; the scheduler has already warned and counted it. A CPU runner that declines returns
  None and the VM interprets the region, after bringing its inputs to the host.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from isa.module import Function, Reg

from .device_tensor import DeviceTensor, to_host, where
from .scheduler import Scheduler

_CPU_ONLY = object()    # a cached placement for a region whose kernel no GPU backend can build


def host(value: Any) -> Any:
    return to_host(value) if isinstance(value, DeviceTensor) else value


def read_outside_regions(func: Function, regions: list) -> set[str]:
    """Registers read by any instruction that is not inside one of `regions` (terminators, calls,
    asserts and interpreted instructions need host values)."""
    covered = {(r.block, i) for r in regions for i in range(r.start, r.end)}
    names: set[str] = set()
    for bi, block in enumerate(func.blocks):
        for ii, ins in enumerate(block.instrs):
            if (bi, ii) not in covered:
                names.update(o.name for o in ins.operands if isinstance(o, Reg))
    return names


class PlacedRegion:
    """Runs one region on the device the scheduler picks; the VM calls it like a region runner."""

    def __init__(self, module, region, types, cpu_runner, scheduler: Scheduler,
                 keep_on_device: bool):
        self.module, self.region, self.types = module, region, types
        self.cpu = cpu_runner
        self.scheduler = scheduler
        self.keep_on_device = keep_on_device
        self._kernel = None
        self._matmul = None
        self._device_runners: dict[str, Any] = {}
        self._placements: dict[tuple, Any] = {}
        self.device_calls: Counter[str] = Counter()
        self.last_device = "cpu"
        self.fallbacks = 0

    @property
    def kernel(self):
        """The region's kernel IR, built once: the CPU runner's when it has built it (every
        device's code starts from this one)."""
        if self._kernel is None:
            build = getattr(self.cpu, "_build", None)
            if build is not None and getattr(self.cpu, "kernel", None) is None:
                try:
                    build()         # the CPU runner's own setup, which builds the kernel
                except Exception:  # noqa: BLE001 - built below, failing with the reason
                    pass
            self._kernel = getattr(self.cpu, "kernel", None)
            if self._kernel is None:
                from jit.build import build_kernel
                self._kernel = build_kernel(self.module, self.types, self.region)
        return self._kernel

    def _placement(self, args: list[Any]):
        key = tuple((where(a), tuple(a.shape), str(a.dtype)) for a in args)
        placement = self._placements.get(key)
        if placement is None:
            try:
                from .device_runner import region_info
                runner = self._device_runner(self.scheduler.gpus[0])
                info = region_info(self.kernel, self.region, args, runner.matmul,
                                   out_to_host=not self.keep_on_device)
                placement = self.scheduler.place(info)
            except Exception as e:  # noqa: BLE001 - a kernel no GPU backend builds: CPU, reported
                self.scheduler.report_fallback(f"{self.region.func}[{self.region.start}:"
                                               f"{self.region.end}] stays on the CPU: {e}")
                placement = _CPU_ONLY
            self._placements[key] = placement
        return None if placement is _CPU_ONLY else placement

    def _device_runner(self, device):
        runner = self._device_runners.get(device.name)
        if runner is None:
            from .device_runner import DeviceRegionRunner
            runner = DeviceRegionRunner(self.module, self.region, self.types, device,
                                        self.scheduler, kernel=self.kernel)
            self._device_runners[device.name] = runner
        return runner

    def __call__(self, args: list[Any]) -> list[Any] | None:
        placement = self._placement(args)
        if placement is not None and not placement.device.is_host:
            outs = self._device_runner(placement.device)(args)
            if outs is not None:
                self.last_device = placement.device.name
                self.device_calls[self.last_device] += 1
                return outs if self.keep_on_device else [to_host(o) for o in outs]
            self.fallbacks += 1
        self.last_device = "cpu"
        self.device_calls["cpu"] += 1
        return self.cpu([host(a) for a in args])

    # the REPL and the profile read these from any region runner
    def describe(self) -> dict:
        info = dict(self.cpu.describe()) if hasattr(self.cpu, "describe") else {}
        info["devices"] = dict(self.device_calls)
        info["device_fallbacks"] = self.fallbacks
        return info

    def __getattr__(self, name: str):
        # kernel_ir / llvm_ir / variants / ... of the CPU runner
        return getattr(self.__dict__["cpu"], name)
