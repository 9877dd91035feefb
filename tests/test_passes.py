"""The module optimizer: each pass on small builder-made modules (the structure it leaves) and
the same results before and after, bit for bit and traps included."""
from __future__ import annotations

import copy

import numpy as np
import pytest
from test_passes_support import count_instrs, ops_of, random_program, run_vm, same_outcome

from isa.builder import ModuleBuilder
from isa.errors import InternalError
from isa.module import ConstRef, Module, Reg
from jit.passes import DEFAULT_PIPELINE, PASSES, describe, optimize

X4 = np.array([1.5, -0.0, 0.0, -2.0], np.float32)


def check_same(before: Module, after: Module, *args) -> None:
    assert same_outcome(run_vm(before, *args), run_vm(after, *args))


def only(module: Module, *passes: str) -> Module:
    out = optimize(module, list(passes))
    return out


# ---- the driver ------------------------------------------------------------------------------

def _small() -> Module:
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", "f32[4]")], ["f32[4]"])
    a = f.const(2.0, "f32[]")
    b = f.const(3.0, "f32[]")
    c = f.add(a, b)
    f.ret(f.mul(f.arg("x"), c))
    return mb.finish()


def test_optimize_does_not_mutate_its_input():
    m = _small()
    before = copy.deepcopy(m)
    out = optimize(m)
    assert m == before and out is not m and out != m


def test_unknown_pass_is_rejected_and_describe_names_every_pass():
    with pytest.raises(ValueError, match="unknown pass"):
        optimize(_small(), ["fold", "nope"])
    text = describe()
    assert all(name in text for name in PASSES) and set(DEFAULT_PIPELINE) <= set(PASSES)


def test_a_chosen_pass_list_runs_only_those_passes():
    m = _small()
    folded = only(m, "fold")
    assert ops_of(folded) == ["const", "const", "const", "mul", "ret"]   # dce did not run
    assert ops_of(only(folded, "dce")) == ["const", "mul", "ret"]


# ---- constant folding ------------------------------------------------------------------------

def test_fold_scalar_becomes_a_fill_literal():
    m = _small()
    out = optimize(m)
    assert ops_of(out) == ["const", "mul", "ret"]
    c = out.functions["main"].blocks[0].instrs[0]
    assert c.attrs["value"].ndim == 0 and float(c.attrs["value"]) == 5.0
    check_same(m, out, X4)


def test_fold_small_and_large_results():
    mb = ModuleBuilder("m")
    small = mb.constant("s", np.arange(6, dtype=np.float32).reshape(2, 3))
    big = mb.constant("b", np.arange(100, dtype=np.int32))
    f = mb.function("main", [("x", "f32[2, 3]")], ["f32[2, 3]", "i32[100]"])
    y = f.mul(small, 2.0)
    z = f.add(big, 1)
    f.ret(f.add(f.arg("x"), y), z)
    m = mb.finish()
    out = optimize(m)
    instrs = out.functions["main"].blocks[0].instrs
    assert instrs[0].op == "const" and instrs[0].attrs["value"].shape == (2, 3)
    assert "fold0" in out.constants and out.constants["fold0"].value[99] == 100
    assert "s" not in out.constants and "b" not in out.constants      # no longer read
    assert any(ConstRef("fold0") in i.operands for i in instrs)
    check_same(m, out, np.ones((2, 3), np.float32))


