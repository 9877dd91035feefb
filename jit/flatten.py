"""Instructions as the JIT sees them: composite ops (softmax, layer_norm, ...) rewritten through
their op record's `decompose` into primitive instructions, each with its operand and result types.

Both the region former (to decide fusibility) and the kernel builder (to emit kernel IR) walk
this one flattened form, so they can never disagree about what an instruction means.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from isa.module import ConstRef, Imm, Reg
from isa.ops import OPS, Family
from isa.types import TensorType
from isa.verify import InstrTypes


@dataclass
class Prim:
    """One primitive instruction: operands are local value names (str) or Imm."""
    op: str
    operands: list[Any]
    attrs: dict[str, Any]
    in_types: list[TensorType]
    out_types: list[TensorType]
    results: list[str] = field(default_factory=list)


class _Tmp(Reg):
    """A register made up by a decomposition; its name cannot clash with a program register."""


def _imm_peer(op: str, index: int, types: list[TensorType | None]) -> TensorType:
    fam = OPS[op].family
    if fam is Family.SELECT and index == 0:
        from isa.dtypes import DType
        return TensorType(DType.BOOL, ())
    group = [1, 2] if fam is Family.SELECT else [0, 1]
    peers = [types[j] for j in group if j < len(types) and types[j] is not None]
    if not peers:
        raise ValueError(f"{op}: an immediate operand has no typed peer")
    return TensorType(peers[0].dtype, ())


def flatten_instr(op: str, operands: list[Any], attrs: dict[str, Any], types: InstrTypes,
                  results: list[str], on_prim: Callable[[Prim], None]) -> None:
    """Call `on_prim` for each primitive instruction `op` stands for, in order.

    Operands are Reg, ConstRef or Imm; made-up intermediate registers are `_Tmp`. Ops without a
    decomposition are passed through unchanged. Raises ValueError when a decomposition emits
    something whose type rule fails (a bug in the op table, reported as a decline)."""
    opdef = OPS[op]
    full = opdef.with_defaults(attrs)
    if opdef.decompose is None:
        on_prim(Prim(op, list(operands), full, list(types.operands), list(types.results), results))
        return
    env: dict[str, TensorType] = {}
    counter = [0]

    def type_of(o: Any) -> TensorType | None:
        if isinstance(o, _Tmp):
            return env[o.name]
        if isinstance(o, (Reg, ConstRef)):
            return known[o]
        return None

    known = {o: t for o, t in zip(operands, types.operands) if isinstance(o, (Reg, ConstRef))}

    def emit(sub_op: str, sub_operands, sub_attrs=None):
        sub_def = OPS[sub_op]
        sub_full = sub_def.with_defaults(dict(sub_attrs or {}))
        ops = [o if isinstance(o, (Reg, ConstRef, Imm)) else Imm(o) for o in sub_operands]
        in_types: list[TensorType | None] = [type_of(o) for o in ops]
        in_types = [t if t is not None else _imm_peer(sub_op, i, in_types) for i, t in enumerate(in_types)]
        out_types = sub_def.infer(in_types, sub_full)
        counter[0] += 1
        name = f"{results[0]}.{counter[0]}" if results else f"tmp.{counter[0]}"
        reg = _Tmp(name)
        env[name] = out_types[0]
        on_prim(Prim(sub_op, ops, sub_full, in_types, list(out_types), [name]))
        return reg

    out = opdef.decompose(emit, list(operands), full, list(types.operands))
    outs = out if isinstance(out, (list, tuple)) else [out]
    for r, o in zip(results, outs):
        # bind the program register to the decomposition's final value
        on_prim(Prim("mov", [o], {}, [type_of(o)], [type_of(o)], [r]))


def flat_prims(op: str, operands: list[Any], attrs: dict[str, Any], types: InstrTypes,
               results: list[str]) -> list[Prim]:
    prims: list[Prim] = []
    flatten_instr(op, operands, attrs, types, results, prims.append)
    return prims
