"""What a kernel's status word means (the same bits on every target: jit/llvm/ops.py sets them)."""
from __future__ import annotations


def status_text(status: int) -> str:
    """Why a kernel declined a call, for the fallback's report."""
    from jit.llvm.ops import RANGE, TRAP
    parts = []
    if status & TRAP:
        parts.append("a trap condition (integer division or modulo by zero, negative integer exponent)")
    if status & RANGE:
        parts.append("a sin/cos argument beyond the compiled range reduction")
    return "the kernel found " + " and ".join(parts) + "; the interpreter runs the region"
