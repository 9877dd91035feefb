"""`dlvm aot`: a program as a shared library, a static archive and a C header.

    compile_library(module, "out/")  ->  out/libNAME.so, out/libNAME.a, out/NAME.h,
                                         out/dlvm_aot.json (what dlvmrt.aot.load reads),
                                         out/src/ (the generated C, assembly and kernels)

The kernels are the JIT's (the same lowering, jit/llvm), emitted as position-independent objects
for this CPU; the program's control flow and the calls between kernels are generated C over a
small runtime (runtime/*.c); weights go into read-only data through `.incbin`. The
system C compiler (`cc`, or $CC) compiles and links them.
"""
from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from isa.module import Module
from jit import background
from jit.errors import NativeUnavailable
from jit.fork_safe import ForkSafeLock

from .cnames import ident
from .header import public_header
from .program import CProgram, ProgramCompiler

RUNTIME = Path(__file__).parent / "runtime"
# the runtime's sources, copied beside each library's (its .c files are compiled once per machine,
# in parallel: the largest first)
RUNTIME_SOURCES = ("dlvm_aot_rt.h", "dlvm_aot_internal.h", "dlvm_aot_ops.c", "dlvm_aot_conv.c",
                   "dlvm_aot_rt.c", "dlvm_aot_rows.c", "dlvm_aot_winograd.c")
FORMAT = "dlvm-aot-1"
MANIFEST = "dlvm_aot.json"


class AotError(NativeUnavailable):
    """The program cannot be compiled ahead of time (the message lists why), or no toolchain."""


@dataclass
class Library:
    directory: Path
    name: str
    shared: Path
    static: Path | None         # None: built without the archive (the native tier's)
    header: Path
    kernels: int                # kernel functions compiled (alike regions share one)
    seconds: float
    steps: dict[str, float] = field(default_factory=dict)


def find_cc() -> str | None:
    cc = os.environ.get("CC") or "cc"
    return shutil.which(cc)


def compile_library(module: Module, out_dir: str | os.PathLike, *, name: str | None = None,
                    cc: str | None = None, vm_fallback: bool = False,
                    archive: bool = True) -> Library:
    """`vm_fallback` (the native tier's libraries): instructions with no library code are run
    by the VM that loads the library (dlvmrt/aot.py: Library.attach_vm) instead of refused.
    `archive`: the static archive too (the native tier loads only the shared library; archiving
    copies every object again, ResNet-18's 45 MB of weights among them)."""
    t0 = time.perf_counter()
    steps: dict[str, float] = {}
    name = ident(name or module.name)
    cc = cc or find_cc()
    if cc is None:
        raise AotError("no C compiler: `dlvm aot` links with the system's `cc` (or $CC); install "
                       "one (Debian: apt-get install gcc)")
    out = Path(out_dir)
    src = out / "src"
    src.mkdir(parents=True, exist_ok=True)
    program: CProgram = ProgramCompiler(module, name, vm_fallback).compile()
    if program.unsupported:
        listing = "\n  ".join(program.unsupported)
        raise AotError(f"{len(program.unsupported)} instruction"
                       f"{'s' if len(program.unsupported) != 1 else ''} of module {module.name} "
                       f"cannot be compiled ahead of time yet:\n  {listing}")
    steps["generate C"] = time.perf_counter() - t0
    from jit.llvm import target as host
    cpu = host.host().cpu
    header = out / f"{name}.h"
    header.write_text(public_header(module, name, cpu))
    (src / f"{name}.h").write_text(header.read_text())
    for f in RUNTIME_SOURCES:
        shutil.copyfile(RUNTIME / f, src / f)
    (src / "dlvm_aot_config.h").write_text(_config())
    (src / f"{name}.c").write_text(program.source + _exports(name, vm_fallback))
    t = time.perf_counter()
    objects = _kernel_objects(program, src)
    steps["compile kernels"] = time.perf_counter() - t
    t = time.perf_counter()
    obj = src / f"{name}.o"
    # the program's C compiles while the weights assemble (a large model's .incbin: 0.1 s)
    cmd = [cc, *C_FLAGS, "-c", str(src / f"{name}.c"), "-o", str(obj), f"-I{src}"]
    proc = _start(cmd)
    try:
        objects += _weights(program, src, cc)
        objects += _shared_objects(src, cc)
    except BaseException:
        _abandon(proc)
        raise
    _finish(proc, cmd)
    objects.append(obj)
    shared = out / f"lib{name}.so"
    static = out / f"lib{name}.a"
    _run([cc, "-shared", "-o", str(shared), *map(str, objects), "-lm", "-lpthread", "-Wl,-z,defs"])
    static.unlink(missing_ok=True)
    if archive:
        _run(["ar", "rcs", str(static), *map(str, objects)])
    steps["C and link"] = time.perf_counter() - t
    manifest = {"format": FORMAT, "name": name, "module": module.name, "cpu": cpu,
                "shared": shared.name, "static": static.name if archive else None,
                "header": header.name,
                "functions": {f.name: {"symbol": f"{name}_{ident(f.name)}",
                                       "params": [{"name": p.name, "type": str(p.type)}
                                                  for p in f.params],
                                       "results": [str(t) for t in f.results]}
                              for f in module.functions.values()},
                "vm_instructions": program.vm_instructions}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return Library(out, name, shared, static if archive else None, header,
                   len({k.function for k in program.kernels}),
                   time.perf_counter() - t0, steps)


