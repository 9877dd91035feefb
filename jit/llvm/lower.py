"""Lower a kernel (kernel IR + variant Spec) to an LLVM module with one function:

    i32 @k(i64 start, i64 stop, ptr dims, ptr scratch, ptr noalias in0, ..., ptr noalias out0, ...)

The function loops over domain axis 0 from `start` to `stop` (the runner splits that range across
threads), then over the other outer axes; per row it runs one inner loop nest per reduction
depth (phase), accumulating the reductions of that depth, and a last nest that stores the full
outputs. Values needed by a later phase are recomputed there, except reduction operands that
involve a math function, which are kept in a per-thread scratch row. Nodes that do not vary along
the inner axes are computed once per row. The result is a status word (see ops.TRAP, ops.RANGE).

On hosts with AVX-512BW (target.vector_lanes) the loop over the last axis is written here as
vector code, one register of lanes per trip, with no scalar remainder loop (see _vloop): nodes
that vary along that axis are vectors, the others scalars splat where a vector needs them, and
reductions keep per-lane accumulators reduced across lanes at the end of a phase. Such modules
skip LLVM's loop vectorizer and O3 pipeline (target._light_pipeline): a region compiles in about
half the time. Elsewhere the loops are scalar and LLVM vectorizes them.
"""
from __future__ import annotations

import math

from llvmlite import ir

from isa.dtypes import DType
from isa.ops import OPS

from ..kernel_ir import REDUCE_KINDS, Kernel
from ..plan import Spec
from .irutil import (
    F32,
    F64,
    I1,
    I8,
    I32,
    I64,
    PTR,
    REDUCE_FLAGS,
    SplatConstant,
    const,
    for_range,
    intrinsic,
    loop_hints,
    mem_type,
    reg_type,
    splat,
    type_suffix,
)
from .mathfn import MathLib
from .ops import DIV_FLAGS, LowerCtx, load_value, lower_op, store_value
from .target import VECTORIZED, vector_lanes

# Elements of the innermost axis an f32 sum accumulates in f32 before adding into its f64 total:
# the vector loop then runs at full f32 width (an f64 accumulator halves it), and a chunk's sum,
# split by the vectorizer over 16-64 partial sums, has only a few additions per partial sum.
CHUNK = 256
# ops that are a math-library call or polynomial, not one instruction (their op records say so)
MATH_OPS = frozenset(name for name, op in OPS.items() if op.facts.costly)


class _VLoop:
    """A vector loop being built (see _KernelLowering._vloop): its blocks and the streams (the
    inputs, outputs and cached rows that vary along its axis) it reads and writes, each
    addressed from a base pointer chosen per block of lanes: the row, or for the last,
    partial block a stack buffer."""

    def __init__(self, pre: ir.Block, first: list[ir.Value]):
        self.pre, self.first = pre, first       # preheader; index of the loop's first element
        self.head: ir.Block | None = None       # per block: offsets, row pointers, lane mask
        self.body: ir.Block | None = None       # per block: base pointer phis, then the body
        self.off: ir.Value | None = None        # the block's first element, from `first`
        self.partial: ir.Value | None = None    # is this the last, partial block
        self.t: ir.Value | None = None          # lanes in the partial block
        self.mask: ir.Value | None = None       # the partial block's lanes (reduction loops)
        self.shared = True                      # the partial block runs as a trip of the loop
        self.bases: dict[tuple, ir.PhiInstr] = {}
        self.rows: dict[tuple, ir.Value] = {}       # key -> the row's pointer at the loop's start
        self.bufs: dict[tuple, tuple[ir.Value, ir.Type]] = {}
        self.read: set[tuple] = set()
        self.written: set[tuple] = set()


def _elem_bytes(t: ir.Type) -> int:
    if isinstance(t, ir.HalfType):
        return 2
    return t.width // 8 if isinstance(t, ir.IntType) else 8 if t == F64 else 4


def _node_info(kernel: Kernel, spec: Spec) -> tuple[list[bool], list[int]]:
    """Per node: does it vary along the inner axes, and its reduction depth."""
    full: list[bool] = []
    depth: list[int] = []
    for n in kernel.nodes:
        if n.op == "load":
            full.append(any(spec.inputs[n.attr][spec.outer:]))
            depth.append(0)
        elif n.op in REDUCE_KINDS:
            full.append(False)
            depth.append(1 + depth[n.args[0]])
        else:
            full.append(any(full[a] for a in n.args))
            depth.append(max((depth[a] for a in n.args), default=0))
    return full, depth


