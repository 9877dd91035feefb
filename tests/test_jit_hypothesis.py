"""Random elementwise programs (random ops, broadcasting shapes, dtypes) compiled and compared
with the references. Float programs squash after every binary op (tanh, sigmoid, sin, cos), so
values stay O(1) and the only differences are the documented ones (FMA contraction, math
function error) within the "programs" tolerance; integer programs must match exactly."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isa.builder import ModuleBuilder
from jit import Jit
from jit.testing import assert_matches, reference_run, run_with_jit

FLOAT_BIN = ["add", "sub", "mul", "max", "min"]
SQUASH = ["tanh", "sigmoid", "sin", "cos"]
INT_BIN = ["add", "sub", "mul", "max", "min", "and", "or", "xor"]
INT_UN = ["neg", "abs", "not"]

_jit: Jit | None = None


@pytest.fixture(scope="module", autouse=True)
def jit(tmp_path_factory):
    global _jit
    _jit = Jit(cache_dir=str(tmp_path_factory.mktemp("jitcache")), threads=1)
    yield _jit
    _jit = None


@st.composite
def programs(draw):
    dtype = draw(st.sampled_from(["f32", "f64", "i32"]))
    base = draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
    n_in = draw(st.integers(1, 3))
    shapes = []
    for _ in range(n_in):
        keep = draw(st.integers(0, len(base)))
        dims = [d if draw(st.booleans()) else 1 for d in base[len(base) - keep:]]
        shapes.append(tuple(dims))
    shapes[0] = tuple(base)            # one input spans the whole domain
    steps = draw(st.lists(st.tuples(st.integers(0, 100), st.integers(0, 100), st.integers(0, 100)),
                          min_size=2, max_size=6))
    seed = draw(st.integers(0, 2 ** 31 - 1))
    return dtype, shapes, steps, seed


def build(dtype, shapes, steps):
    mb = ModuleBuilder("h")
    f = mb.function("main", [(f"p{i}", f"{dtype}[" + ", ".join(map(str, s)) + "]")
                             for i, s in enumerate(shapes)], [])
    vals = list(f.args())
    for a, b, c in steps:
        x, y = vals[a % len(vals)], vals[b % len(vals)]
        if dtype == "i32":
            v = getattr(f, INT_BIN[c % len(INT_BIN)])(x, y)
            if c % 3 == 0:
                v = getattr(f, INT_UN[c % len(INT_UN)])(v)
        else:
            v = getattr(f, FLOAT_BIN[c % len(FLOAT_BIN)])(x, y if c % 4 else 0.75)
            v = getattr(f, SQUASH[c % len(SQUASH)])(v)
        vals.append(v)
    out = np.broadcast_shapes(*shapes)
    f.func.results = [__import__("isa").parse_type(f"{dtype}[" + ", ".join(map(str, out)) + "]")]
    # the result must cover the whole domain: fold every value in
    acc = vals[-1]
    for v in vals[:-1]:
        acc = f.add(acc, v)
    f.ret(acc)
    return mb.finish()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(programs())
def test_random_elementwise_programs(prog):
    dtype, shapes, steps, seed = prog
    m = build(dtype, shapes, steps)
    rng = np.random.default_rng(seed)
    if dtype == "i32":
        args = [rng.integers(-1000, 1000, s).astype(np.int32) for s in shapes]
    else:
        dt = np.float32 if dtype == "f32" else np.float64
        args = [rng.uniform(-2, 2, s).astype(dt) for s in shapes]
    got, runners = run_with_jit(m, "main", args, _jit)
    assert len(runners) == 1 and runners[0].compiled_calls == 1, [r.describe() for r in runners]
    assert_matches(got[0], reference_run(m, "main", args)[0], "programs", f"{dtype} {shapes} {steps}")
