"""dlvm's JIT: region formation (fusion), kernel IR, the LLVM CPU backend, code cache, guards.

`import jit` is cheap: llvmlite is imported only when something is compiled.
"""
from .api import Jit, Region, RegionRunner, compile_program, form_regions

__all__ = ["Jit", "Region", "RegionRunner", "compile_program", "form_regions"]
