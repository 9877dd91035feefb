"""CUDA kernels from the kernel IR: one `ptx_kernel` function per (kernel, Spec) variant.

The scalar work of each node is the CPU JIT's own lowering table (`jit.llvm.ops.lower_op`, with
libdevice as the math provider); only the iteration structure is GPU-specific:

- elementwise kernels: a grid-stride loop over the linear index of the domain; each thread
  splits the index into domain coordinates and each endpoint's offset is the dot product of the
  coordinates it varies along with its strides.
- row kernels (any reduction): one block per row (a block-uniform grid-stride loop over rows);
  a row is walked in passes, one per reduction depth (softmax: max, then sum, then the output),
  threads stride over the row's elements, and each reduction ends with a warp-shuffle tree
  (`shfl.sync.bfly`) and a shared-memory step across warps whose result every thread reads.

Kernel parameters: input pointers, output pointers, a u32 status word (bits TRAP and RANGE of
`jit.llvm.ops`, set with an atomic or), then the i64 domain sizes and the per-endpoint strides of
`jit.plan.Plan.dims`, passed by value so a launch needs no extra copy.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from llvmlite import ir

from isa.dtypes import DType
from isa.ops import OPS
from jit.kernel_ir import REDUCE_KINDS, Kernel
from jit.llvm.irutil import I32, I64, PTR, const, for_range, mem_type, reg_type
from jit.llvm.ops import LowerCtx, load_value, store_value
from jit.plan import Spec

from .mathlib import LibdeviceMath, lower_gpu_op
from .target import DATA_LAYOUT, TRIPLE

BLOCK = 256                 # threads per block of both kinds (a multiple of the warp size)
WARP = 32
MAX_GRID = 65535 * 16       # grid-stride loops cover whatever lies beyond
SHARED = 3                  # NVPTX address space of __shared__ memory


@dataclass(frozen=True)
class CudaKernel:
    """One compiled variant: the LLVM IR of its module and how to launch it."""
    name: str
    llvm_ir: str
    rows: bool                  # a row kernel (one block per row) or an elementwise one
    spec: Spec
    n_inputs: int
    n_outputs: int


def kernel_name(kernel: Kernel, spec: Spec) -> str:
    """The PTX entry name: the kernel's name made an identifier, plus a hash of the variant."""
    base = re.sub(r"[^A-Za-z0-9_]", "_", kernel.name)
    tag = hashlib.sha1((kernel.text() + spec.text()).encode()).hexdigest()[:8]
    return f"dlvm_{base}_{tag}"


