"""dlvm's instruction set: dtypes, tensor types, the op table, the module model, the verifier,
the bytecode codec and the builder API. Imports nothing of dlvm's other packages."""
from .dtypes import DType, dtype_from_name, dtype_from_numpy
from .errors import DlvmError, InternalError, InvalidError, MalformedError, ResourceExhausted, SourceLoc, Trap
from .module import Block, Constant, ConstRef, Function, Imm, Instr, Module, Param, Reg
from .ops import BY_CODE, OPS, Family, OpDef
from .types import TensorType, parse_type
from .verify import verify_module

__all__ = [
    "DType", "dtype_from_name", "dtype_from_numpy", "DlvmError", "InternalError", "InvalidError",
    "MalformedError", "ResourceExhausted", "SourceLoc", "Trap", "Block", "Constant", "ConstRef",
    "Function", "Imm", "Instr", "Module", "Param", "Reg", "BY_CODE", "OPS", "Family", "OpDef",
    "TensorType", "parse_type", "verify_module",
]