# -march=native: the kernels are compiled for this CPU already; the runtime's loops (the
# few-rows product, convolution packing) vectorize for it too. -ffp-contract=fast: a * b + c is
# one fused multiply-add, as in the LLVM kernels (-std=c11 alone turns contraction off in GCC)
C_FLAGS = ["-O3", "-march=native", "-ffp-contract=fast", "-fPIC", "-fvisibility=hidden", "-std=c11",
           "-D_POSIX_C_SOURCE=200809L", "-D_DEFAULT_SOURCE", "-Wno-unused-label"]


def _shared_objects(src: Path, cc: str) -> list[Path]:
    """The runtime and the GEMM kernel as objects, copied beside the library's sources."""
    keep = runtime_objects(cc)
    out = []
    for n in _runtime_object_names():
        shutil.copyfile(keep / n, src / n)
        out.append(src / n)
    return out


def _runtime_object_names() -> tuple[str, ...]:
    return (*(f[:-2] + ".o" for f in RUNTIME_SOURCES if f.endswith(".c")), "dlvm_gemm.o")


# one build of the runtime at a time in this process: the native tier starts one as it asks for
# its first library (prepare_runtime), and that library waits for it instead of building its own
_runtime_lock = ForkSafeLock()


def runtime_objects(cc: str) -> Path:
    """The directory of the runtime's and the GEMM kernel's objects: the same for every program
    on this machine, so they are built once and kept in the code cache (keyed by their sources,
    the compiler, the flags and the CPU). The first build compiles the runtime's files in
    parallel (5.4 s of -O3 in all, 2.4 s the largest file) while LLVM emits the GEMM kernel."""
    from jit.cache import default_dir
    keep, config = _runtime_dir(cc, str(default_dir()))
    names = _runtime_object_names()
    if all((keep / n).is_file() for n in names):
        return keep
    with _runtime_lock:
        if all((keep / n).is_file() for n in names):
            return keep
        if keep in _private_runtimes:
            return _private_runtimes[keep]
        # built in the cache's directory (a build that exit cuts off is swept from there an
        # hour later), else in the system's temporary directory
        try:
            keep.parent.mkdir(parents=True, exist_ok=True)
            _remove_stale_builds(keep.parent)
            build = Path(tempfile.mkdtemp(dir=keep.parent, prefix=".tmp-"))
        except OSError:
            build = Path(tempfile.mkdtemp(prefix="dlvm-runtime-"))
        try:
            _build_runtime(build, cc, config, names)
        except BaseException:
            shutil.rmtree(build, ignore_errors=True)
            raise
        try:        # atomically: a concurrent build of the same key finds all or nothing
            if build.parent == keep.parent:
                for f in build.iterdir():
                    if f.name not in names:
                        f.unlink()
                os.replace(build, keep)
            else:
                tmp = Path(tempfile.mkdtemp(dir=keep.parent, prefix=".tmp-"))
                try:
                    for n in names:
                        shutil.copyfile(build / n, tmp / n)
                    os.replace(tmp, keep)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
        except OSError:
            pass        # a read-only or full cache, or another process's build won
        if all((keep / n).is_file() for n in names):
            shutil.rmtree(build, ignore_errors=True)
            return keep
        if not all((build / n).is_file() for n in names):
            raise AotError(f"the runtime's objects were built, and then lost from {build}")
        # no cache to keep them in: this process's own, removed as it exits
        _private_runtimes[keep] = build
        atexit.register(_remove_private, build, os.getpid())
        return build


def _remove_private(build: Path, pid: int) -> None:
    if os.getpid() == pid:          # not a forked child's: the objects are its parent's
        shutil.rmtree(build, ignore_errors=True)


STALE_BUILD_S = 3600.0


