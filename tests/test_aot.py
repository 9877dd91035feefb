"""`dlvm aot`: programs compiled to shared libraries, called from C and through ctypes, against
the interpreter. Skipped cleanly where there is no C compiler."""
from __future__ import annotations

import shutil
import subprocess
import threading

import numpy as np
import pytest
from concurrency import on_threads
from results import close
from shared_paths import SHARED_EXAMPLES, example_programs

import assembler
import dlvmrt
from cli import main as cli_main
from dlvmrt import aot
from isa.builder import ModuleBuilder
from isa.errors import Trap
from isa.ops import OPS
from jit.targets.aot import AotError, compile_library, find_cc

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no C compiler (cc)")

GATHER = """module gath
func @main(%x: f32[N, 4], %i: i64[K]) -> f32[K, 4] {
entry:
  %y = gather %x, %i {axis = 0}
  %z = mul %y, 2.0
  ret %z
}
"""

CALLS = """module callee
func @scale(%v: f32[M], %s: f32[]) -> f32[M] {
entry:
  %r = mul %v, %s
  ret %r
}
func @main(%a: f32[N], %b: f32[3]) -> (f32[N], f32[3], f32[]) {
entry:
  %two = const 2.0 : f32[]
  %half = const 0.5 : f32[]
  %x = call @scale(%a, %two)
  %y = call @scale(%b, %half)
  %t = reduce_sum %x
  ret %x, %y, %t
}
"""


def build(tmp_path_factory, module, name: str):
    out = tmp_path_factory.mktemp(name)
    compile_library(module, out)
    return aot.load(out), out


@pytest.mark.parametrize("program", example_programs(), ids=lambda p: p.stem)
def test_shared_examples_match_expected(program, tmp_path):
    module = assembler.assemble_file(program)
    compile_library(module, tmp_path)
    lib = aot.load(tmp_path)
    with np.load(program.with_suffix(".inputs.npz")) as z:
        inputs = {k: z[k] for k in z.files}
    with np.load(program.with_suffix(".expect.npz")) as z:
        want = [z[f"out{i}"] for i in range(len(z.files))]
    close(lib.run("main", **inputs), want, 1e-5)


def mlp_module(rng, sizes=(64, 48, 32, 10)):
    mb = ModuleBuilder("mlp")
    f = mb.function("main", [("x", f"f32[N, {sizes[0]}]")], [f"f32[N, {sizes[-1]}]"])
    h = f.arg("x")
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        w = (rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32)
        h = f.add(f.matmul(h, mb.constant(f"w{i}", w)),
                  mb.constant(f"b{i}", rng.standard_normal(b).astype(np.float32)))
        if i < len(sizes) - 2:
            h = f.relu(h)
    f.ret(f.softmax(h))
    return mb.finish()


def cnn_module(rng):
    mb = ModuleBuilder("cnn")
    f = mb.function("main", [("x", "f32[N, 3, 12, 12]")], ["f32[N, 5]"])
    k1 = mb.constant("k1", (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32))
    b1 = mb.constant("b1", rng.standard_normal(8).astype(np.float32) * 0.1)
    k2 = mb.constant("k2", (rng.standard_normal((6, 8, 3, 3)) * 0.2).astype(np.float32))
    w = mb.constant("w", (rng.standard_normal((6 * 3 * 3, 5)) * 0.2).astype(np.float32))
    h = f.relu(f.conv2d(f.arg("x"), k1, b1, pads=[1, 1, 1, 1]))
    h = f.maxpool2d(h, kernel=[2, 2], strides=[2, 2])
    h = f.relu(f.conv2d(h, k2, strides=[2, 2], pads=[1, 1, 1, 1]))
    h = f.reshape(h, shape=[-1, 6 * 3 * 3])
    f.ret(f.matmul(h, w))
    return mb.finish()


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    module = mlp_module(np.random.default_rng(0))
    lib, out = build(tmp_path_factory, module, "mlp")
    return module, lib, out


@pytest.mark.parametrize("batch", [1, 3, 17, 64])
def test_mlp_named_dim_any_batch(mlp, batch):
    module, lib, _ = mlp
    x = np.random.default_rng(batch).standard_normal((batch, 64)).astype(np.float32)
    close(lib.run("main", x), dlvmrt.VM(module, jit="off").run("main", x))


def test_cnn_matches_the_interpreter(tmp_path_factory):
    module = cnn_module(np.random.default_rng(1))
    lib, _ = build(tmp_path_factory, module, "cnn")
    for n in (1, 4, 1, 4):      # constant weights packed at the first call, kept after
        x = np.random.default_rng(n).standard_normal((n, 3, 12, 12)).astype(np.float32)
        close(lib.run("main", x), dlvmrt.VM(module, jit="off").run("main", x), 1e-5)
    from jit.targets.aot.program import ProgramCompiler
    source = ProgramCompiler(module, "cnn").compile().source
    assert "&P_k1, " in source and "&P_k2, " in source


def test_calls_bind_named_dims_afresh(tmp_path_factory):
    module = assembler.parse(CALLS)
    lib, _ = build(tmp_path_factory, module, "calls")
    a = np.arange(5, dtype=np.float32)
    b = np.array([1, 2, 3], np.float32)
    close(lib.run("main", a, b), dlvmrt.VM(module, jit="off").run("main", a, b))


def test_traps_and_bad_arguments_are_error_codes(tmp_path_factory):
    module = assembler.parse(GATHER)
    lib, _ = build(tmp_path_factory, module, "gath")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    close(lib.run("main", x, np.array([2, -1, 0])),
          dlvmrt.VM(module, jit="off").run("main", x, np.array([2, -1, 0])))
    with pytest.raises(Trap, match=r"gather index 3 is out of range for axis 0 of size 3"):
        lib.run("main", x, np.array([0, 3]))
    with pytest.raises(Trap, match=r"argument %x must be f32"):
        lib.run("main", x.astype(np.float64), np.array([0]))
    with pytest.raises(Trap, match=r"dim 1 must be 4"):
        lib.run("main", x[:, :3].copy(), np.array([0]))
    with pytest.raises(Trap, match=r"no function @nope"):
        lib.run("nope", x)


def test_threads_share_one_library(mlp):
    module, lib, _ = mlp
    vm = dlvmrt.VM(module, jit="off")
    xs = [np.random.default_rng(i).standard_normal((32, 64)).astype(np.float32) for i in range(8)]
    want = [vm.run("main", x)[0] for x in xs]
    errors = []

    def work(t):
        for i in range(30):
            j = (t + i) % len(xs)
            (got,) = lib.run("main", xs[j])
            if not np.allclose(got, want[j], rtol=2e-6, atol=2e-6):
                errors.append((t, i))

    lib.set_threads(2)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_more_threads_than_cpus(mlp):
    # an explicit count above the CPUs is kept (only $DLVM_THREADS is capped): the same results
    # (16: each job splits into the parts its work is worth, fewer than the threads)
    from jit.targets.cpu.threads import available_cpus
    module, lib, _ = mlp
    vm = dlvmrt.VM(module, jit="off")
    xs = [np.random.default_rng(i).standard_normal((n, 64)).astype(np.float32)
          for i, n in enumerate((1, 32, 256))]
    try:
        for threads in (available_cpus() + 2, 16, 1):
            lib.set_threads(threads)
            for _ in range(3):
                for x in xs:
                    close(lib.run("main", x), vm.run("main", x), 2e-6)
    finally:
        lib.set_threads(0)


def test_unsupported_ops_are_listed_at_once(tmp_path):
    module = assembler.parse("""module odd
func @main(%x: f32[4]) -> (f32[], i64[1, ?], f32[6]) {
entry:
  %a = einsum %x, %x {equation = "i,i->"}
  %n = nonzero %x
  %c = pad %x {pads = [1, 1]}
  ret %a, %n, %c
}
""")
    with pytest.raises(AotError) as e:
        compile_library(module, tmp_path)
    text = str(e.value)
    assert "2 instructions" in text and "einsum" in text and "nonzero" in text


C_DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "gath.h"
int main(void) {
    float x[12];
    for (int i = 0; i < 12; i++) x[i] = (float)i;
    int64_t good[2] = {2, -3}, bad[2] = {0, 7};
    dlvm_tensor in[2] = {{x, {3, 4}, 2, DLVM_F32}, {good, {2}, 1, DLVM_I64}};
    dlvm_tensor out[1];
    dlvm_status st;
    int rc = gath_main(in, out, &st);
    if (rc != DLVM_OK) { printf("unexpected %d %s\n", rc, st.message); return 1; }
    float *y = out[0].data;
    printf("%lld %lld %g %g %g\n", (long long)out[0].shape[0], (long long)out[0].shape[1],
           y[0], y[4], y[7]);
    gath_free(out[0].data);
    in[1].data = bad;
    rc = gath_main(in, out, &st);
    printf("%d %s\n", rc, st.message);
    return rc == DLVM_ERR_TRAP ? 0 : 1;
}
"""


def test_c_program_from_the_header_alone(tmp_path_factory):
    module = assembler.parse(GATHER)
    _, out = build(tmp_path_factory, module, "gathc")
    src = out / "driver.c"
    src.write_text(C_DRIVER)
    cc = find_cc()
    for kind, link in (("shared", [f"-L{out}", "-lgath", f"-Wl,-rpath,{out}"]),
                       ("static", [str(out / "libgath.a"), "-lm", "-lpthread"])):
        exe = out / f"driver_{kind}"
        subprocess.run([cc, str(src), f"-I{out}", "-o", str(exe), *link], check=True)
        done = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        first, second = done.stdout.splitlines()
        assert first == "2 4 16 0 6"     # rows 2 and -3 (= 0) of x, times 2
        assert second.startswith("2 ") and "gather index 7 is out of range" in second


def test_needs_only_libc_libm_pthreads(mlp):
    _, _, out = mlp
    if shutil.which("ldd") is None:
        pytest.skip("no ldd")
    deps = subprocess.run(["ldd", str(out / "libmlp.so")], capture_output=True, text=True).stdout
    names = {line.split()[0] for line in deps.splitlines() if line.strip()}
    allowed = ("linux-vdso", "libc.so", "libm.so", "libpthread.so", "ld-linux", "/lib64/ld-linux")
    assert all(n.startswith(allowed) for n in names), names


def test_cli_aot_and_run(tmp_path, capsys):
    prog = SHARED_EXAMPLES / "mlp.dlasm"
    if not prog.exists():
        pytest.skip("no shared examples")
    assert cli_main(["aot", str(prog), "-o", str(tmp_path / "lib")]) == 0
    assert "libmlp.so" in capsys.readouterr().err
    inputs = prog.with_suffix(".inputs.npz")
    assert cli_main(["run", str(tmp_path / "lib"), "--inputs", str(inputs), "--out",
                     str(tmp_path / "o.npz")]) == 0
    got = np.load(tmp_path / "o.npz")["out0"]
    np.testing.assert_allclose(got, np.load(prog.with_suffix(".expect.npz"))["out0"], rtol=1e-5,
                               atol=1e-6)
    bad = tmp_path / "bad.dlasm"
    bad.write_text("module bad\nfunc @main(%x: f32[4]) -> f32[4] {\nentry:\n"
                   "  %a = einsum %x, %x {equation = \"i,i->\"}\n  ret %x\n}\n")
    assert cli_main(["aot", str(bad), "-o", str(tmp_path / "b")]) == 1
    err = capsys.readouterr().err
    assert "einsum" in err and "bad.dlasm:4" in err and "Traceback" not in err


LOOP = """module loop
func @main(%x: f32[T, B, 4], %stop: i64[]) -> (f32[B, 4], i64[]) {
entry:
  %zero = const 0 : i64[]
  %one = const 1 : i64[]
  %step = mov %zero
  %n = shape_of %x
  %acc = const 0.0 : f32[B, 4]
  jmp head
head:
  %in = lt %step, %stop
  br %in, body, done
body:
  %xt = gather %x, %step {axis = 0}
  %acc = add %acc, %xt
  %step = add %step, %one
  jmp head
done:
  %t = gather %n, %zero {axis = 0}
  ret %acc, %t
}
"""


def test_loop_over_a_scalar_counter(tmp_path_factory):
    # 0-d constants stay 0-d (a counter made 1-d made every gather by it one rank too high),
    # and shape_of is compiled
    module = assembler.assemble(LOOP)
    lib, _ = build(tmp_path_factory, module, "loop")
    x = np.random.default_rng(0).standard_normal((5, 3, 4)).astype(np.float32)
    close(lib.run("main", x, np.array(5)), dlvmrt.VM(module, jit="off").run("main", x, np.array(5)))


def test_block_budget_is_a_resource_error(tmp_path_factory):
    # a loop that never ends stops at the budget with an error code, as the VM's max_steps
    module = assembler.assemble(LOOP.replace("%in = lt %step, %stop", "%in = ge %stop, %zero")
                                .replace("%xt = gather %x, %step {axis = 0}", "%xt = mov %acc"))
    lib, _ = build(tmp_path_factory, module, "forever")
    x = np.ones((2, 1, 4), np.float32)
    assert lib.set_max_steps(1000)
    try:
        with pytest.raises(dlvmrt.ResourceExhausted, match="more than 1000 blocks"):
            lib.run("main", x, np.array(1))
    finally:
        lib.set_max_steps(0)


@pytest.mark.parametrize("c,groups,k,s,p,d,h,w", [
    (8, 8, 3, 1, 1, 1, 9, 11), (8, 8, 3, 2, 1, 1, 10, 7), (6, 3, 3, 1, 0, 1, 6, 6),
    (4, 4, 5, 2, 2, 2, 13, 12), (3, 3, 3, 3, 2, 1, 8, 9), (8, 8, 3, 1, 4, 1, 4, 4),
    (8, 8, 7, 1, 3, 1, 8, 8), (8, 2, 3, 2, 1, 1, 9, 9), (5, 5, 3, 1, 1, 1, 40, 3),
    # stride 2 over rows of 33 and 70: the column phases' whole and partial vector steps
    (4, 4, 3, 2, 1, 1, 5, 33), (6, 6, 5, 2, 2, 1, 9, 70),
    # ungrouped: the patch matrix and the product (im2col's borders, strides, dilations)
    (4, 1, 3, 2, 1, 1, 9, 11), (3, 1, 3, 1, 4, 2, 5, 6), (2, 1, 5, 3, 0, 1, 12, 13),
    # depthwise over more channels than a vector's 16 lanes, and not a multiple of them
    (20, 20, 3, 2, 1, 1, 8, 8), (33, 33, 5, 1, 2, 1, 7, 9), (17, 17, 3, 1, 1, 2, 3, 3)])
@pytest.mark.parametrize("lanes", ["0", "1"])
def test_grouped_and_depthwise_conv(tmp_path, monkeypatch, c, groups, k, s, p, d, h, w, lanes):
    # the phase-image path (dlvm_aot_conv.c: grouped_conv_task): borders, strides, dilations,
    # padding wider than the kernel, groups of several output channels, planes longer than a
    # chunk; and depthwise ones 16 channels to a vector (depthwise_lanes_task), both forced
    monkeypatch.setenv("DLVM_DW_LANES", lanes)
    module = assembler.parse(f"""module dw
