"""Support for testing compiled regions against the op references.

- `tolerance(op, dtype)` reads the table of specs/tolerances.md (the one statement of what the
  JIT promises) and `assert_matches` applies it.
- `reference_run` interprets a straight-line function with the op table's NumPy references.
- `run_with_jit` does the same but runs each formed region through a RegionRunner, falling back
  to the references when the runner declines: the contract the VM follows.
"""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from isa.module import ConstRef, Imm, Module, Reg
from isa.ops import OPS
from isa.verify import verify_module

from .regions import form_regions

SPEC = Path(__file__).resolve().parent.parent / "specs" / "tolerances.md"


@cache
def _table() -> dict[str, dict[str, tuple[float | str, float | str]]]:
    rows: dict[str, dict[str, tuple[float | str, float | str]]] = {}
    for line in SPEC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or cells[0] in ("ops", "---"):
            continue
        try:
            vals = [v if v == "tiny" else float(v) for v in cells[1:]]
        except ValueError:
            continue
        for op in re.split(r",\s*", cells[0]):
            rows[op] = {"f32": (vals[0], vals[1]), "f64": (vals[2], vals[3])}
    return rows


def tolerance(op: str, dtype: np.dtype) -> tuple[float, float]:
    """(rtol, atol) for `op` on `dtype` from specs/tolerances.md; exact for unlisted ops and
    non-float dtypes."""
    dt = np.dtype(dtype)
    if dt.kind != "f" or op not in _table():
        return 0.0, 0.0
    rtol, atol = _table()[op]["f64" if dt.itemsize == 8 else "f32"]
    if atol == "tiny":
        atol = float(np.finfo(dt).tiny)
    return float(rtol), float(atol)


def assert_matches(got: np.ndarray, ref: np.ndarray, op: str, what: str = "") -> None:
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    assert got.dtype == ref.dtype, f"{what}: dtype {got.dtype} != {ref.dtype}"
    if ref.dtype.kind != "f":
        bad = got != ref
    else:
        rtol, atol = tolerance(op, ref.dtype)
        g, r = got.astype(np.float64), ref.astype(np.float64)
        both_nan = np.isnan(g) & np.isnan(r)
        with np.errstate(invalid="ignore"):
            close = (g == r) | (np.isfinite(r) & (np.abs(g - r) <= atol + rtol * np.abs(r)))
        bad = ~(close | both_nan)
    if np.any(bad):
        idx = np.argwhere(bad)[:5]
        detail = ", ".join(f"{tuple(int(v) for v in i)}: got {got[tuple(i)]!r} want {ref[tuple(i)]!r}"
                           for i in idx)
        raise AssertionError(f"{what or op}: {int(np.sum(bad))} of {ref.size} differ ({detail})")


def _operand(env: dict[str, Any], module: Module, o, t) -> Any:
    if isinstance(o, Reg):
        return env[o.name]
    if isinstance(o, ConstRef):
        return module.constants[o.name].value
    if isinstance(o, Imm):
        return np.asarray(o.value, dtype=t.dtype.np)
    raise TypeError(o)


def _interpret(module: Module, func: str, instrs, rows, env: dict[str, Any]) -> list[Any] | None:
    for ins, row in zip(instrs, rows):
        if ins.op == "ret":
            return [_operand(env, module, o, t) for o, t in zip(ins.operands, row.operands)]
        args = [_operand(env, module, o, t) for o, t in zip(ins.operands, row.operands)]
        out = OPS[ins.op].reference(OPS[ins.op].with_defaults(ins.attrs), *args)
        outs = out if isinstance(out, tuple) else (out,)
        for r, v, t in zip(ins.results, outs, row.results):
            env[r] = np.asarray(v, dtype=t.dtype.np)
    return None


def reference_run(module: Module, func: str, args: list[np.ndarray]) -> list[np.ndarray]:
    """Interpret a single-block function with the op references (ops without a reference, such
    as composite ops before their rows land, are not supported here)."""
    f = module.functions[func]
    types = verify_module(module)[func]
    env = {p.name: a for p, a in zip(f.params, args)}
    with np.errstate(all="ignore"):
        return _interpret(module, func, f.blocks[0].instrs, types[0], env)


class JitDriver:
    """Runs a single-block function the way the VM does: regions formed once, each through its
    RegionRunner, other instructions (and declined regions) with the references."""

    def __init__(self, module: Module, func: str, jit):
        self.module, self.func = module, func
        self.types = verify_module(module)[func]
        self.instrs = module.functions[func].blocks[0].instrs
        self.params = [p.name for p in module.functions[func].params]
        self.regions = {r.start: r for r in form_regions(module, func, self.types) if r.block == 0}
        self.runners = {start: jit.runner(module, r) for start, r in self.regions.items()}

    def __call__(self, args: list[np.ndarray]) -> list[np.ndarray]:
        module, env = self.module, dict(zip(self.params, args))
        i = 0
        with np.errstate(all="ignore"):
            while i < len(self.instrs):
                reg = self.regions.get(i)
                if reg is not None:
                    outs = self.runners[i]([_operand(env, module, o, None) for o in reg.inputs])
                    if outs is not None:
                        env.update(zip(reg.outputs, outs))
                        i = reg.end         # registers dead after the region are not produced
                        continue
                res = _interpret(module, self.func, self.instrs[i:i + 1], self.types[0][i:i + 1], env)
                if res is not None:
                    return res
                i += 1
        raise AssertionError("function ended without ret")


def run_with_jit(module: Module, func: str, args: list[np.ndarray], jit) -> tuple[list[np.ndarray], list]:
    """Run a single-block function once through a fresh JitDriver. Returns the results and the
    runners (for their describe())."""
    driver = JitDriver(module, func, jit)
    return driver(args), list(driver.runners.values())


def compare_with_reference(jit, module: Module, args: list[np.ndarray], tol_op: str):
    """Run a single-region function through the JIT once, check that the region ran compiled,
    and match every result against the reference interpreter within tol_op's tolerance.
    Returns the runner."""
    got, runners = run_with_jit(module, "main", args, jit)
    assert len(runners) == 1 and runners[0].compiled_calls == 1, runners[0].describe()
    for g, r in zip(got, reference_run(module, "main", args)):
        assert_matches(g, r, tol_op)
    return runners[0]
