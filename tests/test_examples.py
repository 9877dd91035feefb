"""Every shared example runs and matches its expected outputs, through the API (interpreter and
JIT) and through the `dlvm` command; the project's examples/ copy stays identical."""
from __future__ import annotations

import filecmp
import subprocess
import sys

import numpy as np
import pytest
from shared_paths import PROJECT_EXAMPLES, SHARED_EXAMPLES, example_programs

import dlvmrt

PROGRAMS = example_programs() or example_programs(PROJECT_EXAMPLES)
if not PROGRAMS:
    pytest.skip("no example programs found (set DLVM_SHARED)", allow_module_level=True)


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype,
                                                                  want.shape)
    if want.dtype.kind == "f":
        tol = dict(rtol=1e-4, atol=1e-5) if want.dtype == np.float32 else dict(rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(got, want, **tol)
    else:
        np.testing.assert_array_equal(got, want)


def run_api(prog, jit: str):
    inputs = dict(np.load(prog.with_suffix(".inputs.npz")))
    vm = dlvmrt.VM(dlvmrt.load(prog), jit=jit)
    outs = vm.run("main", **inputs)
    outs = vm.run("main", **inputs)      # a second run: tiered-up code in jit="auto"
    return outs


@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.stem)
@pytest.mark.parametrize("jit", ["off", "auto", "always"])
def test_example_api(prog, jit):
    outs = run_api(prog, jit)
    want = np.load(prog.with_suffix(".expect.npz"))
    assert [f"out{i}" for i in range(len(outs))] == sorted(want.files, key=lambda k: int(k[3:]))
    for i, o in enumerate(outs):
        assert_close(o, want[f"out{i}"])


@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.stem)
def test_example_bytecode_runs_the_same(prog, tmp_path):
    import assembler
    import isa.bytecode as bc
    data = bc.encode(assembler.assemble_file(str(prog)))
    inputs = dict(np.load(prog.with_suffix(".inputs.npz")))
    outs = dlvmrt.VM(data).run("main", **inputs)
    want = np.load(prog.with_suffix(".expect.npz"))
    for i, o in enumerate(outs):
        assert_close(o, want[f"out{i}"])


def dlvm(*args, **kw):
    return subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True,
                          text=True, timeout=120, **kw)


@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.stem)
def test_example_cli(prog, tmp_path):
    out = tmp_path / "out.npz"
    r = dlvm("run", str(prog), "--inputs", str(prog.with_suffix(".inputs.npz")), "--out", str(out))
    assert r.returncode == 0, r.stderr
    got, want = np.load(out), np.load(prog.with_suffix(".expect.npz"))
    assert sorted(got.files) == sorted(want.files)
    for k in want.files:
        assert_close(got[k], want[k])


@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.stem)
def test_example_cli_roundtrip(prog, tmp_path):
    bc1, bc2, txt = tmp_path / "a.dlbc", tmp_path / "b.dlbc", tmp_path / "dis.dlasm"
    assert dlvm("asm", str(prog), "-o", str(bc1)).returncode == 0
    r = dlvm("disasm", str(bc1))
    assert r.returncode == 0, r.stderr
    txt.write_text(r.stdout)
    r = dlvm("asm", str(txt), "-o", str(bc2))
    assert r.returncode == 0, r.stderr
    assert bc1.read_bytes() == bc2.read_bytes()


def test_project_examples_match_shared():
    if not SHARED_EXAMPLES.is_dir():
        pytest.skip("no ../shared")
    for p in SHARED_EXAMPLES.iterdir():
        if p.is_file():
            assert filecmp.cmp(p, PROJECT_EXAMPLES / p.name, shallow=False), p.name