func @main(%x: f32[N, {c}, {h}, {w}], %w: f32[{c}, {c // groups}, {k}, {k}], %b: f32[{c}]) \
-> f32[N, {c}, ?, ?] {{
entry:
  %y = conv2d %x, %w, %b {{strides = [{s}, {s}], pads = [{p}, {p}, {p}, {p}], \
dilations = [{d}, {d}], groups = {groups}}}
  ret %y
}}
""")
    rng = np.random.default_rng(c * 100 + k)
    args = [rng.standard_normal((2, c, h, w)).astype(np.float32),
            rng.standard_normal((c, c // groups, k, k)).astype(np.float32),
            rng.standard_normal(c).astype(np.float32)]
    compile_library(module, tmp_path)
    close(aot.load(tmp_path).run("main", *args), dlvmrt.VM(module, jit="off").run("main", *args),
          1e-5)


@pytest.mark.parametrize("c,mult,k,s,pads,h,w", [
    (16, 2, 3, 1, (1, 0, 2, 1), 6, 7), (5, 3, 3, 2, (0, 1, 1, 0), 9, 8), (24, 1, 5, 2, (2, 2, 1, 1), 11, 5),
    (40, 1, 1, 1, (0, 0, 0, 0), 4, 4)])
@pytest.mark.parametrize("lanes", ["0", "1"])
def test_depthwise_channel_multiplier(tmp_path, monkeypatch, c, mult, k, s, pads, h, w, lanes):
    """Depthwise with `mult` output channels per input channel and uneven pads: output channel
    oc reads input channel oc / mult in both native forms."""
    monkeypatch.setenv("DLVM_DW_LANES", lanes)
    o = c * mult
    module = assembler.parse(f"""module dwm
func @main(%x: f32[N, {c}, {h}, {w}], %w: f32[{o}, 1, {k}, {k}], %b: f32[{o}]) -> f32[N, {o}, ?, ?] {{
entry:
  %y = conv2d %x, %w, %b {{strides = [{s}, {s}], pads = {list(pads)}, dilations = [1, 1], groups = {c}}}
  ret %y
}}
""")
    rng = np.random.default_rng(c + mult)
    args = [rng.standard_normal((3, c, h, w)).astype(np.float32),
            rng.standard_normal((o, 1, k, k)).astype(np.float32),
            rng.standard_normal(o).astype(np.float32)]
    compile_library(module, tmp_path)
    close(aot.load(tmp_path).run("main", *args), dlvmrt.VM(module, jit="off").run("main", *args),
          1e-5)


@pytest.mark.parametrize("c,o,groups,k,s,p,d,h,w", [
    (32, 32, 2, 3, 1, 1, 1, 7, 7), (64, 32, 4, 3, 2, 1, 1, 9, 8), (32, 16, 2, 1, 1, 0, 1, 5, 6),
    (48, 48, 3, 3, 1, 2, 2, 14, 15), (32, 64, 2, 3, 1, 1, 1, 3, 3),
    # a group's K (cg * kH * kW) past one packed block of 256: its rows in every block
    (32, 32, 2, 5, 1, 1, 1, 12, 12), (26, 32, 2, 5, 2, 2, 1, 11, 9)])
@pytest.mark.parametrize("products", ["0", "1"])
def test_grouped_conv_as_products(tmp_path, monkeypatch, c, o, groups, k, s, p, d, h, w, products):
    """Groups of 8 or more input channels as one product per (group, images)
    (dlvm_aot_conv.c: conv2d_group_products): a group's slice of each image, its rows of the
    weights packed with the others, images side by side in one product; against the per-plane
    form and the interpreter, with a fused relu."""
    monkeypatch.setenv("DLVM_GROUP_PRODUCTS", products)
    module = assembler.parse(f"""module gp
func @main(%x: f32[N, {c}, {h}, {w}], %w: f32[{o}, {c // groups}, {k}, {k}], %b: f32[{o}]) \
-> f32[N, {o}, ?, ?] {{
entry:
  %y = conv2d %x, %w, %b {{strides = [{s}, {s}], pads = [{p}, {p}, {p}, {p}], \
dilations = [{d}, {d}], groups = {groups}}}
  %r = relu %y
  ret %r
}}
""")
    rng = np.random.default_rng(c + o + k)
    args = [rng.standard_normal((3, c, h, w)).astype(np.float32),
            rng.standard_normal((o, c // groups, k, k)).astype(np.float32),
            rng.standard_normal(o).astype(np.float32)]
    compile_library(module, tmp_path)
    lib = aot.load(tmp_path)
    for batch in (3, 1):
        got = lib.run("main", args[0][:batch], *args[1:])
        close(got, dlvmrt.VM(module, jit="off").run("main", args[0][:batch], *args[1:]), 1e-4)


DYNAMIC_SHAPES = """module dyn
func @main(%x: f32[N, 6], %s: i64[3], %e: i64[3]) -> (f32[?, ?, ?], f32[?, ?, ?], f32[?, ?], i32[?, ?]) {
entry:
  %r = reshape_dyn %x, %s {copy_zero = true}
  %b = broadcast_dyn %x, %e
  %p = pad %x {pads = [1, -2, 0, 3], value = 0.5}
  %xi = cast %x {to = i32}
  %q = pad %xi {pads = [0, 2, 2, 0], value = -1.7}
  ret %r, %b, %p, %q
}
"""


def test_run_time_shapes_and_pad(tmp_path):
    module = assembler.parse(DYNAMIC_SHAPES)
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    x = np.arange(24, dtype=np.float32).reshape(4, 6) - 7
    for s, e in (([2, 0, -1], [3, 4, 1]), ([-1, 3, 2], [1, 1, 6]), ([0, 1, 6], [2, 1, 1])):
        args = (x, np.array(s), np.array(e))
        close(lib.run("main", *args), vm.run("main", *args))
    with pytest.raises(Trap, match="more than one -1"):
        lib.run("main", x, np.array([-1, -1, 2]), np.array([1, 1, 1]))
    with pytest.raises(Trap, match="do not broadcast"):
        lib.run("main", x, np.array([4, 6, 1]), np.array([1, 3, 6]))


# pads over every kind of axis: trailing axes without pads (copied as whole planes), crops,
# a nonzero fill in each item size, a pad of an empty axis, and one large enough to split
PAD_CASES = [
    ("f32", (1, 24, 8, 8), [0, 0, 0, 0, 0, 4, 0, 0], 0.0),      # BlazeFace's channel pad
    ("f32", (2, 3, 5, 4), [0, 1, 2, 0, 1, 0, 1, 3], 0.5),
    ("f32", (2, 3, 5, 4), [0, -1, 1, -2, 0, 2, -1, 1], -1.25),
    ("f64", (3, 4), [1, 0, 2, 0], 2.5),
    ("i64", (2, 2, 3), [0, 1, 0, 1, 0, 0], -3.0),
    ("i16", (5, 2), [2, 1, 0, 3], 7.0),
    ("u8", (4, 3), [1, 1, 1, 1], 9.0),
    ("bool", (3, 2), [0, 2, 1, 0], 1.0),
    ("f32", (0, 3), [1, 0, 0, 2], 4.0),
    ("f32", (1, 4), [-2, 0, 3, 0], 9.0),        # a crop past the axis: the far pad starts earlier
    ("f32", (4, 64, 64, 64), [0, 0, 1, 1, 0, 0, 1, 1], 0.0),
]


def test_pad_matches_the_interpreter(tmp_path):
    funcs = []
    for i, (dt, shape, pads, value) in enumerate(PAD_CASES):
        dims = ", ".join(str(d) for d in shape)
        funcs.append(f"""func @p{i}(%x: {dt}[{dims}]) -> {dt}[{", ".join("?" * 1 for _ in shape)}] {{
entry:
  %y = pad %x {{pads = {pads}, value = {value}}}
  ret %y
}}""")
    module = assembler.parse("module pads\n" + "\n".join(funcs) + "\n")
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(5)
    for i, (dt, shape, _, _) in enumerate(PAD_CASES):
        np_dt = {"f32": np.float32, "f64": np.float64, "i64": np.int64, "i16": np.int16,
                 "u8": np.uint8, "bool": np.bool_}[dt]
        x = (rng.standard_normal(shape) * 10).astype(np_dt)
        got, want = lib.run(f"p{i}", x), vm.run(f"p{i}", x)
        assert got[0].dtype == want[0].dtype and got[0].shape == want[0].shape, i
        np.testing.assert_array_equal(got[0], want[0], err_msg=f"case {i}")


FILL_OF_A_COMPUTED_SHAPE = """module fill
func @main(%x: f32[N, M], %k: i64[]) -> (f32[?, ?], i64[?, ?, ?], f32[?]) {
entry:
  %s = shape_of %x
  %half = const 0.5 : f32[]
  %z = fill %s, %half
  %t = concat %s, %s {axis = 0}
  %u = slice %t {starts = [1], ends = [4]}
  %i = fill %u, %k
  %e = slice %t {starts = [0], ends = [0]}
  %n = concat %e, %s {axis = 0}
  %m = slice %n {starts = [1], ends = [2]}
  %v = const -2.25 : f32[]
  %f = fill %m, %v
  ret %z, %i, %f
}
"""


def test_fill_of_a_shape_computed_at_run_time(tmp_path):
    # ONNX's ConstantOfShape of a shape the graph computes (a GRU tagger's masked logits)
    module = assembler.parse(FILL_OF_A_COMPUTED_SHAPE)
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    for shape, k in (((3, 5), 7), ((0, 4), -9_000_000_000_123), ((1, 1), 0)):
        args = (np.ones(shape, np.float32), np.int64(k))
        got, want = lib.run("main", *args), vm.run("main", *args)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w)


REDUCE_ANY = """module red
func @main(%x: f32[4, N, 5]) -> (f32[N], f32[1, N, 5], f32[4, 5], f32[N, 1], f32[], f64[5]) {
entry:
  %a = reduce_sum %x {axes = [0, 2]}
  %b = reduce_max %x {axes = [0], keepdims = true}
  %c = reduce_mean %x {axes = [1]}
  %m = reduce_min %x {axes = [0, 2], keepdims = true}
  %d = squeeze %m {axes = [0]}
  %e = reduce_prod %x
  %x64 = cast %x {to = f64}
  %f = reduce_mean %x64 {axes = [0, 1]}
  ret %a, %b, %c, %d, %e, %f
}
"""


def test_reductions_over_any_axes(tmp_path):
    module = assembler.parse(REDUCE_ANY)
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    x = (np.random.default_rng(5).standard_normal((4, 3, 5)) * 0.9 + 0.1).astype(np.float32)
    x[1, 2, 3] = np.nan
    close(lib.run("main", x), vm.run("main", x), 1e-5)


REDUCE_INTEGERS = """module ints
func @main(%x: i32[N, 3, 5], %y: i64[N, 3, 5]) -> (i32[3, 5], i32[N, 1, 5], i32[3], i32[N, 5], \
i64[3, 5], i64[5], i64[N, 5], i64[1, 3, 1]) {
entry:
  %a = reduce_sum %x {axes = [0]}
  %b = reduce_max %x {axes = [1], keepdims = true}
  %c = reduce_min %x {axes = [0, 2]}
  %d = reduce_prod %x {axes = [1]}
  %e = reduce_sum %y {axes = [0]}
  %f = reduce_max %y {axes = [0, 1]}
  %g = reduce_prod %y {axes = [1]}
  %h = reduce_sum %y {axes = [0, 2], keepdims = true}
  ret %a, %b, %c, %d, %e, %f, %g, %h
}
"""


def test_integer_reductions_over_any_axes(tmp_path):
    # i32 / i64 sums, maxima, minima and products over leading and middle axes in the runtime
    # (dlvm_aot_ops.c: reduce_integers), exact, sums and products wrapping in the operand's
    # width as the reference's
    module = assembler.parse(REDUCE_INTEGERS)
    from jit.targets.aot.program import ProgramCompiler
    program = ProgramCompiler(module, "ints", vm_fallback=True).compile()
    assert not program.vm_instructions and not program.unsupported
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(6)
    for n in (4, 1):
        x = rng.integers(-2**31, 2**31, size=(n, 3, 5), dtype=np.int64).astype(np.int32)
        y = rng.integers(-2**62, 2**62, size=(n, 3, 5), dtype=np.int64)
        for got, want in zip(lib.run("main", x, y), vm.run("main", x, y)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


REDUCE_RUNS = """module runs
func @main(%x: f32[N, 7, 300]) -> (f32[N, 300], f32[N, 1, 300], f32[N, 7], f32[N, 7], \
f32[N, 300], f32[7, 300], f32[N, 7, 1], f64[N, 300]) {
entry:
  %a = reduce_sum %x {axes = [1]}
  %b = reduce_max %x {axes = [1], keepdims = true}
  %c = reduce_min %x {axes = [2]}
  %d = reduce_mean %x {axes = [2]}
  %e = reduce_prod %x {axes = [1]}
  %f = reduce_mean %x {axes = [0]}
  %g = reduce_max %x {axes = [2], keepdims = true}
  %x64 = cast %x {to = f64}
  %h = reduce_min %x64 {axes = [1]}
  ret %a, %b, %c, %d, %e, %f, %g, %h
}
"""


def test_reductions_of_one_run_of_axes(tmp_path):
    # (outer, reduced, inner) reductions take the vectorized path: rows, columns wider than a
    # task's chunk, lengths that are not a multiple of the lanes, NaN and infinities, batch 1
    module = assembler.parse(REDUCE_RUNS)
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(6)
    for n in (1, 3):
        x = (rng.standard_normal((n, 7, 300)) * 0.3 + 1.0).astype(np.float32)
        x[0, 2, 5] = np.nan
        x[-1, 4, 299] = np.nan
        x[0, 1, 7] = np.inf
        x[-1, 6, 100] = -np.inf
        close(lib.run("main", x), vm.run("main", x), 1e-5)


VARIANT_SITES = """module sites
func @main(%x: f32[N, M], %y: f32[5, 5], %w: f32[5, 5], %z: f32[5]) -> f32[5, 5] {
entry:
  %h0 = add %y, %y
  %a0 = add %x, %h0
  %e0 = exp %a0
  %m0 = matmul %e0, %w
  %b0 = mul %m0, %z
  %c0 = tanh %b0
  %d0 = matmul %c0, %w
  %h1 = tanh %d0
  %a1 = add %x, %h1
  %e1 = exp %a1
  %m1 = matmul %e1, %w
  %b1 = mul %m1, %z
  %c1 = tanh %b1
  %d1 = matmul %c1, %w
  %h2 = tanh %d1
  %a2 = add %x, %h2
  %e2 = exp %a2
  %m2 = matmul %e2, %w
  %b2 = mul %m2, %z
  %c2 = tanh %b2
  %d2 = matmul %c2, %w
  %h3 = tanh %d2
  %a3 = add %x, %h3
  %e3 = exp %a3
  %m3 = matmul %e3, %w
  %b3 = mul %m3, %z
  %c3 = tanh %b3
  %d3 = matmul %c3, %w
  %h4 = tanh %d3
  %a4 = add %x, %h4
  %e4 = exp %a4
  %m4 = matmul %e4, %w
  %b4 = mul %m4, %z
  %c4 = tanh %b4
  %d4 = matmul %c4, %w
  %h5 = tanh %d4
  %a5 = add %x, %h5
  %e5 = exp %a5
  %m5 = matmul %e5, %w
  %b5 = mul %m5, %z
  %c5 = tanh %b5
  %d5 = matmul %c5, %w
  %h6 = tanh %d5
  ret %h6
}
"""


def test_region_variants_remembered_per_region(tmp_path):
    # the first region has a variant for each way its named dims broadcast (the last one runs
    # for a [1, 1] input), the second has one; the runtime remembers per region which variant
    # ran, and another region's list (a compound literal, maybe at the same address) must not
    # pick up that index
    module = assembler.parse(VARIANT_SITES)
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(8)
    y, w, z = (rng.standard_normal(s).astype(np.float32) for s in ((5, 5), (5, 5), (5,)))
    for shape in ((1, 1), (5, 5), (1, 5), (1, 1), (5, 1), (1, 1)):
        x = rng.standard_normal(shape).astype(np.float32)
        for _ in range(2):
            close(lib.run("main", x, y, w, z), vm.run("main", x, y, w, z), 1e-5)


def test_reused_call_frames_follow_each_calls_shapes(tmp_path):
    # the ctypes arguments are kept per thread and entry: shapes written again when they change,
    # a bad call (wrong rank) leaves the next call right, threads never share a frame
    module = assembler.parse(REDUCE_RUNS)
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(11)
    xs = [rng.standard_normal((n, 7, 300)).astype(np.float32) for n in (1, 4, 2)]
    for x in xs + xs[::-1]:
        close(lib.run("main", x), vm.run("main", x), 1e-5)
    with pytest.raises(Trap):
        lib.run("main", np.zeros((2, 7), np.float32))
    close(lib.run("main", xs[0]), vm.run("main", xs[0]), 1e-5)
    want = [vm.run("main", x) for x in xs]

    def calls(i: int) -> None:
        for _ in range(30):
            close(lib.run("main", xs[i % 3]), want[i % 3], 1e-5)
    on_threads(calls, 6)


def test_large_concat_splits_across_threads(tmp_path):
    # megabytes of rows (dlvm_aot_ops.c: concat_task), each the operands' rows in order
    module = assembler.parse("""module cat
func @main(%a: f32[N, 300, 600], %b: f32[N, 7, 600], %c: i64[N, 2, 600]) -> (f32[N, 307, 600], \
i64[N, 4, 600]) {
entry:
  %y = concat %a, %b {axis = 1}
  %z = concat %c, %c {axis = 1}
  ret %y, %z
}
""")
    compile_library(module, tmp_path)
    rng = np.random.default_rng(12)
    args = [rng.standard_normal((4, 300, 600)).astype(np.float32),
            rng.standard_normal((4, 7, 600)).astype(np.float32),
            rng.integers(-9, 9, (4, 2, 600))]
    close(aot.load(tmp_path).run("main", *args), dlvmrt.VM(module, jit="off").run("main", *args))


SLICE_RUNS = """module runs
func @main(%x: f32[N, 6, 8]) -> (f32[N, 2, 8], f32[1, 6, 8], f32[1, 1, 3], f32[N, 6, 3], \
f32[N, 3, 8], f32[N, 4, 8], f32[N, 8, 8]) {
entry:
  %e = exp %x
  %a = slice %e {starts = [2], ends = [4], axes = [1]}
  %b = slice %x {starts = [0], ends = [1], axes = [0]}
  %c = slice %e {starts = [0, 1, 2], ends = [1, 2, 5], axes = [0, 1, 2]}
  %d = slice %e {starts = [4], ends = [7], axes = [2]}
  %f = slice %e {starts = [0], ends = [6], steps = [2], axes = [1]}
  %g = slice %e {starts = [1], ends = [5], axes = [1]}
  %h = tanh %g
  %k = concat %a, %h {axis = 1}
  %m = concat %k, %a {axis = 1}
  ret %a, %b, %c, %d, %f, %h, %m
}
"""


def test_slices_that_are_runs_view_their_source(tmp_path):
    # a slice that is one contiguous run of its source (whole inner dims, one partial dim,
    # single elements outside it) views the source's buffer; others copy. Views are read by
    # later ops, concatenated, and returned (the entry copies a view out)
    module = assembler.parse(SLICE_RUNS)
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(14)
    for n in (1, 3):
        x = rng.standard_normal((n, 6, 8)).astype(np.float32)
        close(lib.run("main", x), vm.run("main", x), 1e-6)


def test_pointwise_conv_multiplies_the_image(tmp_path):
    # a 1x1 convolution of an intermediate skips the patch matrix (dlvm_rt_conv2d_packed)
    module = assembler.parse("""module pw
func @main(%x: f32[N, 6, 5, 7], %w: f32[9, 6, 1, 1], %b: f32[9]) -> f32[N, 9, 5, 7] {
entry:
  %r = relu %x
  %y = conv2d %r, %w, %b {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], groups = 1}
  ret %y
}
""")
    rng = np.random.default_rng(9)
    args = [rng.standard_normal((3, 6, 5, 7)).astype(np.float32),
            rng.standard_normal((9, 6, 1, 1)).astype(np.float32),
            rng.standard_normal(9).astype(np.float32)]
    compile_library(module, tmp_path)
    close(aot.load(tmp_path).run("main", *args), dlvmrt.VM(module, jit="off").run("main", *args),
          1e-5)


@pytest.mark.parametrize("k,s,pad,size", [(1, 1, 0, 2), (1, 1, 0, 7), (3, 1, 1, 4), (3, 2, 1, 7),
                                          (2, 1, 0, 3), (3, 1, 1, 2), (3, 2, 1, 4), (3, 1, 1, 8)])
@pytest.mark.parametrize("threads", [1, 2])
def test_small_images_share_a_product(tmp_path, k, s, pad, size, threads):
    # images of few output pixels are multiplied several at a time, their pixels side by side
    # (dlvm_aot_conv.c: CONV_GROUP_COLUMNS): batches that fill groups, leave a remainder, or are
    # split across the threads; output rows of 8, 4 and 2 pixels are packed several to a
    # vector (gemm_kernel.py: _copy_row_groups) where a panel holds whole groups of them
    module = assembler.parse(f"""module small
func @main(%x: f32[N, 5, {size}, {size}], %w: f32[11, 5, {k}, {k}], %b: f32[11]) -> f32[N, 11, ?, ?] {{
entry:
  %r = relu %x
  %y = conv2d %r, %w, %b {{strides = [{s}, {s}], pads = [{pad}, {pad}, {pad}, {pad}]}}
  %z = relu %y
  ret %z
}}
""")
    compile_library(module, tmp_path)
    lib = aot.load(tmp_path)
    lib.set_threads(threads)
    rng = np.random.default_rng(size)
    w = rng.standard_normal((11, 5, k, k)).astype(np.float32)
    b = rng.standard_normal(11).astype(np.float32)
    vm = dlvmrt.VM(module, jit="off")
    for n in (1, 2, 5, 33, 64):
        x = rng.standard_normal((n, 5, size, size)).astype(np.float32)
        close(lib.run("main", x, w, b), vm.run("main", x, w, b), 1e-5)


@pytest.mark.parametrize("h,w", [(3, 5), (5, 3), (4, 12), (2, 14), (3, 15), (2, 30), (3, 47),
                                 (2, 62), (2, 63)])
@pytest.mark.parametrize("pads", [(1, 1, 1, 1), (0, 2, 1, 0), (2, 0, 0, 1)])
def test_padding_rows_of_at_most_four_vectors(tmp_path, h, w, pads):
    # padded rows of up to 64 floats are written by a masked load and store per vector
    # (pad_task), wider ones by the copy and zeros; pads on one side only, either side
    module = assembler.parse(f"""module padrows
func @main(%x: f32[N, 6, {h}, {w}], %w: f32[8, 6, 3, 3]) -> f32[N, 8, ?, ?] {{
entry:
  %y = conv2d %x, %w {{strides = [1, 1], pads = [{", ".join(map(str, pads))}]}}
  %z = conv2d %x, %w {{strides = [2, 2], pads = [{", ".join(map(str, pads))}]}}
  %s = reduce_sum %z {{axes = [2, 3], keepdims = true}}
  %r = add %y, %s
  ret %r
}}
""")
    compile_library(module, tmp_path)
    rng = np.random.default_rng(h * 16 + w)
    args = [rng.standard_normal((3, 6, h, w)).astype(np.float32),
            rng.standard_normal((8, 6, 3, 3)).astype(np.float32)]
    close(aot.load(tmp_path).run("main", *args), dlvmrt.VM(module, jit="off").run("main", *args),
          1e-4)


@pytest.mark.parametrize("k,pads,dil", [((3, 3), (1, 1, 1, 1), (1, 1)), ((3, 3), (0, 2, 1, 0), (1, 1)),
                                        ((3, 1), (1, 0, 1, 0), (1, 1)), ((1, 3), (0, 1, 0, 1), (1, 1)),
                                        ((3, 3), (2, 2, 2, 2), (2, 2)), ((1, 1), (0, 0, 0, 0), (1, 1))])
def test_convolution_reading_the_image_in_place(tmp_path, monkeypatch, k, pads, dil):
    # stride-1 convolutions' products read the (padded) image in place instead of packing
    # patch panels (dlvm_aot_conv.c: conv_reads_in_place, the GEMM's flag 8): output rows of
    # whole vectors (widths 32, 33 - 1) row by row, others on the padded width with the kept
    # columns copied out. Forced on, forced off and chosen, with constant weights (packed once)
    # and weights that are arguments (packed per call), one image (the product, or its rows,
    # split across threads) and several, on one thread and two
    rng = np.random.default_rng(sum(k) * 10 + sum(pads))
    mb = ModuleBuilder("inplace")
    wc = mb.constant("wc", (rng.standard_normal((24, 20, *k)) * 0.2).astype(np.float32))
    bc = mb.constant("bc", rng.standard_normal(24).astype(np.float32))
    f = mb.function("main", [("x", "f32[N, 20, 9, W]"), ("w", f"f32[24, 20, {k[0]}, {k[1]}]")],
                    ["f32[N, 24, ?, ?]", "f32[N, 24, ?, ?]"])
    attrs = {"strides": [1, 1], "pads": list(pads), "dilations": list(dil), "groups": 1}
    r = f.relu(f.arg("x"))
    y1 = f.relu(f.conv2d(r, wc, bc, **attrs))
    y2 = f.conv2d(r, f.arg("w"), **attrs)
    f.ret(y1, y2)
    module = mb.finish()
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    w = (rng.standard_normal((24, 20, *k)) * 0.2).astype(np.float32)
    for threads in (1, 2):
        lib.set_threads(threads)
        # (1, 401), (1, 400): one image over 256 KB, padded and copied out across the pool;
        # outputs 8 and 16 wide, one AVX2 or AVX-512 vector: the image's rows side by side in
        # the register tile (the GEMM's columns by vectors)
        one_vector = [(n, wo - pads[1] - pads[3] + dil[1] * (k[1] - 1)) for wo in (8, 16)
                      for n in (1, 3)]
        for n, width in ((1, 37), (2, 37), (5, 37), (1, 32), (3, 32), (2, 33), (1, 401), (1, 400),
                         *one_vector):
            x = rng.standard_normal((n, 20, 9, width)).astype(np.float32)
            _check_in_place_forced_and_chosen(lib, vm, monkeypatch, x, w)


def _check_in_place_forced_and_chosen(lib, vm, monkeypatch, *args) -> None:
    """The library's results with DLVM_CONV_IN_PLACE forced on, forced off and unset, each
    against the interpreter's; on and off bit for bit the same (the same products in the same
    order)."""
    want = vm.run("main", *args)
    got = {}
    for in_place in ("1", "0", ""):
        monkeypatch.setenv("DLVM_CONV_IN_PLACE", in_place)
        got[in_place] = lib.run("main", *args)
        close(got[in_place], want, 1e-4)
    for a, b in zip(got["1"], got["0"]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("k,s,pads", [((3, 3), (2, 2), (1, 1, 1, 1)), ((8, 8), (4, 4), (0, 0, 0, 0)),
                                      ((4, 4), (2, 2), (1, 0, 2, 1)), ((3, 5), (2, 3), (0, 2, 1, 0)),
                                      ((5, 3), (1, 2), (2, 1, 2, 1)), ((7, 7), (2, 2), (3, 3, 3, 3))])
def test_strided_convolution_reading_its_phases_in_place(tmp_path, monkeypatch, k, s, pads):
    # strided convolutions read in place from the padded images' stride x stride phases
    # (dlvm_aot_conv.c: phase_task, conv_phases_pay): forced on (phases), off (patch panels)
    # and chosen, bit for bit the same products; output widths of one vector, of whole vectors
    # and others (the padded phase width, kept columns copied out); one image, several; 1 and
    # 2 threads; constant weights (packed once) and weights that are arguments (packed per
    # call; one image's product packs them itself and reads its patches packed)
    rng = np.random.default_rng(sum(k) * 10 + sum(s))
    mb = ModuleBuilder("phases")
    wc = mb.constant("wc", (rng.standard_normal((20, 6, *k)) * 0.2).astype(np.float32))
    bc = mb.constant("bc", rng.standard_normal(20).astype(np.float32))
    f = mb.function("main", [("x", "f32[N, 6, H, W]"), ("w", f"f32[20, 6, {k[0]}, {k[1]}]")],
                    ["f32[N, 20, ?, ?]", "f32[N, 20, ?, ?]"])
    attrs = {"strides": list(s), "pads": list(pads), "dilations": [1, 1], "groups": 1}
    f.ret(f.relu(f.conv2d(f.arg("x"), wc, bc, **attrs)), f.conv2d(f.arg("x"), f.arg("w"), **attrs))
    module = mb.finish()
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    w = (rng.standard_normal((20, 6, *k)) * 0.2).astype(np.float32)

    def width_for(wo: int) -> int:         # the input width giving `wo` outputs
        return (wo - 1) * s[1] + k[1] - pads[1] - pads[3]
    for threads in (1, 2):
        lib.set_threads(threads)
        for n, h, wo in ((1, 21, 8), (3, 21, 8), (2, 19, 16), (1, 40, 13), (3, 17, 9), (1, 30, 32)):
            x = rng.standard_normal((n, 6, h, width_for(wo))).astype(np.float32)
            _check_in_place_forced_and_chosen(lib, vm, monkeypatch, x, w)


@pytest.mark.parametrize("pads", [(1, 1, 1, 1), (0, 1, 0, 1), (2, 0, 0, 3), (0, 0, 1, 0),
                                  (0, 0, 0, 0)])
def test_padding_rows_of_every_short_width(tmp_path, pads):
    # the padded copy of each image (dlvm_aot_conv.c: pad_task) stores rows of up to 32 floats
    # as whole vectors, their last lanes running into the rows after: widths 1 to 30, border
    # rows above and below or none, one image (each plane zeroed as it is copied, across the
    # pool) and several (a buffer zeroed once), against the interpreter
    rng = np.random.default_rng(sum(pads))
    mb = ModuleBuilder("pads")
    wc = mb.constant("wc", (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32))
    f = mb.function("main", [("x", "f32[N, 3, H, W]")], ["f32[N, 8, ?, ?]"])
    f.ret(f.conv2d(f.arg("x"), wc, strides=[1, 1], pads=list(pads), dilations=[1, 1], groups=1))
    module = mb.finish()
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    for threads in (1, 2):
        lib.set_threads(threads)
        for width in range(1, 31):
            for n, h in ((1, 5), (3, 4)):
                if h + pads[0] + pads[2] < 3 or width + pads[1] + pads[3] < 3:
                    continue
                x = rng.standard_normal((n, 3, h, width)).astype(np.float32)
                close(lib.run("main", x), vm.run("main", x), 1e-5)


@pytest.mark.parametrize("n,c,o,h,w,pads", [
    (2, 40, 48, 9, 11, (1, 1, 1, 1)),      # odd sizes: the last tile row and column keep one
    (1, 64, 64, 14, 14, (1, 1, 1, 1)),     # few tiles: phased across the pool at 2 threads
    (3, 33, 35, 7, 7, (1, 1, 1, 1)),       # O not a multiple of the register tile's 8 rows
    (2, 32, 40, 8, 13, (0, 2, 1, 0)),      # pads on one side only
    (1, 48, 32, 30, 5, (0, 0, 0, 0)),      # no padding, a tile row narrower than a vector
    (4, 36, 64, 20, 37, (2, 1, 0, 1)),     # units of tile rows across images, 19-tile rows
])
@pytest.mark.parametrize("kh", [3, 1])      # 3x3 (F(2x2, 3x3)) and 1x3 (F(2, 3), a conv1d's)
def test_winograd_convolution(tmp_path, monkeypatch, n, c, o, h, w, pads, kh):
    # 3x3 and 1x3 stride-1 convolutions by F(2x2, 3x3) and F(2, 3) (dlvm_aot_winograd.c)
    # against the interpreter:
    # forced on, forced off and chosen, constant weights (transformed once, with a bias and the
    # relu applied as the outputs are stored) and weights that are arguments (transformed per
    # call), on one thread (units of tile rows) and two (units, or the phased steps)
    rng = np.random.default_rng(n * 1000 + c * 10 + h)
    mb = ModuleBuilder("winograd")
    wc = mb.constant("wc", (rng.standard_normal((o, c, kh, 3)) * 0.2).astype(np.float32))
    bc = mb.constant("bc", rng.standard_normal(o).astype(np.float32))
    f = mb.function("main", [("x", f"f32[N, {c}, {h}, {w}]"), ("w", f"f32[{o}, {c}, {kh}, 3]")],
                    ["f32[N, ?, ?, ?]", "f32[N, ?, ?, ?]"])
    attrs = {"strides": [1, 1], "pads": list(pads), "dilations": [1, 1], "groups": 1}
    y1 = f.relu(f.conv2d(f.arg("x"), wc, bc, **attrs))
    y2 = f.conv2d(f.arg("x"), f.arg("w"), **attrs)
    f.ret(y1, y2)
    module = mb.finish()
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = (rng.standard_normal((o, c, kh, 3)) * 0.2).astype(np.float32)
    want = vm.run("main", x, wt)
    for threads in (1, 2):
        lib.set_threads(threads)
        got = {}
        for mode in ("1", "0", ""):
            monkeypatch.setenv("DLVM_WINOGRAD", mode)
            got[mode] = lib.run("main", x, wt)
            close(got[mode], want, 1e-5)
        # the transforms ran: their sums are not the direct ones bit for bit
        assert not np.array_equal(got["1"][1], got["0"][1])
    # an infinite or NaN input: the transforms would make NaN of inf - inf, so the call runs
    # the direct products (the same bits as forced off)
    x[0, 1, 2, 3], x[-1, 0, 0, 0] = np.inf, np.nan
    want = vm.run("main", x, wt)
    monkeypatch.setenv("DLVM_WINOGRAD", "1")
    on = lib.run("main", x, wt)
    monkeypatch.setenv("DLVM_WINOGRAD", "0")
    off = lib.run("main", x, wt)
    close(on, want, 1e-5)
    for a, b in zip(on, off):
        np.testing.assert_array_equal(a, b)


def _two_convolutions(tmp_path, wv: np.ndarray, hw: int):
    """A library and the interpreter of two 3x3, pad-1 convolutions of [N, 32, hw, hw]: by the
    constant weights `wv`, and by weights passed as an argument."""
    mb = ModuleBuilder("winograd_two")
    wc = mb.constant("wc", wv)
    f = mb.function("main", [("x", f"f32[N, 32, {hw}, {hw}]"), ("w", "f32[32, 32, 3, 3]")],
                    ["f32[N, ?, ?, ?]", "f32[N, ?, ?, ?]"])
    attrs = {"strides": [1, 1], "pads": [1, 1, 1, 1], "dilations": [1, 1], "groups": 1}
    f.ret(f.conv2d(f.arg("x"), wc, **attrs), f.conv2d(f.arg("x"), f.arg("w"), **attrs))
    module = mb.finish()
    compile_library(module, tmp_path)
    return aot.load(tmp_path), dlvmrt.VM(module, jit="off")


def test_winograd_declines_non_finite_weights(tmp_path, monkeypatch):
    # a constant weight that is infinite: the transformed weights are never used (every call
    # runs the direct products); an argument weight: checked per call
    rng = np.random.default_rng(9)
    wv = (rng.standard_normal((32, 32, 3, 3)) * 0.2).astype(np.float32)
    wv[3, 4, 1, 2] = -np.inf
    lib, vm = _two_convolutions(tmp_path, wv, 12)
    x = np.abs(rng.standard_normal((2, 32, 12, 12))).astype(np.float32)
    monkeypatch.setenv("DLVM_WINOGRAD", "1")
    for _ in range(2):
        got = lib.run("main", x, wv)
        want = vm.run("main", x, wv)
        close(got, want, 1e-5)
        assert np.isneginf(got[0]).any() and np.isneginf(got[1]).any()


def test_winograd_declines_where_the_transforms_overflow(tmp_path, monkeypatch):
    # finite values large enough that the transforms' sums overflow (inputs near FLT_MAX / 4,
    # weights whose G g G^T passes FLT_MAX) would come out NaN or inf where the direct sums are
    # finite: the call declines to the direct products (found by the review of the first
    # version); chosen and forced, constant and argument weights
    rng = np.random.default_rng(12)
    wv = (rng.standard_normal((32, 32, 3, 3)) * 1e-3).astype(np.float32)
    lib, vm = _two_convolutions(tmp_path, wv, 16)
    x = np.where(np.indices((1, 32, 16, 16)).sum(axis=0) % 2 == 0, 1e38, -1e38).astype(np.float32)
    x = np.repeat(x, 2, axis=0)
    big_w = np.full((32, 32, 3, 3), 2e38, np.float32)
    # the sums cancel (terms of +-1e35 to a result of 1e34): their rounding is measured against
    # the terms' magnitude, which the order of a product's sum moves by a few units of it (AVX2's
    # and AVX-512's blockings differ by 1.1e-5 of the result here)
    terms = float(np.abs(x).max() * np.abs(wv).sum(axis=(1, 2, 3)).max())
    for mode in ("", "1"):
        monkeypatch.setenv("DLVM_WINOGRAD", mode)
        got = lib.run("main", x, wv)
        assert np.isfinite(got[0]).all() and np.isfinite(got[1]).all()
        for g, w in zip(got, vm.run("main", x, wv)):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-6 * terms)
        small = np.full((2, 32, 16, 16), 1e-38, np.float32)
        got = lib.run("main", small, big_w)
        assert np.isfinite(got[1]).all()
        close(got, vm.run("main", small, big_w), 1e-5)


def test_winograd_is_not_chosen_for_one_wide_row(tmp_path, monkeypatch):
    # a conv1d at batch 1 over a long sequence is one tile row: one unit on one thread, its
    # scratch growing with the row, so the direct products run it (bit for bit those forced)
    mb = ModuleBuilder("winograd_wide")
    wc = mb.constant("wc", (np.random.default_rng(3).standard_normal((128, 128, 1, 3)) * 0.1
                            ).astype(np.float32))
    f = mb.function("main", [("x", "f32[N, 128, 1, 4096]")], ["f32[N, ?, ?, ?]"])
    f.ret(f.conv2d(f.arg("x"), wc, strides=[1, 1], pads=[0, 1, 0, 1], dilations=[1, 1], groups=1))
    module = mb.finish()
    compile_library(module, tmp_path)
    lib = aot.load(tmp_path)
    lib.set_threads(2)
    x = np.random.default_rng(4).standard_normal((1, 128, 1, 4096)).astype(np.float32)
    monkeypatch.setenv("DLVM_WINOGRAD", "")
    chosen = lib.run("main", x)
    monkeypatch.setenv("DLVM_WINOGRAD", "0")
    np.testing.assert_array_equal(chosen[0], lib.run("main", x)[0])
    monkeypatch.setenv("DLVM_WINOGRAD", "1")       # forced, it still computes the same
    close(lib.run("main", x), chosen, 1e-5)


def test_convolution_of_no_input_channels_is_the_bias(tmp_path):
    # zero input channels: every output is the bias (then the relu), where the products never
    # wrote the output (it held whatever the buffer held before)
    mb = ModuleBuilder("no_channels")
    bc = mb.constant("bc", np.array([1.5, -2.0, 0.25], np.float32))
    f = mb.function("main", [("x", "f32[N, 0, 5, 6]"), ("w", "f32[3, 0, 3, 3]")],
                    ["f32[N, ?, ?, ?]", "f32[N, ?, ?, ?]"])
    attrs = {"strides": [1, 1], "pads": [1, 1, 1, 1], "dilations": [1, 1], "groups": 1}
    f.ret(f.conv2d(f.arg("x"), f.arg("w"), bc, **attrs),
          f.relu(f.conv2d(f.arg("x"), f.arg("w"), bc, **attrs)))
    module = mb.finish()
    compile_library(module, tmp_path)
    x, w = np.zeros((2, 0, 5, 6), np.float32), np.zeros((3, 0, 3, 3), np.float32)
    got = aot.load(tmp_path).run("main", x, w)
    want = dlvmrt.VM(module, jit="off").run("main", x, w)
    close(got, want)
    np.testing.assert_array_equal(got[0][1, :, 2, 3], [1.5, -2.0, 0.25])


def _need_avx512() -> None:
    from jit.llvm import target as host
    if "+avx512f" not in host.host().features.split(","):
        pytest.skip("pool_vector_task is compiled with AVX-512 only")


def _pool_path(monkeypatch, path: str) -> None:
    """Force a 2-D f32 pool's form: "0" rows, "1" lanes, "vector" column chunks (AVX-512
    only: skipped on other CPUs)."""
    if path == "vector":
        _need_avx512()
        monkeypatch.delenv("DLVM_POOL_LANES", raising=False)
        monkeypatch.setenv("DLVM_POOL_VECTOR", "1")
    else:
        monkeypatch.setenv("DLVM_POOL_LANES", path)
        monkeypatch.setenv("DLVM_POOL_VECTOR", "0")


@pytest.mark.parametrize("k,s,p,d,ceil", [((2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False),
                                          ((3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True),
                                          ((3, 2), (1, 3), (1, 0, 2, 1), (2, 1), False)])
@pytest.mark.parametrize("lanes", ["0", "1", "vector"])
def test_max_pool(tmp_path, monkeypatch, k, s, p, d, ceil, lanes):
    # row-wise f32 max pooling (dlvm_aot_conv.c: pool_task), 16 planes to a vector
    # (pool_lanes_task, 6 planes of 16 lanes used here), and a vector per chunk of output
    # columns (pool_vector_task, with AVX-512): borders, strides, dilations, ceil mode, and a
    # NaN inside a window wins
    _pool_path(monkeypatch, lanes)
    attrs = (f"kernel = {list(k)}, strides = {list(s)}, pads = {list(p)}, dilations = {list(d)}, "
             f"ceil_mode = {str(ceil).lower()}")
    module = assembler.parse(f"""module mp
func @main(%x: f32[N, 3, 9, 11]) -> f32[N, 3, ?, ?] {{
entry:
  %y = maxpool2d %x {{{attrs}}}
  ret %y
}}
""")
    x = np.random.default_rng(4).standard_normal((2, 3, 9, 11)).astype(np.float32)
    x[1, 2, 4, 5] = np.nan
    compile_library(module, tmp_path)
    close(aot.load(tmp_path).run("main", x), dlvmrt.VM(module, jit="off").run("main", x))


@pytest.mark.parametrize("vector", ["0", "1"])
def test_pooling_of_many_small_planes(tmp_path, monkeypatch, vector):
    # 35 planes of 11x11 (two blocks of 16 lanes and a block of 3): SqueezeNet's 3x3/2
    # ceil-mode max pool and PoolFormer's 3x3/1 average without the pads, by lanes
    # (pool_lanes_task) or by column chunks (pool_vector_task) at two thread counts; NaN and
    # -inf in windows
    if vector == "1":
        _need_avx512()
    monkeypatch.delenv("DLVM_POOL_LANES", raising=False)
    monkeypatch.setenv("DLVM_POOL_VECTOR", vector)
    module = assembler.parse("""module many
func @main(%x: f32[N, 7, 11, 11]) -> (f32[N, 7, ?, ?], f32[N, 7, ?, ?]) {
entry:
  %m = maxpool2d %x {kernel = [3, 3], strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1], \
ceil_mode = true}
  %a = avgpool2d %x {kernel = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], \
ceil_mode = false, count_include_pad = false}
  ret %m, %a
}
""")
    x = np.random.default_rng(9).standard_normal((5, 7, 11, 11)).astype(np.float32)
    x[4, 6, 10, 10] = np.nan
    x[2, 3, 0, 5] = -np.inf
    compile_library(module, tmp_path)
    lib = aot.load(tmp_path)
    for threads in (1, 2):
        lib.set_threads(threads)
        close(lib.run("main", x), dlvmrt.VM(module, jit="off").run("main", x))


@pytest.mark.parametrize("op, k, s, p, d, ceil", [
    ("maxpool2d", (3, 3), (2, 2), (0, 0, 0, 0), (1, 1), True),      # 15-output chunks, overhang
    ("maxpool2d", (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False),     # a ResNet stem's
    ("maxpool2d", (5, 13), (1, 1), (2, 6, 2, 6), (1, 1), False),    # YOLO's SPP: a wide reach
    ("maxpool2d", (2, 3), (3, 4), (0, 2, 1, 0), (2, 3), True),      # dilated, 7-output chunks
    ("avgpool2d", (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True),
    ("avgpool2d", (4, 5), (1, 2), (2, 2, 1, 2), (1, 1), False)])
@pytest.mark.parametrize("include", [False, True])
def test_pooling_by_column_chunks(tmp_path, monkeypatch, op, k, s, p, d, ceil, include):
    # pool_vector_task over planes wider than one chunk (45 columns: two or three chunks, the
    # last one partial) and narrower than one (7), with NaN and -inf in windows, at one and two
    # threads, against the interpreter
    if op == "maxpool2d" and include:
        pytest.skip("count_include_pad is an average's")
    _need_avx512()
    monkeypatch.setenv("DLVM_POOL_VECTOR", "1")
    extra = f", count_include_pad = {str(include).lower()}" if op == "avgpool2d" else ""
    attrs = (f"kernel = {list(k)}, strides = {list(s)}, pads = {list(p)}, dilations = {list(d)}, "
             f"ceil_mode = {str(ceil).lower()}{extra}")
    module = assembler.parse(f"""module chunks
func @main(%x: f32[N, 5, 13, 45], %z: f32[N, 5, 9, 7]) -> (f32[N, 5, ?, ?], f32[N, 5, ?, ?]) {{
entry:
  %y = {op} %x {{{attrs}}}
  %v = {op} %z {{{attrs}}}
  ret %y, %v
}}
""")
    rng = np.random.default_rng(11)
    x = rng.standard_normal((4, 5, 13, 45)).astype(np.float32)
    z = rng.standard_normal((4, 5, 9, 7)).astype(np.float32)
    x[1, 2, 6, 20] = np.nan
    x[3, 4, 0, 44] = -np.inf
    z[2, 1, 8, 0] = np.nan
    compile_library(module, tmp_path)
    lib = aot.load(tmp_path)
    for threads in (1, 2):
        lib.set_threads(threads)
        close(lib.run("main", x, z), dlvmrt.VM(module, jit="off").run("main", x, z))


@pytest.mark.parametrize("ceil", [False, True])
@pytest.mark.parametrize("w", [71, 24, 9])
def test_two_by_two_pooling_of_wide_planes(tmp_path, ceil, w):
    # 2x2 stride-2 windows (dlvm_aot_conv.c: pool2x2_plane): 16 outputs per vector step and the
    # rest (all of a narrow plane's) as one masked step, a NaN winning the maximum in either
    # row or column of a window; with ceil mode on an odd size the last window is partial and
    # the general path runs
    attrs = (f"kernel = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1], "
             f"ceil_mode = {str(ceil).lower()}")
    module = assembler.parse(f"""module p2
func @main(%x: f32[N, 3, 11, {w}]) -> (f32[N, 3, ?, ?], f32[N, 3, ?, ?]) {{
entry:
  %m = maxpool2d %x {{{attrs}}}
  %a = avgpool2d %x {{{attrs}, count_include_pad = false}}
  ret %m, %a
}}
""")
    x = np.random.default_rng(7).standard_normal((2, 3, 11, w)).astype(np.float32)
    for at in ((0, 0, 0, 0), (0, 1, 3, 7), (1, 2, 4, 40), (1, 0, 9, 69), (0, 2, 10, 70)):
        x[at[:3] + (at[3] % w,)] = np.nan
    x[1, 1, 2, 2] = -np.inf
    compile_library(module, tmp_path)
    close(aot.load(tmp_path).run("main", x), dlvmrt.VM(module, jit="off").run("main", x))


@pytest.mark.parametrize("k,s,p,d,ceil,include", [
    ((2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False, False),
    ((3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True, False),
    ((3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True, True),
    ((3, 2), (1, 3), (1, 0, 2, 1), (2, 1), False, True)])
@pytest.mark.parametrize("lanes", ["0", "1", "vector"])
def test_avg_pool(tmp_path, monkeypatch, k, s, p, d, ceil, include, lanes):
    # row-wise average pooling (dlvm_aot_conv.c: pool_task, avgpool_double_task), and f32 16 planes to a
    # vector (pool_lanes_task) or a vector per chunk of output columns (pool_vector_task): the
    # divisor counts the image, the explicit pads with count_include_pad, never the ceil-mode
    # overhang; f32 and f64
    _pool_path(monkeypatch, lanes)
    attrs = (f"kernel = {list(k)}, strides = {list(s)}, pads = {list(p)}, dilations = {list(d)}, "
             f"ceil_mode = {str(ceil).lower()}, count_include_pad = {str(include).lower()}")
    module = assembler.parse(f"""module ap
func @main(%x: f32[N, 3, 9, 11], %x64: f64[N, 2, 7, 5]) -> (f32[N, 3, ?, ?], f64[N, 2, ?, ?]) {{
entry:
  %y = avgpool2d %x {{{attrs}}}
  %y64 = avgpool2d %x64 {{{attrs}}}
  ret %y, %y64
}}
""")
    rng = np.random.default_rng(6)
    args = [rng.standard_normal((2, 3, 9, 11)).astype(np.float32), rng.standard_normal((2, 2, 7, 5))]
    compile_library(module, tmp_path)
    close(aot.load(tmp_path).run("main", *args), dlvmrt.VM(module, jit="off").run("main", *args))


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_and_cumprod(tmp_path, exclusive, reverse):
    # dlvm_rt_cumulative: an axis from a run-time scalar (negative too), f32 and i64, and a trap
    attrs = f"exclusive = {str(exclusive).lower()}, reverse = {str(reverse).lower()}"
    module = assembler.parse(f"""module cs
func @main(%x: f32[N, 4, 5], %i: i64[N, 3], %ax: i32[]) -> (f32[N, 4, 5], i64[N, 3], \
f32[N, 4, 5]) {{
entry:
  %y = cumsum %x, %ax {{{attrs}}}
  %m1 = const -1 : i64[]
  %j = cumsum %i, %m1 {{{attrs}}}
  %p = cumprod %x, %ax {{{attrs}}}
  ret %y, %j, %p
}}
""")
    rng = np.random.default_rng(7)
    x, i = rng.standard_normal((2, 4, 5)).astype(np.float32), rng.integers(-9, 9, (2, 3))
    compile_library(module, tmp_path)
    lib = aot.load(tmp_path)
    for ax in (0, 1, -1):
        args = [x, i, np.array(ax, np.int32)]
        close(lib.run("main", *args), dlvmrt.VM(module, jit="off").run("main", *args))
    with pytest.raises(dlvmrt.Trap, match="out of range"):
        lib.run("main", x, i, np.array(3, np.int32))


@pytest.mark.parametrize("k,s,p,ceil,include", [
    ((2, 2, 2), (2, 2, 2), (0, 0, 0, 0, 0, 0), False, False),
    ((3, 2, 3), (2, 1, 2), (1, 0, 1, 1, 1, 0), True, False),
    ((3, 3, 3), (2, 2, 2), (1, 1, 1, 1, 1, 1), True, True)])
def test_pool_3d(tmp_path, k, s, p, ceil, include):
    # dlvm_rt_pool3d: the (H, W) windows of every depth slice, then the depth windows; max
    # (a NaN wins) and average (the divisor counts per axis), f32 and f64
    common = (f"kernel = {list(k)}, strides = {list(s)}, pads = {list(p)}, "
              f"dilations = [1, 1, 1], ceil_mode = {str(ceil).lower()}")
    module = assembler.parse(f"""module p3
func @main(%x: f32[N, 2, 5, 6, 7], %x64: f64[N, 1, 4, 5, 5]) -> (f32[N, 2, ?, ?, ?], \
f32[N, 2, ?, ?, ?], f64[N, 1, ?, ?, ?]) {{
entry:
  %m = maxpool2d %x {{{common}}}
  %a = avgpool2d %x {{{common}, count_include_pad = {str(include).lower()}}}
  %a64 = avgpool2d %x64 {{{common}, count_include_pad = {str(include).lower()}}}
  ret %m, %a, %a64
}}
""")
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 2, 5, 6, 7)).astype(np.float32)
    x[1, 0, 2, 3, 3] = np.nan
    args = [x, rng.standard_normal((2, 1, 4, 5, 5))]
    compile_library(module, tmp_path)
    close(aot.load(tmp_path).run("main", *args), dlvmrt.VM(module, jit="off").run("main", *args))


@pytest.mark.parametrize("largest", [True, False])
def test_topk(tmp_path, largest):
    # dlvm_rt_topk: ties keep index order, NaNs last, any axis, k from a run-time scalar
    module = assembler.parse(f"""module tk
func @main(%x: f32[N, 6, 3], %i: i64[N, 5], %k: i64[]) -> (f32[N, ?, 3], i64[N, ?, 3], \
i64[N, ?], i64[N, ?]) {{
entry:
  %v, %j = topk %x, %k {{axis = 1, largest = {str(largest).lower()}}}
  %w, %l = topk %i, 2 {{axis = -1, largest = {str(largest).lower()}}}
  ret %v, %j, %w, %l
}}
""")
    rng = np.random.default_rng(9)
    x = rng.integers(-3, 3, (2, 6, 3)).astype(np.float32)       # many ties
    x[0, 2, 1], x[1, 0, 0], x[1, 4, 2] = np.nan, -0.0, np.inf
    i = rng.integers(-2, 2, (2, 5))
    compile_library(module, tmp_path)
    lib = aot.load(tmp_path)
    for k in (0, 4, 6):
        args = [x, i, np.array(k)]
        got, want = lib.run("main", *args), dlvmrt.VM(module, jit="off").run("main", *args)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    with pytest.raises(dlvmrt.Trap, match="outside"):
        lib.run("main", x, i, np.array(7))


def test_max_pool_1d(tmp_path):
    # an NCW tensor pools as NC1W (program.py: _compute_call)
    module = assembler.parse("""module mp1
func @main(%x: f32[N, 3, 20]) -> f32[N, 3, ?] {
entry:
  %y = maxpool2d %x {kernel = [3], strides = [2], pads = [1, 1], dilations = [1], ceil_mode = true}
  ret %y
}
""")
    x = np.random.default_rng(5).standard_normal((2, 3, 20)).astype(np.float32)
    compile_library(module, tmp_path)
    close(aot.load(tmp_path).run("main", x), dlvmrt.VM(module, jit="off").run("main", x))


def test_argmax_and_argmin(tmp_path):
    module = assembler.parse("""module am
func @main(%x: f32[N, 5], %i: i32[N, 5]) -> (i64[N], i64[1, 5], i64[N, 1]) {
entry:
  %a = argmax %x {axis = 1}
  %b = argmin %x {axis = 0, keepdims = true}
  %c = argmax %i {axis = -1, keepdims = true}
  ret %a, %b, %c
}
""")
    x = np.random.default_rng(2).standard_normal((4, 5)).astype(np.float32)
    x[2, 3] = np.nan
    x[0, :] = 1.0       # ties: the first index
    i = np.random.default_rng(3).integers(-5, 5, (4, 5)).astype(np.int32)
    compile_library(module, tmp_path)
    close(aot.load(tmp_path).run("main", x, i), dlvmrt.VM(module, jit="off").run("main", x, i))


def test_range(tmp_path):
    module = assembler.parse("""module rg
func @main(%a: i64[], %b: i64[], %c: i64[], %f: f32[]) -> (i64[?], f32[?]) {
entry:
  %r = range %a, %b, %c
  %zero = const 0.0 : f32[]
  %step = const 0.25 : f32[]
  %s = range %zero, %f, %step
  ret %r, %s
}
""")
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    for a, b, c, f in ((0, 7, 2, 1.1), (5, -3, -3, 0.0), (2, 2, 1, -1.0)):
        args = (np.array(a), np.array(b), np.array(c), np.array(f, np.float32))
        close(lib.run("main", *args), vm.run("main", *args))
    with pytest.raises(Trap, match="delta is 0"):
        lib.run("main", np.array(0), np.array(3), np.array(0), np.array(1.0, np.float32))


def test_gather_nd(tmp_path):
    module = assembler.parse("""module gnd
func @main(%x: f32[N, 4, 3], %i: i64[N, 2, 1], %j: i64[5, 2]) -> (f32[N, 2, 3], f32[5, 3]) {
entry:
  %a = gather_nd %x, %i {batch_dims = 1}
  %b = gather_nd %x, %j
  ret %a, %b
}
""")
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    x = np.arange(36, dtype=np.float32).reshape(3, 4, 3)
    i = np.array([[[0], [3]], [[-1], [2]], [[1], [1]]])
    j = np.array([[0, 0], [2, -1], [1, 3], [0, 2], [-3, 1]])
    close(lib.run("main", x, i, j), vm.run("main", x, i, j))
    with pytest.raises(Trap, match="gather_nd index 4 is out of range"):
        lib.run("main", x, np.full((3, 2, 1), 4), j)


def test_a_region_has_a_variant_for_each_broadcast():
    # %y's unknown dims line up with the mask's literal 4: at run time that dim is 4 or 1, and
    # the library holds a variant for each (dlvm_rt_region_any tries them in turn)
    module = assembler.parse("""module bc
func @main(%x: f32[N], %s: i64[4]) -> f32[?, ?, ?, ?] {
entry:
  %y = reshape_dyn %x, %s
  %m = const 1.5 : f32[1, 1, 4, 1]
  %z = mul %y, %m
  ret %z
}
""")
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        compile_library(module, d)
        lib, vm = aot.load(d), dlvmrt.VM(module, jit="off")
        x = np.arange(4, dtype=np.float32) - 1
        for s in ([1, 1, 1, 4], [1, 1, 4, 1], [1, 2, 4, 1], [2, 1, 1, 2]):
            close(lib.run("main", x if s != [1, 2, 4, 1] else np.arange(8, dtype=np.float32),
                          np.array(s)),
                  vm.run("main", x if s != [1, 2, 4, 1] else np.arange(8, dtype=np.float32),
                         np.array(s)))


GROW = """module grow
func @main(%x: f32[T, 3], %n: i64[]) -> (f32[?, 3], f32[?, 3], f32[1, ?]) {
entry:
  %zero = const 0 : i64[]
  %one = const 1 : i64[]
  %i = mov %zero
  %ys = const 0.0 : f32[0, 3]
  %other = const 0.0 : f32[0, 3]
  %row = const 0.0 : f32[1, 0]
  jmp head
head:
  %more = lt %i, %n
  br %more, body, done
body:
  %xt = gather %x, %i {axis = 0}
  %x1 = expand_dims %xt {axes = [0]}
  %old = mov %ys
  %ys = concat %ys, %x1 {axis = 0}
  %twice = mul %x1, 2.0
  %other = concat %old, %twice {axis = 0}
  %row = concat %row, %x1 {axis = 1}
  %i = add %i, %one
  jmp head
done:
  ret %ys, %other, %row
}
"""


def test_a_growing_concat_appends_in_place(tmp_path):
    # ys grows by one row per step in its own buffer; %other, a second concat onto an older
    # value of ys, must get its own copy, and ys its rows unchanged
    module = assembler.parse(GROW)
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    x = np.arange(21, dtype=np.float32).reshape(7, 3)
    for n in (0, 1, 5, 7):
        close(lib.run("main", x, np.array(n)), vm.run("main", x, np.array(n)))


CONV_RELU = """module cr
func @main(%x: f32[N, 3, 9, 9], %w: f32[8, 3, 3, 3], %b: f32[8], %g: f32[6, 1, 3, 3], \
%x6: f32[N, 6, 7, 7], %v: f32[2, 3, 1, 1]) -> (f32[N, 8, ?, ?], f32[N, 6, ?, ?], f32[N, 2, 9, 9], \
f32[N, 8, ?, ?]) {
entry:
  %c = conv2d %x, %w, %b {strides = [2, 1], pads = [1, 1, 1, 0], dilations = [1, 1], groups = 1}
  %y = relu %c
  %d = conv2d %x6, %g {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], groups = 6}
  %z = relu %d
  %p = conv2d %x, %v {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], groups = 1}
  %q = relu %p
  %e = conv2d %x, %w, %b {strides = [2, 1], pads = [1, 1, 1, 0], dilations = [1, 1], groups = 1}
  %f = relu %e
  %h = add %e, %f
  ret %y, %z, %q, %h
}
"""


def test_convolution_then_relu_in_one_call(tmp_path):
    # an f32 convolution whose epilogue is only a relu: one call applying the relu as the
    # products store (dlvm_rt_conv2d_packed's relu: GEMM, few-rows, grouped paths), NaN staying NaN; a
    # convolution whose result is read besides its relu keeps the two apart
    module = assembler.parse(CONV_RELU)
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(15)
    for n in (1, 3):
        args = [rng.standard_normal(s).astype(np.float32) for s in
                ((n, 3, 9, 9), (8, 3, 3, 3), (8,), (6, 1, 3, 3), (n, 6, 7, 7), (2, 3, 1, 1))]
        args[0][0, 1, 4, 4] = np.nan
        close(lib.run("main", *args), vm.run("main", *args), 1e-5)
    from jit.targets.aot.program import ProgramCompiler
    source = ProgramCompiler(module, "cr").compile().source
    import re
    relus = re.findall(r"dlvm_rt_conv2d_packed\(ctx, [^;]*?, (\d), (?:NULL|&P_\w+), &", source)
    assert sorted(relus) == ["0", "1", "1", "1"], relus


RESAMPLE = """module rs
const @s2 : f32[2] = [2.0, 2.0]
const @s4 : f32[2] = [4.0, 0.5]
const @h : f32[2] = [3.0, 1.0]
const @w : f32[1] = [2.5]
func @main(%x: f32[N, 3, 7, 9], %v: f32[N, 3, 10], %u: f32[N, 2, 5, 40], %p: f32[N, 1, 3, 16], \
%q: f32[N, 1, 3, 32], %o: f32[N, 1, 3, 17]) -> (f32[N, 3, 14, 18], f32[N, 3, 28, 4], \
f32[N, 3, 21, 9], f32[N, 3, 25], f32[N, 3, 14, 18], f32[N, 3, 14, 18], f32[N, 3, 28, 4], \
f32[N, 2, 10, 80], f32[N, 1, 6, 32], f32[N, 1, 6, 64], f32[N, 1, 6, 34]) {
entry:
  %a = resize %x, @s2 {axes = [2, 3], mode = "linear"}
  %b = resize %x, @s4 {axes = [2, 3], mode = "linear", transform = "align_corners", antialias = true}
  %c = resize %x, @h {axes = [2, 3], mode = "nearest", transform = "asymmetric", nearest_mode = "floor"}
  %d = resize %v, @w {axes = [2], mode = "cubic", exclude_outside = true}
  %e = resize %x, @s2 {axes = [2, 3], mode = "cubic", transform = "pytorch_half_pixel"}
  %g = resize %x, @s2 {axes = [2, 3], mode = "nearest", nearest_mode = "round_prefer_ceil"}
  %k = resize %x, @s4 {axes = [2, 3], mode = "cubic", transform = "half_pixel_symmetric"}
  %m = resize %u, @s2 {axes = [2, 3], mode = "linear"}
  %p2 = resize %p, @s2 {axes = [2, 3], mode = "linear"}
  %q2 = resize %q, @s2 {axes = [2, 3], mode = "nearest"}
  %o2 = resize %o, @s2 {axes = [2, 3], mode = "cubic"}
  ret %a, %b, %c, %d, %e, %g, %k, %m, %p2, %q2, %o2
}
"""

RESIZE_CHANNELS = """module rc
const @sz : i64[3] = [6, 7, 9]
func @main(%x: f32[2, 3, 7, 9]) -> f32[2, 6, 7, 9] {
entry:
  %y = resize %x, @sz {axes = [1, 2, 3], by = "sizes", mode = "linear"}
  ret %y
}
"""


def test_resize_in_one_pass(tmp_path):
    # a resize with a constant target of the last one or two axes: tap tables from the
    # interpreter's tap math, one runtime pass (dlvm_rt_resample) for every mode, transform,
    # antialias and exclude_outside, rows of up to 32 columns by permutes (16, 17, 32: the
    # masks) and wider ones
    # element by element; a resize of other axes stays out of the library
    module = assembler.parse(RESAMPLE)
    compile_library(module, tmp_path)
    from jit.targets.aot.program import ProgramCompiler
    assert ProgramCompiler(module, "rs").compile().source.count("dlvm_rt_resample(ctx") == 11
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(17)
    for n in (1, 2):
        args = [rng.standard_normal((n, 3, 7, 9)).astype(np.float32),
                rng.standard_normal((n, 3, 10)).astype(np.float32),
                rng.standard_normal((n, 2, 5, 40)).astype(np.float32)] + \
            [rng.standard_normal((n, 1, 3, w)).astype(np.float32) for w in (16, 32, 17)]
        close(lib.run("main", *args), vm.run("main", *args), 1e-5)
    with pytest.raises(AotError, match="resize of axes other than the last one or two"):
        compile_library(assembler.parse(RESIZE_CHANNELS), tmp_path / "channels")
    # a named axis the target sizes (even to 1): its size is not known here, so the VM runs it
    named = RESIZE_CHANNELS.replace("f32[2, 3, 7, 9]) -> f32[2, 6, 7, 9]", "f32[N, 3, 7, 9]) -> "
                                    "f32[1, 3, 14, 18]").replace("[6, 7, 9]", "[1, 14, 18]")
    named = named.replace("axes = [1, 2, 3]", "axes = [0, 2, 3]")
    with pytest.raises(AotError, match="known only at run time"):
        compile_library(assembler.parse(named), tmp_path / "named")


def test_resize_rows_of_every_width(tmp_path):
    # the row pass's vector forms: rows under 8, 16 and 32 columns and wider ones, up- and
    # downsampled, whose every 8 output columns read one window of 16 inputs (the AVX2 form's
    # permutes, the window moved back from the row's end) or more than one (a 4x downsampling's:
    # element by element)
    cases = [(w, f, mode) for w in (1, 3, 8, 13, 16, 19, 24, 33, 70)
             for f, mode in ((2.0, "linear"), (1.5, "cubic"), (3.0, "nearest"), (0.75, "linear"),
                             (0.25, "cubic"))]
    sigs, body, outs = [], [], []
    for i, (w, f, mode) in enumerate(cases):
        o = int(np.floor(w * f))
        if o < 1:
            continue
        sigs.append((f"%x{i}: f32[N, 2, {w}]", f"f32[N, 2, {o}]"))
        body.append(f'  %y{i} = resize %x{i}, @f{i} {{axes = [2], mode = "{mode}"}}\n')
        outs.append(f"%y{i}")
    consts = "".join(f"const @f{i} : f32[1] = [{f}]\n" for i, (w, f, mode) in enumerate(cases))
    module = assembler.parse(
        f"module rw\n{consts}func @main({', '.join(a for a, _ in sigs)}) -> "
        f"({', '.join(r for _, r in sigs)}) {{\nentry:\n{''.join(body)}  ret {', '.join(outs)}\n}}\n")
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    assert not lib.manifest.get("vm_instructions")
    rng = np.random.default_rng(5)
    for n in (1, 3):
        args = [rng.standard_normal((n, 2, int(a.split("2, ")[1].rstrip("]")))).astype(np.float32)
                for a, _ in sigs]
        close(lib.run("main", *args), vm.run("main", *args), 1e-5)


@pytest.mark.parametrize("nd, x_dtype, grid_dtype", [(1, "f64", "f32"), (2, "f32", "f32"),
                                                     (2, "f32", "f64"), (3, "f32", "f32")])
def test_grid_sample_in_the_library(tmp_path, nd, x_dtype, grid_dtype):
    # dlvm_rt_grid_sample: every mode, padding and corner setting exactly as the interpreter
    # computes them (no fused multiply-adds), with positions far outside, on the borders, NaN,
    # infinite and beyond int64, on sizes of 1 to 200; no instruction left to the VM
    from isa.ops.sampling import MODES, PADDINGS
    x_shape = {1: "N, 3, 49", 2: "N, 3, 1, 200", 3: "N, 2, 4, 3, 49"}[nd]
    g_shape = {1: "N, 16, 1", 2: "N, 6, 7, 2", 3: "N, 3, 2, 4, 3"}[nd]
    y_shape = {1: "N, 3, 16", 2: "N, 3, 6, 7", 3: "N, 2, 3, 2, 4"}[nd]
    settings = [(m, p, c) for m in MODES for p in PADDINGS for c in ("false", "true")]
    body = "".join(f'  %y{i} = grid_sample %x, %g {{mode = "{m}", padding_mode = "{p}", '
                   f'align_corners = {c}}}\n' for i, (m, p, c) in enumerate(settings))
    results = ", ".join(f"{x_dtype}[{y_shape}]" for _ in settings)
    module = assembler.parse(f"""module gs
