"""A verified program: the module plus the static types the verifier inferred.

Everything the VM runs went through `isa.verify`, whatever it came from (text, bytecode, the
builder API), so the interpreter and the JIT may assume well-typed input.
"""
from __future__ import annotations

from dataclasses import dataclass

from isa.module import Module
from isa.verify import FunctionTypes, verify_module


@dataclass
class Program:
    module: Module
    types: dict[str, FunctionTypes]

    @classmethod
    def from_module(cls, module: Module) -> Program:
        return cls(module, verify_module(module))

    @property
    def name(self) -> str:
        return self.module.name
