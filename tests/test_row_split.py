"""Tiles of rows: which functions may run a batch as tiles through the whole program
(jit/row_split.py), and the native library's tiled runs against the interpreter."""
from __future__ import annotations

import numpy as np
import pytest
from concurrency import on_threads
from results import close

import assembler
import dlvmrt
from dlvmrt import aot
from isa.errors import Trap
from isa.verify import verify_module
from jit.row_split import RowSplit, row_split
from jit.targets.aot import compile_library, find_cc


def split_of(text: str):
    module = assembler.parse(text)
    return row_split(module, "main", verify_module(module)["main"])


def program(params: str, result: str, body: str) -> str:
    return f"module m\nfunc @main({params}) -> {result} {{\nentry:\n{body}\n}}\n"


CNN = program("%x: f32[N, 3, 8, 8], %w: f32[4, 3, 3, 3]", "f32[N, 4]", """
  %c = conv2d %x, %w {pads = [1, 1, 1, 1]}
  %r = relu %c
  %p = maxpool2d %r {kernel = [2, 2], strides = [2, 2]}
  %m = reduce_mean %p {axes = [2, 3]}
  %s = softmax %m {axis = 1}
  ret %s""")


def test_a_cnn_splits_by_rows():
    s = split_of(CNN)
    assert isinstance(s, RowSplit)
    assert s.dim == "N" and s.params == (True, False)
    assert s.row_bytes == 4 * 8 * 8 * 4          # the conv's output per image
    assert s.stages == 5                        # conv2d, relu, maxpool2d, reduce_mean, softmax


@pytest.mark.parametrize("body,why", [
    ("%m = reduce_mean %x {axes = [0]}\n  %y = sub %x, %m", "mixes rows"),
    ("%y = softmax %x {axis = 0}", "over the row axis"),
    ("%t = transpose %x {perm = [1, 0]}\n  %y = transpose %t {perm = [1, 0]}",
     "past its leading axis"),
    ("%y = concat %x, %x {axis = 0}", "mixes rows|joins along"),
    ("%s = slice %x {starts = [1], ends = [9223372036854775807], axes = [0]}\n"
     "  %y = concat %s, %s {axis = 0}", "slices the row axis|mixes rows"),
    ("%g = gather %x, %x2 {axis = 0}\n  %y = add %g, 1.0", "indexes along the row axis|mixes"),
    ("%k = shape_of %x\n  %s = slice %k {starts = [0], ends = [1]}\n"
     "  %c = cast %s {to = f32}\n  %y = mul %x, %c", "the batch's run-time size"),
])
def test_what_mixes_rows_keeps_the_batch_whole(body, why):
    params = "%x: f32[N, 4]" + (", %x2: i64[N]" if "%x2" in body else "")
    text = program(params, "f32[N, 4]", f"  {body}\n  ret %y")
    s = split_of(text)
    assert isinstance(s, str)
    assert any(w in s for w in why.split("|")), s


def test_an_unused_run_time_shape_splits():
    # the exporters' shape arithmetic that the importer resolved and left unused
    text = program("%x: f32[N, 4]", "f32[N, 4]", """
  %k = shape_of %x
  %s = slice %k {starts = [0], ends = [1]}
  %y = mul %x, 2.0
  ret %y""")
    assert isinstance(split_of(text), RowSplit)


def test_a_product_over_the_rows_keeps_the_batch_whole():
    # x^T x contracts over the batch: a Gram matrix of the whole batch
    text = program("%x: f32[N, 4], %y: f32[N, 4]", "f32[N, 4]", """
  %t = transpose %x {perm = [1, 0]}
  %g = matmul %t, %y
  %r = matmul %y, %g
  ret %r""")
    assert isinstance(split_of(text), str)


def test_an_embedding_lookup_splits():
    text = program("%i: i64[N, 5], %table: f32[10, 3]", "f32[N, 3]", """
  %e = gather %table, %i {axis = 0}
  %m = reduce_sum %e {axes = [1]}
  ret %m""")
    s = split_of(text)
    assert isinstance(s, RowSplit) and s.params == (True, False)


