"""Build the kernel IR of a region: flatten its instructions (decompositions), expand composite
elementwise ops through their `expand` into primitives, and record loads, constants and outputs.

Nothing here knows a list of composite ops: the op table's `expand` and `decompose` say it all.
"""
from __future__ import annotations

from typing import Any

from isa.dtypes import DType
from isa.module import ConstRef, Imm, Module, Reg
from isa.ops import OPS
from isa.types import TensorType
from isa.verify import FunctionTypes

from .flatten import Prim, flatten_instr
from .kernel_ir import Kernel, KInput, KOutput, Node
from .regions import EPILOGUE_KINDS, Region, reduce_inner


class KernelBuildError(Exception):
    """The region cannot become a kernel (the runner declines with this reason)."""


def scalar_value(value: Any, dtype: DType) -> Any:
    if dtype.is_bool:
        return bool(value)
    if dtype.is_int:
        return int(value)
    return float(value)


class _Scalars:
    """The `s` object of op expansions: one method per op of the table, building nodes."""

    def __init__(self, kb: KernelBuilder):
        self._kb = kb

    def const(self, value: Any, like: int) -> int:
        dt = self._kb.kernel.nodes[like].dtype
        return self._kb.kernel.add(Node("const", dt, (), scalar_value(value, dt)))

    def __getattr__(self, op: str):
        if op not in OPS or not OPS[op].family.elementwise:
            raise AttributeError(f"expansion uses '{op}', which is not an elementwise op")

        def apply(*args: int, **attrs: Any) -> int:
            return self._kb.apply(op, list(args), attrs)
        return apply


class KernelBuilder:
    def __init__(self, name: str, inner: int):
        self.kernel = Kernel(name, inner=inner)
        self.s = _Scalars(self)

    def apply(self, op: str, args: list[int], attrs: dict[str, Any]) -> int:
        """Node of elementwise `op` on nodes `args`, expanding composite ops."""
        opdef = OPS[op]
        full = opdef.with_defaults(attrs)
        if opdef.expand is not None:
            return opdef.expand(self.s, full, *args)
        nodes = self.kernel.nodes
        out = opdef.infer([TensorType(nodes[a].dtype, ()) for a in args], full)[0]
        attr = full["to"] if op == "cast" else None
        return self.kernel.add(Node(op, out.dtype, tuple(args), attr))

    def reduce(self, op: str, arg: int, keepdims: bool) -> int:
        dt = self.kernel.nodes[arg].dtype
        if op == "reduce_mean":
            total = self.kernel.add(Node("reduce_sum", dt, (arg,), keepdims))
            count = self.kernel.add(Node("count", dt))
            return self.apply("div", [total, count], {})
        return self.kernel.add(Node(op, dt, (arg,), keepdims))


def build_kernel(module: Module, types: FunctionTypes, region: Region) -> Kernel:
    """The kernel IR of `region` (for an epilogue region: of the instructions after its head)."""
    func = module.functions[region.func]
    instrs = func.blocks[region.block].instrs
    rows = types[region.block]
    inner = 0
    start = region.start + (1 if region.kind in EPILOGUE_KINDS else 0)
    name = f"{region.func}_b{region.block}_{region.start}_{region.end}"
    prims: list[Prim] = []
    for ii in range(start, region.end):
        ins = instrs[ii]
        flatten_instr(ins.op, ins.operands, ins.attrs, rows[ii], ins.results, prims.append)
    for p in prims:
        if p.op.startswith("reduce_"):
            m = reduce_inner(p)
            if m is None:
                raise KernelBuildError(f"{p.op} over non-trailing axes")
            inner = m
    kb = KernelBuilder(name, inner)
    k = kb.kernel
    env: dict[str, int] = {}
    reg_types: dict[str, TensorType] = {}
    loads: dict[Any, int] = {}

    def load(operand: Any, dtype: DType, rank: int, source: int) -> int:
        if operand not in loads:
            k.inputs.append(KInput(str(operand), dtype, rank, source))
            loads[operand] = k.add(Node("load", dtype, (), len(k.inputs) - 1))
        return loads[operand]

    if region.kind in EPILOGUE_KINDS:     # the head's result is input -1 (see KInput.source)
        mm = instrs[region.start]
        t = rows[region.start].results[0]
        env[mm.results[0]] = load(Reg(mm.results[0]), t.dtype, t.rank, -1)
        reg_types[mm.results[0]] = t

    def value(o: Any, t: TensorType) -> int:
        if isinstance(o, Imm):
            return k.add(Node("const", t.dtype, (), scalar_value(o.value, t.dtype)))
        if isinstance(o, Reg) and o.name in env:
            return env[o.name]
        if isinstance(o, (Reg, ConstRef)) and o in region.inputs:
            return load(o, t.dtype, t.rank, region.inputs.index(o))
        raise KernelBuildError(f"operand {o} of the region is neither computed nor an input")

    def scalar_constant(o: Any, t: TensorType, out_rank: int) -> int | None:
        """A module constant of one element that broadcasts into nothing (rank no larger than
        the result's) as an immediate of the kernel rather than an input it loads: the code
        generator then sees its value (pow by a model's constant 2 is one product)."""
        if not isinstance(o, ConstRef) or t.rank > out_rank:
            return None
        c = module.constants.get(o.name)
        if c is None or c.value.size != 1:
            return None
        return k.add(Node("const", t.dtype, (), scalar_value(c.value.reshape(()).item(),
                                                               t.dtype)))

    for p in prims:
        out_rank = max((t.rank for t in p.out_types), default=0)
        elementwise = p.op != "mov" and not p.op.startswith("reduce_")
        args = [scalar_constant(o, t, out_rank) if isinstance(o, ConstRef) and elementwise
                else None for o, t in zip(p.operands, p.in_types)]
        args = [a if a is not None else value(o, t)
                for a, o, t in zip(args, p.operands, p.in_types)]
        if p.op == "mov":
            node = args[0]
        elif p.op.startswith("reduce_"):
            node = kb.reduce(p.op, args[0], bool(p.attrs.get("keepdims", False)))
        else:
            node = kb.apply(p.op, args, p.attrs)
        env[p.results[0]] = node
        for r, t in zip(p.results, p.out_types):
            reg_types[r] = t
    for r in region.outputs:
        if r not in env:
            raise KernelBuildError(f"output %{r} is not computed by the region")
        t = reg_types[r]
        k.outputs.append(KOutput(r, env[r], t.dtype, t.rank))
    return k
