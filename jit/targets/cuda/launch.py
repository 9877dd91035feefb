"""Launching kernel variants: one interface, two launchers.

    launcher.compile(kernel, spec) -> handle        launcher.launch(handle, plan, ptrs)

`ptrs` are the device addresses of the inputs, then the outputs, then the u32 status word.
`GpuLauncher` builds PTX for the device's architecture, loads it through the driver and
launches with `launch_dims`; `HostLauncher` runs the host emulation of the same kernel on host
addresses (the simulated device of tests). `RegionCode` keeps the variants of one region's kernel
(one per Spec, at most `max_variants`) for either launcher.
"""
from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from jit.kernel_ir import Kernel
from jit.plan import Decline, Plan, Spec, make_plan

from .codegen import build_cuda_kernel, launch_dims
from .target import ARCHS, emit_ptx


class Launcher(Protocol):
    def compile(self, kernel: Kernel, spec: Spec) -> Any: ...
    def launch(self, handle: Any, plan: Plan, ptrs: list[int]) -> None: ...


def arch_for(capability: tuple[int, int]) -> str:
    """The newest PTX target we emit that the device runs (the driver JIT-compiles upward)."""
    major, minor = capability
    fits = [a for a in ARCHS if int(a[3:]) <= major * 10 + minor]
    if not fits:
        raise Decline(f"compute capability {major}.{minor} is older than {min(ARCHS)}")
    return max(fits, key=lambda a: int(a[3:]))


class GpuLauncher:
    def __init__(self, driver, arch: str | None = None):
        self.driver = driver
        self.arch = arch or arch_for(driver.compute_capability())
        self.ptx_bytes = 0

    def compile(self, kernel: Kernel, spec: Spec) -> Any:
        ck = build_cuda_kernel(kernel, spec)
        ptx = emit_ptx(ck.llvm_ir, [ck.name], self.arch)
        self.ptx_bytes += len(ptx)
        module = self.driver.load_module(ptx)
        return ck, module, self.driver.get_function(module, ck.name)

    def launch(self, handle: Any, plan: Plan, ptrs: list[int]) -> None:
        ck, _, fn = handle
        grid, block = launch_dims(ck.rows, rows_total(plan), plan.elements, plan.inner_total)
        # pointers as Python ints, sizes and strides as np.int64 (the drivers pack them so)
        self.driver.launch(fn, grid, block, list(ptrs) + [np.int64(d) for d in plan.dims.tolist()])


class HostLauncher:
    def compile(self, kernel: Kernel, spec: Spec) -> Any:
        from .emulate import compile_on_host
        return compile_on_host(kernel, spec)[0]

    def launch(self, handle: Any, plan: Plan, ptrs: list[int]) -> None:
        handle(*ptrs, *[int(d) for d in plan.dims.tolist()])


def rows_total(plan: Plan) -> int:
    """Rows of the domain (product of the outer axes): the block count of a row kernel."""
    n = 1
    for s in plan.dims[:plan.spec.outer].tolist():
        n *= int(s)
    return n


PLANS_KEPT = 32


class RegionCode:
    """The variants of one kernel on one launcher."""

    def __init__(self, kernel: Kernel, launcher: Launcher, max_variants: int = 8):
        self.kernel = kernel
        self.launcher = launcher
        self.max_variants = max_variants
        self.variants: dict[Spec, Any] = {}
        self.launches = 0
        self._plans: dict[tuple[tuple[int, ...], ...], Plan] = {}

    def plan(self, shapes: list[tuple[int, ...]]) -> Plan:
        # planning is pure in the shapes and costs tens of microseconds in Python, as much as
        # a small kernel's launch: a call with shapes seen before reuses its plan (a region
        # sees few distinct shapes; the table is emptied when it outgrows PLANS_KEPT)
        key = tuple(tuple(int(d) for d in s) for s in shapes)
        plan = self._plans.get(key)
        if plan is None:
            plan = make_plan(self.kernel, list(key))
            if len(self._plans) >= PLANS_KEPT:
                self._plans.clear()
            self._plans[key] = plan
        return plan

    def run(self, plan: Plan, ptrs: list[int]) -> None:
        handle = self.variants.get(plan.spec)
        if handle is None:
            if len(self.variants) >= self.max_variants:
                raise Decline(f"more than {self.max_variants} variants of {self.kernel.name}")
            handle = self.variants[plan.spec] = self.launcher.compile(self.kernel, plan.spec)
        self.launcher.launch(handle, plan, ptrs)
        self.launches += 1
