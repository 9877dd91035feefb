"""The CPU target: the host's LLVM JIT (fused region kernels, the JIT's GEMM, pools), on which
the VM runs every compiled region it does not place elsewhere."""
from __future__ import annotations

from pathlib import Path

from jit.targets.registry import Target


class CpuTarget(Target):
    name = "cpu"
    summary = "the host CPU: LLVM-compiled region kernels (the default)"
    emits = ("llvm", "asm", "kernel-ir")

    def compile_program(self, module, *, emit: str | None = None, dims=None, out_dir,
                        **options) -> list[Path]:
        from .program import compile_program_cpu
        return compile_program_cpu(module, emit=emit or self.emits[0], dims=dims, out_dir=out_dir)


TARGET = CpuTarget()
