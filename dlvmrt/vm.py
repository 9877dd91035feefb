"""The dlvm virtual machine: runs a verified program on the NumPy reference interpreter and tiers
hot blocks up to fused JIT kernels.

    vm = dlvmrt.VM(dlvmrt.load("examples/mlp.dlasm"), jit="auto")
    (y,) = vm.run("main", x)

Tiering: every block counts its executions; when a block reaches `hot_threshold` (jit="auto") or
on its first execution (jit="always"), the JIT's regions inside it are replaced by compiled
runners. A runner that cannot run some arguments (guard mismatch, too many variants) returns None
and the block's original interpreted steps run instead, so the interpreter is always the fallback.

The default mode is the tiered "auto" ($DLVM_JIT overrides it), and it never waits for LLVM:
forming a hot block's regions and compiling their kernels happen on the process's background
compiler thread (jit/background.py) while the interpreter keeps running the block; each compiled
kernel is swapped in when it is ready, and results are the same either way. A kernel that fails
to compile leaves its region on the interpreter, quietly (`vm.jit_errors`, the runner's
`compile_errors` and the profile report it). `vm.wait_compiled()` waits for the compiles in
flight, for tests and benchmarks that want the compiled code from a known call on;
jit="always" compiles before the first run, on the calling thread; background=False makes
"auto" compile on the calling thread too. A process exits promptly with a compile in flight, and
a forked child starts with a compiler of its own.

Above the regions sits the native tier (dlvmrt/native_tier.py): once an entry has been called
twice, the whole program is compiled in the background into one library (the AOT target) and
called in place of the interpreter, signature by signature, where it gives the interpreter's
results and is faster; any error it returns reruns the call here.

Optimization: with tier-up (jit "auto" or "always") the VM runs the program after the
whole-program pipeline (`Program.optimized()`: folding, simplification, CSE, dead code; computed
once and kept with the Program), so interpreted steps and regions see no exporter leftovers.
jit="off" runs the instructions as written; `optimize=` or $DLVM_OPTIMIZE=0/1 overrides either.
`vm.source_program` is the program as given, `vm.program` the one that runs. In the tiered
mode a large program's pipeline runs on the background compiler, and the first calls are
interpreted as written meanwhile (the same results: the passes keep every result and trap), so
that no first call waits for the optimizer.

Threads: one VM may be called from many threads at once and gives each the interpreter's
results. Each call has its own frame, step budget and call depth (RunState, per thread); a
block tiers up once, under the VM's lock, and its step list is replaced, never changed in place;
a compiled region runs one call at a time (RegionRunner's lock: it reuses output buffers and
prepared jobs between calls), so threads overlap in different regions and kernels release the
GIL. Profile counters are not synchronized: under concurrency they are approximate. Kernels are
shared by every VM of the process (the in-memory and on-disk code caches).
"""
from __future__ import annotations

import os
import sys
import threading
import warnings
import weakref
from typing import Any

import numpy as np

from isa.errors import InternalError, SettingError, Trap

from . import allocator
from .devices import Device, default_accelerator, get_device, resolve_device
from .frame_layout import readonly
from .function_code import BlockCode, FunctionCode
from .loader import ProgramSource, load
from .native_tier import tier_for
from .profiler import Profiler
from .program import Program
from .random_streams import RandomStreams, uses_random

JIT_MODES = ("off", "auto", "always")
DEFAULT_JIT = "auto"


class RunState:
    """What one thread's run of a VM changes as it goes: the block budget and the call depth."""
    __slots__ = ("budget", "depth")

    def __init__(self, budget: int):
        self.budget = budget
        self.depth = 0


class JitWarning(UserWarning):
    """The JIT failed on a block (a bug in dlvm): it keeps running on the interpreter."""
DEFAULT_HOT_THRESHOLD = 2
DEFAULT_MAX_STEPS = 5_000_000
DEFAULT_MAX_CALL_DEPTH = 10_000   # deep enough for the adjoint of a long loop (one call per iteration)
_PYTHON_FRAMES_PER_CALL = 3     # a dlvm call runs as about this many nested Python calls