def test_fold_takes_a_large_weights_transpose_but_not_its_broadcast():
    # a result no larger than an operand folds at any size (the module holds as many elements
    # already): the product then reads a constant the GEMM packs once. A larger result (a
    # broadcast) stays computed at run time
    from jit.passes.constfold import FOLD_MAX_ELEMENTS
    rng = np.random.default_rng(0)
    w = rng.standard_normal((FOLD_MAX_ELEMENTS // 512 + 8, 512)).astype(np.float32)
    mb = ModuleBuilder("head")
    f = mb.function("main", [("x", "f32[N, 512]")], ["f32[N, ?]", "f32[2, 600, 1800]"])
    wc = mb.constant("w", w)
    row = mb.constant("r", rng.standard_normal((1, 1800)).astype(np.float32))
    f.ret(f.matmul(f.arg("x"), f.transpose(wc, perm=[1, 0])),
          f.broadcast_to(row, shape=[2, 600, 1800]))
    m = mb.finish()
    out = optimize(m)
    ops = [i.op for i in out.functions["main"].blocks[0].instrs]
    assert "transpose" not in ops and "broadcast_to" in ops
    # a product of constants (expensive work) keeps the size limit, though its result is no
    # larger than an operand
    mb = ModuleBuilder("prod")
    f = mb.function("main", [], [f"f32[{w.shape[0]}, 512]"])
    f.ret(f.matmul(mb.constant("a", w), mb.constant("b", w[:512, :].T.copy())))
    assert "matmul" in [i.op for i in optimize(mb.finish()).functions["main"].blocks[0].instrs]
    assert "w" not in out.constants
    check_same(m, out, rng.standard_normal((3, 512)).astype(np.float32))


def test_fold_leaves_a_trapping_instruction_to_trap_at_run_time():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", "i32[]")], ["i32[]"])
    zero = f.const(0, "i32[]")
    q = f.div(7, zero)                     # integer division by zero: a trap
    f.div(f.arg("x"), zero)                # unused, but it would trap: it stays
    f.ret(f.add(f.arg("x"), q))
    m = mb.finish()
    out = optimize(m)
    assert ops_of(out).count("div") == 2
    assert run_vm(out, np.int32(3))[0] == "trap"
    check_same(m, out, np.int32(3))


def test_known_branch_becomes_jump_and_dead_block_goes():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", "f32[4]")], ["f32[4]"])
    two = f.const(2.0, "f32[]")
    c = f.gt(two, 1.0)
    f.br(c, "yes", "no")
    f.label("yes")
    f.ret(f.exp(f.arg("x")))
    f.label("no")
    f.ret(f.neg(f.arg("x")))
    m = mb.finish()
    out = optimize(m)
    labels = [b.label for b in out.functions["main"].blocks]
    assert labels == ["entry", "yes"] and ops_of(out) == ["jmp", "exp", "ret"]
    check_same(m, out, X4)


def test_assert_known_true_goes_known_false_stays():
    for flag, kept in ((True, False), (False, True)):
        mb = ModuleBuilder("m")
        f = mb.function("main", [("x", "f32[4]")], ["f32[4]"])
        f.assert_(f.const(flag, "bool[3]"), "must hold")
        f.ret(f.arg("x"))
        m = mb.finish()
        out = optimize(m)
        assert ("assert" in ops_of(out)) == kept
        check_same(m, out, X4)


def test_fold_respects_loops_and_reassignment():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("n", "i64[]")], ["i64[]"])
    f.const(0, "i64[]", into="i")
    f.const(1, "i64[]", into="p")
    f.jmp("head")
    f.label("head")
    c = f.lt(f.mov(Reg("i"), into="j"), f.arg("n"))
    f.br(c, "body", "done")
    f.label("body")
    f.mul(Reg("p"), 2, into="p")
    f.add(Reg("i"), 1, into="i")
    f.jmp("head")
    f.label("done")
    f.ret(Reg("p"))
    m = mb.finish()
    out = optimize(m)
    assert "br" in ops_of(out) and "mul" in ops_of(out)      # the counter is not a constant
    for n in (0, 1, 5):
        check_same(m, out, np.int64(n))


# ---- dead-code elimination -------------------------------------------------------------------

def test_dce_removes_unused_trap_free_work_only():
    mb = ModuleBuilder("m")
    g = mb.function("g", [("a", "f32[N]")], ["f32[N]"])
    g.ret(g.arg("a"))
    f = mb.function("main", [("x", "f32[N]"), ("y", "f32[M]"), ("k", "i32[]")], ["f32[N]"])
    x = f.arg("x")
    f.exp(x)                                   # unused, cannot trap: removed
    f.add(x, f.arg("y"))                       # N and M may not broadcast: stays
    f.div(f.arg("k"), f.arg("k"))              # integer division may trap: stays
    f.div(x, x)                                # float division cannot trap: removed
    f.reduce_max(x)                            # empty axis traps: stays
    f.call("g", x)                             # calls stay
    f.ret(x)
    m = mb.finish()
    out = only(m, "dce")
    assert ops_of(out) == ["add", "div", "reduce_max", "call", "ret"]
    x4, y4 = X4, np.ones(4, np.float32)
    check_same(m, out, x4, y4, np.int32(0))
    check_same(m, out, x4, np.ones(3, np.float32), np.int32(1))
    check_same(m, out, np.zeros(0, np.float32), y4, np.int32(2))


