"""dlvm's JIT: region formation (fusion), kernel IR, the LLVM CPU backend, code cache, guards.

`import jit` is cheap: llvmlite is imported only when something is compiled.
"""
from .api import (
    Jit,
    NativeUnavailable,
    Region,
    RegionRunner,
    c_compiler,
    cache_root,
    compile_program,
    default_threads,
    form_regions,
    native_available,
    native_library,
    prepare_native_runtime,
)
from .fork_safe import ForkSafeLock

__all__ = ["Jit", "Region", "RegionRunner", "compile_program", "default_threads", "form_regions",
           "native_library", "native_available", "prepare_native_runtime", "NativeUnavailable",
           "c_compiler", "cache_root", "ForkSafeLock"]
