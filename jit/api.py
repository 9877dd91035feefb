"""The JIT's public API, as the VM and `dlvm compile` use it.

    regions = form_regions(module, "main", verify_module(module)["main"])
    jit = Jit()
    run = jit.runner(module, regions[0])
    outs = run([x])          # list of output arrays, or None: interpret the region instead

Importing this module does not import llvmlite; compiling does.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

from isa.module import Module
from isa.verify import verify_module
from jit.targets.cpu.runner import RegionRunner
from jit.targets.cpu.threads import default_threads

from .build import build_kernel
from .cache import DiskCache
from .errors import NativeUnavailable
from .plan import Decline, make_plan
from .regions import Region, form_regions


class Jit:
    """Compiles regions for the host CPU.

    cache_dir: directory of the on-disk code cache (default: $DLVM_CACHE_DIR or the user cache
    dir); opt_level: LLVM optimization level; threads: threads a large kernel is split across
    (default: $DLVM_THREADS or the CPUs this process may use); max_variants: compiled variants per
    region before new shapes stay interpreted; parallel_threshold_us: estimated single-thread time
    below which a kernel runs on one thread (a handoff to a worker costs tens of microseconds);
    gemm: f32 matmul and conv2d heads use the JIT's GEMM kernel rather than NumPy's BLAS
    (default: yes, unless $DLVM_GEMM is "blas"); blas_threads: NumPy's OpenBLAS threads for
    the small products a region leaves to NumPy (default 1 with the GEMM kernel and more than one
    thread: their threads busy-wait after the call and take the cores the JIT's pool needs next,
    jit/blas_threads.py; None leaves them alone). Large ones keep OpenBLAS's threads."""

    def __init__(self, *, cache_dir: str | None = None, opt_level: int = 3, threads: int | None = None,
                 max_variants: int = 4, parallel_threshold_us: float = 150.0, gemm: bool | None = None,
                 blas_threads: int | None | str = "auto"):
        self.opt_level = opt_level
        # f32 matrix products and convolutions through the JIT's own GEMM kernel (jit/targets/cpu/gemm.py),
        # or NumPy's BLAS with gemm=False / DLVM_GEMM=blas
        self.gemm = gemm if gemm is not None else os.environ.get("DLVM_GEMM", "dlvm") != "blas"
        self.threads = threads if threads is not None else default_threads()
        if blas_threads == "auto":
            blas_threads = 1 if self.gemm and self.threads > 1 else None
        self.blas_threads = blas_threads
        self.maxpool_failed = False     # the native max-pool kernel could not be built here
        self.max_variants = max_variants
        self.parallel_threshold_us = parallel_threshold_us
        self.disk = DiskCache(cache_dir)
        self._types: dict[int, tuple[Module, dict]] = {}

    def runner(self, module: Module, region: Region, *, background: bool = False) -> RegionRunner:
        """A runner for `region`; background=True queues its kernels' compiles on the background
        compiler (jit/background.py) and interprets the region until they are installed."""
        # verified types per module; the entry holds the module, so its id is not reused
        entry = self._types.get(id(module))
        if entry is None or entry[0] is not module:
            entry = (module, verify_module(module))
            self._types[id(module)] = entry
        return RegionRunner(self, module, region, entry[1][region.func], background=background)


def _static_shape(t, dims: dict[str, int]) -> tuple[int, ...]:
    # unbound named and unknown dims become 2: any size > 1 gives the same code (sizes are
    # run-time values); only 1 versus more changes a variant
    return tuple(d if isinstance(d, int) else dims.get(d, 2) if isinstance(d, str) else 2 for d in t.shape)


