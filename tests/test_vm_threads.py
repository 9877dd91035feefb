"""One VM called from many threads at once gives the interpreter's results (issue: a web server's
request threads sharing a model). Every JIT mode, the shared examples and a convolutional net,
and two VMs sharing the process's compiled kernels."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from shared_paths import example_programs

import assembler
import dlvmrt
from isa.builder import ModuleBuilder

THREADS = 4
CALLS = 12


def convnet():
    rng = np.random.default_rng(3)
    mb = ModuleBuilder("cnn")
    f = mb.function("main", [("x", "f32[N, 3, 16, 16]")], ["f32[N, 10]"])
    k = mb.constant("k", (rng.standard_normal((16, 3, 3, 3)) * 0.3).astype(np.float32))
    b = mb.constant("b", rng.standard_normal(16).astype(np.float32))
    w = mb.constant("w", (rng.standard_normal((16 * 8 * 8, 10)) * 0.05).astype(np.float32))
    h = f.relu(f.conv2d(f.arg("x"), k, b, pads=[1, 1, 1, 1]))
    h = f.maxpool2d(h, kernel=[2, 2], strides=[2, 2])
    h = f.reshape(h, shape=[-1, 16 * 8 * 8])
    f.ret(f.softmax(f.matmul(h, w)))
    return mb.finish()


def cases():
    out = []
    for p in example_programs():
        with np.load(p.with_suffix(".inputs.npz")) as z:
            out.append((p.stem, assembler.assemble_file(p), [{k: z[k] for k in z.files}]))
    rng = np.random.default_rng(0)
    out.append(("convnet", convnet(),
                [{"x": rng.standard_normal((n, 3, 16, 16)).astype(np.float32)} for n in (1, 8, 3)]))
    return out


def hammer(vm, inputs, want, threads=THREADS, calls=CALLS):
    """Run `vm` from `threads` threads, each cycling through the inputs; the mismatches."""
    problems: list[str] = []

    def work(t: int) -> None:
        for i in range(calls):
            j = (t + i) % len(inputs)
            try:
                got = vm.run("main", **inputs[j])
            except Exception as e:  # noqa: BLE001 - every failure is a finding
                problems.append(f"thread {t} call {i}: {type(e).__name__}: {e}")
                continue
            for g, w in zip(got, want[j]):
                if g.shape != w.shape or not np.allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True):
                    problems.append(f"thread {t} call {i}: wrong result")

    ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return problems


@pytest.mark.parametrize("mode", ["off", "auto", "always"])
@pytest.mark.parametrize("name,module,inputs", cases(), ids=[c[0] for c in cases()])
def test_one_vm_many_threads(name, module, inputs, mode):
    ref = dlvmrt.VM(module, jit="off")
    want = [ref.run("main", **x) for x in inputs]
    vm = dlvmrt.VM(module, jit=mode)
    assert hammer(vm, inputs, want) == []


def test_two_vms_share_compiled_kernels():
    module = convnet()
    rng = np.random.default_rng(1)
    inputs = [{"x": rng.standard_normal((n, 3, 16, 16)).astype(np.float32)} for n in (2, 5)]
    want = [dlvmrt.VM(module, jit="off").run("main", **x) for x in inputs]
    vms = [dlvmrt.VM(module, jit="always") for _ in range(2)]
    problems: list[str] = []
    ts = [threading.Thread(target=lambda v=v: problems.extend(hammer(v, inputs, want, 2)))
          for v in vms]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert problems == []


def test_budget_and_depth_are_per_thread():
    """A thread's long loop does not spend another's step budget."""
    loop = assembler.parse("""module spin
func @main(%n: i64[]) -> i64[] {
entry:
  %i = const 0 : i64[]
  jmp head
head:
  %c = lt %i, %n
  br %c, body, done
body:
  %i = add %i, 1
  jmp head
done:
  ret %i
}
""")
    vm = dlvmrt.VM(loop, jit="off", max_steps=2500)
    results: list = []

    def work():
        for _ in range(5):
            results.append(int(vm.run("main", np.int64(1000))[0]))

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert results == [1000] * 20
