"""Libraries built by `dlvm aot`, called from Python through ctypes.

    lib = dlvmrt.aot.load("out/")             # the directory `dlvm aot -o` wrote
    (y,) = lib.run("main", x)                 # as VM.run: positional or by parameter name

The library is the program compiled ahead of time; this module only converts arrays and errors:
results come back as NumPy arrays, and the library's error codes as dlvm's exceptions (a trap as
Trap, a bad argument as Trap, running out of memory as ResourceExhausted).
"""
from __future__ import annotations

import ctypes
import json
import math
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from isa.dtypes import DType
from isa.errors import InternalError, MalformedError, ResourceExhausted, Trap

MAX_RANK = 8
MANIFEST = "dlvm_aot.json"
FORMAT = "dlvm-aot-1"
_BY_CODE = {d.code: d for d in DType}


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("shape", ctypes.c_int64 * MAX_RANK),
                ("rank", ctypes.c_int32), ("dtype", ctypes.c_int32)]


class Status(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int32), ("message", ctypes.c_char * 480)]


def is_library_dir(path: str | os.PathLike) -> bool:
    return (Path(path) / MANIFEST).is_file()


class Library:
    """One loaded library; `run` may be called from many threads at once."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        try:
            self.manifest = json.loads((self.directory / MANIFEST).read_text())
        except (OSError, ValueError) as e:
            raise MalformedError(f"{self.directory}: not a dlvm aot library ({MANIFEST}: {e})") \
                from None
        if self.manifest.get("format") != FORMAT:
            raise MalformedError(f"{self.directory}: library format {self.manifest.get('format')!r}, "
                                 f"this dlvm reads {FORMAT!r}")
        self.name = self.manifest["name"]
        try:
            self._lib = ctypes.CDLL(str(self.directory / self.manifest["shared"]))
        except OSError as e:
            raise MalformedError(f"{self.directory}: cannot load the library: {e}") from None
        # getattr, not [], so that the argument types set here stay on the function objects
        self._free = getattr(self._lib, f"{self.name}_free")
        self._free.argtypes = [ctypes.c_void_p]
        self._set_threads = getattr(self._lib, f"{self.name}_set_threads")
        self._set_threads.argtypes = [ctypes.c_int]
        # libraries written before the step budget lack it
        self._set_max_steps = getattr(self._lib, f"{self.name}_set_max_steps", None)
        if self._set_max_steps is not None:
            self._set_max_steps.argtypes = [ctypes.c_int64]
        self._allocation_counts = getattr(self._lib, f"{self.name}_allocation_counts", None)
        if self._allocation_counts is not None:
            self._allocation_counts.argtypes = [ctypes.POINTER(ctypes.c_int64)]
        self._solo_jobs = getattr(self._lib, f"{self.name}_pool_solo_jobs", None)
        if self._solo_jobs is not None:
            self._solo_jobs.restype = ctypes.c_int64
        self._types: dict[str, list] = {}
        self._frames = threading.local()      # entry -> _Frame, per thread
        self._fns = {}
        for fname, info in self.manifest["functions"].items():
            fn = getattr(self._lib, info["symbol"])
            fn.argtypes = [ctypes.POINTER(Tensor), ctypes.POINTER(Tensor), ctypes.POINTER(Status)]
            fn.restype = ctypes.c_int32
            self._fns[fname] = (fn, info)
        # the fast call (a CPython extension built on first use; None: ctypes serves every call)
        from . import pycall
        self._fast = pycall.load()
        free = ctypes.cast(self._free, ctypes.c_void_p).value
        self._fast_args = {f: (ctypes.cast(fn, ctypes.c_void_p).value, free, len(info["results"]))
                           for f, (fn, info) in self._fns.items()}

    @property
    def functions(self) -> list[str]:
        return list(self._fns)

    def attach_vm(self, module) -> int:
        """Let the VM run the instructions a native-tier library has no code for (`module`: the
        program it was built from; dlvmrt/library_vm.py); how many there are."""
        table = self.manifest.get("vm_instructions") or []
        if table:
            from .library_vm import attach
            attach(self._lib, self.name, str(self.directory), table, module)
        return len(table)

    def set_threads(self, n: int) -> None:
        self._set_threads(int(n))

    def allocation_counts(self) -> tuple[int, int] | None:
        """(system allocations, results handed over) since the library was loaded: the calls
        into malloc for values, headers and scratch the runtime's buffer cache did not serve
        (and results copied out), and the results callers took. A steady-state call adds as
        many of the first as of the second: its compiled code allocates nothing itself. None
        for libraries written before the counts."""
        if self._allocation_counts is None:
            return None
        out = (ctypes.c_int64 * 2)()
        self._allocation_counts(out)
        return int(out[0]), int(out[1])

    def pool_solo_jobs(self) -> int | None:
        """Parallel jobs the library ran on the calling thread alone since it was loaded, because
        its pool's workers waited longer for a core than they saved (a machine busier than the
        thread count); None for libraries written before the count."""
        return None if self._solo_jobs is None else int(self._solo_jobs())

    def set_max_steps(self, n: int) -> bool:
        """Bound the blocks one call may run (0: no limit); False if the library cannot."""
        if self._set_max_steps is None:
            return False
        self._set_max_steps(int(n))
        return True

    def run(self, entry: str = "main", *args: Any, **named: Any) -> tuple[np.ndarray, ...]:
        if entry not in self._fns:
            raise Trap(f"no function @{entry} in library {self.name} (it has: "
                       + ", ".join("@" + f for f in self._fns) + ")")
        fn, info = self._fns[entry]
        params = [p["name"] for p in info["params"]]
        values = list(args)
        if len(values) > len(params):
            raise Trap(f"@{entry} takes {len(params)} arguments, got {len(values)}")
        for p in params[len(values):]:
            if p not in named:
                raise Trap(f"@{entry}: missing argument %{p}")
            values.append(named.pop(p))
        if named:
            raise Trap(f"@{entry} has no parameter " + ", ".join("%" + k for k in named))
        from .vm import _as_input
        types = self._param_types(entry)
        # (np.ascontiguousarray would make a 0-d argument 1-d)
        arrays = [np.asarray(_as_input(v, t), order="C") for v, t in zip(values, types)]
        code, message, results = self.call(entry, arrays)
        if code:
            raise {1: Trap, 2: Trap, 3: ResourceExhausted}.get(code, Trap)(message) \
                if code in (1, 2, 3, 4) else InternalError(f"library returned code {code}: {message}")
        return results

    def _param_types(self, entry: str) -> list:
        types = self._types.get(entry)
        if types is None:
            from isa.types import parse_type
            types = self._types[entry] = [parse_type(p["type"]) for p in
                                          self._fns[entry][1]["params"]]
        return types

    def call(self, entry: str, arrays: list[np.ndarray]) -> tuple[int, str, tuple[np.ndarray, ...]]:
        """The library's entry on C-contiguous arrays, one per parameter in order: (0, "",
        results), or (error code, message, ()). The VM's native tier calls this, once per
        call of a small model too, so it stays a few microseconds: no NumPy reductions, the
        data pointers through the buffer protocol, no copy of the results."""
        if self._fast is not None:
            fn_address, free, n_out = self._fast_args[entry]
            code, got = self._fast.call(fn_address, free, arrays, n_out)
            return (0, "", got) if code == 0 else (code, got, ())
        fn, info = self._fns[entry]
        frames = self._frames.__dict__
        frame = frames.get(entry)
        if frame is None or frame.n_in != len(arrays):
            frame = frames[entry] = _Frame(len(arrays), len(info["results"]))
        ins, shapes = frame.ins, frame.shapes
        for i, a in enumerate(arrays):
            t = ins[i]
            t.data = _address(a) if a.size else None
            shape = a.shape
            if shape != shapes[i] or a.dtype is not frame.dtypes[i]:
                if a.ndim > MAX_RANK:
                    shapes[i] = None
                    return 1, f"an argument of rank {a.ndim} (at most {MAX_RANK})", ()
                d = _CODES.get(a.dtype)
                t.rank = a.ndim
                t.dtype = d if d is not None else -1
                t.shape[:a.ndim] = shape
                shapes[i], frame.dtypes[i] = shape, a.dtype
        n_out = frame.n_out
        outs, status = frame.outs, frame.status
        code = fn(ins, outs, frame.status_ref)
        if code:
            return code, status.message.decode(errors="replace"), ()
        results = []
        for t in outs[:n_out]:
            d = _BY_CODE[t.dtype]
            shape = tuple(t.shape[:t.rank])
            if t.data and math.prod(shape):
                # no copy: the array views the buffer the library handed over, and frees it
                # when the last view goes (a copy of a batch's activations cost as much as the
                # layer that made them)
                results.append(np.asarray(_HandedOver(self, t.data, shape, d.np)))
            else:
                if t.data:
                    self._free(t.data)
                results.append(np.empty(shape, d.np))
        return 0, "", tuple(results)


class _Frame:
    """The ctypes arguments of one entry, kept per thread and reused call after call (building
    them was a third of a small model's call): the inputs' shapes are written again only when
    they change; the library writes every output and the status."""

    __slots__ = ("n_in", "n_out", "ins", "outs", "status", "status_ref", "shapes", "dtypes")

    def __init__(self, n_in: int, n_out: int):
        self.n_in, self.n_out = n_in, n_out
        self.ins = (Tensor * max(n_in, 1))()
        self.outs = (Tensor * max(n_out, 1))()
        self.status = Status()
        self.status_ref = ctypes.byref(self.status)
        self.shapes: list = [None] * n_in
        self.dtypes: list = [None] * n_in


def _address(a: np.ndarray) -> int:
    """The address of a C-contiguous array's data (ndarray.ctypes costs three times more)."""
    if a.flags.writeable:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))
    return a.ctypes.data


class _HandedOver:
    """A result buffer the library handed over, seen by NumPy through the array interface and
    given back to the library's free when its last array is collected (the Library is kept
    alive with it, so its free is still there)."""

    __slots__ = ("__array_interface__", "_lib", "_ptr")

    def __init__(self, lib: Library, ptr: int, shape: tuple[int, ...], dtype: np.dtype):
        self._lib, self._ptr = lib, ptr
        self.__array_interface__ = {"shape": shape, "typestr": _TYPESTR[dtype],
                                    "data": (ptr, False), "version": 3}

    def __del__(self) -> None:
        ptr, self._ptr = self._ptr, None
        if ptr:
            self._lib._free(ptr)


# no library takes the narrow formats or str (object arrays hold pointers, not values)
_CODES = {np.dtype(d.np): d.code for d in DType if not d.is_narrow and not d.is_str}
_TYPESTR = {d.np: np.dtype(d.np).str for d in DType if not d.is_narrow and not d.is_str}


def load(directory: str | os.PathLike) -> Library:
    """The library `dlvm aot` wrote into `directory`."""
    return Library(directory)
