"""Running out of memory anywhere is a clean trap (ResourceExhausted, exit 1) naming the
instruction, never an internal error: constants, fills, results of interpreted ops, JIT region
outputs, products, and calls too deep."""
from __future__ import annotations

import numpy as np
import pytest

import assembler
import dlvmrt
from cli import main as cli_main
from isa.errors import ResourceExhausted

HUGE_CONST = """module big
func @main(%x: f32[4]) -> f32[4] {
entry:
  %y = const 0 : f32[1000000, 1000000]
  ret %x
}
"""

NAMED_FILL = """module fill
func @main(%x: f32[N]) -> f32[N, N] {
entry:
  %y = const 1.5 : f32[N, N]
  ret %y
}
"""

OUTER = """module outer
func @main(%a: f32[N, 1], %b: f32[1, N]) -> f32[N, N] {
entry:
  %s = add %a, %b
  %t = mul %s, 2.0
  ret %t
}
"""

# K = 2: a product of K = 1 is an outer product, which the pipeline writes as a multiply
PRODUCT = """module prod
func @main(%a: f32[N, 2], %b: f32[2, N]) -> f32[N, N] {
entry:
  %p = matmul %a, %b
  ret %p
}
"""

MOVE = """module move
func @main(%x: f32[N]) -> f32[N, N] {
entry:
  %y = broadcast_to %x {shape = [N, N]}
  ret %y
}
"""

N = 3_000_000      # N x N f32 is 36 TB: no machine holds it


@pytest.mark.parametrize("mode", ["off", "always"])
@pytest.mark.parametrize("text,args,op", [
    (HUGE_CONST, lambda: [np.zeros(4, np.float32)], "const"),
    (NAMED_FILL, lambda: [np.zeros(N, np.float32)], "const"),
    (OUTER, lambda: [np.zeros((N, 1), np.float32), np.zeros((1, N), np.float32)], "add"),
    (PRODUCT, lambda: [np.zeros((N, 2), np.float32), np.zeros((2, N), np.float32)], "matmul"),
    (MOVE, lambda: [np.zeros(N, np.float32)], "broadcast_to"),
], ids=["const", "named-fill", "jit-region-output", "product", "movement"])
def test_out_of_memory_is_a_trap_at_the_instruction(text, args, op, mode):
    vm = dlvmrt.VM(assembler.parse(text), jit=mode)
    with pytest.raises(ResourceExhausted, match="out of memory") as e:
        vm.run("main", *args())
    assert f"({op})" in str(e.value.format())


def test_cli_exit_status_1(tmp_path, capsys):
    prog = tmp_path / "big.dlasm"
    prog.write_text(HUGE_CONST)
    assert cli_main(["run", str(prog)]) == 1
    err = capsys.readouterr().err
    assert "out of memory in const" in err and "internal error" not in err


def test_calls_too_deep():
    rec = assembler.parse("""module rec
func @f(%x: i64[]) -> i64[] {
entry:
  %y = call @f(%x)
  ret %y
}
func @main(%x: i64[]) -> i64[] {
entry:
  %y = call @f(%x)
  ret %y
}
""")
    with pytest.raises(ResourceExhausted, match="call depth"):
        dlvmrt.VM(rec, jit="off").run("main", np.int64(1))


@pytest.fixture
def memory_limit(monkeypatch):
    """A 1 MB ceiling per value (DLVM_MEMORY_LIMIT): what a machine that overcommits memory
    without limit needs (there a too-large allocation succeeds and the first write kills the
    process), checked here on requests this machine could well satisfy."""
    from dlvmrt.memory_ceiling import ceiling_bytes
    monkeypatch.setenv("DLVM_MEMORY_LIMIT", "1M")
    ceiling_bytes.cache_clear()
    yield
    ceiling_bytes.cache_clear()


@pytest.mark.parametrize("mode", ["off", "always"])
@pytest.mark.parametrize("text,op,two", [(NAMED_FILL, "const", False), (OUTER, "add", 1),
                                         (PRODUCT, "matmul", 2), (MOVE, "broadcast_to", False)],
                         ids=["named-fill", "jit-region-output", "product", "movement"])
def test_results_beyond_the_memory_ceiling_trap_before_allocating(memory_limit, text, op, two,
                                                                   mode):
    def args(size):
        if two:
            return [np.ones((size, two), np.float32), np.ones((two, size), np.float32)]
        return [np.ones(size, np.float32)]
    vm = dlvmrt.VM(assembler.parse(text), jit=mode, native="off")
    (small,) = vm.run("main", *args(300))      # 360 KB: under the ceiling
    assert small.shape == (300, 300)
    with pytest.raises(ResourceExhausted, match="out of memory") as e:
        vm.run("main", *args(600))              # 1.44 MB
    assert f"({op})" in str(e.value.format())


def test_a_static_constant_beyond_the_ceiling_is_never_made(memory_limit):
    vm = dlvmrt.VM(assembler.parse(HUGE_CONST.replace("1000000, 1000000", "1000, 1000")),
                   jit="off")
    with pytest.raises(ResourceExhausted, match="out of memory") as e:
        vm.run("main", np.zeros(4, np.float32))
    assert "(const)" in str(e.value.format())


def test_the_native_library_keeps_the_ceiling(memory_limit):
    vm = dlvmrt.VM(assembler.parse(PRODUCT), jit="auto", native="always")
    small = [np.ones((300, 2), np.float32), np.ones((2, 300), np.float32)]
    for _ in range(3):
        vm.run("main", *small)
    if vm.native.state != "ready":
        pytest.skip(f"no native library here: {vm.native.status()}")
    with pytest.raises(ResourceExhausted, match="out of memory"):
        vm.run("main", np.ones((600, 2), np.float32), np.ones((2, 600), np.float32))
