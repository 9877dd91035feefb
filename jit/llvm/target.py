"""The host target, configured in one place: triple, CPU name and features, the O3 pipeline
with loop and SLP vectorization, object code emission and loading.

Loading goes through MCJIT's object-file support, so code compiled in another process (the disk
cache) loads without running LLVM's optimizer or code generator again.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cache

import llvmlite
import llvmlite.binding as llvm

_lock = threading.Lock()


@dataclass(frozen=True)
class HostTarget:
    triple: str
    cpu: str
    features: str

    def key(self) -> str:
        return f"{self.triple}|{self.cpu}|{self.features}|llvmlite {llvmlite.__version__}"


# LLVM command-line options (process-wide). No vectorized epilogue: a loop's remainder runs as a
# scalar loop instead of a second, narrower vector loop; objects are ~20% smaller and code
# generation ~25% faster, and long rows run as fast (bench/compile_latency.py). Tail folding with
# masks shrinks code more but made softmax's f64-accumulating reductions 2x slower.
LLVM_OPTIONS = ("-enable-epilogue-vectorization=false",)


@cache
def _init() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    for opt in LLVM_OPTIONS:
        llvm.set_option("dlvm", opt)


@cache
def host() -> HostTarget:
    _init()
    return HostTarget(llvm.get_process_triple(), llvm.get_host_cpu_name(),
                      llvm.get_host_cpu_features().flatten())


def new_target_machine(opt_level: int = 3):
    h = host()
    target = llvm.Target.from_triple(h.triple)
    return target.create_target_machine(cpu=h.cpu, features=h.features, opt=opt_level,
                                        reloc="static", codemodel="jitdefault")


@cache
def target_machine(opt_level: int = 3):
    """The shared machine for optimizing and emitting code (never handed to an engine)."""
    return new_target_machine(opt_level)


def optimize(ir_text: str, opt_level: int = 3):
    """Parse, verify and optimize LLVM IR text; returns the llvmlite ModuleRef."""
    _init()
    with _lock:
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
        tm = target_machine(opt_level)
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        pto.loop_vectorization = opt_level >= 2
        pto.slp_vectorization = opt_level >= 2
        pto.loop_interleaving = opt_level >= 2
        # No loop unrolling: it unrolled the scalar remainder loops (each a copy of the body
        # with its math functions inlined) 2-8 times; the vector loops are interleaved by the
        # vectorizer, which unrolling does not change. layer_norm compiled in 53 ms, now 30 ms;
        # the kernels run as fast (bench/README.md, compile latency).
        pto.loop_unrolling = False
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
        mod.verify()
    return mod


def emit_object(mod, opt_level: int = 3) -> bytes:
    with _lock:
        return target_machine(opt_level).emit_object(mod)


def emit_asm(mod, opt_level: int = 3) -> str:
    with _lock:
        return target_machine(opt_level).emit_assembly(mod)


class LoadedObject:
    """Object code loaded into this process; keeps its engine alive while functions are used."""

    def __init__(self, obj: bytes):
        _init()
        with _lock:
            empty = llvm.parse_assembly("")
            # the engine takes ownership of its target machine and destroys it with itself,
            # so it gets its own (handing it the shared one crashed after a disposal)
            self.engine = llvm.create_mcjit_compiler(empty, new_target_machine(3))
            self.engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            self.engine.finalize_object()

    def address(self, name: str) -> int:
        addr = self.engine.get_function_address(name)
        if not addr:
            raise RuntimeError(f"compiled object has no function {name}")
        return addr
