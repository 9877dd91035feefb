"""The fast call into `dlvm aot` libraries: a small CPython extension (dlvm_pycall.c), compiled
on first use with the C compiler that links the libraries and kept in dlvm's cache beside them.

`load()` returns the extension module, or None where it cannot be had (no C compiler, no
Python headers, $DLVM_PYCALL=off, a failed build): dlvmrt/aot.py then calls through ctypes, which
gives the same results a dozen microseconds slower per call. `reason()` says why it is off.
"""
from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType

import numpy as np

from jit import ForkSafeLock

SOURCE = Path(__file__).with_name("dlvm_pycall.c")

_lock = ForkSafeLock()
_state: dict[str, object] = {}        # "module" or "reason", once decided


def load() -> ModuleType | None:
    if "module" in _state or "reason" in _state:
        return _state.get("module")      # type: ignore[return-value]
    with _lock:
        if "module" not in _state and "reason" not in _state:
            try:
                _state["module"] = _build_and_load()
            except Exception as e:  # noqa: BLE001 - ctypes serves every call instead
                _state["reason"] = f"{type(e).__name__}: {str(e).strip()[:300]}"
    return _state.get("module")          # type: ignore[return-value]


def reason() -> str:
    load()
    return str(_state.get("reason", ""))


def _build_and_load() -> ModuleType:
    if os.environ.get("DLVM_PYCALL", "").lower() in ("0", "off", "no"):
        raise RuntimeError("off ($DLVM_PYCALL)")
    import jit
    cc = jit.c_compiler()
    if cc is None:
        raise RuntimeError("no C compiler")
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").is_file():
        raise RuntimeError(f"no Python headers in {include}")
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    text = SOURCE.read_bytes()
    key = hashlib.sha256(b"\0".join([text, sys.version.encode(), np.__version__.encode(),
                                     suffix.encode(), cc.encode()])).hexdigest()[:24]
    folder = jit.cache_root() / "pycall" / key
    target = folder / f"_dlvm_pycall{suffix}"
    if not target.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        # built under a temporary name and renamed: processes sharing the cache never load a
        # half-written file
        fd, tmp = tempfile.mkstemp(suffix=suffix, dir=folder)
        os.close(fd)
        try:
            done = subprocess.run([cc, "-O2", "-shared", "-fPIC", f"-I{include}",
                                   f"-I{np.get_include()}", str(SOURCE), "-o", tmp],
                                  capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(f"the build failed: {done.stderr[-600:]}")
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    spec = importlib.util.spec_from_file_location("_dlvm_pycall", target)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {target}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from isa.dtypes import DType

    from ..aot import Status, Tensor
    sizes = module.init([(np.dtype(d.np).num, d.code) for d in DType
                          if not d.is_narrow and not d.is_str])
    if tuple(sizes) != (ctypes.sizeof(Tensor), ctypes.sizeof(Status)):
        raise RuntimeError(f"struct sizes {sizes} differ from aot.py's")
    return module
