"""Epilogues the GEMM kernel applies as it stores its result, instead of a compiled kernel.

A matmul or conv2d region whose whole epilogue is `relu(head)`, `head + v` or `relu(head + v)`,
with `v` one value per output channel of a convolution or per column (or row) of a product,
needs no epilogue kernel: the GEMM kernel adds the bias and applies relu to each tile as it
stores the last K block (jit/gemm.py: Epilogue). That saves a pass over the output (read and
write) per layer, a compile, and a dispatch: ResNet-18's convolutions and an MLP's layers are
all of this form.

The additions happen in the order the epilogue kernel would do them (the product first, then
the bias, then relu), so the results are the same bits. `max` lowers to llvm.maximum in both.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from isa.dtypes import DType
from jit.kernel_ir import Kernel

from .gemm import Epilogue


@dataclass(frozen=True)
class StorePattern:
    """A kernel that is `[relu](head [+ in<bias>])`: which kernel input is the bias."""
    bias: int | None       # kernel input index of v, or None
    relu: bool


def match(k: Kernel) -> StorePattern | None:
    """The pattern of an epilogue kernel, or None if it computes anything else."""
    if len(k.outputs) != 1 or k.inner or k.outputs[0].dtype != DType.F32:
        return None
    nodes, used = k.nodes, 1
    i, relu = k.outputs[0].node, False
    n = nodes[i]
    if n.op == "max" and len(n.args) == 2:
        zero = [a for a in n.args if _is_plus_zero(nodes[a])]
        if zero:
            other = [a for a in n.args if a != zero[0]]
            i, relu, used = (other[0] if other else zero[0]), True, used + 2
            n = nodes[i]
    bias = None
    if n.op == "add" and len(n.args) == 2:
        loads = [a for a in n.args if nodes[a].op == "load"]
        if len(loads) != 2:
            return None
        head = [a for a in loads if k.inputs[nodes[a].attr].source < 0]
        if len(head) != 1 or loads[0] == loads[1]:
            return None
        bias = nodes[next(a for a in loads if a != head[0])].attr
        if k.inputs[bias].dtype != DType.F32:
            return None
        i, used = head[0], used + 2
        n = nodes[i]
    if n.op != "load" or k.inputs[n.attr].source >= 0 or used != len(nodes):
        return None
    return StorePattern(bias, relu)


def _is_plus_zero(n) -> bool:
    return n.op == "const" and n.attr == 0 and math.copysign(1.0, float(n.attr)) > 0


@dataclass(frozen=True)
class StoreEpilogue:
    """The pattern for one call's shapes: where the bias goes, and from which region input."""
    source: int | None     # region input index of the bias
    axis: str | None       # "row" or "col" of the 2-D product; a convolution's channels: "row"
    relu: bool

    def epilogue(self, args: list[np.ndarray]) -> Epilogue:
        if self.source is None:
            return Epilogue(relu=self.relu)
        v = np.ascontiguousarray(args[self.source], np.float32).reshape(-1)
        return Epilogue(v if self.axis == "row" else None, v if self.axis == "col" else None, self.relu)

    def apply(self, out: np.ndarray, args: list[np.ndarray]) -> np.ndarray:
        """The same in NumPy, on a finished head result of any rank (where the GEMM kernel
        did not run): rows are axis 1 of a convolution's output, axis -2 of a product's."""
        if self.source is not None:
            v = np.asarray(args[self.source], np.float32).reshape(-1)
            if self.axis == "col":
                out += v
            else:
                out += v.reshape((-1, 1) if out.ndim == 2 else (1, -1, 1, 1))
        if self.relu:
            np.maximum(out, np.float32(0), out=out)
        return out


def for_call(p: StorePattern, k: Kernel, head_op: str, head_shape: tuple[int, ...],
             out_shape: tuple[int, ...], shapes: list[tuple[int, ...]],
             conv_bias: bool) -> StoreEpilogue | None:
    """The store epilogue for these shapes (`shapes`: the region inputs'), or None where the
    bias does not map onto rows or columns of the product, or the output is broadcast larger
    than the product."""
    if tuple(out_shape) != tuple(head_shape):
        return None
    if p.bias is None:
        return StoreEpilogue(None, None, p.relu)
    src = k.inputs[p.bias].source
    v = tuple(shapes[src])
    if len(v) > len(head_shape):
        return None
    if head_op == "conv2d":
        # one value per output channel: [O, 1, 1] or [1, O, 1, 1]; the convolution's own bias
        # would be a second one (the kernel adds one)
        channels = head_shape[1]
        full = (1,) * (4 - len(v)) + v
        if conv_bias or full != (1, channels, 1, 1):
            return None
        return StoreEpilogue(src, "row", p.relu)
    if len(head_shape) < 2:
        return None
    n = head_shape[-1]
    lead = (1,) * (len(head_shape) - len(v)) + v
    if lead[-1] == n and math.prod(lead[:-1]) == 1:
        return StoreEpilogue(src, "col", p.relu)
    if len(head_shape) == 2 and lead == (head_shape[0], 1):
        return StoreEpilogue(src, "row", p.relu)
    return None