RECURRENT = """module rnn
func @main(%x: f32[T, B, 8], %w: f32[8, 8]) -> f32[B, 8] {
entry:
  %h = const 0.0 : f32[B, 8]
  %ys = const 0.0 : f32[0, B, 8]
  %i = const 0 : i64[]
  %n = shape_of %x
  %t = gather %n, 0 {axis = 0}
  jmp head
head:
  %more = lt %i, %t
  br %more, body, done
body:
  %xt = gather %x, %i {axis = 0}
  %hw = matmul %h, %w
  %h = add %xt, %hw
  %h = tanh %h
  %h1 = expand_dims %h {axes = [0]}
  %ys = concat %ys, %h1 {axis = 0}
  %STEP_EXTRA
  %i = add %i, 1
  jmp head
done:
  %RET
}
"""


@pytest.mark.parametrize("extra,ret,gone", [
    # the appended outputs feed only themselves: the whole chain goes
    ("i2 = mov %i", "ret %h", True),
    # read after the loop: they stay
    ("i2 = mov %i", "%last = reduce_sum %ys {axes = [0]}\n  ret %last", False),
    # a self-feeding chain through something that may trap stays (the trap is observable)
    ("y1 = gather %ys, 0 {axis = 0}\n  %ys = expand_dims %y1 {axes = [0]}", "ret %h", False),
])
def test_dce_drops_loop_carried_values_that_feed_only_themselves(extra, ret, gone):
    import assembler
    m = assembler.parse(RECURRENT.replace("%STEP_EXTRA", "%" + extra).replace("%RET", ret))
    out = only(m, "dce")
    assert ("concat" not in ops_of(out)) == gone, ops_of(out)
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((5, 3, 8)).astype(np.float32), rng.standard_normal((8, 8)).astype(np.float32)
    check_same(m, out, x, w)


def test_dce_liveness_across_blocks_with_reassignment():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", "f32[4]")], ["f32[4]"])
    x = f.arg("x")
    f.exp(x, into="r")                         # overwritten on every path before a read: dead
    flag = f.gt(f.reduce_sum(x), 0.0)
    f.br(flag, "a", "b")
    f.label("a")
    f.neg(x, into="r")
    f.jmp("end")
    f.label("b")
    f.tanh(x, into="r")
    f.jmp("end")
    f.label("end")
    f.ret(Reg("r"))
    m = mb.finish()
    out = only(m, "dce")
    assert "exp" not in ops_of(out) and {"neg", "tanh"} <= set(ops_of(out))
    check_same(m, out, X4)
    check_same(m, out, -X4)


# ---- common-subexpression elimination --------------------------------------------------------

def test_cse_within_a_block_and_reassignment_kills():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", "f32[4]"), ("y", "f32[4]")], ["f32[4]"])
    x, y = f.arg("x"), f.arg("y")
    a = f.add(x, y)
    b = f.add(x, y)                            # same as a
    s = f.mul(a, b)
    f.neg(x, into="x")
    c = f.add(x, y)                            # x changed: not the same
    f.ret(f.add(s, c))
    m = mb.finish()
    out = optimize(m)
    assert ops_of(out).count("add") == 3 and "mov" not in ops_of(out)
    check_same(m, out, X4, X4[::-1].copy())


def test_cse_down_dominator_paths_but_not_across_a_join():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", "f32[4]")], ["f32[4]"])
    x = f.arg("x")
    e = f.exp(x)
    flag = f.gt(f.reduce_sum(x), 0.0)
    f.br(flag, "a", "b")
    f.label("a")
    f.exp(x, into="r")                         # available from entry: reused
    f.tanh(x, into="t")
    f.jmp("end")
    f.label("b")
    f.neg(e, into="r")
    f.tanh(e, into="t")
    f.jmp("end")
    f.label("end")
    t2 = f.tanh(x)                             # only one path computed tanh(x): recomputed
    f.ret(f.add(f.add(Reg("r"), t2), Reg("t")))
    m = mb.finish()
    out = optimize(m)
    assert ops_of(out).count("exp") == 1 and ops_of(out).count("tanh") == 3
    check_same(m, out, X4)
    check_same(m, out, -X4)


