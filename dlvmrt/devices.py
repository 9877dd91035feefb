"""Devices the VM can place work on. The CPU is always there; CUDA needs a driver and pycuda.

`device="auto"` silently uses the CPU when no GPU is usable; `device="cuda"` without one is an
error that says why.
"""
from __future__ import annotations

DEVICES = ("auto", "cpu", "cuda")


class DeviceUnavailable(Exception):
    pass


def cuda_available() -> tuple[bool, str]:
    """Whether a CUDA device can be used, and why not."""
    try:
        import pycuda.driver as drv  # raises ImportError without a driver (libcuda)
    except ImportError as e:
        return False, f"pycuda is not usable here ({e})"
    try:
        drv.init()
        if drv.Device.count() == 0:
            return False, "the CUDA driver reports no devices"
    except Exception as e:   # noqa: BLE001 - the driver's own error types
        return False, f"the CUDA driver failed to start: {e}"
    return True, ""


def resolve_device(device: str) -> str:
    if device not in DEVICES and not device.startswith("cuda:"):
        raise ValueError(f"device must be one of {', '.join(DEVICES)} or cuda:N, got {device!r}")
    if device == "auto":
        return "cpu"      # the CUDA tier chooses GPUs itself once it lands (issue 6)
    if device.startswith("cuda"):
        ok, why = cuda_available()
        if not ok:
            raise DeviceUnavailable(f"device {device} was requested, but {why}")
    return device