def _allow_python_depth(max_call_depth: int) -> None:
    """Let Python nest as deep as the VM may: a deeper limit (e.g. for the adjoint of a long
    loop, one call per iteration) must end in the VM's own clean trap, not a RecursionError.
    Python 3.11+ runs Python-to-Python calls without growing the C stack."""
    need = _PYTHON_FRAMES_PER_CALL * max_call_depth + 1000
    if sys.getrecursionlimit() < need:
        sys.setrecursionlimit(need)


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


# programs from this many instructions optimize on the background compiler (VM._defer), from
# the end of the first call on: the first call is the interpreter's alone (its pipeline, a few
# milliseconds on the caller, made a small CNN's first result 1.4-1.95x the interpreter's, and
# beside the call on the compiler thread it took the GIL half the time: ResNet-18/32 2.1x)
DEFER_PIPELINE_FROM = 1


def _optimize_wanted(optimize: bool | None, jit: str) -> bool:
    """VM(optimize=...), else $DLVM_OPTIMIZE (0 or 1), else on where the JIT may tier up: the
    reference interpreter (jit="off") runs the instructions as written."""
    if optimize is not None:
        return bool(optimize)
    env = os.environ.get("DLVM_OPTIMIZE", "")
    if env in ("0", "1"):
        return env == "1"
    return jit != "off"


