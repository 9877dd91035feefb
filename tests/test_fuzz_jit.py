"""Differential fuzzing: random programs (tests/fuzzgen.py) run compiled (jit="always") and
interpreted (jit="off") must agree: the same results (bitwise for integers and booleans, within
specs/tolerances.md for floats, NaN where NaN), or the same kind of trap.

A fixed budget of seeds runs in every test run; `DLVM_FUZZ_SEEDS=N` (and `-m slow` for the long
run) runs more. A failure prints the program and how to run it again.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from fuzzgen import generate

import assembler
import dlvmrt
from isa.errors import DlvmError, InvalidError, MalformedError

SEEDS = int(os.environ.get("DLVM_FUZZ_SEEDS", "120"))
LONG = int(os.environ.get("DLVM_FUZZ_LONG", "2000"))


def outcome(module, inputs, mode):
    try:
        return "ok", dlvmrt.VM(module, jit=mode).run("main", **inputs)
    except DlvmError as e:
        return type(e).__name__, e.format()


def close(a: np.ndarray, b: np.ndarray, f32: bool) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind != "f":
        return np.array_equal(a, b)
    # f32 transcendental functions are ulp-accurate, not bitwise (specs/tolerances.md); long
    # sums are reassociated by vector loops; an f64 result of f32 work carries f32's error
    rtol, atol = (1e-4, 1e-5) if f32 or a.dtype == np.float32 else (1e-9, 1e-12)
    scale = np.max(np.abs(b[np.isfinite(b)]), initial=1.0)
    return np.allclose(a, b, rtol=rtol, atol=atol * scale, equal_nan=True)


def check_seed(seed: int) -> str | None:
    """None when the tiers agree (or the generator made an invalid program), else a report."""
    prog = generate(seed)
    try:
        module = assembler.parse(prog.text)
        dlvmrt.load(module)
    except (MalformedError, InvalidError):
        return None
    want = outcome(module, prog.inputs, "off")
    got = outcome(module, prog.inputs, "always")
    f32 = "f32" in prog.text
    same = want[0] == got[0] and (want[0] != "ok" or
                                  all(close(g, w, f32) for g, w in zip(got[1], want[1])))
    if same:
        return None
    return (f"seed {seed}: interpreter {want[0]}, JIT {got[0]}\n{prog.text}\n"
            f"interpreter: {want[1]}\nJIT: {got[1]}\n"
            f"(again: DLVM_FUZZ_SEEDS={seed + 1} pytest tests/test_fuzz_jit.py)")


def test_generator_makes_valid_programs():
    valid = 0
    for seed in range(40):
        try:
            dlvmrt.load(assembler.parse(generate(seed).text))
            valid += 1
        except (MalformedError, InvalidError):
            pass
    assert valid >= 36, f"only {valid} of 40 generated programs verify"


@pytest.mark.parametrize("chunk", range(4))
def test_jit_agrees_with_the_interpreter(chunk):
    reports = [r for seed in range(chunk, SEEDS, 4) if (r := check_seed(seed))]
    assert not reports, "\n\n".join(reports[:3])


@pytest.mark.slow
def test_jit_agrees_long_run():
    reports = [r for seed in range(SEEDS, SEEDS + LONG) if (r := check_seed(seed))]
    assert not reports, f"{len(reports)} mismatches:\n\n" + "\n\n".join(reports[:3])
