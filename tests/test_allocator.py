"""The VM's allocator settings (dlvmrt/allocator.py): applied once where glibc is, never with
DLVM_MALLOC=system, and an allocation no machine could hold still fails cleanly."""
from __future__ import annotations

import platform
import subprocess
import sys

import numpy as np
import pytest

import dlvmrt
from dlvmrt import allocator

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(not GLIBC, reason="the settings are glibc's")
def test_a_tiering_vm_tunes_the_allocator_once():
    code = ("import dlvmrt, dlvmrt.allocator as a; from isa.builder import ModuleBuilder; "
            "mb = ModuleBuilder('m'); f = mb.function('main', [('x', 'f32[4]')], ['f32[4]']); "
            "f.ret(f.relu(f.arg('x'))); m = mb.finish(); "
            "dlvmrt.VM(m, jit='off'); print(a._done); dlvmrt.VM(m, jit='auto'); "
            "print(a._done, a._applied, a.tune())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "True", "True"]


def test_system_allocator_on_request():
    code = "import dlvmrt.allocator as a; print(a.tune())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"DLVM_MALLOC": "system", "PATH": "/usr/bin:/bin",
                              "PYTHONPATH": ":".join(sys.path)})
    assert out.stdout.strip() == "False"


def test_huge_allocations_still_fail_cleanly():
    allocator.tune()
    from isa.builder import ModuleBuilder
    mb = ModuleBuilder("big")
    f = mb.function("main", [("n", "i64[1]")], ["f32[?]"])
    f.ret(f.fill(f.arg("n"), mb.constant("v", np.array(1.0, np.float32))))
    vm = dlvmrt.VM(mb.finish(), jit="auto")
    with pytest.raises(dlvmrt.ResourceExhausted):
        vm.run(np.array([1 << 45]))