class VM:
    """Runs a program: `VM(program).run("main", *arrays)` returns the entry's results.

    `program`: a Module, a Program, bytecode or a path. `jit`: "off" (the NumPy interpreter
    only), "auto" (the default: hot regions compile in the background, the interpreter runs
    them meanwhile; `wait_compiled()` waits), "always" (compile on first run). `device`: "cpu"
    (the default, as in onnxruntime and PyTorch: a GPU is used when asked for), "auto" (the
    scheduler's cost model places each hot region on a GPU or the CPU; the CPU when no GPU is
    usable) or a GPU ("cuda", "cuda:N": every region it can run goes there). `max_steps` bounds
    the blocks a run may execute, `max_call_depth` the call nesting (the adjoint of a loop makes
    one call per iteration); both end in a clean
    ResourceExhausted. `profile=True` times every instruction and compiled region
    (`vm.profiler.table(vm)`, `vm.profiler.region_lines(vm)`), `trace=True` also records Chrome
    trace events (`vm.profiler.write_trace(path)`), compiles as spans of their own. `native`:
    "auto" (the default with tier-up; $DLVM_NATIVE overrides), "always" or "off": the whole
    program compiled into one library and called in place of the interpreter where it is
    faster (dlvmrt/native_tier.py; `vm.native.status()`). `seed`: the stream that random ops
    without a seed of their own draw from (else $DLVM_SEED, else the OS; random_streams.py).

    One VM may be called from many threads at once; each run has its own frames, step budget
    and call depth, and gives the interpreter's results (random ops: numbers no other call
    got, in the order the threads draw).
    """

    def __init__(self, program: ProgramSource, jit: str | None = None,
                 device: str | Device = "cpu", *, gpus: list[Device] | None = None,
                 hot_threshold: int | None = None, max_steps: int | None = None,
                 max_call_depth: int = DEFAULT_MAX_CALL_DEPTH, profile: bool = False,
                 trace: bool = False, jit_options: dict[str, Any] | None = None,
                 background: bool | None = None, optimize: bool | None = None,
                 native: str | None = None, seed: int | None = None):
        jit_arg, jit = jit, jit or os.environ.get("DLVM_JIT") or DEFAULT_JIT
        if jit not in JIT_MODES:
            raise SettingError(f"jit must be one of {', '.join(JIT_MODES)}, got {jit!r}"
                               + ("" if jit_arg else " (from $DLVM_JIT)"))
        # the program as given (what the REPL and the debugger show) and the one that runs:
        # with tier-up, the whole-program pipeline's (Program.optimized, kept with the program)
        self.source_program = load(program)
        self.optimized = _optimize_wanted(optimize, jit)
        self._program: Program | None = None      # None while the pipeline runs (_defer)
        self.jit_mode = jit
        self.device, self.scheduler = _devices(device, gpus)
        threshold = hot_threshold or _env_int("DLVM_JIT_THRESHOLD", DEFAULT_HOT_THRESHOLD)
        self.hot_threshold = {"off": -1, "auto": max(threshold, 1), "always": 1}[jit]
        if background is None:
            background = os.environ.get("DLVM_JIT_BACKGROUND", "1") != "0"
        # compiles in the background: the tiered mode, on the CPU (device placement decides
        # with the compiled runner in hand, so it tiers up on the calling thread)
        self.background = bool(background) and jit == "auto" and self.scheduler is None
        self.jit_errors: list[str] = []     # blocks the JIT failed on (they stay interpreted)
        self.max_steps = (max_steps if max_steps is not None
                          else _env_int("DLVM_MAX_STEPS", DEFAULT_MAX_STEPS))
        if self.max_steps <= 0:
            raise SettingError(f"max_steps must be positive, got {self.max_steps}")
        self.max_call_depth = max_call_depth
        _allow_python_depth(max_call_depth)
        # What one run changes lives per thread (its step budget and call depth; frames are per
        # call): one VM may run on many threads at once. What runs share is guarded by
        # _lock: preparing a function's code, forming regions, installing compiled ones.
        self._local = threading.local()
        self._lock = threading.RLock()
        self.random = RandomStreams(seed)     # what random ops draw from (random_streams.py)
        self.profiler = Profiler(trace=trace) if (profile or trace) else None
        self._warm: VM | None = None
        self._pipeline_queued = True
        # native="always" builds the library before the first call, which runs it: nothing
        # to defer (as with jit="always")
        self._native_always = (native or os.environ.get("DLVM_NATIVE") or "auto") == "always"
        if not (self.optimized and self._defer()):
            self._install(self.source_program.optimized() if self.optimized
                          else self.source_program)
        self._codes: dict[str, FunctionCode] = {}
        self._jit = None
        self._jit_options = jit_options or {}
        self._regions: dict[str, list] = {}
        self.runners: list = []          # every installed region runner, for profile / REPL
        self._queued: set = set()        # (code, block) whose tier-up waits on the compiler
        self.native = tier_for(self, native)     # the whole program as one library (native_tier.py)
        if jit != "off":
            allocator.tune()        # freed memory kept for the next call (allocator.py)
            if "threads" not in self._jit_options:
                # a bad DLVM_THREADS is the user's SettingError here, not a trap at the first
                # compile (the jit package is loaded with dlvmrt already)
                import jit as jit_pkg
                jit_pkg.default_threads()

    @property
    def module(self):
        return self.program.module

    @property
    def program(self) -> Program:
        """The program that runs: the whole-program pipeline's (with tier-up), else as given.
        While the pipeline still runs in the background, this waits for it."""
        p = self._program
        if p is None:
            self._install(self.source_program.optimized())
            p = self._program
        return p

    def _defer(self) -> bool:
        """Run the whole-program pipeline on the background compiler instead of here, where it
        is worth it (a large program, the tiered mode, no profile or devices); calls meanwhile
        are served by an interpreter of the program as written, which computes the same (the
        pipeline's passes keep every result and trap; specs/passes.md). The pipeline was most
        of a model's first call (a recurrent model: 0.3 s against 15 ms interpreted)."""
        src = self.source_program
        if not self.background or self.profiler is not None or src._optimized is not None or \
                self._native_always:
            return False
        if uses_random(src.module):
            return False        # one stream per instruction: the warm VM would repeat it
        size = sum(len(b.instrs) for f in src.module.functions.values() for b in f.blocks)
        if size < DEFER_PIPELINE_FROM:
            return False
        from jit import background as bg
        if bg.compiler().closed:
            return False
        self._warm = VM(src, jit="off", optimize=False, max_steps=self.max_steps,
                        max_call_depth=self.max_call_depth, native="off")
        self._pipeline_queued = False       # queued when the first call returns (run)
        return True

    def _queue_pipeline(self) -> None:
        """The deferred pipeline onto the background compiler (once; without one, the next
        call optimizes on its caller)."""
        self._pipeline_queued = True
        from jit import background as bg
        src = self.source_program
        if not bg.compiler().submit(("pipeline", id(src)), src.optimized) and \
                not bg.compiler().pending(("pipeline", id(src))):
            with self._lock:
                self._warm = None

    def _install(self, program: Program) -> None:
        with self._lock:
            if self._program is None:
                self.constants = {name: readonly(c.value) for name, c in
                                  program.module.constants.items()}
                self._program = program
                self._warm = None

    def code(self, name: str) -> FunctionCode:
        code = self._codes.get(name)
        if code is None:
            with self._lock:
                code = self._codes.get(name)
                if code is None:
                    code = self._codes[name] = FunctionCode(self, self.module.functions[name])
        return code

    def run_state(self) -> RunState:
        """This thread's run state (step budget, call depth)."""
        st = getattr(self._local, "state", None)
        if st is None:
            st = self._local.state = RunState(self.max_steps)
        return st

    # the running thread's budget and depth (the debugger and tests read them)
    @property
    def budget(self) -> int:
        return self.run_state().budget

    @budget.setter
    def budget(self, value: int) -> None:
        self.run_state().budget = value

    @property
    def depth(self) -> int:
        return self.run_state().depth

    @depth.setter
    def depth(self, value: int) -> None:
        self.run_state().depth = value

    # -- running ----------------------------------------------------------------------------

    def run(self, entry: str = "main", *args: Any, **named: Any) -> tuple[np.ndarray, ...]:
        """Run function `entry` on positional and/or named arguments (parameter names without
        %); returns its results as a tuple of NumPy arrays in return order.

        The entry name may be left out: `vm.run(x)` runs `main`."""
        if self._program is None:
            optimized = self.source_program._optimized
            if optimized is None:
                warm = self._warm
                if warm is not None:      # the pipeline is still running (_defer)
                    if self._pipeline_queued:
                        return warm.run(entry, *args, **named)
                    try:
                        return warm.run(entry, *args, **named)
                    finally:
                        self._queue_pipeline()
            else:
                self._install(optimized)
        if not isinstance(entry, str):
            args = (entry, *args)
            entry = "main"
        func = self.module.functions.get(entry)
        if func is None:
            known = ", ".join("@" + f for f in self.module.functions) or "none"
            raise Trap(f"no function @{entry} in module {self.module.name} (it has: {known})")
        values = list(args)
        params = func.params
        if len(values) > len(params):
            raise Trap(f"@{entry} takes {len(params)} arguments, got {len(values)}")
        for p in params[len(values):]:
            if p.name not in named:
                missing = [q.name for q in params[len(values):] if q.name not in named]
                raise Trap(f"@{entry}: missing argument{'s' if len(missing) > 1 else ''} "
                           + ", ".join("%" + m for m in missing))
            values.append(named.pop(p.name))
        if named:
            raise Trap(f"@{entry} has no parameter{'s' if len(named) > 1 else ''} "
                       + ", ".join("%" + k for k in named))
        values = [_as_input(v, p.type) for v, p in zip(values, params)]
        if self.native is not None:
            return self.native.run(entry, values, self._interpret)
        return self._interpret(entry, values)

    def _interpret(self, entry: str, values: list) -> tuple[np.ndarray, ...]:
        st = self.run_state()
        st.budget = self.max_steps
        st.depth = 0
        with np.errstate(all="ignore"):
            outs = self.code(entry).call(values, check_dtype=True)
        return tuple(o if isinstance(o, np.ndarray) else np.asarray(o) for o in outs)

    # -- tier-up ----------------------------------------------------------------------------

    @property
    def jit(self):
        if self._jit is None:
            with self._lock:
                if self._jit is None:
                    import jit as jit_pkg  # lazily: the interpreter alone never loads llvmlite
                    self._jit = jit_pkg.Jit(**self._jit_options)
        return self._jit

    def regions(self, fcode: FunctionCode) -> list:
        name = fcode.func.name
        if name not in self._regions:
            with self._lock:
                if name not in self._regions:
                    import jit as jit_pkg
                    self._regions[name] = jit_pkg.form_regions(self.module, name, fcode.types)
        return self._regions[name]

    def tier_up(self, fcode: FunctionCode, blk: BlockCode) -> None:
        """Replace the JIT regions of a hot block by compiled runners (with fallback).

        Once per block, whichever thread gets there first; other threads keep running the
        block's steps they hold (the list is replaced, never changed in place). In the
        background mode the work is queued on the background compiler and this returns at once."""
        with self._lock:
            if blk.tiered:
                return
            if not self.background:
                self._tier_up(fcode, blk)
                return
            blk.tiered = True      # queued once; the interpreter keeps running the block
            self._queued.add((fcode, blk))
        from jit import background as bg
        _watch_forks(self, bg)

        def install() -> None:
            with self._lock:
                if (fcode, blk) in self._queued:
                    self._queued.discard((fcode, blk))
                    self._tier_up(fcode, blk)
        bg.compiler().submit(("tier-up", id(self), id(blk)), install)

    def _rearm_after_fork(self) -> None:
        """In a forked child: tier-ups queued in the parent never run here; their blocks tier
        up again when next hot, on the child's own compiler."""
        for _, blk in self._queued:
            blk.tiered = False
        self._queued.clear()

    def wait_compiled(self, timeout: float | None = None) -> bool:
        """Wait until the background compiler has nothing queued or running (this VM's tier-ups
        and kernels, and those of any other VM of the process); False if `timeout` seconds
        passed first. Calls after it run the compiled code for every shape seen so far, and the
        native tier's library once it was asked for."""
        if self.native is not None and not self.native.wait(timeout):
            return False
        if not self.background:
            return True
        from jit import background as bg
        return bg.compiler().wait(timeout)

    def _tier_up(self, fcode: FunctionCode, blk: BlockCode) -> None:
        if self.jit_mode == "off":
            blk.tiered = True
            return
        try:
            self._install_regions(fcode, blk)
        except Exception as e:  # noqa: BLE001 - a JIT bug must not cost the user the run
            blk.steps = list(blk.interp_steps)
            self.jit_errors.append(f"@{fcode.func.name} block {blk.label}: {type(e).__name__}: {e}")
            if self.background:     # quietly: the profile reports it
                return
            warnings.warn(f"JIT disabled for @{fcode.func.name} block {blk.label}, which keeps "
                          f"running on the interpreter: {type(e).__name__}: {e}", JitWarning,
                          stacklevel=2)
        finally:
            blk.tiered = True

    def _install_regions(self, fcode: FunctionCode, blk: BlockCode) -> None:
        regions = [r for r in self.regions(fcode) if r.block == blk.index]
        outside = None
        for region in sorted(regions, key=lambda r: -r.start):
            if not _annotations_survive(fcode, blk, region):
                continue
            runner = (self.jit.runner(self.module, region, background=True) if self.background
                      else self.jit.runner(self.module, region))
            if self.scheduler is not None:
                from .placement import PlacedRegion, read_outside_regions
                if outside is None:
                    outside = read_outside_regions(fcode.func, self.regions(fcode))
                keep = self.jit_mode == "always" and not set(region.outputs) & outside
                runner = PlacedRegion(self.module, region, fcode.types, runner, self.scheduler, keep)
            self.runners.append((fcode.func.name, blk.label, region, runner))
            blk.steps = _splice_region(fcode, blk, region, runner, self.profiler,
                                       on_devices=self.scheduler is not None)


