"""Matmul on the GPU: cuBLAS through ctypes, from the `nvidia-cublas` wheels (or the toolkit).

NumPy arrays are row-major and cuBLAS is column-major; a row-major C = A @ B is the column-major
C^T = B^T @ A^T, so every call passes B first, with no transposes and no copies:

    gemm(N, N, m=n_cols, n=n_rows, k, B, ldb=n_cols, A, lda=k, C, ldc=n_cols)

Batched 3-D operands of one batch size use the strided-batched entry point; other broadcasts
are declined (the interpreter runs them). Float32 and float64 only, as in the CPU backend.
"""
from __future__ import annotations

import ctypes
import glob
import os
import sys
from pathlib import Path

import numpy as np

OP_N = 0
_STATUS = {0: "SUCCESS", 1: "NOT_INITIALIZED", 3: "ALLOC_FAILED", 7: "INVALID_VALUE",
           8: "ARCH_MISMATCH", 11: "MAPPING_ERROR", 13: "EXECUTION_FAILED", 14: "INTERNAL_ERROR",
           15: "NOT_SUPPORTED"}


class CublasError(RuntimeError):
    pass


def find_cublas() -> Path | None:
    """libcublas.so of the nvidia-cublas wheel (cu13 or cu12 layout), else of the toolkit;
    $DLVM_CUBLAS overrides."""
    if os.environ.get("DLVM_CUBLAS"):
        return Path(os.environ["DLVM_CUBLAS"])
    patterns = []
    for base in sys.path:
        patterns += [f"{base}/nvidia/cu*/lib/libcublas.so*", f"{base}/nvidia/cublas/lib/libcublas.so*"]
    from .target import cuda_root
    root = cuda_root()
    if root is not None:
        patterns += [f"{root}/lib64/libcublas.so*", f"{root}/targets/*/lib/libcublas.so*"]
    for pat in patterns:
        found = sorted(glob.glob(pat), key=len)
        if found:
            return Path(found[0])
    return None


def gemm_args(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """(batch, rows, inner, cols) of a supported matmul, or ValueError saying why not."""
    if len(a_shape) == 2 and len(b_shape) == 2:
        batch = 1
    elif len(a_shape) == 3 and len(b_shape) == 3 and a_shape[0] == b_shape[0]:
        batch = a_shape[0]
    else:
        raise ValueError(f"cuBLAS path takes 2-D or equal-batch 3-D operands, got {a_shape} @ {b_shape}")
    m, k = a_shape[-2:]
    k2, n = b_shape[-2:]
    if k != k2:
        raise ValueError(f"matmul inner dims differ: {a_shape} @ {b_shape}")
    return batch, m, k, n


class Cublas:
    """One cuBLAS handle (on the current CUDA context)."""

    def __init__(self, path: Path | None = None):
        path = path or find_cublas()
        if path is None:
            raise CublasError("libcublas not found (install nvidia-cublas or set DLVM_CUBLAS)")
        self.lib = ctypes.CDLL(str(path))
        self.handle = ctypes.c_void_p()
        self._check(self.lib.cublasCreate_v2(ctypes.byref(self.handle)), "cublasCreate")
        i, p, ll = ctypes.c_int, ctypes.c_void_p, ctypes.c_longlong
        for name in ("cublasSgemm_v2", "cublasDgemm_v2"):
            getattr(self.lib, name).argtypes = [p, i, i, i, i, i, p, p, i, p, i, p, p, i]
        for name in ("cublasSgemmStridedBatched", "cublasDgemmStridedBatched"):
            getattr(self.lib, name).argtypes = [p, i, i, i, i, i, p, p, i, ll, p, i, ll, p, p, i, ll, i]

    @staticmethod
    def _check(status: int, what: str) -> None:
        if status != 0:
            raise CublasError(f"{what} failed: CUBLAS_STATUS_{_STATUS.get(status, status)}")

    def matmul(self, dtype: np.dtype, a_shape, b_shape, a_ptr: int, b_ptr: int, c_ptr: int) -> None:
        """C = A @ B on device pointers of row-major arrays of `dtype` (float32 or float64)."""
        batch, m, k, n = gemm_args(tuple(a_shape), tuple(b_shape))
        dtype = np.dtype(dtype)
        if dtype == np.float32:
            scal, one, zero, pre = ctypes.c_float, 1.0, 0.0, "S"
        elif dtype == np.float64:
            scal, one, zero, pre = ctypes.c_double, 1.0, 0.0, "D"
        else:
            raise ValueError(f"cuBLAS matmul takes float32 or float64, got {dtype}")
        alpha, beta = scal(one), scal(zero)
        h = self.handle
        if batch == 1:
            fn = getattr(self.lib, f"cublas{pre}gemm_v2")
            st = fn(h, OP_N, OP_N, n, m, k, ctypes.byref(alpha), b_ptr, n, a_ptr, k,
                    ctypes.byref(beta), c_ptr, n)
        else:
            fn = getattr(self.lib, f"cublas{pre}gemmStridedBatched")
            st = fn(h, OP_N, OP_N, n, m, k, ctypes.byref(alpha), b_ptr, n, k * n, a_ptr, k, m * k,
                    ctypes.byref(beta), c_ptr, n, m * n, batch)
        self._check(st, f"cublas{pre}gemm")

    def close(self) -> None:
        if self.handle:
            self.lib.cublasDestroy_v2(self.handle)
            self.handle = ctypes.c_void_p()
