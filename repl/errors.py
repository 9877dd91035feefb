"""The REPL's own error: a mistake in a command line (unknown command, missing argument, a file
that cannot be read). Program errors stay isa.errors.DlvmError and keep their `line:col` form."""
from __future__ import annotations


class ReplError(Exception):
    """Shown as `error: MESSAGE`; the session goes on."""
