"""Differential fuzzing: random programs (tests/fuzzgen/generate.py) run with jit="off" (the
interpreter, the specification) and jit="always", and compared (tests/fuzzgen/compare.py).

The default run checks a fixed budget of seeds; `DLVM_FUZZ_SEEDS=N` (and `DLVM_FUZZ_START=S`)
sets it. The long run is marked slow: `pytest -m slow tests/test_fuzz_jit.py`, by default
2,000 seeds after the CI's. A failure prints the program text and its inputs; reproduce it with
`generate(seed)` and `run_both` (or save the text as a .dlasm file and `dlvm run` it).
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from fuzzgen.compare import Disagreement, run_both
from fuzzgen.generate import generate

from isa.errors import InvalidError

CI_SEEDS = 150          # ~20-30 s on a 2-core machine with a cold kernel cache
SLOW_SEEDS = 2000


def _seeds(default: int, offset: int) -> range:
    n = int(os.environ.get("DLVM_FUZZ_SEEDS", default))
    start = int(os.environ.get("DLVM_FUZZ_START", offset))
    return range(start, start + n)


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory, monkeypatch):
    # a fresh kernel cache: what is compiled is tested, not what an older build left on disk
    monkeypatch.setenv("DLVM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "fuzz-cache"))


def _fuzz(seeds: range) -> dict:
    coverage: dict[str, int] = {}
    invalid, failures = [], []
    with np.errstate(all="ignore"):
        for seed in seeds:
            case = generate(seed)
            try:
                run_both(case.text, case.args, case.jit_options, coverage)
            except InvalidError as e:           # a generator bug: counted, must stay rare
                invalid.append((seed, str(e).splitlines()[0]))
            except Disagreement as e:
                failures.append(f"seed {seed} (jit_options {case.jit_options}): {e}")
    assert not failures, f"{len(failures)} of {len(seeds)} programs disagree:\n\n" + \
        "\n\n".join(failures[:3])
    assert len(invalid) <= len(seeds) // 50, f"the generator made invalid programs: {invalid[:5]}"
    return coverage


def test_random_programs_agree():
    coverage = _fuzz(_seeds(CI_SEEDS, 0))
    # the budget must exercise the compiled paths, not only the interpreter's fallbacks
    if int(os.environ.get("DLVM_FUZZ_SEEDS", CI_SEEDS)) >= 100:
        # (fewer products: one whose contracted dim is 1 is an outer product, which the
        # pipeline writes as a multiply, jit/passes/simplify.py)
        for kind, least in (("elementwise", 5), ("reduce", 5), ("matmul+epilogue", 3)):
            assert coverage.get(f"{kind} compiled", 0) >= least, coverage


@pytest.mark.slow
def test_random_programs_agree_long():
    _fuzz(_seeds(SLOW_SEEDS, 100_000))


def test_generator_is_deterministic():
    a, b = generate(12345), generate(12345)
    assert a.text == b.text and all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a.args, b.args))


def test_generator_covers_the_families():
    text = "\n".join(generate(s).text for s in range(200))
    for word in ("reduce_sum", "reduce_mean", "keepdims = true", "softmax", "layer_norm", "matmul",
                 "select", "cast", "transpose", "slice", "br %flag", "head:", "f64", "u8", "i64",
                 "div", "pow"):
        assert word in text, word


def test_disagreement_shows_program_and_inputs():
    text = "module t\nfunc @main(%x: i32[2]) -> i32[2] {\n  %r = add %x, 1\n  ret %r\n}\n"
    x = np.array([1, 2], np.int32)
    assert run_both(text, [x])[0].tolist() == [2, 3]
    from fuzzgen.compare import describe, mismatch
    assert "at (1,)" in mismatch(np.array([2, 4], np.int32), np.array([2, 3], np.int32))
    assert mismatch(np.array([np.nan, 1.0]), np.array([np.nan, 1.0 + 1e-13])) is None
    assert mismatch(np.array([np.inf]), np.array([1e308])) is not None
    shown = describe(text, [x])
    assert "%r = add %x, 1" in shown and "array([1, 2], dtype=int32)" in shown
