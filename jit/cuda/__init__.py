"""The CUDA backend: the kernel IR lowered to NVPTX with llvmlite, PTX per SM architecture,
libdevice for math, cuBLAS for matmul, and pycuda (or cuda-python) to load and launch.

Building PTX needs llvmlite and the CUDA toolkit's libdevice, not a GPU; loading and launching
need a driver (`dlvmrt.devices.cuda_available`). Importing this package imports neither pycuda
nor cuda-python.
"""
from .codegen import CudaKernel, build_cuda_kernel, launch_dims
from .program import compile_program_cuda, region_ptx

__all__ = ["CudaKernel", "build_cuda_kernel", "compile_program_cuda", "launch_dims", "region_ptx"]
