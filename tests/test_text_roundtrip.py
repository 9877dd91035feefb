"""Text round trips: parse(disassemble(m)) == m, the printer is a fixed point, debug locations
survive, and text -> bytes -> text -> bytes is the identity."""
from __future__ import annotations

import numpy as np
import pytest
from shared_paths import SHARED_EXAMPLES

from assembler import assemble, assemble_file, disassemble, parse
from assembler.literals import element_text
from isa.builder import ModuleBuilder
from isa.dtypes import DType
from isa.errors import SourceLoc
from isa.module import Module

EXAMPLES = sorted(SHARED_EXAMPLES.glob("*.dlasm")) if SHARED_EXAMPLES.is_dir() else []


def all_locs(m: Module) -> list[SourceLoc | None]:
    out = [c.loc for c in m.constants.values()]
    for f in m.functions.values():
        out.append(f.loc)
        out += [i.loc for b in f.blocks for i in b.instrs]
    return out


def check_round_trip(m: Module, debug: bool) -> None:
    text = disassemble(m, debug=debug)
    again = parse(text)
    assert again == m, text
    assert disassemble(again, debug=debug) == text
    if debug and all(loc is not None for loc in all_locs(m)):
        assert [(x.line, x.col) for x in all_locs(again)] == [(x.line, x.col) for x in all_locs(m)]
        if m.source is not None:
            assert again.source == m.source
            assert {x.file for x in all_locs(again)} <= {m.source}


# ---- the shared examples --------------------------------------------------------------------

@pytest.mark.skipif(not EXAMPLES, reason=f"no shared examples at {SHARED_EXAMPLES}")
@pytest.mark.parametrize("debug", [True, False])
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_shared_example_round_trips(path, debug):
    m = assemble_file(path)
    check_round_trip(m, debug)
    assert all(loc is not None and loc.file == str(path) for loc in all_locs(m))


@pytest.mark.skipif(not EXAMPLES, reason=f"no shared examples at {SHARED_EXAMPLES}")
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_text_bytes_text_bytes_is_identity(path):
    bytecode = pytest.importorskip("isa.bytecode")
    data = bytecode.encode(assemble_file(path))
    text = disassemble(bytecode.decode(data))
    assert bytecode.encode(assemble(text, "<disassembly>")) == data


# ---- builder-made modules -------------------------------------------------------------------

def odd_constants(mb: ModuleBuilder) -> None:
    rng = np.random.default_rng(0)
    mb.constant("f32", rng.standard_normal((3, 4)).astype(np.float32))
    mb.constant("f16", np.array([0.1, -0.0, 65504, 6e-8, np.inf, np.nan], np.float16))
    mb.constant("f64", np.array([[1e-300, -2.5], [np.pi, 1e300]], np.float64))
    mb.constant("i8", np.array([-128, 0, 127], np.int8))
    mb.constant("u8", np.array([0, 255], np.uint8))
    mb.constant("i64", np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max], np.int64))
    mb.constant("mask", np.array([[True, False], [False, True]]))
    mb.constant("fill", np.full((2, 3), -1.25, np.float32))
    mb.constant("scalar", np.array(7, np.int32))
    mb.constant("empty_rows", np.zeros((0, 3), np.float32))
    mb.constant("empty_cols", np.zeros((2, 0), np.float32))
    mb.constant("odd name", np.array([1.0], np.float32))


