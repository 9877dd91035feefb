"""The VM's side of a native-tier library's instructions that have no library code.

A library built for the native tier (jit/targets/aot/cached.py: vm_fallback) calls back for an
instruction it cannot compile (a boolean mask's nonzero, unique, a detection head's
non_max_suppression, ...) instead of leaving the whole program to the interpreter: before,
one such instruction cost every other instruction its compiled code and the call its single
trip into the library (a masked scoring head ran 4-18x slower). The callback runs the op's
reference, the interpreter's definition, on copies of the operands and hands the results to
the library's allocator, so the library releases them as its own.

The library keeps one function pointer for the whole process (a library is loaded once per
directory, whichever VM loads it), so the callback for a directory is made once and kept for
the process's lifetime: a VM that goes away must not leave the library a dangling pointer. Its
table comes from the module the library was built from (the library's key is the module's
bytecode, so every VM loading it has the same instructions). Any failure in the callback (a
trap in the reference, a wrong result) fails the library call with a guard; the native tier then
runs the call on the VM, which gives the interpreter's result or error.
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from isa.module import Module
from isa.narrow import touches_narrow, widened
from isa.ops import OPS
from jit import ForkSafeLock

from .aot import _BY_CODE, MAX_RANK


class Value(ctypes.Structure):
    """The runtime's dlvm_val (jit/targets/aot/runtime/dlvm_aot_rt.h)."""
    _fields_ = [("buf", ctypes.c_void_p), ("data", ctypes.c_void_p),
                ("shape", ctypes.c_int64 * MAX_RANK), ("rank", ctypes.c_int32),
                ("dtype", ctypes.c_int32)]


VM_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.POINTER(Value)),
                         ctypes.c_int32, ctypes.POINTER(Value), ctypes.c_int32,
                         ctypes.c_void_p, ctypes.c_int32)
_attached: dict[str, Any] = {}       # library directory -> its callback (kept: see above)
_lock = ForkSafeLock()


def attach(lib: ctypes.CDLL, name: str, directory: str, table: list, module: Module) -> None:
    """Give library `lib` (symbol prefix `name`) the function that runs its VM instructions
    (`table`: the manifest's [function, block, instruction] per index)."""
    with _lock:
        if directory in _attached:
            return
        from isa.verify import verify_module
        types = verify_module(module)
        steps = []
        for fname, bi, ii in table:
            ins = module.functions[fname].blocks[bi].instrs[ii]
            op = OPS[ins.op]
            t = types[fname][bi][ii]
            ref = op.reference
            if touches_narrow(t.operands + t.results, op):     # f16: in f32, rounded once
                ref = widened(ref, [r.dtype for r in t.results])
            steps.append((ref, op.with_defaults(ins.attrs), len(ins.results), t.results))
        make = getattr(lib, f"{name}_vm_result")
        make.argtypes = [ctypes.POINTER(Value), ctypes.c_int32, ctypes.c_int32,
                         ctypes.POINTER(ctypes.c_int64)]
        make.restype = ctypes.c_int

        def run(index, ins, n_in, outs, n_out, message, size):
            try:
                ref, attrs, n_results, result_types = steps[index]
                got = ref(attrs, *[_array(ins[i].contents) for i in range(n_in)])
                got = list(got) if n_results != 1 else [got]
                if len(got) != n_out:
                    raise ValueError(f"{len(got)} results, the library wants {n_out}")
                for j, (value, t) in enumerate(zip(got, result_types)):
                    _result(make, outs[j], np.asarray(value), t)
                return 0
            except BaseException as e:  # noqa: BLE001 - reported to the library, never raised
                text = f"{type(e).__name__}: {e}".encode()[:max(size - 1, 0)]
                ctypes.memmove(message, text + b"\0", len(text) + 1)
                return 1

        callback = VM_FN(run)
        set_vm = getattr(lib, f"{name}_set_vm")
        set_vm.argtypes = [VM_FN]
        set_vm(callback)
        _attached[directory] = callback


def _array(v: Value) -> np.ndarray:
    """A copy of a library value as a NumPy array (the reference may keep or alter it)."""
    dtype = _BY_CODE[v.dtype]
    shape = tuple(v.shape[i] for i in range(v.rank))
    n = int(np.prod(shape, dtype=np.int64))
    out = np.empty(shape, dtype=dtype.np)
    if n:
        ctypes.memmove(out.ctypes.data, v.data, n * out.itemsize)
    return out


def _result(make, out: Value, value: np.ndarray, t) -> None:
    """`value` as the library value `out`, in the dtype and rank of the result's type `t`."""
    value = np.asarray(value, dtype=t.dtype.np)      # (np.ascontiguousarray makes 0-d 1-d)
    if not value.flags.c_contiguous:
        value = value.copy(order="C")
    if value.ndim != t.rank:
        raise ValueError(f"a result of rank {value.ndim}, the program's type is {t}")
    shape = (ctypes.c_int64 * MAX_RANK)(*value.shape)
    if make(ctypes.byref(out), t.dtype.code, value.ndim, shape):
        raise MemoryError(f"no memory for a result of {value.nbytes} bytes")
    if value.nbytes:
        ctypes.memmove(out.data, value.ctypes.data, value.nbytes)