_background_vms: weakref.WeakSet = weakref.WeakSet()   # VMs that queued a background tier-up


def _watch_forks(vm: VM, bg) -> None:
    if not _background_vms and _rearm_all not in bg.child_hooks:
        bg.child_hooks.append(_rearm_all)
    _background_vms.add(vm)


def _rearm_all() -> None:
    for vm in list(_background_vms):
        vm._rearm_after_fork()


def _annotations_survive(fcode: FunctionCode, blk: BlockCode, region) -> bool:
    """A `: TYPE` check inside a region can run after it only on a region output; a region that
    would hide an annotated intermediate stays interpreted."""
    outs = {fcode.layout.reg(n) for n in region.outputs}
    return all(s.checks_slot in outs for s in blk.steps
               if region.start <= s.where[1] < region.end and hasattr(s, "checks_slot"))


def _splice_region(fcode: FunctionCode, blk: BlockCode, region, runner, profiler,
                   on_devices: bool = False) -> list:
    inside = [s for s in blk.steps if region.start <= s.where[1] < region.end]
    checks = [s for s in inside if hasattr(s, "checks_slot")]
    # results the kernels would allocate beyond what the machine holds (memory_ceiling.py)
    memory_checks = [s.memory_check for s in inside if hasattr(s, "memory_check")]
    in_slots = [fcode.layout.operand_slot_of(o) for o in region.inputs]
    out_slots = [fcode.layout.reg(n) for n in region.outputs]

    def interpret(r):
        if on_devices:      # inputs a GPU region left on its device come home first
            from .placement import host
            for i in in_slots:
                r[i] = host(r[i])
        for s in inside:
            try:
                s(r)
            except BaseException as e:
                e.dlvm_where = s.where
                raise

    def fused(r):
        for check in memory_checks:
            check(r)
        outs = runner([r[i] for i in in_slots])
        if outs is None:
            interpret(r)
        else:
            for s, v in zip(out_slots, outs):
                r[s] = v

    def checked(r):
        # DLVM_JIT_CHECK: run the interpreter beside every compiled call and compare
        before = list(r)
        fused(r)
        ref = list(before)
        interpret(ref)
        for name, s in zip(region.outputs, out_slots):
            _check_same(fcode, blk, region, name, r[s], ref[s])
    run_region = checked if os.environ.get("DLVM_JIT_CHECK") else fused
    run_region.where = (blk.index, region.start)
    step = (profiler.wrap_region(fcode, blk.index, region, runner, run_region) if profiler
            else run_region)
    before = [s for s in blk.steps if s.where[1] < region.start]
    after = [s for s in blk.steps if s.where[1] >= region.end]
    return before + [step] + checks + after


