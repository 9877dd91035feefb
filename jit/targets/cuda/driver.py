"""The small driver interface the CUDA tier needs, with two implementations: pycuda, and
cuda-python's driver bindings when pycuda is missing (GPU machines that ship CuPy/torch often
have cuda-python but not pycuda; see tools/build_pycuda_wheel.sh).

    load_module(ptx) -> module          get_function(module, name) -> function
    mem_alloc(nbytes) -> int            mem_free(ptr)           memset_zero(ptr, nbytes)
    copy_htod(ptr, array)               copy_dtoh(array, ptr)   synchronize()
    launch(function, grid, block, args) with args device pointers (int) and np.int64 sizes
    compute_capability() -> (major, minor)

Device pointers are plain ints everywhere, so the allocator, cuBLAS and the launcher do not care
which binding made them. `open_driver()` raises DriverUnavailable with the reason when neither
binding can reach a GPU; nothing here is imported by `jit` unless a CUDA device is used.
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np


class DriverUnavailable(RuntimeError):
    """No usable CUDA driver binding or device; the message says why."""


class CudaError(RuntimeError):
    pass


class PycudaDriver:
    name = "pycuda"

    def __init__(self, ordinal: int = 0):
        try:
            import pycuda.driver as drv  # ImportError without libcuda.so.1
        except ImportError as e:
            raise DriverUnavailable(f"pycuda is not usable ({e})") from None
        try:
            drv.init()
            self.device = drv.Device(ordinal)
            self.context = self.device.retain_primary_context()
            self.context.push()
        except Exception as e:   # noqa: BLE001 - pycuda's own error classes
            raise DriverUnavailable(f"the CUDA driver failed to start: {e}") from None
        self.drv = drv
        self._allocs: dict[int, Any] = {}

    def compute_capability(self) -> tuple[int, int]:
        return self.device.compute_capability()

    def load_module(self, ptx: str) -> Any:
        return self.drv.module_from_buffer(ptx.encode())

    def get_function(self, module: Any, name: str) -> Any:
        return module.get_function(name)

    def mem_alloc(self, nbytes: int) -> int:
        a = self.drv.mem_alloc(max(nbytes, 1))
        self._allocs[int(a)] = a
        return int(a)

    def mem_free(self, ptr: int) -> None:
        self._allocs.pop(ptr).free()

    def memset_zero(self, ptr: int, nbytes: int) -> None:
        self.drv.memset_d8(ptr, 0, nbytes)

    def copy_htod(self, ptr: int, array: np.ndarray) -> None:
        self.drv.memcpy_htod(ptr, np.ascontiguousarray(array))

    def copy_dtoh(self, array: np.ndarray, ptr: int) -> None:
        self.drv.memcpy_dtoh(array, ptr)

    def launch(self, function: Any, grid: int, block: int, args: list) -> None:
        function(*[np.uintp(a) if isinstance(a, int) else a for a in args],
                 block=(block, 1, 1), grid=(grid, 1))

    def synchronize(self) -> None:
        self.drv.Context.synchronize()


class CudaPythonDriver:
    name = "cuda-python"

    def __init__(self, ordinal: int = 0):
        try:
            from cuda.bindings import driver as cu
        except ImportError:
            try:
                from cuda import cuda as cu  # cuda-python < 12.6
            except ImportError as e:
                raise DriverUnavailable(f"cuda-python is not installed ({e})") from None
        self.cu = cu
        try:
            self._ok(cu.cuInit(0))
            self.device = self._ok(cu.cuDeviceGet(ordinal))
            self.context = self._ok(cu.cuDevicePrimaryCtxRetain(self.device))
            self._ok(cu.cuCtxSetCurrent(self.context))
        except Exception as e:   # noqa: BLE001 - a missing libcuda raises its own error type
            raise DriverUnavailable(f"the CUDA driver failed to start: {e}") from None

    def _ok(self, result):
        err, *rest = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            raise CudaError(f"CUDA driver error {int(err)} ({err})")
        return rest[0] if len(rest) == 1 else tuple(rest) if rest else None

    def compute_capability(self) -> tuple[int, int]:
        attr = self.cu.CUdevice_attribute
        major = self._ok(self.cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                                      self.device))
        minor = self._ok(self.cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                                      self.device))
        return int(major), int(minor)

    def load_module(self, ptx: str) -> Any:
        return self._ok(self.cu.cuModuleLoadData(ptx.encode() + b"\0"))

    def get_function(self, module: Any, name: str) -> Any:
        return self._ok(self.cu.cuModuleGetFunction(module, name.encode()))

    def mem_alloc(self, nbytes: int) -> int:
        return int(self._ok(self.cu.cuMemAlloc(max(nbytes, 1))))

    def mem_free(self, ptr: int) -> None:
        self._ok(self.cu.cuMemFree(ptr))

    def memset_zero(self, ptr: int, nbytes: int) -> None:
        self._ok(self.cu.cuMemsetD8(ptr, 0, nbytes))

    def copy_htod(self, ptr: int, array: np.ndarray) -> None:
        a = np.ascontiguousarray(array)
        self._ok(self.cu.cuMemcpyHtoD(ptr, a.ctypes.data, a.nbytes))

    def copy_dtoh(self, array: np.ndarray, ptr: int) -> None:
        self._ok(self.cu.cuMemcpyDtoH(array.ctypes.data, ptr, array.nbytes))

    def launch(self, function: Any, grid: int, block: int, args: list) -> None:
        # kernelParams: an array of pointers to each argument's value
        values = [ctypes.c_uint64(a) if isinstance(a, int) else ctypes.c_int64(int(a)) for a in args]
        params = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
        self._ok(self.cu.cuLaunchKernel(function, grid, 1, 1, block, 1, 1, 0, 0,
                                        ctypes.addressof(params), 0))

    def synchronize(self) -> None:
        self._ok(self.cu.cuCtxSynchronize())


def open_driver(ordinal: int = 0, prefer: str | None = None):
    """A driver for device `ordinal`: pycuda, else cuda-python (or `prefer` only)."""
    reasons = []
    for cls in (PycudaDriver, CudaPythonDriver):
        if prefer is not None and cls.name != prefer:
            continue
        try:
            return cls(ordinal)
        except DriverUnavailable as e:
            reasons.append(f"{cls.name}: {e}")
    raise DriverUnavailable("; ".join(reasons) or f"unknown driver binding {prefer!r}")