def _remove_stale_builds(root: Path) -> None:
    """Builds a process left behind when exit cut them off (the compilers are killed, and the
    daemon thread never gets to remove its directory), after an hour."""
    for d in root.glob(".tmp-*"):
        try:
            if time.time() - d.stat().st_mtime > STALE_BUILD_S:
                shutil.rmtree(d, ignore_errors=True)
        except OSError:
            pass


_private_runtimes: dict[Path, Path] = {}


@functools.cache
def _runtime_dir(cc: str, cache_root: str) -> tuple[Path, str]:
    """Where the runtime's objects for this compiler and machine are kept, and the
    configuration header they are compiled with."""
    import hashlib

    from jit.cache import dlvm_version, lowering_fingerprint
    from jit.llvm import target as host
    config = _config()
    h = hashlib.sha256()
    for f in RUNTIME_SOURCES:
        h.update((RUNTIME / f).read_bytes())
    h.update(config.encode())
    h.update(f"{cc}|{' '.join(C_FLAGS)}|{host.host().cpu}|{host.host().features}|"
             f"{lowering_fingerprint()}|{dlvm_version()}".encode())
    return Path(cache_root) / "aot-runtime" / h.hexdigest()[:32], config


def _build_runtime(build: Path, cc: str, config: str, names: tuple[str, ...]) -> None:
    from jit.llvm import target as host
    from jit.targets.cpu.gemm_kernel import gemm_module, shape_for
    for f in RUNTIME_SOURCES:
        shutil.copyfile(RUNTIME / f, build / f)
    (build / "dlvm_aot_config.h").write_text(config)
    jobs = [[cc, *C_FLAGS, "-c", str(build / f), "-o", str(build / (f[:-2] + ".o")), f"-I{build}"]
            for f in RUNTIME_SOURCES if f.endswith(".c")]
    procs: list = []
    try:        # the GEMM kernel from LLVM while the C compiler runs
        for cmd in jobs:
            procs.append((_start(cmd), cmd))
        mod = host.optimize(str(gemm_module(shape_for(host.host().features))), 3)
        with host._lock:        # LLVM is not thread-safe: every use holds its lock
            code = _pic_machine().emit_object(mod)
        (build / names[-1]).write_bytes(code)
        for k, (proc, cmd) in enumerate(procs):
            _finish(proc, cmd)
            procs[k] = (None, cmd)
    except BaseException:
        for proc, _ in procs:
            if proc is not None:
                _abandon(proc)
        raise


def prepare_runtime() -> None:
    """Build the runtime's objects now, on a daemon thread, when a C compiler is there and the
    cache does not hold them: the native tier calls this as it asks for its first library, so
    that a first run on a machine compiles them beside the regions' kernels rather than after
    them. Once per compiler and cache directory in a process (the thread finds them built and
    ends); failures are left to the library's own build to report."""
    from jit.cache import default_dir
    cc = find_cc()
    if cc is None:
        return
    key = (cc, str(default_dir()))
    with _prepared_lock:        # not the build's lock: a VM is made at once while one runs
        if key in _prepared:
            return
        _prepared.add(key)

    def build() -> None:
        try:
            runtime_objects(cc)
        except Exception:  # noqa: BLE001 - the library build reports it, with its context
            pass

    threading.Thread(target=build, name="dlvm-runtime-build", daemon=True).start()


_prepared: set[tuple[str, str]] = set()
_prepared_lock = ForkSafeLock()


# the C compiler and archiver runs in flight, which exit kills (a library that a background
# tier-up builds is of no use once the process ends; `cc` on a large program takes seconds).
# Each runs in a process group of its own, so that its children (cc1, as, ld) die with it.
_running: set[subprocess.Popen] = set()
_running_lock = ForkSafeLock()
_exiting = False


def _run(cmd: list[str]) -> None:
    _finish(_start(cmd), cmd)


def _start(cmd: list[str]) -> subprocess.Popen:
    if _exiting:
        raise AotError("the process is exiting: the library's build was stopped")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    with _running_lock:
        _running.add(proc)
        stop = _exiting                 # exit came between the check above and now
    if stop:
        _kill_group(proc)
    return proc


def _abandon(proc: subprocess.Popen) -> None:
    """Stop a compiler run whose result is no longer wanted (another step failed)."""
    _kill_group(proc)
    proc.wait()
    with _running_lock:
        _running.discard(proc)


def _finish(proc: subprocess.Popen, cmd: list[str]) -> None:
    try:
        _, stderr = proc.communicate()
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise
    finally:
        with _running_lock:
            _running.discard(proc)
    if _exiting:
        raise AotError("the process is exiting: the library's build was stopped")
    if proc.returncode:
        raise AotError(f"{' '.join(cmd[:2])} ... failed (this is a bug in dlvm):\n"
                       f"{stderr[-4000:]}")


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _stop_builds() -> None:
    global _exiting
    with _running_lock:
        _exiting = True
        procs = list(_running)
    for proc in procs:
        _kill_group(proc)
    for proc in procs:
        try:
            proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass


