"""The .dlbc codec: exact round trips, determinism, and the errors of bad headers and sections."""
from __future__ import annotations

import math
import struct
from pathlib import Path

import msgpack
import numpy as np
import pytest

from isa import (
    OPS,
    DType,
    Function,
    Imm,
    Instr,
    MalformedError,
    Module,
    ResourceExhausted,
    SourceLoc,
    TensorType,
    verify_module,
)
from isa.builder import ModuleBuilder
from isa.bytecode import MAGIC, VERSION, Limits, decode, encode
from isa.module import Block, Constant, ConstRef, Param, Reg
from isa.ops import AttrKind

EXAMPLES = Path("/work/shared/examples")


# ---- modules to round-trip -------------------------------------------------------------------

def mlp() -> Module:
    mb = ModuleBuilder("mlp")
    w1 = mb.constant("w1", np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8))
    b1 = mb.constant("b1", np.arange(8, dtype=np.float32) / 10)
    f = mb.function("main", [("x", "f32[N, 4]")], ["f32[N, 8]"])
    h = f.matmul(f.arg("x"), w1)
    h = f.add(h, b1)
    h = f.relu(h, result_type="f32[N, 8]")
    f.ret(f.softmax(h, axis=-1))
    return mb.finish()


def loop() -> Module:
    mb = ModuleBuilder("loop")
    f = mb.function("main", [("n", "i64[]")], ["i64[]"])
    f.const(0, "i64[]", into="i")
    f.const(0, "i64[]", into="acc")
    f.jmp("head")
    f.label("head")
    c = f.lt(Reg("i"), f.arg("n"))
    f.br(c, "body", "done")
    f.label("body")
    f.add(Reg("acc"), Reg("i"), into="acc")
    f.add(Reg("i"), 1, into="i")
    f.jmp("head")
    f.label("done")
    f.ret(Reg("acc"))
    return mb.finish()


def calls() -> Module:
    mb = ModuleBuilder("calls")
    g = mb.function("affine", [("x", "f32[N, 3]"), ("s", "f32[]")], ["f32[N, 3]", "f32[]"])
    y = g.mul(g.arg("x"), g.arg("s"))
    y = g.add(y, 1.5)
    g.ret(y, g.reduce_max(y, axes=[0, 1]))
    f = mb.function("main", [("x", "f32[N, 3]")], ["f32[N, 3]"])
    two = f.const(2.0, "f32[]")
    y, m = f.call("affine", f.arg("x"), two, n_results=2)
    f.assert_(f.gt(m, -1e30), "max is finite \u2713")
    f.ret(f.sigmoid(y))
    return mb.finish()


def every_dtype() -> Module:
    """Constants of every dtype, plus non-contiguous, 0-d and empty inputs."""
    mb = ModuleBuilder("dtypes")
    rng = np.random.default_rng(1)
    for d in DType:
        values = rng.standard_normal((2, 3)) * 50
        # str holds text: the numbers as strings (an object array of str)
        mb.constant(f"c_{d.text}", values.astype(str).astype(object) if d.is_str else values.astype(d.np))
    m = mb.module
    m.constants["transposed"] = Constant("transposed", TensorType(DType.I32, (3, 2)),
                                         np.arange(6, dtype=np.int32).reshape(2, 3).T)
    m.constants["scalar"] = Constant("scalar", TensorType(DType.F64, ()), np.array(math.pi))
    m.constants["empty"] = Constant("empty", TensorType(DType.I8, (0, 4)), np.zeros((0, 4), np.int8))
    f = mb.function("main", [], ["i32[3, 2]"])
    f.ret(ConstRef("transposed"))
    return mb.finish()


SAMPLE_ATTR = {
    AttrKind.INT: -1, AttrKind.INTS: [1, 0, -(1 << 70)], AttrKind.FLOAT: 0.25, AttrKind.BOOL: True,
    AttrKind.DTYPE: DType.F16, AttrKind.STR: 'say "hi"\n', AttrKind.SHAPE: [2, "N", -1, 1 << 65],
    AttrKind.TYPE: TensorType(DType.F32, ("N", None, 3)), AttrKind.LABEL: "entry",
    AttrKind.FUNC: "main", AttrKind.TENSOR: np.arange(6, dtype=np.float16).reshape(2, 3),
}


