"""The .dlasm assembler: what good text parses to, and where and how bad text is reported."""
from __future__ import annotations

import numpy as np
import pytest

from assembler import assemble, assemble_file, disassemble, parse
from isa.dtypes import DType
from isa.errors import DlvmError, InvalidError, MalformedError, SourceLoc
from isa.module import ConstRef, Imm, Instr, Reg
from isa.types import TensorType

F32 = DType.F32


def body(*lines: str, params: str = "%x: f32[4]", results: str = "f32[4]") -> str:
    """A one-function module around instruction lines (line 1 is the func header)."""
    return f"func @f({params}) -> {results} {{\n" + "".join(f"  {ln}\n" for ln in lines) + "}\n"


def only_instrs(text: str, **kw) -> list[Instr]:
    m = parse(text, **kw)
    (f,) = m.functions.values()
    return [i for b in f.blocks for i in b.instrs]


# ---- good text ------------------------------------------------------------------------------

def test_function_header_params_results_and_locations():
    text = "; a comment\nmodule demo\n\nfunc @g(%a: f32[N, 4], %s: i64[]) -> (f32[N, ?], f32[]) {\n" \
           "  %y = mul %a, %s\n  ret %y, %s\n}\n"
    m = parse(text, "demo.dlasm")
    assert m.name == "demo" and m.source == "demo.dlasm"
    g = m.functions["g"]
    assert [(p.name, p.type) for p in g.params] == [
        ("a", TensorType(F32, ("N", 4))), ("s", TensorType(DType.I64, ()))]
    assert g.results == [TensorType(F32, ("N", None)), TensorType(F32, ())]
    assert g.loc == SourceLoc("demo.dlasm", 4, 1)
    (b,) = g.blocks
    assert b.label == "entry"
    assert b.instrs[0] == Instr("mul", ["y"], [Reg("a"), Reg("s")])
    assert b.instrs[0].loc == SourceLoc("demo.dlasm", 5, 3)
    assert b.instrs[1].loc == SourceLoc("demo.dlasm", 6, 3)   # results-less: the op's position


def test_default_module_name_and_source():
    assert parse("").name == "main" and parse("").source is None
    m = parse("", "some/dir/net.dlasm")
    assert m.name == "net" and m.source == "some/dir/net.dlasm"


@pytest.mark.parametrize("text, value", [
    ("1", 1), ("-2", -2), ("1.0", 1.0), ("0.5", 0.5), ("1e-5", 1e-5), ("-2.5e3", -2500.0),
    ("true", True), ("false", False), ("inf", float("inf")), ("-inf", float("-inf")),
])
def test_immediates_keep_their_python_type(text, value):
    (ins, _) = only_instrs(body(f"%y = add %x, {text}", "ret %y"))
    (imm,) = [o for o in ins.operands if isinstance(o, Imm)]
    assert imm.value == value and type(imm.value) is type(value)


def test_nan_immediate_and_constant_operand():
    text = "const @c : f32[4] = 2\n" + body("%y = add %x, nan", "%z = mul %y, @c", "ret %z")
    ins = only_instrs(text)
    assert np.isnan(ins[0].operands[1].value)
    assert ins[1].operands == [Reg("y"), ConstRef("c")]


def test_attributes_of_every_written_kind_in_table_order():
    ins = only_instrs(body(
        "%s = reduce_sum %x {keepdims = true, axes = [0]}",
        "%c = cast %x {to = i32}",
        "%g = gelu %x {approximate = \"tanh\"}",
        "%l = layer_norm %x {epsilon = 1}",
        "%b = broadcast_to %x {shape = [N, 4]}",
        "%t = transpose %x {perm = none}",
        "%p = pad %x {pads = [1, -1], value = -0.5}",
        "ret %x"))
    assert list(ins[0].attrs.items()) == [("axes", [0]), ("keepdims", True)]
    assert ins[1].attrs == {"to": DType.I32}
    assert ins[2].attrs == {"approximate": "tanh"}
    assert ins[3].attrs["epsilon"] == 1 and type(ins[3].attrs["epsilon"]) is int
    assert ins[4].attrs == {"shape": ["N", 4]}
    assert ins[5].attrs == {"perm": None}
    assert ins[6].attrs == {"pads": [1, -1], "value": -0.5}


def test_result_type_annotation():
    (ins, _) = only_instrs(body("%y = relu %x : f32[?]", "ret %y"))
    assert ins.result_type == TensorType(F32, (None,))