def _forget_builds_in_child() -> None:
    # a forked child's builds are its own: the parent's are not its to kill at its exit, and
    # the parent's private runtime and started builds are not the child's (the locks a parent's
    # thread held at the fork, the runtime's build on its own thread, are free: ForkSafeLock)
    global _running
    _running = set()
    _prepared.clear()
    _private_runtimes.clear()


background.exit_hooks.append(_stop_builds)
os.register_at_fork(after_in_child=_forget_builds_in_child)


def _config() -> str:
    from jit.llvm import target as host
    from jit.targets.cpu.gemm import _MIN_ROWS, PARALLEL_MACS, SLACK
    from jit.targets.cpu.gemm_kernel import shape_for
    s = shape_for(host.host().features)
    return (f"/* the GEMM kernel's tile for this CPU (jit/llvm/gemm_kernel.py) */\n"
            f"#define DLVM_GEMM_VW {s.vw}\n"
            f"#define DLVM_GEMM_MR {s.mr}\n#define DLVM_GEMM_NR {s.nr}\n#define DLVM_GEMM_KC {s.kc}\n"
            f"#define DLVM_GEMM_MC {s.mc}\n#define DLVM_GEMM_NC {s.nc}\n#define DLVM_GEMM_SLACK {SLACK}\n"
            f"#define DLVM_GEMM_PARALLEL_MACS {PARALLEL_MACS}LL\n"
            f"#define DLVM_GEMM_MIN_ROWS {_MIN_ROWS}\n")


def _exports(name: str, vm_fallback: bool = False) -> str:
    vm = (f"DLVM_API void {name}_set_vm(dlvm_rt_vm_fn fn) {{ dlvm_rt_set_vm(fn); }}\n"
          f"DLVM_API int {name}_vm_result(dlvm_val *v, int32_t dtype, int32_t rank, "
          f"const int64_t *shape) {{ return dlvm_rt_vm_result(v, dtype, rank, shape); }}\n"
          if vm_fallback else "")
    return vm + (f"DLVM_API void {name}_free(void *data) {{ free(data); }}\n"
            f"DLVM_API void {name}_set_threads(int threads) {{ dlvm_rt_set_threads(threads); }}\n"
            f"DLVM_API int {name}_get_threads(void) {{ return dlvm_rt_threads(); }}\n"
            f"DLVM_API void {name}_set_max_steps(int64_t steps) {{ dlvm_rt_set_max_steps(steps); }}\n"
            f"DLVM_API void {name}_allocation_counts(int64_t *out) "
            f"{{ dlvm_rt_allocation_counts(out); }}\n"
            f"DLVM_API int64_t {name}_pool_solo_jobs(void) {{ return dlvm_rt_pool_solo_jobs(); }}\n")


def _pic_machine():
    import llvmlite.binding as llvm

    from jit.llvm import target as host
    h = host.host()
    return llvm.Target.from_triple(h.triple).create_target_machine(
        cpu=h.cpu, features=h.features, opt=3, reloc="pic", codemodel="default")


def _kernel_objects(program: CProgram, src: Path) -> list[Path]:
    from jit.llvm import target as host
    tm = _pic_machine()
    texts = [(k.cname, k.llvm_ir) for k in program.kernels if k.llvm_ir]
    objects = []
    for cname, text in texts:
        mod = host.optimize(text, 3)
        obj = src / f"{cname}.o"
        with host._lock:        # LLVM is not thread-safe: every use holds its lock
            code = tm.emit_object(mod)
        obj.write_bytes(code)
        objects.append(obj)
    return objects


def _weights(program: CProgram, src: Path, cc: str) -> list[Path]:
    """Constants as read-only data: one .bin per constant, pulled in by `.incbin`."""
    if not program.blobs:
        return []
    lines = ['.section .rodata', '']
    for b in program.blobs:
        path = src / f"{b.cname}.bin"
        path.write_bytes(b.data or b"\0")
        lines += [".balign 64", f".globl {b.cname}", f".hidden {b.cname}", f"{b.cname}:",
                  f'.incbin "{path.name}"', ""]
    lines.append('.section .note.GNU-stack,"",@progbits')
    asm = src / "weights.S"
    asm.write_text("\n".join(lines) + "\n")
    obj = src / "weights.o"
    _run([cc, "-c", str(asm), "-o", str(obj), f"-I{src}", "-Wa,-I" + str(src)])
    return [obj]