def builder_module() -> Module:
    mb = ModuleBuilder("built")
    odd_constants(mb)
    helper = mb.function("pair", [("a", "f32[N, 3]")], ["f32[N, 3]", "f32[]"])
    m = helper.reduce_max(helper.arg("a"), axes=None)
    helper.ret(helper.arg("a"), m)
    f = mb.function("main", [("x", "f32[N, 3]"), ("n", "i64[]")], ["f32[N, 3]"])
    x = f.arg("x")
    y = f.mul(x, 0.1, into="y")
    y = f.add(y, 1, result_type="f32[N, 3]")
    y = f.layer_norm(y, epsilon=1)          # a FLOAT attribute given as an int stays an int
    s = f.reduce_sum(y, axes=[1], keepdims=True)
    f.emit("pad", [y], {"pads": [0, 0, 1, 1], "value": -0.0})
    c = f.const([[1, 2, 3]], "f32[1, 3]")
    f.const(0.5, "f32[N, 3]")
    f.const(True, "bool[]", into="flag")
    z = f.select(f.gt(y, -1e-30), y, c)
    z = f.cast(f.cast(z, to="i32"), to="f32")
    pair = f.call("pair", z, n_results=2)
    f.assert_(f.lt(pair[1], float("inf")), 'max "too big"\\ \n\t\x01 caf\u00e9')
    f.br(f.gt(f.arg("n"), 0), "loop body", "done")
    f.label("loop body")
    f.emit("mov", [s], results=["weird reg!"])
    f.jmp("done")
    f.label("done")
    f.ret(f.add(pair[0], z))
    return mb.finish(verify=False)


@pytest.mark.parametrize("debug", [True, False])
def test_builder_module_round_trips(debug):
    m = builder_module()
    check_round_trip(m, debug)


def test_builder_module_is_valid_after_a_round_trip():
    m = builder_module()
    assemble(disassemble(m))   # the verifier accepts the reparsed text


def test_scrambled_locations_survive(tmp_path):
    m = assemble_file(EXAMPLES[0]) if EXAMPLES else builder_module()
    n = 0
    for f in m.functions.values():
        f.loc = SourceLoc("orig.dlasm", 100 + n, 9)
        for b in f.blocks:
            for i in b.instrs:
                n += 1
                i.loc = SourceLoc("orig.dlasm", 50 + (n * 7) % 13, n)
    for c in m.constants.values():
        c.loc = SourceLoc("orig.dlasm", 1, 1)
    m.source = "orig.dlasm"
    text = disassemble(m)
    assert 'source "orig.dlasm"' in text and "loc(" in text
    again = parse(text, "printed.dlasm")
    assert all_locs(again) == all_locs(m)
    assert "loc(" not in disassemble(m, debug=False)


def test_natural_locations_print_no_suffix():
    text = disassemble(assemble("module m\n\nfunc @f(%x: f32[]) -> f32[] {\n  ret %x\n}\n"))
    assert "loc(" not in text and text.startswith("module m\n\nfunc @f")


# ---- element text ---------------------------------------------------------------------------

def test_every_float16_reads_back_exactly():
    values = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    finite = values[~np.isnan(values)]
    back = np.array([float(element_text(v)) for v in finite]).astype(np.float16)
    assert back.view(np.uint16).tolist() == finite.view(np.uint16).tolist()


@pytest.mark.parametrize("dtype, bits", [(np.float32, np.uint32), (np.float64, np.uint64)])
def test_random_floats_read_back_exactly(dtype, bits):
    rng = np.random.default_rng(1)
    raw = rng.integers(0, np.iinfo(bits).max, 20000, dtype=bits, endpoint=True).view(dtype)
    raw = raw[~np.isnan(raw)]
    text = [element_text(v) for v in raw]
    back = np.array([float(t) for t in text]).astype(dtype)
    assert back.view(bits).tolist() == raw.view(bits).tolist()
    assert all(any(ch in t for ch in ".en") for t in text)   # always reads as a float


def test_element_text_keeps_kinds():
    assert element_text(np.int8(-5)) == "-5"
    assert element_text(np.bool_(True)) == "true"
    assert element_text(np.float32(1.0)) == "1.0"
    assert DType.F32.np.type(float(element_text(np.float32(0.1)))) == np.float32(0.1)


def test_instruction_text_and_numpy_attribute_values():
    from assembler.printer import instruction_text
    from isa.module import Instr, Reg
    ins = Instr("softmax", ["y"], [Reg("x")], {"axis": np.int64(-1)})
    assert instruction_text(ins) == "%y = softmax %x {axis = -1}"
    ins = Instr("reduce_sum", ["s"], [Reg("x")], {"keepdims": np.bool_(True), "axes": [np.int64(0)]})
    assert instruction_text(ins) == "%s = reduce_sum %x {axes = [0], keepdims = true}"
