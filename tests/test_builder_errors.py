"""The builder reports a bad instruction at the call that makes it, suggests names for a
misspelled op, and takes `into=` on every method, `call` included (specs/builder.md)."""
from __future__ import annotations

import traceback

import numpy as np
import pytest

import dlvmrt
from isa.builder import ModuleBuilder
from isa.errors import InvalidError


def test_a_type_error_is_raised_by_the_call_that_made_it():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", "f32[N, 4]")], ["f32[N, 3]"])
    w = mb.constant("w", np.ones((5, 3), np.float32))
    with pytest.raises(InvalidError, match="matmul inner dimensions 4 and 5 differ") as e:
        f.matmul(f.arg("x"), w)                 # this line
    frames = traceback.extract_tb(e.tb)
    assert any(fr.name == "test_a_type_error_is_raised_by_the_call_that_made_it" and
               "f.matmul" in (fr.line or "") for fr in frames)


def test_did_you_mean():
    f = ModuleBuilder("m").function("main", [("x", "f32[4]")], ["f32[4]"])
    with pytest.raises(AttributeError, match="did you mean .*softmax"):
        f.sofmax(f.arg("x"))
    with pytest.raises(InvalidError, match="did you mean .*relu"):
        f.emit("reluu", [f.arg("x")])


def test_call_into_an_existing_register():
    mb = ModuleBuilder("m")
    g = mb.function("twice", [("v", "f32[4]")], ["f32[4]"])
    g.ret(g.mul(g.arg("v"), 2.0))
    f = mb.function("main", [("x", "f32[4]")], ["f32[4]"])
    y = f.call("twice", f.arg("x"), into="x")
    assert y.name == "x"
    f.ret(f.call("twice", y))
    (out,) = dlvmrt.VM(mb.finish(), jit="off").run("main", np.ones(4, np.float32))
    assert out.tolist() == [4.0] * 4


def test_immediates_and_unknown_types_are_left_to_the_verifier():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", "f32[N, 4]")], ["f32[N, 4]"])
    h = f.add(f.arg("x"), 1.0)
    f.ret(f.relu(h))
    mb.finish()