def one_op(name: str, attrs: str) -> Module:
    """One instruction of `name` (not meant to verify): attributes absent, given explicitly as
    their defaults, or set to a sample of their kind."""
    op = OPS[name]
    lo, hi = op.arity
    n = max(lo, 1) if hi is None or hi >= 1 else lo
    operands = [Reg(f"a{k}") for k in range(n)]
    results = [f"r{k}" for k in range(op.n_results if op.n_results is not None else 2)]
    if attrs == "absent":
        given = {}
    elif attrs == "defaults":
        given = {a.name: a.default for a in op.attrs if not a.required}
    else:
        given = {a.name: SAMPLE_ATTR[a.kind] for a in op.attrs}
    f = Function("main", [Param(o.name, TensorType(DType.F32, (4,))) for o in operands],
                 [TensorType(DType.F32, (4,))])
    f.blocks.append(Block("entry", [Instr(name, results, operands, given),
                                    Instr("ret", [], [Reg(results[0])] if results else [])]))
    return Module(f"op_{name}", functions={"main": f})


def immediates() -> Module:
    values = [True, False, 0, -1, 1 << 63, (1 << 64) - 1, 1 << 64, -(1 << 63), -(1 << 63) - 1,
              3 ** 100, -(7 ** 90), 0.0, -0.0, 1e308, 5e-324, float("inf"), float("-inf")]
    f = Function("main", [Param("x", TensorType(DType.F64, ()))], [])
    f.blocks.append(Block("entry", [Instr("add", [f"r{k}"], [Reg("x"), Imm(v)])
                                    for k, v in enumerate(values)] + [Instr("ret")]))
    return Module("imms", functions={"main": f})


def with_locs(m: Module, source: str = "prog.dlasm") -> Module:
    """Give every constant, function and instruction a distinct location in `source`."""
    m.source = source
    line = 1
    for c in m.constants.values():
        c.loc = SourceLoc(source, line, 3)
        line += 1
    for f in m.functions.values():
        f.loc = SourceLoc(source, line, 1)
        for b in f.blocks:
            for ins in b.instrs:
                line += 1
                ins.loc = SourceLoc(source, line, 2 + line % 5)
    return m


def all_locs(m: Module) -> list:
    out = [c.loc for c in m.constants.values()]
    for f in m.functions.values():
        out.append(f.loc)
        out.extend(ins.loc for b in f.blocks for ins in b.instrs)
    return out


BUILT = {"mlp": mlp, "loop": loop, "calls": calls, "every_dtype": every_dtype,
         "immediates": immediates}


# ---- round trips -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", BUILT)
@pytest.mark.parametrize("debug", [True, False])
def test_round_trip_built(name, debug):
    m = with_locs(BUILT[name]())
    back = decode(encode(m, debug=debug))
    assert back == m
    if debug:
        assert back.source == "prog.dlasm"
        assert all_locs(back) == all_locs(m)
    else:
        assert back.source is None
        assert all(loc is None for loc in all_locs(back))


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("attrs", ["absent", "defaults", "samples"])
def test_round_trip_every_op(name, attrs):
    m = one_op(name, attrs)
    back = decode(encode(m))
    assert back == m
    ins = back.functions["main"].blocks[0].instrs[0]
    assert list(ins.attrs) == list(m.functions["main"].blocks[0].instrs[0].attrs)
    for k, v in ins.attrs.items():
        assert type(v) is type(m.functions["main"].blocks[0].instrs[0].attrs[k])


def test_verified_modules_still_verify():
    for make in (mlp, loop, calls, every_dtype):
        verify_module(decode(encode(make())))


