"""The CUDA backend: the kernel IR lowered to NVPTX with llvmlite, PTX per SM architecture,
libdevice for math, cuBLAS for matmul, and pycuda (or cuda-python) to load and launch.

Building PTX needs llvmlite and the CUDA toolkit's libdevice, not a GPU; loading and launching
need a driver (`dlvmrt.devices.accelerator_available`). Importing this package imports nothing heavy
(no llvmlite, pycuda or cuda-python): the VM asks `jit.targets.cuda.driver` whether a GPU exists
without loading the compiler. The names below are loaded on first use.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {"CudaKernel": "codegen", "build_cuda_kernel": "codegen", "launch_dims": "codegen",
            "compile_program_cuda": "program", "region_ptx": "program"}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_EXPORTS)
