"""Run one program with jit="off" (the reference) and jit="always", and compare.

Agreement: the same result dtypes and shapes; integers and booleans bitwise equal; floats within
the "programs" tolerance of specs/tolerances.md, NaN where NaN, infinities exact; or both tiers
trap with the same kind of error. A JIT that gives up on a block with a JitWarning (a bug it
swallowed) is a disagreement too. On a disagreement the message holds the program text and the
inputs, enough to reproduce it."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

import assembler
import dlvmrt
from isa.errors import DlvmError
from jit.testing import tolerance


class Disagreement(AssertionError):
    pass


def _run(module, jit: str, args: list[np.ndarray], jit_options: dict | None,
         coverage: dict | None = None) -> Any:
    """The results, or (error kind, message) when the run raises a dlvm error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", dlvmrt.vm.JitWarning)
        vm = dlvmrt.VM(module, jit=jit, jit_options=jit_options)
        try:
            # the arguments as they are: views stay views (non-contiguous inputs)
            return vm.run("main", *args)
        except DlvmError as e:
            return (type(e).__name__, str(e))
        except dlvmrt.vm.JitWarning as w:
            return ("JitWarning", str(w))
        finally:
            if coverage is not None:
                for _, _, region, runner in vm.runners:
                    compiled = getattr(runner, "compiled_calls", 0)
                    key = f"{region.kind} {'compiled' if compiled else 'declined'}"
                    coverage[key] = coverage.get(key, 0) + 1


def mismatch(got: np.ndarray, want: np.ndarray) -> str | None:
    """Why `got` does not match the reference `want`, or None."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"{got.dtype}{list(got.shape)} where the interpreter gives {want.dtype}{list(want.shape)}"
    if want.dtype.kind != "f":
        bad = got != want
    else:
        rtol, atol = tolerance("programs", want.dtype)
        g, w = got.astype(np.float64), want.astype(np.float64)
        with np.errstate(invalid="ignore"):
            close = (g == w) | (np.isfinite(w) & (np.abs(g - w) <= atol + rtol * np.abs(w)))
        bad = ~(close | (np.isnan(g) & np.isnan(w)))
    if not np.any(bad):
        return None
    idx = [tuple(int(v) for v in i) for i in np.argwhere(bad)[:4]]
    return f"{int(np.sum(bad))} of {want.size} differ: " + ", ".join(
        f"at {i} jit {got[i]!r} interpreter {want[i]!r}" for i in idx)


def describe(text: str, args: list[np.ndarray]) -> str:
    with np.printoptions(threshold=200, precision=9):
        shown = "\n".join(f"  arg {i}: {a.dtype}{list(a.shape)} = {a!r}" for i, a in enumerate(args))
    return f"program:\n{text}\ninputs:\n{shown}"


def run_both(text: str, args: list[np.ndarray], jit_options: dict | None = None,
             coverage: dict | None = None) -> Any:
    """The reference's results when both tiers agree ("Kind: message" when both trap);
    raises Disagreement with the program and inputs otherwise. `coverage` counts the JIT's
    regions by kind, compiled or declined."""
    module = assembler.assemble(text)
    want = _run(module, "off", args, None)
    got = _run(assembler.assemble(text), "always", args, jit_options, coverage)
    if isinstance(want, tuple) and len(want) == 2 and isinstance(want[0], str):
        if isinstance(got, tuple) and len(got) == 2 and got[0] == want[0]:
            return f"{want[0]}: {want[1]}"
        raise Disagreement(f"the interpreter raises {want[0]} ({want[1]}), the JIT gives "
                           f"{_brief(got)}\n{describe(text, args)}")
    if isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], str):
        raise Disagreement(f"the JIT raises {got[0]} ({got[1]}), the interpreter returns normally"
                           f"\n{describe(text, args)}")
    for i, (g, w) in enumerate(zip(got, want)):
        why = mismatch(g, w)
        if why:
            raise Disagreement(f"result {i}: {why}\n{describe(text, args)}")
    return want


def _brief(v: Any) -> str:
    if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str):
        return f"{v[0]} ({v[1]})"
    return "results " + ", ".join(f"{np.asarray(x).dtype}{list(np.shape(x))}" for x in v)
