"""The op table: one record per opcode, collected from one file per family.

Every stage looks ops up here (`OPS[name]`, `BY_CODE[code]`); nothing keeps a parallel list.
"""
from __future__ import annotations

from . import (
    contraction,
    control,
    conv3d,
    detection,
    dynamic,
    einsum,
    elementwise,
    image,
    indexing,
    linalg,
    lookup,
    movement,
    nn,
    ordering,
    pooling,
    random,
    reduce,
    resize,
    sampling,
    sets,
    signal,
    strings,
    text,
    value,
)
from .opdef import REQUIRED, AttrKind, AttrSpec, Family, OpDef, Syntax
from .strings_guard import refusing_str

_FAMILY_FILES = (elementwise, reduce, contraction, nn, conv3d, pooling, movement, value, control, dynamic,
                 ordering, indexing, einsum, signal, sampling,
                 sets, linalg, image, detection, resize, text, strings, lookup, random)

OPS: dict[str, OpDef] = {}
BY_CODE: dict[int, OpDef] = {}
for _mod in _FAMILY_FILES:
    for _op in _mod.OPS:
        _op = refusing_str(_op)
        if _op.name in OPS or _op.code in BY_CODE:
            raise RuntimeError(f"op table: duplicate name or code for {_op.name} ({_op.code})")
        OPS[_op.name] = _op
        BY_CODE[_op.code] = _op


def get_op(name: str) -> OpDef | None:
    return OPS.get(name)


__all__ = ["OPS", "BY_CODE", "get_op", "OpDef", "AttrSpec", "AttrKind", "Family", "Syntax",
           "REQUIRED"]
