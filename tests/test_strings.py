"""The str dtype: the string ops against hand-written values, the ops that refuse str, the
bytecode and text round trips, the compiled tiers leaving strings to the interpreter, the VM's
and the CLI's inputs and outputs, and ONNX's string node tests."""
from __future__ import annotations

import msgpack
import numpy as np
import pytest

import assembler
import dlvmrt
from cli import main as cli_main
from isa.bytecode import Limits, decode, encode
from isa.dtypes import DType, dtype_from_name, dtype_from_numpy
from isa.errors import InvalidError, MalformedError, OpTypeError, ResourceExhausted, Trap
from isa.module import Constant, Module
from isa.ops import OPS
from isa.types import TensorType

STR = DType.STR


def S(*xs, shape=None) -> np.ndarray:
    """An object array of str (np.array of str alone would give fixed-width 'U')."""
    a = np.empty(len(xs), dtype=object)
    a[:] = list(xs)
    return a.reshape(shape) if shape is not None else a


def ref(op: str, *args, **attrs):
    return OPS[op].reference(OPS[op].with_defaults(attrs), *args)


def same(got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    assert got.tolist() == want.tolist(), (got, want)


def run(text: str, *args, **vm_options):
    vm = dlvmrt.VM(assembler.assemble(text, "t.dlasm"), **vm_options)
    return vm.run("main", *args), vm


# ---- the dtype ---------------------------------------------------------------------------------

def test_dtype_facts():
    assert dtype_from_name("str") is STR and STR.code == 23
    assert STR.np == np.dtype(object) and STR.itemsize == 8
    assert not STR.is_float and not STR.is_int and not STR.is_bool and not STR.is_narrow
    assert dtype_from_numpy(np.dtype(object)) is STR
    assert dtype_from_numpy(np.dtype("<U3")) is None      # converted at the VM's entry instead


# ---- the string ops ----------------------------------------------------------------------------

def test_string_concat_broadcasts_and_keeps_utf8():
    same(ref("string_concat", S("cat", "dog", ""), S("s")), S("cats", "dogs", "s"))
    same(ref("string_concat", S("的", "é"), S("的", "")), S("的的", "é"))
    zero_d = ref("string_concat", S("a", shape=()), S("b", shape=()))
    same(zero_d, S("ab", shape=()))
    same(ref("string_concat", S(shape=(0,)), S("x")), S(shape=(0,)))
    same(ref("string_concat", S("a", "b", shape=(2, 1)), S("x", "y")),
         S("ax", "ay", "bx", "by", shape=(2, 2)))


def test_string_split_pads_and_counts():
    r, n = ref("string_split", S("abc.com", "a.b.c", ""), delimiter=".")
    same(r, S("abc", "com", "", "a", "b", "c", "", "", "", shape=(3, 3)))
    same(n, np.array([2, 3, 1], np.int64))
    r, n = ref("string_split", S(" hello   world ! ", "x"))        # whitespace runs, ends dropped
    same(r, S("hello", "world", "!", "x", "", "", shape=(2, 3)))
    same(n, np.array([3, 1], np.int64))
    r, n = ref("string_split", S("a b c", "d", shape=(1, 2)), maxsplit=1)
    same(r, S("a", "b c", "d", "", shape=(1, 2, 2)))
    same(n, np.array([[2, 1]], np.int64))
    r, n = ref("string_split", S(shape=(0,)))
    assert r.shape == (0, 0) and n.shape == (0,)


def test_string_normalizer_shapes_and_cases():
    stops = S("monday")
    same(ref("string_normalizer", S("monday", "Tuesday"), stops, case_change_action="UPPER",
             is_case_sensitive=True), S("TUESDAY"))
    # insensitive: "Monday" matches "monday"; the empty string is no stop word and stays
    same(ref("string_normalizer", S("Monday", "Ünï", "", shape=(1, 3)), stops,
             case_change_action="LOWER"), S("ünï", "", shape=(1, 2)))
    # everything filtered out: one empty string, [1] or [1, 1]
    same(ref("string_normalizer", S("monday", "monday"), stops), S(""))
    same(ref("string_normalizer", S("monday", shape=(1, 1)), stops), S("", shape=(1, 1)))
    same(ref("string_normalizer", S("a", "B"), S()), S("a", "B"))
    with pytest.raises(OpTypeError, match="case_change_action"):
        OPS["string_normalizer"].infer([TensorType(STR, (2,)), TensorType(STR, (0,))],
                                       OPS["string_normalizer"].with_defaults(
                                           {"case_change_action": "TITLE"}))
    with pytest.raises(OpTypeError, match=r"\[C\] or \[1, C\]"):
        OPS["string_normalizer"].infer([TensorType(STR, (2, 2)), TensorType(STR, (0,))],
                                       OPS["string_normalizer"].with_defaults({}))


def test_regex_full_match():
    same(ref("regex_full_match", S("www.a.com", "www.b.co.uk", "", shape=(1, 3)),
             pattern=r"www\.[\w.-]+\.\bcom\b"), np.array([[True, False, False]]))
    same(ref("regex_full_match", S(shape=(2, 0)), pattern="a"), np.zeros((2, 0), bool))
    same(ref("regex_full_match", S("", "é"), pattern=r"\w?"), np.array([True, True]))
    with pytest.raises(OpTypeError, match="Python's re can compile"):
        OPS["regex_full_match"].infer([TensorType(STR, (2,))], {"pattern": "(unclosed"})


def test_eq_ne_and_select_on_strings():
    same(ref("eq", S("a", "b"), S("a")), np.array([True, False]))
    same(ref("ne", S("a", ""), S("a", "")), np.array([False, False]))
    same(ref("select", np.array([True, False]), S("x", "y"), S("z")), S("x", "z"))


def test_cast_to_and_from_str():
    f32 = np.array([0.1, 1e-5, -0.0, np.nan, np.inf, 3], np.float32)
    same(ref("cast", f32, to=STR), S("0.1", "1e-05", "-0.0", "nan", "inf", "3.0"))
    same(ref("cast", np.array([-7, 0], np.int64), to=STR), S("-7", "0"))
    same(ref("cast", np.array([True, False]), to=STR), S("True", "False"))
    same(ref("cast", S(" 1.5", "1E3", "-inf", "NaN"), to=DType.F64).astype(str),
         np.array([1.5, 1000.0, -np.inf, np.nan]).astype(str))
    same(ref("cast", S("100.5", "-3", "1e30"), to=DType.I32),
         np.array([100, -3, 2**31 - 1], np.int32))
    same(ref("cast", S("0", "2.5"), to=DType.BOOL), np.array([False, True]))
    with pytest.raises(Trap, match="'abc' is not a number"):
        ref("cast", S("1", "abc"), to=DType.F32)
    with pytest.raises(Trap, match="out of range"):
        ref("cast", S("300"), to=DType.I8)
    same(ref("cast", S("a", "é"), to=STR), S("a", "é"))


def test_label_encoder_strings_numbers_and_nan():
    same(ref("label_encoder", S("a", "b", "d"), S("a", "b", "c"), np.array([0, 1, 2], np.int16),
             np.array(42, np.int16)), np.array([0, 1, 42], np.int16))
    same(ref("label_encoder", np.array([1, 7], np.int64), np.array([7, 1, 7], np.int64),
             S("seven", "one", "again"), S("?", shape=())), S("one", "seven"))
    same(ref("label_encoder", np.array([np.nan, 2.0], np.float32),
             np.array([np.nan, 2.0], np.float32), np.array([5, 6], np.int64),
             np.array(-1, np.int64)), np.array([5, 6], np.int64))
    same(ref("label_encoder", S(shape=(0, 2)), S("a"), S("b"), S("", shape=())), S(shape=(0, 2)))


# ---- which ops take str ------------------------------------------------------------------------

@pytest.mark.parametrize("line", ["%y = add %x, %x", "%y = reduce_sum %x",
                                  "%y = lt %x, %x", "%y = max %x, %x"])
def test_numeric_ops_refuse_str(line):
    text = f"func @main(%x: str[2]) -> str[2] {{\n  {line}\n  ret %x\n}}\n"
    with pytest.raises(InvalidError, match=r"t\.dlasm:2:\d+: error: .*does not take str"):
        assembler.assemble(text, "t.dlasm")


def test_string_ops_refuse_numbers_and_str_results_are_gated():
    with pytest.raises(InvalidError, match="string_concat takes a str operand"):
        assembler.assemble("func @main(%x: f32[2]) -> f32[2] {\n  %y = string_concat %x, %x\n"
                           "  ret %x\n}\n", "t.dlasm")
    with pytest.raises(InvalidError, match="iota cannot give a str result|does not take"):
        assembler.assemble("func @main() -> str[3] {\n  %y = iota {shape = [3], dtype = str}\n"
                           "  ret %y\n}\n", "t.dlasm")


MOVES = """
const @words : str[2, 3] = [["a", "b", "c"], ["d", "", "\\u{4e2d}"]]
func @main(%i: i64[2], %c: bool[2, 3]) -> (str[3, 2], str[2], str[2, 2], str[4, 3], str[2, 3],
                                           str[6], i64[2]) {
  %t = transpose @words {perm = [1, 0]}
  %g = gather @words, %i {axis = 1}
  %col = slice %g {starts = [0, 0], ends = [2, 1]}
  %v = reshape %col {shape = [2]}
  %s = slice @words {starts = [0, 1], ends = [2, 3]}
  %cat = concat @words, @words {axis = 0}
  %fill = const "?" : str[2, 3]
  %w = select %c, @words, %fill
  %flat = reshape %w {shape = [6]}
  %n = shape_of @words
  ret %t, %v, %s, %cat, %w, %flat, %n
}
"""


def _moves_args():
    return np.array([2, 0], np.int64), np.array([[True, False, True], [False, True, True]])


def test_movement_ops_on_strings():
    (t, v, s, cat, w, flat, n), _ = run(MOVES, *_moves_args(), jit="off")
    same(t, S("a", "d", "b", "", "c", "中", shape=(3, 2)))
    same(v, S("c", "中"))
    same(s, S("b", "c", "", "中", shape=(2, 2)))
    assert cat.shape == (4, 3) and cat[2].tolist() == ["a", "b", "c"]
    same(w, S("a", "?", "c", "?", "", "中", shape=(2, 3)))
    same(n, np.array([2, 3], np.int64))
    assert flat.dtype == object


@pytest.mark.parametrize("options", [dict(jit="always"), dict(jit="always", native="always")])
def test_compiled_tiers_leave_strings_to_the_interpreter(options):
    want, _ = run(MOVES, *_moves_args(), jit="off")
    for _ in range(3):
        got, vm = run(MOVES, *_moves_args(), **options)
        for g, w in zip(got, want):
            same(g, w)
    from isa.verify import verify_module
    from jit import form_regions
    module = vm.module
    types = verify_module(module)["main"]
    instrs = module.functions["main"].blocks[0].instrs
    for region in form_regions(module, "main", types):
        for ii in range(region.start, region.end):
            row = types[region.block][ii]
            assert not any(t.dtype.is_str for t in [*row.operands, *row.results]), instrs[ii]
    if options.get("native") == "always" and vm.native is not None:
        assert vm.native.library is None and "str" in vm.native.reason


def test_aot_declines_str_by_name(tmp_path):
    from jit.targets.aot import AotError, compile_library, find_cc
    if find_cc() is None:
        pytest.skip("no C compiler")
    with pytest.raises(AotError, match="the str dtype"):
        compile_library(assembler.assemble(MOVES, "t.dlasm"), tmp_path / "lib")


# ---- VM inputs ---------------------------------------------------------------------------------

CONCAT = "func @main(%x: str[N], %y: str[]) -> str[N] {\n  %z = string_concat %x, %y\n  ret %z\n}\n"


def test_vm_takes_unicode_object_and_lists():
    for x in (np.array(["a", "bé"]), S("a", "bé"), ["a", "bé"]):
        (z,), _ = run(CONCAT, x, np.array("!"), jit="off")
        same(z, S("a!", "bé!"))
    with pytest.raises(Trap, match="holds a bytes"):
        run(CONCAT, S(b"a"), "x", jit="off")
    with pytest.raises(Trap, match="must be str"):
        run(CONCAT, np.array([1.0]), "x", jit="off")


def test_cli_reads_and_writes_unicode_npz(tmp_path):
    prog = tmp_path / "c.dlasm"
    prog.write_text(CONCAT)
    np.savez(tmp_path / "in.npz", x=np.array(["x", "中"]), y=np.array("-"))
    out = tmp_path / "out.npz"
    assert cli_main(["run", str(prog), "--inputs", str(tmp_path / "in.npz"), "--out", str(out),
                     "-q"]) == 0
    with np.load(out, allow_pickle=False) as z:
        assert z["out0"].dtype.kind == "U" and z["out0"].tolist() == ["x-", "中-"]


# ---- bytecode ----------------------------------------------------------------------------------

def _module(value: np.ndarray) -> Module:
    m = Module("m")
    m.constants["s"] = Constant("s", TensorType(STR, value.shape), value)
    return m


def test_bytecode_round_trip():
    value = S("", "a\"\\\n", "中文", "\U0001f600", "x" * 1000, "\0", shape=(2, 3))
    back = decode(encode(_module(value))).constants["s"]
    assert back.type == TensorType(STR, (2, 3))
    same(back.value, value)
    empty = decode(encode(_module(S(shape=(0, 4))))).constants["s"].value
    assert empty.shape == (0, 4) and empty.dtype == object
    text = assembler.disassemble_module(decode(encode(_module(value))), debug=False)
    assert encode(assembler.assemble(text), debug=False) == encode(_module(value), debug=False)


def _tampered(data) -> bytes:
    good = encode(_module(S("a", "b")), debug=False)
    body = msgpack.unpackb(good[8:], raw=False)
    body["constants"][0][3] = data
    return good[:8] + msgpack.packb(body, use_bin_type=True)


@pytest.mark.parametrize("data, message", [
    (b"\x00" * 16, r"constant 0 \(@s\): the data of the constant must be an array of strings"),
    (["a"], r"constant 0 \(@s\): the constant has 1 strings, but str\[2\] needs 2"),
    (["a", 3], r"constant 0 \(@s\): element 1 of the constant is a int, not a string"),
    (["a", b"b"], r"element 1 of the constant is a bin"),
])
def test_bytecode_malformed_string_data(data, message):
    with pytest.raises(MalformedError, match=message):
        decode(_tampered(data))


def test_bytecode_string_limits():
    data = encode(_module(S("x" * 100, "y" * 100)))
    with pytest.raises(ResourceExhausted, match="max_constant_bytes"):
        decode(data, Limits(max_constant_bytes=150))
    with pytest.raises(ResourceExhausted):
        decode(data, Limits(max_string_len=50))
    decode(data, Limits(max_constant_bytes=216))


def test_encoder_refuses_non_strings():
    with pytest.raises(InvalidError, match="element 1 is a bytes"):
        encode(_module(S("a", b"b")))
    with pytest.raises(InvalidError, match="surrogate"):
        encode(_module(S("\ud800")))


# ---- text --------------------------------------------------------------------------------------

def test_text_round_trip_with_escapes():
    text = ('module m\n\nconst @s : str[2, 2] = [["tab\\there", "q\\"\\\\"], ["\\n", "\\u{1f600}é"]]\n'
            'const @f : str[3] = ""\n\n'
            'func @main() -> str[2] {\n  %c = const ["a", "\\u{0}"] : str[2]\n  ret %c\n}\n')
    m = assembler.assemble(text, "t.dlasm")
    same(m.constants["s"].value, S("tab\there", 'q"\\', "\n", "\U0001f600é", shape=(2, 2)))
    same(m.constants["f"].value, S("", "", ""))
    printed = assembler.disassemble_module(m, debug=False)
    again = assembler.assemble(printed, "t2.dlasm")
    assert assembler.disassemble_module(again, debug=False) == printed
    assert encode(again, debug=False) == encode(m, debug=False)
    (c,), _ = run(text, jit="off")
    same(c, S("a", "\0"))


@pytest.mark.parametrize("literal, message", [
    ('[1, "a"]', r"t\.dlasm:1:22: error: 1 is not a str literal"),
    ('["a", "b', r"t\.dlasm:1:27: error: unterminated string"),
    ('["\\q", "b"]', r"t\.dlasm:1:23: error: unknown escape"),
])
def test_text_errors_point_at_the_literal(literal, message):
    with pytest.raises(MalformedError, match=message):
        assembler.assemble(f"const @s : str[2] = {literal}\n", "t.dlasm")
    with pytest.raises(MalformedError, match=r"t\.dlasm:1:20: error: \"a\" is not a f32 literal"):
        assembler.assemble('const @s : f32[] = "a"\n', "t.dlasm")


def test_npy_file_of_unicode_is_a_str_constant(tmp_path):
    np.save(tmp_path / "w.npy", np.array(["a", "bc"]))
    (tmp_path / "p.dlasm").write_text('const @w : str[2] = file "w.npy"\n'
                                      'func @main() -> str[2] {\n  ret @w\n}\n')
    m = assembler.assemble_file(str(tmp_path / "p.dlasm"))
    same(m.constants["w"].value, S("a", "bc"))


# ---- ONNX --------------------------------------------------------------------------------------

ONNX_CASES = (r"^test_(strnorm|string_(concat|split)|regex_full_match|equal_string|"
              r"ai_onnx_ml_label_encoder)")


def test_onnx_string_node_tests_pass():
    pytest.importorskip("onnx")
    from frontends.onnx.conformance import load_cases, run_case
    cases = load_cases(ONNX_CASES)
    assert len(cases) >= 26
    failed = [(r.name, r.reason) for r in map(run_case, cases) if r.status != "passed"]
    assert not failed


def test_onnx_string_initializer_constant_and_cast():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    from frontends.onnx import import_onnx
    words = numpy_helper.from_array(np.array([b"x", "é".encode()], dtype=object), "words")
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["sep"], value_strings=["-"]),
         helper.make_node("StringConcat", ["words", "sep"], ["joined"]),
         helper.make_node("Cast", ["n"], ["n_text"], to=TensorProto.STRING),
         helper.make_node("Cast", ["n_text"], ["n_back"], to=TensorProto.FLOAT),
         helper.make_node("StringConcat", ["joined", "n_text"], ["out"])],
        "g", [helper.make_tensor_value_info("n", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("out", TensorProto.STRING, [2]),
         helper.make_tensor_value_info("n_back", TensorProto.FLOAT, [2])], [words])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    onnx.checker.check_model(model)
    out, back = dlvmrt.VM(import_onnx(model), jit="off").run(
        "main", np.array([0.5, 2], np.float32))
    same(out, S("x-0.5", "é-2.0"))
    same(back, np.array([0.5, 2], np.float32))