def test_cse_tells_signed_zeros_apart():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", "f32[4]")], ["f32[4]", "f32[4]"])
    a = f.sub(f.arg("x"), 0.0)
    b = f.sub(f.arg("x"), -0.0)
    f.ret(a, b)
    m = mb.finish()
    out = only(m, "cse")
    assert "mov" not in ops_of(out)
    check_same(m, out, X4)


# ---- algebraic simplification ----------------------------------------------------------------

def _unary_module(build, in_type="f32[4]", out_type=None) -> Module:
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", in_type)], [out_type or in_type])
    f.ret(build(mb, f, f.arg("x")))
    return mb.finish()


@pytest.mark.parametrize("build, gone", [
    (lambda mb, f, x: f.mul(x, 1.0), True),
    (lambda mb, f, x: f.mul(1.0, x), True),
    (lambda mb, f, x: f.div(x, 1.0), True),
    (lambda mb, f, x: f.pow(x, 1.0), True),
    (lambda mb, f, x: f.sub(x, 0.0), True),
    (lambda mb, f, x: f.add(x, -0.0), True),
    (lambda mb, f, x: f.add(x, 0.0), False),         # -0.0 + 0.0 is +0.0
    (lambda mb, f, x: f.sub(x, -0.0), False),
    (lambda mb, f, x: f.mul(x, 0.0), False),         # NaN * 0 is NaN
    (lambda mb, f, x: f.mul(x, f.const(1.0, "f32[4]")), True),
    (lambda mb, f, x: f.mul(x, mb.constant("one", np.ones((1,), np.float32))), True),
    (lambda mb, f, x: f.neg(f.neg(x)), True),
    (lambda mb, f, x: f.cast(x, to="f32"), True),
    (lambda mb, f, x: f.select(f.const(True, "bool[]"), x, f.exp(x)), True),
    (lambda mb, f, x: f.select(f.const(False, "bool[]"), f.exp(x), x), True),
    (lambda mb, f, x: f.select(f.gt(x, 0.0), x, x), True),
])
def test_simplify_float_identities(build, gone):
    m = _unary_module(build)
    out = optimize(m)
    assert (ops_of(out) == ["ret"]) == gone, ops_of(out)
    check_same(m, out, np.array([np.nan, -0.0, np.inf, 3.0], np.float32))


def test_simplify_keeps_a_broadcast_that_changes_the_shape():
    mb = ModuleBuilder("m")
    ones = mb.constant("ones", np.ones((3, 4), np.float32))
    f = mb.function("main", [("x", "f32[4]")], ["f32[3, 4]"])
    f.ret(f.mul(f.arg("x"), ones))
    m = mb.finish()
    assert ops_of(optimize(m)) == ["mul", "ret"]


def test_simplify_integer_identities():
    for build in (lambda f, x: f.add(x, 0), lambda f, x: f.add(0, x), lambda f, x: f.div(x, 1),
                  lambda f, x: f.pow(x, 1), lambda f, x: f.xor(x, 0), lambda f, x: f.emit("and", [x, -1]),
                  lambda f, x: f.emit("or", [0, x])):
        mb = ModuleBuilder("m")
        f = mb.function("main", [("x", "i32[3]")], ["i32[3]"])
        f.ret(build(f, f.arg("x")))
        m = mb.finish()
        out = optimize(m)
        assert ops_of(out) == ["ret"]
        check_same(m, out, np.array([-2147483648, 0, 7], np.int32))


def test_simplify_transposes_and_reshapes():
    def build(mb, f, x):
        t = f.transpose(f.transpose(x, perm=[1, 2, 0]), perm=[2, 0, 1])     # identity
        u = f.transpose(f.transpose(t, perm=[1, 0, 2]), perm=[0, 2, 1])     # one transpose
        r = f.reshape(f.reshape(u, shape=[6, -1]), shape=[3, 4, 2])
        return f.reshape(r, shape=[3, 4, 2])                                # to its own shape
    m = _unary_module(build, "f32[2, 3, 4]", "f32[3, 4, 2]")
    out = optimize(m)
    assert ops_of(out).count("transpose") == 1 and ops_of(out).count("reshape") <= 2
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    check_same(m, out, x)


