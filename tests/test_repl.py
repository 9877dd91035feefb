"""The REPL's logic through ReplSession.handle: immediate mode, definitions, commands, the
debugger commands, JIT/profile/optimizer views, and errors that never end the session."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dlvmrt
from repl.commands import BY_NAME, COMMANDS
from repl.session import ReplSession, needs_more

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
MLP = str(EXAMPLES / "mlp.dlasm")
LOOP = str(EXAMPLES / "loop.dlasm")

DOUBLE = """func @double(%a: f32[N, 3]) -> f32[N, 3] {
  %b = mul %a, 2.0
  ret %b
}"""


@pytest.fixture
def mlp():
    return ReplSession(MLP)


def test_loading_lists_the_module(mlp):
    assert "loaded" in mlp.startup and "func @main(%x: f32[N, 4]) -> f32[N, 3]" in mlp.startup
    assert "const @w1 : f32[4, 8]" in mlp.handle(":funcs")


def test_immediate_instructions_run_on_session_registers(mlp):
    out = mlp.handle("%x = const 1.5 : f32[2, 4]")
    assert out.startswith("%x = f32[2, 4]") and "1.5" in out
    assert mlp.handle("%y = neg %x").startswith("%y = f32[2, 4]")
    np.testing.assert_array_equal(mlp.regs["y"], np.full((2, 4), -1.5, np.float32))
    mlp.handle("%h = matmul %x, @w1")            # module constants are operands too
    w1 = mlp.module.constants["w1"].value
    np.testing.assert_allclose(mlp.regs["h"], np.full((2, 4), 1.5, np.float32) @ w1, rtol=1e-6)
    mlp.handle("%s = reduce_sum %y {axes = [1], keepdims = true}")
    assert mlp.regs["s"].shape == (2, 1) and mlp.regs["s"][0, 0] == -6.0
    mlp.handle("%y = add %y, 1.0")               # a register may be reassigned
    assert mlp.regs["y"][0, 0] == -0.5


def test_bad_lines_print_diagnostics_with_caret_and_the_session_goes_on(mlp):
    out = mlp.handle("%z = ad %x, 1.0")
    assert out.splitlines() == ["<repl>:1:6: error: unknown op 'ad'; did you mean 'pad'?",
                                "  %z = ad %x, 1.0", "       ^"]
    mlp.handle("%x = const 1.0 : f32[2, 4]")
    out = mlp.handle("%z = matmul %x, %x")       # a verifier error, located on the line
    assert out.startswith("<repl>:1:1: error: ") and "\n  %z = matmul %x, %x\n  ^" in out
    assert "<repl>" not in out.split("error:", 1)[1]   # the wrapper function is not mentioned
    assert "is not set" in mlp.handle("%z = relu %nothing")
    assert "only works inside a function body" in mlp.handle("jmp somewhere")
    assert "unknown command :rn; did you mean :run?" in mlp.handle(":rn")
    assert mlp.handle("%w = relu %x").startswith("%w = f32[2, 4]")


def test_traps_in_immediate_mode_show_the_line(mlp):
    mlp.handle("%b = const false : bool[2]")
    out = mlp.handle('assert %b, "needs true"')
    assert out.startswith("<repl>:1:1: trap: assertion failed: needs true")
    assert "  assert %b" in out


def test_set_by_type_and_from_npy(mlp, tmp_path):
    out = mlp.handle(":set %r f32[2, 3]")
    assert out.startswith("%r = f32[2, 3]") and mlp.regs["r"].dtype == np.float32
    path = tmp_path / "v.npy"
    np.save(path, np.arange(6, dtype=np.int64).reshape(3, 2))
    assert mlp.handle(f":set %v {path}").startswith("%v = i64[3, 2]")
    assert "cannot read" in mlp.handle(f":set %v {tmp_path / 'missing.npy'}")
    assert "unknown dtype" in mlp.handle(":set %v q8[2]")
    assert "usage" in mlp.handle(":set %v")


def test_print_and_regs(mlp):
    mlp.handle("%x = const 2.0 : f32[3]")
    out = mlp.handle(":print %x")
    assert out.startswith("%x = f32[3]") and "min 2  max 2  mean 2" in out
    assert mlp.handle(":print @b1").startswith("@b1 = f32[8]")
    assert "session registers:" in mlp.handle(":regs") and "%x = f32[3]" in mlp.handle(":regs")
    assert "not set" in mlp.handle(":print %nope")


def test_run_with_registers_random_and_numbers(mlp):
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    mlp.regs["x"] = x
    out = mlp.handle(":run @main %x")
    assert out.startswith("@main returned 1 value") and "%out0 = f32[5, 3]" in out
    (want,) = dlvmrt.VM(dlvmrt.load(MLP)).run("main", x)
    np.testing.assert_array_equal(mlp.regs["out0"], want)
    assert "%out0 = f32[7, 3]" in mlp.handle(":run @main random N=7")
    assert "%out0 = f32[7, 3]" in mlp.handle(":run")            # repeats the last run
    assert "takes 1 argument (%x: f32[N, 4]), got 2" in mlp.handle(":run @main %x %x")
    loop = ReplSession(LOOP)
    loop.handle(":run @main 5")
    assert int(loop.regs["out0"]) == 0 + 1 + 4 + 9 + 16 and int(loop.regs["out1"]) == 5
    assert "trap: argument %x of @main must be f32[N, 4], got f32[3]" in \
        mlp.handle(":set %v f32[3]") + mlp.handle(":run @main %v")


def test_definitions_at_the_prompt(mlp):
    assert mlp.handle(DOUBLE) == "defined @double(%a: f32[N, 3]) -> f32[N, 3]"
    mlp.handle(":set %q f32[2, 3]")
    mlp.handle(":run @double %q")
    np.testing.assert_array_equal(mlp.regs["out0"], 2 * mlp.regs["q"])
    # line by line, as from a pipe: the definition is buffered until its closing brace
    lines = ["func @use(%x: f32[N, 4]) -> f32[N, 3] {", "  %y = call @main(%x)",
             "  %z = call @double(%y)", "  ret %z", "}"]
    outs = [mlp.handle(line) for line in lines]
    assert outs[:-1] == ["", "", "", ""] and outs[-1].startswith("defined @use")
    assert "%out0 = f32[4, 3]" in mlp.handle(":run @use random")
    # an invalid redefinition is reported in its own text and changes nothing
    out = mlp.handle("func @double(%a: f32[N, 3]) -> f32[N, 3] {\n  %b = add %a, @w1\n  ret %b\n}")
    assert out.startswith("<repl#3>:2:3: error: ") and "\n    %b = add %a, @w1\n    ^" in out
    assert "mul %a, 2.0" in mlp.handle(":disasm @double")
    # redefining a function keeps its callers valid or is refused
    assert mlp.handle(DOUBLE.replace("2.0", "3.0")).startswith("redefined @double")
    assert "a constant" not in mlp.handle("const @k : f32[] = 2.5")
    assert "@k = f32[]" in mlp.handle(":print @k")


def test_needs_more_only_for_open_function_bodies():
    assert needs_more("func @f(%a: f32[]) -> f32[] {")
    assert needs_more("func @f(%a: f32[]) -> f32[] {\n  %b = softmax %a {axis = 0}")
    assert not needs_more(DOUBLE)
    assert not needs_more("%y = softmax %x {axis = -1")     # one line; the parser will say
    assert not needs_more('func @f() -> f32[] {\n ; a } in a comment\n}')


def test_debugging_commands_walk_through_main(mlp):
    assert "no paused run" in mlp.handle(":step")
    out = mlp.handle(":debug @main random N=2")
    assert "-> @main:entry:0" in out and "%h = matmul %x, @w1" in out
    assert mlp.prompt == "dlvm @main:entry:0> "
    out = mlp.handle(":step")
    assert out.startswith("  %h = f32[2, 8]") and "-> @main:entry:1" in out
    assert "registers of @main" in mlp.handle(":regs")
    assert mlp.handle(":print %h").startswith("%h = f32[2, 8]")
    assert mlp.handle("%t = relu %h").startswith("%t = f32[2, 8]")   # the frame's %h
    assert "#0 @main:entry:1" in mlp.handle(":where")
    assert "-> @main:entry:2" in mlp.handle(":next")
    out = mlp.handle(":continue")
    assert "@main returned 1 value" in out and mlp.regs["out0"].shape == (2, 3)
    assert "the last run finished" in mlp.handle(":step")
    assert mlp.prompt == "dlvm> "


def test_breakpoints_stop_a_run(mlp):
    assert "no breakpoints" in mlp.handle(":break")
    assert mlp.handle(":break @main:entry:2").startswith("breakpoint at @main:entry:2  %h = relu %h")
    assert "@main:entry:4" in mlp.handle(":break 13")          # a source line of mlp.dlasm
    out = mlp.handle(":run @main random")
    assert out.startswith("breakpoint @main:entry:2") and "-> @main:entry:2" in out
    assert "breakpoint @main:entry:4" in mlp.handle(":continue")
    assert "@main returned" in mlp.handle(":continue")
    assert "no block 'nope'" in mlp.handle(":break @main:nope")
    assert "no function @nope" in mlp.handle(":break @nope")
    assert "removed the breakpoint" in mlp.handle(":clear @main:entry:2")
    assert "removed 1 breakpoint" in mlp.handle(":clear")
    assert "@main returned" in mlp.handle(":run @main random")


def test_traps_while_debugging_show_the_stack():
    s = ReplSession()
    s.handle("func @inner(%x: f32[N]) -> f32[N] {\n  %c = gt %x, 0.0\n  assert %c, \"positive\"\n"
             "  ret %x\n}")
    s.handle("func @outer(%x: f32[N]) -> f32[N] {\n  %y = call @inner(%x)\n  ret %y\n}")
    s.handle("%v = const -1.0 : f32[2]")
    s.handle(":debug @outer %v")
    s.handle(":step")
    assert "(in a call, depth 2)" in s.handle(":step")
    out = s.handle(":continue")
    assert "trap: assertion failed: positive (in @inner, block entry, instruction 1 (assert); " \
           "called from @outer" in out
    assert "  assert %c" in out and "stack at the trap:\n  #0 @outer:entry:0" in out
    assert "the last run trapped" in s.handle(":next")


def test_interrupt_is_reported_and_the_session_goes_on(mlp, monkeypatch):
    def interrupted(self, *a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(dlvmrt.VM, "run", interrupted)
    assert mlp.handle(":run @main random") == "interrupted"
    monkeypatch.undo()
    assert "@main returned" in mlp.handle(":run @main random")


def test_jit_views_degrade_and_list_runners(mlp, monkeypatch):
    assert mlp.handle(":jit on") .startswith("jit always")
    assert "no compiled regions yet" in mlp.handle(":jit")

    def broken(self, fcode, blk):
        raise RuntimeError("backend missing")
    monkeypatch.setattr(dlvmrt.VM, "tier_up", broken)
    out = mlp.handle(":run @main random")
    assert out.startswith("error: the JIT failed") and "backend missing" in out and ":jit off" in out
    monkeypatch.undo()

    class FakeRunner:
        def describe(self):
            return "f32[2, 8] fused add+relu"

        def kernel_ir(self):
            return "kernel k0 { ... }"

        def llvm_ir(self):
            raise RuntimeError("no LLVM here")

    class FakeRegion:
        start, end, kind = 1, 3, "elementwise"

    mlp.handle(":jit off")
    mlp.get_vm().runners.append(("main", "entry", FakeRegion(), FakeRunner()))
    out = mlp.handle(":jit")
    assert "#0 @main:entry instructions 1..2 elementwise" in out and "fused add+relu" in out
    assert mlp.handle(":jit ir 0") == "kernel k0 { ... }"
    assert "cannot show its llvm: RuntimeError: no LLVM here" in mlp.handle(":jit llvm 0")
    assert "no compiled region 5" in mlp.handle(":jit ir 5")
    assert "usage" in mlp.handle(":jit sometimes")


def test_real_jit_when_it_is_available(mlp):
    jit = pytest.importorskip("jit")
    if not hasattr(jit, "Jit"):
        pytest.skip("the JIT package has no Jit yet")
    mlp.handle(":jit always")
    out = mlp.handle(":run @main random")
    assert "@main returned" in out and "compiled by the JIT" in out
    assert "#0 @main:entry" in mlp.handle(":jit")


def test_profile_opt_disasm_save(mlp, tmp_path):
    out = mlp.handle(":profile @main random")
    assert "profiling on" in out and "matmul" in out and "softmax" in out
    out = mlp.handle(":opt")
    assert "func @main(%x: f32[N, 4]) -> f32[N, 3]" in out and "after the default pipeline" in out
    assert "unknown pass" in mlp.handle(":opt nothing")
    text = mlp.handle(":disasm")
    assert text.startswith("module mlp") and "; const @w1 : f32[4, 8] = <32 values" in text
    assert "const @b1 : f32[8]" in text and "%y = softmax %o {axis = -1}" in text
    mlp.handle(DOUBLE)
    path = tmp_path / "s.dlbc"
    assert mlp.handle(f":save {path}").startswith(f"wrote {path}")
    assert set(dlvmrt.load(str(path)).module.functions) == {"main", "double"}
    assert mlp.handle(f":save {tmp_path / 's.dlasm'}").startswith("wrote")
    fresh = ReplSession()
    assert "loaded" in fresh.handle(f":load {path}")
    assert "cannot read" in fresh.handle(":load /no/such/file.dlasm")


def test_help_names_every_command_and_the_first_steps(mlp):
    out = mlp.handle(":help")
    for c in COMMANDS:
        assert f":{c.name} " in out
    for needed in (":debug @main", ":step", ":jit always", "func @g", ":run @g"):
        assert needed in out
    assert mlp.handle(":help run").startswith(":run [@f] [ARGS]")
    assert "also :c, :cont" in mlp.handle(":help continue")
    assert BY_NAME["q"].name == "quit"
    mlp.handle(":quit")
    assert mlp.done


def test_internal_errors_do_not_end_the_session(mlp, monkeypatch):
    import repl.commands as commands
    monkeypatch.setitem(commands.BY_NAME, "funcs", commands.Command(
        "funcs", "", "", lambda s, a: 1 / 0, "x"))
    assert mlp.handle(":funcs").startswith("internal error: ZeroDivisionError")
    assert mlp.handle("%x = const 1 : i32[]").startswith("%x = i32[]")


def test_a_paused_frame_shadows_session_registers(mlp):
    mlp.handle("%x = const 7.0 : f32[1, 4]")
    mlp.handle(":debug @main random N=3")
    assert mlp.handle(":print %x").startswith("%x = f32[3, 4]")       # the frame's %x
    assert mlp.handle("%s = reduce_sum %x").startswith("%s = f32[]")
    mlp.handle(":continue")
    assert mlp.handle(":print %x").startswith("%x = f32[1, 4]")       # the session's again


def test_where_after_ctrl_c_shows_where_the_run_was():
    import signal
    # Ctrl-C as the terminal delivers it: a process started in the background by a shell
    # inherits SIGINT ignored, and then interrupt_main does nothing (the run went on to the
    # 5,000,000-block budget)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _ctrl_c_where()
    finally:
        signal.signal(signal.SIGINT, previous)


def _ctrl_c_where():
    import _thread
    import threading
    s = ReplSession()
    s.handle("func @spin(%n: i64[]) -> i64[] {\nentry:\n  %i = const 0 : i64[]\n  jmp head\n"
             "head:\n  %c = lt %i, %n\n  br %c, body, done\nbody:\n  %i = add %i, 1\n"
             "  jmp head\ndone:\n  ret %i\n}")
    threading.Timer(0.3, _thread.interrupt_main).start()
    out = s.handle(":run @spin 1000000000")
    assert out.startswith("interrupted in @spin:")
    where = s.handle(":where")
    assert "where the run was interrupted" in where and "#0 @spin:" in where
