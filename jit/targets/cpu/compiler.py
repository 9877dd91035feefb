"""Compile one kernel variant to a callable: kernel IR + Spec -> LLVM IR -> object code, through
the in-memory and on-disk code caches."""
from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass, field

from jit.cache import DiskCache, cache_key
from jit.fork_safe import ForkSafeLock
from jit.kernel_ir import Kernel
from jit.plan import Spec

FUNC_NAME = "dlvm_kernel"


@dataclass
class Compiled:
    key: str
    fn: object                      # ctypes function
    slots: int                      # scratch rows per thread
    compile_ms: float
    source: str                     # "compiled", "disk", "memory"
    n_args: int
    _keep: object = field(default=None, repr=False)   # the loaded object (owns the code)


_memory: dict[str, Compiled] = {}
_memory_lock = ForkSafeLock()


def lower_to_llvm(kernel: Kernel, spec: Spec) -> tuple[str, int]:
    from jit.llvm.lower import lower_kernel
    mod, slots = lower_kernel(kernel, spec, FUNC_NAME)
    return str(mod), slots


def compile_variant(kernel: Kernel, spec: Spec, opt_level: int, disk: DiskCache | None) -> Compiled:
    from jit.llvm import target
    n_args = 4 + len(kernel.inputs) + sum(1 for j in range(len(kernel.outputs))
                                          if not (spec.inplace and spec.inplace[j] >= 0))
    # the structure, not the registers' names: an unrolled loop's steps share one compile
    key = cache_key(kernel.structure(), spec.text() + f"O{opt_level}", target.host().key())
    with _memory_lock:
        hit = _memory.get(key)
    if hit is not None:
        return Compiled(key, hit.fn, hit.slots, 0.0, "memory", n_args, hit._keep)
    t0 = time.perf_counter()
    found = disk.get(key) if disk is not None else None
    if found is not None:
        obj, slots = found
        source = "disk"
    else:
        text, slots = lower_to_llvm(kernel, spec)
        mod = target.optimize(text, opt_level)
        obj = target.emit_object(mod, opt_level)
        source = "compiled"
        if disk is not None:
            disk.put(key, obj, slots)
    loaded = target.LoadedObject(obj)
    proto = ctypes.CFUNCTYPE(ctypes.c_int32, *([ctypes.c_int64] * 2 + [ctypes.c_void_p] * (n_args - 2)))
    fn = proto(loaded.address(FUNC_NAME))
    done = Compiled(key, fn, slots, (time.perf_counter() - t0) * 1e3, source, n_args, loaded)
    with _memory_lock:
        _memory[key] = done
    return done


def optimized_ir(kernel: Kernel, spec: Spec, opt_level: int) -> str:
    from jit.llvm import target
    text, _ = lower_to_llvm(kernel, spec)
    return str(target.optimize(text, opt_level))


def assembly(kernel: Kernel, spec: Spec, opt_level: int) -> str:
    from jit.llvm import target
    text, _ = lower_to_llvm(kernel, spec)
    return target.emit_asm(target.optimize(text, opt_level), opt_level)
