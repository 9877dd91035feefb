"""The `dlvm` command as a user drives it: exit codes (0 ok, 1 bad program/bytecode/trap, 2 usage),
one diagnostic per error and never a traceback, inputs generated from the signature."""
from __future__ import annotations

import json

import numpy as np
import pytest
from shared_paths import PROJECT_EXAMPLES

from cli import main

MLP = str(PROJECT_EXAMPLES / "mlp.dlasm")


def run_cli(capsys, *args):
    try:
        code = main(list(args))
    except SystemExit as e:          # argparse usage errors
        code = e.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_run_generates_inputs_from_the_signature(capsys):
    code, out, _ = run_cli(capsys, "run", MLP, "--dim", "N=5")
    assert code == 0
    assert "out0: f32[5, 3]" in out


def test_run_writes_npz_and_repeats(capsys, tmp_path):
    out = tmp_path / "o.npz"
    code, _, _ = run_cli(capsys, "run", MLP, "--out", str(out), "--repeat", "3", "--jit", "off")
    assert code == 0
    got = np.load(out)["out0"]
    np.testing.assert_allclose(got.sum(axis=-1), 1.0, rtol=1e-5)


def test_profile_and_trace(capsys, tmp_path):
    trace = tmp_path / "t.json"
    code, _, err = run_cli(capsys, "run", MLP, "-q", "--profile", "--trace", str(trace))
    assert code == 0
    assert "matmul" in err and "calls" in err
    names = {e["name"] for e in json.loads(trace.read_text())["traceEvents"]}
    assert {"matmul", "softmax"} <= names


def test_profile_is_readable_and_traces_show_compiles(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("DLVM_CACHE_DIR", str(tmp_path / "cache"))      # a cold cache: compiles
    trace = tmp_path / "t.json"
    code, _, err = run_cli(capsys, "run", MLP, "-q", "--jit", "always", "--repeat", "3",
                           "--profile", "--trace", str(trace))
    assert code == 0
    assert "first ms" in err and "compile ms" in err and "compiled regions:" in err
    assert "{" not in err.split("compiled regions:")[1]          # no dict reprs
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e.get("cat") == "compile" and e["name"].startswith("compile region") for e in events)


def test_verify_and_disasm(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "verify", MLP)
    assert code == 0 and "ok" in out
    bc = tmp_path / "m.dlbc"
    assert run_cli(capsys, "asm", MLP, "-o", str(bc))[0] == 0
    code, out, _ = run_cli(capsys, "disasm", str(bc))
    assert code == 0 and "softmax" in out and "func @main" in out


@pytest.mark.parametrize("text, message", [
    ("module m\nfunc @main(%x: f32[4]) -> f32[4] {\n  %y = exp %x, %x\n  ret %y\n}\n",
     "prog.dlasm:3:"),
    ("module m\nfunc @main(%x: f32[4]) -> f32[4] {\n  %y = exp %q\n  ret %y\n}\n",
     "%q is used but never defined"),
])
def test_bad_programs_exit_1_with_location(capsys, tmp_path, text, message):
    p = tmp_path / "prog.dlasm"
    p.write_text(text)
    code, _, err = run_cli(capsys, "run", str(p))
    assert code == 1
    assert message in err


def test_trap_names_the_source_line(capsys, tmp_path):
    p = tmp_path / "t.dlasm"
    p.write_text("module t\nfunc @main(%x: f32[N]) -> f32[N] {\n"
                 "  %c = gt %x, 100.0\n  assert %c, \"x must exceed 100\"\n  ret %x\n}\n")
    code, _, err = run_cli(capsys, "run", str(p))
    assert code == 1
    assert "t.dlasm:4:" in err and "assertion failed: x must exceed 100" in err
    assert 'assert %c, "x must exceed 100"' in err      # the source line is shown


def test_bad_bytecode_names_the_mismatch(capsys, tmp_path):
    p = tmp_path / "x.dlbc"
    p.write_bytes(b"garbage that is not bytecode")
    code, _, err = run_cli(capsys, "run", str(p))
    assert code == 1 and "magic" in err


def test_usage_errors_exit_2(capsys, tmp_path):
    assert run_cli(capsys, "run")[0] == 2
    assert run_cli(capsys, "run", MLP, "--dim", "N")[0] == 2
    assert run_cli(capsys, "frobnicate")[0] == 2
    code, _, err = run_cli(capsys, "run", MLP, "--entry", "nope")
    assert code == 2 and "no function @nope" in err
    inputs = tmp_path / "in.npz"
    np.savez(inputs, y=np.zeros(3))
    code, _, err = run_cli(capsys, "run", MLP, "--inputs", str(inputs))
    assert code == 2 and "missing x" in err and "no parameter named y" in err


def test_missing_file_is_an_error_not_a_traceback(capsys):
    code, _, err = run_cli(capsys, "run", "does/not/exist.dlasm")
    assert code == 1 and "cannot read" in err


def test_wrong_input_dtype_is_a_trap(capsys, tmp_path):
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.zeros((2, 4)))        # float64, but %x is f32
    code, _, err = run_cli(capsys, "run", MLP, "--inputs", str(inputs))
    assert code == 1 and "must be f32[N, 4], got f64[2, 4]" in err