def test_simplify_an_outer_product_matmul_is_a_multiply():
    # matmul of [..., M, 1] by [..., 1, N]: a * b (+ 0.0 for floats: the product's sum starts
    # at +0.0), bit for bit: -0.0 products, NaN, infinities, integers that wrap
    import assembler
    src = """module outer
func @main(%a: f32[N, 8, 1], %b: f32[N, 1, 6], %i: i32[3, 1], %j: i32[1, 4], %v: f32[8], \
%w: f32[M, 1, 1], %z: f32[K, 2, 1], %y: f32[L, 1, 3]) -> (f32[N, 8, 6], i32[3, 4], f32[], \
f32[?, 2, 3]) {
entry:
  %p = matmul %a, %b
  %r = matmul %i, %j
  %s = matmul %v, %v
  %t = matmul %z, %y
  ret %p, %r, %s, %t
}
"""
    m = assembler.parse(src)
    out = only(m, "simplify", "dce")
    # the batch dims K and L may not broadcast: that matmul stays (its trap is a matmul's)
    assert ops_of(out).count("matmul") == 2 and ops_of(out).count("mul") == 2
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 8, 1)).astype(np.float32)
    a[0, 0, 0] = -1.0
    b = rng.standard_normal((2, 1, 6)).astype(np.float32)
    b[0, 0, 0], b[1, 0, 1], b[1, 0, 2] = 0.0, np.nan, np.inf
    i = rng.integers(-2**31, 2**31, (3, 1)).astype(np.int32)
    j = rng.integers(-2**31, 2**31, (1, 4)).astype(np.int32)
    v = rng.standard_normal(8).astype(np.float32)
    z, y = np.ones((2, 2, 1), np.float32), np.ones((2, 1, 3), np.float32)
    w = np.ones((1, 1, 1), np.float32)
    check_same(m, out, a, b, i, j, v, w, z, y)
    got = run_vm(out, a, b, i, j, v, w, z, y)
    assert got[0][0, 0, 0] == 0 and not np.signbit(got[0][0, 0, 0])
    # a format with no zero (f8e8m0fnu: "+ 0.0" would be NaN) keeps its matmul
    pytest.importorskip("ml_dtypes")
    narrow = assembler.parse("""module o8
func @main(%a: f8e8m0fnu[3, 1], %b: f8e8m0fnu[1, 4]) -> f8e8m0fnu[3, 4] {
entry:
  %p = matmul %a, %b
  ret %p
}
""")
    assert ops_of(only(narrow, "simplify", "dce")) == ["matmul", "ret"]


def test_simplify_respects_reassignment_between_the_pair():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", "f32[4]")], ["f32[4]"])
    f.neg(f.arg("x"), into="n")
    f.exp(f.arg("x"), into="x")                    # x changes: neg(n) is not the old x
    f.ret(f.add(f.neg(Reg("n")), f.arg("x")))
    m = mb.finish()
    out = optimize(m)
    assert ops_of(out).count("neg") == 2
    check_same(m, out, X4)


# ---- whole pipeline on random programs -------------------------------------------------------

@pytest.mark.parametrize("seed", range(40))
def test_pipeline_preserves_random_programs(seed):
    m, args = random_program(seed)
    out = optimize(m)
    assert count_instrs(out) <= count_instrs(m)
    check_same(m, out, *args)
    check_same(m, out, *(np.full_like(a, v) for a in args for v in [np.nan]))
    for name in PASSES:                        # and each pass alone
        check_same(m, optimize(m, [name]), *args)


def test_broken_pass_output_is_an_internal_error(monkeypatch):
    def breaks(module, table=None):
        module.functions["main"].blocks[0].instrs.pop(0)
        return True
    monkeypatch.setitem(PASSES, "fold", (breaks, "breaks things"))
    with pytest.raises(InternalError, match="fold"):
        optimize(_small(), ["fold"])


def test_the_default_pipeline_names_the_pass_that_broke_its_round(monkeypatch):
    # the pipeline verifies per round (and where a typed pass needs types); a broken module is
    # replayed pass by pass to name the culprit, here one that reads no types
    def breaks(module):
        block = module.functions["main"].blocks[0]
        block.instrs = block.instrs[-1:]        # the return of a value nothing defines now
        return True
    monkeypatch.setitem(PASSES, "copyprop", (breaks, "breaks things"))
    with pytest.raises(InternalError, match="copyprop"):
        optimize(_small())


# ---- from text -------------------------------------------------------------------------------