func @main(%x: {x_dtype}[{x_shape}], %g: {grid_dtype}[{g_shape}]) -> ({results}) {{
entry:
{body}  ret {", ".join(f"%y{i}" for i in range(len(settings)))}
}}
""")
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    assert not lib.manifest.get("vm_instructions")
    rng = np.random.default_rng(nd)
    special = [np.nan, 1.0, -1.0, 7.5, -3.25, np.inf, -np.inf, 9.21e18, -9.3e18, 1.5e17, 1e300,
               0.5, -0.0204081632653]
    for n in (1, 2):
        x = rng.standard_normal([n if d.strip() == "N" else int(d) for d in x_shape.split(",")])
        g = rng.standard_normal([n if d.strip() == "N" else int(d) for d in g_shape.split(",")])
        g = g * 1.6
        g.flat[:len(special)] = special
        with np.errstate(over="ignore"):
            g = g.astype(np.dtype(grid_dtype.replace("f", "float")))
        x = x.astype(np.dtype(x_dtype.replace("f", "float")))
        for got, want in zip(lib.run("main", x, g), vm.run("main", x, g)):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_gather_and_scatter_elements(tmp_path, reduction):
    # dlvm_rt_gather_elements / dlvm_rt_scatter_elements: indices smaller than the data off the
    # axis, negative ones wrapped, repeated positions combined in index order; out of range traps
    module = assembler.parse(f"""module ge
