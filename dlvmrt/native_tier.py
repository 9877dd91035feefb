"""The native tier: the whole program compiled into one shared library (the ahead-of-time target,
`jit.native_library`) and called in place of the interpreter, so that a call runs from its first
instruction to its last without coming back to Python between kernels. At small batch the
interpreter's dispatch, not the kernels, is most of a call's time (a 2-layer LSTM at batch 1:
2 ms interpreted, 0.27 ms native); this removes it.

The interpreter, with its compiled regions, stays the reference and the fallback:
- "auto" (the default with tier-up): the library is built on the background compiler once an
  entry has been called `after` times; until it is loaded, calls run on the VM as before.
  "always": built before the first call, on the calling thread (tests, benchmarks of the tier).
- Per entry and input signature (dtypes and shapes), the first call runs both the library and the
  VM on the same inputs, compares the results and returns the VM's; a difference beyond the
  tolerance keeps the signature on the VM for good (a bug in a compiled path must not reach a
  user; a program with ops whose results jump, as a quantizer's rounding, has a result that fails
  element by element compared as a whole: STEP_OPS). The next calls are timed: TRIALS of the
  library, then TRIALS of the VM; the faster keeps the signature (the library's products are not
  always the JIT's equal at large sizes), the library on a near tie, for the next RETRY_AFTER
  calls and RETRY_AFTER_S seconds, then they are timed again; each time the timing confirms the
  choice both waits double (up to RETRY_MAX calls and RETRY_MAX_S seconds), since every VM sample
  costs a slow call and its OpenBLAS threads spin afterwards beside the library's. A library
  sample counts only BLAS_SPIN_S after the signature's last VM call ended (none while one runs; VM
  calls of other signatures are not watched): NumPy's OpenBLAS threads spin for about 0.1 s after
  its last product, and on two cores they took the library's second thread (ResNet-18 at batch 1:
  19 ms alone, 38 ms right after a VM call, so the VM was chosen at 26 ms). "always" skips the
  timing and keeps every signature native that passed the comparison.
- Any error the library returns (a trap, a guard it was not compiled for, the block budget, out of
  memory, calls nested deeper than it allows) runs the call again on the VM, which gives the
  interpreter's result or error; a signature whose call failed that way stays on the VM.
- An instruction the library has no code for (a boolean mask's nonzero, unique, ...) is run by
  the VM from inside the library call (dlvmrt/library_vm.py), so one such instruction no longer
  costs the rest of the program its compiled code. A program the library cannot hold otherwise
  (a dtype it has no C type for, a function signature) or no C compiler turns the tier off
  quietly; `status()` says why.

Thread safety: the library may be called from many threads at once; the tier's bookkeeping is
under its lock, never held across a call.
"""
from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from isa.errors import SettingError
from isa.ops import OPS
from jit import ForkSafeLock

if TYPE_CHECKING:
    from .vm import VM

