"""RegionRunner: runs one region compiled, behind guards, with bounded variants.

Tiering lives here. Each call checks dtypes (guards), then looks the exact input shapes up in a
small table of prepared calls; a new shape is planned (plan.py) and, if its Spec is new,
compiled, up to `max_variants` variants. Anything that cannot run compiled (a guard mismatch, a
new variant beyond the bound, an op without lowering, a trap condition found by the kernel)
returns None: the VM then interprets the region's instructions, which is always correct and
reports traps with their proper message.

Steady state allocates nothing: a call reuses the output arrays of the previous call with the
same shapes when nobody else holds them any more (their reference count says so).
"""
from __future__ import annotations

import dataclasses
import math
import os
import sys
import threading
import warnings
from typing import Any

import numpy as np

from isa.dtypes import dtype_from_numpy
from isa.errors import InternalError, OpTypeError
from isa.module import ConstRef, Module
from isa.ops import OPS
from isa.types import TensorType
from isa.verify import verify_module
from jit import background as background_compiler
from jit.build import KernelBuildError, build_kernel
from jit.kernel_ir import Kernel
from jit.plan import SHORT_ROW, Decline, Plan, Spec, make_plan
from jit.regions import EPILOGUE_KINDS, Region
from jit.status import status_text

from . import blas_threads, conv, maxpool, store_epilogue
from .compiler import Compiled, assembly, compile_variant, optimized_ir
from .gemm import PARALLEL_MACS, gemm, gemm_ready
from .gemm import use_for as use_gemm
from .threads import Job
from .threads import warm as warm_pool

# ops that are a math-library call or polynomial, not one instruction (their op records say so)
MATH_OPS = frozenset(name for name, op in OPS.items() if op.facts.costly)
_MAX_SHAPES = 32
# per-process helper kernels whose background build failed: the next call builds them in the
# foreground, which reports the failure once and turns the helper off (see _gemm, _maxpool)
_HELPERS_FAILED: set[str] = set()
_MAX_JOBS = 8        # prepared kernel calls per shape (sets of buffers seen)


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy matmul's result shape; raises Decline where matmul would trap."""
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise Decline(f"matmul inner dimensions {a2[-1]} and {b2[-2]} differ")
    try:
        batch = np.broadcast_shapes(a2[:-2], b2[:-2])
    except ValueError:
        raise Decline("matmul batch dims do not broadcast") from None
    return tuple(batch) + ((a2[-2],) if len(a) > 1 else ()) + ((b2[-1],) if len(b) > 1 else ())


# fewer elements than this run on one thread: an optimizer's update of a [256, 256] weight
# (7 arrays, memory-bound) took 387 us split over 2 threads and about 150 us on one, on the
# 2-core machine (a training step: 1.02x -> 0.94x torch eager; the zoo unchanged within noise);
# Jit(parallel_threshold_us=0) still splits everything (the tests of the parallel path)
PARALLEL_MIN_ELEMENTS = 1 << 17

# the cost model of worth_a_kernel (ns; measured on the 2-core CI machine: a 4-instruction
# region of [1, 64] values took 21 us compiled and 15 us interpreted, VM entry included; a GRU
# step's 6 instructions on [32, 64] 42 us compiled, about 18 interpreted)
KERNEL_CALL_NS = 25_000
KERNEL_ELEMENT_NS = 0.25          # a product's epilogue, per element and instruction
KERNEL_NODE_NS = 0.05             # an elementwise kernel, per element and node (vectorized)
INTERP_INSTR_NS = 2_000
INTERP_ELEMENT_NS = 1.0
INTERP_REDUCE_FACTOR = 4
MID_PRODUCT_NS = 0.03            # per multiply-add, below LARGE_PRODUCT_FLOPS
LARGE_PRODUCT_FLOPS = 1 << 23     # multiply-adds from which a product always takes the kernel
SMALL_REASON = "too small for a kernel to pay: the interpreter runs these shapes faster"