def test_immediates_keep_python_type_and_value():
    m = immediates()
    m.functions["main"].blocks[0].instrs.insert(0, Instr("add", ["nan"], [Reg("x"), Imm(math.nan)]))
    back = decode(encode(m))
    got = [ins.operands[1].value for ins in back.functions["main"].blocks[0].instrs[:-1]]
    want = [ins.operands[1].value for ins in m.functions["main"].blocks[0].instrs[:-1]]
    assert math.isnan(got[0]) and type(got[0]) is float
    for g, w in zip(got[1:], want[1:]):
        assert type(g) is type(w) and g == w
        if isinstance(w, float):
            assert math.copysign(1, g) == math.copysign(1, w)


def test_constants_decode_native_contiguous_and_writable():
    back = decode(encode(every_dtype()))
    for c in back.constants.values():
        assert c.value.dtype == c.type.dtype.np and c.value.flags.c_contiguous
        assert c.value.flags.writeable
    assert back.constants["transposed"].value.tolist() == [[0, 3], [1, 4], [2, 5]]


def test_big_endian_input_is_stored_little_endian():
    m = Module("be")
    for name, dt in (("f", ">f4"), ("i", ">i8"), ("h", ">f2")):
        d = {"f": DType.F32, "i": DType.I64, "h": DType.F16}[name]
        m.constants[name] = Constant(name, TensorType(d, (2, 3)), np.arange(6, dtype=dt).reshape(2, 3))
    data = encode(m)
    assert np.arange(6, dtype="<f4").tobytes() in data
    back = decode(data)
    verify_module(back)
    for c in back.constants.values():
        assert c.value.dtype == c.type.dtype.np
        assert c.value.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_float_attr_keeps_int_and_nan():
    m = one_op("layer_norm", "absent")
    ins = m.functions["main"].blocks[0].instrs[0]
    ins.attrs["epsilon"] = 1
    assert type(decode(encode(m)).functions["main"].blocks[0].instrs[0].attrs["epsilon"]) is int
    ins.attrs["epsilon"] = math.nan
    assert math.isnan(decode(encode(m)).functions["main"].blocks[0].instrs[0].attrs["epsilon"])


def test_source_falls_back_to_first_location():
    m = with_locs(mlp())
    m.source = None
    assert decode(encode(m)).source == "prog.dlasm"
    assert decode(encode(mlp())).source is None


def _assemble_examples():
    assembler = pytest.importorskip("assembler")
    assemble_file = getattr(assembler, "assemble_file", None)
    if assemble_file is None:
        pytest.skip("assembler.assemble_file is not written yet")
    return assemble_file


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.dlasm")), ids=lambda p: p.name)
def test_round_trip_examples(path):
    m = _assemble_examples()(str(path))
    back = decode(encode(m))
    assert back == m
    assert all_locs(back) == all_locs(m)


# ---- determinism -----------------------------------------------------------------------------

def test_deterministic():
    for make in (*BUILT.values(), lambda: one_op("conv2d", "samples")):
        assert encode(make()) == encode(make())
    m = calls()
    assert encode(m) == encode(decode(encode(m)))


def test_header_layout():
    data = encode(mlp())
    assert data[:4] == MAGIC
    assert struct.unpack_from("<HH", data, 4) == VERSION


# ---- header errors ---------------------------------------------------------------------------

def _err(data: bytes, kind=MalformedError, limits=None) -> str:
    with pytest.raises(kind) as e:
        decode(data, limits)
    return str(e.value)


def test_bad_magic():
    msg = _err(b"PK\x03\x04" + encode(mlp())[4:])
    assert "magic" in msg and "b'PK\\x03\\x04'" in msg and "DLBC" in msg


def test_newer_major_version():
    data = encode(mlp())
    msg = _err(data[:4] + struct.pack("<HH", VERSION[0] + 1, 0) + data[8:])
    assert f"version {VERSION[0] + 1}.0" in msg and f"{VERSION[0]}.{VERSION[1]}" in msg