def test_onnx_bad_regex_fails_the_import():
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from frontends.onnx import import_onnx
    from frontends.onnx.errors import OnnxImportError
    graph = helper.make_graph(
        [helper.make_node("RegexFullMatch", ["x"], ["y"], pattern="(a")], "g",
        [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
        [helper.make_tensor_value_info("y", TensorProto.BOOL, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    with pytest.raises(OnnxImportError, match="Python's re can compile"):
        import_onnx(model)


def test_onnx_tfidf_vectorizer_with_a_string_pool():
    # pool_strings: the words get ids through a label_encoder, the n-grams count as over
    # integers; against onnx's reference evaluator, words outside the pool and 2-grams with a skip
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    from frontends.onnx import import_onnx
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], mode="TFIDF", min_gram_length=1,
                            max_gram_length=2, max_skip_count=1,
                            pool_strings=["the", "cat", "sat", "the", "cat", "cat", "sat"],
                            ngram_counts=[0, 3], ngram_indexes=[0, 1, 2, 3, 4],
                            weights=[1.0, 2.0, 3.0, 4.0, 5.0])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.STRING, [2, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    x = S("the", "cat", "sat", "on", "the", "cat", "a", "cat", "x", "sat", "dög", "the", shape=(2, 6))
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    (got,) = dlvmrt.VM(import_onnx(model.SerializeToString())).run("main", x)
    np.testing.assert_array_equal(got, want)
    assert want[0, 3] == 8 and want[1, 3] == 0        # "the cat" twice; "cat x sat" skips one
