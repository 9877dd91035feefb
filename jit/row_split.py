"""Which functions compute each row of their leading (batch) axis from the same row of their
inputs alone, so that a batch may run as tiles of rows, each tile through the whole function.

A CNN at batch 32 writes and reads every activation of every layer for all 32 images before the
next layer starts: 19 MB per layer for a MobileNet at 96x96, far beyond the caches, so its
depthwise convolutions and activations ran at memory speed. Run one image (or a few) at a time
through the whole network instead and each layer's activations are still in the core's L2 when
the next layer reads them; the threads take tiles instead of splitting every op. This module
proves that tiling gives the same result; the library's entry point (jit/targets/aot/program.py)
decides at run time whether it pays (the weights are read again per tile).

The proof is a dataflow over the function's one block. The leading dim of the parameters that
have a named one (say `batch`) is the row axis. Every value is either

- a *row* value: its type's dim 0 is `batch`, the name appears nowhere else, and row i of it
  depends only on row i of the row inputs; or
- a *free* value: no `batch` in its type and computed only from free values and constants (the
  same in every tile: weights, shape arithmetic over static shapes); or
- a *size* value: computed from the run-time shape of a row value (it holds the tile's row
  count, not the batch's), used only as the target shape of a reshape or broadcast whose result
  has the rows as its leading axis (the exporters' `x.view(x.size(0), -1)`), or not at all.

Each instruction that touches a row value must be one whose rows are independent under the op's
semantics (elementwise with the row axis aligned, convolutions and pools over NCHW, products
whose contraction does not run over rows, reductions and softmax over other axes, movement that
keeps axis 0 in place, a gather of rows of a free table); anything else (control flow, calls,
run-time shapes, ops that count along axis 0) keeps the whole batch together.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isa.module import ConstRef, Function, Imm, Instr, Module, Reg
from isa.ops import OPS, Family
from isa.types import TensorType
from isa.verify import FunctionTypes

from .passes.common import fuses_elementwise

ROW, FREE, SIZE = "row", "free", "size"

# ops whose row operand's axis 0 is their result's axis 0 and whose other operands are free
_ROWWISE_FIRST = frozenset({"conv2d", "maxpool2d", "avgpool2d", "batch_norm", "layer_norm",
                            "mov"})


@dataclass(frozen=True)
class RowSplit:
    """A function that may run as tiles of rows of its leading axis."""
    dim: str                        # the leading dim's name
    params: tuple[bool, ...]        # which parameters are split (their axis 0 is `dim`)
    row_bytes: int                  # the largest value's bytes per row (static dims; 0: unknown)
    traffic_bytes: int              # all row values' bytes per row: what one row writes and reads
    weight_bytes: int               # the constants' bytes, read again by every tile
    stages: int                     # kernels a tile runs: elementwise runs and other ops


def _axis(a: int, rank: int) -> int:
    return a + rank if a < 0 else a


def _row_bytes(t: TensorType) -> int:
    """Bytes of one row of a row value; 0 when a dim past the first is not static."""
    rest = t.shape[1:]
    if not all(isinstance(d, int) for d in rest):
        return 0
    return int(np.prod(rest, dtype=np.int64)) * t.dtype.np.itemsize


def row_split(module: Module, fname: str, types: FunctionTypes) -> RowSplit | str:
    """The function's RowSplit, or why its rows cannot run apart (a sentence)."""
    func: Function = module.functions[fname]
    if len(func.blocks) != 1:
        return "it has control flow"
    dim = next((p.type.shape[0] for p in func.params
                if p.type.rank and isinstance(p.type.shape[0], str)), None)
    if dim is None:
        return "no parameter has a named leading dim"
    kinds: dict[str, str] = {}
    for p in func.params:
        kind = _kind_of_type(p.type, dim)
        if kind is None:
            return f"parameter %{p.name} has `{dim}` past its leading axis"
        kinds[p.name] = kind
    row_bytes = traffic = stages = 0
    in_run = False          # the previous instruction was elementwise (one fused kernel)
    for i, (ins, row) in enumerate(zip(func.blocks[0].instrs, types[0])):
        fused = fuses_elementwise(ins.op)
        if ins.op not in ("ret", "const", "shape_of") and not (fused and in_run):
            stages += 1
        in_run = fused
        if ins.op == "ret":
            for o, t in zip(ins.operands, row.operands):
                if _operand_kind(o, kinds) != ROW or _kind_of_type(t, dim) != ROW:
                    return f"result {o} is not a row value"
            continue
        operand_kinds = [_operand_kind(o, kinds) for o in ins.operands]
        why = _check(ins, row.operands, row.results, operand_kinds, dim)
        if why:
            return f"instruction {i} ({ins.op}): {why}"
        for r, t in zip(ins.results, row.results):
            kinds[r] = _kind_of_type(t, dim)          # _check made sure it is one
            if kinds[r] == FREE and (ROW in operand_kinds or SIZE in operand_kinds):
                kinds[r] = SIZE                       # shape_of a row value, or arithmetic on one
            if kinds[r] == ROW:
                b = _row_bytes(t)
                row_bytes, traffic = max(row_bytes, b), traffic + b
    weights = sum(int(np.prod(c.type.shape, dtype=np.int64)) * c.type.dtype.np.itemsize
                  for c in module.constants.values())
    return RowSplit(dim, tuple(kinds[p.name] == ROW for p in func.params), row_bytes, traffic,
                    weights, stages)


def _kind_of_type(t: TensorType, dim: str) -> str | None:
    """ROW when `dim` is exactly the leading dim, FREE when absent, None when elsewhere."""
    where = [j for j, d in enumerate(t.shape) if d == dim]
    if not where:
        return FREE
    return ROW if where == [0] else None


