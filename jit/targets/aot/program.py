"""A dlvm module as C: one function per dlvm function over the library's runtime, plus the kernels
its regions compile to.

Every function becomes `static int32_t fn_NAME(dlvm_ctx *, dlvm_val *args, dlvm_val *results)`:
registers are `dlvm_val`s, blocks are labels, `br` and `jmp` are gotos, `call` is a C call.
Regions (the JIT's fusion, jit/regions.py) run their compiled kernel through `dlvm_rt_region`;
an elementwise or reduction instruction outside every region becomes a one-instruction region;
products, convolutions, pooling and movement ops call the runtime. Whatever has neither is
collected, and the build fails with one error that lists every such instruction.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from isa.dtypes import DType
from isa.module import ConstRef, Imm, Instr, Module, Reg
from isa.narrow import computes
from isa.ops import OPS, sampling
from isa.types import TensorType
from isa.verify import verify_module
from jit.build import build_kernel
from jit.kernel_ir import REDUCE_KINDS, Kernel
from jit.llvm.lower import lower_kernel
from jit.plan import SHORT_ROW, Decline
from jit.regions import ELEMENTWISE, EPILOGUE_KINDS, MAX_OPERANDS, REDUCE, Region, form_regions
from jit.row_split import RowSplit, row_split

from .cnames import C_TYPES, c_double, c_string, dtype_code, i64_array, ident
from .variant import (
    MAX_RANK,
    Variant,
    ambiguous_axes,
    representatives,
    unknown_axes,
    variant_for,
)

_FLOATS = frozenset({DType.F32, DType.F64})
_INTEGERS = frozenset({DType.I8, DType.I16, DType.I32, DType.I64, DType.U8, DType.U16, DType.U32,
                       DType.U64})
_SCANS = frozenset({DType.F32, DType.F64, DType.I32, DType.I64})
# ops the runtime runs (runtime/*.c) besides regions and control flow, with the dtypes of the
# first operand its code covers (None: every dtype with a C type); any other is a guard there, so
# the library hands that instruction to the VM instead (_helper)
HELPER_OPS: dict[str, frozenset | None] = {
    "matmul": _FLOATS | _INTEGERS, "conv2d": _FLOATS, "conv3d": frozenset({DType.F32}),
    "maxpool2d": _FLOATS, "avgpool2d": _FLOATS, "pad": _FLOATS | _INTEGERS | {DType.BOOL},
    "argmax": _FLOATS | _INTEGERS | {DType.BOOL}, "argmin": _FLOATS | _INTEGERS | {DType.BOOL},
    "cumsum": _SCANS, "cumprod": _SCANS, "topk": _SCANS, "range": _SCANS,
    **dict.fromkeys(["reshape", "transpose", "broadcast_to", "expand_dims", "squeeze", "concat",
                     "slice", "gather", "shape_of", "reshape_dyn", "broadcast_dyn", "gather_nd",
                     "gather_elements", "scatter_elements", "scatter_nd", "slice_dyn", "fill",
                     "resize"]),
    "grid_sample": frozenset({DType.F32, DType.F64})}
CONTROL_OPS = frozenset({"jmp", "br", "ret", "call", "assert", "const", "mov"})


# kernels (jit/row_split.py: RowSplit.stages) a function runs before tiles of rows may pay
MIN_TILED_STAGES = 4

# a region's kernel variants at most (each a compiled kernel the runtime tries in turn)
MAX_VARIANTS = 12


def _own_ones(shapes: list) -> list[dict[int, frozenset[int]]]:
    """Which inputs are broadcast (1) on the axes where several inputs' dims are unknown
    (variant.unknown_axes): none first, then every combination while there are few, else one
    input on one axis at a time."""
    loose = unknown_axes(shapes)
    if not loose:
        return [{}]
    options = [[None, *who] for who in loose.values()]
    if math.prod(len(o) for o in options) <= MAX_VARIANTS:
        picks = list(itertools.product(*options))
    else:
        picks = [(None,) * len(options)] + [
            tuple(j if i == n else None for i in range(len(options)))
            for n, who in enumerate(loose.values()) for j in who]
    out = []
    for pick in picks:
        own: dict[int, set[int]] = {}
        for ax, j in zip(loose, pick):
            if j is not None:
                own.setdefault(j, set()).add(ax)
        out.append({j: frozenset(a) for j, a in own.items()})
    return out


# dlvm_rt_reduce's kind codes, by the reduction's combine op (its op record's facts)
_REDUCE_KIND = {"add": 0, "max": 2, "min": 3, "mul": 4}
_MEAN_KIND = 1
# dlvm_rt_scatter_elements's and dlvm_rt_scatter_nd's reduction codes
_SCATTER_REDUCTION = {"none": 0, "add": 1, "mul": 2, "max": 3, "min": 4}


def _reduce_kind(op: str) -> int | None:
    """The runtime's code for a reduction over any axes, or None for another op."""
    facts = OPS[op].facts if op in OPS else None
    if facts is None or facts.combine not in _REDUCE_KIND:
        return None
    return _MEAN_KIND if facts.mean else _REDUCE_KIND[facts.combine]


def _no_c_type(d: DType) -> str:
    # the narrow storage formats (bf16, float8, int4 ...): the interpreter computes them
    return f"the {d} dtype (no library code for it; the VM runs it)"


class Unsupported(Exception):
    pass


def _row_nodes(kernel: Kernel) -> set[int]:
    """keepdims=false reductions and the nodes computed from them: one value per row, lined up
    with the domain's outer axes (as jit/plan.py: domain_shapes keeps them)."""
    rows: set[int] = set()
    for i, nd in enumerate(kernel.nodes):
        if (nd.op in REDUCE_KINDS and not nd.attr) or any(a in rows for a in nd.args):
            rows.add(i)
    return rows


@dataclass
class RegionKernel:
    cname: str                  # the C name of its dlvm_rt_kernel table (+ "_fn": the kernel)
    kernel: Kernel
    variant: Variant
    where: str
    llvm_ir: str                # the kernel's LLVM module, unoptimized ("": it calls fn's)
    slots: int                  # scratch rows per chunk
    rows: set[int] = field(default_factory=set)     # nodes with one value per row (_row_nodes)
    fn: str = ""                # the kernel function's C name ("": cname + "_fn")

    @property
    def function(self) -> str:
        return self.fn or self.cname + "_fn"


@dataclass
class Blob:
    cname: str
    data: bytes


@dataclass
class CProgram:
    name: str
    source: str = ""
    kernels: list[RegionKernel] = field(default_factory=list)
    blobs: list[Blob] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
    # [function, block, instruction] of each instruction the VM runs for the library, by index
    vm_instructions: list[list] = field(default_factory=list)


