"""The ahead-of-time target: a whole program as a standalone shared library, static archive and
C header (`dlvm aot`, `dlvm compile --target aot`), and the VM's native tier."""
from __future__ import annotations

from pathlib import Path

from jit.targets.registry import Target


class AotTarget(Target):
    name = "aot"
    summary = "a standalone shared library + C header for the whole program (needs cc)"
    emits = ("library",)

    def compile_program(self, module, *, emit: str | None = None, dims=None, out_dir,
                        name: str | None = None, **options) -> list[Path]:
        if emit not in (None, "library"):
            raise ValueError(f"emit for target aot must be library, got {emit!r}")
        from .build import compile_library
        lib = compile_library(module, out_dir, name=name)
        return [lib.shared, lib.static, lib.header]


TARGET = AotTarget()