class _KernelLowering:
    def __init__(self, kernel: Kernel, spec: Spec, name: str):
        self.k, self.spec = kernel, spec
        self.mod = ir.Module(name=name)
        self.full, self.depth = _node_info(kernel, spec)
        self.rank = spec.rank
        n_out_args = sum(1 for j in range(len(kernel.outputs)) if not self._aliased(j))
        argtys = [I64, I64, PTR, PTR] + [PTR] * (len(kernel.inputs) + n_out_args)
        self.fn = ir.Function(self.mod, ir.FunctionType(I32, argtys), name=name)
        for a in self.fn.args[4:]:
            a.add_attribute("noalias")
        b = self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        # explicit vector loops of `lanes` elements (None: scalar loops that LLVM vectorizes)
        self.lanes = vector_lanes(kernel, spec)
        self.vec = self._vec_info() if self.lanes else None
        self._vl: _VLoop | None = None
        self._iota: ir.Value | None = None
        if self.lanes:
            self.mod.add_named_metadata(VECTORIZED, [ir.MetaDataString(self.mod, str(self.lanes))])
        self.status = b.alloca(I32, name="status")
        b.store(const(I32, 0), self.status)
        self.math = MathLib(self.mod, self.set_status)
        self.ctx = LowerCtx(self.mod, self.math, self.set_status)
        start, stop, dims, self.scratch = self.fn.args[:4]
        self.start, self.stop = start, stop
        self.sizes = [self._dim(dims, ax) for ax in range(self.rank)]
        ptrs = list(self.fn.args[4:])
        self.in_ptrs = ptrs[:len(kernel.inputs)]
        rest = iter(ptrs[len(kernel.inputs):])
        self.out_ptrs = [self.in_ptrs[spec.inplace[j]] if self._aliased(j) else next(rest)
                         for j in range(len(kernel.outputs))]
        self.strides = []
        n_end = len(kernel.inputs) + len(kernel.outputs)
        pats = list(spec.inputs) + list(spec.outputs)
        for e in range(n_end):
            row = []
            for ax in range(self.rank):
                if not pats[e][ax]:
                    row.append(None)
                elif ax == self.rank - 1:
                    row.append(const(I64, 1))           # contiguous: the vectorizer sees it
                else:
                    row.append(self._dim(dims, self.rank + e * self.rank + ax))
            self.strides.append(row)
        for j in range(len(kernel.outputs)):
            if self._aliased(j):
                # an output written in place of an input has the same pattern, shape and so the
                # same strides: sharing the input's stride values lets LLVM see that each element
                # is read and then written at one address. With separately loaded strides it
                # cannot tell, adds a run-time overlap check that always fails (same buffer) and
                # runs the scalar loop: 8x slower for MiniLM's GELU epilogue.
                self.strides[len(kernel.inputs) + j] = self.strides[spec.inplace[j]]
        # Short rows: LLVM interleaves 4 vector iterations (64 f32 elements per trip), so rows
        # shorter than that ran entirely in the scalar remainder loop (a [.., 32] attention
        # softmax 5x slower, with exp and a maximum chain per element). Without interleaving the
        # vector loop takes 16; long rows keep it (softmax [4096, 1024] is 30% faster with it).
        self._no_interleave = loop_hints(self.mod, interleave_count=1) if spec.short_rows else None
        self.recips: dict[int, ir.Value] = {}     # div node -> 1/divisor (see _reciprocals)
        self.accs: dict[int, ir.AllocaInstr] = {}
        for i in kernel.reductions:
            self.accs[i] = b.alloca(self._acc_type(i), name=f"acc{i}")
        # f32 partial sums of one chunk of the innermost axis (see _nest)
        self.chunk_accs = {i: b.alloca(F32, name=f"chunk{i}") for i in kernel.reductions
                           if self._acc_type(i) != reg_type(kernel.nodes[i].dtype)}
        # float max/min: "was a NaN seen" per row, kept apart from the accumulator (see _combine)
        self.nan_seen = {i: b.alloca(I1, name=f"nan{i}") for i in kernel.reductions
                         if kernel.nodes[i].op in ("reduce_max", "reduce_min")
                         and kernel.nodes[i].dtype.is_float}
        # vector loops: per-lane accumulators, reduced across lanes at the end of a phase (a
        # chunk for f32 sums)
        self.vaccs: dict[int, ir.AllocaInstr] = {}
        self.vnan: dict[int, ir.AllocaInstr] = {}
        if self.lanes:
            for i in kernel.reductions:
                self.vaccs[i] = b.alloca(self._vacc_type(i), name=f"vacc{i}")
                if i in self.nan_seen:
                    self.vnan[i] = b.alloca(ir.VectorType(I1, self.lanes), name=f"vnan{i}")

    def _aliased(self, j: int) -> bool:
        return bool(self.spec.inplace) and self.spec.inplace[j] >= 0

    def _dim(self, dims, i: int):
        return self.b.load(self.b.gep(dims, [const(I64, i)], inbounds=True, source_etype=I64), typ=I64)

    def set_status(self, b: ir.IRBuilder, cond: ir.Value, bit: int) -> None:
        if isinstance(cond.type, ir.VectorType):
            cond = self._reduce("llvm.vector.reduce.or", cond)
        old = b.load(self.status, typ=I32)
        b.store(b.or_(old, b.select(cond, const(I32, bit), const(I32, 0))), self.status)

    # ---- reductions ---------------------------------------------------------------------

    def _acc_type(self, i: int) -> ir.Type:
        n = self.k.nodes[i]
        if n.dtype == DType.F32 and n.op in ("reduce_sum", "reduce_prod"):
            return F64     # f32 sums accumulate in double: accurate for long rows
        return reg_type(n.dtype)

    def _acc_init(self, i: int) -> ir.Constant:
        n = self.k.nodes[i]
        t = self._acc_type(i)
        if n.op == "reduce_sum":
            return const(t, 0)
        if n.op == "reduce_prod":
            return const(t, 1)
        big = n.op == "reduce_min"
        if n.dtype.is_float:
            return const(t, float("inf") if big else float("-inf"))
        w = t.width
        if n.dtype.is_signed:
            return const(t, (1 << (w - 1)) - 1 if big else -(1 << (w - 1)))
        return const(t, (1 << w) - 1 if big else 0)

    def _combine(self, i: int, acc: ir.Value, v: ir.Value) -> ir.Value:
        b, n = self.b, self.k.nodes[i]
        if v.type != acc.type:
            v = b.fpext(v, acc.type)
        fl = n.dtype.is_float
        if n.op == "reduce_sum":
            return b.fadd(acc, v, flags=REDUCE_FLAGS) if fl else b.add(acc, v)
        if n.op == "reduce_prod":
            return b.fmul(acc, v, flags=REDUCE_FLAGS) if fl else b.mul(acc, v)
        if fl:
            # maxnum with nnan: one vmaxps per vector. A NaN operand makes the accumulator
            # poison, but the row's NaN flag (nan_seen, one unordered compare per vector) is then
            # set and the row's result selects NaN instead (end of the phase in _row), so poison
            # never escapes (a select's unchosen operand may be poison). The NaN-propagating
            # llvm.maximum took a compare, two blends and a serial chain per vector.
            name = "llvm.maxnum" if n.op == "reduce_max" else "llvm.minnum"
            fn = intrinsic(self.mod, name, acc.type, [acc.type, acc.type])
            return b.call(fn, [acc, v], fastmath=("nnan", "nsz"))
        s = "s" if n.dtype.is_signed else "u"
        name = f"llvm.{s}max" if n.op == "reduce_max" else f"llvm.{s}min"
        return b.call(intrinsic(self.mod, name, acc.type, [acc.type, acc.type]), [acc, v])

    def _vacc_type(self, i: int) -> ir.Type:
        """The per-lane accumulator of reduction i in a vector loop (f32 sums: a chunk's)."""
        n = self.k.nodes[i]
        lane = F32 if i in self.chunk_accs else self._acc_type(i)
        return ir.VectorType(lane if n.dtype.is_float or i in self.chunk_accs else reg_type(n.dtype),
                             self.lanes)

    def _vacc_init(self, i: int) -> ir.Constant:
        t = self._vacc_type(i)
        if i in self.chunk_accs:
            return const(t, 1.0 if self.k.nodes[i].op == "reduce_prod" else 0.0)
        return SplatConstant(t, self._acc_init(i))

    def _reduce(self, name: str, v: ir.Value, start: ir.Value | None = None, fastmath=()):
        """llvm.vector.reduce.*: one value from the lanes of v (with `start`: fadd, fmul)."""
        t = v.type.element
        args = ([start.type] if start is not None else []) + [v.type]
        fn = intrinsic(self.mod, name, t, args, suffix=type_suffix(v.type))
        return self.b.call(fn, ([start] if start is not None else []) + [v], fastmath=fastmath)

    def _lanes_reduce(self, i: int, v: ir.Value) -> ir.Value:
        """Reduction i of the lanes of its vector accumulator v, as one value."""
        n = self.k.nodes[i]
        t = v.type.element
        if n.op in ("reduce_sum", "reduce_prod"):
            if n.dtype.is_float or i in self.chunk_accs:
                name = "fadd" if n.op == "reduce_sum" else "fmul"
                return self._reduce(f"llvm.vector.reduce.{name}", v, const(t, 0.0 if name == "fadd" else 1.0),
                                    REDUCE_FLAGS)
            return self._reduce(f"llvm.vector.reduce.{'add' if n.op == 'reduce_sum' else 'mul'}", v)
        big = n.op == "reduce_max"
        if n.dtype.is_float:
            name = "fmax" if big else "fmin"
            return self._reduce(f"llvm.vector.reduce.{name}", v, fastmath=("nnan", "nsz"))
        s = "s" if n.dtype.is_signed else "u"
        return self._reduce(f"llvm.vector.reduce.{s}{'max' if big else 'min'}", v)

    # ---- values ------------------------------------------------------------------------

    def _vec_info(self) -> list[bool]:
        """Per node: does it vary along the last domain axis (the vector loop's)?"""
        last = self.rank - 1
        vec: list[bool] = []
        for n in self.k.nodes:
            if n.op == "load":
                vec.append(self.spec.inputs[n.attr][last])
            elif n.op in REDUCE_KINDS or not n.args:
                vec.append(False)
            else:
                vec.append(any(vec[a] for a in n.args))
        return vec

    def _offset(self, e: int, idx: list[ir.Value]):
        b = self.b
        off = None
        for ax, st in enumerate(self.strides[e]):
            if st is None or ax >= len(idx):
                continue
            term = idx[ax] if isinstance(st, ir.Constant) and st.constant == 1 else b.mul(idx[ax], st)
            off = term if off is None else b.add(off, term)
        return off if off is not None else const(I64, 0)

    def _compute(self, i: int, vals: dict[int, ir.Value], idx: list[ir.Value]) -> ir.Value:
        """IR for node i, its arguments already in `vals`."""
        n, b = self.k.nodes[i], self.b
        if n.op == "load":
            e, d = n.attr, self.k.inputs[n.attr].dtype
            key = self._stream_key(e)
            p = self._elem_ptr(key, mem_type(d), idx, True,
                               lambda ix: b.gep(self.in_ptrs[e], [self._offset(e, ix)], inbounds=True,
                                                source_etype=mem_type(d)))
            return load_value(b, p, d, self.lanes if key is not None and self._vl is not None else None)
        if n.op == "const":
            return const(reg_type(n.dtype), n.attr)
        if n.op == "count":
            total = const(I64, 1)
            for ax in range(self.spec.outer, self.rank):
                total = b.mul(total, self.sizes[ax])
            t = reg_type(n.dtype)
            return b.sitofp(total, t) if n.dtype.is_float else b.trunc(total, t) if t.width < 64 else total
        if i in self.recips:
            x, r = vals[n.args[0]], self.recips[i]
            if isinstance(x.type, ir.VectorType):
                r = splat(b, r, self.lanes)
            return b.fmul(x, r, flags=DIV_FLAGS)
        if n.op == "exp" and self._exp_of_centered_row(i):
            return self.math.call(b, "exp_le0", [vals[n.args[0]]])
        z = self._sigmoid_arg(i)
        if z is not None:
            arg, want = vals[z], vals[n.args[1]].type
            if isinstance(want, ir.VectorType) and not isinstance(arg.type, ir.VectorType):
                arg = splat(b, arg, self.lanes)
            return self.math.call(b, "sigmoid_of", [arg])
        dts = [self.k.nodes[a].dtype for a in n.args]
        return lower_op(self.ctx, b, n.op, n.dtype, dts, [vals[a] for a in n.args], n.attr)

    def _splat_row_values(self, need: list[int], row_vals: dict[int, ir.Value]) -> dict[int, ir.Value]:
        """The values of a loop body to start from: the row values, and in a vector loop those
        that vector nodes use as vectors, splat once before the loop."""
        vals = dict(row_vals)
        vl = self._vl
        if vl is None:
            return vals
        for i in need:
            n = self.k.nodes[i]
            if self.vec[i] and n.op != "load":
                for a in n.args:
                    if a in row_vals and not isinstance(vals[a].type, ir.VectorType):
                        with self.b.goto_block(vl.pre):
                            vals[a] = splat(self.b, row_vals[a], self.lanes)
        return vals

    def _sigmoid_arg(self, i: int) -> int | None:
        """If node i is 1 / (1 + exp(z)) (sigmoid's expansion, z = -x), the node of z: the
        division then takes the bounded exp of sigmoid_of (the exp and add nodes it bypasses
        are dead unless something else reads them)."""
        nodes = self.k.nodes
        n = nodes[i]
        if n.op != "div" or not n.dtype.is_float or not self._is_one(n.args[0]):
            return None
        d = nodes[n.args[1]]
        if d.op != "add":
            return None
        for one, e in ((d.args[0], d.args[1]), (d.args[1], d.args[0])):
            if self._is_one(one) and nodes[e].op == "exp":
                return nodes[e].args[0]
        return None

    def _is_one(self, j: int) -> bool:
        m = self.k.nodes[j]
        return m.op == "const" and not isinstance(m.attr, (list, tuple)) and m.attr == 1.0

    def _exp_of_centered_row(self, i: int) -> bool:
        """Is node i exp(a - reduce_max(a)) (softmax, log_softmax)? Its argument is then <= 0,
        NaN or -Inf, and the cheaper exp_le0 applies. The reduction keeps its dims, so the
        subtraction pairs every element with the maximum of its own row."""
        nodes = self.k.nodes
        d = nodes[nodes[i].args[0]]
        if d.op != "sub":
            return False
        m = nodes[d.args[1]]
        return m.op == "reduce_max" and bool(m.attr) and m.args[0] == d.args[0]

    def _closure(self, roots: list[int], stop) -> list[int]:
        """Nodes needed for `roots`, not descending below nodes where stop(node) holds."""
        seen: set[int] = set()
        todo = list(roots)
        while todo:
            i = todo.pop()
            if i in seen:
                continue
            seen.add(i)
            if not stop(i):
                todo.extend(self.k.nodes[i].args)
        return sorted(seen)

    def _scratch_ptr(self, slot: int, d: DType, inner_idx: list[ir.Value]):
        b = self.b
        lin = const(I64, 0)
        total = const(I64, 1)
        for ax, iv in zip(range(self.spec.outer, self.rank), inner_idx):
            lin = b.add(b.mul(lin, self.sizes[ax]), iv)
        for ax in range(self.spec.outer, self.rank):
            total = b.mul(total, self.sizes[ax])
        base = b.gep(self.scratch, [b.mul(total, const(I64, 8 * slot))], inbounds=True, source_etype=I8)
        return b.gep(base, [lin], inbounds=True, source_etype=mem_type(d))

    # ---- loops -------------------------------------------------------------------------

    def _nest(self, axes: list[int], body, idx: list[ir.Value], chunked: list[int] = (),
              hints: ir.MDValue | None = None, split: bool = False):
        """Loops over `axes` around `body`. With `chunked` reductions, the last axis is split in
        chunks of CHUNK: they accumulate in f32 within a chunk and add each chunk's partial sum
        to their f64 accumulator (see _acc_type). `hints`: loop metadata of the innermost loop."""
        if not axes:
            body(idx)
            return
        ax = axes[0]
        b = self.b
        lo, hi = (self.start, self.stop) if ax == 0 else (const(I64, 0), self.sizes[ax])
        vector = self.lanes is not None and ax == self.rank - 1
        if chunked and len(axes) == 1:
            n_chunks = b.udiv(b.add(hi, const(I64, CHUNK - 1)), const(I64, CHUNK))
            with for_range(b, const(I64, 0), n_chunks, name=f"c{ax}") as c:
                c_lo = b.mul(c, const(I64, CHUNK))
                c_hi = b.add(c_lo, const(I64, CHUNK))
                c_hi = b.select(b.icmp_signed("<", hi, c_hi), hi, c_hi)
                for i in chunked:
                    if vector:
                        b.store(self._vacc_init(i), self.vaccs[i])
                    b.store(const(F32, 1.0 if self.k.nodes[i].op == "reduce_prod" else 0.0),
                            self.chunk_accs[i])
                if vector:
                    self._vloop(ax, c_lo, c_hi, body, idx, True)
                    for i in chunked:
                        b.store(self._lanes_reduce(i, b.load(self.vaccs[i], typ=self._vacc_type(i))),
                                self.chunk_accs[i])
                else:
                    with for_range(b, c_lo, c_hi, name=f"i{ax}", hints=hints) as iv:
                        body(idx + [iv])
                for i in chunked:
                    part = b.fpext(b.load(self.chunk_accs[i], typ=F32), F64)
                    acc = b.load(self.accs[i], typ=F64)
                    self.b.store(self._combine(i, acc, part), self.accs[i])
            return
        if vector:
            self._vloop(ax, lo, hi, body, idx, split)
            return
        with for_range(b, lo, hi, name=f"i{ax}", hints=hints if len(axes) == 1 else None) as iv:
            self._nest(axes[1:], body, idx + [iv], chunked, hints, split)

    def build(self) -> ir.Module:
        # without inner axes the innermost outer loop is the element loop
        heavy = any(n.op in MATH_OPS for n in self.k.nodes)
        self._nest(list(range(self.spec.outer)), self._row, [],
                   hints=self._no_interleave if self.spec.inner == 0 else None, split=not heavy)
        self.b.ret(self.b.load(self.status, typ=I32))
        return self.mod

    def _row(self, outer_idx: list[ir.Value]) -> None:
        k, spec = self.k, self.spec
        inner_axes = list(range(spec.outer, self.rank))
        row_vals: dict[int, ir.Value] = {}
        reductions = k.reductions
        phases = max((self.depth[i] for i in reductions), default=0)
        inner_pats = [any(p[spec.outer:]) for p in spec.outputs]
        late_outs = [j for j, o in enumerate(k.outputs) if self.full[o.node] or inner_pats[j]]
        row_outs = [j for j in range(len(k.outputs)) if j not in late_outs]
        # reduction operands with a math function in them are kept for later phases
        cached: dict[int, int] = {}
        for i in reductions:
            a = k.nodes[i].args[0]
            later = [r for r in reductions if self.depth[r] > self.depth[i]]
            later_roots = [k.nodes[r].args[0] for r in later] + [k.outputs[j].node for j in late_outs]
            needed_later = a in self._closure(later_roots, lambda x: not self.full[x])
            heavy = any(k.nodes[x].op in MATH_OPS for x in self._closure([a], lambda x: not self.full[x]))
            if self.full[a] and needed_later and heavy and a not in cached:
                cached[a] = -1
        # A cached row lives in an output row where one can hold it (_cache_home), else in
        # scratch: slots are numbered over the scratch-held ones only.
        self.homes = self._cache_homes(list(cached), late_outs)
        for a in cached:
            if a not in self.homes:
                cached[a] = sum(1 for c in cached.values() if c >= 0)
        self.cached_slots = sum(1 for c in cached.values() if c >= 0)

        def emit_rows(roots: list[int]) -> None:
            for i in self._closure(roots, lambda x: self.full[x] or x in row_vals):
                if not self.full[i] and i not in row_vals and k.nodes[i].op not in REDUCE_KINDS:
                    row_vals[i] = self._compute(i, row_vals, outer_idx)

        def phase_loop(p: int, roots: list[int], on_values, chunked: list[int] = ()) -> None:
            def from_scratch(x: int) -> bool:
                return x in cached and p > self._cache_phase(x, cached)
            need = self._closure(roots, lambda x: not self.full[x] or from_scratch(x))
            emit_rows([x for x in need if not self.full[x]])

            def body(idx: list[ir.Value]) -> None:
                vals = self._splat_row_values(need, row_vals)
                for i in need:
                    if i in vals:
                        continue
                    if i in cached and p > self._cache_phase(i, cached):
                        ptr = self._cache_ptr(i, cached[i], idx, True)
                        vec = self._vl is not None and self.vec[i]
                        vals[i] = load_value(self.b, ptr, k.nodes[i].dtype, self.lanes if vec else None)
                    else:
                        vals[i] = self._compute(i, vals, idx)
                        if i in cached and p == self._cache_phase(i, cached):
                            ptr = self._cache_ptr(i, cached[i], idx, False)
                            store_value(self.b, vals[i], ptr, k.nodes[i].dtype)
                on_values(vals, idx)
            # the partial block is a trip of the loop where the body has math functions
            heavy = any(k.nodes[x].op in MATH_OPS for x in need if self.full[x] and not from_scratch(x))
            split = p <= phases or not heavy
            self._nest(inner_axes, body, outer_idx, chunked, self._no_interleave, split)

        self._phase_of = {i: self.depth[i] for i in reductions}
        if phases:
            self._prefetch_next_row(outer_idx)
        for p in range(1, phases + 1):
            group = [i for i in reductions if self.depth[i] == p]
            for i in group:
                self.b.store(self._acc_init(i), self.accs[i])
                if i in self.nan_seen:
                    self.b.store(const(I1, 0), self.nan_seen[i])
                if self.lanes:
                    if i not in self.chunk_accs:
                        self.b.store(self._vacc_init(i), self.vaccs[i])
                    if i in self.vnan:
                        self.b.store(const(ir.VectorType(I1, self.lanes), 0), self.vnan[i])

            # (no inner axes left in this variant: one element per row, nothing to chunk)
            chunked = [i for i in group if i in self.chunk_accs] if inner_axes else []

            def accumulate(vals, idx, group=group, chunked=chunked):
                if self._vl is not None:
                    self._accumulate_lanes(group, vals)
                    return
                for i in group:
                    ptr, t = (self.chunk_accs[i], F32) if i in chunked else (self.accs[i], self._acc_type(i))
                    acc = self.b.load(ptr, typ=t)
                    v = vals[k.nodes[i].args[0]]
                    self.b.store(self._combine(i, acc, v), ptr)
                    if i in self.nan_seen:
                        seen = self.b.load(self.nan_seen[i], typ=I1)
                        self.b.store(self.b.or_(seen, self.b.fcmp_unordered("uno", v, v)), self.nan_seen[i])
            phase_loop(p, [k.nodes[i].args[0] for i in group], accumulate, chunked)
            if self.lanes:
                for i in group:
                    if i not in self.chunk_accs:
                        v = self.b.load(self.vaccs[i], typ=self._vacc_type(i))
                        self.b.store(self._lanes_reduce(i, v), self.accs[i])
                    if i in self.vnan:
                        v = self.b.load(self.vnan[i], typ=ir.VectorType(I1, self.lanes))
                        self.b.store(self._reduce("llvm.vector.reduce.or", v), self.nan_seen[i])
            for i in group:
                v = self.b.load(self.accs[i], typ=self._acc_type(i))
                if v.type != reg_type(k.nodes[i].dtype):
                    v = self.b.fptrunc(v, F32)
                if i in self.nan_seen:
                    seen = self.b.load(self.nan_seen[i], typ=I1)
                    v = self.b.select(seen, ir.Constant(v.type, math.nan), v)
                row_vals[i] = v
        if late_outs:
            def store_late(vals, idx):
                for j in late_outs:
                    self._store(j, vals[k.outputs[j].node], idx)
            roots = [k.outputs[j].node for j in late_outs]
            divs = self._row_divisions(roots)
            if not divs:
                phase_loop(phases + 1, roots, store_late)
            else:
                # every row value of the loop is computed before the branch, so both loops see it
                emit_rows([x for x in self._closure(roots, lambda x: not self.full[x]) if not self.full[x]])
                ok, recips = self._reciprocals(divs, row_vals)
                with self.b.if_else(ok) as (fast, exact):
                    with fast:
                        self.recips = recips
                        phase_loop(phases + 1, roots, store_late)
                        self.recips = {}
                    with exact:
                        phase_loop(phases + 1, roots, store_late)
        emit_rows([k.outputs[j].node for j in row_outs])
        for j in row_outs:
            self._store(j, row_vals[k.outputs[j].node], outer_idx)

    # ---- explicit vector loops ---------------------------------------------------------------

    def _vloop(self, ax: int, lo: ir.Value, hi: ir.Value, body, idx: list[ir.Value], split: bool) -> None:
        """The loop over the last axis from lo to hi, `lanes` elements per trip, as vector code:
        no scalar remainder loop.

        The last, partial block of lanes runs on stack buffers: the streams it reads are copied
        in with a masked load whose masked-off lanes repeat the last element (so a padded lane
        sets no status bit that a real element does not, and leaves a maximum or minimum
        alone), and the written streams' valid lanes are stored back with a masked store.
        Loops with math functions (split False) run the partial block as one more trip, with
        the streams' base pointers switched to the buffers: the body is compiled once. Other
        loops (split True: reductions, light store loops) emit their small body a second time
        for the partial block, where sums and products leave the padded lanes out, so that
        the loop itself has no per-trip test or lane mask. An output written in place of an
        input shares that input's stream, so each element is read and written at one
        address."""
        b, w = self.b, self.lanes
        n = b.sub(hi, lo)
        if ax == 0:     # start >= stop: no blocks
            n = b.select(b.icmp_signed("<", n, const(I64, 0)), const(I64, 0), n)
        full = b.lshr(n, const(I64, w.bit_length() - 1))
        t = b.and_(n, const(I64, w - 1))
        has_tail = b.icmp_unsigned("!=", t, const(I64, 0))
        vl = _VLoop(b.block, idx + [lo])
        vl.t, vl.shared = t, not split
        trips = b.add(full, b.zext(has_tail, I64)) if vl.shared else full
        outer, self._vl = self._vl, vl
        with for_range(b, const(I64, 0), trips, name=f"v{ax}") as blk:
            vl.head = b.block
            vl.off = b.mul(blk, const(I64, w))
            if vl.shared:
                vl.partial = b.icmp_unsigned("==", blk, full)
                copy_in = b.append_basic_block(f"v{ax}.in")
            vl.body = b.append_basic_block(f"v{ax}.body")
            b.position_at_end(vl.body)
            body(idx + [b.add(lo, vl.off)])
            nxt = b.block
            b.position_at_end(vl.head)
            if vl.shared:
                b.cbranch(vl.partial, copy_in, vl.body)
                b.position_at_end(copy_in)
                self._copy_in(vl)
                b.branch(vl.body)
                for key, phi in vl.bases.items():
                    phi.add_incoming(vl.bufs[key][0], b.block)
            else:
                b.branch(vl.body)
            b.position_at_end(nxt)
        with b.if_then(has_tail):
            tail_off = b.mul(full, const(I64, w))
            if not vl.shared:      # the partial block: the body once more, on the buffers
                vl.head = None
                vl.mask = self._lanes_below(t)
                vl.off = tail_off
                self._copy_in(vl)
                body(idx + [b.add(lo, tail_off)])
            # its valid lanes, from the buffers. (Inside the loop this copy's guard would be a
            # loop-invariant branch.)
            mask = self._lanes_below(t)
            for key in sorted(vl.written):
                buf, ty = vl.bufs[key]
                v = b.load(b.bitcast(buf, ir.VectorType(ty, w).as_pointer()), typ=ir.VectorType(ty, w))
                self._masked(False, b.gep(vl.rows[key], [tail_off], inbounds=True, source_etype=ty),
                             ty, mask, v)
        self._vl = outer

    def _copy_in(self, vl: _VLoop) -> None:
        """Fill the buffers of the streams the partial block reads (`_vloop`)."""
        b = self.b
        read = sorted(vl.read)
        if not read:
            return
        mask = self._lanes_below(vl.t)
        for key in read:
            buf, ty = vl.bufs[key]
            row = b.gep(vl.rows[key], [vl.off], inbounds=True, source_etype=ty)
            at_last = b.gep(row, [b.sub(vl.t, const(I64, 1))], inbounds=True, source_etype=ty)
            last = b.load(at_last, typ=ty)
            v = self._masked(True, row, ty, mask, splat(b, last, self.lanes))
            b.store(v, b.bitcast(buf, ir.VectorType(ty, self.lanes).as_pointer()))

    def _stream_key(self, e: int) -> tuple | None:
        """The stream of endpoint e (input e, or output e - len(inputs)) in a vector loop, or
        None when it does not vary along the loop's axis (one element is read or written)."""
        if self.lanes is None:
            return None
        n_in = len(self.k.inputs)
        if e >= n_in and self._aliased(e - n_in):
            e = self.spec.inplace[e - n_in]
        pats = self.spec.inputs[e] if e < n_in else self.spec.outputs[e - n_in]
        return ("e", e) if pats[-1] else None

    def _elem_ptr(self, key: tuple | None, ty: ir.Type, idx: list[ir.Value], read: bool, at):
        """The address of an element: `at(idx)`, or in a vector loop the first lane of the
        block in the stream `key` (its row, or the partial block's buffer)."""
        vl, b = self._vl, self.b
        if vl is None or key is None:
            return at(idx)
        if key not in vl.rows:
            cur = b.block
            with b.goto_block(vl.pre):
                vl.rows[key] = at(vl.first)
            with b.goto_entry_block():
                arr = b.alloca(ir.ArrayType(ty, self.lanes))
                arr.align = 64
                vl.bufs[key] = (b.gep(arr, [const(I64, 0), const(I64, 0)], inbounds=True), ty)
            if vl.head is None:
                raise AssertionError(f"stream {key} first met in a partial block")
            b.position_at_end(vl.head)
            row = b.gep(vl.rows[key], [vl.off], inbounds=True, source_etype=ty)
            if vl.shared:
                b.position_at_start(vl.body)
                phi = b.phi(PTR, name=f"base.{key[0]}{key[1]}")
                phi.add_incoming(row, vl.head)
                row = phi
            vl.bases[key] = row
            b.position_at_end(cur)
        (vl.read if read else vl.written).add(key)
        return vl.bufs[key][0] if vl.head is None else vl.bases[key]

    def _accumulate_lanes(self, group: list[int], vals: dict[int, ir.Value]) -> None:
        """Add one block of lanes into the per-lane accumulators of `group` (see _vloop)."""
        b, vl = self.b, self._vl
        for i in group:
            n = self.k.nodes[i]
            v = vals[n.args[0]]
            if not isinstance(v.type, ir.VectorType):
                v = splat(b, v, self.lanes)
            acc = b.load(self.vaccs[i], typ=self._vacc_type(i))
            new = self._combine(i, acc, v)
            if vl.mask is not None and n.op in ("reduce_sum", "reduce_prod"):
                new = b.select(vl.mask, new, acc)       # the partial block's padded lanes
            b.store(new, self.vaccs[i])
            if i in self.vnan:
                vt = ir.VectorType(I1, self.lanes)
                seen = b.load(self.vnan[i], typ=vt)
                b.store(b.or_(seen, b.fcmp_unordered("uno", v, v)), self.vnan[i])

    def _lanes_below(self, t: ir.Value) -> ir.Value:
        """<lanes x i1>: lane k < t."""
        if self._iota is None:      # <0, 1, ...>, once (printing it at every use was slow)
            with self.b.goto_entry_block():
                iota = ir.Constant(ir.VectorType(I64, self.lanes), list(range(self.lanes)))
                self._iota = self.b.add(iota, const(iota.type, 0), name="iota")
        return self.b.icmp_unsigned("<", self._iota, splat(self.b, t, self.lanes))

    def _masked(self, load: bool, ptr: ir.Value, ty: ir.Type, mask: ir.Value, v: ir.Value):
        """llvm.masked.load (v: the masked-off lanes) or llvm.masked.store (v: the values) of a
        block of lanes at ptr."""
        w = self.lanes
        vt, mt = ir.VectorType(ty, w), ir.VectorType(I1, w)
        align = const(I32, _elem_bytes(ty))
        suffix = f"{type_suffix(vt)}.p0"
        if load:
            fn = intrinsic(self.mod, "llvm.masked.load", vt, [PTR, I32, mt, vt], suffix=suffix)
            return self.b.call(fn, [ptr, align, mask, v])
        fn = intrinsic(self.mod, "llvm.masked.store", ir.VoidType(), [vt, PTR, I32, mt], suffix=suffix)
        return self.b.call(fn, [v, ptr, align, mask])

    def _prefetch_next_row(self, outer_idx: list[ir.Value]) -> None:
        """Prefetch the next row of each input read along the (single, contiguous) inner axis.

        A row-wise kernel passes over each row several times; its first pass waits on memory
        at every row start, because a [.., 1024] f32 row is one 4 KB page and hardware stream
        prefetchers stop at page boundaries (27% of softmax's samples sat on the max pass's
        loads). One prefetch per 64-byte line, a row ahead, costs 64 instructions per 4 KB.
        The address past the last row is never dereferenced (a prefetch does not fault)."""
        spec, b = self.spec, self.b
        if spec.inner != 1 or spec.outer < 1:
            return
        fn = intrinsic(self.mod, "llvm.prefetch", ir.VoidType(), [PTR, I32, I32, I32], suffix="p0")
        nxt = list(outer_idx)
        nxt[-1] = b.add(nxt[-1], const(I64, 1))
        for e, inp in enumerate(self.k.inputs):
            if not spec.inputs[e][spec.outer] or not spec.inputs[e][spec.outer - 1]:
                continue
            step = 64 // inp.dtype.itemsize                   # elements per 64-byte line
            base = b.gep(self.in_ptrs[e], [self._offset(e, nxt)], source_etype=mem_type(inp.dtype))
            n_lines = b.udiv(b.add(self.sizes[self.rank - 1], const(I64, step - 1)), const(I64, step))
            with for_range(b, const(I64, 0), n_lines, name=f"pf{e}") as line:
                p = b.gep(base, [b.mul(line, const(I64, step))], source_etype=mem_type(inp.dtype))
                b.call(fn, [p, const(I32, 0), const(I32, 3), const(I32, 1)])

    def _row_divisions(self, roots: list[int]) -> list[int]:
        """Float divisions in the store loop whose divisor is one value per row (softmax's
        division by the row sum, layer_norm's by the standard deviation)."""
        found = []
        for i in self._closure(roots, lambda x: not self.full[x]):
            n = self.k.nodes[i]
            if n.op == "div" and n.dtype.is_float and self.full[i] and not self.full[n.args[1]]:
                found.append(i)
        return found

    def _reciprocals(self, divs: list[int], row_vals: dict[int, ir.Value]):
        """Per row: 1/d of every row divisor d, and whether x * (1/d) may replace x / d.

        The product is within 1 ulp of the quotient (both roundings) unless 1/d leaves the
        normal range: d denormal (1/d overflows) or |d| near the largest float (1/d denormal).
        Those rows take the loop that divides; 0, Inf and NaN divisors give the same results
        both ways (x * Inf, x * 0, NaN)."""
        b = self.b
        ok = const(I1, 1)
        recips: dict[int, ir.Value] = {}
        for i in divs:
            d = row_vals[self.k.nodes[i].args[1]]
            t = d.type
            tiny, big = (2.0 ** -1022, 2.0 ** 1021) if t == F64 else (2.0 ** -126, 2.0 ** 125)
            a = b.call(intrinsic(self.mod, "llvm.fabs", t, [t]), [d])
            denormal, huge = self._between(a, 0.0, tiny), self._between(a, big, math.inf)
            ok = b.and_(ok, b.not_(b.or_(denormal, huge)))
            recips[i] = b.fdiv(ir.Constant(t, 1.0), d, flags=DIV_FLAGS)
        return ok, recips

    def _between(self, a: ir.Value, lo: float, hi: float) -> ir.Value:
        b, t = self.b, a.type
        return b.and_(b.fcmp_ordered(">", a, ir.Constant(t, lo)), b.fcmp_ordered("<", a, ir.Constant(t, hi)))

    def _cache_homes(self, cached: list[int], late_outs: list[int]) -> dict[int, int]:
        """Output rows that can hold a cached row until the store loop overwrites them: node ->
        output index. softmax keeps exp(x - max) in its output row, as onnxruntime does: the
        output's cache misses (read for ownership) then overlap the exp pass's arithmetic
        instead of stalling the short scaling loop, 1.65 -> 1.4 ms on [4096, 1024].

        The output must be f32/f64 of the node's dtype, cover the whole domain (so each row
        writes only its own elements; every element is written by the store loop after its last
        read, in the same iteration) and not share an input's buffer (later phases may read it)."""
        homes: dict[int, int] = {}
        taken: set[int] = set()
        for c in cached:
            for j in late_outs:
                o = self.k.outputs[j]
                if (j not in taken and not self._aliased(j) and all(self.spec.outputs[j])
                        and o.dtype == self.k.nodes[c].dtype and o.dtype.is_float):
                    homes[c] = j
                    taken.add(j)
                    break
        return homes

    def _cache_ptr(self, node: int, slot: int, idx: list[ir.Value], read: bool):
        """Where the cached row value of `node` lives at `idx`: its output home or scratch."""
        j = self.homes.get(node)
        d = self.k.nodes[node].dtype
        vec = self.vec is not None and self.vec[node]
        if j is None:
            return self._elem_ptr(("c", node) if vec else None, mem_type(d), idx, read,
                                  lambda ix: self._scratch_ptr(slot, d, ix[self.spec.outer:]))
        e = len(self.k.inputs) + j
        # the home output's stream: one base pointer for the cached value read and the output
        # written at each element, so LLVM sees one address
        return self._elem_ptr(self._stream_key(e) if vec else None, mem_type(d), idx, read,
                              lambda ix: self.b.gep(self.out_ptrs[j], [self._offset(e, ix)], inbounds=True,
                                                    source_etype=mem_type(d)))

    def _cache_phase(self, node: int, cached: dict[int, int]) -> int:
        """The phase that computes a cached node: that of the first reduction reading it."""
        return min(self._phase_of[r] for r in self.k.reductions if self.k.nodes[r].args[0] == node)

    def _store(self, j: int, v: ir.Value, idx: list[ir.Value]) -> None:
        o = self.k.outputs[j]
        e = len(self.k.inputs) + j
        key = self._stream_key(e)
        p = self._elem_ptr(key, mem_type(o.dtype), idx, False,
                           lambda ix: self.b.gep(self.out_ptrs[j], [self._offset(e, ix)], inbounds=True,
                                                 source_etype=mem_type(o.dtype)))
        if self._vl is not None and key is not None and not isinstance(v.type, ir.VectorType):
            v = splat(self.b, v, self.lanes)
        elif (self._vl is None or key is None) and isinstance(v.type, ir.VectorType):
            v = self.b.extract_element(v, const(I32, 0))
        store_value(self.b, v, p, o.dtype)


def lower_kernel(kernel: Kernel, spec: Spec, name: str) -> tuple[ir.Module, int]:
    """The LLVM module of `kernel` specialized to `spec`, and its scratch slots per row."""
    low = _KernelLowering(kernel, spec, name)
    mod = low.build()
    return mod, low.cached_slots


_ = F64  # imported for readers of _acc_type
