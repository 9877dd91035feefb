"""Programs written as a user would, in the language specs/ documents, checked against NumPy.

They use what the shared examples do not: gather, argmax, asserts, data-dependent loops with
calls, pad/pool/slice with negative steps, concat, iota with named dims, select with -inf.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dlvmrt
from isa.errors import Trap

HERE = Path(__file__).parent / "programs"


def vm(name: str, jit: str = "off") -> dlvmrt.VM:
    return dlvmrt.VM(dlvmrt.load(HERE / f"{name}.dlasm"), jit=jit)


@pytest.mark.parametrize("jit", ["off", "always"])
def test_embedding_pool(jit):
    table = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [.5, .5, .5]],
                     np.float32)
    w = np.array([[1, -1], [-1, 1], [.5, .5]], np.float32)
    ids = np.array([[1, 2, 3], [4, 4, 0], [5, -1, 2]], np.int64)
    logits, cls = vm("embedding_pool", jit).run("main", ids)
    want = table[ids].mean(axis=1) @ w
    np.testing.assert_allclose(logits, want, rtol=1e-6)
    np.testing.assert_array_equal(cls, want.argmax(axis=1))
    with pytest.raises(Trap, match="index 6"):
        vm("embedding_pool", jit).run("main", np.array([[6]], np.int64))


def test_newton_sqrt_loops_until_converged():
    a = np.array([0.0, 1.0, 2.0, 1e6], np.float64)
    x, iters = vm("newton_sqrt").run("main", a)
    np.testing.assert_allclose(x, np.sqrt(a), rtol=1e-12, atol=1e-12)
    assert 5 < int(iters) < 100
    with pytest.raises(Trap, match="sqrt of a negative number"):
        vm("newton_sqrt").run("main", np.array([-1.0]))


@pytest.mark.parametrize("jit", ["off", "always"])
def test_image_ops(jit):
    img = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    a, t, both = vm("image_ops", jit).run("main", img)
    p = np.pad(img, [(0, 0), (0, 0), (1, 1), (1, 1)])
    want_a = p[:, :, :6, :6].reshape(1, 2, 3, 2, 3, 2).mean(axis=(3, 5))
    np.testing.assert_allclose(a, want_a)
    flip = img[..., ::-1]
    np.testing.assert_array_equal(t, flip[0, 0].T)
    np.testing.assert_array_equal(both, np.concatenate([img, flip], axis=1))


@pytest.mark.parametrize("jit", ["off", "always"])
def test_masked_softmax(jit):
    rng = np.random.default_rng(1)
    s = rng.standard_normal((3, 5)).astype(np.float32)
    lens = np.array([5, 2, 1], np.int64)
    (p,) = vm("masked_softmax", jit).run("main", s, lens)
    masked = np.where(np.arange(5)[None, :] < lens[:, None], s, -np.inf)
    e = np.exp(masked - masked.max(axis=1, keepdims=True))
    np.testing.assert_allclose(p, e / e.sum(axis=1, keepdims=True), rtol=1e-6, atol=1e-7)
    assert np.all(p[1, 2:] == 0)


def test_user_programs_round_trip_through_bytecode():
    import assembler
    import isa.bytecode as bc
    for prog in sorted(HERE.glob("*.dlasm")):
        m = assembler.assemble_file(str(prog))
        data = bc.encode(m)
        text = assembler.disassemble(bc.decode(data))
        assert bc.encode(assembler.assemble(text, "x.dlasm")) == data, prog.name