@dataclasses.dataclass
class _Call:
    """Everything one exact input-shape signature needs, prepared once."""
    plan: Plan
    compiled: Compiled | None     # None: a lone head op, no epilogue kernel
    out_dtypes: list[np.dtype]
    bufs: list[np.ndarray | None]
    bounds: list[tuple[int, int]]
    scratch: list[np.ndarray | None]
    mm_shape: tuple[int, ...] | None
    mm_buf: np.ndarray | None
    mm_out: int                   # output index that is written in place of the product, or -1
    spare: list[list[np.ndarray]] = dataclasses.field(default_factory=list)
    conv_plan: conv.ConvPlan | None = None      # a conv2d head's geometry and buffers
    mm_rows: np.ndarray | None = None   # a strided stack of rows copied whole (_matmul)
    store: store_epilogue.StoreEpilogue | None = None   # an epilogue the GEMM kernel applies
    jobs: dict[tuple, Job] = dataclasses.field(default_factory=dict)   # by argument pointers
    small: bool = False           # the interpreter runs these shapes faster (worth_a_kernel)


class RegionRunner:
    def __init__(self, jit: Any, module: Module, region: Region, types=None, *,
                 background: bool = False):
        self.jit = jit
        self.module = module
        self.region = region
        self._types = types
        self.kernel: Kernel | None = None
        self.build_error: str | None = None
        self.variants: dict[Spec, Compiled] = {}
        self._calls: dict[tuple, _Call] = {}
        self._last: _Call | None = None
        self.calls = 0
        self.compiled_calls = 0
        self.fallbacks = 0
        self.last_reason: str | None = None
        self.allocations = 0
        self._in_dtypes: list[np.dtype] = []
        self._mm: tuple[int, int] | None = None     # operand indices of an epilogue region's head
        self._head_op = ""
        self._head_args: list[int] = []
        self._head_attrs: dict = {}
        self._packs: dict[tuple, tuple] = {}   # (input index, side) -> (constant, its packed form)
        self._store: store_epilogue.StorePattern | None = None
        # One call at a time: a call hands out output buffers it reuses between calls (_Call.bufs
        # and .spare), prepared jobs and packed constants. Threads sharing a VM run different
        # regions at once; the same region, one after the other (its kernel is parallel itself).
        self._lock = threading.Lock()
        # background=True (the VM's tiered "auto" mode): kernels compile on the background
        # compiler (jit/background.py) and calls are interpreted until theirs is installed
        self.background = background
        self._compiling: set[Spec] = set()          # variants queued or compiling
        self.compile_errors: dict[Spec, str] = {}   # variants that failed to compile
        self._waiting: dict[tuple, Spec] = {}       # input shapes -> the variant they wait for
        self._current_key: tuple = ()               # the shapes _prepare is planning

    # ---- setup ---------------------------------------------------------------------------

    def _build(self) -> None:
        if self.kernel is not None:
            return
        if self.build_error is not None:
            raise Decline(self.build_error)
        try:
            types = self._types or verify_module(self.module)[self.region.func]
            self._types = types
            self.kernel = build_kernel(self.module, types, self.region)
        except (KernelBuildError, NotImplementedError, ValueError, KeyError) as e:
            self.build_error = f"region cannot be compiled: {e}"
            raise Decline(self.build_error) from None
        instrs = self.module.functions[self.region.func].blocks[self.region.block].instrs
        rows = types[self.region.block]
        dts: list[np.dtype | None] = [None] * len(self.region.inputs)
        r = self.region
        for ins, row in zip(instrs[r.start:r.end], rows[r.start:r.end]):
            for o, t in zip(ins.operands, row.operands):
                if o in self.region.inputs and dts[self.region.inputs.index(o)] is None:
                    dts[self.region.inputs.index(o)] = t.dtype.np
        self._in_dtypes = [d for d in dts]
        if self.region.kind in EPILOGUE_KINDS:
            head = instrs[self.region.start]
            self._head_op = head.op
            self._head_args = [self.region.inputs.index(o) for o in head.operands]
            self._head_attrs = OPS[head.op].with_defaults(head.attrs)
            self._mm = tuple(self._head_args[:2])
            self._store = store_epilogue.match(self.kernel)

    def _prepare(self, args: list[np.ndarray]) -> _Call:
        k = self.kernel
        mm_shape = None
        if self._mm is not None:
            mm_shape = self._head_shape(args)
        shapes = [mm_shape if t.source < 0 else args[t.source].shape for t in k.inputs]
        plan = make_plan(k, shapes)
        mm_out = -1
        if mm_shape is not None and not any(o.node == self._product_node() for o in k.outputs):
            src = next(i for i, t in enumerate(k.inputs) if t.source < 0)
            for j, o in enumerate(k.outputs):
                # in place only where each element is written once: an output broadcast over
                # a larger domain (a dot product beside a dead use of a bigger value) would
                # read back what it wrote and apply the epilogue again and again
                if o.dtype == k.inputs[src].dtype and plan.out_shapes[j] == mm_shape and \
                        plan.spec.outputs[j] == plan.spec.inputs[src] and all(plan.spec.outputs[j]):
                    mm_out = j
                    break
            if mm_out >= 0:
                inplace = tuple(src if j == mm_out else -1 for j in range(len(k.outputs)))
                plan.spec = dataclasses.replace(plan.spec, inplace=inplace)
        if mm_shape is not None and len(k.outputs) == 1 and k.outputs[0].node == self._product_node():
            # a lone product or convolution: no epilogue kernel to compile or run, its result
            # is the region's output (written in place of output 0)
            return _Call(plan, None, [k.outputs[0].dtype.np], [None], [(0, plan.rows)], [None],
                         mm_shape, None, 0, [[]])
        store = self._store_for(args, mm_shape, plan)
        if store is not None:
            # bias and relu applied by the GEMM kernel as it stores: no epilogue kernel either
            return _Call(plan, None, [np.dtype(np.float32)], [None], [(0, plan.rows)], [None],
                         mm_shape, None, 0, [[]], store=store)
        if plan.dims[plan.spec.rank - 1] < SHORT_ROW:
            plan.spec = dataclasses.replace(plan.spec, short_rows=True)
        compiled = self.variants.get(plan.spec)
        if compiled is None:
            compiled = self._compile(plan.spec)
        threads = self._threads_for(plan)
        rows = plan.rows
        bounds = [(rows * t // threads, rows * (t + 1) // threads) for t in range(threads)]
        scratch = [np.empty(compiled.slots * plan.inner_total, np.float64) if compiled.slots else None
                   for _ in bounds]
        return _Call(plan, compiled, [o.dtype.np for o in k.outputs], [None] * len(k.outputs), bounds,
                     scratch, mm_shape, None, mm_out, [[] for _ in k.outputs])

    def _compile(self, spec: Spec) -> Compiled:
        """The variant for `spec`, compiled now; in the background mode, queued on the
        background compiler instead (Decline: the interpreter runs the region until the variant
        is installed)."""
        failed = self.compile_errors.get(spec)
        if failed is not None:
            raise Decline(failed)
        if len(self.variants) + len(self._compiling - self.variants.keys()) >= self.jit.max_variants \
                and spec not in self._compiling:
            raise Decline(f"{len(self.variants)} variants compiled (max_variants); new shapes "
                          f"stay interpreted")
        if not self.background:
            try:
                compiled = compile_variant(self.kernel, spec, self.jit.opt_level, self.jit.disk)
            except NotImplementedError as e:
                self.build_error = str(e)
                raise Decline(str(e)) from None
            self.variants[spec] = compiled
            return compiled
        self._compiling.add(spec)
        if len(self._waiting) >= _MAX_SHAPES:
            self._waiting.pop(next(iter(self._waiting)))
        self._waiting[self._current_key] = spec
        bg = background_compiler.compiler()
        key = (self, spec)
        if not bg.pending(key):
            bg.submit(key, lambda: self._compile_in_background(spec))
        raise Decline("compiling in the background; the interpreter runs the region meanwhile")

    def _compile_in_background(self, spec: Spec) -> None:
        """On the compiler thread: compile one variant and install it (a dict assignment, which
        a running call sees whole or not at all); a failure is recorded, and the region keeps
        running on the interpreter for those shapes."""
        try:
            compiled = compile_variant(self.kernel, spec, self.jit.opt_level, self.jit.disk)
            warm_pool(self.jit.threads)
            self.variants[spec] = compiled
        except Exception as e:     # noqa: BLE001 - a compile failure never reaches the user
            self.compile_errors[spec] = f"compile failed: {type(e).__name__}: {e}"
        finally:
            self._compiling.discard(spec)

    def _store_for(self, args: list[np.ndarray], mm_shape, plan: Plan) -> store_epilogue.StoreEpilogue | None:
        """The epilogue as the GEMM kernel's store, where the region's is one (bias, relu) and
        the head runs on the kernel for these shapes."""
        if self._store is None or mm_shape is None or not self.jit.gemm or \
                self._head_op not in ("matmul", "conv2d"):
            return None
        ops = [args[i] for i in self._head_args]
        if self._head_op == "conv2d":
            if not conv.supported(*ops[:2], self._head_attrs):
                return None
        else:
            a, b = ops[0], ops[1]
            rows = math.prod(a.shape[:-1]) if a.ndim >= 2 else 0
            if b.ndim != 2 or a.dtype != np.float32 or not use_gemm(rows, b.shape[1], a.shape[-1]):
                return None
        return store_epilogue.for_call(self._store, self.kernel, self._head_op, mm_shape,
                                       plan.out_shapes[0], [a.shape for a in args],
                                       conv_bias=len(self._head_args) > 2)

    def _head_shape(self, args: list[np.ndarray]) -> tuple[int, ...]:
        """The shape of the head op's result (the product or convolution), or Decline where
        the op would trap (the interpreter then raises it)."""
        if self._head_op == "matmul":
            return matmul_shape(args[self._mm[0]].shape, args[self._mm[1]].shape)
        types = [TensorType(dtype_from_numpy(args[i].dtype), args[i].shape) for i in self._head_args]
        try:
            return tuple(OPS[self._head_op].infer(types, self._head_attrs)[0].shape)
        except OpTypeError as e:
            raise Decline(str(e)) from None

    def _product_node(self) -> int:
        return next(i for i, n in enumerate(self.kernel.nodes)
                    if n.op == "load" and self.kernel.inputs[n.attr].source < 0)

    def _threads_for(self, plan: Plan) -> int:
        threads = self.jit.threads
        if threads <= 1 or plan.rows < 2:
            return 1
        k = self.kernel
        nbytes = sum(t.dtype.itemsize for t in k.inputs) + sum(o.dtype.itemsize for o in k.outputs)
        n_math = sum(1 for n in k.nodes if n.op in MATH_OPS)
        est_ns = plan.elements * (0.05 * nbytes + 0.03 * len(k.nodes) + 0.4 * n_math)
        threshold = self.jit.parallel_threshold_us
        if est_ns < threshold * 1e3 or (threshold > 0 and plan.elements < PARALLEL_MIN_ELEMENTS):
            return 1
        return min(threads, plan.rows)

    # ---- calls ---------------------------------------------------------------------------

    def __call__(self, args: list[np.ndarray]) -> list[np.ndarray] | None:
        # shapes known to be faster interpreted decline before anything else (no lock: the
        # dict read is atomic, and a stale miss only takes the full path below)
        try:
            known = self._calls.get(tuple(a.shape for a in args))
        except AttributeError:
            known = None
        if known is not None and known.small:
            self.calls += 1
            self.fallbacks += 1
            return None
        with self._lock:
            self.calls += 1
            try:
                out = self._run(args)
            except Decline as d:
                self.fallbacks += 1
                self.last_reason = str(d)
                return None
            self.compiled_calls += 1
            return out

    def _run(self, args: list[np.ndarray]) -> list[np.ndarray]:
        if self.kernel is None:
            self._build()
        if len(args) != len(self._in_dtypes):
            raise Decline(f"expected {len(self._in_dtypes)} arguments, got {len(args)}")
        for i, (a, d) in enumerate(zip(args, self._in_dtypes)):
            if not isinstance(a, np.ndarray):
                args = list(args)
                args[i] = a = np.asarray(a)
            if a.dtype != d:
                raise Decline(f"argument {i} is {a.dtype}, the region was compiled for {d}")
        key = tuple(a.shape for a in args)
        call = self._calls.get(key)
        if call is None:
            waiting = self._waiting.get(key)
            if waiting is not None and background_compiler.compiler().pending((self, waiting)):
                # these shapes' variant is compiling in the background: interpreted, without
                # planning them again on every call meanwhile
                raise Decline("compiling in the background; the interpreter runs the region meanwhile")
            self._current_key = key
            call = self._prepare(args)
            call.small = not self._worth_a_kernel(args, call)
            self._waiting.pop(key, None)
            if len(self._calls) >= _MAX_SHAPES:      # the oldest shape's buffers go
                self._calls.pop(next(iter(self._calls)))
            self._calls[key] = call
        if call.small:
            raise Decline(SMALL_REASON)
        self._last = call
        bufs = call.bufs
        head = None
        if self._mm is not None and self._head_op != "matmul":
            head = self._reference_head(call, args)
        for j, shape in enumerate(call.plan.out_shapes):
            # the kernel writes in place of a head result that the reference allocated
            bufs[j] = head if head is not None and j == call.mm_out else self._free_buffer(call, j, shape)
        if call.compiled is None:
            if head is None:
                self._matmul(call, args)
            out = list(bufs)
            bufs[:] = [None]
            return out
        ptrs = []
        keep = []     # arrays whose raw pointers the kernel reads: alive until it returns
        k = self.kernel
        for t in k.inputs:
            if t.source < 0:
                a = head if head is not None else self._matmul(call, args)
            else:
                a = args[t.source]
                if not a.flags.c_contiguous:
                    a = np.ascontiguousarray(a)
            keep.append(a)
            ptrs.append(a.ctypes.data)
        for j in range(len(k.outputs)):
            if j != call.mm_out:
                ptrs.append(bufs[j].ctypes.data)
        # the same buffers call after call (outputs are reused, inputs are the previous
        # regions' outputs): the chunks' arguments are prepared once per set of pointers
        key = tuple(ptrs)
        job = call.jobs.get(key)
        if job is None:
            dims = call.plan.dims.ctypes.data
            chunks = [(lo, hi, dims, self._scratch_ptr(call, t), *ptrs)
                      for t, (lo, hi) in enumerate(call.bounds)]
            job = call.jobs[key] = Job(self.jit.threads, call.compiled.fn, chunks)
            if len(call.jobs) > _MAX_JOBS:
                call.jobs.pop(next(iter(call.jobs)))
        status = job()
        if status:
            raise Decline(status_text(status))
        out = list(bufs)
        bufs[:] = [None] * len(bufs)     # the runner keeps them only in `spare`
        return out

    def _worth_a_kernel(self, args: list[np.ndarray], call: _Call) -> bool:
        """Whether a kernel call beats interpreting the region's instructions for these shapes:
        a kernel call costs a fixed ~20 us in Python (guards, buffers, the job), an
        interpreted instruction ~2 us plus a pass over memory. Tiny tensors (an LSTM step at
        batch 1: [1, 64]) ran 3x slower compiled. Heads (products, convolutions) decide by
        their own rules; DLVM_JIT_SMALL=compile compiles regardless (the JIT's own tests)."""
        if os.environ.get("DLVM_JIT_SMALL") == "compile":
            return True
        instrs = self.region.end - self.region.start
        interpreted = instrs * INTERP_INSTR_NS
        if self._mm is not None:
            if self._head_op != "matmul" or call.mm_shape is None:
                return True          # convolutions and pools: their own kernels decide
            # a large product goes to the GEMM kernel (its own rules pick it or BLAS); a small
            # one costs about the same either way, so what decides is the kernel call's fixed
            # cost against the epilogue's interpreted passes (an LSTM step's [32, 64] x
            # [64, 256] + bias: 47 us compiled, about 15 interpreted)
            a = args[self._mm[0]]
            flops = math.prod(call.mm_shape) * a.shape[-1]
            if flops >= LARGE_PRODUCT_FLOPS:
                return True
            out = math.prod(call.mm_shape)
            saved = (instrs - 1) * out * (INTERP_ELEMENT_NS - KERNEL_ELEMENT_NS)
            # mid-sized products by weights that change from call to call (packed afresh each
            # time) ran slower on the region's path than on NumPy's BLAS (an MLP training
            # step's [64, 64] x [64, 256] + bias + relu: 146 against ~120 us); constant weights
            # are packed once and keep the kernel
            packed = isinstance(self.region.inputs[self._mm[1]], ConstRef)
            penalty = 0 if packed else flops * MID_PRODUCT_NS
            return KERNEL_CALL_NS + penalty < interpreted + saved
        elements = max([a.size for a in args] + [math.prod(s) for s in call.plan.out_shapes]
                       + [1])
        nodes = sum(1 for n in self.kernel.nodes if n.op not in ("load", "const"))
        # NumPy makes one pass per instruction; the kernel one pass, nodes vectorized; NumPy's
        # reduction over an axis tuple walks memory strided (a global average pool of
        # [1, 16, 16, 16]: 18 us interpreted)
        per_element = INTERP_ELEMENT_NS * (INTERP_REDUCE_FACTOR if self.kernel.inner else 1)
        interpreted += elements * instrs * per_element
        compiled = KERNEL_CALL_NS + elements * nodes * KERNEL_NODE_NS
        return compiled < interpreted

    def _free_buffer(self, call: _Call, j: int, shape: tuple[int, ...]) -> np.ndarray:
        """An output array nobody outside the runner holds: one of the last two, or a new one.

        Two are kept because a caller usually still holds the previous result while it makes
        the next call (a loop register is overwritten only after the call returns)."""
        spare = call.spare[j]
        for i in range(len(spare)):
            # 2 references: the spare list and getrefcount's argument; more means it is held
            if sys.getrefcount(spare[i]) == 2:
                spare.append(spare.pop(i))
                return spare[-1]
        buf = np.empty(shape, call.out_dtypes[j])
        self.allocations += 1
        spare.append(buf)
        if len(spare) > 2:
            spare.pop(0)
        return buf

    @staticmethod
    def _scratch_ptr(call: _Call, t: int) -> int | None:
        s = call.scratch[t]
        return None if s is None else s.ctypes.data

    def _reference_head(self, call: _Call, args: list[np.ndarray]) -> np.ndarray:
        """A head op without an out= form (conv2d: a patch matrix and one matrix product, the
        JIT's own for f32), run through its definition; the epilogue then runs in place on the
        fresh array."""
        operands = [args[i] for i in self._head_args]
        if self._head_op == "maxpool2d" and maxpool.supported(operands[0], self._head_attrs):
            pool = self._maxpool()
            if pool is not None:
                return pool.run(operands[0], self._head_attrs, self._head_buffer(call, np.float32),
                                self.jit.threads)
        if self._head_op == "conv2d" and self.jit.gemm and conv.supported(*operands[:2], self._head_attrs):
            g = self._gemm()
            if g is not None:
                return self._conv(call, operands, g, args)
        out = OPS[self._head_op].reference(self._head_attrs, *operands)
        if call.store is not None:       # the GEMM kernel became unavailable since planning
            out = call.store.apply(np.array(out), args)
        if not (out.flags.c_contiguous and out.flags.writeable) or out.shape != call.mm_shape:
            out = np.ascontiguousarray(out)
        if out.shape != call.mm_shape or out.dtype != args[self._head_args[0]].dtype:
            raise InternalError(f"{self._head_op} reference gave {out.dtype}{list(out.shape)}, "
                                f"expected {list(call.mm_shape)}")
        return out

    def _gemm(self):
        """The JIT's GEMM kernel, or None where it cannot be built or loaded on this host: the
        Jit then runs products on NumPy's BLAS, after one warning."""
        if self.background and not self._helper_ready(gemm, gemm_ready, "gemm"):
            return None
        try:
            return gemm(self.jit.disk)
        except Exception as e:        # llvmlite failing on this host: never the user's error
            self.jit.gemm = False
            warnings.warn(f"the JIT's GEMM kernel is unavailable, products use NumPy's BLAS: "
                          f"{type(e).__name__}: {e}", RuntimeWarning, stacklevel=2)
            return None

    def _helper_ready(self, get, ready, name: str) -> bool:
        """Whether a per-process helper kernel (the GEMM, the max pool) is built; if not, its
        build is queued on the background compiler and this call uses NumPy or the op's
        reference meanwhile (a failed build is then reported by the next call's `get`)."""
        if ready() or name in _HELPERS_FAILED:
            return True
        bg = background_compiler.compiler()
        key = ("helper", name)
        if not bg.pending(key):
            disk = self.jit.disk

            def build():
                try:
                    get(disk)
                except Exception:   # noqa: BLE001 - the next call's get() reports it, once
                    _HELPERS_FAILED.add(name)
            bg.submit(key, build)
        return False

    def _head_buffer(self, call: _Call, dtype) -> np.ndarray:
        """Where a head writes its result: the output it becomes (one nobody holds), or a
        buffer of the call's own that the epilogue kernel reads."""
        if call.mm_out >= 0:
            return self._free_buffer(call, call.mm_out, call.mm_shape)
        if call.mm_buf is None:
            call.mm_buf = np.empty(call.mm_shape, dtype)
        return call.mm_buf

    def _maxpool(self):
        """The native max-pool kernel, or None where it cannot be built on this host (after
        one warning; the op's reference then runs)."""
        if self.jit.maxpool_failed:
            return None
        if self.background and not self._helper_ready(maxpool.kernel, maxpool.kernel_ready, "maxpool"):
            return None
        try:
            return maxpool.kernel(self.jit.disk)
        except Exception as e:        # llvmlite failing on this host: never the user's error
            self.jit.maxpool_failed = True
            warnings.warn(f"the JIT's max-pool kernel is unavailable, maxpool2d runs its reference: "
                          f"{type(e).__name__}: {e}", RuntimeWarning, stacklevel=2)
            return None

    def _conv(self, call: _Call, operands: list[np.ndarray], g, args: list[np.ndarray]) -> np.ndarray:
        """An f32 conv2d head by the JIT's GEMM (jit/conv.py), into a reused buffer, with the
        region's epilogue where the kernel's store applies it."""
        if call.conv_plan is None:
            try:
                call.conv_plan = conv.ConvPlan(operands[0].shape, operands[1].shape, self._head_attrs)
            except ValueError as e:
                raise Decline(str(e)) from None
        out = self._head_buffer(call, np.float32)
        bias = operands[2] if len(operands) > 2 else None
        relu = False
        if call.store is not None:       # (store_epilogue.for_call: never two biases)
            relu = call.store.relu
            if call.store.source is not None:
                bias = args[call.store.source]
        w = operands[1]
        which, matrix = call.conv_plan.weights(w)
        wm = self._prepacked(g, self._head_args[1], w, which, matrix)
        return call.conv_plan.run(operands[0], w, bias, out, g, self.jit.threads, wm, relu=relu)

    def _prepacked(self, g, index: int, x: np.ndarray, which: str, matrix: np.ndarray | None = None):
        """A constant operand x (weights) packed once for the GEMM kernel (as `matrix`, its
        2-D view, when given); other operands as they are."""
        if not isinstance(self.region.inputs[index], ConstRef):
            return x if matrix is None else matrix
        hit = self._packs.get((index, which))
        if hit is None or hit[0] is not x:     # a module's constant is one array, never written
            hit = self._packs[(index, which)] = (x, g.pack(x if matrix is None else matrix, which))
        return hit[1]

    def _matmul(self, call: _Call, args: list[np.ndarray]) -> np.ndarray:
        a, b = args[self._mm[0]], args[self._mm[1]]
        if call.mm_out >= 0:
            out = call.bufs[call.mm_out]
        else:
            if call.mm_buf is None:
                call.mm_buf = np.empty(call.mm_shape, a.dtype)
            out = call.mm_buf
        if a.ndim > 2 and b.ndim == 2:
            # a stack of rows times one matrix is one 2-D product; np.matmul with out= on a
            # stacked operand loops over the stack outside BLAS (3-4x slower for MiniLM's
            # [1, 32, 384] x [384, 1536])
            if not a.flags.c_contiguous:
                # a transposed stack (seq-first attention's [1500, 8, 384] in-projection) is
                # copied whole into a buffer kept for the shape: one pass over a, where the
                # stacked product ran 1500 products of 8 rows (286 -> 83 ms)
                if call.mm_rows is None:
                    call.mm_rows = np.empty(a.shape, a.dtype)
                np.copyto(call.mm_rows, a)
                a = call.mm_rows
            # (the row count spelled out: reshape cannot infer -1 when a dim is 0, K = 0 or N = 0)
            rows = math.prod(a.shape[:-1])
            a, o2 = a.reshape(rows, a.shape[-1]), out.reshape(rows, out.shape[-1])
        else:
            o2 = out
        g = None
        if a.ndim == 2 and b.ndim == 2 and a.dtype == np.float32 and self.jit.gemm and \
                use_gemm(a.shape[0], b.shape[1], a.shape[1]):
            g = self._gemm()
        if g is not None:
            epi = call.store.epilogue(args) if call.store is not None else None
            g.matmul(a, self._prepacked(g, self._mm[1], b, "b"), o2, self.jit.threads, epilogue=epi)
        else:
            # a small product on NumPy's BLAS runs on one of its threads: more gain little, and
            # they busy-wait after the call on the cores the JIT's pool needs next (ResNet-18's
            # classifier, MiniLM's attention products: jit/blas_threads.py)
            small = math.prod(o2.shape) * a.shape[-1] < PARALLEL_MACS
            with blas_threads.limited(self.jit.blas_threads if small else None):
                np.matmul(a, b, out=o2)
            if call.store is not None:
                call.store.apply(o2, args)
        return out

    # ---- introspection -------------------------------------------------------------------

    def describe(self) -> dict:
        r = self.region
        return {
            "region": f"@{r.func} block {r.block} [{r.start}, {r.end})",
            "kind": r.kind,
            "kernel": self.kernel.name if self.kernel else None,
            "variants": [{"spec": s.text().strip(), "compile_ms": round(c.compile_ms, 3), "source": c.source}
                         for s, c in self.variants.items()],
            "calls": self.calls,
            "compiled_calls": self.compiled_calls,
            "fallbacks": self.fallbacks,
            "last_fallback_reason": self.last_reason,
            "compiling": len(self._compiling),
            "compile_errors": sorted(set(self.compile_errors.values())),
            "output_allocations": self.allocations,
            "threads": len(self._last.bounds) if self._last else None,
        }

    def _last_spec(self) -> Spec:
        if self._last is None:
            raise RuntimeError("the region has not run compiled yet; no variant to show")
        return self._last.plan.spec

    def kernel_ir(self) -> str:
        self._build()
        text = self.kernel.text()
        return text + (self._last.plan.spec.text() if self._last else "")

    def llvm_ir(self) -> str:
        return optimized_ir(self.kernel, self._last_spec(), self.jit.opt_level)

    def asm(self) -> str:
        return assembly(self.kernel, self._last_spec(), self.jit.opt_level)
