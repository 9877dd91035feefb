"""Load a program from a path, bytes, text or a Module, and verify it before anything runs.

Bytecode is recognized by its magic; anything else given as a path is read as `.dlasm` text.
Loading never executes anything: decoding is checked data, then the verifier runs.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Union

from isa.errors import MalformedError
from isa.module import Module

from .program import Program

ProgramSource = Union[str, os.PathLike, bytes, bytearray, memoryview, Module, Program]


def _bytecode():
    import isa.bytecode as bc  # imported lazily: a text-only run need not load msgpack
    return bc


def is_bytecode(data: bytes) -> bool:
    return bytes(data[: len(_bytecode().MAGIC)]) == _bytecode().MAGIC


def load(source: ProgramSource, *, limits=None) -> Program:
    """A verified Program from a `.dlasm`/`.dlbc`/`.onnx` path, bytecode bytes, a Module or a Program.

    Raises MalformedError (bad text or bytes), InvalidError (the verifier), ResourceExhausted
    (bytecode limits); never executes anything.
    """
    if isinstance(source, Program):
        return source
    if isinstance(source, Module):
        return Program.from_module(source)
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if not is_bytecode(data):
            raise MalformedError("not dlvm bytecode: the data does not start with the magic "
                                 f"{_bytecode().MAGIC!r}")
        return Program.from_module(_bytecode().decode(data, limits))
    path = Path(source)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise MalformedError(f"cannot read {path}: {e.strerror or e}") from None
    if is_bytecode(data) or path.suffix == ".dlbc":
        try:
            return Program.from_module(_bytecode().decode(data, limits))
        except MalformedError as e:
            if not e.message.startswith(str(path)):
                e.message = f"{path}: {e.message}"
            raise
    if path.suffix.lower() == ".onnx":
        return Program.from_module(_import_onnx(path, data))
    if path.suffix == ".pt2":       # a saved torch.export program (the torch extra)
        from frontends.torch import load_pt2
        return Program.from_module(load_pt2(path))
    import assembler
    return Program.from_module(assembler.assemble_file(str(path)))


def _import_onnx(path: Path, data: bytes) -> Module:
    """An ONNX model imported on the fly (`dlvm run model.onnx`, the REPL's `:load`)."""
    try:
        from frontends.onnx import import_onnx
    except ImportError as e:
        raise MalformedError(f"{path}: running an ONNX model needs the onnx extra "
                             f"(pip install 'dlvm[onnx]'): {e}") from None
    del data                  # read again by onnx, so that its errors name the file
    return import_onnx(str(path), name=path.stem)
