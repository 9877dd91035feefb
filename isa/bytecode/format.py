"""The .dlbc container: the fixed header and the names of the sections and tags inside it.

    offset  size  field
    0       4     magic  b"DLBC"
    4       2     major version, u16 little-endian
    6       2     minor version, u16 little-endian
    8       ...   one msgpack map: the sections (see specs/bytecode.md)

Version history -- bump the version on every format change, and add a line here and in
specs/bytecode.md:
    1.0  first format: string table, constants, functions, optional debug section.
         Later, without a bump: new dtype codes (u16 ... u2, and str, whose data is an array of
         msgpack strings); an older loader refuses an unknown code by name, so none misreads.

A loader accepts any minor version of its own major version: a newer minor may only add optional
map entries, which an older loader ignores. A different major version is rejected.
"""
from __future__ import annotations

import struct

from ..errors import MalformedError

MAGIC = b"DLBC"
VERSION = (1, 0)
HEADER = struct.Struct("<4sHH")

# section keys of the top-level map; every name and string elsewhere is an index into STRINGS
MODULE = "module"
STRINGS = "strings"
CONSTANTS = "constants"
FUNCTIONS = "functions"
DEBUG = "debug"
SECTIONS = (MODULE, STRINGS, CONSTANTS, FUNCTIONS, DEBUG)
REQUIRED_SECTIONS = (MODULE, STRINGS, CONSTANTS, FUNCTIONS)

# keys of the debug map
DEBUG_SOURCE = "source"
DEBUG_CONSTANTS = "constants"
DEBUG_FUNCTIONS = "functions"
DEBUG_KEYS = (DEBUG_SOURCE, DEBUG_CONSTANTS, DEBUG_FUNCTIONS)

# operand tags: an operand is [tag, payload]
TAG_REG = 0      # payload: string index of the register name
TAG_CONST = 1    # payload: string index of the constant name
TAG_BOOL = 2     # payload: msgpack bool
TAG_INT = 3      # payload: integer (see encode_int)
TAG_FLOAT = 4    # payload: msgpack float64
OPERAND_TAGS = {TAG_REG: "register", TAG_CONST: "constant", TAG_BOOL: "bool immediate",
                TAG_INT: "int immediate", TAG_FLOAT: "float immediate"}

# integers in this range are msgpack ints; any other is a bin of its two's-complement
# little-endian bytes, so Python's unbounded ints round-trip
NATIVE_INT_MIN = -(1 << 63)
NATIVE_INT_MAX = (1 << 64) - 1

# source lines and columns in the debug section lie in 0 .. MAX_LINE - 1
MAX_LINE = 1 << 31


def pack_header(version: tuple[int, int] = VERSION) -> bytes:
    return HEADER.pack(MAGIC, version[0], version[1])


def check_header(data: bytes) -> tuple[int, int]:
    """Check magic and version; return the file's (major, minor). Raises MalformedError naming
    the mismatch."""
    head = bytes(data[:len(MAGIC)])
    if head != MAGIC[:len(head)]:
        raise MalformedError(f"bytecode: bad magic {head!r}, expected {MAGIC!r} "
                             f"(not a .dlbc file)")
    if len(data) < HEADER.size:
        raise MalformedError(f"bytecode: truncated header: {len(data)} bytes, a .dlbc header has "
                             f"{HEADER.size}")
    _, major, minor = HEADER.unpack_from(data)
    if major != VERSION[0]:
        raise MalformedError(f"bytecode: version {major}.{minor} is not supported; this loader "
                             f"reads version {VERSION[0]}.x (it is {VERSION[0]}.{VERSION[1]})")
    return major, minor


def encode_int(v: int) -> int | bytes:
    """An integer as msgpack holds it: natively when it fits, else as signed little-endian bytes."""
    if NATIVE_INT_MIN <= v <= NATIVE_INT_MAX:
        return v
    n = (v.bit_length() + 8) // 8    # room for the sign bit
    return v.to_bytes(n, "little", signed=True)