REDUNDANT = """
module redundant

func @main(%x: f32[N, 4]) -> f32[N, 4] {
entry:
  %one = const 1.0 : f32[]
  %k = const 3.0 : f32[]
  %k = mul %k, 2.0
  %a = mul %x, %one
  %b = tanh %a
  %c = tanh %x
  %d = add %b, %c
  %t = transpose %d {perm = [1, 0]}
  %t = transpose %t {perm = [1, 0]}
  %flag = gt %k, 5.0
  br %flag, good, bad
good:
  %y = mul %t, %k
  ret %y
bad:
  ret %x
}
"""

SIMPLER = """
module redundant

func @main(%x: f32[N, 4]) -> f32[N, 4] {
entry:
  %k = const 6.0 : f32[]
  %b = tanh %x
  %d = add %b, %b
  %t = transpose %d {perm = [1, 0]}
  jmp good
good:
  %y = mul %d, %k
  ret %y
}
"""


def test_pipeline_on_text():
    assembler = pytest.importorskip("assembler")
    m = assembler.assemble(REDUNDANT, "redundant.dlasm")
    out = optimize(m)
    want = assembler.assemble(SIMPLER, "simpler.dlasm")
    # the unused inner transpose stays: DCE proves that only ops on static shapes cannot trap
    assert assembler.disassemble(out, debug=False) == assembler.disassemble(want, debug=False)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    check_same(m, out, x)


# ---- composites and hoisting -----------------------------------------------------------------

BATCH_NORM = """module bn
func @main(%x: {dt}[N, 3, 2, 2], %s: {dt}[3], %b: {dt}[3], %m: {dt}[3], %v: {dt}[{c}]) -> {dt}[N, 3, 2, 2] {{
entry:
  %r = relu %x
  %y = batch_norm %r, %s, %b, %m, %v {{epsilon = 0.001}}
  %z = neg %y
  ret %z
}}
"""


@pytest.mark.parametrize("dt", ["f32", "f64", "f16"])
def test_batch_norm_written_out_is_bit_exact(dt):
    # composites.py: the reference's operations in its order; NaN, infinities, signed zeros
    import assembler
    m = assembler.parse(BATCH_NORM.format(dt=dt, c=3))
    out = optimize(m, ["composites"])
    # f16 computes in f32 and rounds once (isa/narrow.py): written out, each part would round
    assert ("batch_norm" in ops_of(out)) == (dt == "f16")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 2, 2)).astype(dt.replace("f", "float"))
    x.flat[:4] = [np.nan, np.inf, -0.0, -np.inf]
    vecs = [rng.standard_normal(3).astype(x.dtype) for _ in range(3)] + \
        [np.abs(rng.standard_normal(3)).astype(x.dtype)]
    vecs[3][0] = 0.0
    check_same(m, out, x, *vecs)
    # after the whole pipeline with weights as constants: the chain on the input stays
    # contiguous (the folded vectors are hoisted above it), so it fuses as one region
    consts = "".join(f"const @{n} : {dt}[3] = {[float(t) for t in v]}\n"
                     for n, v in zip("sbmv", vecs))
    mb = assembler.parse(f"""module bnc
{consts}
func @main(%x: {dt}[N, 3, 2, 2]) -> {dt}[N, 3, 2, 2] {{
entry:
  %r = relu %x
  %y = batch_norm %r, @s, @b, @m, @v {{epsilon = 0.001}}
  %z = neg %y
  ret %z
}}
""")
    full = optimize(mb)
    chain = [op for op in ops_of(full) if op != "const"]
    if dt == "f16":     # widened: f32 arithmetic between casts (test_passes_widen.py)
        chain = [op for op in chain if op != "cast"]
    assert chain == ["relu", "sub", "mul", "add", "neg", "ret"], chain
    check_same(mb, full, x)


def test_batch_norm_of_unknown_channels_stays():
    import assembler
    m = assembler.parse(BATCH_NORM.format(dt="f32", c="C"))
    assert "batch_norm" in ops_of(optimize(m, ["composites"]))


