"""The VM on programs written with the builder: calls, named dims, control flow, traps that name
function, block and instruction, limits, and the public API's argument handling."""
from __future__ import annotations

import numpy as np
import pytest

import dlvmrt
from isa import Reg
from isa.builder import ModuleBuilder
from isa.errors import ResourceExhausted, Trap


def affine_module():
    mb = ModuleBuilder("m")
    f = mb.function("scale", [("x", "f32[N, 3]"), ("s", "f32[]")], ["f32[N, 3]", "f32[]"])
    x, s = f.args()
    y = f.mul(x, s)
    m = f.reduce_max(y)
    f.ret(y, m)
    g = mb.function("main", [("x", "f32[N, 3]")], ["f32[N, 3]", "f32[]"])
    two = g.const(2.0, "f32[]")
    y, m = g.call("scale", g.arg("x"), two, n_results=2)
    g.ret(y, m)
    return mb.finish()


def test_call_with_several_results():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y, m = dlvmrt.VM(affine_module()).run("main", x)
    np.testing.assert_array_equal(y, 2 * x)
    assert m.shape == () and m == 10.0


def test_named_arguments_and_missing_ones():
    vm = dlvmrt.VM(affine_module())
    x = np.ones((4, 3), np.float32)
    y, _ = vm.run("main", x=x)
    assert y.shape == (4, 3)
    with pytest.raises(Trap, match="missing argument %x"):
        vm.run("main")
    with pytest.raises(Trap, match="no parameter %z"):
        vm.run("main", x, z=1)


def test_dtype_and_shape_mismatch_at_entry():
    vm = dlvmrt.VM(affine_module())
    with pytest.raises(Trap, match=r"argument %x of @main must be f32\[N, 3\], got f64\[2, 3\]"):
        vm.run("main", np.ones((2, 3)))
    with pytest.raises(Trap, match=r"must be f32\[N, 3\], got f32\[2, 4\]"):
        vm.run("main", np.ones((2, 4), np.float32))


def test_named_dim_must_agree_between_arguments():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("a", "f32[N]"), ("b", "f32[N]")], ["f32[N]"])
    f.ret(f.add(*f.args()))
    vm = dlvmrt.VM(mb.finish())
    with pytest.raises(Trap, match="N = 3, but N = 2"):
        vm.run("main", np.ones(2, np.float32), np.ones(3, np.float32))


def loop_module():
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


def test_loop_sums_and_counts_back_edges():
    vm = dlvmrt.VM(loop_module(), profile=True)
    (acc,) = vm.run("main", np.int64(10))
    assert acc == 45 and acc.dtype == np.int64
    head = vm.code("main").blocks[1]
    assert head.count == 11 and head.back_edges == 10


def test_step_budget_stops_a_runaway_loop():
    vm = dlvmrt.VM(loop_module(), max_steps=1000)
    with pytest.raises(ResourceExhausted, match="more than 1000 blocks"):
        vm.run("main", np.int64(10**9))


def test_trap_names_function_block_and_instruction():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("a", "i32[4]"), ("b", "i32[4]")], ["i32[4]"])
    f.label("start")
    q = f.div(*f.args())
    f.ret(q)
    vm = dlvmrt.VM(mb.finish())
    with pytest.raises(Trap) as e:
        vm.run("main", np.ones(4, np.int32), np.array([1, 2, 0, 4], np.int32))
    text = e.value.format()
    assert "integer division by zero" in text
    assert "in @main, block start, instruction 0 (div)" in text


def test_trap_in_callee_names_the_call_chain():
    mb = ModuleBuilder("m")
    g = mb.function("check", [("x", "f32[N]")], ["f32[N]"])
    g.assert_(g.gt(g.arg("x"), 0.0), "x must be positive")
    g.ret(g.arg("x"))
    f = mb.function("main", [("x", "f32[N]")], ["f32[N]"])
    f.ret(f.call("check", f.arg("x")))
    with pytest.raises(Trap) as e:
        dlvmrt.VM(mb.finish()).run("main", np.array([1, -1], np.float32))
    text = e.value.format()
    assert "assertion failed: x must be positive" in text
    assert "in @check" in text and "called from @main" in text


def test_integer_division_truncates_toward_zero():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("a", "i32[4]"), ("b", "i32[4]")], ["i32[4]", "i32[4]"])
    a, b = f.args()
    f.ret(f.div(a, b), f.mod(a, b))
    q, r = dlvmrt.VM(mb.finish()).run("main", np.array([7, -7, 7, -7], np.int32),
                                       np.array([2, 2, -2, -2], np.int32))
    assert q.tolist() == [3, -3, -3, 3]
    assert r.tolist() == [1, 1, -1, -1]