def _compute_call(op: str, a: dict, vals: list[str], dst: str, pack: str | None = None,
                  relu: bool = False) -> str:
    """The runtime call of a product, convolution or 1- to 3-D pool into `dst`; a convolution
    with constant weights keeps them packed in `pack` (the static of _packed), then relu."""
    if op == "matmul":
        return f"dlvm_rt_matmul(ctx, {vals[0]}, {vals[1]}, {dst})"
    if op == "conv2d":
        bias = vals[2] if len(vals) > 2 else "NULL"
        return (f"dlvm_rt_conv2d_packed(ctx, {vals[0]}, {vals[1]}, {bias}, "
                f"{i64_array(a['strides'])}, {i64_array(a['pads'])}, {i64_array(a['dilations'])}, "
                f"{int(a['groups'])}, {int(relu)}, {'&' + pack if pack else 'NULL'}, {dst})")
    if op == "conv3d":
        bias = vals[2] if len(vals) > 2 else "NULL"
        return (f"dlvm_rt_conv3d(ctx, {vals[0]}, {vals[1]}, {bias}, {i64_array(a['strides'])}, "
                f"{i64_array(a['pads'])}, {i64_array(a['dilations'])}, {int(a['groups'])}, "
                f"{'&' + pack if pack else 'NULL'}, {dst})")
    k, s, p, d = a["kernel"], a["strides"], a["pads"], a["dilations"]
    if len(k) == 1:     # 1-D: the runtime pools an NCW tensor as NC1W
        k, s, p, d = [1, k[0]], [1, s[0]], [0, p[0], 0, p[1]], [1, d[0]]
    elif len(k) == 3:
        return (f"dlvm_rt_pool3d(ctx, {vals[0]}, {i64_array(k)}, {i64_array(s)}, "
                f"{i64_array(p)}, {i64_array(d)}, {int(bool(a['ceil_mode']))}, "
                f"{int(op == 'maxpool2d')}, {int(bool(a.get('count_include_pad')))}, {dst})")
    elif len(k) != 2:
        raise Unsupported("pooling over other than 1 to 3 spatial dims")
    if op == "avgpool2d":
        return (f"dlvm_rt_avgpool2d(ctx, {vals[0]}, {i64_array(k)}, {i64_array(s)}, "
                f"{i64_array(p)}, {i64_array(d)}, {int(bool(a['ceil_mode']))}, "
                f"{int(bool(a['count_include_pad']))}, {dst})")
    return (f"dlvm_rt_maxpool2d(ctx, {vals[0]}, {i64_array(k)}, {i64_array(s)}, "
            f"{i64_array(p)}, {i64_array(d)}, {int(bool(a['ceil_mode']))}, {dst})")


def _static_inner_extent(shapes: list, variant: Variant) -> int | None:
    """The length of the variant's innermost (merged) axis where every input fixes it, else
    None. A reduction's rows shorter than SHORT_ROW (an attention's softmax over 32 keys) get
    the JIT's short-row vector loops, as the JIT's own runner gives them from the run's shapes:
    LLVM's interleaved loop takes 64 floats a trip, and such a row ran in its scalar remainder
    (a fifth of a small multi-head attention's time)."""
    n, extent = variant.domain_rank, 1
    for ax in variant.groups[-1] if variant.groups else []:
        size = 1
        for s in shapes:
            i = ax - (n - len(s))
            if i < 0:
                continue
            if not isinstance(s[i], int):
                return None
            size = max(size, s[i])
        extent *= size
    return extent


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str = "", indent: int = 1) -> None:
        self.lines.append("    " * indent + line if line else "")