MODES = ("off", "auto", "always")
TRIALS = 3                  # timed calls of each way per signature before the choice
# samples taken while the background compiler works do not count towards TRIALS (a compile
# beside a sample skews it), but a library at least CLEAR_WIN times faster than the VM over
# TRIALS samples of each, taken in any conditions, is chosen then: a large program's VM kept
# compiling its regions for seconds, and the slow VM calls of the trial were a third of a
# benchmark's calls (EdgeConv batch 32: numpy's argsort was 43% of the time)
CLEAR_WIN = 2.0
# seconds after a VM call before a library sample counts (OpenBLAS's threads spin for about 0.1 s
# after a product: 2^28 cycles, its default THREAD_TIMEOUT)
BLAS_SPIN_S = 0.25
# the VM keeps a signature only when it is faster than the library by more than this factor: its
# OpenBLAS threads' spinning slows whatever runs after it, which its own time does not show
NATIVE_EDGE = 1.05
# a choice made by timing is tried again after this many calls of its signature: a busy spell of
# the machine during the trial (another process, a compile on the background thread) must not
# fix the slower way for good
RETRY_AFTER = 1000
# ... and this many seconds: a model of 40 us a call was timed again every 40 ms at first, and
# each VM sample's OpenBLAS spin slowed the library's next 0.1 s of calls
RETRY_AFTER_S = 2.0
RETRY_MAX_S = 120.0
# native calls before status() counts allocations (the buffer cache fills first)
STEADY_AFTER = 4
RETRY_MAX = 64000
MAX_SIGNATURES = 256        # signatures remembered per VM (then forgotten and tried again)
# A shape family (_family: the entry, each argument's dtype and rank, and which of its dims are
# 0, 1 or more) whose last FAMILY_TRUST votes favoured the library, and none of whose
# signatures the library failed or got wrong, runs a new signature on the library at once, in
# "auto". A vote is a timed choice, or a signature's first call, which runs both ways on the
# same inputs to compare them. (Counting one vote per signature, or first calls only with no
# compile beside them, left more shapes to trials: MiniLM's stream below went from 0.81-0.88
# to 1.0-1.1 of onnxruntime's time in its last 80 calls, four runs each.) A text model
# called on batches of varying length had a new signature nearly every call, and none finished
# its trial: each new one ran both ways (MiniLM over lengths 8-64 at batch 4: 2-3x
# onnxruntime's time after 80 calls). The library's code takes other paths at other extents
# (vector tails, few-row products, splits), so every SPOT_CHECK-th new signature of a trusted
# family is still compared on its first call (then runs the library, untimed); a difference
# ends the family's trust. (Every 8th cost MiniLM's stream about a tenth: one VM call each.)
FAMILY_TRUST = 2
SPOT_CHECK = 32
# how close the library's results must be to the VM's on the first call of a signature (f32
# kernels reassociate sums; a real miscompile is far outside)
RTOL, ATOL = 1e-3, 1e-5
# f16 results: each instruction rounds to f16 (2^-11 relative), so an f32 sum in another order
# moves a result by an f16 step, and the steps add up along a model (a 2-layer encoder after
# model.half(): a few steps apart, and its library was declined at RTOL)
RTOL_F16, ATOL_F16 = 1e-2, 1e-3

# ops whose result jumps where their input crosses a point: the library sums a product in
# another order than the interpreter, and a last-bit difference that moves a value across a
# rounding step (a quantized model's QuantizeLinear) or a near tie changes an output by a whole
# step. A program with one has each result that fails element by element compared as a whole
# (_close_as_whole): a QAT CNN at batch 32 had 12% of its outputs one activation step apart
# (at most 1.7% of the largest, 0.7% of the 2-norm), and its library was declined for good. A
# miscompile is still caught: a wrong vector tail or lane is a large difference somewhere, a
# wrong op a large norm; results of fewer than STEP_MIN_SIZE elements are never relaxed
# (the op table's `steps`: round, floor, ceil, argmax, argmin, topk)
STEP_OPS = frozenset(name for name, op in OPS.items() if op.steps)
STEP_NORM = 0.05            # the difference's 2-norm, relative to the result's
STEP_MAX = 0.1              # the largest difference, relative to the largest magnitude
STEP_FEW = 0.5              # the elements outside the element-wise tolerance: a minority
STEP_EQUAL = 0.95           # integer / bool results: the elements that must be equal
STEP_MIN_SIZE = 16
# A first comparison that fails in such a program is made again on the same inputs, once the
# compiler is idle, at most STEP_RETRIES times: by default the VM's first calls are
# interpreted, and the library sums products in its compiled kernels' order, not NumPy's. A QDQ
# CNN's ten logits at batch 1 were a step apart from the interpreter's in three places (and
# equal to the compiled VM's), and its library, twice as fast, was declined for good. Until a
# recheck passes, the signature runs on the VM and no family trust applies to it.
STEP_RETRIES = 3

