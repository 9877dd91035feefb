"""The fast call into aot libraries (dlvmrt/pycall): the same results, errors and thread safety
as the ctypes call it replaces, and ctypes still serves where the extension is off."""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from concurrency import on_threads
from results import close

import assembler
import dlvmrt
from dlvmrt import aot, pycall
from isa.errors import Trap
from jit.targets.aot import compile_library, find_cc

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no C compiler")

PROGRAM = """module many
func @main(%x: f32[N, 3], %i: i64[N], %k: i32[]) -> (f32[N, 3], i64[], f32[0, 3], bool[N], f64[N]) {
entry:
  %y = tanh %x
  %s = reduce_sum %i
  %e = slice %x {starts = [0, 0], ends = [0, 3], axes = [0, 1]}
  %z = const 0 : i64[]
  %b = gt %i, %z
  %r = reduce_sum %x {axes = [1]}
  %r64 = cast %r {to = f64}
  %kk = cast %k {to = i64}
  %d = div %s, %kk
  ret %y, %d, %e, %b, %r64
}
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    module = assembler.parse(PROGRAM)
    out = tmp_path_factory.mktemp("many")
    compile_library(module, out)
    return module, out


def both(out: Path) -> tuple[aot.Library, aot.Library]:
    fast, slow = aot.load(out), aot.load(out)
    slow._fast = None
    return fast, slow


def test_the_extension_builds_here():
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        pytest.skip("no Python headers")
    assert pycall.load() is not None, pycall.reason()


def test_same_results_as_ctypes_and_the_interpreter(library):
    module, out = library
    fast, slow = both(out)
    assert fast._fast is not None or pycall.reason()
    vm = dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(3)
    for n in (1, 4, 2):
        args = (rng.standard_normal((n, 3)).astype(np.float32),
                rng.integers(-5, 5, n).astype(np.int64), np.int32(2))
        want = vm.run("main", *args)
        for lib in (fast, slow):
            got = lib.run("main", *args)
            close(got, want, 1e-6)
            assert all(g.flags.c_contiguous and g.flags.writeable for g in got)
    # results outlive the library object that made them
    got = fast.run("main", *args)
    del fast
    close(got, want, 1e-6)


def test_errors_are_the_libraries(library):
    _, out = library
    fast, slow = both(out)
    x, i = np.ones((2, 3), np.float32), np.ones(2, np.int64)
    for lib in (fast, slow):
        with pytest.raises(Trap, match="division or modulo by zero"):
            lib.run("main", x, i, np.int32(0))
        with pytest.raises(Trap, match="must be f32"):
            lib.run("main", x.astype(np.float64), i, np.int32(1))
        with pytest.raises(Trap, match="named dim"):
            lib.run("main", x, np.ones(3, np.int64), np.int32(1))
        code, message, results = lib.call("main", [np.ones((1,) * 9, np.float32), i,
                                                   np.array(1, np.int32)])
        assert code and "8" in message and results == ()


def test_threads_share_the_fast_call(library):
    module, out = library
    fast, _ = both(out)
    vm = dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(4)
    inputs = [(rng.standard_normal((n, 3)).astype(np.float32), rng.integers(-5, 5, n),
               np.int32(3)) for n in (1, 2, 5)]
    wants = [vm.run("main", *a) for a in inputs]

    def calls(k: int) -> None:
        for _ in range(200):
            close(fast.run("main", *inputs[k % 3]), wants[k % 3], 1e-6)
    on_threads(calls, 6)


def test_off_falls_back_to_ctypes(library):
    _, out = library
    code = ("import sys; from dlvmrt import aot, pycall; import numpy as np; "
            f"lib = aot.load({str(out)!r}); "
            "assert lib._fast is None and 'DLVM_PYCALL' in pycall.reason(); "
            "print(lib.run('main', np.ones((2, 3), np.float32), np.ones(2, np.int64), "
            "np.int32(1))[1])")
    env = {**os.environ, "DLVM_PYCALL": "off"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2"