def _operand_kind(o, kinds: dict[str, str]) -> str:
    if isinstance(o, Reg):
        return kinds[o.name]
    if isinstance(o, (ConstRef, Imm)):
        return FREE
    return ROW      # anything unforeseen: treated as data of the rows, so checked as such


def _check(ins: Instr, ops: list[TensorType], results: list[TensorType], kinds: list[str],
           dim: str) -> str | None:
    """None when the instruction keeps rows apart (and its results' kinds follow from their
    types), else the reason."""
    result_kinds = [_kind_of_type(t, dim) for t in results]
    if None in result_kinds:
        return f"a result has `{dim}` past its leading axis"
    if ins.op == "call" or OPS[ins.op].family is Family.CONTROL:
        return "control flow"
    if ins.op == "shape_of":
        return None
    if SIZE in kinds:
        return _sized(ins, ops, results, kinds, result_kinds)
    if ROW not in kinds:
        # free operands: a free result is the same in every tile; a row result would be made up
        # (a broadcast of a free value to the rows is the one way, and it is the same per row)
        if ROW in result_kinds and ins.op != "broadcast_to":
            return "makes row values from none"
        return None
    if result_kinds != [ROW] * len(results):
        return "mixes rows into a value without the row axis"
    op = OPS[ins.op]
    rank = results[0].rank
    if op.family.elementwise:
        for t, k in zip(ops, kinds):
            if k == ROW and t.rank != rank:
                return "a row operand broadcast past the leading axis"
            if k == FREE and t.rank == rank and t.shape[0] != 1:
                return "a free operand along the row axis"
        return None
    first_only = all(k == FREE for k in kinds[1:]) and kinds[0] == ROW
    a = op.with_defaults(ins.attrs)
    if ins.op in _ROWWISE_FIRST:
        if ins.op == "layer_norm" and _axis(a["axis"], ops[0].rank) == 0:
            return "normalizes over the row axis"
        return None if first_only else "a row operand past the first"
    if op.family is Family.REDUCE:
        axes = a["axes"]
        if axes is None or 0 in {_axis(x, ops[0].rank) for x in axes}:
            return "reduces over the row axis"
        return None if first_only else "a row operand past the first"
    if op.family is Family.ARGREDUCE or ins.op in ("softmax", "log_softmax"):
        return "over the row axis" if _axis(a["axis"], ops[0].rank) == 0 else None
    if ins.op == "matmul":
        return _matmul(ops, kinds, rank)
    if ins.op in ("reshape", "expand_dims", "squeeze"):
        # row-major: the same leading size on both sides keeps every row's elements together
        return None
    if ins.op == "transpose":
        perm = a["perm"]
        return None if perm is not None and perm[0] == 0 else "moves the row axis"
    if ins.op == "broadcast_to":
        return None if ops[0].rank == rank else "the row axis moves"
    if ins.op == "concat":
        return None if _axis(a["axis"], rank) != 0 else "joins along the row axis"
    if ins.op == "slice":
        return _slice(a, ops[0].rank)
    if ins.op == "pad":
        pads = a["pads"]
        return None if pads[0] == 0 and pads[rank] == 0 else "pads the row axis"
    if ins.op == "gather":
        ax = _axis(a["axis"], ops[0].rank)
        if kinds == [ROW, FREE] and ax != 0:
            return None
        if kinds == [FREE, ROW] and ax == 0:
            return None             # rows of a free table picked by row indices (an embedding)
        return "indexes along the row axis"
    if ins.op == "resize":
        axes = {_axis(x, ops[0].rank) for x in a["axes"]}
        return None if 0 not in axes and first_only else "resizes the row axis"
    return "not known to keep rows apart"


def _sized(ins: Instr, ops: list[TensorType], results: list[TensorType], kinds: list[str],
           result_kinds: list[str]) -> str | None:
    """An instruction with a size operand: shape arithmetic among sizes, or the target shape of
    a reshape or broadcast to the rows."""
    if ROW not in kinds and ROW not in result_kinds:
        return None
    shaped = ins.op in ("reshape_dyn", "broadcast_dyn") and kinds[0] != SIZE and \
        all(k != ROW for k in kinds[1:]) and result_kinds == [ROW]
    if shaped and ins.op == "reshape_dyn" and kinds[0] == ROW:
        return None         # row-major, the same leading size: every row's elements together
    if shaped and ins.op == "broadcast_dyn" and (kinds[0] == FREE or ops[0].rank == results[0].rank):
        return None
    return "the batch's run-time size in the rows' data"


def _matmul(ops: list[TensorType], kinds: list[str], rank: int) -> str | None:
    (lt, rt), (lk, rk) = ops, kinds
    if rk == ROW and rt.rank < 3:
        return "contracts over the row axis"
    for t, k in ((lt, lk), (rt, rk)):
        if k == ROW and t.rank != rank:
            return "a row operand broadcast past the leading axis"
        if k == FREE and t.rank == rank and rank >= 3 and t.shape[0] != 1:
            return "a free operand along the row axis"
    return None


def _slice(a: dict, rank: int) -> str | None:
    axes = a["axes"] if a["axes"] is not None else list(range(len(a["starts"])))
    steps = a["steps"] if a["steps"] is not None else [1] * len(axes)
    for x, s, e, st in zip(axes, a["starts"], a["ends"], steps):
        if _axis(x, rank) == 0 and not (s == 0 and e >= 2 ** 62 and st == 1):
            return "slices the row axis"
    return None
