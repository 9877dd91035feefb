"""What every `dlvm` subcommand shares: usage errors, reading programs, inputs and named dims."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

# `dlvm disasm` and `dlvm opt` summarize constants larger than this (a 19 MB encoder printed
# 68 MB of text); small ones, the examples' weights among them, stay in the listing
ELIDE_ABOVE = 4096


class UsageError(Exception):
    """A mistake in how the command was called: exit status 2."""


def parse_dims(items: list[str] | None) -> dict[str, int]:
    """`--dim N=8` options as {name: size}."""
    dims = {}
    for item in items or []:
        name, _, value = item.partition("=")
        if not name.isidentifier() or not value.isdigit():
            raise UsageError(f"--dim takes NAME=SIZE (e.g. --dim N=8), got {item!r}")
        dims[name] = int(value)
    return dims


def load_program(path: str):
    """A verified program from a .dlasm or .dlbc path."""
    from dlvmrt.loader import load
    return load(path)


def module_of(path: str):
    """A module from a .dlasm or .dlbc path, verified."""
    return load_program(path).module


def is_bytecode_file(path: str) -> bool:
    from dlvmrt.loader import is_bytecode
    try:
        with open(path, "rb") as f:
            return is_bytecode(f.read(16))
    except OSError:
        return False


def write_output(path: str, data: bytes) -> None:
    if path == "-":
        sys.stdout.buffer.write(data)
        return
    try:
        Path(path).write_bytes(data)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None


def as_declared_narrow(a: np.ndarray, dtype) -> np.ndarray:
    """An .npz array for a parameter of a narrow dtype (bf16, float8, int4 ...): NumPy's npz
    keeps ml_dtypes arrays as raw void bytes (|V2), so bytes of the declared width are read as
    the declared dtype; anything else is passed on unchanged (a mismatch is the VM's trap)."""
    if dtype.is_narrow and a.dtype.kind == "V" and a.dtype.itemsize == dtype.itemsize:
        return a.view(dtype.np)
    return a


def read_inputs(path: str) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError) as e:
        raise UsageError(f"cannot read inputs {path}: {e}") from None