def test_const_instructions_scalar_and_full():
    ins = only_instrs(body("%a = const 2 : f32[]", "%b = const 0.5 : f32[N, 3]",
                           "%c = const [[1, 2], [3, 4]] : i8[2, 2]", "%d = const true : bool[2]",
                           "%e = const [] : f32[0, 3]", "ret %x"))
    a, b, c, d, e = (i.attrs for i in ins[:5])
    assert a["value"].shape == () and a["value"].dtype == np.float32 and a["value"] == 2
    assert a["type"] == TensorType(F32, ())
    assert b["value"].shape == () and b["type"] == TensorType(F32, ("N", 3))
    assert c["value"].dtype == np.int8 and c["value"].tolist() == [[1, 2], [3, 4]]
    assert d["value"].dtype == np.bool_ and d["value"].shape == ()
    assert e["value"].shape == (0, 3)


def test_module_constants_literals_fill_and_nest():
    m = parse("const @a : f32[2, 3] = 1.5\nconst @b : i32[2] = [7, -8]\n"
              "const @c : f64[] = -inf\nconst @d : bool[2, 1] = [[true], [false]]\n")
    a, b, c, d = m.constants.values()
    assert a.value.dtype == np.float32 and a.value.shape == (2, 3) and (a.value == 1.5).all()
    assert b.value.dtype == np.int32 and b.value.tolist() == [7, -8]
    assert c.value.shape == () and c.value == -np.inf
    assert d.value.tolist() == [[True], [False]]
    assert a.loc == SourceLoc("<input>", 1, 1) and b.loc.line == 2


def test_const_file_embedding(tmp_path):
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.save(tmp_path / "w.npy", w)
    np.save(tmp_path / "be.npy", w.astype(">f4"))
    src = tmp_path / "net.dlasm"
    src.write_text('module net\nconst @w : f32[3, 4] = file "w.npy"\n'
                   'const @v : f32[3, 4] = file "be.npy"\n'
                   "func @main(%x: f32[N, 3]) -> f32[N, 3] {\n  ret %x\n}\n")
    m = assemble_file(src)
    assert m.constants["w"].value.tobytes() == w.tobytes()
    assert m.constants["v"].value.dtype == np.float32 and (m.constants["v"].value == w).all()
    assert m.constants["w"].loc == SourceLoc(str(src), 2, 1)


@pytest.mark.parametrize("decl, message", [
    ('const @w : f32[4, 3] = file "w.npy"', 'holds f32[3, 4], but @w is declared f32[4, 3]'),
    ('const @w : f64[3, 4] = file "w.npy"', 'holds f32[3, 4], but @w is declared f64[3, 4]'),
    ('const @w : f32[3, 4] = file "missing.npy"', 'cannot read "missing.npy" for @w'),
    ('const @w : f32[3, 4] = file "junk.npy"', '"junk.npy" is not a readable .npy file'),
])
def test_const_file_errors_name_both_sides(tmp_path, decl, message):
    np.save(tmp_path / "w.npy", np.zeros((3, 4), np.float32))
    (tmp_path / "junk.npy").write_bytes(b"not an array")
    with pytest.raises(MalformedError) as e:
        parse(decl + "\n", "c.dlasm", base_dir=tmp_path)
    assert message in e.value.message
    assert (e.value.loc.line, e.value.loc.col) == (1, decl.index("file") + 6)


def test_multi_result_call_and_callee():
    text = "func @two(%x: f32[]) -> (f32[], f32[]) {\n  ret %x, %x\n}\n" \
           "func @main(%x: f32[]) -> f32[] {\n  %a, %b = call @two(%x)\n  call @two(%x)\n" \
           "  %c = call @two()\n  ret %a\n}\n"
    ins = [i for b in parse(text).functions["main"].blocks for i in b.instrs]
    assert ins[0] == Instr("call", ["a", "b"], [Reg("x")], {"callee": "two"})
    assert ins[0].loc.col == 3
    assert ins[1].results == [] and ins[1].loc.col == 3
    assert ins[2].operands == []


def test_labels_make_blocks_and_unlabelled_start_is_entry():
    text = body("%c = const true : bool[]", "br %c, yes, \"no way\"", params="",
                results="()").replace("}\n", "yes:\n  ret\n\"no way\": jmp yes\n}\n")
    f = parse(text).functions["f"]
    assert [b.label for b in f.blocks] == ["entry", "yes", "no way"]
    assert f.blocks[0].instrs[1].attrs == {"if_true": "yes", "if_false": "no way"}
    assert f.blocks[2].instrs[0].attrs == {"target": "yes"}