def region_spec(module: Module, types, region: Region, dims: dict[str, int]):
    """The kernel of `region` and its variant for static shapes (named dims from `dims`)."""
    kernel = build_kernel(module, types, region)
    rows = types[region.block]
    typed = []
    for t in kernel.inputs:
        if t.source < 0:      # the head's (matmul, conv2d) result, from its verified type
            typed.append(rows[region.start].results[0])
        else:
            typed.append(_input_type(module, types, region, t.source))
    shapes = [_static_shape(t, dims) for t in typed]
    # a dim the types leave unknown is 2 first (any size above 1 gives the same code); where
    # the inputs then do not broadcast (an unknown that is 1 at run time beside a 32), the
    # first variant with some unknowns at 1 that plans, as the library compiles several
    unknown = [(i, a) for i, t in enumerate(typed) for a, d in enumerate(t.shape)
               if not isinstance(d, int) and not (isinstance(d, str) and d in dims)]
    tries = 1 << min(len(unknown), 8)
    for mask in range(tries):
        guess = [list(s) for s in shapes]
        for j, (i, a) in enumerate(unknown[:8]):
            if mask >> j & 1:
                guess[i][a] = 1
        try:
            return kernel, make_plan(kernel, [tuple(g) for g in guess]).spec
        except Decline as e:
            if mask == tries - 1:
                raise Decline(f"region {region.func} block {region.block}, instructions "
                              f"{region.start}-{region.end - 1}: {e}; no sizes of its unknown "
                              f"dims make its inputs broadcast") from None
    raise AssertionError("unreachable")


def region_kernels(module: Module, dims: dict[str, int]):
    """(file stem, kernel, variant) of every region of every function, for ahead-of-time
    compilation: the stem is `<module>.<func>.b<block>_<start>_<end>`."""
    all_types = verify_module(module)
    for fname in module.functions:
        types = all_types[fname]
        for region in form_regions(module, fname, types):
            kernel, spec = region_spec(module, types, region, dims)
            yield f"{module.name}.{fname}.b{region.block}_{region.start}_{region.end}", kernel, spec


def compile_program(module: Module, *, target: str = "cpu", emit: str | None = None,
                    dims: dict[str, int] | None = None, out_dir: str | os.PathLike,
                    **options) -> list[Path]:
    """Compile every region of every function ahead of time for `target` (a name the target
    registry knows: jit/targets/registry.py) and write one file per region, e.g.
    `<module>.<func>.b<block>_<start>_<end>.<ext>`; `emit` is one of the target's `emits` (its
    first by default). Shapes come from the static types with named dims from `dims`."""
    from jit.targets import registry
    return registry.get(target).compile_program(module, emit=emit, dims=dims, out_dir=out_dir,
                                                 **options)


def native_library(module: Module, cache_dir: str | os.PathLike | None = None) -> Path:
    """The directory of `module` compiled whole into one shared library (the AOT target), from
    the code cache or built into it: what the VM's native tier loads (`dlvmrt.aot.load`).
    Raises NativeUnavailable when the program has instructions the library cannot run or there
    is no C compiler."""
    from jit.targets.aot.cached import cached_library
    return cached_library(module, cache_dir)


def prepare_native_runtime() -> None:
    """Start building the native libraries' runtime (compiled once per machine and kept in the
    code cache) on a background thread, unless it is built or there is no C compiler: the first
    library a process builds on a new machine then waits seconds less. Returns at once: the
    library builder's import (LLVM's bindings, the program compiler: 65-135 ms) is on that
    thread too, and a fork waits for it (a child would find the module half-imported, its import
    lock held by a thread it does not have, and hang on its first import of it)."""
    from . import background

    def prepare() -> None:
        with background.import_guard:
            # (and what the runtime's build, on a thread of its own, goes on to import)
            import jit.llvm.target  # noqa: F401
            import jit.targets.cpu.gemm_kernel  # noqa: F401
            from jit.targets.aot.build import prepare_runtime
        prepare_runtime()
    threading.Thread(target=prepare, name="dlvm-runtime-prepare", daemon=True).start()


def native_available() -> bool:
    """Whether whole programs can be compiled here (a C compiler links them)."""
    return c_compiler() is not None


def c_compiler() -> str | None:
    """The C compiler that links native libraries ($CC, else `cc`), or None."""
    from jit.targets.aot.build import find_cc
    return find_cc()


def cache_root() -> Path:
    """The directory of dlvm's on-disk cache ($DLVM_CACHE_DIR, else the user cache dir)."""
    from .cache import default_dir
    return default_dir()


def _input_type(module, types, region: Region, index: int):
    operand = region.inputs[index]
    instrs = module.functions[region.func].blocks[region.block].instrs
    for ii in range(region.start, region.end):
        for o, t in zip(instrs[ii].operands, types[region.block][ii].operands):
            if o == operand:
                return t
    raise ValueError(f"input {operand} is not read by the region")


__all__ = ["Region", "form_regions", "Jit", "RegionRunner", "compile_program", "default_threads",
           "native_library", "native_available", "prepare_native_runtime", "NativeUnavailable"]
