"""`dlvm compile`: write what a target generates, one file per region (or, for a whole-program
target such as aot, its library). The --target and --emit choices come from the target registry
(jit/targets/registry.py)."""
from __future__ import annotations

from pathlib import Path

from .common import UsageError, module_of, parse_dims


def register(sub) -> None:
    from jit.targets import registry
    targets = registry.targets()
    s = sub.add_parser("compile", help="write the JIT's generated code, one file per region")
    s.add_argument("prog", help="the .dlasm or .dlbc program")
    s.add_argument("--target", choices=[t.name for t in targets], default=None,
                   help="; ".join(f"{t.name}: {t.summary}" for t in targets)
                   + " (default: cpu, or the one target that emits --emit)")
    s.add_argument("--emit", choices=registry.all_emits(), default=None,
                   help="what to write; per target: " + "; ".join(
                       f"{t.name}: {', '.join(t.emits)}" for t in targets if t.emits)
                   + " (default: the target's first)")
    s.add_argument("--arch", action="append", metavar="SM",
                   help="CUDA architecture (repeatable; default sm_80 and sm_90)")
    s.add_argument("--dim", action="append", metavar="N=SIZE", help="size of a named dim")
    s.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="the directory to write one file per region into")
    s.set_defaults(fn=run)


def run(a) -> int:
    from jit.targets import registry
    module = module_of(a.prog)
    try:
        Path(a.output).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create {a.output}: {e.strerror or e}") from None
    if a.target is None:
        owner = registry.target_for_emit(a.emit) if a.emit else None
        a.target = owner.name if owner is not None else "cpu"
    target = registry.get(a.target)
    if a.emit is not None and a.emit not in target.emits:
        owners = [t.name for t in registry.targets() if a.emit in t.emits]
        raise UsageError(f"--emit {a.emit} is not one of target {target.name}'s "
                         f"({', '.join(target.emits)}); {a.emit} is written by "
                         + " or ".join(f"--target {o}" for o in owners))
    options = {}
    if a.arch:
        if target.name != "cuda":
            raise UsageError("--arch goes with --target cuda")
        options["arch"] = a.arch
    elif target.name == "cuda":
        options["arch"] = ["sm_80", "sm_90"]
    from jit.plan import Decline
    try:
        paths = target.compile_program(module, emit=a.emit, dims=parse_dims(a.dim),
                                       out_dir=a.output, **options)
    except (NotImplementedError, Decline) as e:
        raise UsageError(str(e)) from None
    for p in paths:
        print(p)
    return 0