def test_newer_minor_version_is_read():
    data = encode(mlp())
    assert decode(data[:4] + struct.pack("<HH", VERSION[0], VERSION[1] + 1) + data[8:]) == mlp()


@pytest.mark.parametrize("n", [0, 2, 4, 7])
def test_truncated_header(n):
    msg = _err(encode(mlp())[:n])
    assert "truncated header" in msg and f"{n} bytes" in msg


def test_truncated_body_and_trailing_data():
    data = encode(mlp())
    assert "truncated" in _err(data[:-3])
    assert "no sections" in _err(data[:8])
    assert "trailing" in _err(data + b"\x00")


def test_too_big_file():
    assert "max_total_bytes" in _err(encode(mlp()), ResourceExhausted, Limits(max_total_bytes=64))


# ---- hand-crafted bad sections ---------------------------------------------------------------

def body_of(m: Module, debug: bool = True) -> dict:
    return msgpack.unpackb(encode(m, debug)[8:], raw=False)


def pack(body) -> bytes:
    return MAGIC + struct.pack("<HH", *VERSION) + msgpack.packb(body, use_bin_type=True)


def first_instr(body: dict) -> list:
    return body["functions"][0][3][0][1][0]


def test_string_index_out_of_range():
    body = body_of(loop())
    n = len(body["strings"])
    first_instr(body)[1][0] = 900
    msg = _err(pack(body))
    assert f"string 900 of {n}" in msg
    assert "function 0 (@main), block 0, instruction 0 (const): result 0" in msg


def test_operand_string_index_message():
    body = body_of(mlp())
    first_instr(body)[2][1][1] = 900
    assert "instruction 0 (matmul): operand 1 refers to string 900 of" in _err(pack(body))


def test_unknown_opcode():
    body = body_of(mlp())
    first_instr(body)[0] = 250
    assert "unknown opcode 250" in _err(pack(body))


def test_unknown_operand_tag():
    body = body_of(mlp())
    first_instr(body)[2][0][0] = 9
    assert "operand 0 has an unknown tag 9" in _err(pack(body))


def test_wrong_attr_kind():
    body = body_of(mlp())
    soft = body["functions"][0][3][0][1][3]
    assert soft[3] == [[-1]]                 # softmax {axis = -1}
    soft[3] = [["minus one"]]
    assert "attribute 'axis' must be an int, got string" in _err(pack(body))
    soft[3] = [[-1], [2]]
    assert "2 attribute slots, but softmax has 1" in _err(pack(body))


def test_bad_dtype_code():
    body = body_of(mlp())
    body["constants"][0][1] = 99
    assert "unknown dtype code 99" in _err(pack(body))


def test_constant_byte_size_mismatch():
    body = body_of(mlp())
    body["constants"][1][3] = body["constants"][1][3][:-4]
    msg = _err(pack(body))
    assert "constant 1 (@b1)" in msg and "28 data bytes" in msg and "needs 32" in msg


def test_huge_declared_shape_is_exhausted_before_allocating():
    body = body_of(mlp())
    body["constants"][0][2] = [1 << 40, 1 << 40]
    msg = _err(pack(body), ResourceExhausted)
    assert "max_constant_elements" in msg and str(1 << 80) in msg
    body["constants"][0][2] = [1 << 20, 1 << 7]
    assert "max_constant_bytes" in _err(pack(body), ResourceExhausted,
                                        Limits(max_constant_bytes=1 << 20))


def test_rank_and_negative_dims():
    body = body_of(mlp())
    body["constants"][0][2] = [1] * 40
    assert "max_rank" in _err(pack(body), ResourceExhausted)
    body["constants"][0][2] = [-4, -8]
    assert "negative" in _err(pack(body))


def test_bad_names():
    body = body_of(mlp())
    body["strings"][body["constants"][0][0]] = ""
    assert "is not a valid name" in _err(pack(body))
    body = body_of(mlp())
    body["strings"][body["constants"][0][0]] = "w 1"
    assert "'w 1' is not a valid name" in _err(pack(body))


