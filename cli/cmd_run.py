"""`dlvm run`: run a program on given or generated inputs."""
from __future__ import annotations

import sys

import numpy as np

from dlvmrt.devices import device_names

from .common import UsageError, as_declared_narrow, load_program, parse_dims, read_inputs


def register(sub) -> None:
    s = sub.add_parser("run", help="run a program (inputs from --inputs or random by signature)")
    s.add_argument("prog", help="the .dlasm, .dlbc or .onnx program (ONNX is imported on the fly), "
                   "or a directory `dlvm aot` wrote")
    s.add_argument("--entry", default="main", help="the function to run (default: main)")
    s.add_argument("--inputs", help=".npz with one array per parameter name (without %%)")
    s.add_argument("--out", help="save results to .npz as out0, out1, ...")
    s.add_argument("--dim", action="append", metavar="N=SIZE", help="size of a named dim for "
                   "generated inputs")
    s.add_argument("--seed", type=int, default=0, help="seed of the generated inputs")
    s.add_argument("--random-seed", type=int, default=None, metavar="SEED",
                   help="seed of the stream random ops draw from (default: $DLVM_SEED, else "
                   "the operating system)")
    s.add_argument("--save-inputs", metavar="FILE.npz",
                   help="save the inputs the run used (generated or given), loadable by --inputs")
    s.add_argument("--jit", choices=["off", "auto", "always"], default=None,
                   help="off: interpreter only; auto (default): hot blocks compile in the "
                   "background; always: compile before the first run")
    s.add_argument("--device", choices=list(device_names()), default="cpu",
                   help="where compiled regions run: cpu (default), auto (the scheduler's cost "
                   "model puts each region on a GPU or the CPU), or a GPU (every region it can run)")
    s.add_argument("--profile", action="store_true", help="print a per-instruction/region table")
    s.add_argument("--trace", metavar="FILE.json", help="write Chrome trace events (Perfetto)")
    s.add_argument("--repeat", type=int, default=1, help="run N times (profiling, tier-up)")
    s.add_argument("--max-steps", type=int, default=None, help="block-execution budget")
    s.add_argument("-q", "--quiet", action="store_true", help="print no results or summary")
    s.set_defaults(fn=run)


def program_dims(func) -> list[str]:
    """The named dims of a function's parameters, in order of appearance."""
    names: list[str] = []
    for p in func.params:
        for d in p.type.shape:
            if isinstance(d, str) and d not in names:
                names.append(d)
    return names


def run(a) -> int:
    from dlvmrt.aot import is_library_dir
    if is_library_dir(a.prog):
        return _run_library(a)
    from dlvmrt.inputs import make_inputs
    from dlvmrt.vm import VM
    program = load_program(a.prog)
    func = program.module.functions.get(a.entry)
    if func is None:
        known = ", ".join("@" + f for f in program.module.functions)
        raise UsageError(f"{a.prog} has no function @{a.entry} (it has: {known})")
    dims = parse_dims(a.dim)
    known_dims = program_dims(func)
    unknown = [d for d in dims if d not in known_dims]
    if unknown:
        raise UsageError(f"--dim {', '.join(unknown)}: @{a.entry} has no such named dim (its dims: "
                         + (", ".join(known_dims) or "none") + ")")
    if a.inputs:
        given = read_inputs(a.inputs)
        missing = [p.name for p in func.params if p.name not in given]
        extra = sorted(set(given) - {p.name for p in func.params})
        if missing or extra:
            raise UsageError(f"{a.inputs}: " + "; ".join(filter(None, [
                "missing " + ", ".join(missing) if missing else "",
                "no parameter named " + ", ".join(extra) if extra else ""]))
                + f" (parameters of @{a.entry}: " + ", ".join(p.name for p in func.params) + ")")
        inputs = {p.name: as_declared_narrow(given[p.name], p.type.dtype) for p in func.params}
    else:
        inputs = make_inputs(func, dims, a.seed)
        if not a.quiet:
            _describe_generated(inputs, known_dims, dims, a.seed)
    if a.save_inputs:
        save_npz(a.save_inputs, inputs)
    if a.max_steps is not None and a.max_steps <= 0:
        raise UsageError(f"--max-steps must be a positive number of blocks, got {a.max_steps}")
    if a.random_seed is not None and a.random_seed < 0:
        raise UsageError(f"--random-seed must be a non-negative integer, got {a.random_seed}")
    vm = VM(program, jit=a.jit, device=a.device, profile=a.profile or bool(a.trace),
            trace=bool(a.trace), max_steps=a.max_steps, seed=a.random_seed)
    outs = None
    from .progress import CompileProgress
    with CompileProgress(vm, enabled=None if not a.quiet else False):
        for _ in range(max(a.repeat, 1)):
            outs = vm.run(a.entry, **inputs)
    if a.out:
        save_npz(a.out, {f"out{i}": o for i, o in enumerate(outs)})
    if not a.quiet and not a.out:
        _print_results(outs)
    if a.profile:
        print(vm.profiler.table(vm), file=sys.stderr)
        lines = vm.profiler.region_lines(vm)
        if lines:
            print("\ncompiled regions:", file=sys.stderr)
            for line in lines:
                print("  " + line, file=sys.stderr)
    if a.trace:
        try:
            vm.profiler.write_trace(a.trace)
        except OSError as e:
            raise UsageError(f"cannot write {a.trace}: {e.strerror or e}") from None
    return 0


