"""`grad` on whole programs: loops, branches, calls, recursion, constants, errors, the CLI."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gradcheck import check

import assembler
import isa.bytecode as bc
from dlvmrt.vm import VM
from isa.autodiff import GradError, grad

RNN = """module rnn
func @main(%x: f64[T, 2, 3], %w: f64[3, 4], %u: f64[4, 4], %h: f64[2, 4]) -> f64[] {
entry:
  %s = shape_of %x
  %zero = const 0 : i64[]
  %n = gather %s, %zero
  %t = const 0 : i64[]
  jmp head
head:
  %c = lt %t, %n
  br %c, body, done
body:
  %xt = gather %x, %t {axis = 0}
  %a = matmul %xt, %w
  %b = matmul %h, %u
  %h = add %a, %b
  %h = tanh %h
  %t = add %t, 1
  jmp head
done:
  %l = mul %h, %h
  %r = reduce_sum %l
  ret %r
}
"""

BRANCH = """module br
const @k : f64[3] = [0.5, -1.0, 2.0]
func @sq(%v: f64[N]) -> f64[N] {
  %r = mul %v, %v
  %r = mul %r, @k
  %r = sin %r
  ret %r
}
func @main(%x: f64[3], %y: f64[3]) -> f64[] {
entry:
  %s = reduce_sum %x
  %p = gt %s, 0.0
  br %p, pos, neg
pos:
  %z = call @sq(%x)
  %z = mul %z, %y
  jmp join
neg:
  %z = exp %x
  %z = sub %z, %y
  jmp join
join:
  %z = max %z, %x
  %r = reduce_mean %z
  ret %r
}
"""

RECURSIVE = """module rec
func @power(%x: f64[2], %n: i64[]) -> f64[2] {
entry:
  %done = le %n, 0
  br %done, base, more
base:
  %one = const 1.0 : f64[2]
  ret %one
more:
  %m = sub %n, 1
  %p = call @power(%x, %m)
  %p = mul %p, %x
  ret %p
}
func @main(%x: f64[2], %n: i64[]) -> f64[] {
  %p = call @power(%x, %n)
  %s = reduce_sum %p
  ret %s
}
"""

RNG = np.random.default_rng(3)


def rnn_inputs(steps: int) -> dict[str, np.ndarray]:
    return {"x": RNG.standard_normal((steps, 2, 3)), "w": RNG.standard_normal((3, 4)) * 0.5,
            "u": RNG.standard_normal((4, 4)) * 0.5, "h": RNG.standard_normal((2, 4))}


def test_a_loop_differentiates_through_every_iteration():
    check(assembler.assemble(RNN), rnn_inputs(4))


def test_a_loop_of_zero_iterations_gives_the_identity_gradient():
    grads = check(assembler.assemble(RNN), rnn_inputs(0))
    assert not np.any(grads[1])        # w is never used


def test_a_long_loop_runs_within_the_call_depth():
    m = grad(assembler.assemble(RNN), "main", ["u"])
    inputs = rnn_inputs(600)
    inputs["u"] *= 0.2
    out = VM(m, jit="off").run("main_grad", *inputs.values())
    assert out[1].shape == (4, 4) and np.all(np.isfinite(out[1]))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_both_sides_of_a_branch_and_a_call(sign):
    x = np.abs(RNG.standard_normal(3)) * sign
    check(assembler.assemble(BRANCH), {"x": x, "y": RNG.standard_normal(3)})


def test_constants_differentiate_through_calls():
    m = assembler.assemble(BRANCH)
    x, y = np.array([0.3, 0.7, 0.2]), RNG.standard_normal(3)
    g = grad(m, "main", ["@k", "y"])
    _, dk, dy = VM(g, jit="off").run("main_grad", x, y)
    eps = 1e-6
    k = m.constants["k"].value
    for i in range(3):
        for s in (1, -1):
            m.constants["k"].value = k.copy()
            m.constants["k"].value[i] += s * eps
            val = VM(m, jit="off").run("main", x, y)[0]
            if s == 1:
                up = val
        want = (up - val) / (2 * eps)
        assert abs(dk[i] - want) < 1e-6
    m.constants["k"].value = k


def test_recursion_gets_an_adjoint_of_its_own():
    check(assembler.assemble(RECURSIVE), {"x": RNG.uniform(0.5, 1.5, 2), "n": np.int64(3)},
          wrt=["x"])


def test_a_vector_result_takes_its_cotangent_as_a_parameter():
    m = assembler.assemble("module v\nfunc @main(%x: f64[3]) -> f64[3] {\n  %y = exp %x\n"
                           "  ret %y\n}\n")
    g = grad(m, "main", ["x"])
    assert [p.name for p in g.functions["main_grad"].params] == ["x", "d_out"]
    x, ct = RNG.standard_normal(3), RNG.standard_normal(3)
    y, dx = VM(g, jit="off").run("main_grad", x, ct)
    np.testing.assert_allclose(dx, ct * np.exp(x))


def test_the_adjoint_is_ordinary_code():
    g = grad(assembler.assemble(RNN), "main", ["w", "u"])
    text = assembler.disassemble(g)
    again = assembler.assemble(text)
    assert again == g
    assert bc.decode(bc.encode(g)) == g
    inputs = rnn_inputs(3)
    want = VM(g, jit="off").run("main_grad", *inputs.values())
    got = VM(g, jit="always").run("main_grad", *inputs.values())
    for a, b in zip(want, got):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_what_cannot_be_differentiated_is_named():
    m = assembler.assemble(RECURSIVE)
    with pytest.raises(GradError, match="parameter %n: it is i64"):
        grad(m, "main", ["n"])
    with pytest.raises(GradError, match="did you mean x"):
        grad(m, "main", ["xx"])
    with pytest.raises(GradError, match="no function @mian"):
        grad(m, "mian", ["x"])
    e = assembler.assemble("module e\nfunc @main(%x: f64[2, 2]) -> f64[] {\n"
                           "  %d = det %x\n  %s = reduce_sum %d\n  ret %s\n}\n", "e.dlasm")
    with pytest.raises(GradError) as err:
        grad(e, "main", ["x"])
    assert "det is not differentiable" in err.value.format()
    assert err.value.loc is not None and err.value.loc.line == 3


def test_an_op_off_the_path_needs_no_rule():
    m = assembler.assemble("module e\nfunc @main(%x: f64[2, 2], %y: f64[2, 2]) -> (f64[], f64[]) {"
                           "\n  %d = det %y\n  %s = reduce_sum %x\n  %t = reduce_sum %d\n"
                           "  ret %s, %t\n}\n")
    out = VM(grad(m, "main", ["x"]), jit="off").run("main_grad", np.ones((2, 2)), np.eye(2))
    np.testing.assert_array_equal(out[2], np.ones((2, 2)))


def test_cli_grad_then_run(tmp_path):
    prog = tmp_path / "rnn.dlasm"
    prog.write_text(RNN)
    inputs = rnn_inputs(3)
    np.savez(tmp_path / "in.npz", **inputs)
    dlvm = [sys.executable, "-m", "cli"]
    for out in ("g.dlasm", "g.dlbc"):
        r = subprocess.run(dlvm + ["grad", str(prog), "--wrt", "w,%u", "-o",
                                   str(tmp_path / out)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        r = subprocess.run(dlvm + ["run", str(tmp_path / out), "--entry", "main_grad",
                                   "--inputs", str(tmp_path / "in.npz"), "--out",
                                   str(tmp_path / "g.npz")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        got = np.load(tmp_path / "g.npz")
        want = VM(grad(assembler.assemble(RNN), "main", ["w", "u"]), jit="off").run(
            "main_grad", *inputs.values())
        for i, w in enumerate(want):
            np.testing.assert_allclose(got[f"out{i}"], w, rtol=1e-12)
    r = subprocess.run(dlvm + ["grad", str(prog), "--forward", "--wrt", "w", "-o",
                               str(tmp_path / "j.dlasm")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "func @main_jvp" in (tmp_path / "j.dlasm").read_text()
    r = subprocess.run(dlvm + ["grad", str(prog), "--wrt", "t"], capture_output=True, text=True)
    assert r.returncode == 1 and "'t' is neither a parameter" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("src", [RNN, BRANCH], ids=["loop", "branch-call"])
def test_jvp_through_loops_branches_and_calls(src):
    from isa.autodiff import jvp
    m = assembler.assemble(src)
    ins = list(rnn_inputs(3).values()) if src is RNN else [np.array([0.3, 0.7, 0.2]),
                                                             RNG.standard_normal(3)]
    ts = [RNG.standard_normal(np.shape(a)) for a in ins]
    out = VM(jvp(m, "main"), jit="off").run("main_jvp", *ins, *ts)
    vm, e = VM(m, jit="off"), 1e-6
    fd = (vm.run("main", *[a + e * t for a, t in zip(ins, ts)])[0] -
          vm.run("main", *[a - e * t for a, t in zip(ins, ts)])[0]) / (2 * e)
    np.testing.assert_allclose(out[-1], fd, rtol=1e-6)


@pytest.mark.parametrize("body, most", [("%y = gelu %x", 1), ('%y = gelu %x {approximate = "tanh"}', 1),
                                        ("%y = layer_norm %x, %s, %b", 2)])
def test_adjoints_of_elementwise_chains_and_layer_norm_fuse(body, most):
    from isa.verify import verify_module
    from jit.regions import form_regions
    src = ("module g\nfunc @main(%x: f32[64, 256], %s: f32[256], %b: f32[256]) -> f32[64, 256] "
           f"{{\n  {body}\n  ret %y\n}}\n")
    m = grad(assembler.assemble(src), "main", ["x", "s", "b"] if "layer" in body else ["x"])
    regions = form_regions(m, "main.vjp", verify_module(m)["main.vjp"])
    assert 1 <= len(regions) <= most
    # the input's gradient (and the forward value) come out of the first kernel
    instrs = m.functions["main.vjp"].blocks[0].instrs
    ret = instrs[-1]
    assert {ret.operands[0].name, ret.operands[1].name} <= set(regions[0].outputs)
    args = [np.random.default_rng(0).standard_normal(s).astype(np.float32)
            for s in [(64, 256), (256,), (256,), (64, 256)]]
    want = VM(m, jit="off").run("main_grad", *args)
    got = VM(m, jit="always").run("main_grad", *args)
    for a, b in zip(want, got):
        np.testing.assert_allclose(b, a, rtol=2e-5, atol=2e-5)


SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "examples"
EXAMPLES = sorted(SHARED.glob("*.dlasm")) + [Path(__file__).resolve().parents[1] / "examples" /
                                             "rnn.dlasm"]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_program_differentiates(path):
    """Each example: with respect to every float parameter and constant, gradients match
    central differences in f32 (a loose tolerance: f32 and a step of 1e-2); a program with no
    float input (loop.dlasm) is refused by name."""
    m = assembler.assemble_file(path)
    inputs = dict(np.load(path.with_suffix("").with_suffix(".inputs.npz")))
    f = m.functions["main"]
    args = [inputs[p.name] for p in f.params]
    names = ["%" + p.name for p in f.params if p.type.dtype.text.startswith("f")] + \
        ["@" + c for c, v in m.constants.items() if v.type.dtype.text.startswith("f")]
    if not names:
        with pytest.raises(GradError, match="no float parameter"):
            grad(m, "main")
        return
    g = grad(m, "main", names, cotangent=True)
    first = f.results[0]
    rng = np.random.default_rng(0)
    res = VM(m, jit="off").run("main", *args)
    ct = rng.standard_normal(np.shape(res[0])).astype(first.dtype.np)
    out = VM(g, jit="auto").run("main_grad", *args, ct)
    np.testing.assert_allclose(out[0], res[0], rtol=1e-5, atol=1e-6)
    grads = out[len(f.results):]
    # spot-check three elements of each gradient against a difference quotient in f64
    m64 = assembler.assemble(assembler.disassemble(m).replace("f32", "f64"))
    args64 = [a.astype(np.float64) if a.dtype == np.float32 else a for a in args]
    def loss(a, consts):
        for k, v in consts.items():
            m64.constants[k].value = v
        return float(np.sum(VM(m64, jit="off").run("main", *a)[0] * ct))   # a VM per constant

    base_consts = {k: v.value.copy() for k, v in m64.constants.items()}
    for name, gr in zip(names, grads):
        for _ in range(3):
            i = tuple(int(rng.integers(0, s)) for s in gr.shape)
            h = 1e-5
            if name.startswith("%"):
                k = [p.name for p in f.params].index(name[1:])
                up, down = [a.copy() for a in args64], [a.copy() for a in args64]
                up[k][i] += h
                down[k][i] -= h
                num = (loss(up, base_consts) - loss(down, base_consts)) / (2 * h)
            else:
                c = name[1:]
                up = {**base_consts, c: base_consts[c].copy()}
                down = {**base_consts, c: base_consts[c].copy()}
                up[c][i] += h
                down[c][i] -= h
                num = (loss(args64, up) - loss(args64, down)) / (2 * h)
            assert abs(gr[i] - num) <= 2e-3 * (1 + abs(num)), (path.stem, name, i, gr[i], num)
        loss(args64, base_consts)


def test_literal_indices_work_and_differentiate():
    src = ("module imm\nfunc @main(%v: f64[4, 3]) -> f64[] {\n  %r = gather %v, 2 {axis = 0}\n"
           "  %c = cumsum %v, 1\n  %t, %i = topk %c, 2\n  %s = reduce_sum %t\n"
           "  %q = reduce_sum %r\n  %s = add %s, %q\n  ret %s\n}\n")
    check(assembler.assemble(src), {"v": RNG.standard_normal((4, 3))})
    with pytest.raises(Exception, match=r"does not take immediate operands \(only as operand 2\)"):
        assembler.assemble("module b\nfunc @main(%v: f32[4, 4]) -> f32[4] {\n"
                           "  %r = gather 1, %v\n  ret %r\n}\n")


def test_odd_control_flow_entry_loop_self_loop_and_twin_branch():
    m = assembler.assemble("""module cf
func @main(%x: f64[3], %n: i64[]) -> f64[] {
head:
  %c = gt %n, 0
  br %c, body, done
body:
  %x = sin %x
  %x = mul %x, 1.5
  %n = sub %n, 1
  %d = gt %n, 1
  br %d, body, head
done:
  %p = lt %n, 5
  br %p, fin, fin
fin:
  %s = reduce_sum %x
  ret %s
}
""")
    for n in (0, 1, 4):
        check(m, {"x": np.array([0.3, -0.7, 1.1]), "n": np.int64(n)}, wrt=["x"])
