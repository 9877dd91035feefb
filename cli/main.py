"""The `dlvm` command: one module per subcommand (`cmd_*.py`), each with `register(sub)`.

Exit status: 0 on success, 1 for a bad program, bad bytecode or a trap (one diagnostic per error,
`file:line:col: error: message`), 2 for bad usage. A user's mistake never prints a traceback;
set DLVM_DEBUG=1 to see one for dlvm's own internal errors.
"""
from __future__ import annotations

import argparse
import os
import sys

from dlvmrt.devices import DeviceUnavailable
from dlvmrt.diagnostics import attach_source_line
from isa.errors import DlvmError, SettingError

from . import (
    cmd_aot,
    cmd_asm,
    cmd_batch,
    cmd_compile,
    cmd_disasm,
    cmd_grad,
    cmd_import,
    cmd_opt,
    cmd_repl,
    cmd_run,
    cmd_verify,
)
from .common import UsageError

# The order `dlvm --help` lists them in. A new subcommand is a new module plus one entry here.
COMMANDS = [
    cmd_asm,
    cmd_disasm,
    cmd_verify,
    cmd_run,
    cmd_opt,
    cmd_grad,
    cmd_compile,
    cmd_import,
    cmd_repl,
    cmd_batch,
    cmd_aot,
]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dlvm", description="dlvm: a bytecode VM for deep learning")
    p.add_argument("--version", action="version", version=f"dlvm {_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return p


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("dlvm")
    except Exception:  # noqa: BLE001 - not installed: running from a source tree
        return "(source tree)"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    a = parser.parse_args(argv)
    try:
        return a.fn(a)
    except DlvmError as e:
        attach_source_line(e, getattr(a, "prog", None))
        print(e.format(), file=sys.stderr)
        return 1
    except (UsageError, SettingError, DeviceUnavailable) as e:
        print(f"dlvm {a.command}: error: {e}", file=sys.stderr)
        return 1 if isinstance(e, DeviceUnavailable) else 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # noqa: BLE001 - the last line of defence against a traceback
        if os.environ.get("DLVM_DEBUG"):
            raise
        print(f"dlvm {a.command}: internal error: {type(e).__name__}: {e} "
              f"(this is a bug in dlvm; DLVM_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 3
