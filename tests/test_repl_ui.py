"""The REPL's terminal side: the Pygments lexer, completion, the prompt_toolkit app on a pipe,
the history file, and one end-to-end run of the real `dlvm repl` in tmux."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from prompt_toolkit.document import Document
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from pygments import lex
from pygments.lexers import load_lexer_from_file
from pygments.token import Error, Keyword, Name

from isa.ops import OPS
from repl.commands import COMMANDS
from repl.completion import SessionCompleter, complete
from repl.lexer import DlasmLexer, ReplLexer
from repl.session import ReplSession
from repl.ui import open_history, run_lines, run_ui

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
MLP = str(EXAMPLES / "mlp.dlasm")


# -- lexer -----------------------------------------------------------------------------------

def tokens(text: str, lexer=None) -> list[tuple]:
    return [(t, v) for t, v in lex(text, lexer or DlasmLexer()) if v.strip()]


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.dlasm")), ids=lambda p: p.name)
def test_examples_lex_without_errors(path):
    toks = tokens(path.read_text())
    assert not [v for t, v in toks if t in Error]
    assert "".join(v for _, v in lex(path.read_text(), DlasmLexer())) == path.read_text()


def test_every_op_of_the_table_is_highlighted():
    for name in OPS:
        toks = tokens(f"%r = {name} %a, %b\n")
        kinds = {v: t for t, v in toks}
        assert kinds[name] in (Name.Builtin, Keyword), name


def test_lexer_names_labels_attributes_types_and_commands():
    toks = tokens("loop:\n  %y = softmax %o {axis = -1} : f32[N, 3]\n  br %c, loop, done\n")
    assert (Name.Label, "loop") in toks and (Name.Attribute, "axis") in toks
    assert (Keyword.Type, "f32") in toks and (Name.Variable, "%o") in toks
    assert (Name, "done") in toks
    body = tokens("func @f(%x: f32[4]) -> f32[4] {\n  %y = relu %x\n  ret %y\n}\n")
    assert (Name.Function, "@f") in body and (Name.Builtin, "relu") in body
    cmd = tokens(":break @main:entry:2", ReplLexer())
    assert cmd == [(Keyword.Pseudo, ":break"), (Name.Function, "@main:entry:2")]


def test_the_lexer_loads_as_a_plugin_file():
    lexer = load_lexer_from_file(str(REPO / "repl" / "lexer.py"), "DlasmLexer")
    assert "dlasm" in lexer.aliases and "*.dlasm" in lexer.filenames


# -- completion ------------------------------------------------------------------------------

@pytest.fixture
def loop():
    s = ReplSession(str(EXAMPLES / "loop.dlasm"))
    s.handle("%xx = const 1.0 : f32[2]")
    return s


@pytest.mark.parametrize("before, expected", [
    (":ru", [":run"]),
    (":run @", ["@main"]),
    (":run @main %", ["%xx"]),
    (":run @main %xx r", ["random"]),
    (":break @main:bo", ["@main:body"]),
    (":break @main:done:", ["@main:done:0"]),
    (":jit al", ["always"]),
    (":help ru", ["run"]),
    ("%y = softm", ["softmax"]),
    ("%y = softmax %xx {", ["axis"]),
    ("%y = reduce_sum %xx {axes = [0], ", ["keepdims"]),
    ("%y = relu %x", ["%xx"]),
    ("  jmp d", ["done"]),
    ("func @g(%a: f6", ["f64"]),
    ("fu", ["func"]),
])
def test_completion(loop, before, expected):
    assert complete(loop, before)[1] == expected


def test_completion_follows_the_live_session(loop):
    assert ":step" in complete(loop, ":")[1] and len(complete(loop, ":")[1]) == len(COMMANDS)
    loop.handle("func @fresh(%a: f32[2]) -> f32[2] {\n  ret %a\n}")
    assert complete(loop, "%y = call @f")[1] == ["@fresh"]
    # registers and labels typed earlier in the same definition
    text = "func @h(%in: f32[2]) -> f32[2] {\nstart:\n  %tmp = relu %in\n  jmp st"
    assert complete(loop, text, text)[1] == ["start"]
    assert complete(loop, "  %z = neg %t", text + "\n  %z = neg %t")[1] == ["%tmp"]
    loop.handle(":debug @main 3")
    assert "%n" in complete(loop, ":print %")[1]        # the paused frame's registers
    words = [c.text for c in SessionCompleter(loop).get_completions(Document(":deb"), None)]
    assert words == [":debug"]


def test_file_completion(loop, tmp_path):
    (tmp_path / "weights.npy").write_bytes(b"")
    assert complete(loop, f":load {tmp_path}/wei")[1] == [f"{tmp_path}/weights.npy"]


# -- the prompt_toolkit app ------------------------------------------------------------------

def test_app_reads_lines_and_multi_line_definitions():
    session = ReplSession(MLP)
    out: list[str] = []
    history = InMemoryHistory()
    with create_pipe_input() as inp:
        inp.send_text("%x = const 1.0 : f32[2, 3]\r")
        inp.send_text("func @g(%a: f32[N, 3]) -> f32[N, 3] {\r%b = mul %a, 2.0\rret %b\r}\r")
        inp.send_text(":run @g %x\r")
        inp.send_text("%z = nosuchop %x\r")
        inp.send_text(":regs\r")
        inp.send_text("\x04")
        assert run_ui(session, input=inp, output=DummyOutput(), history=history,
                      write=out.append) == 0
    assert out[0].startswith("loaded") and out[1].startswith("dlvm REPL")
    assert out[2].startswith("%x = f32[2, 3]")
    assert out[3] == "defined @g(%a: f32[N, 3]) -> f32[N, 3]"
    assert out[4].startswith("@g returned 1 value") and "[2. 2. 2.]" in out[4]
    assert out[5].startswith("<repl>:1:6: error: unknown op 'nosuchop'")
    assert "%out0 = f32[2, 3]" in out[6]
    entries = list(history.get_strings())
    assert entries[1] == "func @g(%a: f32[N, 3]) -> f32[N, 3] {\n  %b = mul %a, 2.0\n  ret %b\n}"


def test_app_quits_on_the_quit_command():
    session = ReplSession()
    out: list[str] = []
    with create_pipe_input() as inp:
        inp.send_text(":quit\r%never = const 1 : i32[]\r")
        run_ui(session, input=inp, output=DummyOutput(), history=InMemoryHistory(),
               write=out.append)
    assert session.done and "never" not in session.regs


def test_history_file_from_the_environment(tmp_path, monkeypatch):
    path = tmp_path / "sub" / "hist"
    monkeypatch.setenv("DLVM_HISTORY", str(path))
    h = open_history()
    h.append_string(":funcs")
    assert path.exists() and ":funcs" in path.read_text()
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert list(open_history(blocked / "hist").get_strings()) == []   # unwritable: in memory


def test_lines_from_a_pipe():
    out: list[str] = []
    run_lines(ReplSession(MLP), iter(["func @g(%a: f32[2]) -> f32[2] {\n", "  ret %a\n", "}\n",
                                      ":funcs\n", ":quit\n", ":funcs\n"]), out.append)
    assert out[1] == "defined @g(%a: f32[2]) -> f32[2]" and "func @g" in out[2] and len(out) == 3


# -- end to end, in a real terminal ----------------------------------------------------------

def _dlvm_command() -> str:
    exe = Path(sys.executable).parent / "dlvm"
    return str(exe) if exe.exists() else (shutil.which("dlvm") or "")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_end_to_end_in_tmux(tmp_path):
    dlvm = _dlvm_command()
    assert dlvm, "the dlvm command is not installed next to the Python running the tests"
    socket = f"dlvm-test-{uuid.uuid4().hex[:8]}"
    hist = tmp_path / "history"
    tmux = ["tmux", "-L", socket]
    env = {**os.environ, "DLVM_HISTORY": str(hist), "TERM": "xterm"}

    def pane() -> str:
        return subprocess.run([*tmux, "capture-pane", "-p", "-t", "t", "-S", "-200"],
                              capture_output=True, text=True, env=env).stdout

    def send(*keys: str) -> None:
        subprocess.run([*tmux, "send-keys", "-t", "t", *keys], check=True, env=env)

    def wait_for(text: str, timeout: float = 15.0) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            screen = pane()
            if text in screen:
                return screen
            time.sleep(0.05)
        raise AssertionError(f"{text!r} did not appear; the screen:\n{pane()}")

    subprocess.run([*tmux, "new-session", "-d", "-s", "t", "-x", "120", "-y", "50",
                    f"cd {REPO} && {dlvm} repl examples/mlp.dlasm"], check=True, env=env)
    try:
        wait_for("dlvm>")
        send(":debug @main random N=2", "Enter")
        wait_for("-> @main:entry:0")
        send(":step", "Enter")
        wait_for("-> @main:entry:1")
        send(":print %h", "Enter")
        wait_for("min ")
        send("func @g(%a: f32[N, 3]) -> f32[N, 3] {", "Enter", "%b = mul %a, 2.0", "Enter",
             "ret %b", "Enter", "}", "Enter")
        wait_for("defined @g(%a: f32[N, 3]) -> f32[N, 3]")
        send(":set %q f32[2, 3]", "Enter")
        wait_for("%q = f32[2, 3]")
        send(":run @g %q", "Enter")
        wait_for("@g returned 1 value")
        send("%z = softm")
        send("Tab")
        wait_for("%z = softmax")
        send(" %q", "Enter")
        wait_for("%z = f32[2, 3]")
        send(":jit always", "Enter")
        wait_for("jit always:")
        send(":run @main random", "Enter")
        import jit
        wait_for("compiled by the JIT" if hasattr(jit, "Jit") else "the JIT failed", 60)
        send("C-d")
        end = time.monotonic() + 10
        while time.monotonic() < end and subprocess.run(
                [*tmux, "has-session", "-t", "t"], capture_output=True, env=env).returncode == 0:
            time.sleep(0.05)
        assert ":debug @main random N=2" in hist.read_text()
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, env=env)


def test_typed_indentation_is_not_added_to_the_automatic_one():
    session = ReplSession(MLP)
    out: list[str] = []
    history = InMemoryHistory()
    with create_pipe_input() as inp:
        inp.send_text("func @h(%a: f32[N, 3]) -> f32[N, 3] {\r    %b = mul %a, 2.0\r"
                      "  ret %b\r}\r")
        inp.send_text("\x04")
        run_ui(session, input=inp, output=DummyOutput(), history=history, write=out.append)
    entries = list(history.get_strings())
    assert entries[0] == "func @h(%a: f32[N, 3]) -> f32[N, 3] {\n  %b = mul %a, 2.0\n  ret %b\n}"
