"""Device memory through a driver of jit/targets/cuda/driver.py (pycuda or cuda-python): the raw
allocator the runtime's memory pool sits on (dlvmrt/memory.py)."""
from __future__ import annotations

import numpy as np


class CudaMemory:
    def __init__(self, driver) -> None:
        self.driver = driver

    def alloc(self, nbytes: int) -> int:
        return self.driver.mem_alloc(nbytes)

    def free(self, handle: int) -> None:
        self.driver.mem_free(handle)

    def upload(self, handle: int, array: np.ndarray) -> None:
        self.driver.copy_htod(handle, array)

    def download(self, array: np.ndarray, handle: int) -> None:
        self.driver.copy_dtoh(array, handle)

    def zero(self, handle: int, nbytes: int) -> None:
        self.driver.memset_zero(handle, nbytes)
