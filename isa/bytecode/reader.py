"""Checked reads of msgpack values for the decoder.

Each reader checks one value's msgpack type, range or length against the format and the Limits,
and raises MalformedError (or ResourceExhausted for a limit) with a message that says where in the
file the value sits, e.g. "bytecode: function 2 (@main), block 0, instruction 5: operand 1 refers
to string 900 of 37". Nothing of a declared size is allocated before its size is checked.
"""
from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from ..dtypes import BY_CODE as DTYPES
from ..dtypes import DType
from ..errors import MalformedError, ResourceExhausted
from ..types import Dim, TensorType
from .limits import Limits

# register, constant, function, block and module names: word characters and dots, not starting
# with a dot (so `%x`, `%0`, `%h.1`); dim names are Python identifiers, as in `parse_type`
_NAME = re.compile(r"\w[\w.]*")


def malformed(where: str, msg: str) -> MalformedError:
    return MalformedError(f"bytecode: {where}: {msg}" if where else f"bytecode: {msg}")


def exhausted(where: str, msg: str) -> ResourceExhausted:
    return ResourceExhausted(f"bytecode: {where}: {msg}" if where else f"bytecode: {msg}")


def type_name(v: Any) -> str:
    """The msgpack name of a decoded value's type, for messages."""
    if v is None:
        return "nil"
    if isinstance(v, bool):
        return "bool"
    return {int: "int", float: "float", str: "string", bytes: "bin", list: "array",
            dict: "map"}.get(type(v), type(v).__name__)


