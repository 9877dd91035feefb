"""The ahead-of-time target: a program as a standalone shared library with a C header.

See build.py (`compile_library`) and specs/aot.md; `dlvm aot PROG -o DIR` runs it, and
`dlvmrt.aot.load(DIR)` calls the result from Python. Importing this package imports nothing
heavy (the target registry reads its register.py); the names below load on first use.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {"AotError": "build", "Library": "build", "compile_library": "build", "find_cc": "build",
            "cached_library": "cached"}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(name)


__all__ = list(_EXPORTS)
