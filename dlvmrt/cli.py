"""The `dlvm` command: assemble, disassemble, verify, run, optimize, compile, import, repl.

Exit status: 0 on success, 1 for a bad program, bad bytecode or a trap (one diagnostic per error,
`file:line:col: error: message`), 2 for bad usage. A user's mistake never prints a traceback;
set DLVM_DEBUG=1 to see one for dlvm's own internal errors.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

from isa.errors import DlvmError, MalformedError

from .devices import DEVICES, DeviceUnavailable


class UsageError(Exception):
    pass


def _dims(items: list[str]) -> dict[str, int]:
    dims = {}
    for item in items or []:
        name, _, value = item.partition("=")
        if not name.isidentifier() or not value.isdigit():
            raise UsageError(f"--dim takes NAME=SIZE (e.g. --dim N=8), got {item!r}")
        dims[name] = int(value)
    return dims


def _load(path: str):
    from .loader import load
    return load(path)


def _module_of(path: str):
    """A module from a .dlasm or .dlbc path, verified."""
    return _load(path).module


def cmd_asm(a) -> int:
    import assembler
    import isa.bytecode as bc

    from .program import Program
    module = assembler.assemble_file(a.prog) if not _is_bytecode_file(a.prog) else _module_of(a.prog)
    Program.from_module(module)
    data = bc.encode(module, debug=not a.strip)
    _write(a.output, data)
    return 0


def _is_bytecode_file(path: str) -> bool:
    from .loader import is_bytecode
    try:
        with open(path, "rb") as f:
            return is_bytecode(f.read(16))
    except OSError:
        return False


def _write(path: str, data: bytes) -> None:
    if path == "-":
        sys.stdout.buffer.write(data)
        return
    try:
        Path(path).write_bytes(data)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None


def cmd_disasm(a) -> int:
    import assembler
    import isa.bytecode as bc
    try:
        data = Path(a.file).read_bytes()
    except OSError as e:     # as `run` reports an unreadable program: a bad input, exit 1
        raise MalformedError(f"cannot read {a.file}: {e.strerror or e}") from None
    from .loader import is_bytecode
    module = bc.decode(data) if is_bytecode(data) else assembler.assemble_file(a.file)
    text = assembler.disassemble(module, debug=not a.no_debug)
    if a.output:
        _write(a.output, text.encode())
    else:
        sys.stdout.write(text)
    return 0


def cmd_verify(a) -> int:
    program = _load(a.prog)
    m = program.module
    n = sum(len(b.instrs) for f in m.functions.values() for b in f.blocks)
    print(f"{a.prog}: ok (module {m.name}: {len(m.functions)} function"
          f"{'s' if len(m.functions) != 1 else ''}, {len(m.constants)} constant"
          f"{'s' if len(m.constants) != 1 else ''}, {n} instructions)")
    return 0


def _read_inputs(path: str) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError) as e:
        raise UsageError(f"cannot read inputs {path}: {e}") from None


def cmd_run(a) -> int:
    from .inputs import make_inputs
    from .vm import VM
    program = _load(a.prog)
    func = program.module.functions.get(a.entry)
    if func is None:
        known = ", ".join("@" + f for f in program.module.functions)
        raise UsageError(f"{a.prog} has no function @{a.entry} (it has: {known})")
    dims = _dims(a.dim)
    if a.inputs:
        given = _read_inputs(a.inputs)
        missing = [p.name for p in func.params if p.name not in given]
        extra = sorted(set(given) - {p.name for p in func.params})
        if missing or extra:
            raise UsageError(f"{a.inputs}: " + "; ".join(filter(None, [
                "missing " + ", ".join(missing) if missing else "",
                "no parameter named " + ", ".join(extra) if extra else ""]))
                + f" (parameters of @{a.entry}: " + ", ".join(p.name for p in func.params) + ")")
        inputs = given
    else:
        inputs = make_inputs(func, dims, a.seed)
    if a.max_steps is not None and a.max_steps <= 0:
        raise UsageError(f"--max-steps must be a positive number of blocks, got {a.max_steps}")
    vm = VM(program, jit=a.jit, device=a.device, profile=a.profile or bool(a.trace),
            trace=bool(a.trace), max_steps=a.max_steps)
    outs = None
    for _ in range(max(a.repeat, 1)):
        outs = vm.run(a.entry, **inputs)
    if a.out:
        try:
            np.savez(a.out, **{f"out{i}": o for i, o in enumerate(outs)})
        except OSError as e:
            raise UsageError(f"cannot write {a.out}: {e.strerror or e}") from None
    if not a.quiet and not a.out:
        _print_results(outs)
    if a.profile:
        print(vm.profiler.table(vm), file=sys.stderr)
        for fname, block, region, runner in vm.runners:
            info = runner.describe() if hasattr(runner, "describe") else {}
            print(f"compiled @{fname} {block} [{region.start}:{region.end}] {region.kind}: {info}",
                  file=sys.stderr)
    if a.trace:
        try:
            vm.profiler.write_trace(a.trace)
        except OSError as e:
            raise UsageError(f"cannot write {a.trace}: {e.strerror or e}") from None
    return 0


def _print_results(outs) -> None:
    from .binding import describe
    with np.printoptions(threshold=24, edgeitems=3, precision=5, suppress=True):
        for i, o in enumerate(outs):
            print(f"out{i}: {describe(o)}")
            print("  " + np.array2string(np.asarray(o)).replace("\n", "\n  "))


def cmd_opt(a) -> int:
    import assembler
    from jit.passes import PASSES, optimize
    module = _module_of(a.prog)
    names = a.passes.split(",") if a.passes else None
    unknown = [n for n in names or [] if n not in PASSES]
    if unknown:
        raise UsageError(f"unknown pass{'es' if len(unknown) > 1 else ''} {', '.join(unknown)} "
                         f"(passes: {', '.join(PASSES)})")
    sys.stdout.write(assembler.disassemble(optimize(module, names), debug=False))
    return 0


def cmd_compile(a) -> int:
    module = _module_of(a.prog)
    try:
        Path(a.output).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create {a.output}: {e.strerror or e}") from None
    if a.target == "cuda":
        from jit.cuda.program import compile_program_cuda
        emit = "ptx" if a.emit == "asm" else a.emit
        paths = [p for arch in (a.arch or ["sm_80", "sm_90"])
                 for p in compile_program_cuda(module, emit=emit, dims=_dims(a.dim),
                                               out_dir=a.output, arch=arch)]
    else:
        if a.emit == "ptx" or a.arch:
            raise UsageError("--emit ptx and --arch go with --target cuda")
        from jit import compile_program
        paths = compile_program(module, target="cpu", emit=a.emit, dims=_dims(a.dim),
                                out_dir=a.output)
    for p in paths:
        print(p)
    return 0


def cmd_import(a) -> int:
    from frontends.onnx import import_to_file
    try:
        import_to_file(a.model, a.output)
    except ImportError as e:
        raise UsageError(f"importing ONNX needs the onnx extra (pip install 'dlvm[onnx]'): {e}") \
            from None
    except OSError as e:
        raise UsageError(f"cannot write {a.output}: {e.strerror or e}") from None
    return 0


def cmd_repl(a) -> int:
    from repl import main as repl_main
    return repl_main(a.prog)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dlvm", description="dlvm: a bytecode VM for deep learning")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    s = sub.add_parser("asm", help="assemble .dlasm text into .dlbc bytecode")
    s.add_argument("prog")
    s.add_argument("-o", "--output", required=True)
    s.add_argument("--strip", action="store_true", help="leave out debug info (source lines)")
    s.set_defaults(fn=cmd_asm)
    s = sub.add_parser("disasm", help="print bytecode (or text) as canonical .dlasm")
    s.add_argument("file")
    s.add_argument("-o", "--output")
    s.add_argument("--no-debug", action="store_true", help="do not print source locations")
    s.set_defaults(fn=cmd_disasm)
    s = sub.add_parser("verify", help="check a program without running it")
    s.add_argument("prog")
    s.set_defaults(fn=cmd_verify)
    s = sub.add_parser("run", help="run a program (inputs from --inputs or random by signature)")
    s.add_argument("prog")
    s.add_argument("--entry", default="main")
    s.add_argument("--inputs", help=".npz with one array per parameter name (without %%)")
    s.add_argument("--out", help="save results to .npz as out0, out1, ...")
    s.add_argument("--dim", action="append", metavar="N=SIZE", help="size of a named dim for "
                   "generated inputs")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--jit", choices=["off", "auto", "always"], default=None)
    s.add_argument("--device", choices=list(DEVICES), default="auto")
    s.add_argument("--profile", action="store_true", help="print a per-instruction/region table")
    s.add_argument("--trace", metavar="FILE.json", help="write Chrome trace events (Perfetto)")
    s.add_argument("--repeat", type=int, default=1, help="run N times (profiling, tier-up)")
    s.add_argument("--max-steps", type=int, default=None, help="block-execution budget")
    s.add_argument("-q", "--quiet", action="store_true")
    s.set_defaults(fn=cmd_run)
    s = sub.add_parser("opt", help="print the program after the optimizer passes")
    s.add_argument("prog")
    s.add_argument("--passes", help="comma-separated pass names (default: the standard pipeline)")
    s.set_defaults(fn=cmd_opt)
    s = sub.add_parser("compile", help="write the JIT's generated code, one file per region")
    s.add_argument("prog")
    s.add_argument("--target", choices=["cpu", "cuda"], default="cpu")
    s.add_argument("--emit", choices=["kernel-ir", "llvm", "asm", "ptx"], default="llvm")
    s.add_argument("--arch", action="append", metavar="SM",
                   help="CUDA architecture (repeatable; default sm_80 and sm_90)")
    s.add_argument("--dim", action="append", metavar="N=SIZE")
    s.add_argument("-o", "--output", required=True, metavar="DIR")
    s.set_defaults(fn=cmd_compile)
    s = sub.add_parser("import", help="import an ONNX model as .dlbc")
    s.add_argument("model")
    s.add_argument("-o", "--output", required=True)
    s.set_defaults(fn=cmd_import)
    s = sub.add_parser("repl", help="the interactive VM REPL and debugger")
    s.add_argument("prog", nargs="?")
    s.set_defaults(fn=cmd_repl)
    return p


def attach_source_line(e: DlvmError, prog: str | None) -> None:
    if e.source_line is not None or e.loc is None:
        return
    candidates = [Path(e.loc.file)]
    if prog:
        candidates.append(Path(prog).parent / Path(e.loc.file).name)
    for c in candidates:
        try:
            lines = c.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        if 0 < e.loc.line <= len(lines):
            e.source_line = lines[e.loc.line - 1]
            return


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    a = parser.parse_args(argv)
    try:
        return a.fn(a)
    except DlvmError as e:
        attach_source_line(e, getattr(a, "prog", None))
        print(e.format(), file=sys.stderr)
        return 1
    except (UsageError, DeviceUnavailable) as e:
        print(f"dlvm {a.command}: error: {e}", file=sys.stderr)
        return 2 if isinstance(e, UsageError) else 1
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


if __name__ == "__main__":
    sys.exit(main())
