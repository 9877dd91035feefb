"""The host target, configured in one place: triple, CPU name and features, the pass pipelines
(a light one for modules of explicit vector loops; O3 with loop and SLP vectorization for the
others), object code emission and loading.

Loading goes through MCJIT's object-file support, so code compiled in another process (the disk
cache) loads without running LLVM's optimizer or code generator again.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import llvmlite
import llvmlite.binding as llvm

from jit.fork_safe import ForkSafeLock

_lock = ForkSafeLock()


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

# Named metadata of modules whose loops are explicit vector code (lower.py); they take the
# light pipeline (`optimize`).
VECTORIZED = "dlvm.vectorized"


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
        if opt_level >= 2 and "!" + VECTORIZED in ir_text:
            _light_pipeline(mod, tm)
            mod.verify()
            return mod
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


def _light_pipeline(mod, tm) -> None:
    """The passes for a module whose loops are already vector code (lower.py, `VECTORIZED`):
    inline the math functions, promote the accumulators to registers, simplify. The O3
    pipeline's loop and SLP vectorizers and loop passes have nothing left to do there, and
    without them a region compiles in about half the time (bench/README.md)."""
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pb = llvm.create_pass_builder(tm, pto)
    mpm = llvm.create_new_module_pass_manager()
    mpm.add_always_inliner_pass()
    mpm.add_sroa_pass()
    mpm.add_instruction_combine_pass()
    mpm.add_simplify_cfg_pass()
    mpm.add_new_gvn_pass()
    mpm.add_instruction_combine_pass()
    mpm.add_simplify_cfg_pass()
    mpm.add_global_dead_code_eliminate_pass()
    mpm.run(mod, pb)


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
        with _lock:
            addr = self.engine.get_function_address(name)
        if not addr:
            raise RuntimeError(f"compiled object has no function {name}")
        return addr


def vector_bytes() -> int:
    """Bytes in one of the host's vector registers (the width the loop vectorizer fills)."""
    feats = set(host().features.split(","))
    if "+avx512f" in feats:
        return 64
    if "+avx" in feats:
        return 32
    return 16


def converts_f16() -> bool:
    """Whether the host converts between f16 and f32 in instructions (x86's F16C; AArch64 has
    them always): elsewhere LLVM calls compiler-rt's __extendhfsf2 / __truncsfhf2, which the
    JIT's linker may not resolve, so f16 casts stay interpreted there."""
    h = host()
    if "x86" not in h.triple:
        return "aarch64" in h.triple or "arm64" in h.triple
    return "+f16c" in set(h.features.split(","))


def vector_lanes(kernel, spec) -> int | None:
    """Lanes of the explicit vector loops for this kernel variant, or None: scalar loops that
    LLVM's loop vectorizer widens (hosts without AVX-512BW, whose masked loads of bytes would
    be scalarized; reductions over no axis left)."""
    feats = set(host().features.split(","))
    if not {"+avx512f", "+avx512bw"} <= feats or spec.rank == 0:
        return None
    if spec.inner == 0 and kernel.reductions:
        return None
    if kernel.reductions and not spec.short_rows:
        # long rows of a reduction (softmax, layer_norm over 1024): O3's loops interleave four
        # vectors with four accumulators, where one vector per trip makes the sum a chain of
        # dependent adds: 5-7% faster kernels ([4096, 1024], one thread, alternated runs),
        # for a compile of 30-40 ms instead of ~25 (the benchmark's median does not move: 20 ms)
        return None
    widest = max(t.dtype.itemsize for t in list(kernel.inputs) + list(kernel.outputs))
    return vector_bytes() // widest