func @main(%x: f32[N, 5], %i: i64[N, 3], %u: f32[N, 3], %j: i32[N, 2]) -> \
(f32[N, 3], f32[N, 5], f32[N, 2]) {{
entry:
  %g = gather_elements %x, %i {{axis = 1}}
  %s = scatter_elements %x, %i, %u {{axis = 1, reduction = "{reduction}"}}
  %h = gather_elements %x, %j {{axis = 0}}
  ret %g, %s, %h
}}
""")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 5)).astype(np.float32)
    i = np.array([[0, 4, -1], [2, 2, 2], [1, 0, 1]])
    u = rng.standard_normal((3, 3)).astype(np.float32)
    j = np.array([[2, 0], [-1, 1], [0, 0]], np.int32)
    compile_library(module, tmp_path)
    lib = aot.load(tmp_path)
    args = [x, i, u, j]
    close(lib.run("main", *args), dlvmrt.VM(module, jit="off").run("main", *args))
    with pytest.raises(dlvmrt.Trap, match="out of range"):
        lib.run("main", x, np.array([[0, 5, 0]] * 3), u, j)


@pytest.mark.parametrize("axis", [0, 1, 2, 3])
def test_gather_and_scatter_elements_of_rank_four(tmp_path, axis):
    # the offsets walk the indices row by row of their last axis (dlvm_aot_ops.c:
    # element_offsets): every axis gathered, indices smaller than the data off the axis on
    # leading, middle and last dims, both index dtypes, negative indices wrapped
    shape, ishape = (3, 4, 5, 6), [2, 3, 4, 5]
    ishape[axis] = 7
    module = assembler.parse(f"""module ge4
