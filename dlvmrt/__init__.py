"""dlvm runtime: load verified programs and run them.

    import dlvmrt
    program = dlvmrt.load("examples/mlp.dlasm")      # or .dlbc bytes/path, or an isa.Module
    vm = dlvmrt.VM(program, jit="auto")              # "off" | "auto" | "always"
    (y,) = vm.run("main", x)
"""
from isa.errors import DlvmError, InternalError, InvalidError, MalformedError, ResourceExhausted, Trap

from .loader import load
from .program import Program
from .vm import VM

__all__ = ["load", "VM", "Program", "DlvmError", "MalformedError", "InvalidError", "Trap",
           "ResourceExhausted", "InternalError"]
