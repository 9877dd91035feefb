"""The .dlbc bytecode: a versioned msgpack serialization of isa.Module.

    data = encode(module)               # deterministic bytes; debug=False drops locations
    module = decode(data)               # checks every field; the loader verifies next
    module = decode(data, Limits(max_total_bytes=1 << 20))

The layout is documented in specs/bytecode.md and at the top of format.py.
"""
from .decode import decode
from .encode import encode
from .format import MAGIC, VERSION
from .limits import DEFAULT_LIMITS, Limits

__all__ = ["encode", "decode", "Limits", "DEFAULT_LIMITS", "MAGIC", "VERSION"]
