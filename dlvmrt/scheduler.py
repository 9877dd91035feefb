"""Placement of regions on devices: a small, documented cost model (specs/scheduler.md).

For one region the scheduler estimates, per device that can run it, the seconds of

    transfers  inputs not on the device: link latency + bytes / link bandwidth per input
               (an input on another GPU crosses both links, through the host)
    launch     the device's fixed cost of one kernel (on a GPU: launch + status read)
    streaming  (input + output bytes) / the device's throughput
    matmul     2*m*k*n / the device's flop rate (a matmul+epilogue region)
    return     output bytes back over the link, when the region's outputs are read on the host
               afterwards (`RegionInfo.out_to_host`; the VM knows it from the region list)

and picks the cheapest; ties go to the CPU. Whether a device can run the region is the
backend's own declaration (`Device.unsupported`, from the lowering table). Hints win over cost:
a device named by the caller (`--device cuda`) is used whenever it supports the region.

No silent fallback: when a GPU is present (or was asked for) and a region cannot run on it, the
placement says why, a `DeviceFallbackWarning` is issued and `stats.fallbacks` counts it. With no
GPU (`devices == [CPU]`) every region quietly stays on the CPU.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from isa.dtypes import DType
from jit.kernel_ir import Kernel

from .devices import CPU, Device


class DeviceFallbackWarning(UserWarning):
    """A region that was to run on a GPU runs on the CPU; the message says why."""


@dataclass(frozen=True)
class RegionInfo:
    """What the cost model reads about one region call."""
    name: str
    kind: str                          # "elementwise", "reduce", "matmul+epilogue"
    kernel: Kernel
    in_bytes: tuple[int, ...]
    in_where: tuple[str, ...]          # device name of each input ("cpu" for host arrays)
    out_bytes: int
    matmul_flops: int = 0
    product: DType | None = None       # matmul+epilogue: the product's dtype
    out_to_host: bool = True


@dataclass
class Placement:
    device: Device
    cost: float                                    # estimated seconds on `device`
    costs: dict[str, float]                        # every candidate's estimate
    transfers: list[tuple[int, str, str]]          # (input index, from, to) to insert
    reason: str
    fallback: str | None = None                    # why a GPU was not used (reported)


@dataclass
class SchedulerStats:
    placed: dict[str, int] = field(default_factory=dict)
    fallbacks: int = 0
    reasons: list[str] = field(default_factory=list)


def _link(dev_name: str, devices: dict[str, Device]) -> Device | None:
    d = devices.get(dev_name)
    return None if d is None or d.is_host else d


def transfer_seconds(nbytes: int, src: str, dst: str, devices: dict[str, Device]) -> float:
    """Seconds to move `nbytes` from device `src` to `dst` (0 when they are the same)."""
    if src == dst:
        return 0.0
    total = 0.0
    for end in (src, dst):           # a GPU-to-GPU copy crosses both links through the host
        d = _link(end, devices)
        if d is not None:
            total += d.link_latency + nbytes / d.link_bandwidth
    return total


def estimate(info: RegionInfo, dev: Device, devices: dict[str, Device]) -> tuple[float, list]:
    """(seconds, transfers) of running `info` on `dev`."""
    moves = [(i, w, dev.name) for i, w in enumerate(info.in_where) if w != dev.name]
    t = sum(transfer_seconds(info.in_bytes[i], w, dev.name, devices) for i, w, _ in moves)
    t += dev.launch_overhead + (sum(info.in_bytes) + info.out_bytes) / dev.throughput
    t += info.matmul_flops / dev.flops
    if info.out_to_host:
        t += transfer_seconds(info.out_bytes, dev.name, "cpu", devices)
    return t, moves


class Scheduler:
    def __init__(self, devices: list[Device], hint: str | None = None):
        """`devices`: the CPU plus the GPUs in use; `hint`: a device name every region should
        use if it can ("cpu", "cuda:0", ...; None or "auto": the cost model decides)."""
        self.devices = {d.name: d for d in [CPU, *devices]}
        self.hint = None if hint in (None, "auto") else _device_name(hint)
        if self.hint is not None and self.hint not in self.devices:
            raise ValueError(f"hint names device {self.hint!r}, which is not in use "
                             f"({', '.join(self.devices)})")
        self.stats = SchedulerStats()

    @property
    def gpus(self) -> list[Device]:
        return [d for d in self.devices.values() if not d.is_host]

    def place(self, info: RegionInfo, hint: str | None = None) -> Placement:
        """Where `info` runs. `hint` (a region's own `device` request) overrides the global one."""
        want = hint or self.hint
        want = _device_name(want)
        costs: dict[str, float] = {}
        moves: dict[str, list] = {}
        refused: dict[str, str] = {}
        for d in self.devices.values():
            why = d.unsupported(info.kernel, info.kind, info.product)
            if why is not None:
                refused[d.name] = why
                continue
            costs[d.name], moves[d.name] = estimate(info, d, self.devices)
        if want is not None and want in costs:
            choice, reason = want, f"requested device {want}"
        elif want is not None and want != "cpu":
            why = refused.get(want, f"device {want} is not in use")
            return self._fallback(info, costs, moves, f"{info.name} cannot run on {want}: {why}")
        else:
            choice = min(costs, key=lambda n: (costs[n], n != "cpu"))
            reason = "lowest estimated cost"
        gpu_refusals = [f"{n}: {w}" for n, w in refused.items() if n != "cpu"]
        if choice == "cpu" and gpu_refusals and want is None:
            return self._fallback(info, costs, moves, f"{info.name} cannot run on a GPU ("
                                  + "; ".join(gpu_refusals) + ")")
        self.stats.placed[choice] = self.stats.placed.get(choice, 0) + 1
        return Placement(self.devices[choice], costs[choice], costs, moves[choice], reason)

    def _fallback(self, info: RegionInfo, costs, moves, why: str) -> Placement:
        self.report_fallback(why)
        self.stats.placed["cpu"] = self.stats.placed.get("cpu", 0) + 1
        return Placement(CPU, costs["cpu"], costs, moves["cpu"], "fallback", fallback=why)

    def report_fallback(self, why: str) -> None:
        """Count and warn about a region that runs on the CPU instead of a GPU (placement time,
        or a run-time decline such as a guard, a trap or too many variants)."""
        self.stats.fallbacks += 1
        self.stats.reasons.append(why)
        warnings.warn(why, DeviceFallbackWarning, stacklevel=3)


def _device_name(name: str | None) -> str | None:
    """A device kind alone ("cuda") means its device 0 ("cuda:0")."""
    return name if name in (None, "auto", "cpu") or ":" in name else f"{name}:0"
