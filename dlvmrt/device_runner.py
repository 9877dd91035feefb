"""Run one region on the device the scheduler chose, with the transfers it needs.

`DeviceRegionRunner(module, region, types, device, scheduler)` is called like a CPU region
runner, with the region's input values (host arrays or DeviceTensors) and returns its outputs
as DeviceTensors on the device, or None when the device declines this call (shapes that do not
broadcast, too many variants, a trap or range status from the kernel): the caller then runs the
region on the CPU, and the decline has been reported (warning + `scheduler.stats.fallbacks`).

Module constants are uploaded once per device and kept; every other host input is copied on
each call (counted in `device.transfers`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from isa.module import ConstRef
from jit.build import build_kernel
from jit.plan import Decline
from jit.regions import MATMUL_EPILOGUE

from .device_tensor import DeviceTensor, empty, to_device, to_host
from .devices import Device
from .scheduler import RegionInfo, Scheduler


def region_info(kernel, region, args: list[Any], matmul: tuple[int, int] | None = None,
                out_to_host: bool = True) -> RegionInfo:
    """The cost model's view of one call of `region` on `args` (output size: the largest input's
    element count for each output; exact enough for placement)."""
    shapes = [tuple(a.shape) for a in args]
    in_bytes = tuple(int(np.prod(s, dtype=np.int64)) * np.dtype(a.dtype).itemsize
                     for s, a in zip(shapes, args))
    where = tuple(a.device.name if isinstance(a, DeviceTensor) else "cpu" for a in args)
    biggest = max((int(np.prod(s, dtype=np.int64)) for s in shapes), default=1)
    out_bytes = sum(biggest * np.dtype(o.dtype.np).itemsize for o in kernel.outputs)
    flops, product = 0, None
    if matmul is not None:
        a, b = shapes[matmul[0]], shapes[matmul[1]]
        flops = 2 * int(np.prod(a, dtype=np.int64)) * b[-1]
        from isa.dtypes import dtype_from_numpy
        product = dtype_from_numpy(np.dtype(args[matmul[0]].dtype))
    return RegionInfo(f"{region.func}[{region.start}:{region.end}]", region.kind, kernel, in_bytes,
                      where, out_bytes, flops, product, out_to_host)


class DeviceRegionRunner:
    def __init__(self, module, region, types, device: Device, scheduler: Scheduler,
                 kernel=None):
        self.module, self.region, self.device, self.scheduler = module, region, device, scheduler
        # the region's kernel IR as the caller built it (one build per region), or built here
        self.kernel = kernel if kernel is not None else build_kernel(module, types, region)
        self.code = device.region_code(self.kernel)
        self.matmul: tuple[int, int] | None = None
        if region.kind == MATMUL_EPILOGUE:
            mm = module.functions[region.func].blocks[region.block].instrs[region.start]
            self.matmul = tuple(region.inputs.index(o) for o in mm.operands)   # type: ignore[assignment]
        self._consts: dict[str, DeviceTensor] = {}
        self.calls = self.fallbacks = 0

    def _on_device(self, i: int, value: Any) -> DeviceTensor:
        if isinstance(value, DeviceTensor):
            if value.device is self.device:
                return value
            value = to_host(value)                      # another GPU: through the host
        operand = self.region.inputs[i]
        if isinstance(operand, ConstRef):
            cached = self._consts.get(operand.name)
            if cached is None:
                cached = self._consts[operand.name] = to_device(value, self.device)
            return cached
        return to_device(np.asarray(value), self.device)

    def __call__(self, args: list[Any]) -> list[DeviceTensor] | None:
        self.calls += 1
        try:
            return self._run(args)
        except Decline as d:
            self.fallbacks += 1
            self.scheduler.report_fallback(f"{self.region.func}[{self.region.start}:{self.region.end}] "
                                           f"on {self.device.name} declined: {d}")
            return None

    def _run(self, args: list[Any]) -> list[DeviceTensor]:
        if any(t.source < 0 for t in self.kernel.inputs) and self.matmul is None:
            raise Decline(f"the {self.region.kind} head has no GPU implementation")
        dev = [self._on_device(i, a) for i, a in enumerate(args)]
        ins: list[DeviceTensor] = []
        for t in self.kernel.inputs:
            if t.source < 0:
                a, b = dev[self.matmul[0]], dev[self.matmul[1]]
                try:
                    ins.append(self.device.matmul(a, b))
                except ValueError as e:
                    raise Decline(str(e)) from None
            else:
                ins.append(dev[t.source])
        for t, x in zip(self.kernel.inputs, ins):
            if np.dtype(t.dtype.np) != x.dtype:
                raise Decline(f"input {t.name} is {x.dtype}, the region was compiled for {t.dtype}")
        plan = self.code.plan([x.shape for x in ins])
        outs = [empty(self.device, np.dtype(o.dtype.np), s)
                for o, s in zip(self.kernel.outputs, plan.out_shapes)]
        status = empty(self.device, np.uint32, (1,))
        self.device.pool.raw.zero(status.handle, 4)
        self.code.run(plan, [x.handle for x in ins] + [o.handle for o in outs] + [status.handle])
        word = np.empty(1, np.uint32)
        self.device.pool.raw.download(word, status.handle)     # also waits for the kernel
        status.release()
        if word[0]:
            from jit.status import status_text
            raise Decline(status_text(int(word[0])))
        return outs
