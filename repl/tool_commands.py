"""Views of the machinery behind a run: :jit (mode, compiled regions, their kernel IR and LLVM
IR), :profile (the profiler's table) and :opt (the module after the optimizer passes).

The JIT and the optimizer are other packages that may be missing or unfinished; their failures
become one-line messages and the session goes on.
"""
from __future__ import annotations

import time

from dlvmrt import VM
from dlvmrt.vm import JIT_MODES
from isa.errors import DlvmError

from .errors import ReplError
from .session import ReplSession, jit_failures_explained

# `on` is what a user types first; `always` compiles on the first run, which is what they mean
JIT_ALIASES = {"on": "always"}
JIT_WORDS = (*JIT_MODES, *JIT_ALIASES, "ir", "llvm")


def cmd_jit(s: ReplSession, arg: str) -> str:
    words = arg.split()
    if not words:
        return _jit_status(s)
    mode = JIT_ALIASES.get(words[0], words[0])
    if mode in JIT_MODES and len(words) == 1:
        s.jit_mode = mode
        s.vm = None          # a new VM: tier-up thresholds are fixed when a VM is made
        s.debugger = None
        hint = {"off": "runs use the interpreter only",
                "auto": "hot blocks are compiled once they have run twice",
                "always": "every block's regions are compiled on its first run"}[mode]
        return f"jit {mode}: {hint}"
    if words[0] in ("ir", "llvm") and len(words) == 2:
        return _jit_code(s, words[0], words[1])
    raise ReplError("usage: :jit [off|auto|always|on]  or  :jit ir N  or  :jit llvm N")


def _region_text(s: ReplSession, region) -> str:
    start, end = getattr(region, "start", None), getattr(region, "end", None)
    if start is None or end is None:
        return str(region)
    kind = getattr(region, "kind", "")
    text = f"instructions {start}..{end - 1} {kind}".rstrip()
    func = s.module.functions.get(getattr(region, "func", ""))
    block = getattr(region, "block", None)
    if func is not None and isinstance(block, int) and block < len(func.blocks):
        ops = [ins.op for ins in func.blocks[block].instrs[start:end]]
        text += f" ({', '.join(ops)})"
    return text


# keys of a runner's describe() that the region line above already shows
_SHOWN = ("region", "kind")


def _describe(runner) -> str:
    """The runner's own description: a dict (key: value, lists of dicts as blocks) or text."""
    try:
        info = runner.describe()
    except Exception as e:     # noqa: BLE001 - a JIT bug must not hide the rest of the list
        return f"(describe failed: {type(e).__name__}: {e})"
    if not isinstance(info, dict):
        return str(info)
    flat, blocks = [], []
    for k, v in info.items():
        if k in _SHOWN or v is None:
            continue
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            name = k[:-1] if k.endswith("s") else k
            for x in v:
                first, _, more = str(x.get("spec", "")).strip().partition("\n")
                title = first if first.startswith(name + ":") else f"{name}: {first}".rstrip()
                rest = ", ".join(f"{a.replace('_', ' ')} {b}" for a, b in x.items() if a != "spec")
                blocks.append(f"{title}  ({rest})" + ("\n" + more if more else ""))
        else:
            flat.append(f"{k.replace('_', ' ')} {v}")
    return "\n".join([", ".join(flat)] + blocks)


def _jit_status(s: ReplSession) -> str:
    runners = s.vm.runners if s.vm is not None else []
    out = [f"jit mode: {s.jit_mode}" + ("  (:jit always, then :run, compiles)"
                                        if s.jit_mode == "off" else "")]
    if not runners:
        out.append("no compiled regions yet")
    for i, (func, block, region, runner) in enumerate(runners):
        desc = _describe(runner).replace("\n", "\n      ")
        out.append(f"  #{i} @{func}:{block} {_region_text(s, region)}\n      {desc}")
    if runners:
        out.append(":jit ir N / :jit llvm N show the code of region N")
    return "\n".join(out)


def _jit_code(s: ReplSession, what: str, n: str) -> str:
    runners = s.vm.runners if s.vm is not None else []
    if not n.isdigit() or int(n) >= len(runners):
        raise ReplError(f"no compiled region {n} ({len(runners)} compiled; :jit lists them)")
    runner = runners[int(n)][3]
    try:
        return runner.kernel_ir() if what == "ir" else runner.llvm_ir()
    except Exception as e:     # noqa: BLE001 - the JIT is another package; report, go on
        raise ReplError(f"the JIT cannot show its {what}: {type(e).__name__}: {e}") from None


def cmd_profile(s: ReplSession, arg: str) -> str:
    from .run_commands import _call
    fname, values = _call(s, arg)
    vm = VM(s.program(), jit=s.jit_mode, profile=True)
    t = time.perf_counter()
    with jit_failures_explained(s.jit_mode, "profiles"):
        vm.run(fname, *values)
    took = (time.perf_counter() - t) * 1e3
    return f"@{fname} ran in {took:.3g} ms (jit {s.jit_mode}, profiling on)\n" + \
        vm.profiler.table(vm)


def cmd_opt(s: ReplSession, arg: str) -> str:
    try:
        from jit.passes import PASSES, optimize
    except ImportError as e:
        raise ReplError(f"the optimizer is not available: {e}") from None
    words = arg.split()
    funcs = [w[1:] for w in words if w.startswith("@")]
    passes = [w for w in words if not w.startswith("@")] or None
    for f in funcs:
        if f not in s.module.functions:
            raise ReplError(f"no function @{f} (:funcs lists them)")
    try:
        optimized = optimize(s.module, passes)
    except ValueError as e:
        raise ReplError(f"{e}") from None
    except DlvmError:
        raise
    except Exception as e:     # noqa: BLE001 - the optimizer is another package
        raise ReplError(f"the optimizer failed: {type(e).__name__}: {e}") from None
    from assembler.printer import Printer
    p = Printer(optimized, debug=False)
    for f in optimized.functions.values():
        if not funcs or f.name in funcs:
            p.function(f)
            p.lines.append("")
    used = " -> ".join(passes) if passes else "the default pipeline"
    return f"; after {used} (passes: {', '.join(PASSES)})\n" + "\n".join(p.lines).rstrip()


def cmd_grad(s: ReplSession, arg: str) -> str:
    """Show the adjoint of a function: `:grad @f [x w ...]` (default: every float parameter)."""
    from isa.autodiff import grad
    words = arg.split()
    funcs = [w[1:] for w in words if w.startswith("@")]
    wrt = [w for w in words if not w.startswith("@")] or None
    fname = funcs[0] if funcs else "main"
    if fname not in s.module.functions:
        raise ReplError(f"no function @{fname} (:funcs lists them)")
    out = grad(s.module, fname, wrt)
    from assembler.printer import Printer
    p = Printer(out, debug=False)
    new = [f for name, f in out.functions.items() if name not in s.module.functions]
    for f in new:
        p.function(f)
        p.lines.append("")
    return f"; the adjoint of @{fname}: @{fname}_grad returns its results, then the gradients\n" \
        + "\n".join(p.lines).rstrip()