def _run_library(a) -> int:
    """`dlvm run DIR`: a library `dlvm aot` built, with the same inputs and outputs as a VM run."""
    import json
    from pathlib import Path

    from dlvmrt.aot import load
    from dlvmrt.inputs import make_inputs
    from isa.module import Function, Param
    from isa.types import parse_type
    lib = load(a.prog)
    info = json.loads((Path(a.prog) / "dlvm_aot.json").read_text())["functions"].get(a.entry)
    if info is None:
        raise UsageError(f"{a.prog} has no function @{a.entry} (it has: "
                         + ", ".join("@" + f for f in lib.functions) + ")")
    if a.inputs:
        inputs = read_inputs(a.inputs)
    else:
        func = Function(a.entry, [Param(p["name"], parse_type(p["type"])) for p in info["params"]])
        inputs = make_inputs(func, parse_dims(a.dim), a.seed)
    outs = None
    for _ in range(max(a.repeat, 1)):
        outs = lib.run(a.entry, **inputs)
    if a.out:
        save_npz(a.out, {f"out{i}": o for i, o in enumerate(outs)})
    elif not a.quiet:
        _print_results(outs)
    return 0


def _describe_generated(inputs: dict, known_dims: list[str], dims: dict, seed: int) -> None:
    """The generated inputs on stderr: what the run used, so a user can see and reproduce it."""
    from dlvmrt.binding import describe
    from dlvmrt.inputs import DEFAULT_DIM
    chosen = [f"{d}={dims.get(d, DEFAULT_DIM)}" + ("" if d in dims else " (default; --dim sets it)")
              for d in known_dims]
    print(f"inputs generated from the signature (seed {seed}"
          + (f"; {', '.join(chosen)}" if chosen else "") + "; --save-inputs keeps them):",
          file=sys.stderr)
    with np.printoptions(threshold=6, edgeitems=2, precision=4, suppress=True):
        for name, v in inputs.items():
            preview = np.array2string(np.asarray(v)).replace("\n", " ")
            print(f"  %{name}: {describe(v)} {preview}", file=sys.stderr)


def save_npz(path: str, arrays: dict) -> None:
    # str values (object arrays) are written as fixed-width unicode: .npz then holds no pickle,
    # and --inputs (np.load without pickle) reads them back
    arrays = {k: v.astype(str) if isinstance(v, np.ndarray) and v.dtype == object else v
              for k, v in arrays.items()}
    try:
        np.savez(path, **arrays)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None


def _print_results(outs) -> None:
    from dlvmrt.binding import describe
    with np.printoptions(threshold=24, edgeitems=3, precision=5, suppress=True):
        for i, o in enumerate(outs):
            print(f"out{i}: {describe(o)}")
            print("  " + np.array2string(np.asarray(o)).replace("\n", "\n  "))