func @main(%x: f32[3, 4, 5, 6], %i: i64[{', '.join(map(str, ishape))}], \
%j: i32[{', '.join(map(str, ishape))}], %u: f32[{', '.join(map(str, ishape))}]) -> \
(f32[{', '.join(map(str, ishape))}], f32[{', '.join(map(str, ishape))}], f32[3, 4, 5, 6]) {{
entry:
  %g = gather_elements %x, %i {{axis = {axis}}}
  %h = gather_elements %x, %j {{axis = {axis}}}
  %s = scatter_elements %x, %i, %u {{axis = {axis}, reduction = "add"}}
  ret %g, %h, %s
}}
""")
    rng = np.random.default_rng(axis)
    x = rng.standard_normal(shape).astype(np.float32)
    i = rng.integers(-shape[axis], shape[axis], size=ishape)
    j = rng.integers(-shape[axis], shape[axis], size=ishape).astype(np.int32)
    u = rng.standard_normal(ishape).astype(np.float32)
    compile_library(module, tmp_path)
    lib = aot.load(tmp_path)
    for got, want in zip(lib.run("main", x, i, j, u),
                         dlvmrt.VM(module, jit="off").run("main", x, i, j, u)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_a_long_elementwise_chain_of_many_inputs_runs_in_the_library(tmp_path):
    # 24 inputs summed in a chain: one region would take 25 operands, more than a library
    # kernel's argument list holds (dlvm_aot_rt.c: call_kernel); the region former cuts the
    # chain for the library (jit/regions.py: MAX_OPERANDS), so every part runs there
    from jit.regions import MAX_OPERANDS, form_regions
    from jit.targets.aot.program import ProgramCompiler
    n = 24
    params = ", ".join(f"%x{i}: f32[N, 8]" for i in range(n))
    body = "\n".join(f"  %t{i} = mul %t{i - 1}, %x{i}" if i % 2 else f"  %t{i} = add %t{i - 1}, %x{i}"
                     for i in range(1, n))
    module = assembler.parse(f"""module chain