class Reader:
    """Holds the string table and the limits while one file is decoded."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.strings: list[str] = []
        self.payload_bytes = 0     # constant and literal bytes so far, against max_constant_bytes

    # -- containers -------------------------------------------------------------------------

    def array(self, v: Any, where: str, what: str, limit: int, limit_name: str) -> list:
        if not isinstance(v, list):
            raise malformed(where, f"{what} must be an array, got {type_name(v)}")
        if len(v) > limit:
            raise exhausted(where, f"{what} has {len(v)} entries, more than the limit "
                                   f"{limit_name} = {limit}")
        return v

    def fixed(self, v: Any, n: int, where: str, what: str) -> list:
        """An array of exactly `n` fields (a record)."""
        if not isinstance(v, list):
            raise malformed(where, f"{what} must be an array of {n} fields, got {type_name(v)}")
        if len(v) != n:
            raise malformed(where, f"{what} must have {n} fields, got {len(v)}")
        return v

    # -- scalars ----------------------------------------------------------------------------

    def int(self, v: Any, where: str, what: str) -> int:
        """An integer: a msgpack int, or a bin of its two's-complement little-endian bytes."""
        if isinstance(v, bool) or not isinstance(v, (int, bytes)):
            raise malformed(where, f"{what} must be an int, got {type_name(v)}")
        if isinstance(v, int):
            return v
        if not v:
            raise malformed(where, f"{what} is a wide int of 0 bytes")
        if len(v) > self.limits.max_int_bytes:
            raise exhausted(where, f"{what} is an int of {len(v)} bytes, more than the limit "
                                   f"max_int_bytes = {self.limits.max_int_bytes}")
        return int.from_bytes(v, "little", signed=True)

    def count(self, v: Any, where: str, what: str, hi: int) -> int:
        """A small non-negative native int below `hi` (a code, an index, a line)."""
        if isinstance(v, bool) or not isinstance(v, int):
            raise malformed(where, f"{what} must be an int, got {type_name(v)}")
        if not 0 <= v < hi:
            raise malformed(where, f"{what} is {v}, outside 0..{hi - 1}")
        return v

    def bool(self, v: Any, where: str, what: str) -> bool:
        if not isinstance(v, bool):
            raise malformed(where, f"{what} must be a bool, got {type_name(v)}")
        return v

    def float(self, v: Any, where: str, what: str) -> float:
        if not isinstance(v, float):
            raise malformed(where, f"{what} must be a float, got {type_name(v)}")
        return v

    # -- strings and names -------------------------------------------------------------------

    def string(self, v: Any, where: str, what: str) -> str:
        """The string-table entry that `v` indexes."""
        if isinstance(v, bool) or not isinstance(v, int):
            raise malformed(where, f"{what} must be a string index, got {type_name(v)}")
        if not 0 <= v < len(self.strings):
            raise malformed(where, f"{what} refers to string {v} of {len(self.strings)}")
        return self.strings[v]

    def name(self, v: Any, where: str, what: str) -> str:
        s = self.string(v, where, what)
        if not _NAME.fullmatch(s):
            raise malformed(where, f"{what} {s!r} is not a valid name")
        return s

    def dim_name(self, v: Any, where: str, what: str) -> str:
        s = self.string(v, where, what)
        if not s.isidentifier():
            raise malformed(where, f"{what} {s!r} is not a valid dim name")
        return s

    # -- types and arrays -------------------------------------------------------------------

    def dtype(self, v: Any, where: str, what: str) -> DType:
        if isinstance(v, bool) or not isinstance(v, int) or v not in DTYPES:
            raise malformed(where, f"{what} has an unknown dtype code {v!r}")
        return DTYPES[v]

    def rank(self, dims: Any, where: str, what: str) -> list:
        return self.array(dims, where, f"the shape of {what}", self.limits.max_rank, "max_rank")

    def type(self, v: Any, where: str, what: str) -> TensorType:
        """[dtype code, dims]; a dim is a size (int >= 0), nil (unknown) or [name index]."""
        code, dims = self.fixed(v, 2, where, what)
        dtype = self.dtype(code, where, what)
        shape: list[Dim] = []
        for k, d in enumerate(self.rank(dims, where, what)):
            if d is None:
                shape.append(None)
            elif isinstance(d, list):
                (i,) = self.fixed(d, 1, where, f"dim {k} of {what}")
                shape.append(self.dim_name(i, where, f"dim {k} of {what}"))
            else:
                n = self.int(d, where, f"dim {k} of {what}")
                if n < 0:
                    raise malformed(where, f"dim {k} of {what} is negative ({n})")
                shape.append(n)
        return TensorType(dtype, tuple(shape))

    def static_shape(self, dims: Any, where: str, what: str) -> tuple[int, ...]:
        shape = []
        for k, d in enumerate(self.rank(dims, where, what)):
            n = self.int(d, where, f"dim {k} of {what}")
            if n < 0:
                raise malformed(where, f"dim {k} of {what} is negative ({n})")
            shape.append(n)
        return tuple(shape)

    def ndarray(self, code: Any, dims: Any, raw: Any, where: str, what: str) -> np.ndarray:
        """An array from its dtype code, shape and little-endian bytes. The declared size is
        checked against the limits before the bytes are looked at."""
        dtype = self.dtype(code, where, what)
        shape = self.static_shape(dims, where, what)
        n = math.prod(shape)
        # numpy refuses shapes whose nonzero dims multiply past its index range even when a zero
        # dim makes the array empty, so the limit applies to that product
        span = math.prod(d for d in shape if d)
        lim = self.limits
        if span > lim.max_constant_elements:
            count = f"{n} elements" if n else f"an empty shape spanning {span} elements"
            raise exhausted(where, f"{what} declares {count}, more than the limit "
                                   f"max_constant_elements = {lim.max_constant_elements}")
        if dtype.is_str:
            return self._strings(raw, shape, n, where, what)
        size = n * dtype.itemsize
        if self.payload_bytes + size > lim.max_constant_bytes:
            raise exhausted(where, f"{what} brings the constant data to {self.payload_bytes + size}"
                                   f" bytes, more than the limit max_constant_bytes = "
                                   f"{lim.max_constant_bytes}")
        if not isinstance(raw, bytes):
            raise malformed(where, f"the data of {what} must be a bin, got {type_name(raw)}")
        if len(raw) != size:
            raise malformed(where, f"{what} has {len(raw)} data bytes, but {dtype.text}"
                                   f"{list(shape)} needs {size}")
        if dtype.is_bool and raw.strip(b"\x00\x01"):
            raise malformed(where, f"{what} is bool but holds a byte other than 0 or 1")
        self.payload_bytes += size
        little = np.frombuffer(raw, dtype=dtype.np.newbyteorder("<"), count=n)
        return little.astype(dtype.np).reshape(shape)    # a writable, native-order copy

    def _strings(self, raw: Any, shape: tuple[int, ...], n: int, where: str,
                 what: str) -> np.ndarray:
        """A str array: a msgpack array of exactly prod(shape) strings (msgpack has already
        checked each one's UTF-8 and length). Each element counts its UTF-8 bytes plus a
        pointer's 8 against max_constant_bytes."""
        if not isinstance(raw, list):
            raise malformed(where, f"the data of {what} must be an array of strings (it is str), "
                                   f"got {type_name(raw)}")
        if len(raw) != n:
            raise malformed(where, f"{what} has {len(raw)} strings, but str{list(shape)} needs {n}")
        size = 0
        for i, s in enumerate(raw):
            if not isinstance(s, str):
                raise malformed(where, f"element {i} of {what} is a {type_name(s)}, not a string")
            size += 8 + len(s.encode("utf-8"))
        lim = self.limits
        if self.payload_bytes + size > lim.max_constant_bytes:
            raise exhausted(where, f"{what} brings the constant data to {self.payload_bytes + size}"
                                   f" bytes, more than the limit max_constant_bytes = "
                                   f"{lim.max_constant_bytes}")
        self.payload_bytes += size
        out = np.empty(n, dtype=object)
        out[:] = raw
        return out.reshape(shape)
