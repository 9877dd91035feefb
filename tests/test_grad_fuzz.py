"""`grad` on random programs (the JIT fuzzer's generator: elementwise chains with broadcasting,
reductions, softmax, layer_norm, matmul, movement ops, branches and loops) against central
differences in f64.

Each program's float inputs are nudged off the generator's grid of exact values (which sits on
the kinks of relu, floor, max, ...), and an element is compared only where the function is
smooth there: where difference quotients at two step sizes agree (a kink or a jump between
x - h and x + h makes them disagree; a gradient is a convention there, not a limit).
"""
from __future__ import annotations

import numpy as np
import pytest
from fuzzgen.generate import generate

import assembler
from dlvmrt.vm import VM
from isa.autodiff import GradError, grad
from isa.errors import DlvmError
from isa.ops.shapes import is_float


def as_loss(text: str):
    """The program plus @loss(params) = sum(main's first result * fixed weights), when main's
    first result is float; else None."""
    m = assembler.assemble(text)
    f = m.functions["main"]
    first = f.results[0]
    if not is_float(first.dtype) or first.dtype.text != "f64":
        return None
    params = ", ".join(f"%{p.name}: {p.type}" for p in f.params)
    args = ", ".join(f"%{p.name}" for p in f.params)
    outs = ", ".join(f"%r{i}" for i in range(len(f.results)))
    src = text + (f"\nfunc @loss({params}) -> f64[] {{\n  {outs} = call @main({args})\n"
                  f"  %w = sin %r0\n  %p = mul %r0, %w\n  %s = reduce_sum %p\n  ret %s\n}}\n")
    return assembler.assemble(src)


def finite_throughout(m, args) -> bool:
    """Whether every float value @main computes is finite (stepping it in the debugger). Where
    one is not, the chain rule meets 0 * inf and gives NaN, as PyTorch's autograd does, while a
    difference quotient may see a flat function: no reference to compare with."""
    from dlvmrt.debugger import Debugger
    dbg = Debugger(VM(m, jit="off"))
    dbg.start("main", [a.copy() for a in args])
    for _ in range(10_000):
        if not dbg.running:
            return True
        for frame in range(len(dbg.frames)):
            for v in dbg.registers(frame).values():
                a = np.asarray(v)
                if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
                    return False
        dbg.step()
    return True


def smooth_gradient(vm: VM, args: list, k: int, h: float = 1e-6):
    """Central differences of @loss in argument k, and where they are trustworthy."""
    x = args[k]
    est = {step: np.zeros(x.shape) for step in (h, 10 * h)}
    for step, out in est.items():
        for i in np.ndindex(x.shape):
            a = [v.copy() for v in args]
            a[k][i] += step
            up = float(vm.run("loss", *a)[0])
            a[k][i] -= 2 * step
            down = float(vm.run("loss", *a)[0])
            out[i] = (up - down) / (2 * step)
    fine, coarse = est[h], est[10 * h]
    ok = np.isfinite(fine) & (np.abs(fine - coarse) <= 1e-4 * (1 + np.abs(fine)))
    return fine, ok


SEEDS = list(range(300))


@pytest.mark.parametrize("seed", SEEDS)
def test_random_program_gradients(seed):
    case = generate(seed)
    # in f64, so that differences can be tight (the generator writes f32 or f64 programs)
    case.text = case.text.replace("f32", "f64")
    case.args = [a.astype(np.float64) if a.dtype == np.float32 else a for a in case.args]
    m = as_loss(case.text)
    if m is None:
        pytest.skip("the program's first result is not f64")
    rng = np.random.default_rng(seed)
    args = [np.array(a) for a in case.args]
    floats = [i for i, a in enumerate(args) if a.dtype == np.float64]
    if not floats or sum(args[i].size for i in floats) > 400:
        pytest.skip("no small f64 input")
    for i in floats:       # off the generator's grid of exact values (the kinks)
        args[i] = np.asarray(args[i] + rng.uniform(-0.1, 0.1, args[i].shape))
    vm = VM(m, jit="off")
    try:
        vm.run("loss", *args)
    except DlvmError:
        pytest.skip("the program traps on these inputs")
    if not finite_throughout(m, args):
        pytest.skip("a value is not finite: the chain rule's 0 * inf is NaN (as in PyTorch)")
    names = [m.functions["loss"].params[i].name for i in floats]
    try:
        gm = grad(m, "loss", names)
    except GradError as e:
        assert "not differentiable" in str(e), str(e)
        pytest.skip(str(e))
    got = VM(gm, jit="off").run("loss_grad", *args)[1:]
    # the adjoint tiers up like any program: compiled, it gives the interpreter's results
    compiled = VM(gm, jit="always").run("loss_grad", *args)[1:]
    for c, g in zip(compiled, got):
        np.testing.assert_allclose(c, g, rtol=1e-6, atol=1e-9, err_msg=f"seed {seed}: JIT")
    for k, g in zip(floats, got):
        want, ok = smooth_gradient(vm, args, k)
        assert g.shape == want.shape
        np.testing.assert_allclose(g[ok], want[ok], rtol=1e-4, atol=1e-6,
                                   err_msg=f"seed {seed}, argument {k}\n{case.text}")