def test_hoist_moves_single_definition_consts_only():
    import assembler
    m = assembler.parse("""module h
func @main(%x: f32[4], %n: i64[]) -> f32[4] {
entry:
  %a = relu %x
  %k = const 2.0 : f32[]
  %b = mul %a, %k
  %acc = const 0.0 : f32[4]
  %i = const 0 : i64[]
  jmp loop
loop:
  %acc = add %acc, %b
  %one = const 1 : i64[]
  %i = add %i, %one
  %c = lt %i, %n
  br %c, loop, done
done:
  ret %acc
}
""")
    out = optimize(m, ["hoist"])
    entry, loop = out.functions["main"].blocks[0].instrs, out.functions["main"].blocks[1].instrs
    # %k moves; %acc and %i are reassigned in the loop and stay where they are
    assert [i.op for i in entry] == ["const", "relu", "mul", "const", "const", "jmp"]
    assert entry[0].results == ["k"] and entry[3].results == ["acc"] and entry[4].results == ["i"]
    assert [i.op for i in loop] == ["const", "add", "add", "lt", "br"]
    check_same(m, out, np.array([1, -2, 3, np.nan], np.float32), np.array(3))


def test_cluster_moves_views_that_split_a_run():
    import assembler
    m = assembler.parse("""module c
func @main(%x: f32[2, 8], %s: f32[2, 4]) -> (f32[2, 4], f32[2, 4]) {
entry:
  %p = add %x, 1.0
  %a = slice %p {starts = [0], ends = [4], axes = [1]}
  %sa = sigmoid %a
  %b = slice %p {starts = [4], ends = [8], axes = [1]}
  %tb = tanh %b
  %c = mul %sa, %tb
  %d = slice %c {starts = [0], ends = [4], axes = [1]}
  %e = add %d, %s
  %s = mov %c
  %f = slice %s {starts = [0], ends = [4], axes = [1]}
  %g = neg %f
  ret %e, %g
}
""")
    out = optimize(m, ["cluster"])
    ops = [(i.op, i.results[0] if i.results else None) for i in out.functions["main"].blocks[0].instrs]
    # %b moves above %sa (the gates fuse); %d reads %c made just before it; %f reads %s, which
    # has two definitions, so it stays
    assert ops[:6] == [("add", "p"), ("slice", "a"), ("slice", "b"), ("sigmoid", "sa"),
                       ("tanh", "tb"), ("mul", "c")]
    assert ops[6:] == [("slice", "d"), ("add", "e"), ("mov", "s"), ("slice", "f"), ("neg", "g"),
                       ("ret", None)]
    x = np.linspace(-3, 3, 16, dtype=np.float32).reshape(2, 8)
    check_same(m, out, x, np.ones((2, 4), np.float32))


PADDED_CONVS = """
module padded

func @main(%x: f32[N, 3, 9, 9], %w: f32[4, 3, 3, 3], %s: f32[N, 5, 20], %v: f32[5, 5, 1, 3], \
%b: f32[5]) -> (f32[N, 4, ?, ?], f32[N, 5, ?], f32[N, 4, ?, ?], f32[N, 4, ?, ?]) {
entry:
  %xp = pad %x {pads = [0, 0, 2, 1, 0, 0, 0, 1], value = 0.0}
  %y = conv2d %xp, %w {strides = [1, 2], pads = [1, 0, 1, 0], dilations = [1, 1], groups = 1}
  %sp = pad %s {pads = [0, 0, 4, 0, 0, 0], value = 0.0}
  %se = expand_dims %sp {axes = [2]}
  %c = conv2d %se, %v, %b {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 2], groups = 1}
  %z = squeeze %c {axes = [2]}
  %one = pad %x {pads = [0, 0, 1, 1, 0, 0, 1, 1], value = 1.0}
  %u = conv2d %one, %w {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], groups = 1}
  %ch = pad %x {pads = [0, 1, 1, 1, 0, 0, 1, 1], value = 0.0}
  %chw = pad %w {pads = [0, 1, 0, 0, 0, 0, 0, 0], value = 0.0}
  %q = conv2d %ch, %chw {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], groups = 1}
  ret %y, %z, %u, %q
}
"""


def test_zero_pads_fold_into_the_convolution():
    # a zero pad of the spatial dims (4-D, or a 1-D convolution's length through its
    # expand_dims) becomes the convolution's own pads: bit-identical results, no pad left; a
    # pad of ones or of the channels stays
    assembler = pytest.importorskip("assembler")
    m = assembler.assemble(PADDED_CONVS, "padded.dlasm")
    out = optimize(m)
    assert ops_of(out).count("pad") == 3       # %one, %ch and the weights' %chw
    rng = np.random.default_rng(13)
    args = [rng.standard_normal(s).astype(np.float32)
            for s in ((2, 3, 9, 9), (4, 3, 3, 3), (2, 5, 20), (5, 5, 1, 3), (5,))]
    assert same_outcome(run_vm(m, *args), run_vm(out, *args))


