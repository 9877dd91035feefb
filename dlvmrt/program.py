"""A verified program: the module plus the static types the verifier inferred.

Everything the VM runs went through `isa.verify`, whatever it came from (text, bytecode, the
builder API), so the interpreter and the JIT may assume well-typed input.

`optimized()` is the program after the whole-program pipeline (`jit.passes.optimize`: algebraic
simplification, constant folding over the weights and shape arithmetic, CSE, copy propagation,
dead code), computed once per Program and kept with it: a VM with tier-up runs that one, so the
interpreter and the region former never see the shape arithmetic an exporter left behind. The
user's own instructions stay in `module` (the REPL and the debugger show and step those).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from isa.errors import InternalError
from isa.module import Module
from isa.verify import FunctionTypes, verify_module
from jit import ForkSafeLock

_optimize_lock = ForkSafeLock()


@dataclass
class Program:
    module: Module
    types: dict[str, FunctionTypes]
    # the optimized program (itself for one that is), computed on first use
    _optimized: Program | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_module(cls, module: Module) -> Program:
        return cls(module, verify_module(module))

    @property
    def name(self) -> str:
        return self.module.name

    def optimized(self) -> Program:
        """This program after the whole-program pipeline, computed once and kept.

        Computes exactly what the program computes, traps included (specs/passes.md); source
        locations stay on the instructions that remain. A pass that fails (a bug in the
        optimizer, never the user's) costs only the optimization: a warning, and the program
        as written."""
        if self._optimized is None:
            with _optimize_lock:
                if self._optimized is None:
                    self._optimized = self._optimize()
        return self._optimized

    def _optimize(self) -> Program:
        # lazily: loading a program need not import the JIT
        from jit.passes import optimize_verified
        try:
            module, checked = optimize_verified(self.module)
        except (InternalError, MemoryError, RecursionError) as e:
            warnings.warn(f"the optimizer failed on {self.name} and it runs as written: {e}",
                          RuntimeWarning, stacklevel=3)
            return self
        out = Program(module, checked)
        out._optimized = out
        return out