def test_constants_returned_to_the_user_are_read_only():
    mb = ModuleBuilder("m")
    w = mb.constant("w", np.arange(3, dtype=np.float32))
    f = mb.function("main", [], ["f32[3]"])
    f.ret(w)
    vm = dlvmrt.VM(mb.finish())
    (out,) = vm.run("main")
    with pytest.raises(ValueError):
        out[0] = 5
    (again,) = vm.run("main")
    assert again.tolist() == [0, 1, 2]


def test_const_with_named_dims_fills_the_bound_shape():
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", "f32[N, 2]")], ["f32[N, 2]"])
    c = f.const(1.5, "f32[N, 2]")
    f.ret(f.add(f.arg("x"), c))
    (y,) = dlvmrt.VM(mb.finish()).run("main", np.zeros((3, 2), np.float32))
    assert y.shape == (3, 2) and np.all(y == 1.5)


def test_unknown_entry_and_bad_jit_mode():
    vm = dlvmrt.VM(affine_module())
    with pytest.raises(Trap, match="no function @nope"):
        vm.run("nope")
    with pytest.raises(ValueError, match="jit must be one of"):
        dlvmrt.VM(affine_module(), jit="fast")


def test_python_lists_convert_to_the_parameter_dtype():
    (y, _) = dlvmrt.VM(affine_module()).run("main", [[1, 2, 3]])
    assert y.dtype == np.float32 and y.tolist() == [[2, 4, 6]]


def test_profile_and_trace(tmp_path):
    import json
    vm = dlvmrt.VM(affine_module(), profile=True, trace=True)
    vm.run("main", np.ones((2, 3), np.float32))
    table = vm.profiler.table(vm)
    assert "reduce_max" in table and "interpreted" in table
    path = tmp_path / "t.json"
    vm.profiler.write_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    assert any(ev.get("name") == "mul" and ev["ph"] == "X" for ev in events)


def test_a_trap_at_return_names_the_ret_instruction():
    import assembler
    m = assembler.assemble("module r\nfunc @main(%x: f32[N]) -> f32[N] {\n"
                           "  %y = concat %x, %x {axis = 0}\n  ret %y\n}\n", "r.dlasm")
    with pytest.raises(Trap) as e:
        dlvmrt.VM(m).run("main", np.ones(2, np.float32))
    assert e.value.loc is not None and e.value.loc.line == 4
    assert "instruction 1 (ret)" in e.value.format()


def test_deep_recursion_reports_one_line_per_distinct_caller():
    import assembler
    m = assembler.assemble(
        "module r\nfunc @down(%n: i64[]) -> i64[] {\nentry:\n  %z = le %n, 0\n"
        "  br %z, done, more\nmore:\n  %m = sub %n, 1\n  %r = call @down(%m)\n  ret %r\n"
        "done:\n  %k = const 1 : i64[]\n  %c = gt %k, 5\n  assert %c, \"bottom\"\n  ret %n\n}\n",
        "r.dlasm")
    with pytest.raises(Trap) as e:
        dlvmrt.VM(m).run("down", np.int64(50))
    text = e.value.format()
    assert "assertion failed: bottom" in text
    assert "(50 times)" in text and len(text) < 500


def test_annotated_results_are_checked_with_the_jit_too():
    import assembler
    text = ("module a\nfunc @main(%x: f32[?], %z: f32[?]) -> f32[?] {\n  %a = exp %x\n"
            "  %y = add %a, %z : f32[3]\n  ret %y\n}\n")
    for jit in ("off", "always"):
        with pytest.raises(Trap, match=r"declared type is f32\[3\]"):
            dlvmrt.VM(assembler.assemble(text, "a.dlasm"), jit=jit).run(
                "main", np.ones(4, np.float32), np.ones(4, np.float32))
    # an annotated intermediate keeps its region interpreted, so the check still runs
    inner = ("module a\nfunc @main(%x: f32[?], %z: f32[?]) -> f32[?] {\n  %a = exp %x : f32[3]\n"
             "  %y = add %a, %z\n  ret %y\n}\n")
    with pytest.raises(Trap, match=r"declared type is f32\[3\]"):
        dlvmrt.VM(assembler.assemble(inner, "a.dlasm"), jit="always").run(
            "main", np.ones(4, np.float32), np.ones(4, np.float32))


def test_an_impossible_allocation_is_resource_exhaustion():
    mb = ModuleBuilder("big")
    f = mb.function("main", [("x", "f32[N]")], ["f32[N, N, N, N, N]"])
    f.ret(f.const(0.0, "f32[N, N, N, N, N]"))
    with pytest.raises(ResourceExhausted):
        dlvmrt.VM(mb.finish()).run("main", np.ones(10**4, np.float32))