# the smallest block budget any VM asked of a loaded library (a library is loaded once per
# process, its budget is one number; a tighter budget only sends more calls back to the VM)
_budgets: dict[str, int] = {}
_budgets_lock = ForkSafeLock()

Interpret = Callable[[str, list], tuple]


class NativeTier:
    def __init__(self, vm: VM, mode: str, after: int):
        self.vm = vm
        self.mode = mode
        self.after = after
        self.library = None
        self.state = "waiting"          # waiting, compiling, ready, unavailable
        self.reason = ""
        self.calls = 0
        self.native_calls = 0
        # (native calls, allocation counts) at the last two powers of two: status() reports the
        # window between them (steady state, once the buffer cache and every signature warmed)
        self._window: tuple = (None, None)
        self.choice: dict[tuple, bool] = {}           # signature -> runs native
        self.trials: dict[tuple, _Trial] = {}        # signatures being timed
        self.declined: set[tuple] = set()             # signatures the library failed or got wrong
        self.vm_instructions = 0      # instructions the library hands back to the VM (library_vm.py)
        self.uses: dict[tuple, int] = {}              # calls since a timed choice
        # per signature: the last timed choice, the calls and seconds until the next, and when
        self.retry: dict[tuple, tuple[bool, int, float, float]] = {}
        self.votes: dict[tuple, list[bool]] = {}      # family -> its latest votes
        self.family_declined: set[tuple] = set()      # families the library failed or got wrong
        self.inherited: set[tuple] = set()            # signatures run native on their family's
        self.family_new: dict[tuple, int] = {}        # family -> new signatures it ran at once
        self.spot_checks: set[tuple] = set()          # such signatures compared on a first call
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._pid = os.getpid()         # a forked child rebuilds: its parent's compile is not its
        self._steps: bool | None = None   # whether the program has STEP_OPS (_has_steps)
        self.rechecks: dict[tuple, _Recheck] = {}    # failed first comparisons made again

    # -- what the VM calls --------------------------------------------------------------------

    def run(self, entry: str, values: list, interpret: Interpret) -> tuple:
        lib = self.library
        if lib is None:
            self._maybe_build()
            lib = self.library
            if lib is None:
                return interpret(entry, values)
        arrays = [a if isinstance(a, np.ndarray) and a.flags.c_contiguous else
                  np.asarray(a, order="C") for a in values]
        sig = (entry, *[(a.dtype.char, a.shape) for a in arrays])
        choice = self.choice.get(sig)
        if choice is not None and sig not in self.declined:
            used = self.uses.get(sig, 0) + 1
            self.uses[sig] = used
            retry = self.retry.get(sig)
            if retry is not None and used > retry[1] and \
                    time.perf_counter() - retry[3] >= retry[2]:
                with self._lock:
                    self.choice.pop(sig, None)
                    self.uses.pop(sig, None)
                    self.inherited.discard(sig)     # timed itself now: a vote for the family
                choice = None
        if sig in self.rechecks:
            return self._recheck(sig, lib, entry, values, interpret)
        if choice is None and self.mode == "auto" and self._inherit(sig):
            choice = True
        if choice is True:
            code, _, outs = lib.call(entry, arrays)
            if code == 0:
                self.native_calls += 1
                n = self.native_calls
                if n >= STEADY_AFTER and n & (n - 1) == 0:      # at calls 4, 8, 16, ...
                    self._window = (self._window[1], (n, lib.allocation_counts()))
                return outs
            self._decline(sig)       # the library cannot run it: the VM says what happens
            return interpret(entry, values)
        if choice is False:
            return interpret(entry, values)
        return self._trial(sig, lib, entry, arrays, values, interpret)

    def settled(self, entry: str, values: list) -> bool:
        """Whether calls of `entry` on arguments like `values` have left the trial: they run the
        library or the VM from now on (or there is no library). Benchmarks warm up to this."""
        if self.state == "unavailable":
            return True
        if self.library is None:
            return False
        sig = (entry, *[(np.asarray(a).dtype.char, np.shape(a)) for a in values])
        return sig in self.choice or sig in self.declined

    def wait(self, timeout: float | None = None) -> bool:
        self._after_fork()
        if self.state != "compiling":
            return True
        return self._done.wait(timeout)

    def _after_fork(self) -> None:
        if self._pid != os.getpid():
            with self._lock:
                if self._pid != os.getpid():
                    self._pid = os.getpid()
                    self._lock = threading.Lock()
                    self._done = threading.Event()
                    if self.state == "compiling":   # on the parent's compiler thread
                        self.state, self.calls = "waiting", 0

    def status(self) -> str:
        native = sum(1 for v in self.choice.values() if v)
        text = {"waiting": f"not built yet (built after {self.after} calls)",
                "compiling": "building the library",
                "ready": f"library loaded; {native} of {len(self.choice)} input signatures run it, "
                         f"{self.native_calls} native calls{self._allocations()}{self._solo()}"
                         + (f"; {self.vm_instructions} instruction"
                            f"{'s' if self.vm_instructions != 1 else ''} run on the VM"
                            if self.vm_instructions else ""),
                "unavailable": f"off: {self.reason}"}[self.state]
        return f"native tier ({self.mode}): {text}"

    def _solo(self) -> str:
        n = self.library.pool_solo_jobs() if self.library is not None else None
        return (f"; {n} parallel jobs ran on one thread (the pool's workers did not pay for their "
                f"hand-off: a busy machine, or jobs too small)" if n else "")

    def _allocations(self) -> str:
        """The system allocations of the native calls between the last two powers of two (the
        buffer cache warm): as many as the results handed back means the compiled code
        allocated nothing of its own."""
        a, b = self._window
        if a is None or b is None or a[1] is None or b[1] is None:
            return ""
        sys_n, res_n = b[1][0] - a[1][0], b[1][1] - a[1][1]
        return (f"; native calls {a[0] + 1}-{b[0]}: {sys_n} system allocations, "
                f"{max(sys_n - res_n, 0)} beyond the {res_n} results handed back")

    # -- choosing -----------------------------------------------------------------------------

    def _trial(self, sig, lib, entry, arrays, values, interpret) -> tuple:
        quiet = _compiler_idle()     # a compile running beside a sample would skew it
        with self._lock:
            trial = self.trials.get(sig)
            first = trial is None
            if first:
                trial = self.trials[sig] = _Trial()
            # the library's samples first, then the VM's: a library sample taken while the VM's
            # OpenBLAS threads still spin does not count (see BLAS_SPIN_S). While the compiler
            # works (often on the VM's own regions, made hot by its samples) no sample counts:
            # the library runs those calls rather than the slower VM (a recurrent model's trial
            # alternated for hundreds of calls)
            native_turn = first or not quiet or len(trial.native) < TRIALS
        if native_turn:
            t0 = time.perf_counter()
            code, _, outs = lib.call(entry, arrays)
            t_native = time.perf_counter() - t0
            if code:
                self._decline(sig)
                return interpret(entry, values)
            if not first:
                if quiet and _compiler_idle() and t0 >= trial.vm_end + BLAS_SPIN_S:
                    trial.native.append(t_native)
                trial.native_any.append(t_native)
                self.native_calls += 1
                self._maybe_choose(sig, trial)
                return outs
        t0 = time.perf_counter()
        trial.vm_end = math.inf     # (no library sample counts while this VM call runs)
        want = interpret(entry, values)
        trial.vm_end = time.perf_counter()
        t_vm = trial.vm_end - t0
        quiet = quiet and _compiler_idle()
        if first:
            if not _same(outs, want, self._has_steps()):
                if not (self._has_steps() and self._recheck_later(sig, trial, arrays, values)):
                    self._decline(sig)
                return want
            self._vote(sig, t_native <= t_vm * NATIVE_EDGE)
            if sig in self.spot_checks:       # a trusted family's shape, compared: run it native
                with self._lock:
                    self.spot_checks.discard(sig)
                    self.inherited.add(sig)
                self._decide(sig, True)
                return want
            if self.mode == "always":
                self._decide(sig, True)
                return want
        elif quiet:
            trial.vm.append(t_vm)
        if not first:
            trial.vm_any.append(t_vm)
        self._maybe_choose(sig, trial)
        return want

    def _recheck_later(self, sig, trial: _Trial, arrays: list, values: list) -> bool:
        """Keep a failed first comparison's inputs to compare on again (STEP_RETRIES); False
        where none is left."""
        with self._lock:
            if sig in self.rechecks:
                return False
            self.rechecks[sig] = _Recheck([a.copy() for a in arrays],
                                          [v.copy() if isinstance(v, np.ndarray) else v
                                           for v in values])
            if self.trials.get(sig) is trial:
                del self.trials[sig]
            return True

    def _recheck(self, sig, lib, entry: str, values: list, interpret: Interpret) -> tuple:
        """A call of a signature whose first comparison failed: once the compiler is idle, the
        library and the VM run the failing inputs again (one thread at a time); a pass makes the
        next call a first call again, STEP_RETRIES failures decline the signature. This call's
        result is the VM's."""
        r = self.rechecks.get(sig)
        if r is not None and _compiler_idle() and r.lock.acquire(blocking=False):
            try:
                code, _, outs = lib.call(entry, r.arrays)
                same = code == 0 and _same(outs, interpret(entry, r.values), self._has_steps())
                with self._lock:
                    r.tries += 1
                    if same or r.tries >= STEP_RETRIES:
                        self.rechecks.pop(sig, None)
                if not same and r.tries >= STEP_RETRIES:
                    self._decline(sig)
            finally:
                r.lock.release()
        return interpret(entry, values)

    def _has_steps(self) -> bool:
        """Whether the program has an op of STEP_OPS (looked at once)."""
        if self._steps is None:
            self._steps = any(ins.op in STEP_OPS for f in self.vm.module.functions.values()
                              for b in f.blocks for ins in b.instrs)
        return self._steps

    def _maybe_choose(self, sig, trial: _Trial) -> None:
        if len(trial.native) >= TRIALS and len(trial.vm) >= TRIALS:
            self._decide(sig, min(trial.native) <= min(trial.vm) * NATIVE_EDGE, trial)
        elif len(trial.native_any) >= TRIALS and len(trial.vm_any) >= TRIALS and \
                min(trial.native_any) * CLEAR_WIN <= min(trial.vm_any):
            self._decide(sig, True, trial)

    def _inherit(self, sig) -> bool:
        """Run `sig` on the library without a trial where its family has earned it (see
        FAMILY_TRUST); a signature that was timed itself is timed again instead."""
        family = _family(sig)
        with self._lock:
            votes = self.votes.get(family, [])
            if sig in self.declined or family in self.family_declined or \
                    (sig in self.retry and sig not in self.inherited) or sig in self.trials or \
                    len(votes) < FAMILY_TRUST or not all(votes[-FAMILY_TRUST:]):
                return False
            if sig not in self.inherited:
                n = self.family_new[family] = self.family_new.get(family, 0) + 1
                if n % SPOT_CHECK == 0:
                    self.spot_checks.add(sig)   # compared on its first call (_trial), no timing
                    return False
            self.inherited.add(sig)
        self._decide(sig, True)
        return True

    def _vote(self, sig, native: bool, locked: bool = False) -> None:
        """A comparison of the two ways on `sig`, counted towards its family (FAMILY_TRUST)."""
        if not locked:
            with self._lock:
                return self._vote(sig, native, locked=True)
        votes = self.votes.setdefault(_family(sig), [])
        votes.append(native)
        del votes[:-FAMILY_TRUST]

    def _decline(self, sig) -> None:
        """The library failed this signature or got it wrong: the VM keeps it for good, and its
        family's new signatures are tried one by one."""
        with self._lock:
            self.declined.add(sig)
            self.family_declined.add(_family(sig))
        self._decide(sig, False)

    def _decide(self, sig, native: bool, trial: _Trial | None = None) -> None:
        """Keep `sig` on the library or the VM. From a timing (`trial`), only while that trial
        is still the signature's: another thread's sample that lands after the choice must not
        count as a second timing that confirms it (which doubles the waits)."""
        with self._lock:
            if trial is not None and self.trials.get(sig) is not trial:
                return
            if len(self.choice) >= MAX_SIGNATURES:
                self.choice.clear()
                self.trials.clear()
                self.uses.clear()
                self.retry.clear()
                self.inherited.clear()
                self.spot_checks.clear()
            self.choice[sig] = native
            self.trials.pop(sig, None)
            if trial is not None:
                self._vote(sig, native, locked=True)
            if self.mode == "always":       # kept without timing: nothing to time again
                return
            last, calls, seconds, _ = self.retry.get(sig, (None, 0, 0.0, 0.0))
            if last is native:
                calls, seconds = min(calls * 2, RETRY_MAX), min(seconds * 2, RETRY_MAX_S)
            else:
                calls, seconds = RETRY_AFTER, RETRY_AFTER_S
            self.retry[sig] = (native, calls, seconds, time.perf_counter())

    # -- building -----------------------------------------------------------------------------

    def _maybe_build(self) -> None:
        self._after_fork()
        with self._lock:
            if self.state != "waiting":
                return
            self.calls += 1
            if self.mode == "auto" and self.calls < self.after:
                return
            self.state = "compiling"
        if self.mode == "always":
            self._build()
            return
        import jit
        from jit import background as bg
        # the libraries' runtime, on a machine whose cache has none yet: seconds of C compiling
        # that need not wait behind the regions' kernels (not as the VM is made: a process that
        # runs a program once, as `dlvm run` does, would start it only to kill it at exit).
        # Returns at once: the library builder's import is on the same thread (it took
        # 65-135 ms, which this call, an interpreted one, waited for: an encoder layer's seventh
        # call went 0.6 ms -> 74-163 ms)
        jit.prepare_native_runtime()
        # after the regions' kernels queued meanwhile: the VM runs faster with those while the
        # library builds (seconds of C compiling, more while the runtime is not cached yet)
        if not bg.compiler().submit(("native", id(self)), self._build, last=True):
            self._unavailable("the background compiler is shut down")

    def _build(self) -> None:
        try:
            import jit

            from .aot import load
            if not jit.native_available():
                raise jit.NativeUnavailable("no C compiler (cc, or $CC) to link the library")
            lib = load(jit.native_library(self.vm.module))
            self.vm_instructions = lib.attach_vm(self.vm.module)
            lib.set_threads(self.vm.jit.threads)
            with _budgets_lock:
                key = str(lib.directory)
                _budgets[key] = min(_budgets.get(key, self.vm.max_steps), self.vm.max_steps)
                if not lib.set_max_steps(_budgets[key]):
                    raise jit.NativeUnavailable("the library has no block budget")
        except Exception as e:  # noqa: BLE001 - the VM keeps running the program either way
            self._unavailable(_reason(e))
            return
        self.library = lib
        self.state = "ready"
        self._done.set()

    def _unavailable(self, reason: str) -> None:
        self.reason = reason
        self.state = "unavailable"
        self._done.set()


