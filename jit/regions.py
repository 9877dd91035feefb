"""Region formation (fusion): which runs of instructions become one compiled kernel.

A region is a contiguous run of instructions of one block. Three kinds are formed:

- "elementwise": a maximal run of elementwise ops (unary, binary with NumPy broadcasting, select,
  cast, mov).
- "reduce": such a run that also holds reductions (reduce_*, or composite ops such as softmax and
  layer_norm that decompose into reductions and elementwise ops). Every reduction in a region
  reduces the same number of trailing axes of its operand, so the kernel is an outer loop over
  rows and inner loops over the reduced axes. A reduction with keepdims = false ends the region.
- "matmul+epilogue": a float matmul (f32 on the JIT's GEMM kernel, jit/targets/cpu/gemm.py; else NumPy's
  BLAS) followed by an elementwise epilogue (bias, activation) that runs as a kernel in place
  on the matmul's result. A lone matmul is a region too, with no epilogue kernel.
- "conv2d+epilogue": the same after a float conv2d (f32 ungrouped: an implicit GEMM, jit/targets/cpu/conv.py;
  else its op reference); the epilogue (bias, relu, residual add) runs in place on its result.
- "maxpool2d+epilogue": the same after an f32 2-D max pool (a native kernel, jit/targets/cpu/maxpool.py).

What is not fused stays interpreted: f16 arithmetic (the pipeline widens it to f32; casts and
copies of f16 fuse), reductions over non-trailing axes,
integer matmul, movement ops, control flow. A region needs at least two instructions, except a
lone composite op (softmax, layer_norm, gelu, ...) that is several primitives after decomposition
or expansion, and a lone matmul, conv2d or maxpool2d head.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from isa.dtypes import DType
from isa.module import ConstRef, Module, Operand, Reg
from isa.narrow import computes
from isa.ops import OPS, Family
from isa.verify import FunctionTypes

from .flatten import Prim, flat_prims
from .kernel_ir import Node
from .liveness import Liveness
from .passes.common import fuses_elementwise
from .passes.effects import removable_if_unused

# the op table's reductions (its REDUCE family), which a kernel folds over trailing axes
REDUCE_OPS = tuple(name for name, op in OPS.items() if op.family is Family.REDUCE)
# ops run outside the kernel (BLAS or their reference) whose result an epilogue kernel finishes
# region kinds (Region.kind): these names, not string literals, wherever a kind is tested
ELEMENTWISE = "elementwise"
REDUCE = "reduce"
MATMUL_EPILOGUE = "matmul+epilogue"
EPILOGUE_HEADS = {"matmul": MATMUL_EPILOGUE, "conv2d": "conv2d+epilogue",
                  "maxpool2d": "maxpool2d+epilogue"}
# heads whose fast path is f32 only (elsewhere their reference would run: nothing gained)
_F32_HEADS = {"maxpool2d"}
EPILOGUE_KINDS = frozenset(EPILOGUE_HEADS.values())


@dataclass(frozen=True)
class Region:
    """Instructions [start, end) of func.blocks[block], compiled as one kernel."""
    func: str
    block: int
    start: int
    end: int
    inputs: list[Operand] = field(hash=False)     # live-in Reg / ConstRef, in first-read order
    outputs: list[str] = field(hash=False)        # registers whose value at `end` is read later
    kind: str = ELEMENTWISE


@dataclass
class _Shape:
    """What one instruction contributes to a region."""
    fusible: bool
    inner: int | None = None     # trailing axes its reductions reduce (None: no reduction)
    ends: bool = False           # holds a keepdims=false reduction: nothing may follow it
    heavy: bool = False          # a composite op worth a kernel on its own
    reason: str = ""


def _dtype_ok(d: DType) -> bool:
    # the narrow storage formats and str: no kernels, the interpreter computes them
    return not d.is_narrow and not d.is_str




def reduce_inner(p: Prim) -> int | None:
    """How many trailing axes reduction `p` reduces, or None if its axes are not trailing."""
    rank = p.in_types[0].rank
    axes = p.attrs.get("axes")
    axes = list(range(rank)) if axes is None else sorted(a % rank for a in axes) if rank else []
    m = len(axes)
    if m == 0 or axes != list(range(rank - m, rank)):
        return None
    return m


def classify_prim(p: Prim) -> _Shape:
    if not all(_dtype_ok(t.dtype) for t in p.in_types + p.out_types):
        return _Shape(False, reason="the narrow formats and str have no CPU kernel")
    if any(t.dtype is DType.F16 for t in p.in_types + p.out_types):
        # a kernel only converts and copies f16 (the pipeline writes f16 arithmetic as f32
        # arithmetic between casts: jit/passes/widen.py; unwidened, it stays interpreted)
        if computes(OPS[p.op]):
            return _Shape(False, reason="f16 arithmetic has no kernel (the pipeline widens it "
                                        "to f32)")
        if p.op == "cast" and p.in_types[0].dtype is DType.F64 and \
                p.out_types[0].dtype is DType.F16:
            return _Shape(False, reason="an f64 -> f16 cast has no kernel (through f32 it "
                                        "would round twice)")
        from .llvm.target import converts_f16
        if not converts_f16():
            return _Shape(False, reason="f16 casts need the host's f16 conversions (F16C)")
    if fuses_elementwise(p.op):
        return _Shape(True)
    if p.op in REDUCE_OPS:
        m = reduce_inner(p)
        if m is None:
            return _Shape(False, reason=f"{p.op} over non-trailing axes")
        return _Shape(True, inner=m, ends=not p.attrs.get("keepdims", False))
    return _Shape(False, reason=f"{p.op} is not fusible")


def classify_instr(module: Module, ins, types) -> _Shape:
    opdef = OPS[ins.op]
    if any(t is not None and t.dtype.is_str for t in [*types.operands, *types.results]):
        # text has no kernel on any target: such an instruction stays interpreted
        return _Shape(False, reason=f"{ins.op} on str values (strings are interpreted only)")
    if opdef.family in (Family.CONTROL, Family.MISC) and ins.op != "mov":
        return _Shape(False, reason=f"{ins.op} is not fusible")
    try:
        prims = flat_prims(ins.op, ins.operands, ins.attrs, types, ins.results)
    except Exception as e:   # a decomposition we cannot follow: leave it to the interpreter
        return _Shape(False, reason=f"{ins.op}: {e}")
    inner: int | None = None
    ends = False
    for p in prims:
        s = classify_prim(p)
        if not s.fusible or ends:
            return _Shape(False, reason=s.reason or "a keepdims=false reduction is consumed")
        if s.inner is not None:
            if inner is not None and inner != s.inner:
                return _Shape(False, reason="reductions over different axis counts")
            inner = s.inner
        ends = s.ends
    heavy = opdef.decompose is not None or (opdef.expand is not None and _expansion_size(prims) >= 3)
    # a lone reduction over trailing axes is worth a kernel too: NumPy's reduce over an axis
    # tuple walks strided (ResNet-18's global average pool: ~90 us interpreted)
    heavy = heavy or ins.op in REDUCE_OPS
    return _Shape(True, inner=inner, ends=ends, heavy=heavy)


def _expansion_size(prims: list[Prim]) -> int:
    """How many primitive ops a composite elementwise op expands into (a lone gelu is worth a
    kernel: NumPy would make a pass over memory for each of them)."""
    from .build import KernelBuilder
    total = 0
    for p in prims:
        kb = KernelBuilder("probe", 0)
        args = [kb.kernel.add(Node("load", t.dtype, (), i)) for i, t in enumerate(p.in_types)]
        kb.apply(p.op, args, p.attrs)
        total += sum(1 for n in kb.kernel.nodes if n.op not in ("load", "const"))
    return total


def epilogue_head(ins, types) -> str | None:
    """The region kind an instruction heads (a float matmul or conv2d), or None."""
    if ins.op not in EPILOGUE_HEADS:
        return None
    dtype = types.results[0].dtype
    if dtype not in (DType.F32, DType.F64) or (ins.op in _F32_HEADS and dtype != DType.F32):
        return None
    return EPILOGUE_HEADS[ins.op]


class _Run:
    def __init__(self, start: int, kind: str):
        self.start = start
        self.end = start
        self.kind = kind
        self.inner: int | None = None
        self.heavy = False
        self.closed = False
        self.domain: list = []        # the static broadcast of its values' shapes, right-aligned
        self.kept: list = []          # shapes of its values the block keeps (its outputs)
        self.defined: set[str] = set()  # registers its instructions write
        self.reads: set = set()           # what it reads from outside: its inputs
        self.reduced: list = []       # shapes of its reductions' operands


# a native library's region kernel takes at most this many inputs and outputs: its runtime calls
# kernels with a fixed argument list (dlvm_aot_rt.c: call_kernel), so the library's regions are
# formed with this cap and a longer elementwise chain is cut (a temporal fusion transformer's
# gates, once their outer products were multiplies, made one region of 32 operands, and the
# library refused every call). The JIT's and CUDA's kernels take any number.
MAX_OPERANDS = 16


def _outside_reads(run: _Run | None, ins) -> set:
    defined = run.defined if run is not None else set()
    return {o for o in ins.operands
            if isinstance(o, ConstRef) or (isinstance(o, Reg) and o.name not in defined)}


def _too_many_operands(run: _Run, ins, ii: int, last_read: dict, live_out: set,
                       cap: int | None) -> bool:
    """Whether `ins` joining `run` would give its kernel more than `cap` operands: the values
    read from outside, and the values written that the block reads later or keeps (counted
    generously: a later read of a register written again counts)."""
    if cap is None:
        return False
    reads = run.reads | _outside_reads(run, ins)
    written = run.defined | set(ins.results)
    outputs = sum(1 for r in written if r in live_out or last_read.get(r, -1) > ii)
    return len(reads) + outputs > cap


def _joined_domain(domain: list, shapes, surely: bool = False) -> list | None:
    """`domain` broadcast with `shapes` (NumPy rules, dims right-aligned), or None where two
    sizes can never broadcast: a kernel computes all of a region's values over one domain, so
    such values (an optimizer's update of weights of different shapes) belong to separate
    regions. Unknown dims are taken as fitting (the plan checks them at run time), unless
    `surely`: then an unknown dim against any other than 1 is no fit either."""
    out = list(domain)
    for shape in shapes:
        shape = list(shape)
        if len(shape) > len(out):
            out = [1] * (len(shape) - len(out)) + out
        off = len(out) - len(shape)
        for i, d in enumerate(shape):
            have = out[off + i]
            if d == 1 or d == have:
                continue
            if have == 1:
                out[off + i] = d
            elif (d is None or have is None) and not surely:
                out[off + i] = None
            else:
                # two sizes, or a size and a name (N against 256 in a gradient's products):
                # equal only by chance, so not one domain
                return None
    return out


def _size(shape) -> int | None:
    n = 1
    for d in shape:
        if not isinstance(d, int):
            return None
        n *= d
    return n


def _same_dims(a, b) -> bool:
    """Right-aligned equality of two shapes, size-1 padding allowed, unknown dims wildcards."""
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + list(a), [1] * (n - len(b)) + list(b)
    return all(x == y or x is None or y is None for x, y in zip(a, b))


# a kept value smaller than this rides along in a larger domain: recomputing a few elements per
# domain element costs less than a region of its own
SMALL_KEPT = 64


def _fills(run: _Run, domain: list, ins, row, shape: _Shape, kept: set[str]) -> bool:
    """Whether an instruction may join `run` without a smaller computation riding along in a
    larger domain: a value the block keeps (`kept`: live after it, so a region output) must
    cover the domain, be a scalar or be a reduction's keepdims result; otherwise it would be
    computed once per element of the larger domain (an optimizer's bias update inside its
    weight's domain). Values only feeding larger ones fuse as before."""
    inner = shape.inner if shape.inner is not None else run.inner
    reduced = list(domain[:len(domain) - inner]) + [1] * inner if inner else None
    dropping = ins.op in REDUCE_OPS and not ins.attrs.get("keepdims", False)
    shapes = list(run.kept) + ([] if dropping else   # a reduction's dropped axes end the run
                               [t.shape for r, t in zip(ins.results, row.results) if r in kept])
    for s in shapes:
        size = _size(s)
        if _same_dims(s, domain) or (size is not None and size < SMALL_KEPT):
            continue
        if reduced is not None and _same_dims(s, reduced):
            continue
        return False
    return True


def _reductions_span(reduced: list, domain: list, inner: int | None) -> bool:
    """Whether every reduction's operand spans the domain's trailing `inner` axes, which a
    kernel's inner loops run over: a value broadcast along them (softmax over an axis of size
    1, times a [.., 1, 40] operand: a product with K = 1 as the pipeline writes it) would have
    its rows reduced over 40 elements that are not there; the plan declines it at every call
    (jit/plan.py), and a native library's build failed on it."""
    if not inner:
        return True
    n = len(domain)
    for shape in reduced:
        shape = [1] * max(n - len(shape), 0) + list(shape)
        for d, have in zip(shape[len(shape) - inner:], domain[n - inner:]):
            if d == 1 and have != 1:
                return False
    return True


def _independent_misfit(run: _Run, ins, row) -> bool:
    """An instruction that reads nothing the run computes joins it only where its sizes surely
    fit the run's domain. Joining saves a kernel call, no memory traffic; and an unknown size
    taken as fitting that differs at run time sends the whole region back to the interpreter
    (a scoring head's topk values, [batch, ?], beside its [batch, 100] scores: the native
    library then refused every call)."""
    if any(isinstance(o, Reg) and o.name in run.defined for o in ins.operands):
        return False
    return _joined_domain(run.domain, _value_shapes(ins, row), surely=True) is None


def _value_shapes(ins, row) -> list:
    """The shapes an instruction's values take in its region's domain: its operands', and
    its results' unless a keepdims=false reduction drops axes."""
    shapes = [t.shape for t in row.operands if t is not None]
    if not (ins.op in REDUCE_OPS and not ins.attrs.get("keepdims", False)):
        shapes += [t.shape for t in row.results]
    return shapes


def _region_io(func, bi: int, start: int, end: int, live: Liveness) -> tuple[list[Operand], list[str]]:
    inputs: list[Operand] = []
    written: list[str] = []
    for ins in func.blocks[bi].instrs[start:end]:
        for o in ins.operands:
            if isinstance(o, ConstRef) and o not in inputs:
                inputs.append(o)
            elif isinstance(o, Reg) and o.name not in written and o not in inputs:
                inputs.append(o)
        for r in ins.results:
            if r not in written:
                written.append(r)
    after = live.live_after(bi, end - 1)
    return inputs, [r for r in written if r in after]


def unread_traps(func, bi: int, rows, live: Liveness) -> set[int]:
    """Instructions of block `bi` that may trap but whose results nothing observable reads.

    A trap is an observable effect (specs/semantics.md): such an instruction must still run.
    A kernel computes only what its outputs need, so it would skip it; it stays interpreted.
    "Observable" is judged as dead-code elimination would: a read by an instruction that is
    itself removable and unread does not count."""
    instrs = func.blocks[bi].instrs
    needed = set(live.live_out[bi])
    found: set[int] = set()
    for ii in reversed(range(len(instrs))):
        ins = instrs[ii]
        t = rows[ii] if ii < len(rows) else None
        read = any(r in needed for r in ins.results)
        if not read and not removable_if_unused(ins, t):
            if t is not None and OPS[ins.op].family is not Family.CONTROL:
                found.add(ii)
            read = True
        if read:
            needed.difference_update(ins.results)
            needed.update(o.name for o in ins.operands if isinstance(o, Reg))
    return found


def form_regions(module: Module, func_name: str, types: FunctionTypes,
                 max_operands: int | None = None) -> list[Region]:
    """The regions of one function, in block and instruction order (non-overlapping).

    `types` is `verify_module(module)[func_name]`. `max_operands`: no region takes more
    inputs and outputs (a native library's, MAX_OPERANDS)."""
    func = module.functions[func_name]
    live = Liveness(func)
    regions: list[Region] = []
    for bi, block in enumerate(func.blocks):
        run: _Run | None = None

        def close(run: _Run | None, bi: int = bi) -> None:
            if run is None:
                return
            n = run.end - run.start
            worth = n >= 2 or (n == 1 and run.heavy)
            if run.kind in EPILOGUE_KINDS:
                # a lone product or convolution is a region too: it runs the JIT's GEMM, and
                # no epilogue kernel is compiled for it
                worth = True
            if worth:
                ins_, outs = _region_io(func, bi, run.start, run.end, live)
                kind = run.kind
                if kind == ELEMENTWISE and run.inner is not None:
                    kind = REDUCE
                regions.append(Region(func_name, bi, run.start, run.end, ins_, outs, kind))

        rows = types[bi] if bi < len(types) else []
        unread = unread_traps(func, bi, rows, live)
        last_read: dict[str, int] = {}
        for ii, ins in enumerate(block.instrs):
            for o in ins.operands:
                if isinstance(o, Reg):
                    last_read[o.name] = ii
        live_out = set(live.live_out[bi])
        kept = set(live.live_out[bi]) | {o.name for ins in block.instrs[-1:] if ins.op == "ret"
                                         for o in ins.operands if isinstance(o, Reg)}
        for ii, ins in enumerate(block.instrs):
            if ii >= len(rows):
                break
            head = epilogue_head(ins, rows[ii])
            if head is not None:
                close(run)
                run = _Run(ii, head)
                run.end = ii + 1
                run.domain = list(rows[ii].results[0].shape)   # the epilogue's domain
                run.reads |= _outside_reads(None, ins)
                run.defined.update(ins.results)
                continue
            shape = (classify_instr(module, ins, rows[ii]) if ii not in unread else
                     _Shape(False, reason="an unread instruction that may trap stays interpreted"))
            if ins.op == "mov" and not (run is not None and isinstance(ins.operands[0], Reg)
                                        and ins.operands[0].name in run.defined):
                # a mov of a value from outside the run is free interpreted (a reference),
                # while a kernel would copy it (a loop's growing output, moved every step)
                shape = _Shape(False, reason="a mov of a value computed elsewhere")
            # a matmul epilogue is elementwise only: a reduction (softmax, layer_norm after the
            # bias and residual adds) ends it and starts a region of its own
            in_epilogue = run is not None and run.kind in EPILOGUE_KINDS
            joins = run is not None and not run.closed and shape.fusible and (
                run.inner is None or shape.inner is None or run.inner == shape.inner) and not (
                in_epilogue and shape.inner is not None)
            domain = None
            if shape.fusible:
                domain = _joined_domain(run.domain if joins else [], _value_shapes(ins, rows[ii]))
                reduced = run.reduced + ([rows[ii].operands[0].shape]
                                         if shape.inner is not None else []) if joins else []
                if joins and (domain is None or
                              not _fills(run, domain, ins, rows[ii], shape, kept) or
                              not _reductions_span(reduced, domain, shape.inner if
                                                   shape.inner is not None else run.inner) or
                              _independent_misfit(run, ins, rows[ii]) or
                              _too_many_operands(run, ins, ii, last_read, live_out,
                                                 max_operands)):
                    joins = False
                    domain = _joined_domain([], _value_shapes(ins, rows[ii]))
            if not joins:
                close(run)
                run = _Run(ii, ELEMENTWISE) if shape.fusible else None
            if run is not None:
                run.reads |= _outside_reads(run, ins)
                run.defined.update(ins.results)
                run.domain = domain or []
                run.kept += [t.shape for r, t in zip(ins.results, rows[ii].results) if r in kept]
                run.end = ii + 1
                run.heavy |= shape.heavy
                if shape.inner is not None:
                    run.inner = shape.inner
                    run.reduced.append(rows[ii].operands[0].shape)
                if shape.ends:
                    run.closed = True
        close(run)
    return regions
