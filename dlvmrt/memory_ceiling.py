"""Out of memory as a trap, also where the kernel overcommits memory.

Under Linux's default overcommit heuristic a request larger than the machine's memory fails at
once: NumPy raises MemoryError and the VM traps "out of memory" at the instruction. Where memory
is overcommitted without limit (`vm.overcommit_memory=1`, as kubelet sets it on Kubernetes
nodes, and on some GPU machines) the same request succeeds and the kernel kills the whole
process at the first write. So before an instruction whose result may be larger than every
operand runs (a product's [N, N] from [N, 1] and [1, N], a broadcast, a fill of named size), the
VM sizes its result from the call's dims and traps when it exceeds what the machine could ever
hold: its RAM plus swap, or the cgroup's memory limit when that is lower. Instructions whose
result is no larger than an operand cost nothing. The native tier's allocator applies the same
ceiling (dlvm_aot_rt.c: machine_bytes).
"""
from __future__ import annotations

import functools
import os
from collections import Counter
from collections.abc import Callable

from isa.types import TensorType

from .frame_layout import BINDINGS_SLOT

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


@functools.cache
def ceiling_bytes() -> int:
    """$DLVM_MEMORY_LIMIT (bytes, or with a K/M/G/T suffix) when set; else RAM + swap, at most
    the cgroup's memory limit; 2**62 where neither can be read."""
    text = os.environ.get("DLVM_MEMORY_LIMIT", "").strip().upper()
    if text:
        unit = text[-1] if text[-1] in _UNITS else ""
        number = text[:-1] if unit else text
        if not number.isdigit():
            raise ValueError(f"DLVM_MEMORY_LIMIT must be a number of bytes with an optional "
                             f"K, M, G or T suffix, got {text!r}")
        return int(number) * _UNITS[unit]
    total = 0
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("SwapTotal:"):
                    total += int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) > 0:
            total = min(total, int(text)) if total else int(text)
    return total or 1 << 62


def may_outgrow(result: TensorType, operands: list[TensorType]) -> bool:
    """Whether `result` can hold more elements than every operand, judged on the types alone:
    an operand covers it when the result's named dims are among the operand's and the result's
    fixed extent is no larger. Unknown dims (None) cannot be sized before the instruction runs,
    so a result with one is not checked."""
    if any(d is None for d in result.shape):
        return False
    names = Counter(d for d in result.shape if isinstance(d, str))
    fixed = _fixed(result)
    for t in operands:
        if not isinstance(t, TensorType) or any(d is None for d in t.shape):
            continue
        if not names - Counter(d for d in t.shape if isinstance(d, str)) and fixed <= _fixed(t):
            return False
    return True


def _fixed(t: TensorType) -> int:
    n = 1
    for d in t.shape:
        if isinstance(d, int):
            n *= d
    return n


def nbytes(t: TensorType) -> int:
    """Bytes of a value of static type `t`."""
    return _fixed(t) * t.dtype.itemsize


def guard_for(results: list[TensorType], operands: list[TensorType],
              where: tuple[int, int]) -> Callable[[list], None] | None:
    """A check to run before the instruction at `where` (None when it needs none): its results
    that may outgrow its operands fit the ceiling under the call's dims, else MemoryError (the
    VM's "out of memory" trap at that instruction). A static result is judged once, here."""
    limit = ceiling_bytes()
    risky = [t for t in results if may_outgrow(t, operands)
             and not (t.is_static and nbytes(t) <= limit)]
    if not risky:
        return None
    sized = [(t.shape, t.dtype.itemsize) for t in risky]

    def check(r: list) -> None:
        bindings = r[BINDINGS_SLOT]
        for shape, item in sized:
            n = item
            for d in shape:       # a name this call did not bind sizes nothing (0)
                n *= bindings.get(d, 0) if isinstance(d, str) else d
            if n > limit:
                e = MemoryError(f"{n} bytes requested; the machine holds {limit}")
                e.dlvm_where = where
                raise e
    return check