def _devices(device: str | Device, gpus: list[Device] | None):
    """The device name the VM reports and the scheduler (None: everything on the CPU).

    `device` is "auto" (the cost model places regions when a GPU is usable, silently the CPU
    otherwise), "cpu", a device kind of the target registry or KIND:N, e.g. "cuda"/"cuda:N"
    (regions go there when they can; fallbacks are reported),
    or a Device object (e.g. `devices.sim_device()`); `gpus` gives "auto" devices to choose from
    (tests use a simulated GPU this way)."""
    if isinstance(device, Device):
        from .scheduler import Scheduler
        return device.name, Scheduler([device, *(gpus or [])], hint=device.name)
    if gpus:
        from .scheduler import Scheduler
        if device not in ("auto", "cpu") and device not in (g.name for g in gpus):
            raise ValueError(f"device {device!r} is not one of the given gpus "
                             f"({', '.join(g.name for g in gpus)})")
        return device, Scheduler(gpus, hint=None if device == "auto" else device)
    name = resolve_device(device)
    if name == "cpu":               # (no scheduler to import: a small model's first result
        return "cpu", None          # waited 2 ms for it)
    from .scheduler import Scheduler
    gpu = get_device(default_accelerator() if name == "auto" else name)
    return name, Scheduler([gpu], hint=None if name == "auto" else gpu.name)