func @main({params}) -> f32[N, 8] {{
entry:
  %t0 = mov %x0
{body}
  ret %t{n - 1}
}}
""")
    from isa.verify import verify_module
    types = verify_module(module)["main"]
    assert len(form_regions(module, "main", types)) == 1          # the JIT's: no cap
    regions = form_regions(module, "main", types, max_operands=MAX_OPERANDS)
    assert len(regions) >= 2
    assert all(len(r.inputs) + len(r.outputs) <= MAX_OPERANDS for r in regions)
    program = ProgramCompiler(module, "chain", vm_fallback=True).compile()
    assert not program.vm_instructions and not program.unsupported
    compile_library(module, tmp_path)
    lib = aot.load(tmp_path)
    rng = np.random.default_rng(7)
    args = [rng.uniform(0.9, 1.1, (3, 8)).astype(np.float32) for _ in range(n)]
    close(lib.run("main", *args), dlvmrt.VM(module, jit="off").run("main", *args), 1e-5)


def test_slice_with_run_time_bounds(tmp_path):
    module = assembler.parse("""module sd
func @main(%x: f32[N, 6], %b: i64[2], %e: i64[2], %a: i64[2], %s: i64[2]) -> f32[?, ?] {
entry:
  %y = slice_dyn %x, %b, %e, %a, %s
  ret %y
}
""")
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    compile_library(module, tmp_path)
    lib = aot.load(tmp_path)
    for b, e, s in (([1, 0], [5, 3], [2, 1]), ([-1, 3], [-7, -1], [-2, -1]), ([0, 0], [9, 9],
                                                                             [1, 1])):
        args = [x, np.array(b), np.array(e), np.array([1, 0]), np.array(s)]
        close(lib.run("main", *args), dlvmrt.VM(module, jit="off").run("main", *args))
    with pytest.raises(dlvmrt.Trap, match="zero step"):
        lib.run("main", x, np.array([0, 0]), np.array([1, 1]), np.array([1, 0]),
                np.array([0, 1]))


@pytest.mark.parametrize("k", [1, 5, 64, 65, 150, 300])
def test_topk_of_long_rows(tmp_path, k):
    # a few of many (one pass keeping the best k) and a whole sort (merge sort), both giving
    # the reference's stable order with ties (values rounded) and NaNs
    module = assembler.parse("""module tkl
