"""Every region of a program compiled for the host ahead of time, one file per region (what
`dlvm compile --target cpu` writes)."""
from __future__ import annotations

import os
from pathlib import Path

from isa.module import Module

EMITS = ("kernel-ir", "llvm", "asm")


def compile_program_cpu(module: Module, *, emit: str = "llvm", dims: dict[str, int] | None = None,
                        out_dir: str | os.PathLike) -> list[Path]:
    """`<module>.<func>.b<block>_<start>_<end>.<ext>` per region, ext .kir (kernel IR), .ll or
    .s; shapes come from the static types with named dims from `dims`."""
    if emit not in EMITS:
        raise ValueError(f"emit for target cpu must be one of {', '.join(EMITS)}, got {emit!r}")
    from jit.api import region_kernels

    from .compiler import assembly, optimized_ir
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for stem, kernel, spec in region_kernels(module, dims or {}):
        if emit == "kernel-ir":
            path, text = out / f"{stem}.kir", kernel.text() + spec.text()
        elif emit == "llvm":
            path, text = out / f"{stem}.ll", optimized_ir(kernel, spec, 3)
        else:
            path, text = out / f"{stem}.s", assembly(kernel, spec, 3)
        path.write_text(text)
        written.append(path)
    return written
