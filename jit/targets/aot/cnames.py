"""C spellings of dlvm names, dtypes and literals for the generated library."""
from __future__ import annotations

import math
import re

from isa.dtypes import DType

C_TYPES = {DType.BOOL: "uint8_t", DType.I8: "int8_t", DType.I16: "int16_t", DType.I32: "int32_t",
           DType.I64: "int64_t", DType.U8: "uint8_t", DType.U16: "uint16_t",
           DType.U32: "uint32_t", DType.U64: "uint64_t", DType.F16: "uint16_t",
           DType.F32: "float", DType.F64: "double"}


def ident(text: str) -> str:
    """A C identifier for a dlvm name (which may hold dots and dashes)."""
    s = re.sub(r"[^A-Za-z0-9_]", "_", text)
    return s if s and not s[0].isdigit() else "_" + s


def dtype_code(d: DType) -> str:
    return f"DT_{d.name}"


def c_string(text: str) -> str:
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + "".join(c if 32 <= ord(c) < 127 else f"\\{ord(c):03o}" for c in out) + '"'


def c_double(v: float) -> str:
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    return repr(float(v))


def i64_array(values) -> str:
    return "(const int64_t[]){" + ", ".join(str(int(v)) for v in values or [0]) + "}"