func @main(%x: f32[N, 300], %k: i64[]) -> (f32[N, ?], i64[N, ?], f32[N, ?], i64[N, ?]) {
entry:
  %v, %j = topk %x, %k {axis = 1, largest = true}
  %w, %l = topk %x, %k {axis = 1, largest = false}
  ret %v, %j, %w, %l
}
""")
    rng = np.random.default_rng(10)
    x = np.round(rng.standard_normal((4, 300)) * 4).astype(np.float32)
    x[1, ::37] = np.nan
    compile_library(module, tmp_path)
    args = [x, np.array(k)]
    got = aot.load(tmp_path).run("main", *args)
    want = dlvmrt.VM(module, jit="off").run("main", *args)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype", ["f32", "i32", "f64", "i64"])
def test_topk_of_many_rows_splits_them_across_threads(tmp_path, dtype):
    # a nearest-neighbour search's few of many (k = 16 of 256) over enough rows that they are
    # split into parts across the pool, along the last axis and along a middle one (strided
    # rows); every dtype's select, ties and NaNs in the reference's order
    module = assembler.parse(f"""module tkm
func @main(%x: {dtype}[N, 256, 3], %k: i64[]) -> ({dtype}[N, ?, 3], i64[N, ?, 3], \
{dtype}[N, 256, ?], i64[N, 256, ?]) {{
entry:
  %v, %j = topk %x, %k {{axis = 1, largest = false}}
  %w, %l = topk %x, 2 {{axis = -1, largest = true}}
  ret %v, %j, %w, %l
}}
func @last(%x: {dtype}[M, 256], %k: i64[]) -> ({dtype}[M, ?], i64[M, ?]) {{
entry:
  %v, %j = topk %x, %k {{axis = -1, largest = true}}
  ret %v, %j
}}
""")
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(41)
    np_type = {"f32": np.float32, "i32": np.int32, "f64": np.float64, "i64": np.int64}[dtype]
    x = rng.integers(-40, 40, (70, 256, 3)).astype(np_type)       # ties
    if dtype.startswith("f"):
        x[3, ::5, 1] = np.nan
        x[5, :8, 0] = -0.0
    flat = x.transpose(0, 2, 1).reshape(-1, 256).copy()            # 210 rows of 256
    lib.set_threads(2)
    for k in (1, 16, 64):
        for fn, a in (("main", x), ("last", flat)):
            got, want = lib.run(fn, a, np.array(k)), vm.run(fn, a, np.array(k))
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_scatter_nd(tmp_path, reduction):
    # slices addressed by index tuples (k < rank), negative indices, repeated tuples in order
    module = assembler.parse(f"""module snd
func @main(%x: f32[4, 3, N], %i: i64[5, 2], %u: f32[5, N]) -> f32[4, 3, N] {{
entry:
  %s = scatter_nd %x, %i, %u {{reduction = "{reduction}"}}
  ret %s
}}
""")
    rng = np.random.default_rng(12)
    x = rng.standard_normal((4, 3, 6)).astype(np.float32)
    i = np.array([[0, 1], [3, -1], [0, 1], [2, 0], [-4, 2]])
    u = rng.standard_normal((5, 6)).astype(np.float32)
    compile_library(module, tmp_path)
    lib = aot.load(tmp_path)
    close(lib.run("main", x, i, u), dlvmrt.VM(module, jit="off").run("main", x, i, u))
    with pytest.raises(dlvmrt.Trap, match="out of range"):
        lib.run("main", x, np.array([[0, 3]] * 5), u)


def test_broadcast_between_dims_the_types_do_not_fix(tmp_path):
    # [A, B, 8] + [C, D, 8]: either may be 1 on an axis at run time (an attention mask's head
    # axis against the scores'); the library carries a kernel variant for each way
    module = assembler.parse("""module ub
func @main(%a: f32[A, B, 8], %m: f32[C, D, 8]) -> f32[?, ?, 8] {
entry:
  %s = mul %a, 0.5
  %y = add %s, %m
  %z = exp %y
  ret %z
}
""")
    rng = np.random.default_rng(15)
    compile_library(module, tmp_path)
    lib = aot.load(tmp_path)
    for sa, sm in (((2, 3, 8), (2, 3, 8)), ((2, 3, 8), (2, 1, 8)), ((2, 3, 8), (1, 3, 8)),
                   ((1, 3, 8), (2, 3, 8)), ((2, 1, 8), (2, 3, 8))):
        a = rng.standard_normal(sa).astype(np.float32)
        m = rng.standard_normal(sm).astype(np.float32)
        close(lib.run("main", a, m), dlvmrt.VM(module, jit="off").run("main", a, m))


GATHER_VIEWS = """module views
func @main(%x: f32[N, 3], %i: i64[], %acc: f32[0, 3]) -> (f32[3], f32[3], f32[?, 3], f32[N, 3], f32[3]) {
entry:
  %y = mul %x, 2.0
  %a = gather %y, %i {axis = 0}
  %b = gather %y, -1 {axis = 0}
  %ea = expand_dims %a {axes = [0]}
  %eb = expand_dims %b {axes = [0]}
  %g = concat %acc, %ea {axis = 0}
  %g = concat %g, %eb {axis = 0}
  %g = concat %g, %ea {axis = 0}
  %h = add %y, 1.0
  %first = gather %y, 0 {axis = 0}
  %c = concat %ea, %eb {axis = 0}
  ret %a, %b, %g, %h, %first
}
"""


def test_gathers_of_one_index_share_the_buffer_and_stay_values(tmp_path):
    # a gather of one index with nothing before its axis is a view of its operand in the
    # library: the operand, the views and appends after them must all keep their values
    module = assembler.parse(GATHER_VIEWS)
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    acc = np.zeros((0, 3), np.float32)
    for i in (0, 2, -1, 4):
        args = (x, np.array(i), acc)
        for _ in range(2):
            close(lib.run("main", *args), vm.run("main", *args))
    with pytest.raises(Trap, match="out of range"):
        lib.run("main", x, np.array(5), acc)


def test_gather_along_an_axis_of_one_is_a_view(tmp_path):
    # torch's `[..., 0]` after a product of column vectors: one index along an axis of size 1
    # with axes before it, in the library a view of the operand (values kept after it, the
    # index still checked)
    module = assembler.parse("""module sel
func @main(%x: f32[N, 4, 3, 1], %i: i64[], %y: f32[N, 4, 3]) -> (f32[N, 4, 3], f32[N, 4, 3], \
f32[N, 4, 3, 1]) {
entry:
  %a = gather %x, %i {axis = 3}
  %b = gather %x, 0 {axis = -1}
  %c = add %a, %y
  %d = mul %b, %c
  %e = add %x, 1.0
  ret %d, %a, %e
}
""")
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(12)
    x = rng.standard_normal((5, 4, 3, 1)).astype(np.float32)
    y = rng.standard_normal((5, 4, 3)).astype(np.float32)
    for i in (0, -1):
        close(lib.run("main", x, np.array(i), y), vm.run("main", x, np.array(i), y))
    with pytest.raises(Trap, match="out of range"):
        lib.run("main", x, np.array(1), y)


@pytest.mark.parametrize("dtype", ["f32", "i64", "f64", "i32", "bool"])
def test_gather_of_one_index_along_the_last_axis(tmp_path, dtype):
    # one element of each row (a box's x of [B, N, 4]): a strided pick for 4- and 8-byte
    # elements, the general gather for others; rows enough to split across the pool
    module = assembler.parse(f"""module pick
func @main(%x: {dtype}[N, 7, 4], %i: i64[]) -> {dtype}[N, 7] {{
entry:
  %a = gather %x, %i {{axis = -1}}
  ret %a
}}
""")
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    lib.set_threads(2)
    rng = np.random.default_rng(13)
    for n in (1, 20000):
        x = (rng.standard_normal((n, 7, 4)) * 10).astype(np.bool_ if dtype == "bool" else
                                                         {"f32": np.float32, "i64": np.int64,
                                                          "f64": np.float64, "i32": np.int32}[dtype])
        for i in (0, 3, -2):
            np.testing.assert_array_equal(lib.run("main", x, np.array(i))[0],
                                          vm.run("main", x, np.array(i))[0])


@pytest.mark.parametrize("dtype", ["f32", "f64", "i64", "i32"])
def test_transposes_to_a_short_last_axis(tmp_path, dtype):
    """Transposes whose last axis is 2 to 4 long and not contiguous in the source are copied in
    blocks of the last two axes (dlvm_aot_ops.c: strided_blocks): the phases of a transposed
    convolution interleaved, a pixel shuffle, an axis of 3 moved last; small and large enough
    to split across the pool."""
    module = assembler.parse(f"""module short