def test_control_flow_keeps_the_batch_whole():
    text = """module m
func @main(%x: f32[N, 4]) -> f32[N, 4] {
entry:
  jmp done
done:
  ret %x
}
"""
    assert split_of(text) == "it has control flow"


needs_cc = pytest.mark.skipif(find_cc() is None, reason="no C compiler (cc)")


@pytest.fixture(scope="module")
def cnn_lib(tmp_path_factory):
    rng = np.random.default_rng(0)
    text = program("%x: f32[N, 3, 8, 8], %e: f32[N, 4]", "(f32[N, 4], f32[N, 4, 4, 4])", """
  %c = conv2d %x, @w {pads = [1, 1, 1, 1]}
  %r = relu %c
  %p = maxpool2d %r {kernel = [2, 2], strides = [2, 2]}
  %m = reduce_mean %p {axes = [2, 3]}
  %y = add %m, %e
  %s = softmax %y {axis = 1}
  ret %s, %p""")
    module = assembler.parse(text.replace("module m\n", "module m\nconst @w : f32[4, 3, 3, 3] = 0.0\n"))
    module.constants["w"].value = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    out = tmp_path_factory.mktemp("rows")
    compile_library(module, out)
    return module, aot.load(out)


def inputs(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, 3, 8, 8)).astype(np.float32),
            rng.standard_normal((n, 4)).astype(np.float32))


@needs_cc
@pytest.mark.parametrize("rows_per_tile", ["1", "2", "3", "0"])
@pytest.mark.parametrize("n", [1, 2, 5, 16])
def test_tiles_give_the_interpreters_results(cnn_lib, monkeypatch, rows_per_tile, n):
    module, lib = cnn_lib
    monkeypatch.setenv("DLVM_ROW_TILE", rows_per_tile)
    x, e = inputs(n, n)
    close(lib.run("main", x, e), dlvmrt.VM(module, jit="off").run("main", x, e), 1e-5)


@needs_cc
def test_tiles_on_many_threads(cnn_lib, monkeypatch):
    module, lib = cnn_lib
    monkeypatch.setenv("DLVM_ROW_TILE", "2")
    lib.set_threads(2)
    cases = [inputs(n, n) for n in (3, 7, 12)]
    vm = dlvmrt.VM(module, jit="off")
    want = [vm.run("main", *c) for c in cases]

    def check(k: int) -> None:
        for i in range(20):
            j = (k + i) % len(cases)
            close(lib.run("main", *cases[j]), want[j], 1e-5)
    on_threads(check, 4)


@needs_cc
def test_a_trap_in_one_tile_is_the_calls_trap(tmp_path, monkeypatch):
    text = program("%i: i64[N, 2], %x: f32[N, 3]", "f32[N, 3]", """
  %e = gather @table, %i {axis = 0}
  %m = reduce_sum %e {axes = [1]}
  %y = add %m, %x
  %s = softmax %y {axis = 1}
  ret %s""")
    module = assembler.parse(text.replace("module m\n", "module m\nconst @table : f32[5, 3] = 1.5\n"))
    compile_library(module, tmp_path)
    lib = aot.load(tmp_path)
    monkeypatch.setenv("DLVM_ROW_TILE", "1")
    idx = np.array([[0, 1], [2, 3], [4, 0], [1, 2]], np.int64)
    x = np.ones((4, 3), np.float32)
    close(lib.run("main", idx, x), dlvmrt.VM(module, jit="off").run("main", idx, x))
    idx[2, 1] = 7
    with pytest.raises(Trap, match=r"gather index 7 is out of range for axis 0 of size 5"):
        lib.run("main", idx, x)
    # a mismatch of the rows is the untiled call's error
    with pytest.raises(Trap, match=r"dim 0 is 4, but that named dim is 3"):
        lib.run("main", idx[:3], x)
