"""The ahead-of-time target: a program as a standalone shared library with a C header.

See build.py (`compile_library`) and specs/aot.md; `dlvm aot PROG -o DIR` runs it, and
`dlvmrt.aot.load(DIR)` calls the result from Python.
"""
from .build import AotError, Library, compile_library, find_cc

__all__ = ["AotError", "Library", "compile_library", "find_cc"]
