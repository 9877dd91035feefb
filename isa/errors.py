"""The error kinds of dlvm, one per stage (as WebAssembly splits malformed / invalid / trap).

- MalformedError: text that does not parse, bytes that do not decode.
- InvalidError: a well-formed module the verifier rejects (types, shapes, undefined names).
- Trap: a verified program that fails at run time (shape mismatch at a call, bad index, assert).
- ResourceExhausted: a configured limit was hit (bytecode sizes, call depth, step budget).
- InternalError: a bug in dlvm itself.

Every error carries an optional SourceLoc so that it can be printed as
`file:line:col: error: message`, followed by the offending line and a caret when the source text
is known.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLoc:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class DlvmError(Exception):
    kind = "error"

    def __init__(self, message: str, loc: SourceLoc | None = None, *, context: str = "",
                 source_line: str | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.context = context          # e.g. "in @main, block entry, instruction 3 (add)"
        self.source_line = source_line  # the text of the offending line, when known

    def format(self) -> str:
        """The diagnostic as a user sees it: `file:line:col: error: message`, then the context,
        the source line and a caret when they are known."""
        head = f"{self.loc}: " if self.loc else ""
        out = [f"{head}{self.kind}: {self.message}"]
        if self.context:
            out[0] += f" ({self.context})"
        if self.source_line is not None and self.loc is not None:
            out.append("  " + self.source_line.rstrip("\n"))
            out.append("  " + " " * max(self.loc.col - 1, 0) + "^")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.format()


class MalformedError(DlvmError):
    kind = "error"


class InvalidError(DlvmError):
    kind = "error"


class Trap(DlvmError):
    kind = "trap"


class ResourceExhausted(DlvmError):
    kind = "error"


class InternalError(DlvmError):
    kind = "internal error"


class SettingError(ValueError):
    """A bad setting given to the runtime (an argument or an environment variable such as
    DLVM_JIT): not a program's error, so it carries no location; the CLI prints it as a usage
    error."""


class OpTypeError(Exception):
    """Raised by an op's type rule; the verifier turns it into an InvalidError with a location."""
