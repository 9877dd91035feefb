"""The NVPTX target in one place: target machines per SM, the data layout, libdevice, the pass
pipeline and PTX emission, and the `ptxas` check.

A module is built against `DATA_LAYOUT`/`TRIPLE`, libdevice is linked in for the math functions,
every function but the kernels is internalized (so global DCE drops the ~700 KB of unused
libdevice), the O3 pipeline runs, and PTX is emitted per SM. Nothing here needs a GPU.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import llvmlite.binding as llvm

TRIPLE = "nvptx64-nvidia-cuda"
# what llvm's NVPTX target reports for 64-bit addressing (set on every module we build)
DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
# PTX ISA 8.0 is understood by every ptxas from CUDA 12.0 on and covers sm_80 and sm_90
ARCHS = {"sm_80": "+ptx80", "sm_90": "+ptx80"}
DEFAULT_ARCH = "sm_80"


class CudaToolkitMissing(RuntimeError):
    """libdevice (part of the CUDA toolkit) was not found; the message says where we looked."""


@functools.cache
def _init() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


@functools.cache
def target_machine(arch: str = DEFAULT_ARCH) -> llvm.TargetMachine:
    """The NVPTX target machine for `arch` (sm_80, sm_90)."""
    if arch not in ARCHS:
        raise ValueError(f"unsupported CUDA architecture {arch!r} (known: {', '.join(ARCHS)})")
    _init()
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=arch, features=ARCHS[arch], opt=3)


def cuda_root() -> Path | None:
    """The CUDA toolkit root: $CUDA_HOME / $CUDA_PATH, else the folder above `nvcc`/`ptxas`."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            return Path(os.environ[var])
    for tool in ("nvcc", "ptxas"):
        found = shutil.which(tool)
        if found:
            real = Path(found).resolve()
            if real.parent.name == "bin" and (real.parent.parent / "nvvm").is_dir():
                return real.parent.parent
            root = _root_from_wrapper(Path(found))
            if root is not None:
                return root
    default = Path("/usr/local/cuda")
    return default if default.is_dir() else None


def _root_from_wrapper(path: Path) -> Path | None:
    # some installs put small `exec /usr/local/cuda-X/bin/tool "$@"` scripts on PATH
    try:
        text = path.read_text(errors="replace")[:4096]
    except OSError:
        return None
    for word in text.split():
        p = Path(word.strip("'\""))
        if p.is_absolute() and p.parent.name == "bin" and (p.parent.parent / "nvvm").is_dir():
            return p.parent.parent
    return None


def libdevice_path() -> Path:
    """libdevice.10.bc of the toolkit ($DLVM_LIBDEVICE overrides)."""
    if os.environ.get("DLVM_LIBDEVICE"):
        return Path(os.environ["DLVM_LIBDEVICE"])
    root = cuda_root()
    if root is not None:
        p = root / "nvvm" / "libdevice" / "libdevice.10.bc"
        if p.is_file():
            return p
    raise CudaToolkitMissing(
        f"libdevice.10.bc not found (CUDA root: {root}); install the CUDA toolkit or set "
        "CUDA_HOME or DLVM_LIBDEVICE")


@functools.cache
def _libdevice_bytes() -> bytes:
    return libdevice_path().read_bytes()


def finalize(llvm_ir: str | list[str], kernels: list[str], arch: str = DEFAULT_ARCH,
             use_libdevice: bool = True) -> llvm.ModuleRef:
    """Parse and verify one module (or several, linked into one), link libdevice when `__nv_*`
    functions are called, internalize every function and global that is not a kernel, and
    optimize. Returns the optimized module."""
    _init()
    texts = [llvm_ir] if isinstance(llvm_ir, str) else list(llvm_ir)
    mod = llvm.parse_assembly(texts[0])
    mod.verify()
    for text in texts[1:]:
        other = llvm.parse_assembly(text)
        other.verify()
        mod.link_in(other)      # internal names that clash are renamed by the linker
    if use_libdevice and any(f.is_declaration and f.name.startswith("__nv_") for f in mod.functions):
        lib = llvm.parse_bitcode(_libdevice_bytes())
        lib.triple = TRIPLE
        lib.data_layout = DATA_LAYOUT
        mod.link_in(lib)
    keep = set(kernels)
    for f in mod.functions:
        if not f.is_declaration and f.name not in keep:
            f.linkage = llvm.Linkage.internal
    for g in mod.global_variables:
        if not g.is_declaration:
            g.linkage = llvm.Linkage.internal
    tm = target_machine(arch)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    mod.verify()
    return mod


def emit_ptx(llvm_ir: str | list[str], kernels: list[str], arch: str = DEFAULT_ARCH) -> str:
    """PTX text for `arch` of the module `llvm_ir` whose entry points are `kernels`."""
    mod = finalize(llvm_ir, kernels, arch)
    return target_machine(arch).emit_assembly(mod)


def ptxas_path() -> str | None:
    return shutil.which("ptxas")


def ptxas_check(ptx: str, arch: str) -> str:
    """Assemble `ptx` with ptxas for `arch`; return its verbose report (registers, spills);
    raise RuntimeError with ptxas's message when it rejects the code."""
    exe = ptxas_path()
    if exe is None:
        raise FileNotFoundError("ptxas is not on PATH")
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "k.ptx"
        src.write_text(ptx)
        r = subprocess.run([exe, f"-arch={arch}", "-v", str(src), "-o", str(Path(d) / "k.cubin")],
                           capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ptxas -arch={arch} rejected the PTX:\n{r.stderr}")
    return r.stderr