func @main(%x: {dtype}[N, 2, 2, 33, 40], %y: {dtype}[N, 3, 50, 7]) -> \
({dtype}[N, 33, 2, 40, 2], {dtype}[N, 40, 33, 2, 2], {dtype}[N, 50, 7, 3], {dtype}[N, 7, 50, 3]) {{
entry:
  %a = transpose %x {{perm = [0, 3, 1, 4, 2]}}
  %b = transpose %x {{perm = [0, 4, 3, 2, 1]}}
  %c = transpose %y {{perm = [0, 2, 3, 1]}}
  %d = transpose %y {{perm = [0, 3, 2, 1]}}
  ret %a, %b, %c, %d
}}
""")
    compile_library(module, tmp_path)
    lib = aot.load(tmp_path)
    rng = np.random.default_rng(5)
    np_type = {"f32": np.float32, "f64": np.float64, "i64": np.int64, "i32": np.int32}[dtype]
    for n in (1, 200):
        x = (rng.standard_normal((n, 2, 2, 33, 40)) * 100).astype(np_type)
        y = (rng.standard_normal((n, 3, 50, 7)) * 100).astype(np_type)
        got = lib.run("main", x, y)
        want = [x.transpose(0, 3, 1, 4, 2), x.transpose(0, 4, 3, 2, 1), y.transpose(0, 2, 3, 1),
                y.transpose(0, 3, 2, 1)]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_iota_with_a_named_dim(tmp_path):
    """iota whose shape names the batch (the ONNX importer's MaxPool indices build one) runs in
    the library, sized by the call's dims: it had no kernel, and the VM cannot run an
    instruction whose attributes name a dim for the library, so the whole program stayed on the
    VM. Small integer dtypes wrap, as a cast from i64 would."""
    module = assembler.parse("""module io
func @main(%x: f32[N, 3, 4]) -> (i64[N, 3, 1, 1], f32[N, 3, 4], i8[300], i32[], f64[2, N]) {
entry:
  %a = iota {shape = [N, 3, 1, 1], axis = 1, dtype = i64}
  %b = iota {shape = [N, 3, 4], axis = 0, dtype = f32}
  %bb = add %b, %x
  %c = iota {shape = [300], axis = 0, dtype = i8}
  %d = iota {shape = [], axis = 0, dtype = i32}
  %e = iota {shape = [2, N], axis = -1, dtype = f64}
  ret %a, %bb, %c, %d, %e
}
""")
    compile_library(module, tmp_path)
    lib = aot.load(tmp_path)
    for n in (1, 5):
        x = np.random.default_rng(n).standard_normal((n, 3, 4)).astype(np.float32)
        got, want = lib.run("main", x), dlvmrt.VM(module, jit="off").run("main", x)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)


def test_large_copies_split_across_threads(tmp_path):
    # gathers, transposes and strided slices of more than PARALLEL_COPY_BYTES run across the
    # pool (dlvm_aot_ops.c: gather_task, strided_task), each part starting mid-row or mid-axis;
    # gathers along a last axis of at most 32 (in one or two registers) permute 16 at a time
    params = "%x: f32[N, 40, 70, 33], %i: i64[K], %v: i64[N, 90, 700], %y: f32[N, 50, 60, 20], " \
             "%z: f32[N, 50, 60, 9]"
    results = "f32[N, 40, K, 33], f32[N, 40, 70, K], f32[K, 40, 70, 33], f32[N, 33, 70, 40], " \
              "f32[N, 20, 35, 33], i64[N, K, 700], f32[N, 10, 40, 3, 7, 11], f32[N, 50, 60, K], " \
              "f32[N, 50, 60, K]"
    module = assembler.parse(f"module moves\nfunc @main({params}) -> ({results}) " + """{
entry:
  %a = gather %x, %i {axis = 2}
  %b = gather %x, %i {axis = 3}
  %c = gather %x, %i {axis = 0}
  %t = transpose %x {perm = [0, 3, 2, 1]}
  %s = slice %x {starts = [1, 0], ends = [40, 70], axes = [1, 2], steps = [2, 2]}
  %g = gather %v, %i {axis = 1}
  %r6 = reshape %x {shape = [-1, 40, 7, 10, 3, 11]}
  %t6 = transpose %r6 {perm = [0, 3, 1, 4, 2, 5]}
  %gy = gather %y, %i {axis = 3}
  %gz = gather %z, %i {axis = 3}
  ret %a, %b, %c, %t, %s, %g, %t6, %gy, %gz
}
""")
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(21)
    for threads in (1, 2, 3):
        lib.set_threads(threads)
        for n, k in ((1, 29), (3, 2), (5, 67)):
            x = rng.standard_normal((n, 40, 70, 33)).astype(np.float32)
            i = rng.integers(-n, n, k)      # valid on every gathered axis, negatives too
            v = rng.integers(-1000, 1000, (n, 90, 700))
            y = rng.standard_normal((n, 50, 60, 20)).astype(np.float32)
            z = rng.standard_normal((n, 50, 60, 9)).astype(np.float32)
            close(lib.run("main", x, i, v, y, z), vm.run("main", x, i, v, y, z), 0)


# (input [C, D, H, W], weights [O, C/g, kD, kH, kW], strides, pads, dilations, groups, bias,
# weights a constant): each of dlvm_rt_conv3d's forms
CONV3D_CASES = [
    ((3, 5, 9, 9), (8, 3, 3, 3, 3), [1, 1, 1], [1] * 6, [1, 1, 1], 1, True, True),   # in place, wide
    ((2, 4, 6, 16), (20, 2, 3, 3, 3), [2, 1, 1], [1, 0, 1, 0, 1, 1], [1, 2, 1], 1, False, False),  # rows
    ((6, 3, 7, 5), (12, 2, 2, 3, 1), [1, 1, 1], [0, 1, 0, 1, 2, 0], [2, 1, 1], 3, True, True),
    ((16, 3, 5, 6), (2, 16, 1, 1, 1), [1, 1, 1], [0] * 6, [1, 1, 1], 1, True, True),  # few channels
    ((16, 3, 5, 6), (24, 8, 1, 1, 1), [1, 1, 1], [0] * 6, [1, 1, 1], 2, False, False),  # pointwise
    ((4, 6, 11, 10), (10, 4, 3, 3, 3), [2, 2, 2], [1] * 6, [1, 1, 1], 1, True, True),  # patches
    ((4, 5, 12, 13), (6, 2, 2, 2, 3), [1, 3, 3], [0, 2, 1, 1, 0, 2], [1, 2, 1], 2, True, False),
    ((40, 3, 6, 6), (16, 40, 3, 3, 3), [1, 2, 1], [1] * 6, [1, 1, 1], 1, True, True),  # K > KC
]


def test_conv3d_forms_match_the_reference(tmp_path):
    """The native 3-D convolution (dlvm_aot_conv.c: dlvm_rt_conv3d) in each of its forms: read in
    place over the padded width or row by row, pointwise (a few output channels by rows of B),
    packed patches (strides 2 and 3), groups, bias, constant or parameter weights, K past one
    GEMM block; batch 1 (each product split across the pool) and 3 (units across it)."""
    rng = np.random.default_rng(33)
    mb = ModuleBuilder("conv3d")
    weights = []
    for i, (xs, ws, st, pd, dl, g, bias, const_w) in enumerate(CONV3D_CASES):
        w = (rng.standard_normal(ws) * 0.3).astype(np.float32)
        a = OPS["conv3d"].with_defaults({"strides": st, "pads": pd, "dilations": dl, "groups": g})
        out = OPS["conv3d"].reference(a, np.zeros((1, *xs), np.float32), w).shape[1:]
        params = [("x", "f32[N, " + ", ".join(map(str, xs)) + "]")]
        if not const_w:
            params.append(("w", "f32[" + ", ".join(map(str, ws)) + "]"))
        f = mb.function(f"f{i}", params, ["f32[N, " + ", ".join(map(str, out)) + "]"])
        ops = [f.arg("x"), mb.constant(f"w{i}", w) if const_w else f.arg("w")]
        if bias:
            ops.append(mb.constant(f"b{i}", rng.standard_normal(ws[0]).astype(np.float32)))
        f.ret(f.conv3d(*ops, strides=st, pads=pd, dilations=dl, groups=g))
        weights.append([] if const_w else [w])
    module = mb.finish()
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    for i, (xs, *_rest) in enumerate(CONV3D_CASES):
        for n in (1, 3):
            args = [rng.standard_normal((n, *xs)).astype(np.float32), *weights[i]]
            close(lib.run(f"f{i}", *args), vm.run(f"f{i}", *args), 1e-5)


def test_transposes_of_the_last_two_axes_move_tiles(tmp_path):
    """A copy whose last two axes are the source's swapped (K^T, NCHW -> NHWC) moves 16x16
    tiles through registers (dlvm_aot_ops.c: transposed_tiles), with edges of any size."""
    module = assembler.parse("""module tiles
func @main(%k: f32[N, 16, 1030], %x: f32[N, 19, 5, 33], %s: f32[40, 17]) -> \
(f32[N, 1030, 16], f32[N, 5, 33, 19], f32[17, 40]) {
entry:
  %kt = transpose %k {perm = [0, 2, 1]}
  %nhwc = transpose %x {perm = [0, 2, 3, 1]}
  %st = transpose %s {perm = [1, 0]}
  ret %kt, %nhwc, %st
}
""")
    compile_library(module, tmp_path)
    lib = aot.load(tmp_path)
    rng = np.random.default_rng(21)
    for n in (1, 3):
        k = rng.standard_normal((n, 16, 1030)).astype(np.float32)
        x = rng.standard_normal((n, 19, 5, 33)).astype(np.float32)
        s = rng.standard_normal((40, 17)).astype(np.float32)
        got = lib.run("main", k, x, s)
        for g, w in zip(got, [k.transpose(0, 2, 1), x.transpose(0, 2, 3, 1), s.T]):
            np.testing.assert_array_equal(g, w)


def test_batched_products_split_across_the_pool(tmp_path):
    """A batch of products each too small to split (an attention's heads), or enough of them
    for every thread, runs several products to a thread (dlvm_aot_rt.c: batched_task), with
    broadcast batch dims and products of fewer rows than a register tile."""
    module = assembler.parse("""module heads
func @main(%q: f32[N, 8, 64, 32], %k: f32[N, 8, 32, 64], %a: f32[N, 1, 5, 256], \
%b: f32[6, 256, 100]) -> (f32[N, 8, 64, 64], f32[N, 6, 5, 100]) {
entry:
  %s = matmul %q, %k
  %t = matmul %a, %b
  ret %s, %t
}
""")
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(22)
    for n in (1, 5):
        args = [rng.standard_normal(s).astype(np.float32)
                for s in ((n, 8, 64, 32), (n, 8, 32, 64), (n, 1, 5, 256), (6, 256, 100))]
        close(lib.run("main", *args), vm.run("main", *args), 1e-4)     # sums of up to 256


def test_short_static_rows_get_short_row_vector_loops():
    """A reduction region whose innermost axis is static and shorter than SHORT_ROW (a softmax
    over 32 keys) is compiled with the JIT's short-row vector loops; a named one is not."""
    from jit.targets.aot.program import ProgramCompiler
    module = assembler.parse("""module rows
func @main(%s: f32[N, 4, 32, 32], %t: f32[N, T]) -> (f32[N, 4, 32, 32], f32[N, T]) {
entry:
  %p = softmax %s {axis = -1}
  %q = softmax %t {axis = -1}
  ret %p, %q
}
""")
    kernels = ProgramCompiler(module, "rows").compile().kernels
    assert sorted(k.variant.spec.short_rows for k in kernels) == [False, True]


def test_argmax_over_inner_axes_keeps_numpys_rules(tmp_path):
    """f32 argmax / argmin over an axis that is not the last (dlvm_aot_ops.c: whole rows of the
    other axes at a time): the first extreme wins a tie, the first NaN wins and stays."""
    module = assembler.parse("""module am
func @main(%x: f32[N, 7, 9, 11]) -> (i64[N, 9, 11], i64[N, 7, 11], i64[N, 1, 9, 11], i64[N, 7, 9]) {
entry:
  %a = argmax %x {axis = 1}
  %b = argmin %x {axis = 2}
  %c = argmax %x {axis = 1, keepdims = true}
  %d = argmax %x {axis = 3}
  ret %a, %b, %c, %d
}
""")
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(23)
    for n in (1, 4):
        x = rng.standard_normal((n, 7, 9, 11)).astype(np.float32)
        x[0, 3, 2, 4] = x[0, 5, 2, 4] = x[0, 0, 1, 1] = np.nan
        x[0, :, 5, 5] = 1.0
        x[-1, :, 6, 2] = -1.0
        for g, w in zip(lib.run("main", x), vm.run("main", x)):
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype", ["i64", "u64"])
def test_argmax_of_64_bit_integers_is_exact(tmp_path, dtype):
    """argmax / argmin of i64 and u64 (token ids: CLIP's end-of-text token is the largest id)
    compare exactly, values past 2^53 included, the first extreme winning a tie; a guard here
    sent a whole text encoder to the VM."""
    module = assembler.parse(f"""module am64
func @main(%x: {dtype}[N, 6, 5]) -> (i64[N, 5], i64[N, 6], i64[N, 1, 5]) {{
entry:
  %a = argmax %x {{axis = 1}}
  %b = argmin %x {{axis = -1}}
  %c = argmin %x {{axis = 1, keepdims = true}}
  ret %a, %b, %c
}}
""")
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(24)
    big = 2 ** 60 if dtype == "i64" else 2 ** 63
    x = rng.integers(0, 1000, (3, 6, 5)).astype({"i64": np.int64, "u64": np.uint64}[dtype])
    x[0, 2, 1], x[0, 4, 1] = big + 1, big    # equal as doubles, not as integers
    x[1, :, 3] = 7                           # a tie: the first wins
    if dtype == "i64":
        x[2, 5, 0] = -big
    for g, w in zip(lib.run("main", x), vm.run("main", x)):
        np.testing.assert_array_equal(g, w)
    assert lib.run("main", x)[0][0, 1] == 2


@pytest.mark.parametrize("dtype", ["f32", "i32", "f64"])
def test_topk_of_most_of_a_row_sorts_by_keys(tmp_path, dtype):
    """topk of most of a row or all of it (torch.sort) sorts 64-bit keys for f32 and i32
    (dlvm_aot_ops.c: keyed_topk_task, rows across the pool) and merges pairs for other dtypes;
    either way the reference's order: ties by index, NaNs last, -0 equal to +0."""
    results = f"{dtype}[N, 5, ?], i64[N, 5, ?], {dtype}[N, ?, 70], i64[N, ?, 70]"
    module = assembler.parse(f"""module tk
func @main(%x: {dtype}[N, 5, 70], %k: i64[1]) -> ({results}) {{
entry:
  %v, %i = topk %x, %k {{axis = -1, largest = true}}
  %w, %j = topk %x, %k {{axis = 1, largest = false}}
  ret %v, %i, %w, %j
}}
func @rows(%x: {dtype}[N, 5, 70], %k: i64[1]) -> ({dtype}[N, 5, ?], i64[N, 5, ?]) {{
entry:
  %v, %i = topk %x, %k {{axis = -1, largest = false}}
  ret %v, %i
}}
""")
    compile_library(module, tmp_path)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    rng = np.random.default_rng(24)
    np_type = {"f32": np.float32, "i32": np.int32, "f64": np.float64}[dtype]
    for n in (1, 3):
        x = rng.integers(-4, 4, (n, 5, 70)).astype(np_type)      # many ties
        if dtype == "i32":
            x[0, 1, :2] = [np.iinfo(np.int32).min, np.iinfo(np.int32).max]
        else:
            x[0, 1, ::7] = np.nan
            x[0, 2, 3:7] = [-0.0, 0.0, np.inf, -np.inf]
            x[-1, 4] = rng.standard_normal(70)
        calls = [("main", k) for k in (5, 3, 0)] + [("rows", k) for k in (70, 40, 18)]
        for fn, k in calls:         # all, most and none of rows of 5; all and most of 70
            got, want = lib.run(fn, x, np.array([k])), vm.run(fn, x, np.array([k]))
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)


def test_batched_products_of_constant_weights(tmp_path):
    """Products by a stack of constant matrices (a bidirectional RNN's two directions):
    [nb, ..., m, k] x [nb, 1, ..., k, n] with each matrix packed once (dlvm_aot_rt.c:
    matmul_const_batched), few rows read unpacked, several products to a thread when large;
    a batch that only broadcasts takes the general product."""
    rng = np.random.default_rng(34)
    mb = ModuleBuilder("constprod")
    cases = [("f32[2, N, 8]", (2, 8, 20)), ("f32[2, 3, N, 8]", (2, 1, 8, 24)),
             ("f32[2, N, 64]", (2, 64, 256)), ("f32[N, 5, 8]", (3, 8, 4))]
    for i, (xt, ws) in enumerate(cases):
        w = (rng.standard_normal(ws) * 0.3).astype(np.float32)
        out = xt.replace(str(ws[-2]) + "]", str(ws[-1]) + "]")
        if i == 3:          # a batch of 1 broadcasts against the weights' 3
            out = "f32[3, 5, 4]"
        f = mb.function(f"f{i}", [("x", xt)], [out])
        bias = mb.constant(f"b{i}", rng.standard_normal(ws[-1]).astype(np.float32))
        f.ret(f.relu(f.add(f.matmul(f.arg("x"), mb.constant(f"w{i}", w)), bias)))
    module = mb.finish()
    compile_library(module, tmp_path)
    source = (tmp_path / "src" / "constprod.c").read_text()
    assert source.count("dlvm_rt_matmul_const") >= len(cases)
    lib, vm = aot.load(tmp_path), dlvmrt.VM(module, jit="off")
    for i, (xt, _) in enumerate(cases):
        dims = [int(d) if d.strip() != "N" else None for d in xt[4:-1].split(",")]
        for n in (1, 3) if i == 3 else (1, 3, 16, 32):
            x = rng.standard_normal([n if d is None else d for d in dims]).astype(np.float32)
            close(lib.run(f"f{i}", x), vm.run(f"f{i}", x), 1e-5)


UNROLLED = """module unrolled
func @main(%x: f32[N, 8], %y: f32[N, 8], %z: f32[N, 8]) -> f32[?, 8] {
entry:
  %a = mul %x, %y
  %a = tanh %a
  %b = concat %a, %y {axis = 0}
  %c = concat %z, %a {axis = 0}
  %d = mul %b, %c
  %d = tanh %d
  %e = concat %d, %b {axis = 0}
  %f = concat %c, %d {axis = 0}
  %g = mul %e, %f
  %g = tanh %g
  ret %g
}
"""


def test_regions_alike_but_for_their_registers_share_one_kernel(tmp_path):
    # an exporter's unrolled loop: every step's region is one kernel over other registers.
    # The library compiles it once and its steps call it (SRU's 32 steps made 255 kernels, a
    # 5 s first call with --jit always); each region keeps its own table (its trap's place)
    from jit.targets.aot.program import ProgramCompiler
    module = assembler.parse(UNROLLED)
    program = ProgramCompiler(module, "un").compile()
    own = [k for k in program.kernels if k.llvm_ir]
    # three regions with their variants (the concats' unknown size: 1 or more): the third's
    # are the second's, the second's first is the first's
    third = [k for k in program.kernels if "instructions 8-9" in k.where]
    assert third and not any(k.llvm_ir for k in third), [(k.cname, k.function) for k in third]
    assert len(own) < len(program.kernels) - len(third)
    assert {k.function for k in program.kernels} == {k.function for k in own}
    assert len({k.where for k in program.kernels}) == 3       # each region's own trap place
    compile_library(module, tmp_path)
    rng = np.random.default_rng(5)
    args = [rng.standard_normal((3, 8)).astype(np.float32) for _ in range(3)]
    close(aot.load(tmp_path).run("main", *args), dlvmrt.VM(module, jit="off").run("main", *args))
    # the JIT too: the alike regions' variants are one compiled code (one cache key)
    vm = dlvmrt.VM(module, jit="always")
    close(vm.run("main", *args), dlvmrt.VM(module, jit="off").run("main", *args))
    keys = [c.key for *_, r in vm.runners for c in r.variants.values()]
    assert len(keys) == 3 and len(set(keys)) == 1, keys        # [N, 8], [2N, 8], [4N, 8]
