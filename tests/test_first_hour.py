"""What a new user met in the first hour: each fixed, each checked."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dlvmrt
from cli import main as cli_main

MLP = str(Path(__file__).resolve().parents[1] / "examples" / "mlp.dlasm")


def run_cli(capsys, *args):
    code = cli_main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_unknown_dim_is_a_usage_error_listing_the_dims(capsys):
    code, _, err = run_cli(capsys, "run", MLP, "--dim", "B=3")
    assert code == 2 and "--dim B" in err and "its dims: N" in err


def test_generated_inputs_are_shown_and_saved(capsys, tmp_path):
    saved = tmp_path / "in.npz"
    code, out, err = run_cli(capsys, "run", MLP, "--dim", "N=2", "--seed", "5",
                             "--save-inputs", str(saved))
    assert code == 0 and "inputs generated from the signature (seed 5; N=2" in err
    assert "%x: f32[2, 4]" in err
    with np.load(saved) as z:
        x = z["x"]
    code, out2, _ = run_cli(capsys, "run", MLP, "--inputs", str(saved))
    assert code == 0 and out2 == out                   # the same run, from the saved inputs
    (y,) = dlvmrt.VM(MLP, jit="off").run("main", x)
    assert y.shape == (2, 3)


def test_default_dim_is_named_when_not_given(capsys):
    code, _, err = run_cli(capsys, "run", MLP)
    assert code == 0 and "N=4 (default; --dim sets it)" in err


def test_run_without_an_entry_name_runs_main():
    x = np.ones((2, 4), np.float32)
    vm = dlvmrt.VM(MLP, jit="off")
    (a,) = vm.run(x)
    (b,) = vm.run("main", x)
    np.testing.assert_array_equal(a, b)


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        cli_main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("dlvm ")


def test_emit_ptx_implies_the_cuda_target(capsys, tmp_path):
    code, out, err = run_cli(capsys, "compile", MLP, "--emit", "ptx", "-o", str(tmp_path))
    assert code == 0, err
    assert all(p.endswith(".ptx") for p in out.split())
    code, _, err = run_cli(capsys, "compile", MLP, "--target", "cpu", "--emit", "ptx", "-o",
                           str(tmp_path))
    assert code == 2 and "--target cuda" in err


def test_every_argument_has_help():
    from cli.main import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    missing = [f"{name} {act.dest}" for name, p in sub.choices.items() for act in p._actions
               if act.help is None and act.dest != "help"]
    assert not missing, missing