def _check_same(fcode, blk, region, name: str, got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    tol = {"f": dict(rtol=2e-5, atol=1e-6) if want.dtype == np.float32 else dict(rtol=1e-9, atol=1e-12)}
    ok = got.shape == want.shape and got.dtype == want.dtype and (
        np.allclose(got, want, equal_nan=True, **tol["f"]) if want.dtype.kind == "f"
        else np.array_equal(got, want))
    if not ok:
        err = (float(np.nanmax(np.abs(got.astype(np.float64) - want))) if got.shape == want.shape
               else float("nan"))
        raise InternalError(f"JIT check: region [{region.start}:{region.end}] ({region.kind}) of "
                            f"@{fcode.func.name} block {blk.label} gave %{name} = {got.dtype}"
                            f"{list(got.shape)}, the interpreter {want.dtype}{list(want.shape)}; "
                            f"max abs error {err:.3g}")


def _as_input(value: Any, t) -> Any:
    """Arrays are taken as they are (their dtype is checked at entry), NumPy scalars become 0-d
    arrays (references expect arrays); Python numbers and lists are converted to the parameter's
    dtype. A str parameter takes an object array of str, or NumPy's fixed-width unicode ('U',
    what np.array(["a"]) and .npz files give), converted to object."""
    if t.dtype.is_str:
        return str_input(value, t)
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, np.generic):
        return np.asarray(value)
    try:
        return np.asarray(value, dtype=t.dtype.np)
    except (TypeError, ValueError, OverflowError) as e:
        raise Trap(f"cannot convert an argument to {t}: {e}") from None


def str_input(value: Any, t) -> Any:
    """An argument of a str parameter as an object array of Python str (a trap otherwise)."""
    a = value if isinstance(value, np.ndarray) else np.asarray(value, dtype=object)
    if a.dtype.kind == "U":
        return a.astype(object)
    if a.dtype != object:
        return a            # the entry check reports the wrong dtype
    for x in a.reshape(-1):
        if not isinstance(x, str):
            raise Trap(f"an argument of type {t} holds a {type(x).__name__} ({x!r:.40}), not a "
                       f"str")
    return a
