"""What the CUDA backend supports, declared for the scheduler, read from the lowering itself.

A kernel runs on the GPU when every node's (op, dtype class) has a lowering in the shared table
(`jit.llvm.ops.TABLE`, plus the GPU's own overrides) and every dtype has a register type; a
matmul+epilogue region also needs a float32/float64 product (cuBLAS). Nothing here keeps a
list of ops: a row added to the table is supported here as soon as it lowers.
"""
from __future__ import annotations

from isa.dtypes import DType
from jit.kernel_ir import REDUCE_KINDS, Kernel
from jit.llvm.irutil import reg_type
from jit.llvm.ops import TABLE, dtype_class
from jit.regions import ELEMENTWISE, EPILOGUE_KINDS, MATMUL_EPILOGUE

DTYPES = frozenset(d for d in DType if d is not DType.F16 and not d.is_narrow
                   and not d.is_str)  # as on the CPU
STRUCTURAL = frozenset({"load", "const", "count", "cast", *REDUCE_KINDS})
MATMUL_DTYPES = frozenset({DType.F32, DType.F64})


def unsupported(kernel: Kernel, region_kind: str = ELEMENTWISE, product: DType | None = None) -> str | None:
    """None when the CUDA backend can run `kernel`, else the first reason it cannot."""
    if region_kind == MATMUL_EPILOGUE and product not in MATMUL_DTYPES:
        return f"cuBLAS matmul takes f32/f64, not {product}"
    if region_kind in EPILOGUE_KINDS and region_kind != MATMUL_EPILOGUE:
        head = region_kind.split("+")[0]
        return f"{head} has no GPU implementation yet (its region runs on the CPU)"
    for n in kernel.nodes:
        if n.dtype not in DTYPES:
            return f"{n.op} on {n.dtype} has no GPU kernel"
        try:
            reg_type(n.dtype)
        except NotImplementedError as e:
            return str(e)
        if n.op in STRUCTURAL:
            continue
        key = kernel.nodes[n.args[1]].dtype if n.op == "select" else kernel.nodes[n.args[0]].dtype
        if (n.op, dtype_class(key)) not in TABLE:
            return f"{n.op} on {key} has no GPU lowering"
    return None