@pytest.mark.parametrize("emit, suffix", [("kernel-ir", ".kir"), ("llvm", ".ll"), ("asm", ".s")])
def test_compile_writes_one_file_per_region(capsys, tmp_path, emit, suffix):
    code, out, _ = run_cli(capsys, "compile", str(PROJECT_EXAMPLES / "layernorm.dlasm"),
                           "--emit", emit, "--dim", "N=8", "--dim", "D=16", "-o", str(tmp_path))
    assert code == 0
    files = sorted(tmp_path.iterdir())
    assert files and all(f.suffix == suffix for f in files)
    assert [str(f) for f in files] == sorted(out.split())


def test_compile_of_unknown_dims_that_broadcast_only_as_ones(capsys, tmp_path):
    # the types leave %a's dims unknown: taken as 2 they would not broadcast against 32 (an
    # exporter's [?, 1] that lost its 1), so the region's kernel is written for a 1 there
    prog = tmp_path / "p.dlasm"
    prog.write_text("""module m
func @main(%a: f32[?, ?], %b: f32[?, 32]) -> f32[?, 32] {
entry:
  %s = sigmoid %a
  %c = mul %s, %b
  ret %c
}
""")
    out_dir = tmp_path / "out"
    code, out, err = run_cli(capsys, "compile", str(prog), "--emit", "kernel-ir", "-o",
                             str(out_dir))
    assert code == 0, err
    assert [p.suffix for p in out_dir.iterdir()] == [".kir"]


def test_compile_for_cuda_writes_ptx_that_ptxas_accepts(capsys, tmp_path):
    import shutil
    import subprocess
    code, out, _ = run_cli(capsys, "compile", str(PROJECT_EXAMPLES / "gelu.dlasm"), "--target",
                           "cuda", "--emit", "ptx", "--dim", "N=1024", "-o", str(tmp_path))
    assert code == 0
    ptx = sorted(tmp_path.glob("*.ptx"))
    assert {p.name.split(".")[-2] for p in ptx} == {"sm_80", "sm_90"}
    if shutil.which("ptxas") is None:
        pytest.skip("ptxas (CUDA toolkit) not installed")
    for p in ptx:
        arch = p.name.split(".")[-2]
        r = subprocess.run(["ptxas", f"-arch={arch}", str(p), "-o", str(tmp_path / "k.cubin")],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


def test_ptx_needs_the_cuda_target(capsys, tmp_path):
    # --emit ptx alone implies the CUDA target; asking for the CPU with it is a usage error
    code, _, err = run_cli(capsys, "compile", MLP, "--target", "cpu", "--emit", "ptx", "-o",
                           str(tmp_path))
    assert code == 2 and "--target cuda" in err


@pytest.mark.parametrize("args, code, message", [
    (["run", MLP, "-q", "--trace", "/nonexistent/dir/t.json"], 2, "cannot write"),
    (["opt", MLP, "--passes", "foo"], 2, "unknown pass foo"),
    (["run", MLP, "--max-steps", "0"], 2, "--max-steps must be a positive"),
    (["disasm", "/nonexistent.dlbc"], 1, "cannot read"),
    (["compile", MLP, "-o", "/proc/dlvm-cannot-create"], 2, "cannot create"),
])
def test_user_mistakes_are_not_internal_errors(capsys, args, code, message):
    got, _, err = run_cli(capsys, *args)
    assert got == code and message in err and "internal error" not in err


def test_import_of_a_missing_or_non_onnx_file(capsys, tmp_path):
    pytest.importorskip("onnx")
    code, _, err = run_cli(capsys, "import", str(tmp_path / "no.onnx"), "-o", str(tmp_path / "x"))
    assert code == 1 and "cannot read" in err
    code, _, err = run_cli(capsys, "import", MLP, "-o", str(tmp_path / "x.dlbc"))
    assert code == 1 and "is not an ONNX model" in err


def test_long_compiles_show_progress(capsys, tmp_path, monkeypatch):
    from cli import progress
    monkeypatch.setattr(progress, "SHOW_AFTER_S", 0.0)
    monkeypatch.setenv("DLVM_PROGRESS", "1")
    monkeypatch.setenv("DLVM_CACHE_DIR", str(tmp_path / "cache"))
    code, _, err = run_cli(capsys, "run", MLP, "--jit", "always")
    assert code == 0 and "compiling:" in err and "compiled " in err and "kernel" in err


def test_run_reads_narrow_dtype_inputs_from_npz(tmp_path, capsys):
    # npz keeps ml_dtypes arrays as raw void bytes: a parameter of a narrow dtype reads them as
    # that dtype (bytes of another width are still the VM's clean trap)
    ml_dtypes = pytest.importorskip("ml_dtypes")
    prog = tmp_path / "n.dlasm"
    prog.write_text("module n\nfunc @main(%x: bf16[3]) -> bf16[3] {\n  %y = mul %x, 2.0\n"
                    "  ret %y\n}\n")
    np.savez(tmp_path / "in.npz", x=np.array([1.5, -2, 3.25], ml_dtypes.bfloat16))
    code, out, err = run_cli(capsys, "run", str(prog), "--inputs", str(tmp_path / "in.npz"),
                             "--out", str(tmp_path / "out.npz"))
    assert code == 0, err
    got = np.load(tmp_path / "out.npz")["out0"].view(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got.astype(np.float32), [3, -4, 6.5])
    np.savez(tmp_path / "bad.npz", x=np.zeros(3, np.float32))
    code, out, err = run_cli(capsys, "run", str(prog), "--inputs", str(tmp_path / "bad.npz"))
    assert code != 0 and "must be bf16[3]" in err