def launch_dims(rows_kernel: bool, rows: int, elements: int, inner_total: int,
                block: int = BLOCK) -> tuple[int, int]:
    """(grid, block) of a launch. Row kernels use at most one warp per 32 row elements."""
    if rows_kernel:
        threads = min(block, max(WARP, -(-inner_total // WARP) * WARP))
        return max(1, min(rows, MAX_GRID)), threads
    return max(1, min(-(-elements // block), MAX_GRID)), block


def _sreg(mod: ir.Module, name: str) -> ir.Function:
    full = f"llvm.nvvm.read.ptx.sreg.{name}"
    if full in mod.globals:
        return mod.globals[full]
    return ir.Function(mod, ir.FunctionType(I32, []), name=full)


def _identity(kind: str, d: DType) -> ir.Constant:
    t = reg_type(d)
    if kind == "reduce_sum":
        return const(t, 0)
    if kind == "reduce_prod":
        return const(t, 1)
    big = kind == "reduce_min"       # min starts at the largest value, max at the smallest
    if d.is_float:
        return const(t, float("inf") if big else float("-inf"))
    if d.is_bool:
        return const(t, 1 if big else 0)
    bits = t.width
    if d.is_signed:
        return const(t, (1 << (bits - 1)) - 1 if big else -(1 << (bits - 1)))
    return const(t, (1 << bits) - 1 if big else 0)


class _Emitter:
    def __init__(self, kernel: Kernel, spec: Spec, name: str):
        self.k, self.spec, self.name = kernel, spec, name
        self.mod = ir.Module(name=name)
        self.mod.triple = TRIPLE
        self.mod.data_layout = DATA_LAYOUT
        n_in, n_out, rank = len(kernel.inputs), len(kernel.outputs), spec.rank
        self.n_ends = n_in + n_out
        params = [PTR] * (self.n_ends + 1) + [I64] * (rank + rank * self.n_ends)
        self.fn = ir.Function(self.mod, ir.FunctionType(ir.VoidType(), params), name=name)
        self.fn.calling_convention = "ptx_kernel"
        args = list(self.fn.args)
        self.ptrs = args[:self.n_ends]
        self.status = args[self.n_ends]
        dims = args[self.n_ends + 1:]
        self.sizes = dims[:rank]
        self.strides = [dims[rank + e * rank: rank + (e + 1) * rank] for e in range(self.n_ends)]
        self.patterns = list(spec.inputs) + list(spec.outputs)
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.ctx = LowerCtx(self.mod, LibdeviceMath(self.mod), self._set_status)

    # -- helpers -------------------------------------------------------------------------------

    def _set_status(self, b: ir.IRBuilder, cond: ir.Value, bit: int) -> None:
        with b.if_then(cond, likely=False):
            b.atomic_rmw("or", self.status, const(I32, bit), "monotonic")

    def sreg(self, name: str) -> ir.Value:
        return self.b.zext(self.b.call(_sreg(self.mod, name), []), I64)

    def product(self, axes: list[int]) -> ir.Value:
        acc: ir.Value = const(I64, 1)
        for ax in axes:
            acc = self.b.mul(acc, self.sizes[ax])
        return acc

    def coords(self, lin: ir.Value, axes: list[int]) -> dict[int, ir.Value]:
        """Split linear index `lin` over `axes` (row-major; the first axis takes the rest)."""
        out: dict[int, ir.Value] = {}
        rem = lin
        for ax in reversed(axes[1:]):
            out[ax] = self.b.urem(rem, self.sizes[ax])
            rem = self.b.udiv(rem, self.sizes[ax])
        if axes:
            out[axes[0]] = rem
        return out

    def offsets(self, coords: dict[int, ir.Value], base: list[ir.Value] | None = None) -> list[ir.Value]:
        res = []
        for e in range(self.n_ends):
            acc: ir.Value = base[e] if base is not None else const(I64, 0)
            for ax, c in coords.items():
                if self.patterns[e][ax]:
                    acc = self.b.add(acc, self.b.mul(c, self.strides[e][ax]))
            res.append(acc)
        return res

    def value(self, i: int, cache: dict[int, ir.Value], offs: list[ir.Value]) -> ir.Value:
        """IR of node `i` at the point whose endpoint offsets are `offs` (memoized in `cache`)."""
        if i in cache:
            return cache[i]
        n = self.k.nodes[i]
        b = self.b
        if n.op == "load":
            ptr = b.gep(self.ptrs[n.attr], [offs[n.attr]], source_etype=mem_type(n.dtype))
            v = load_value(b, ptr, n.dtype)
        elif n.op == "const":
            v = const(reg_type(n.dtype), n.attr)
        elif n.op == "count":
            total = self.product(list(range(self.spec.outer, self.spec.rank)))
            t = reg_type(n.dtype)
            if n.dtype.is_float:
                v = b.sitofp(total, t)
            else:
                v = b.trunc(total, t) if t.width < 64 else total
        elif n.op in REDUCE_KINDS:
            raise AssertionError(f"reduction v{i} used before its pass")   # the phases prevent this
        else:
            args = [self.value(a, cache, offs) for a in n.args]
            dts = [self.k.nodes[a].dtype for a in n.args]
            v = lower_gpu_op(self.ctx, b, n.op, n.dtype, dts, args, n.attr)
        cache[i] = v
        return v

    def store(self, out: int, v: ir.Value, offs: list[ir.Value]) -> None:
        o = self.k.outputs[out]
        e = len(self.k.inputs) + out
        store_value(self.b, v, self.b.gep(self.ptrs[e], [offs[e]], source_etype=mem_type(o.dtype)), o.dtype)

    # -- elementwise ---------------------------------------------------------------------------

    def elementwise(self) -> None:
        b = self.b
        gid = b.add(b.mul(self.sreg("ctaid.x"), self.sreg("ntid.x")), self.sreg("tid.x"))
        step = b.mul(self.sreg("nctaid.x"), self.sreg("ntid.x"))
        axes = list(range(self.spec.rank))
        total = self.product(axes)
        with for_range(b, gid, total, "i", step=step) as lin:
            offs = self.offsets(self.coords(lin, axes))
            cache: dict[int, ir.Value] = {}
            for oi, o in enumerate(self.k.outputs):
                self.store(oi, self.value(o.node, cache, offs), offs)
        b.ret_void()

    # -- rows ------------------------------------------------------------------------------------

    def phases(self) -> list[int]:
        ph: list[int] = []
        for n in self.k.nodes:
            p = max((ph[a] for a in n.args), default=0)
            ph.append(p + 1 if n.op in REDUCE_KINDS else p)
        return ph

    def rows(self) -> None:
        b, k, spec = self.b, self.k, self.spec
        outer = list(range(spec.outer))
        inner = list(range(spec.outer, spec.rank))
        phase = self.phases()
        reds = k.reductions
        accs = {r: b.alloca(reg_type(k.nodes[r].dtype), name=f"acc{r}") for r in reds}
        tid, ntid = self.sreg("tid.x"), self.sreg("ntid.x")
        row_level = [not any(self.patterns[len(k.inputs) + oi][ax] for ax in inner)
                     for oi in range(len(k.outputs))]
        n_passes = max((phase[r] for r in reds), default=0) + (0 if all(row_level) else 1)
        rows = self.product(outer)
        inner_total = self.product(inner)
        with for_range(b, self.sreg("ctaid.x"), rows, "row", step=self.sreg("nctaid.x")) as row:
            base = self.offsets(self.coords(row, outer))
            done: dict[int, ir.Value] = {}            # reductions of this row, by node
            for p in range(n_passes):
                now = [r for r in reds if phase[r] == p + 1]
                for r in now:
                    b.store(_identity(k.nodes[r].op, k.nodes[r].dtype), accs[r])
                with for_range(b, tid, inner_total, f"j{p}", step=ntid) as j:
                    offs = self.offsets(self.coords(j, inner), base)
                    cache = dict(done)
                    for r in now:
                        n = k.nodes[r]
                        v = self.value(n.args[0], cache, offs)
                        acc = b.load(accs[r], typ=reg_type(n.dtype))
                        b.store(self.combine(n.op, n.dtype, acc, v), accs[r])
                    if p == n_passes - 1:
                        for oi, o in enumerate(k.outputs):
                            if not row_level[oi]:
                                self.store(oi, self.value(o.node, cache, offs), offs)
                for r in now:
                    n = k.nodes[r]
                    done[r] = self.block_reduce(r, n.op, n.dtype, b.load(accs[r], typ=reg_type(n.dtype)), tid)
            if any(row_level):
                with b.if_then(b.icmp_unsigned("==", tid, const(I64, 0))):
                    cache = dict(done)
                    for oi, o in enumerate(k.outputs):
                        if row_level[oi]:
                            self.store(oi, self.value(o.node, cache, base), base)
            # the next row's first reduction must not overwrite shared slots still being read
            self.barrier()
        b.ret_void()

    def combine(self, kind: str, d: DType, acc: ir.Value, v: ir.Value) -> ir.Value:
        return lower_gpu_op(self.ctx, self.b, OPS[kind].facts.combine, d, [d, d], [acc, v], None)

    def barrier(self) -> None:
        name = "llvm.nvvm.barrier0"
        fn = self.mod.globals.get(name)
        if fn is None:
            fn = ir.Function(self.mod, ir.FunctionType(ir.VoidType(), []), name=name)
        self.b.call(fn, [])

    def shuffle(self, v: ir.Value, lane_mask: int) -> ir.Value:
        """shfl.sync.bfly of any scalar: split into 32-bit words, shuffle each, reassemble."""
        b = self.b
        name = "llvm.nvvm.shfl.sync.bfly.i32"
        fn = self.mod.globals.get(name) or ir.Function(self.mod, ir.FunctionType(I32, [I32] * 4), name=name)

        def shfl(word: ir.Value) -> ir.Value:
            return b.call(fn, [const(I32, -1), word, const(I32, lane_mask), const(I32, 0x1F)])
        t = v.type
        width = 64 if isinstance(t, ir.DoubleType) else 32 if isinstance(t, ir.FloatType) else t.width
        as_int = v if isinstance(t, ir.IntType) else b.bitcast(v, ir.IntType(width))
        if width == 64:
            lo = shfl(b.trunc(as_int, I32))
            hi = shfl(b.trunc(b.lshr(as_int, const(I64, 32)), I32))
            word = b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), const(I64, 32)))
        elif width == 32:
            word = shfl(as_int)
        else:
            word = b.trunc(shfl(b.zext(as_int, I32)), ir.IntType(width))
        return b.bitcast(word, t) if word.type != t else word

    def warp_reduce(self, kind: str, d: DType, v: ir.Value) -> ir.Value:
        for lane_mask in (16, 8, 4, 2, 1):
            v = self.combine(kind, d, v, self.shuffle(v, lane_mask))
        return v

    def block_reduce(self, r: int, kind: str, d: DType, v: ir.Value, tid: ir.Value) -> ir.Value:
        """Fold each thread's `v` across the block; every thread gets the result."""
        b = self.b
        t = reg_type(d)
        slots = ir.GlobalVariable(self.mod, ir.ArrayType(t, WARP + 1), name=f"red{r}", addrspace=SHARED)
        slots.linkage = "internal"
        slots.initializer = ir.Constant(ir.ArrayType(t, WARP + 1), None)

        def slot(i: ir.Value) -> ir.Value:
            return b.gep(slots, [const(I64, 0), i])
        v = self.warp_reduce(kind, d, v)
        lane = b.urem(tid, const(I64, WARP))
        warp = b.udiv(tid, const(I64, WARP))
        with b.if_then(b.icmp_unsigned("==", lane, const(I64, 0))):
            b.store(v, slot(warp))
        self.barrier()
        nwarps = b.udiv(self.sreg("ntid.x"), const(I64, WARP))
        with b.if_then(b.icmp_unsigned("==", warp, const(I64, 0))):
            mine = b.load(slot(lane), typ=t)
            w = b.select(b.icmp_unsigned("<", lane, nwarps), mine, _identity(kind, d))
            w = self.warp_reduce(kind, d, w)
            with b.if_then(b.icmp_unsigned("==", lane, const(I64, 0))):
                b.store(w, slot(const(I64, WARP)))
        self.barrier()
        return b.load(slot(const(I64, WARP)), typ=t)


def _ieee_divisions(mod: ir.Module) -> None:
    """Drop `arcp`/`afn` from fdiv (and frem): NVPTX turns them into div.approx.f32, which is off by more
    than an ulp and wrong for divisors above 2^126; NumPy divides exactly rounded."""
    for fn in mod.functions:
        for blk in fn.blocks:
            for ins in blk.instructions:
                if getattr(ins, "opname", "") in ("fdiv", "frem"):
                    ins.flags = [f for f in ins.flags if f not in ("arcp", "afn")]


def build_cuda_kernel(kernel: Kernel, spec: Spec) -> CudaKernel:
    """The LLVM module (NVPTX triple and data layout) of one variant of `kernel`.

    Raises NotImplementedError for a primitive or dtype the GPU lowering lacks."""
    for n in kernel.nodes:
        if n.dtype is DType.F16:      # (the CPU holds f16 in float registers; not written here)
            raise NotImplementedError("the CUDA JIT has no kernels for f16")
        reg_type(n.dtype)     # the narrow formats: NotImplementedError, as on the CPU
    name = kernel_name(kernel, spec)
    em = _Emitter(kernel, spec, name)
    if kernel.reductions:
        em.rows()
    else:
        em.elementwise()
    _ieee_divisions(em.mod)
    return CudaKernel(name, str(em.mod), bool(kernel.reductions), spec, len(kernel.inputs),
                      len(kernel.outputs))
