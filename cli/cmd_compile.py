"""`dlvm compile`: write what the JIT generates, one file per region."""
from __future__ import annotations

from pathlib import Path

from .common import UsageError, module_of, parse_dims


def register(sub) -> None:
    s = sub.add_parser("compile", help="write the JIT's generated code, one file per region")
    s.add_argument("prog", help="the .dlasm or .dlbc program")
    s.add_argument("--target", choices=["cpu", "cuda"], default=None,
                   help="cpu (default) or cuda (implied by --emit ptx)")
    s.add_argument("--emit", choices=["kernel-ir", "llvm", "asm", "ptx"], default="llvm",
                   help="what to write per region (default: llvm)")
    s.add_argument("--arch", action="append", metavar="SM",
                   help="CUDA architecture (repeatable; default sm_80 and sm_90)")
    s.add_argument("--dim", action="append", metavar="N=SIZE", help="size of a named dim")
    s.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="the directory to write one file per region into")
    s.set_defaults(fn=run)


def run(a) -> int:
    module = module_of(a.prog)
    try:
        Path(a.output).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create {a.output}: {e.strerror or e}") from None
    if a.target is None:
        a.target = "cuda" if a.emit == "ptx" else "cpu"
    if a.target == "cuda":
        from jit.targets.cuda.program import compile_program_cuda
        emit = "ptx" if a.emit == "asm" else a.emit
        paths = [p for arch in (a.arch or ["sm_80", "sm_90"])
                 for p in compile_program_cuda(module, emit=emit, dims=parse_dims(a.dim),
                                               out_dir=a.output, arch=arch)]
    else:
        if a.emit == "ptx" or a.arch:
            raise UsageError("--emit ptx and --arch go with --target cuda")
        from jit import compile_program
        paths = compile_program(module, target="cpu", emit=a.emit, dims=parse_dims(a.dim),
                                out_dir=a.output)
    for p in paths:
        print(p)
    return 0