def test_duplicate_names():
    body = body_of(mlp())
    body["constants"][1][0] = body["constants"][0][0]
    assert "@w1 is defined twice" in _err(pack(body))


def test_bool_constant_bytes():
    mb = ModuleBuilder("b")
    mb.constant("m", np.array([True, False]))
    body = body_of(mb.module)
    body["constants"][0][3] = b"\x01\x07"
    assert "other than 0 or 1" in _err(pack(body))


def test_section_shape_errors():
    body = body_of(mlp())
    del body["functions"]
    assert "section 'functions' is missing" in _err(pack(body))
    body = body_of(mlp())
    body["extra"] = 1
    assert "unknown section 'extra'" in _err(pack(body))
    assert "map of sections, got array" in _err(pack([1, 2]))
    body = body_of(mlp())
    body["functions"][0] = [1, 2]
    assert "function 0: a function must have 4 fields, got 2" in _err(pack(body))


def test_debug_section_errors():
    body = body_of(with_locs(mlp()))
    body["debug"]["constants"].pop()
    assert "constant locations must have 2 fields, got 1" in _err(pack(body))
    body = body_of(with_locs(mlp()))
    body["debug"]["source"] = None
    assert "names no source file" in _err(pack(body))


def test_msgpack_level_limits_and_ext():
    body = body_of(mlp())
    body["strings"].append("x" * 100)
    assert "max_str_len" in _err(pack(body), ResourceExhausted, Limits(max_string_len=50))
    ext = MAGIC + struct.pack("<HH", *VERSION) + msgpack.packb(msgpack.ExtType(5, b"abc"))
    assert "ext type" in _err(ext)
    empty_ext = MAGIC + struct.pack("<HH", *VERSION) + b"\xc7\x00\x05"
    assert "ext type 5" in _err(empty_ext)
    deep = MAGIC + struct.pack("<HH", *VERSION) + b"\x91" * 40 + b"\xc0"
    assert "max_depth" in _err(deep, ResourceExhausted)
    assert "valid msgpack" in _err(MAGIC + struct.pack("<HH", *VERSION) + b"\xc1")


def test_wide_int_limit():
    m = immediates()
    assert "max_int_bytes" in _err(encode(m), ResourceExhausted, Limits(max_int_bytes=8))


def test_format_depth_fits_the_default_limit():
    """The deepest field (a named dim of a TYPE attribute) sits at depth 12, as the spec says."""
    for name in OPS:
        decode(encode(with_locs(one_op(name, "samples"))), Limits(max_depth=12))
    with pytest.raises(ResourceExhausted, match="max_depth"):
        decode(encode(one_op("const", "samples")), Limits(max_depth=11))


# ---- modules the format cannot carry -----------------------------------------------------------

def _encode_err(m: Module) -> str:
    from isa import InvalidError
    with pytest.raises(InvalidError) as e:
        encode(m)
    return str(e.value)


def test_encode_rejects_what_it_cannot_write():
    m = one_op("softmax", "absent")
    ins = m.functions["main"].blocks[0].instrs[0]
    ins.attrs = {"axes": [0]}
    assert "softmax has no attribute 'axes'" in _encode_err(m)
    ins.attrs = {"axis": "last"}
    assert "attribute 'axis' must be an int" in _encode_err(m)
    ins.attrs = {"axis": None}
    assert "'axis' is None" in _encode_err(m)
    ins.attrs, ins.op = {}, "no_such_op"
    assert "unknown op 'no_such_op'" in _encode_err(m)
    m = mlp()
    m.constants["w1"].value = m.constants["w1"].value.astype(np.float64)
    assert "constant @w1 holds float64, not f32" in _encode_err(m)
    m = with_locs(mlp())
    m.constants["b1"].loc = SourceLoc("prog.dlasm", -1, 0)
    assert "outside" in _encode_err(m)


def test_decode_accepts_bytearray_and_memoryview():
    data = encode(mlp())
    assert decode(bytearray(data)) == mlp() == decode(memoryview(data))
    assert "expected bytes" in _err("DLBC")