PADDED_CONV3D = """
module padded3

func @main(%x: f32[N, 2, 4, 5, 6], %w: f32[3, 2, 2, 3, 3]) -> (f32[N, 3, ?, ?, ?], f32[N, 3, ?, ?, ?]) {
entry:
  %xp = pad %x {pads = [0, 0, 1, 2, 0, 0, 0, 1, 0, 2], value = 0.0}
  %y = conv3d %xp, %w {strides = [1, 2, 1], pads = [0, 1, 0, 1, 0, 1], dilations = [1, 1, 2], groups = 1}
  %one = pad %x {pads = [0, 0, 1, 1, 1, 0, 0, 1, 1, 1], value = 1.0}
  %u = conv3d %one, %w {strides = [1, 1, 1], pads = [0, 0, 0, 0, 0, 0], dilations = [1, 1, 1], groups = 1}
  ret %y, %u
}
"""


def test_zero_pads_fold_into_the_3d_convolution():
    # a 3-D transposed convolution's zero pad becomes its conv3d's own pads; a pad of ones stays
    assembler = pytest.importorskip("assembler")
    m = assembler.assemble(PADDED_CONV3D, "padded3.dlasm")
    out = optimize(m)
    assert ops_of(out).count("pad") == 1
    rng = np.random.default_rng(14)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((2, 2, 4, 5, 6), (3, 2, 2, 3, 3))]
    assert same_outcome(run_vm(m, *args), run_vm(out, *args))


SOFTMAX_AXES = """module sm
func @main(%s: f32[N, T, 1], %x: f32[N, 4, 3, 5]) -> (f32[N, T, 1], f32[N, 4, 3, 5], \
f32[N, 4, 3, 5]) {
entry:
  %a = softmax %s {axis = 1}
  %b = log_softmax %x {axis = 1}
  %c = softmax %x {axis = -1}
  ret %a, %b, %c
}
"""


def test_softmax_over_an_inner_axis_moves_it_last():
    # kernels reduce over trailing axes: a softmax over axis 1 becomes one over the last axis
    # (a squeeze of trailing unit dims, else transposes there and back); one over the last axis
    # stays as it is
    assembler = pytest.importorskip("assembler")
    m = assembler.assemble(SOFTMAX_AXES, "sm.dlasm")
    out = optimize(m)
    axes = [ins.attrs.get("axis") for blk in out.functions["main"].blocks for ins in blk.instrs
            if ins.op in ("softmax", "log_softmax")]
    assert axes == [-1, -1, -1]
    assert ops_of(out).count("squeeze") == 1 and ops_of(out).count("transpose") == 2
    rng = np.random.default_rng(14)
    args = [rng.standard_normal((2, 7, 1)).astype(np.float32),
            rng.standard_normal((2, 4, 3, 5)).astype(np.float32)]
    assert same_outcome(run_vm(m, *args), run_vm(out, *args))


def test_copyprop_keeps_a_mov_that_declares_a_narrower_type():
    # after a loop that grows %ys from [0, N, 4], the importer states its length: readers of
    # the typed mov must keep reading it (a row split and a kernel's variant read their types)
    import assembler
    module = assembler.parse("""module m
func @main(%x: f32[N, 4]) -> f32[N, 8] {
entry:
  %e = expand_dims %x {axes = [0]}
  %z = const 0.0 : f32[0, N, 4]
  %ys = concat %z, %e, %e {axis = 0}
  %y = mov %ys : f32[2, N, 4]
  %t = transpose %y {perm = [1, 0, 2]}
  %r = reshape %t {shape = [-1, 8]}
  %c = mov %r
  ret %c
}
""")
    out = only(module, "copyprop", "dce")
    instrs = out.functions["main"].blocks[0].instrs
    typed = [i for i in instrs if i.op == "mov"]
    assert [i.results for i in typed] == [["y"]]        # the untyped copy is gone, not the typed one
    transpose = next(i for i in instrs if i.op == "transpose")
    assert transpose.operands == [Reg("y")]
    check_same(module, out, np.arange(12, dtype=np.float32).reshape(3, 4))
