"""Control flow: jumps, branches, returns, calls and asserts. Their type rules live in the
verifier (they need the function and module), so `infer` is None here."""
from __future__ import annotations

from .opdef import NO_GRADIENT, AttrKind, AttrSpec, Family, OpDef, Syntax

OPS = [
    OpDef("jmp", 112, Family.CONTROL, (0, 0), None, None, "go to block LABEL",
          attrs=(AttrSpec("target", AttrKind.LABEL),), syntax=Syntax.JMP, n_results=0,
          terminator=True,
          vjp=NO_GRADIENT),
    OpDef("br", 113, Family.CONTROL, (1, 1), None, None,
          "go to LABEL_true if the bool scalar c is true, else to LABEL_false",
          attrs=(AttrSpec("if_true", AttrKind.LABEL), AttrSpec("if_false", AttrKind.LABEL)),
          syntax=Syntax.BR, n_results=0, terminator=True, dtypes="bool[]",
          vjp=NO_GRADIENT),
    OpDef("ret", 114, Family.CONTROL, (0, None), None, None,
          "return the operands, matching the function's result types", syntax=Syntax.RET,
          n_results=0, terminator=True, dtypes="any",
          vjp=NO_GRADIENT),
    OpDef("call", 115, Family.CONTROL, (0, None), None, None,
          "results := @f(operands); named dims of @f bind afresh in each call",
          attrs=(AttrSpec("callee", AttrKind.FUNC),), syntax=Syntax.CALL, n_results=None,
          dtypes="any",
          vjp=NO_GRADIENT),
    OpDef("assert", 116, Family.CONTROL, (1, 1), None, None,
          "trap with MESSAGE unless every element of the bool operand is true",
          attrs=(AttrSpec("message", AttrKind.STR),), syntax=Syntax.ASSERT, n_results=0,
          dtypes="bool",
          vjp=NO_GRADIENT),
]