def test_assert_message_escapes():
    (ins, _) = only_instrs(body(r'assert %c, "say \"hi\"\\n\nnext\t\u{e9}"', "ret %x",
                                params="%c: bool[]", results="()"))
    assert ins.attrs == {"message": 'say "hi"\\n\nnext\t\u00e9'}


def test_loc_overrides_and_source_directive():
    text = 'module m\nsource "orig.dlasm"\nconst @k : f32[] = 1 loc(3:5)\n' \
           "func @f(%x: f32[]) -> f32[] loc(10:1) {\n  %y = neg %x loc(11:7)\n  ret %y\n}\n"
    m = parse(text, "printed.dlasm")
    assert m.source == "orig.dlasm"
    assert m.constants["k"].loc == SourceLoc("orig.dlasm", 3, 5)
    f = m.functions["f"]
    assert f.loc == SourceLoc("orig.dlasm", 10, 1)
    assert f.blocks[0].instrs[0].loc == SourceLoc("orig.dlasm", 11, 7)
    assert f.blocks[0].instrs[1].loc == SourceLoc("orig.dlasm", 6, 3)


def test_multiline_brackets_and_crlf():
    text = "const @a : f32[2, 2] = [\n  [1, 2],\n  [3, 4]]\r\n" \
           "func @f(\n  %x: f32[2, 2]\n) -> f32[2, 2] {\r\n" \
           "  %y = add %x, @a\r\n  ret %y\n}\n"
    m = assemble(text)
    assert m.constants["a"].value.tolist() == [[1, 2], [3, 4]]
    assert m.functions["f"].blocks[0].instrs[0].loc == SourceLoc("<input>", 7, 3)


def test_quoted_names_read_back():
    text = 'module "odd name"\nconst @"w 1" : f32[] = 0\n' \
           'func @"my-f"(%"a b": f32[]) -> f32[] {\n  %0 = add %"a b", @"w 1"\n  ret %0\n}\n'
    m = assemble(text)
    assert m.name == "odd name" and "w 1" in m.constants and "my-f" in m.functions
    assert m.functions["my-f"].blocks[0].instrs[0].operands == [Reg("a b"), ConstRef("w 1")]
    assert parse(disassemble(m)) == m


# ---- bad text: (text, line, col, message) ---------------------------------------------------

