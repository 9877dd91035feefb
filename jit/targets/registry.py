"""The target registry: what each code-generation target offers, found by name.

A target is a folder under `jit/targets/` holding a `register.py` whose `TARGET` is a `Target`
(below). The registry imports those modules the first time it is asked (so `import jit` stays
cheap and imports no LLVM or CUDA), and nothing else in dlvm names a target: the VM and the
scheduler ask it for devices, the command line for `--target` and `--emit` choices. A new target
is a new folder plus its `register.py` (tinygrad's renderers and IREE's HAL drivers are the
model).

    from jit.targets import registry
    registry.names()                      # ["aot", "cpu", "cuda"]
    registry.get("cuda").compile_program(module, emit="ptx", out_dir="out")
    registry.device("cuda:0")             # a DeviceBackend, or DeviceUnavailable saying why
"""
from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jit.fork_safe import ForkSafeLock


class DeviceUnavailable(Exception):
    """A device was asked for that cannot be used here (the message says why)."""


@dataclass
class DeviceBackend:
    """What a target gives the runtime for one device: the cost model's numbers (assumptions
    written down in specs/scheduler.md), raw memory, how to run a region's kernel and a product.
    The runtime wraps it with its memory pool and transfer counters (dlvmrt/devices.py)."""
    name: str                       # "cuda:0", "sim:0"
    kind: str                       # "cuda", "sim"
    throughput: float               # bytes/s a fused kernel reads + writes
    launch_overhead: float          # seconds per kernel launch (with the status read)
    flops: float                    # matmul flop/s
    link_bandwidth: float           # bytes/s between host and device
    link_latency: float             # seconds per transfer
    memory: Any | None              # raw memory (alloc/free/upload/download/zero); None: host bytes
    make_launcher: Callable[[], Any]
    # matmul(dtype, a_shape, b_shape, a_handle, b_handle, out_handle); None: the host's product
    matmul: Callable[..., None] | None
    gemm_shape: Callable[[tuple, tuple], tuple[int, int, int, int]]   # (batch, m, k, n) or ValueError
    region_code: Callable[[Any, Any], Any]      # (kernel, launcher) -> code with plan() and run()
    unsupported: Callable[..., str | None]      # (kernel, region_kind, product) -> why not, or None


class Target:
    """One code-generation target. Subclasses set the class attributes and override what they
    offer; what they do not offer raises NotImplementedError naming the target."""
    name: str = ""
    summary: str = ""
    emits: tuple[str, ...] = ()     # what compile_program writes per region; the first is the default
    device_kind: str | None = None  # devices it offers are named "<kind>:N"

    def compile_program(self, module, *, emit: str | None = None, dims: dict[str, int] | None = None,
                        out_dir: str | os.PathLike, **options: Any) -> list[Path]:
        raise NotImplementedError(f"target {self.name} does not compile programs to files")

    def available(self) -> tuple[bool, str]:
        """Whether this target's devices can be used here, and why not."""
        return True, ""

    def device(self, ordinal: int) -> DeviceBackend:
        raise DeviceUnavailable(f"target {self.name} offers no devices")

    def simulated_device(self, name: str, **numbers: float) -> DeviceBackend:
        raise NotImplementedError(f"target {self.name} has no simulated device")


_targets: dict[str, Target] = {}
_loaded = False
_lock = ForkSafeLock()


def register(target: Target) -> Target:
    """Add `target` (a target's register.py does this through its TARGET, or a plugin by hand)."""
    if not target.name:
        raise ValueError("a target needs a name")
    _targets[target.name] = target
    return target


def _load() -> None:
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        package = Path(__file__).parent
        for info in pkgutil.iter_modules([str(package)]):
            if info.ispkg and (package / info.name / "register.py").is_file():
                module = importlib.import_module(f"jit.targets.{info.name}.register")
                register(module.TARGET)
        _loaded = True


def names() -> list[str]:
    _load()
    return sorted(_targets)


def get(name: str) -> Target:
    _load()
    target = _targets.get(name)
    if target is None:
        raise ValueError(f"unknown target {name!r}; the targets are {', '.join(names())}")
    return target


def targets() -> list[Target]:
    _load()
    return [_targets[n] for n in sorted(_targets)]


def all_emits() -> list[str]:
    """Every --emit choice of every target (the command line's list)."""
    seen: list[str] = []
    for t in targets():
        seen += [e for e in t.emits if e not in seen]
    return seen


def target_for_emit(emit: str) -> Target | None:
    """The one target that emits `emit` when only one does (`--emit ptx` implies CUDA)."""
    owners = [t for t in targets() if emit in t.emits]
    return owners[0] if len(owners) == 1 else None


def device_kinds() -> list[str]:
    """The kinds of accelerator devices the targets offer ("cuda", ...)."""
    return sorted({t.device_kind for t in targets() if t.device_kind})


def target_of_kind(kind: str) -> Target:
    for t in targets():
        if t.device_kind == kind:
            return t
    raise DeviceUnavailable(f"no target offers {kind} devices (device kinds: "
                            f"{', '.join(device_kinds()) or 'none'})")


def parse_device(name: str) -> tuple[str, int]:
    """("cuda", 0) for "cuda" or "cuda:0"; ValueError for anything else."""
    kind, _, ordinal = name.partition(":")
    if kind not in device_kinds():
        raise ValueError(f"unknown device {name!r}")
    try:
        return kind, int(ordinal) if ordinal else 0
    except ValueError:
        raise ValueError(f"bad device {name!r}; expected {kind}:N") from None


def device(name: str) -> DeviceBackend:
    """The backend of device `name` ("cuda", "cuda:1"); DeviceUnavailable says why not."""
    kind, ordinal = parse_device(name)
    target = target_of_kind(kind)
    ok, why = target.available()
    if not ok:
        raise DeviceUnavailable(f"{kind}:{ordinal} is not usable: {why}")
    return target.device(ordinal)


def first_available_kind() -> str | None:
    """The first accelerator kind usable here (what device="auto" may place work on)."""
    for kind in device_kinds():
        if target_of_kind(kind).available()[0]:
            return kind
    return None
