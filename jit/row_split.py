"""Which functions compute each row of their leading (batch) axis from the same row of their
inputs alone, so that a batch may run as tiles of rows, each tile through the whole function.

A CNN at batch 32 writes and reads every activation of every layer for all 32 images before the
next layer starts: 19 MB per layer for a MobileNet at 96x96, far beyond the caches, so its
depthwise convolutions and activations ran at memory speed. Run one image (or a few) at a time
through the whole network instead and each layer's activations are still in the core's L2 when
the next layer reads them; the threads take tiles instead of splitting every op. This module
proves that tiling gives the same result; the library's entry point (jit/targets/aot/program.py)
decides at run time whether it pays (the weights are read again per tile).

The proof is a dataflow over the function's blocks. The leading dim of the parameters that
have a named one (say `batch`) is the batch; a value whose type has `batch` at axis k has its
rows along axis k (a recurrent network's [time, batch, features] sequence has them at 1). Every
value is either

- a *row* value: `batch` appears once in its type, at its row axis, and row i of it (the slice
  at index i of that axis) depends only on row i of the row inputs; or
- a *free* value: no `batch` in its type and computed only from free values and constants (the
  same in every tile: weights, shape arithmetic over static shapes, a loop's counter); or
- a *shape* value: the run-time shape of a row value, or pieces of it (its row axis's entry
  is the tile's row count, the other entries are what they are in the whole batch, and the
  analysis remembers where each came from); or
- a *size* value: any other value computed from the tile's row count, used only as the target
  shape of a reshape or broadcast to the rows (the exporters' `x.view(x.size(0), -1)`), or not
  at all.

Each instruction that touches a row value must be one whose rows are independent under the op's
semantics (elementwise with the row axes aligned, convolutions and pools over NCHW, products
whose contraction does not run over rows, reductions and softmax over other axes, movement that
takes the row axis where the result's type has it without mixing rows: transposes, reshapes that
keep what comes before the row axis, a gather of rows of a free table); anything else (calls,
a branch on row data or on the batch's size, ops that count along the row axis) keeps the whole
batch together. Control flow on free values is fine: every tile takes the same path as the
whole batch (a recurrent network's loop over time steps, with its state's rows as row values).
Registers may be written in several places (a loop's state): the kinds are found by a fixed
point over the blocks, and a register that is a row value in one place and not in another, or
has its rows on different axes, keeps the batch whole.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isa.module import ConstRef, Function, Imm, Instr, Module, Reg
from isa.ops import OPS, Family
from isa.types import TensorType
from isa.verify import FunctionTypes

from .liveness import successors
from .passes.common import fuses_elementwise

FREE, SIZE = "free", "size"
# a row value's kind is ("row", k): its rows along axis k; a shape value's is ("shape", k, src):
# a 1-D vector holding (pieces of) a row value's shape, its entry k the tile's row count and
# src[j] where entry j came from: ("int", v), ("sym", name) for a named dim, ("dim", reg, j) for
# the run-time extent j of register reg (an unknown dim of a register written once, outside
# any loop), or None
# (unknown; entry k itself is the rows)
Kind = object

# ops whose row operand's axis 0 is their result's axis 0 and whose other operands are free
_ROWWISE_FIRST = frozenset({"conv2d", "maxpool2d", "avgpool2d", "batch_norm", "layer_norm"})

# the instructions of a loop's body count this many times in the traffic and the stages (the
# trip count is a run-time value; a recurrent step runs tens of times)
LOOP_WEIGHT = 16


@dataclass(frozen=True)
class RowSplit:
    """A function that may run as tiles of rows of its leading axis."""
    dim: str                        # the leading dim's name
    params: tuple[bool, ...]        # which parameters are split (their axis 0 is `dim`)
    row_bytes: int                  # the largest value's bytes per row (static dims; 0: unknown,
                                    # or a function with loops: no tiles sized to the cache)
    traffic_bytes: int              # all row values' bytes per row: what one row writes and reads
    weight_bytes: int               # the constants' bytes, read again by every tile
    stages: int                     # kernels a tile runs: elementwise runs and other ops


class _Keep(Exception):
    """The rows cannot run apart: the message says why."""


def _axis(a: int, rank: int) -> int:
    return a + rank if a < 0 else a


def _is_row(kind) -> bool:
    return isinstance(kind, tuple) and kind[0] == "row"


def _is_shape(kind) -> bool:
    return isinstance(kind, tuple) and kind[0] == "shape"


def _row_bytes(t: TensorType, k: int) -> int:
    """Bytes of one row (the slice at one index of axis k); 0 when another dim is not static."""
    rest = t.shape[:k] + t.shape[k + 1:]
    if not all(isinstance(d, int) for d in rest):
        return 0
    return int(np.prod(rest, dtype=np.int64)) * t.dtype.np.itemsize


def _type_kind(t: TensorType, dim: str):
    """("row", k) when `dim` is exactly dim k of the type, FREE when absent, None when it is
    there more than once."""
    where = [j for j, d in enumerate(t.shape) if d == dim]
    if not where:
        return FREE
    return ("row", where[0]) if len(where) == 1 else None


def _loop_blocks(func: Function) -> set[int]:
    """The blocks on a cycle of the control-flow graph (a loop's header and body)."""
    n = len(func.blocks)
    succs = [successors(func, bi) for bi in range(n)]
    inside = set()
    for start in range(n):
        seen, todo = set(), list(succs[start])
        while todo:
            b = todo.pop()
            if b == start:
                inside.add(start)
                break
            if b not in seen:
                seen.add(b)
                todo.extend(succs[b])
    return inside


def row_split(module: Module, fname: str, types: FunctionTypes) -> RowSplit | str:
    """The function's RowSplit, or why its rows cannot run apart (a sentence)."""
    func: Function = module.functions[fname]
    dim = next((p.type.shape[0] for p in func.params
                if p.type.rank and isinstance(p.type.shape[0], str)), None)
    if dim is None:
        return "no parameter has a named leading dim"
    kinds: dict[str, Kind] = {}
    for p in func.params:
        kind = _type_kind(p.type, dim)
        if kind is None or (_is_row(kind) and kind[1] != 0):
            return f"parameter %{p.name} has `{dim}` past its leading axis"
        kinds[p.name] = kind if kind == FREE else ("row", 0)
    analysis = _Analysis(module, func, types, dim, kinds)
    try:
        # registers written in several places (a loop's state) settle in a few passes; the
        # last pass checks every instruction against the settled kinds
        for _ in range(8):
            if not analysis.run(check=False):
                break
        else:
            return "the registers' kinds do not settle"
        analysis.run(check=True)
    except _Keep as e:
        return str(e)
    loops = analysis.loops
    row_bytes = traffic = stages = 0
    for bi, block in enumerate(func.blocks):
        weight = LOOP_WEIGHT if bi in loops else 1
        in_run = False          # the previous instruction was elementwise (one fused kernel)
        for ins, row in zip(block.instrs, types[bi]):
            fused = fuses_elementwise(ins.op)
            if ins.op not in ("ret", "const", "shape_of", "jmp", "br") and not (fused and in_run):
                stages += weight
            in_run = fused
            for r, t in zip(ins.results, row.results):
                kind = analysis.kinds.get(r)
                if _is_row(kind):
                    b = _row_bytes(t, kind[1])
                    row_bytes, traffic = max(row_bytes, b), traffic + weight * b
    if loops:
        # no tiles sized to the cache: a loop's body runs its kernels once per tile and time step,
        # so tiles beyond one per thread multiply those fixed costs (an LSTM over 20 steps at
        # batch 32 on 2 threads: tiles of 16 rows 0.54 ms, of 5-6 rows 0.80, the whole batch
        # 0.72), and a step's values are small anyway
        row_bytes = 0
    weights = sum(int(np.prod(c.type.shape, dtype=np.int64)) * c.type.dtype.np.itemsize
                  for c in module.constants.values())
    return RowSplit(dim, tuple(kinds[p.name] != FREE for p in func.params), row_bytes, traffic,
                    weights, stages)


def _join(a, b):
    """The kind of a register written with kinds a and b (None: not written yet)."""
    if a is None or a == b:
        return b
    if b is None:
        return a
    if _is_row(a) or _is_row(b):
        raise _Keep("a register holds rows on different axes, or rows and other values")
    return SIZE             # free in one place, the tile's size (or another shape) in another


class _Analysis:
    def __init__(self, module: Module, func: Function, types: FunctionTypes, dim: str,
                 kinds: dict[str, Kind]):
        self.module, self.func, self.types, self.dim = module, func, types, dim
        self.kinds = kinds
        self.params = set(kinds)
        # registers whose run-time extents name one value wherever they are read
        writes: dict[str, int] = dict.fromkeys(self.params, 1)
        for block in func.blocks:
            for ins in block.instrs:
                for r in ins.results:
                    writes[r] = writes.get(r, 0) + 1
        self.loops = _loop_blocks(func)
        in_loops = {r for bi in self.loops for ins in func.blocks[bi].instrs for r in ins.results}
        # (a register written once outside every loop holds one value for the whole call)
        self.once = {r for r, n in writes.items() if n == 1 and r not in in_loops}
        # free pieces of row values' shapes (written once): where their entries came from
        self.free_src: dict[str, tuple] = {}

    def run(self, check: bool) -> bool:
        """One pass over the blocks in order; whether a register's kind changed."""
        changed = False
        for bi, block in enumerate(self.func.blocks):
            for i, (ins, row) in enumerate(zip(block.instrs, self.types[bi])):
                where = f"block {block.label}, instruction {i} ({ins.op})"
                try:
                    results = self._instr(ins, row.operands, row.results, check)
                except _Keep as e:
                    if check:
                        raise _Keep(f"{where}: {e}") from None
                    # (an operand's kind may not have settled yet: the types' kinds for now)
                    results = [_type_kind(t, self.dim) or FREE for t in row.results]
                for r, kind in zip(ins.results, results):
                    joined = _join(self.kinds.get(r), kind)
                    if joined != self.kinds.get(r):
                        if r in self.params and check:
                            raise _Keep(f"{where}: overwrites parameter %{r}")
                        self.kinds[r] = joined
                        changed = True
        return changed

    def _operand(self, o, check: bool):
        if isinstance(o, Reg):
            kind = self.kinds.get(o.name)
            if kind is None:
                # read before any write the pass has seen (a loop's state): what it will be
                # once the pass reaches its writes; the checking pass sees every kind settled
                return ("row", -1) if check else FREE
            return kind
        if isinstance(o, (ConstRef, Imm)):
            return FREE
        return ("row", -1)      # anything unforeseen: data of the rows, so checked as such

    def _value(self, o) -> np.ndarray | None:
        """A constant operand's value."""
        if isinstance(o, Imm):
            return np.asarray(o.value)
        if isinstance(o, ConstRef) and o.name in self.module.constants:
            return np.asarray(self.module.constants[o.name].value)
        return None

    def _instr(self, ins: Instr, ops: list[TensorType], results: list[TensorType],
               check: bool) -> list:
        kinds = [self._operand(o, check) for o in ins.operands]
        typed = [_type_kind(t, self.dim) for t in results]
        if None in typed:
            raise _Keep(f"a result has `{self.dim}` more than once")
        op = ins.op
        if op == "ret":
            for o, t, k in zip(ins.operands, ops, kinds if check else []):
                if k != ("row", 0) or _type_kind(t, self.dim) != ("row", 0):
                    raise _Keep(f"result {o} is not a row value")
            return []
        if op == "jmp":
            return []
        if op in ("br", "assert"):
            if check and any(k != FREE for k in kinds):
                raise _Keep("branches on the rows' data or the batch's size" if op == "br"
                            else "asserts over the rows' data or the batch's size")
            return []
        if op == "call":
            raise _Keep("calls a function")
        if op == "const":
            return typed            # a fill: the same in every row
        if op == "mov":
            if _is_row(typed[0]) or _is_row(kinds[0]):
                if check and kinds[0] != typed[0]:
                    raise _Keep("the row axis moves")
                return typed        # (a row value's kind is its type's)
            return [kinds[0]]
        if op == "shape_of":
            k = kinds[0]
            if _is_row(k):
                o = ins.operands[0]
                src = tuple(("int", d) if isinstance(d, int) else
                            ("sym", d) if d is not None and d != self.dim else
                            ("dim", o.name, j) if isinstance(o, Reg) and o.name in self.once
                            else None
                            for j, d in enumerate(ops[0].shape))
                return [("shape", k[1], src)]
            # (a size value's shape can be the batch's size: range(0, N) has shape [N])
            return [SIZE if k == SIZE else FREE]
        rows = [k for k in kinds if _is_row(k)]
        if any(k == SIZE or _is_shape(k) for k in kinds):
            return self._sized(ins, ops, results, kinds, typed, check)
        if not rows:
            # free operands: a free result is the same in every tile; a row result would be made
            # up (a broadcast of a free value to the rows is the one way, the same in every row)
            if any(_is_row(t) for t in typed):
                if op != "broadcast_to":
                    raise _Keep("makes row values from none")
                j = typed[0][1] - (results[0].rank - ops[0].rank)
                if j >= 0 and ops[0].shape[j] != 1:
                    raise _Keep("a free operand along the row axis")
            return typed
        if not check:
            return typed
        if not all(_is_row(t) for t in typed):
            raise _Keep("mixes rows into a value without the row axis")
        want = self._rows_of(ins, ops, results, kinds)
        if [("row", want)] * len(results) != typed:
            raise _Keep("moves the row axis where its type does not have it")
        return typed

    def _rows_of(self, ins: Instr, ops: list[TensorType], results: list[TensorType],
                 kinds: list) -> int:
        """The result's row axis when the op keeps rows apart; raises _Keep otherwise."""
        op, rank = OPS[ins.op], results[0].rank
        a = op.with_defaults(ins.attrs)
        axes = [k[1] if _is_row(k) else None for k in kinds]
        first = axes[0]
        first_only = first is not None and all(x is None for x in axes[1:])
        if op.family.elementwise:
            out = None
            for t, x in zip(ops, axes):
                if x is not None:
                    if t.rank != rank:
                        raise _Keep("a row operand broadcast past its row axis")
                    if out not in (None, x):
                        raise _Keep("row operands with their rows on different axes")
                    out = x
            for t, x in zip(ops, axes):
                j = out - (rank - t.rank)
                if x is None and j >= 0 and t.shape[j] != 1:
                    raise _Keep("a free operand along the row axis")
            return out
        if ins.op in _ROWWISE_FIRST:
            if not first_only or first != 0:
                raise _Keep("a row operand past the first, or rows not on axis 0")
            if ins.op == "layer_norm" and _axis(a["axis"], ops[0].rank) == 0:
                raise _Keep("normalizes over the row axis")
            return 0
        if op.family is Family.REDUCE:
            red = a["axes"]
            red = set(range(ops[0].rank)) if red is None else {_axis(x, ops[0].rank) for x in red}
            if first in red:
                raise _Keep("reduces over the row axis")
            if not first_only:
                raise _Keep("a row operand past the first")
            return first if a.get("keepdims") else first - sum(1 for x in red if x < first)
        if op.family is Family.ARGREDUCE or ins.op in ("softmax", "log_softmax"):
            ax = _axis(a["axis"], ops[0].rank)
            if ax == first or not first_only:
                raise _Keep("over the row axis")
            if op.family is Family.ARGREDUCE and not a.get("keepdims", True):
                return first - (1 if ax < first else 0)
            return first
        if ins.op == "matmul":
            return _matmul(ops, axes, rank)
        if ins.op in ("reshape", "reshape_dyn"):
            if not first_only:
                raise _Keep("a row operand past the first")
            out = [j for j, d in enumerate(results[0].shape) if d == self.dim][0]
            target = a["shape"] if ins.op == "reshape" else self._value(ins.operands[1])
            if target is None or not _reshape_keeps_rows(
                    ops[0].shape, first, [int(v) for v in np.ravel(target)], out,
                    ins.op == "reshape_dyn" and bool(a.get("copy_zero")), self.dim):
                raise _Keep("a reshape that mixes rows (what comes before the row axis changes)")
            return out
        if ins.op == "expand_dims":
            inserted = sorted(_axis(x, rank) for x in a["axes"])
            out = first
            for x in inserted:
                if x <= out:
                    out += 1
            return out
        if ins.op == "squeeze":
            removed = a["axes"]
            if removed is None:
                raise _Keep("squeezes every size-1 dim")
            removed = {_axis(x, ops[0].rank) for x in removed}
            if first in removed:
                raise _Keep("squeezes the row axis")
            return first - sum(1 for x in removed if x < first)
        if ins.op == "transpose":
            perm = a["perm"]
            perm = list(range(rank))[::-1] if perm is None else [_axis(x, rank) for x in perm]
            return perm.index(first)
        if ins.op == "broadcast_to":
            return first + (rank - ops[0].rank)
        if ins.op == "concat":
            ax = _axis(a["axis"], rank)
            if any(x is None for x in axes):
                raise _Keep("joins rows with a free value")
            if any(x != first for x in axes):
                raise _Keep("row operands with their rows on different axes")
            if ax == first:
                raise _Keep("joins along the row axis")
            return first
        if ins.op == "slice":
            _slice(a, ops[0].rank, first)
            return first
        if ins.op == "pad":
            pads = a["pads"]
            if pads[first] != 0 or pads[ops[0].rank + first] != 0:
                raise _Keep("pads the row axis")
            return first
        if ins.op == "gather":
            ax = _axis(a["axis"], ops[0].rank)
            data, index = axes
            if index is None and ax != data:
                return data if ax > data else data - 1 + ops[1].rank
            if data is None and index is not None:
                return ax + index       # rows of a free table picked by row indices (an embedding)
            raise _Keep("indexes along the row axis")
        if ins.op == "resize":
            resized = {_axis(x, ops[0].rank) for x in a["axes"]}
            if first in resized or not first_only:
                raise _Keep("resizes the row axis")
            return first
        raise _Keep("not known to keep rows apart")

    def _sized(self, ins: Instr, ops: list[TensorType], results: list[TensorType], kinds: list,
               typed: list, check: bool) -> list:
        """An instruction with a shape or size operand: shape arithmetic, or the target shape of
        a reshape or broadcast to the rows."""
        op = ins.op
        if op in ("reshape_dyn", "broadcast_dyn") and not (_is_shape(kinds[0]) or kinds[0] == SIZE):
            if any(_is_row(k) for k in kinds[1:]) or not _is_row(typed[0]) or \
                    (op == "reshape_dyn" and kinds[0] == FREE):
                raise _Keep("the batch's run-time size in the rows' data")
            if not check:
                return typed
            # the target's entry at the result's row axis must be the tile's row count (a
            # declared `N` there is not checked at run time), and nothing else may be
            out, target = typed[0][1], kinds[1]
            if not (_is_shape(target) and target[1] == out):
                raise _Keep("a target shape whose rows are not where the result has them")
            if kinds[0] == FREE:
                # a free value broadcast to the rows: the same in every row, if it has no
                # extent of its own along them
                j = out - (results[0].rank - ops[0].rank)
                if j >= 0 and ops[0].shape[j] != 1:
                    raise _Keep("a free operand along the row axis")
                return typed
            first = kinds[0][1]
            if op == "broadcast_dyn":
                if ops[0].rank != results[0].rank or first != out:
                    raise _Keep("the row axis moves")
                return typed
            src = target[2]
            if not _same_prefix(
                    _reg_src(ops[0].shape[:first], ins.operands[0], self.dim, self.once),
                    None if any(e is None for e in src[:out]) else list(src[:out])):
                raise _Keep("a reshape that mixes rows (what comes before the row axis changes)")
            return typed
        if any(_is_row(k) for k in kinds) or any(_is_row(t) for t in typed):
            raise _Keep("the batch's run-time size in the rows' data")
        # shape arithmetic: slices, picks and joins of shapes keep track of their entries
        if op == "slice" and _is_shape(kinds[0]) and ops[0].rank == 1:
            a = OPS[op].with_defaults(ins.attrs)
            steps = a["steps"] or [1]
            start, end = a["starts"][0], a["ends"][0]
            n = len(kinds[0][2])
            start, end = (max(0, min(n, _axis(x, n))) for x in (start, end))
            if steps[0] != 1:
                return [SIZE]
            k = kinds[0][1]
            if not start <= k < end:
                if ins.results[0] in self.once:
                    self.free_src[ins.results[0]] = kinds[0][2][start:end]
                return [FREE]
            return [("shape", k - start, kinds[0][2][start:end])]
        if op == "gather" and _is_shape(kinds[0]) and kinds[1] == FREE:
            index = self._value(ins.operands[1])
            if index is None or index.ndim > 1:
                return [SIZE]
            k, src = kinds[0][1], kinds[0][2]
            picked = [_axis(int(x), len(src)) for x in index.ravel()]
            if any(not 0 <= x < len(src) for x in picked):
                return [SIZE]
            if k not in picked:
                if ins.results[0] in self.once:
                    self.free_src[ins.results[0]] = tuple(src[x] for x in picked)
                return [FREE]
            if picked.count(k) > 1:
                return [SIZE]       # the rows' count twice: [N, N]
            # (a scalar pick of the rows' count is a one-entry shape too: it is unsqueezed
            # before a concat makes a target of it)
            return [("shape", picked.index(k), tuple(src[x] for x in picked))]
        if op in ("expand_dims", "squeeze", "reshape", "mov", "cast") and _is_shape(kinds[0]) \
                and results[0].rank <= 1 and len(kinds[0][2]) == 1:
            return [kinds[0]]       # the one-entry shape as a scalar or a vector of one
        if op == "concat" and all(_is_shape(k) or k == FREE for k in kinds) and \
                sum(_is_shape(k) for k in kinds) == 1 and results[0].rank == 1:
            src: list = []
            k_at = 0
            for o, t, k in zip(ins.operands, ops, kinds):
                if _is_shape(k):
                    k_at = len(src) + k[1]
                    src.extend(k[2])
                    continue
                value = self._value(o)
                if not isinstance(t.shape[0], int):
                    return [SIZE]
                if isinstance(o, Reg) and o.name in self.free_src:
                    src.extend(self.free_src[o.name])
                elif value is not None:
                    src.extend(("int", int(v)) for v in value.ravel())
                else:
                    src.extend([None] * t.shape[0])
            return [("shape", k_at, tuple(src))]
        if op == "mov":
            return [kinds[0]]
        return [SIZE]


def _static_src(dims, dim: str) -> list | None:
    """A type's dims as shape entries; None where one is unknown ('?')."""
    out = []
    for d in dims:
        if isinstance(d, int):
            out.append(("int", d))
        elif d is None or d == dim:
            return None
        else:
            out.append(("sym", d))
    return out


def _reg_src(dims, operand, dim: str, once: set[str]) -> list | None:
    """A register's leading dims as shape entries: an unknown one as its run-time extent."""
    out = []
    for j, d in enumerate(dims):
        if isinstance(d, int):
            out.append(("int", d))
        elif d == dim:
            return None
        elif d is None:
            if not isinstance(operand, Reg) or operand.name not in once:
                return None
            out.append(("dim", operand.name, j))
        else:
            out.append(("sym", d))
    return out


def _reshape_keeps_rows(shape, first: int, target: list[int], out: int, copy_zero: bool,
                        dim: str) -> bool:
    """Whether reshaping a value of `shape` (rows on axis `first`) to the constant `target`
    puts the rows, whole, on axis `out`: the target's entry there must be the rows' count
    (copied from the same axis, or the one -1 with every other dim static) and what comes before
    it the same amount as before the rows."""
    if out >= len(target):
        return False
    rest = [d for j, d in enumerate(shape) if j != first]
    if copy_zero and target[out] == 0 and out == first:
        # (copies of the input's dims, and one -1 after the rows that takes the rest)
        ok = all(v > 0 or (v == 0 and j < len(shape)) or (v == -1 and j > out)
                 for j, v in enumerate(target) if j != out) and target.count(-1) <= 1
        prefix = [shape[j] if v == 0 else v for j, v in enumerate(target[:out])]
    elif target[out] == -1 and all(v > 0 for j, v in enumerate(target) if j != out):
        if not all(isinstance(d, int) for d in rest):
            return False
        ok = int(np.prod(rest, dtype=np.int64)) == \
            int(np.prod([v for j, v in enumerate(target) if j != out], dtype=np.int64))
        prefix = target[:out]
    else:
        return False
    return ok and _same_prefix(_static_src(shape[:first], dim), _static_src(prefix, dim))


def _same_prefix(x: list | None, y: list | None) -> bool:
    """Whether two lists of shape entries surely have the same product."""
    if x is None or y is None:
        return False
    x = [e for e in x if e != ("int", 1)]
    y = [e for e in y if e != ("int", 1)]
    if all(e[0] == "int" for e in x + y):
        return int(np.prod([e[1] for e in x], dtype=np.int64)) == \
            int(np.prod([e[1] for e in y], dtype=np.int64))
    return sorted(x, key=repr) == sorted(y, key=repr)


def _matmul(ops: list[TensorType], axes: list, rank: int) -> int:
    (lt, rt), (la, ra) = ops, axes
    outs = set()
    if la is not None:
        if lt.rank < 2 or la == lt.rank - 1:
            raise _Keep("contracts over the row axis")
        outs.add(la + (rank - lt.rank))
    if ra is not None:
        if rt.rank < 2 or ra == rt.rank - 2:
            raise _Keep("contracts over the row axis")
        outs.add(rank - 1 if ra == rt.rank - 1 else ra + (rank - rt.rank))
        if ra == rt.rank - 1 and la is not None:
            raise _Keep("rows on both sides of the product")
    if len(outs) != 1:
        raise _Keep("row operands with their rows on different axes")
    out = outs.pop()
    for t, x in ((lt, la), (rt, ra)):
        j = out - (rank - t.rank)
        if x is None and 0 <= j < t.rank - 2 and t.shape[j] != 1:
            raise _Keep("a free operand along the row axis")
    if la is not None and la >= lt.rank - 2 and ra is not None:
        raise _Keep("rows on both sides of the product")
    return out


def _slice(a: dict, rank: int, row: int) -> None:
    axes = a["axes"] if a["axes"] is not None else list(range(len(a["starts"])))
    steps = a["steps"] if a["steps"] is not None else [1] * len(axes)
    for x, s, e, st in zip(axes, a["starts"], a["ends"], steps):
        if _axis(x, rank) == row and not (s == 0 and e >= 2 ** 62 and st == 1):
            raise _Keep("slices the row axis")