BAD = [
    (body("%y = frobnicate %x", "ret %y"), 2, 8, "unknown op 'frobnicate'"),
    (body("%y = reluu %x", "ret %y"), 2, 8, "unknown op 'reluu'; did you mean 'relu'?"),
    (body("%y = add %x 1.0", "ret %y"), 2, 15, "missing ',' between operands"),
    (body("%y = add %x,", "ret %y"), 2, 15, "expected an operand"),
    (body("%y = add %x, #", "ret %y"), 2, 16, "unexpected character '#'"),
    (body("%y add %x", "ret %y"), 2, 6, "expected '=' after the result register"),
    (body("%y = add %x, 12abc", "ret %y"), 2, 16, "malformed number '12abc'"),
    (body("%y = add %x, 99999999999999999999", "ret %y"), 2, 16, "does not fit in 64 bits"),
    (body('assert %x, "oops', "ret %x"), 2, 14, "unterminated string"),
    (body(r'assert %x, "a\qb"', "ret %x"), 2, 16, "unknown escape '\\q'"),
    (body("%y = relu %x : f31[4]", "ret %y"), 2, 18, "unknown dtype 'f31'; did you mean 'f32'?"),
    (body("%y = relu %x : f32", "ret %y"), 2, 21, "expected '[' after the dtype"),
    (body("%y = reduce_sum %x {axis = 0}", "ret %y"), 2, 23,
     "reduce_sum has no attribute 'axis' (it takes: axes, keepdims)"),
    (body("%y = reduce_sum %x {keepdims = 1}", "ret %y"), 2, 34,
     "reduce_sum attribute 'keepdims' must be a bool, got '1'"),
    (body("%y = reduce_sum %x {axes = 0}", "ret %y"), 2, 30,
     "reduce_sum attribute 'axes' must be an int list, got '0'"),
    (body("%y = softmax %x {axis = 1, axis = 0}", "ret %y"), 2, 30, "attribute 'axis' is given twice"),
    (body("%y = cast %x {to = f31}", "ret %y"), 2, 22, "unknown dtype 'f31'"),
    (body("jmp a {target = b}", "a:", "ret %x"), 2, 10, "is written in the instruction, not in braces"),
    (body("%c = const 1.0", "ret %x"), 2, 17, "const needs its type after the literal"),
    (body("%c = const 1.5 : i32[]", "ret %x"), 2, 14, "1.5 is not an integer"),
    (body("%c = const 300 : u8[]", "ret %x"), 2, 14, "300 is out of range for u8"),
    (body("%c = const 1e39 : f32[]", "ret %x"), 2, 14, "1e39 overflows f32"),
    (body("%c = const [[1, 2], [3]] : f32[2, 2]", "ret %x"), 2, 14,
     "the rows of this list literal differ"),
    (body("%y = neg %x loc(0:1)", "ret %y"), 2, 19, "loc line and column must be positive"),
    (body("jmp", "ret %x"), 2, 6, "expected a label after jmp"),
    (body("br %x, a b", "ret %x"), 2, 12, "expected ',' before the if_false label of br"),
    (body("%y = call f(%x)", "ret %y"), 2, 13, "expected the @function that call calls"),
    (body("a:", "ret %x", "a:", "ret %x"), 4, 3, "label 'a' is defined twice (first at line 2)"),
    (body("ret %x", "entry:", "ret %x"), 3, 3, "label 'entry' is defined twice"),
    ("const @w : f32[2] = [1, 2\n", 1, 21, "'[' is never closed"),
    ("const @w : f32[2) = 1\n", 1, 17, "')' does not close the '[' at line 1, column 15"),
    ("const @w : f32[N] = 0\n", 1, 12, "constant @w must have a static type, got f32[N]"),
    ("const @w : f32[3] = [1, 2]\n", 1, 21, "the literal of @w has shape [2], but its type is f32[3]"),
    ("const @w : f32[-1] = 0\n", 1, 16, "a dim must be a size >= 0"),
    ("const @w : f32[] = 0\nconst @w : f32[] = 1\n", 2, 7,
     "constant @w is defined twice (first at line 1)"),
    (body("ret %x") + body("ret %x"), 4, 6, "function @f is defined twice (first at line 1)"),
    ("func @f(%x: f32[], %x: f32[]) -> () {\n}\n", 1, 20, "parameter %x is given twice"),
    ("func @f(%x: f32[]) f32[] {\n}\n", 1, 20, "expected '->'"),
    ("func @f() -> () { ret\n}\n", 1, 19, "unexpected 'ret' after '{'"),
    ("ret %x\n", 1, 1, "expected 'const' or 'func' at the top level, got 'ret'"),
    ("func @f() -> () {\n}\nmodule late\n", 3, 1, "'module' must come first"),
    ("module m\nconst @a : f32[] = 1 2\n", 2, 22, "unexpected '2' after the constant"),
    ("const @a : f32[] = \"s\"\n", 1, 20, "\"s\" is not a f32 literal"),   # strings are str literals
]


@pytest.mark.parametrize("text, line, col, message", BAD, ids=[b[3][:40] for b in BAD])
def test_bad_text_is_reported_where_it_is(text, line, col, message):
    with pytest.raises(MalformedError) as e:
        parse(text, "bad.dlasm")
    err = e.value
    assert message in err.message
    assert err.loc == SourceLoc("bad.dlasm", line, col), err.format()
    assert err.source_line == text.split("\n")[line - 1].rstrip("\r")
    shown = err.format().split("\n")
    assert shown[0].startswith(f"bad.dlasm:{line}:{col}: error: ")
    assert shown[2] == "  " + " " * (col - 1) + "^"


def test_verifier_errors_get_the_source_line():
    text = body("%y = add %x", "ret %y")
    with pytest.raises(InvalidError) as e:
        assemble(text, "arity.dlasm")
    assert e.value.loc == SourceLoc("arity.dlasm", 2, 3)
    assert e.value.source_line == "  %y = add %x"
    assert "add takes 2 operands, got 1" in e.value.format()


def test_verifier_errors_in_another_source_have_no_caret():
    text = 'source "elsewhere.dlasm"\n' + body("%y = add %x", "ret %y")
    with pytest.raises(InvalidError) as e:
        assemble(text, "printed.dlasm")
    assert e.value.loc.file == "elsewhere.dlasm" and e.value.source_line is None


def test_assemble_file_errors(tmp_path):
    with pytest.raises(MalformedError, match="cannot read"):
        assemble_file(tmp_path / "nope.dlasm")
    bad = tmp_path / "latin1.dlasm"
    bad.write_bytes(b"module m\n; caf\xe9\n")
    with pytest.raises(MalformedError) as e:
        assemble_file(bad)
    assert e.value.loc == SourceLoc(str(bad), 2, 6) and "not valid UTF-8" in e.value.message


def test_huge_constant_fill_is_refused():
    with pytest.raises(DlvmError, match="the limit is"):
        parse("const @w : f32[100000, 100000] = 0\n")
