"""Run a CUDA kernel's structure on the host, one thread, to check it without a GPU.

The same emitter as `codegen` builds the kernel, with the GPU-only pieces swapped: thread and
block indices are the constants of a 1x1 launch (so every grid-stride loop walks the whole
domain), barriers vanish, a block reduction of one thread is the thread's own value, and the
math functions are the CPU JIT's instead of libdevice. What is checked this way: index and
broadcast arithmetic, the reduction phases, row-level outputs, identities, the status word and
every lowering the GPU shares with the CPU. What is not: the shuffle tree and shared memory
across threads (those need a GPU; see tests marked `gpu`).
"""
from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir

from isa.dtypes import DType
from jit.kernel_ir import Kernel
from jit.llvm.irutil import I64, const
from jit.llvm.mathfn import MathLib
from jit.llvm.ops import LowerCtx
from jit.plan import Plan, Spec

from .codegen import _Emitter, _ieee_divisions, kernel_name

# Loaded objects are kept for the life of the process: an MCJIT engine owns the (shared, cached)
# host target machine it was made with, so freeing one would free that machine too.
_KEEP: list = []


class _HostMath(MathLib):
    """The CPU JIT's math, plus the fmod that the GPU takes from libdevice (host: frem/libm)."""

    def call(self, b: ir.IRBuilder, name: str, args: list[ir.Value]) -> ir.Value:
        if name == "fmod":
            return b.frem(*args)
        return super().call(b, name, args)


class _HostEmitter(_Emitter):
    def __init__(self, kernel: Kernel, spec: Spec, name: str):
        super().__init__(kernel, spec, name)
        from jit.llvm import target
        tm = target.target_machine(3)
        self.mod.triple = tm.triple
        self.mod.data_layout = str(tm.target_data)
        self.fn.calling_convention = ""
        self.ctx = LowerCtx(self.mod, _HostMath(self.mod, self._set_status), self._set_status)

    def sreg(self, name: str) -> ir.Value:
        return const(I64, 1 if name in ("ntid.x", "nctaid.x") else 0)

    def barrier(self) -> None:
        pass

    def block_reduce(self, r, kind, d, v, tid):
        return v


def compile_on_host(kernel: Kernel, spec: Spec):
    """A ctypes function running the kernel variant as a 1x1 launch, and the object keeping it."""
    from jit.llvm import target
    name = kernel_name(kernel, spec)
    em = _HostEmitter(kernel, spec, name)
    if kernel.reductions:
        em.rows()
    else:
        em.elementwise()
    _ieee_divisions(em.mod)
    mod = target.optimize(str(em.mod), 2)
    loaded = target.LoadedObject(target.emit_object(mod, 2))
    _KEEP.append(loaded)
    n_ptr = len(kernel.inputs) + len(kernel.outputs) + 1
    n_dims = spec.rank * (1 + len(kernel.inputs) + len(kernel.outputs))
    proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * n_ptr + [ctypes.c_int64] * n_dims))
    return proto(loaded.address(name)), loaded


def run_on_host(kernel: Kernel, plan: Plan, inputs: list[np.ndarray]) -> tuple[list[np.ndarray], int]:
    """Outputs and the status word of one emulated launch on contiguous `inputs`."""
    fn, _ = compile_on_host(kernel, plan.spec)
    ins = [np.ascontiguousarray(a) for a in inputs]
    outs = [np.empty(s, _np_dtype(o.dtype)) for s, o in zip(plan.out_shapes, kernel.outputs)]
    status = np.zeros(1, np.uint32)
    ptrs = [a.ctypes.data for a in ins] + [o.ctypes.data for o in outs] + [status.ctypes.data]
    fn(*ptrs, *[int(x) for x in plan.dims])
    return outs, int(status[0])


def _np_dtype(d: DType) -> np.dtype:
    return np.dtype(d.np)