@dataclass
class _Trial:
    """One signature's timed calls: the quiet samples of each way (no compile beside them, and
    for the library none of the VM's OpenBLAS threads), every later sample of each, and when the
    last VM call ended."""
    native: list[float] = field(default_factory=list)
    vm: list[float] = field(default_factory=list)
    native_any: list[float] = field(default_factory=list)
    vm_any: list[float] = field(default_factory=list)
    vm_end: float = 0.0


@dataclass
class _Recheck:
    """A failed first comparison's inputs (the library's arrays and the VM's values), compared
    on again."""
    arrays: list
    values: list
    tries: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _family(sig: tuple) -> tuple:
    """A signature's shape family: the entry, and per argument its dtype, its rank and which of
    its dims are 0, 1 or larger (size-1 and empty dims take paths of their own in the library:
    broadcasts, few-row products)."""
    entry, *args = sig
    return (entry, *[(dtype, tuple(min(d, 2) for d in shape)) for dtype, shape in args])


def _compiler_idle() -> bool:
    from jit import background as bg
    return bg.compiler().idle()


def _reason(e: BaseException, limit: int = 400) -> str:
    text = "; ".join(line.strip() for line in str(e).strip().splitlines() if line.strip())
    text = text.replace(":;", ":")
    return text if len(text) <= limit else text[:limit - 4] + " ..."


