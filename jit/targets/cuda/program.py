"""Ahead-of-time PTX for a whole program: `compile_program(module, target="cuda", emit="ptx")`.

One file per region, named as the CPU target names them (`<module>.<func>.b<block>_<s>_<e>`),
for one SM architecture (sm_80 by default: the driver JIT-compiles sm_80 PTX for any newer GPU;
$DLVM_CUDA_ARCH or `arch=` choose another). A matmul+epilogue region's matmul is a cuBLAS call
at run time, so its file holds the epilogue kernel only.
"""
from __future__ import annotations

import os
from pathlib import Path

from isa.module import Module
from isa.verify import FunctionTypes
from jit.api import region_kernels, region_spec
from jit.regions import Region

from .codegen import CudaKernel, build_cuda_kernel
from .target import DEFAULT_ARCH, emit_ptx, finalize

EMITS = ("ptx", "asm", "llvm", "kernel-ir")     # asm is an alias of ptx for this target


def region_ptx(module: Module, types: FunctionTypes, region: Region, dims: dict[str, int],
               arch: str = DEFAULT_ARCH) -> tuple[CudaKernel, str]:
    kernel, spec = region_spec(module, types, region, dims)
    ck = build_cuda_kernel(kernel, spec)
    return ck, emit_ptx(ck.llvm_ir, [ck.name], arch)


def compile_program_cuda(module: Module, *, emit: str = "ptx", dims: dict[str, int] | None = None,
                         out_dir: str | os.PathLike, arch: str | None = None) -> list[Path]:
    """Write one file per region of every function; returns their paths in region order."""
    if emit not in EMITS:
        raise ValueError(f"emit for target cuda must be one of {', '.join(EMITS)}, got {emit!r}")
    arch = arch or os.environ.get("DLVM_CUDA_ARCH", DEFAULT_ARCH)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for stem, kernel, spec in region_kernels(module, dims or {}):
        if emit == "kernel-ir":
            path, text = out / f"{stem}.kir", kernel.text() + spec.text()
        else:
            ck = build_cuda_kernel(kernel, spec)
            if emit == "llvm":
                path, text = out / f"{stem}.nvptx.ll", str(finalize(ck.llvm_ir, [ck.name], arch))
            else:
                path, text = out / f"{stem}.{arch}.ptx", emit_ptx(ck.llvm_ir, [ck.name], arch)
        path.write_text(text)
        written.append(path)
    return written


__all__ = ["EMITS", "compile_program_cuda", "region_ptx"]