class ProgramCompiler:
    """Writes the C of every function of `module` (C `prefix` for exported names)."""

    def __init__(self, module: Module, prefix: str, vm_fallback: bool = False):
        """`vm_fallback`: an instruction with no library code calls back into the VM that loads
        the library (the native tier) instead of making the program unsupported."""
        self.module = module
        self.vm_fallback = vm_fallback
        self.types = verify_module(module)
        self.prefix = prefix
        self.out = CProgram(prefix)
        self.const_values: dict[str, str] = {}      # module constant -> C dlvm_val name
        self.packs: set[str] = set()
        self.pack_decls: list[str] = []
        self._lowered: dict[tuple, RegionKernel] = {}      # (structure, spec) -> its kernel
        self.w = _Writer()

    # -- the whole program ----------------------------------------------------------------

    def compile(self) -> CProgram:
        w = self.w
        w('#include "dlvm_aot_rt.h"', 0)
        w(f'#include "{self.prefix}.h"', 0)
        w("#include <math.h>", 0)
        w("#include <stdlib.h>", 0)
        w("#include <string.h>", 0)
        w("", 0)
        for cname in self.module.constants:
            self._module_constant(cname)
        for f in self.module.functions.values():
            w(f"static int32_t fn_{ident(f.name)}(dlvm_ctx *ctx, dlvm_val *args, dlvm_val *results);", 0)
        w("", 0)
        body = _Writer()
        saved, self.w = self.w, body
        for fname in self.module.functions:
            self._function(fname)
        for fname in self.module.functions:
            self._entry(fname)
        self.w = saved
        for decl in self.pack_decls:
            self.w(decl, 0)
        for k in self.out.kernels:
            self._kernel_table(k)
        self.w.lines += body.lines
        self.out.source = "\n".join(self.w.lines) + "\n"
        return self.out

    def _module_constant(self, name: str) -> None:
        c = self.module.constants[name]
        if c.type.dtype not in C_TYPES:
            self.out.unsupported.append(f"constant @{name}: {_no_c_type(c.type.dtype)}")
            return
        # (np.ascontiguousarray would make a 0-d constant 1-d)
        value = np.array(c.value, dtype=c.type.dtype.np, order="C")
        blob = self._blob(value)
        cv = f"C_{ident(name)}"
        shape = ", ".join(str(int(d)) for d in value.shape) or "0"
        self.w(f"extern const unsigned char {blob}[];", 0)
        self.w(f"static const dlvm_val {cv} = {{NULL, (void *){blob}, {{{shape}}}, {value.ndim}, "
               f"{dtype_code(c.type.dtype)}}};", 0)
        self.const_values[name] = cv

    def _packed(self, const: str) -> str:
        """The static cache of constant `const` packed for the GEMM kernel (one per constant)."""
        name = f"P_{ident(const)}"
        if name not in self.packs:
            self.packs.add(name)
            self.pack_decls.append(f"static dlvm_rt_packed {name};")
        return name

    def _conv_pack(self, ins: Instr) -> str | None:
        """The packed-weights static of a convolution whose weights are a module constant (the
        runtime packs them once, at the first call, instead of on every call: 9% of ResNet-18's
        time at batch 1)."""
        if ins.op not in ("conv2d", "conv3d") or not isinstance(ins.operands[1], ConstRef):
            return None
        return self._packed(ins.operands[1].name)

    def _blob(self, value: np.ndarray) -> str:
        cname = f"dlvm_{ident(self.prefix)}_const{len(self.out.blobs)}"
        self.out.blobs.append(Blob(cname, value.tobytes()))
        return cname

    # -- one function ---------------------------------------------------------------------

    def _function(self, fname: str) -> None:
        func = self.module.functions[fname]
        types = self.types[fname]
        regions = {(r.block, r.start): r
                   for r in form_regions(self.module, fname, types, max_operands=MAX_OPERANDS)}
        regs: dict[str, int] = {}
        for p in func.params:
            regs.setdefault(p.name, len(regs))
        for b in func.blocks:
            for ins in b.instrs:
                for r in ins.results:
                    regs.setdefault(r, len(regs))
        dim_names: list[str] = []
        for t in [p.type for p in func.params] + list(func.results):
            for d in t.shape:
                if isinstance(d, str) and d not in dim_names:
                    dim_names.append(d)
        self.regs, self.dims, self.fname = regs, dim_names, fname
        w = self.w
        w(f"static int32_t fn_{ident(fname)}(dlvm_ctx *ctx, dlvm_val *args, dlvm_val *results) {{", 0)
        w(f"dlvm_val r[{max(len(regs), 1)}];")
        w("memset(r, 0, sizeof r);")
        w(f"int64_t dims[{max(len(dim_names), 1)}];")
        w(f"for (int i = 0; i < {max(len(dim_names), 1)}; i++) dims[i] = -1;")
        w("(void)dims;")
        w(f"if (++ctx->depth > {200}) {{ dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, "
          f"\"call depth above 200 at @{fname}\"); goto fail; }}")
        for t in [p.type for p in func.params] + list(func.results):
            if t.dtype not in C_TYPES:
                self.out.unsupported.append(f"@{fname} signature: {_no_c_type(t.dtype)}")
                return
        for i, p in enumerate(func.params):
            w(f"if (dlvm_rt_bind(ctx, {c_string(p.name)}, args[{i}].data, args[{i}].shape, "
              f"args[{i}].rank, args[{i}].dtype, {self._type_args(p.type)}, dims, &r[{regs[p.name]}])) "
              f"goto fail;")
            w(f"if (args[{i}].buf) {{ r[{regs[p.name]}].buf = args[{i}].buf; args[{i}].buf->refs++; }}")
        for bi, blk in enumerate(func.blocks):
            w(f"L_{ident(blk.label)}:", 0)
            # every block counts against the call's budget, as the VM's max_steps
            w("if (--ctx->steps < 0) { dlvm_rt_fail(ctx, DLVM_RT_ERR_RESOURCE, \"the program ran more "
              "than %lld blocks\", (long long)dlvm_rt_max_steps()); goto fail; }")
            i = 0
            while i < len(blk.instrs):
                region = regions.get((bi, i))
                where = f"@{fname} block {blk.label}"
                try:
                    row = types[bi][i] if i < len(types[bi]) else None
                    for t in (row.operands + row.results) if row is not None else []:
                        if t.dtype not in C_TYPES:
                            raise Unsupported(_no_c_type(t.dtype))
                    mark, scopes = len(self.w.lines), self._scopes
                    if region is not None:
                        try:
                            self._region(region, blk.instrs, types[bi], f"{where}, instructions "
                                         f"{i}-{region.end - 1}")
                            i = region.end
                            continue
                        except Decline:
                            # no shape the region can take has a plan: its instructions one by
                            # one (the build failed, and the whole program stayed on the VM)
                            del self.w.lines[mark:]
                            self._scopes = scopes
                            regions.pop((bi, i))
                    try:
                        self._instr(bi, i, blk.instrs[i], types[bi][i],
                                    f"{where}, instruction {i} ({blk.instrs[i].op})")
                    except Unsupported:
                        if not self._vm_runs(blk.instrs[i]):
                            raise
                        del self.w.lines[mark:]         # what the failed attempt wrote
                        self._scopes = scopes
                        self._vm_instr(bi, i, blk.instrs[i], types[bi][i],
                                       f"{where}, instruction {i} ({blk.instrs[i].op})")
                except Unsupported as e:
                    loc = blk.instrs[i].loc
                    at = f"{loc.file}:{loc.line}: " if loc is not None else ""
                    self.out.unsupported.append(f"{at}@{fname} block {blk.label} instruction {i}: "
                                                f"{blk.instrs[i].op}: {e}")
                i += 1
        w("done:", 0)
        w("for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) dlvm_rt_release(&r[i]);")
        w("ctx->depth--;")
        w("return 0;")
        w("fail:", 0)
        w("for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) dlvm_rt_release(&r[i]);")
        w("ctx->depth--;")
        w("return ctx->status->code ? ctx->status->code : DLVM_RT_ERR_TRAP;")
        w("}", 0)
        w("", 0)

    def _type_args(self, t: TensorType) -> str:
        """want_dtype, want_rank, want shape, named-dim indices (for dlvm_rt_bind)."""
        want = [d if isinstance(d, int) else 0 for d in t.shape]
        named = [self.dims.index(d) if isinstance(d, str) and d in self.dims else
                 (-1 if isinstance(d, int) else -2) for d in t.shape]
        named_c = "(const int32_t[]){" + ", ".join(str(n) for n in named or [0]) + "}"
        return f"{dtype_code(t.dtype)}, {t.rank}, {i64_array(want)}, {named_c}"

    def _shape_expr(self, shape) -> str:
        """A C int64_t[] of a static shape whose named dims come from this call's `dims`."""
        parts = []
        for d in shape:
            if isinstance(d, int):
                parts.append(str(d))
            elif isinstance(d, str) and d in self.dims:
                parts.append(f"dims[{self.dims.index(d)}]")
            else:
                raise Unsupported(f"a shape with dim {d!r} that no parameter binds")
        return "(const int64_t[]){" + ", ".join(parts or ["0"]) + "}"

    def _dims_bound(self, shape) -> str:
        """A C condition that every named dim of `shape` is bound."""
        conds = [f"dims[{self.dims.index(d)}] < 0" for d in shape if isinstance(d, str) and d in self.dims]
        return " || ".join(conds) or "0"

    # -- operands -------------------------------------------------------------------------

    def _value(self, o: Any, t: TensorType, temps: list[str]) -> str:
        """A C expression of type dlvm_val* for operand `o` of type `t`."""
        if isinstance(o, Reg):
            return f"&r[{self.regs[o.name]}]"
        if isinstance(o, ConstRef):
            return f"(dlvm_val *)&{self.const_values[o.name]}"
        if isinstance(o, Imm):
            name = f"imm{len(temps)}"
            temps.append(name)
            v = o.value
            if t.dtype is DType.F16:         # its bits (dlvm_aot_rt.c: store_scalar)
                bits = int(np.array(float(v), np.float16).view(np.uint16))
            else:
                bits = int(v) if not isinstance(v, float) or v == v else 0
            self.w(f"dlvm_val {name}; memset(&{name}, 0, sizeof {name});", 2)
            self.w(f"if (dlvm_rt_fill(ctx, &{name}, {dtype_code(t.dtype)}, 0, NULL, "
                   f"{c_double(float(v))}, {bits}LL)) goto {self._fail};", 2)
            return f"&{name}"
        raise Unsupported(f"operand {o}")

    # -- regions --------------------------------------------------------------------------

    def _region(self, region: Region, instrs: list[Instr], rows, where: str) -> None:
        if region.kind in EPILOGUE_KINDS and self._conv_relu(region, instrs, rows, where):
            return
        if region.kind in EPILOGUE_KINDS:
            head = instrs[region.start]
            self._open(where)
            temps: list[str] = []
            self.w("dlvm_val head; memset(&head, 0, sizeof head);", 2)
            self._head(head, rows[region.start], "&head", temps)
            if region.end > region.start + 1:
                self._run_kernel(region, rows, where, temps, head_value="&head")
            else:
                self.w(f"dlvm_rt_assign(&r[{self.regs[head.results[0]]}], &head);", 2)
            self.w("dlvm_rt_release(&head);", 2)
            self._close(temps)
            return
        self._open(where)
        temps = []
        self._run_kernel(region, rows, where, temps)
        self._close(temps)

    def _conv_relu(self, region: Region, instrs: list[Instr], rows, where: str) -> bool:
        """An f32 convolution whose epilogue is only a relu of it (a CNN's conv-ReLU after
        BatchNorm folded into the weights): one runtime call that applies the relu as the
        products store, instead of a pass over the activations afterwards."""
        if region.end != region.start + 2:
            return False
        head, act = instrs[region.start], instrs[region.start + 1]
        if head.op != "conv2d" or act.op != "relu" or rows[region.start].results[0].dtype is not \
                DType.F32 or act.operands[0] != Reg(head.results[0]) or \
                list(region.outputs) != [act.results[0]] or \
                Reg(act.results[0]) in head.operands:     # the result written over an operand
            return False
        self._open(where)
        temps: list[str] = []
        vals = [self._value(o, ot, temps) for o, ot in zip(head.operands, rows[region.start].operands)]
        a = OPS["conv2d"].with_defaults(head.attrs)
        dst = f"&r[{self.regs[act.results[0]]}]"
        call = _compute_call("conv2d", a, vals, dst, self._conv_pack(head), relu=True)
        self.w(f"if ({call}) goto {self._fail};", 2)
        self._close(temps)
        return True

    def _run_kernel(self, region: Region, rows, where: str, temps: list[str],
                    head_value: str | None = None) -> None:
        k = build_kernel(self.module, self.types[region.func], region)
        shapes = []
        for t in k.inputs:
            if t.source < 0:
                shapes.append(rows[region.start].results[0].shape)
            else:
                shapes.append(self._input_type(region, rows, t.source).shape)
        # a named or unknown dim lined up with a literal size is that size or 1 (a broadcast) at
        # run time: a variant for each way (every combination for up to 3 such axes, else all
        # one way or all the other), tried in turn by the runtime (dlvm_rt_region_any)
        axes = ambiguous_axes(shapes)
        if len(axes) <= 3:
            choices = [frozenset(a for j, a in enumerate(axes) if m >> j & 1)
                       for m in range(1 << len(axes))]
        else:
            choices = [frozenset(), frozenset(axes)]
        variants, errors = [], []
        # the literal ambiguities' variants first (each of them as before), then the unknown
        # dims' broadcasts with each, up to MAX_VARIANTS
        combos = [(ones, {}) for ones in choices] + [
            (ones, own) for own in _own_ones(shapes)[1:] for ones in choices]
        for ones, own in combos[:max(MAX_VARIANTS, len(choices))]:
            try:
                v = variant_for(k, representatives(shapes, ones, own))
            except (ValueError, Decline) as e:      # a variant no run can take: dropped
                errors.append(e)
                continue
            if all(v.spec != u.spec or v.groups != u.groups for u in variants):
                variants.append(v)
        if not variants:
            raise errors[0]
        rows_of = _row_nodes(k)
        cnames = []
        for variant in variants:
            inner = _static_inner_extent(shapes, variant)
            if inner is not None and inner < SHORT_ROW:
                variant = Variant(replace(variant.spec, short_rows=True), variant.domain_rank,
                                  variant.groups)
            cname = f"dlvm_{ident(self.prefix)}_k{len(self.out.kernels)}"
            # a region alike another but for its registers (an unrolled loop's steps) calls the
            # other's kernel: one function compiled, not one per step (SRU's 32 steps made 255)
            same = (k.structure(), variant.spec)
            shared = self._lowered.get(same)
            if shared is not None:
                self.out.kernels.append(RegionKernel(cname, k, variant, where, "", shared.slots,
                                                     rows_of, shared.function))
            else:
                ir_module, slots = lower_kernel(k, variant.spec, cname + "_fn")
                rk = RegionKernel(cname, k, variant, where, str(ir_module), slots, rows_of)
                self.out.kernels.append(rk)
                self._lowered[same] = rk
            cnames.append(cname)
        ins = []
        for t in k.inputs:
            if t.source < 0:
                ins.append(head_value)
            else:
                o = region.inputs[t.source]
                ins.append(self._value(o, self._input_type(region, rows, t.source), temps))
        n_out = len(k.outputs)
        self.w(f"dlvm_val *ins[] = {{{', '.join(ins) or 'NULL'}}};", 2)
        self.w(f"dlvm_val outs[{max(n_out, 1)}]; memset(outs, 0, sizeof outs);", 2)
        tables = ", ".join(f"&{c}" for c in cnames)
        self.w(f"if (dlvm_rt_region_any(ctx, (const dlvm_rt_kernel *const[]){{{tables}}}, "
               f"{len(cnames)}, ins, outs)) {{ for (int j = 0; j < {n_out}; j++) "
               f"dlvm_rt_release(&outs[j]); goto {self._fail}; }}", 2)
        for j, o in enumerate(k.outputs):
            self.w(f"dlvm_rt_assign(&r[{self.regs[o.name]}], &outs[{j}]); dlvm_rt_release(&outs[{j}]);", 2)

    def _input_type(self, region: Region, rows, index: int) -> TensorType:
        operand = region.inputs[index]
        instrs = self.module.functions[region.func].blocks[region.block].instrs
        for ii in range(region.start, region.end):
            for o, t in zip(instrs[ii].operands, rows[ii].operands):
                if o == operand:
                    return t
        raise Unsupported(f"region input {operand} is not read")

    def _kernel_table(self, rk: RegionKernel) -> None:
        w, k, v = self.w, rk.kernel, rk.variant
        n_axes = v.spec.rank
        groups = []
        for g in v.groups:
            groups += [len(g)] + g + [0] * (MAX_RANK - len(g))
        pats = [int(b) for p in list(v.spec.inputs) + list(v.spec.outputs) for b in p]
        nodes = []
        for n in k.nodes:
            if n.op == "load":
                nodes += [0, n.attr, -1, -1]
            elif n.op == "const":
                nodes += [1, -1, -1, -1]
            elif n.op in REDUCE_KINDS:
                nodes += [2 if n.attr else 3, n.args[0], -1, -1]
            else:
                args = list(n.args)[:3] + [-1] * (3 - min(len(n.args), 3))
                if len(n.args) > 3:
                    raise Unsupported(f"a kernel node {n.op} of {len(n.args)} operands")
                nodes += [5 if len(nodes) // 4 in rk.rows else 4] + args
        math_ops = sum(1 for n in k.nodes if n.op in OPS and OPS[n.op].facts.costly)
        nbytes = sum(t.dtype.itemsize for t in k.inputs) + sum(o.dtype.itemsize for o in k.outputs)
        work = 0.05 * nbytes + 0.03 * len(k.nodes) + 0.4 * math_ops
        c = rk.cname
        w(f"extern int32_t {rk.function}();", 0)
        w(f"static const int32_t {c}_groups[] = {{{', '.join(map(str, groups or [0]))}}};", 0)
        w(f"static const uint8_t {c}_patterns[] = {{{', '.join(map(str, pats or [0]))}}};", 0)
        w(f"static const int32_t {c}_nodes[] = {{{', '.join(map(str, nodes))}}};", 0)
        w(f"static const int32_t {c}_out_nodes[] = {{{', '.join(str(o.node) for o in k.outputs)}}};", 0)
        w(f"static const int32_t {c}_out_dtypes[] = "
          f"{{{', '.join(dtype_code(o.dtype) for o in k.outputs)}}};", 0)
        w(f"static const dlvm_rt_kernel {c} = {{{c_string(rk.where)}, (void *){rk.function}, "
          f"{len(k.inputs)}, {len(k.outputs)}, {len(k.nodes)}, {v.domain_rank}, {k.inner}, "
          f"{n_axes}, {v.spec.outer}, "
          f"{c}_groups, {c}_patterns, {c}_nodes, {c}_out_nodes, {c}_out_dtypes, "
          f"{rk.slots}, {work!r}}};", 0)
        w("", 0)

    # -- instructions outside regions -----------------------------------------------------

    _scopes: list[int] = []
    _scope_count = 0

    @property
    def _fail(self) -> str:
        """The label the innermost open scope's failures go to."""
        return f"fail_{self._scopes[-1]}"

    def _open(self, where: str) -> None:
        self._scope_count += 1
        self._scopes = self._scopes + [self._scope_count]
        self.w("{", 1)
        self.w(f"ctx->where = {c_string(where)};", 2)

    def _close(self, temps: list[str]) -> None:
        n = self._scopes[-1]
        for t in temps:
            self.w(f"dlvm_rt_release(&{t});", 2)
        self.w(f"if (0) {{ fail_{n}:", 2)
        for t in temps:
            self.w(f"dlvm_rt_release(&{t});", 3)
        self.w("goto fail; }", 3)
        self.w("}", 1)
        self._scopes = self._scopes[:-1]

    def _instr(self, bi: int, ii: int, ins: Instr, t, where: str) -> None:
        op = ins.op
        func = self.module.functions[self.fname]
        if op == "jmp":
            self.w(f"goto L_{ident(ins.attrs['target'])};")
            return
        if op == "br":
            c = ins.operands[0]
            if not isinstance(c, Reg):
                raise Unsupported("a branch on a literal")
            self.w(f"if (dlvm_rt_truth(&r[{self.regs[c.name]}])) goto L_{ident(ins.attrs['if_true'])}; "
                   f"else goto L_{ident(ins.attrs['if_false'])};")
            return
        self._open(where)
        temps: list[str] = []
        n = self._scopes[-1]
        if op == "ret":
            vals = [self._value(o, ot, temps) for o, ot in zip(ins.operands, t.operands)]
            for j, v in enumerate(vals):
                self.w(f"dlvm_rt_assign(&results[{j}], {v});", 2)
            for tmp in temps:
                self.w(f"dlvm_rt_release(&{tmp});", 2)
            self.w("goto done;", 2)
            self.w(f"if (0) {{ fail_{n}: goto fail; }}", 2)
            self.w("}", 1)
            self._scopes = self._scopes[:-1]
            return
        if op == "iota":        # its shape may name the batch: the call's dims say how long
            a = OPS["iota"].with_defaults(ins.attrs)
            if a["dtype"].name == "f16":
                raise Unsupported("iota of f16")
            shape = list(a["shape"])
            axis = a["axis"] % len(shape) if shape else 0
            dst = f"&r[{self.regs[ins.results[0]]}]"
            self.w(f"if ({self._dims_bound(shape)}) {{ dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "
                   f"\"a named dim of the iota is not bound\"); goto fail_{n}; }}", 2)
            self.w(f"if (dlvm_rt_iota(ctx, {dst}, {dtype_code(a['dtype'])}, {len(shape)}, "
                   f"{self._shape_expr(shape)}, {axis})) goto fail_{n};", 2)
            self._close(temps)
            return
        if op == "const":
            rt: TensorType = ins.attrs["type"]
            value = np.asarray(ins.attrs["value"])
            dst = f"&r[{self.regs[ins.results[0]]}]"
            if value.ndim == 0:
                v = value.item()
                iv = int(v) if not (isinstance(v, float) and (v != v or abs(v) == float("inf"))) else 0
                if rt.dtype is DType.F16:        # its bits (dlvm_aot_rt.c: store_scalar)
                    iv = int(np.array(float(v), np.float16).view(np.uint16))
                self.w(f"if ({self._dims_bound(rt.shape)}) {{ dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "
                       f"\"a named dim of the const is not bound\"); goto fail_{n}; }}", 2)
                self.w(f"if (dlvm_rt_fill(ctx, {dst}, {dtype_code(rt.dtype)}, {rt.rank}, "
                       f"{self._shape_expr(rt.shape)}, {c_double(float(v))}, {iv}LL)) goto fail_{n};", 2)
            else:
                data = np.array(value, dtype=rt.dtype.np, order="C")   # 0-d stays 0-d
                blob = self._blob(data)
                self.w(f"extern const unsigned char {blob}[];", 2)
                self.w(f"dlvm_rt_const({dst}, {blob}, {dtype_code(rt.dtype)}, {data.ndim}, "
                       f"{i64_array(data.shape)});", 2)
        elif op == "mov":
            src = self._value(ins.operands[0], t.operands[0], temps)
            self.w(f"dlvm_rt_assign(&r[{self.regs[ins.results[0]]}], {src});", 2)
        elif op == "call":
            callee = self.module.functions[ins.attrs["callee"]]
            args = [self._value(o, ot, temps) for o, ot in zip(ins.operands, t.operands)]
            na, nr = max(len(args), 1), max(len(ins.results), 1)
            self.w(f"dlvm_val cargs[{na}], cres[{nr}]; memset(cargs, 0, sizeof cargs); "
                   f"memset(cres, 0, sizeof cres);", 2)
            for j, a in enumerate(args):
                self.w(f"dlvm_rt_assign(&cargs[{j}], {a});", 2)
            self.w(f"int32_t crc = fn_{ident(callee.name)}(ctx, cargs, cres);", 2)
            self.w(f"for (int j = 0; j < {na}; j++) dlvm_rt_release(&cargs[j]);", 2)
            self.w(f"if (crc) {{ for (int j = 0; j < {nr}; j++) dlvm_rt_release(&cres[j]); "
                   f"goto fail_{n}; }}", 2)
            for j, res in enumerate(ins.results):
                self.w(f"dlvm_rt_assign(&r[{self.regs[res]}], &cres[{j}]); dlvm_rt_release(&cres[{j}]);", 2)
            self.w(f"ctx->where = {c_string(where)};", 2)
        elif op == "assert":
            v = self._value(ins.operands[0], t.operands[0], temps)
            msg = c_string(str(ins.attrs.get("message", "assertion failed")))
            self.w(f"for (int64_t j = 0; j < dlvm_rt_numel({v}); j++) "
                   f"if (!((const uint8_t *)({v})->data)[j]) "
                   f"{{ dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, \"%s\", {msg}); goto fail_{n}; }}", 2)
        elif op in HELPER_OPS:
            self._helper(ins, t, temps, n)
        else:
            self._one_instruction_region(bi, ii, ins, t, where, temps)
        self._close(temps)
        del func

    def _vm_runs(self, ins: Instr) -> bool:
        """Whether the VM may run `ins` for the library: a library built for the native tier, an
        op with a reference and no control flow, not random, whose attributes name no dim (the
        library does not hand the VM the call's dims)."""
        op = OPS.get(ins.op)
        if not self.vm_fallback or op is None or op.family.name == "CONTROL" or op.reference is None:
            return False
        if op.random:       # its stream lives in the VM's interpreter (random_streams.py)
            return False
        return not op.named_shape_attrs(op.with_defaults(ins.attrs))

    def _vm_instr(self, bi: int, ii: int, ins: Instr, t, where: str) -> None:
        """`ins` run by the VM that loaded the library (dlvm_aot_rt.c: dlvm_rt_vm_instruction),
        by its index in the library's table (the manifest's vm_instructions)."""
        index = len(self.out.vm_instructions)
        self.out.vm_instructions.append([self.fname, bi, ii])
        self._open(f"{where} on the VM")
        temps: list[str] = []
        n = self._scopes[-1]
        vals = [self._value(o, ot, temps) for o, ot in zip(ins.operands, t.operands)]
        k = len(ins.results)
        self.w(f"const dlvm_val *vin[{max(len(vals), 1)}] = {{{', '.join(vals) or 'NULL'}}};", 2)
        self.w(f"dlvm_val vout[{k}]; memset(vout, 0, sizeof vout);", 2)
        self.w(f"if (dlvm_rt_vm_instruction(ctx, {index}, vin, {len(vals)}, vout, {k})) {{ "
               f"for (int j = 0; j < {k}; j++) dlvm_rt_release(&vout[j]); goto fail_{n}; }}", 2)
        for j, res in enumerate(ins.results):
            self.w(f"dlvm_rt_assign(&r[{self.regs[res]}], &vout[{j}]); "
                   f"dlvm_rt_release(&vout[{j}]);", 2)
        self._close(temps)

    def _one_instruction_region(self, bi: int, ii: int, ins: Instr, t, where: str,
                                temps: list[str]) -> None:
        op = OPS.get(ins.op)
        if op is None or op.family.name in ("CONTROL", "MOVEMENT", "CONTRACTION", "ARGREDUCE"):
            raise Unsupported("not compiled ahead of time yet")
        if op.random:
            raise Unsupported("draws random numbers, whose stream the VM keeps: not compiled "
                              "ahead of time yet")
        if computes(op) and any(d.dtype is DType.F16 for d in [*t.operands, *t.results]):
            # (a kernel holds f16 as a float and rounds only at casts: the pipeline writes f16
            # arithmetic as f32 between casts, jit/passes/widen.py; unwidened, the VM runs it)
            raise Unsupported("f16 arithmetic (the pipeline widens it to f32)")
        inputs = []
        for o in ins.operands:
            if isinstance(o, (Reg, ConstRef)) and o not in inputs:
                inputs.append(o)
        kind = REDUCE if op.family.name == "REDUCE" or ins.op in (
            "softmax", "log_softmax", "layer_norm") else ELEMENTWISE
        region = Region(self.fname, bi, ii, ii + 1, inputs, list(ins.results), kind)
        rows = self.types[self.fname][bi]
        try:
            self._run_kernel(region, rows, where, temps)
        except Unsupported:
            raise
        except Exception as e:  # noqa: BLE001 - the JIT cannot build it: say why
            # (dlvm_rt_reduce has code for f32 and f64, and for i32 and i64 but for a mean;
            # anything else runs on the VM)
            kind = _reduce_kind(ins.op)
            dtype = t.operands[0].dtype
            if kind is not None and (dtype in _FLOATS or
                                     (dtype in (DType.I32, DType.I64) and kind != _MEAN_KIND)):
                self._any_axes_reduce(ins, t, temps)
                return
            raise Unsupported(f"no kernel: {e}") from None

    def _any_axes_reduce(self, ins: Instr, t, temps: list[str]) -> None:
        """A float (or i32 / i64) reduction the kernels cannot fold (over leading or middle axes)
        through the runtime's dlvm_rt_reduce."""
        a = OPS[ins.op].with_defaults(ins.attrs)
        rank = t.operands[0].rank
        axes = range(rank) if a.get("axes") is None else [ax % rank for ax in a["axes"]]
        mask = sum(1 << ax for ax in set(axes))
        x = self._value(ins.operands[0], t.operands[0], temps)
        dst = f"&r[{self.regs[ins.results[0]]}]"
        self.w(f"if (dlvm_rt_reduce(ctx, {x}, {mask}u, {_reduce_kind(ins.op)}, "
               f"{1 if a.get('keepdims') else 0}, {dst})) goto {self._fail};", 2)

    def _helper(self, ins: Instr, t, temps: list[str], n: int) -> None:
        op, a = ins.op, OPS[ins.op].with_defaults(ins.attrs)
        allowed = HELPER_OPS[op]
        if allowed is not None and t.operands and t.operands[0].dtype not in allowed:
            # decided here, so the VM runs this instruction alone from inside the library:
            # the runtime's guard would fail the whole call (and keep the signature on the VM)
            raise Unsupported(f"{op} of {t.operands[0].dtype} has no library code")
        vals = [self._value(o, ot, temps) for o, ot in zip(ins.operands, t.operands)]
        dst = f"&r[{self.regs[ins.results[0]]}]"
        rt: TensorType = t.results[0]
        fail = f"goto fail_{n};"
        x_rank = t.operands[0].rank if t.operands else 0
        if op in ("matmul", "conv2d", "conv3d", "maxpool2d", "avgpool2d"):
            call = _compute_call(op, a, vals, dst, self._conv_pack(ins))
        elif op == "resize":
            call = self._resample_call(ins, a, t, vals[0], dst)
        elif op == "grid_sample":
            if t.operands[1].dtype not in HELPER_OPS[op] or not 1 <= x_rank - 2 <= 3:
                raise Unsupported(f"grid_sample of {x_rank - 2} spatial dims at a "
                                  f"{t.operands[1].dtype} grid has no library code")
            call = (f"dlvm_rt_grid_sample(ctx, {vals[0]}, {vals[1]}, "
                    f"{sampling.MODES.index(a['mode'])}, "
                    f"{sampling.PADDINGS.index(a['padding_mode'])}, "
                    f"{int(bool(a['align_corners']))}, {dst})")
        elif op == "reshape":
            call = f"dlvm_rt_reshape(ctx, {vals[0]}, {len(a['shape'])}, {i64_array(a['shape'])}, {dst})"
        elif op in ("expand_dims", "squeeze"):
            # the result's dims taken from the operand's: which operand dim each result dim is
            if op == "expand_dims":
                axes = {ax % rt.rank for ax in a["axes"]}
                src = iter(range(x_rank))
                picks = [-1 if d in axes else next(src) for d in range(rt.rank)]
            else:
                xt = t.operands[0]
                axes = ({ax % x_rank for ax in a["axes"]} if a.get("axes") is not None
                        else {d for d, s in enumerate(xt.shape) if s == 1})
                picks = [d for d in range(x_rank) if d not in axes]
            dims = ", ".join("1" if p < 0 else f"({vals[0]})->shape[{p}]" for p in picks) or "0"
            call = f"dlvm_rt_reshape(ctx, {vals[0]}, {rt.rank}, (const int64_t[]){{{dims}}}, {dst})"
        elif op == "transpose":
            perm = a.get("perm")
            perm = list(reversed(range(x_rank))) if perm is None else [p % x_rank for p in perm]
            call = f"dlvm_rt_transpose(ctx, {vals[0]}, {i64_array(perm)}, {dst})"
        elif op == "broadcast_to":
            self.w(f"if ({self._dims_bound(a['shape'])}) {{ dlvm_rt_fail(ctx, DLVM_RT_ERR_TRAP, "
                   f"\"a named dim of the shape is not bound\"); {fail} }}", 2)
            call = (f"dlvm_rt_broadcast_to(ctx, {vals[0]}, {len(a['shape'])}, "
                    f"{self._shape_expr(a['shape'])}, {dst})")
        elif op == "concat":
            call = (f"dlvm_rt_concat(ctx, (dlvm_val *const[]){{{', '.join(vals)}}}, {len(vals)}, "
                    f"{int(a['axis'])}, {dst})")
        elif op == "slice":
            starts, stops, steps = [0] * x_rank, [2**62] * x_rank, [1] * x_rank
            axes = a.get("axes")
            axes = list(range(len(a["starts"]))) if axes is None else [ax % x_rank for ax in axes]
            for j, ax in enumerate(axes):
                starts[ax], stops[ax] = int(a["starts"][j]), int(a["ends"][j])
                steps[ax] = int(a["steps"][j]) if a.get("steps") is not None else 1
            call = (f"dlvm_rt_slice(ctx, {vals[0]}, {i64_array(starts)}, {i64_array(stops)}, "
                    f"{i64_array(steps)}, {dst})")
        elif op == "gather_nd":
            call = f"dlvm_rt_gather_nd(ctx, {vals[0]}, {vals[1]}, {int(a['batch_dims'])}, {dst})"
        elif op == "range":
            call = f"dlvm_rt_range(ctx, {vals[0]}, {vals[1]}, {vals[2]}, {dst})"
        elif op == "topk":
            indices = f"&r[{self.regs[ins.results[1]]}]"
            call = (f"dlvm_rt_topk(ctx, {vals[0]}, {vals[1]}, {int(a['axis'])}, "
                    f"{int(bool(a['largest']))}, {dst}, {indices})")
        elif op in ("cumsum", "cumprod"):
            call = (f"dlvm_rt_cumulative(ctx, {vals[0]}, {vals[1]}, {int(op == 'cumprod')}, "
                    f"{int(bool(a['exclusive']))}, {int(bool(a['reverse']))}, {dst})")
        elif op in ("argmax", "argmin"):
            call = (f"dlvm_rt_argext(ctx, {vals[0]}, {int(a['axis'])}, {1 if a['keepdims'] else 0}, "
                    f"{1 if op == 'argmax' else -1}, {dst})")
        elif op == "reshape_dyn":
            call = (f"dlvm_rt_reshape_dyn(ctx, {vals[0]}, {vals[1]}, "
                    f"{1 if a.get('copy_zero') else 0}, {dst})")
        elif op == "broadcast_dyn":
            call = f"dlvm_rt_broadcast_dyn(ctx, {vals[0]}, {vals[1]}, {dst})"
        elif op == "fill":
            call = f"dlvm_rt_fill_dyn(ctx, {vals[0]}, {vals[1]}, {dst})"
        elif op == "pad":
            pads = [int(v) for v in a["pads"]]
            call = (f"dlvm_rt_pad(ctx, {vals[0]}, {i64_array(pads[:x_rank])}, "
                    f"{i64_array(pads[x_rank:])}, {c_double(float(a['value']))}, {dst})")
        elif op == "shape_of":
            call = f"dlvm_rt_shape_of(ctx, {vals[0]}, {dst})"
        elif op == "gather":
            call = f"dlvm_rt_gather(ctx, {vals[0]}, {vals[1]}, {int(a['axis'])}, {dst})"
        elif op == "gather_elements":
            call = f"dlvm_rt_gather_elements(ctx, {vals[0]}, {vals[1]}, {int(a['axis'])}, {dst})"
        elif op == "scatter_elements":
            red = _SCATTER_REDUCTION.get(a["reduction"])
            if red is None or (red and rt.dtype not in (DType.F32, DType.F64, DType.I32,
                                                        DType.I64)):
                raise Unsupported(f"scatter_elements reduction {a['reduction']} on {rt.dtype}")
            call = (f"dlvm_rt_scatter_elements(ctx, {vals[0]}, {vals[1]}, {vals[2]}, "
                    f"{int(a['axis'])}, {red}, {dst})")
        elif op == "scatter_nd":
            red = _SCATTER_REDUCTION.get(a["reduction"])
            if red is None or (red and rt.dtype not in (DType.F32, DType.F64, DType.I32,
                                                        DType.I64)):
                raise Unsupported(f"scatter_nd reduction {a['reduction']} on {rt.dtype}")
            call = f"dlvm_rt_scatter_nd(ctx, {vals[0]}, {vals[1]}, {vals[2]}, {red}, {dst})"
        elif op == "slice_dyn":
            call = f"dlvm_rt_slice_dyn(ctx, {', '.join(vals)}, {dst})"
        else:
            raise Unsupported("not compiled ahead of time yet")
        self.w(f"if ({call}) {fail}", 2)

    def _head(self, head: Instr, rows, dst: str, temps: list[str]) -> None:
        """The head of an epilogue region (a product, convolution or pool) into `dst`."""
        n = self._scopes[-1]
        vals = [self._value(o, ot, temps) for o, ot in zip(head.operands, rows.operands)]
        a = OPS[head.op].with_defaults(head.attrs)
        if head.op == "matmul" and isinstance(head.operands[1], ConstRef) and \
                rows.operands[1].rank >= 2 and rows.operands[1].dtype is DType.F32:
            pack = self._packed(head.operands[1].name)
            call = f"dlvm_rt_matmul_const(ctx, {vals[0]}, {vals[1]}, &{pack}, {dst})"
        elif head.op in ("matmul", "conv2d", "maxpool2d"):
            call = _compute_call(head.op, a, vals, dst, self._conv_pack(head))
        else:
            raise Unsupported(f"an epilogue region headed by {head.op}")
        self.w(f"if ({call}) {{ dlvm_rt_release({dst}); goto fail_{n}; }}", 2)

    def _resample_call(self, ins: Instr, a: dict, t, x: str, dst: str) -> str:
        """A resize whose target is a constant and whose resized axes are the input's last one
        or two, of static sizes: tap tables computed here by the interpreter's own tap math
        (isa/ops/resize.py), applied in one pass by dlvm_rt_resample."""
        from isa.ops.resize import axis_taps, constant_plan
        xt: TensorType = t.operands[0]
        target = ins.operands[1]
        if xt.dtype is not DType.F32 or not isinstance(target, ConstRef):
            raise Unsupported("resize of a run-time target or of a dtype other than f32")
        try:        # (an empty axis is left to the VM: its zeros or its trap)
            active = constant_plan(a, xt.shape, self.module.constants[target.name].value)
        except ValueError as e:
            raise Unsupported(f"resize: {e}") from None
        if not active:
            raise Unsupported("a resize that changes nothing")
        moved = sorted(axis for axis, *_ in active)
        r = xt.rank
        if moved not in ([r - 1], [r - 2], [r - 2, r - 1]) or not isinstance(xt.shape[r - 1], int):
            raise Unsupported("resize of axes other than the last one or two")
        by_axis = {axis: (n, out, scale) for axis, n, out, scale in active}
        tables = []
        for axis in ([r - 2, r - 1] if r - 2 in by_axis else [r - 1]):
            n, out, scale = by_axis.get(axis, (xt.shape[axis], xt.shape[axis], 1.0))
            if axis in by_axis:
                taps = axis_taps(a, n, out, scale)
            else:           # the last axis, not resized: each column itself
                taps = [(np.arange(n), np.ones(n))]
            idx = np.stack([i for i, _ in taps]).astype(np.int64)
            w = np.stack([np.broadcast_to(wt, (out,)) for _, wt in taps]).astype(np.float32)
            tables.append((n, out, len(taps), self._blob(np.ascontiguousarray(idx)),
                           self._blob(np.ascontiguousarray(w))))
        for *_, bi, bw in tables:
            self.w(f"extern const unsigned char {bi}[], {bw}[];", 2)
        nd = len(tables)
        if nd == 1:     # the last axis alone: a unit axis before it, one tap of weight 1
            tables.insert(0, (1, 1, 1, "(const int64_t[]){0}", "(const float[]){1.0f}"))
        (n0, o0, k0, i0, w0), (n1, o1, k1, i1, w1) = tables
        return (f"dlvm_rt_resample(ctx, {x}, {nd}, {n0}, {o0}, {k0}, {i0}, {w0}, "
                f"{n1}, {o1}, {k1}, {i1}, {w1}, {dst})")

    # -- exported entry points ------------------------------------------------------------

    def _entry(self, fname: str) -> None:
        func = self.module.functions[fname]
        w, p = self.w, self.prefix
        np_, nr = len(func.params), len(func.results)
        w(f"DLVM_API int32_t {p}_{ident(fname)}(const dlvm_tensor *inputs, dlvm_tensor *outputs, "
          f"dlvm_status *status) {{", 0)
        w("dlvm_status local;")
        w("if (!status) status = &local;")
        w("status->code = 0;")
        w("status->message[0] = 0;")
        w("dlvm_ctx ctx = {(dlvm_rt_status *)status, 0, dlvm_rt_max_steps(), NULL};")
        w(f"dlvm_val args[{max(np_, 1)}], res[{max(nr, 1)}];")
        w("memset(args, 0, sizeof args);")
        w("memset(res, 0, sizeof res);")
        if np_:
            w("if (!inputs) return dlvm_rt_fail(&ctx, DLVM_RT_ERR_ARGUMENT, \"inputs is NULL\");")
        if nr:
            w("if (!outputs) return dlvm_rt_fail(&ctx, DLVM_RT_ERR_ARGUMENT, \"outputs is NULL\");")
        for i in range(np_):
            w(f"if (inputs[{i}].rank < 0 || inputs[{i}].rank > DLVM_MAX_RANK) return dlvm_rt_fail(&ctx, "
              f"DLVM_RT_ERR_ARGUMENT, \"input {i} has rank %d\", inputs[{i}].rank);")
            w(f"dlvm_rt_const(&args[{i}], inputs[{i}].data, inputs[{i}].dtype, inputs[{i}].rank, "
              f"inputs[{i}].shape);")
        w("dlvm_rt_call_begin();")
        self._call_entry(fname, np_, nr)
        w("dlvm_rt_call_end();")
        w("int exported = 0;")
        w(f"for (int j = 0; j < {nr} && rc == 0; j++, exported++) {{")
        w("size_t bytes = (size_t)dlvm_rt_numel(&res[j]) * dlvm_rt_itemsize(res[j].dtype);", 2)
        w("void *data;", 2)
        w("if (res[j].buf && res[j].buf->refs == 1 && res[j].data == res[j].buf->data) {", 2)
        w("data = dlvm_rt_take_buffer(&res[j]);   /* the caller takes the buffer over */", 3)
        w("} else {", 2)
        w("data = malloc(bytes ? bytes : 1);", 3)
        w("dlvm_rt_note_result();", 3)
        w("if (!data) { rc = dlvm_rt_fail(&ctx, DLVM_RT_ERR_RESOURCE, \"out of memory for the results\"); "
          "break; }", 3)
        w("memcpy(data, res[j].data, bytes);", 3)
        w("}", 2)
        w("outputs[j].data = data;", 2)
        w("outputs[j].rank = res[j].rank;", 2)
        w("outputs[j].dtype = res[j].dtype;", 2)
        w("for (int d = 0; d < DLVM_MAX_RANK; d++)", 2)
        w("outputs[j].shape[d] = d < res[j].rank ? res[j].shape[d] : 0;", 3)
        w("}")
        w("if (rc) for (int j = 0; j < exported; j++) { free(outputs[j].data); outputs[j].data = NULL; }")
        w(f"for (int j = 0; j < {max(nr, 1)}; j++) dlvm_rt_release(&res[j]);")
        w(f"for (int j = 0; j < {max(np_, 1)}; j++) dlvm_rt_release(&args[j]);")
        w("return rc;")
        w("}", 0)
        w("", 0)

    def _call_entry(self, fname: str, np_: int, nr: int) -> None:
        """rc = the function over the call's arguments: as tiles of rows where the function
        allows it (jit/row_split.py) and the runtime finds it pays, else whole."""
        func, w, fn = self.module.functions[fname], self.w, f"fn_{ident(fname)}"
        split = row_split(self.module, fname, self.types[fname])
        # a function of a few kernels gains nothing from tiles (no layer's output to keep in
        # cache for the next, few hand-offs to save) and would pay for copying its results
        # into place: an erf GELU over 16 MB ran 1.69 ms whole, 2.21 ms as tiles
        if not isinstance(split, RowSplit) or split.stages < MIN_TILED_STAGES or \
                any(t.rank > MAX_RANK for t in func.results):
            w(f"int32_t rc = {fn}(&ctx, args, res);")
            return
        results = list(func.results)

        def ints(values) -> str:
            return ", ".join(str(v) for v in values)
        shapes = [d if isinstance(d, int) else -1
                  for t in results for d in [*t.shape, *[0] * (MAX_RANK - t.rank)]]
        w(f"static const int8_t split[] = {{{ints(int(b) for b in split.params)}}};")
        w(f"static const int32_t res_dtypes[] = {{{ints(dtype_code(t.dtype) for t in results)}}};")
        w(f"static const int32_t res_ranks[] = {{{ints(t.rank for t in results)}}};")
        w(f"static const int64_t res_shapes[] = {{{ints(shapes)}}};")
        w(f"int64_t tiles = dlvm_rt_row_tiles(args, {np_}, split, {split.row_bytes}LL, "
          f"{split.traffic_bytes}LL, {split.weight_bytes}LL);")
        w(f"int32_t rc = tiles > 1 ? dlvm_rt_run_rows(&ctx, {fn}, args, {np_}, split, res, {nr}, "
          f"res_dtypes, res_ranks, res_shapes, tiles) : {fn}(&ctx, args, res);")