def _same(got: tuple, want: tuple, steps: bool = False) -> bool:
    """Whether the library's results `got` are the VM's `want` up to the products' summation
    order; `steps`: the program has STEP_OPS, and a result that fails element by element is
    compared as a whole."""
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        w = np.asarray(w)
        if g.shape != w.shape or g.dtype != w.dtype:
            return False
        if w.dtype.kind in "fc":
            scale = float(np.max(np.abs(w), initial=0.0, where=np.isfinite(w)))
            rtol, atol = (RTOL_F16, ATOL_F16) if w.dtype == np.float16 else (RTOL, ATOL)
            if not np.allclose(g, w, rtol=rtol, atol=atol * max(1.0, scale), equal_nan=True) \
                    and not (steps and _close_as_whole(g, w)):
                return False
        elif not np.array_equal(g, w) and not (steps and w.size >= STEP_MIN_SIZE and
                                               np.mean(g == w) >= STEP_EQUAL):
            return False
    return True


def _close_as_whole(g: np.ndarray, w: np.ndarray) -> bool:
    """A float result of a program with STEP_OPS: the same non-finite values in the same
    places, and the finite ones a few steps apart (STEP_FEW, STEP_MAX, STEP_NORM)."""
    if w.size < STEP_MIN_SIZE:
        return False
    fin = np.isfinite(w)
    if not np.array_equal(fin, np.isfinite(g)) or \
            not np.array_equal(np.where(fin, 0, w), np.where(fin, 0, g), equal_nan=True):
        return False
    d, r = (g[fin] - w[fin]).astype(np.float64), w[fin].astype(np.float64)
    if not d.size:
        return True
    top = float(np.max(np.abs(r)))
    far = ~np.isclose(g[fin], w[fin], rtol=RTOL, atol=ATOL * max(1.0, top))
    return bool(np.mean(far) <= STEP_FEW and np.max(np.abs(d)) <= STEP_MAX * top and
                np.linalg.norm(d) <= STEP_NORM * np.linalg.norm(r))


def tier_for(vm: VM, native: str | None) -> NativeTier | None:
    """The VM's native tier, or None where it does not apply: `native` (else $DLVM_NATIVE, else
    "auto") is "off", the VM does not tier up, profiles or traces (the profile is per
    instruction), or places work on devices."""
    mode = native or os.environ.get("DLVM_NATIVE") or "auto"
    if mode not in MODES:
        raise SettingError(f"native must be one of {', '.join(MODES)}, got {mode!r}"
                           + ("" if native else " (from $DLVM_NATIVE)"))
    if mode == "off" or vm.jit_mode == "off" or vm.profiler is not None or vm.scheduler is not None:
        return None
    return NativeTier(vm, mode, after=max(vm.hot_threshold, 2))
