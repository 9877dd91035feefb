"""Finite-difference checking of `grad` (shared by the gradient tests).

`check(module, func, wrt, inputs)` differentiates `func`'s first result with `isa.autodiff.grad`,
runs the adjoint in the interpreter, and compares each gradient with central differences of the
original function (in float64, so the tolerance can be tight; specs/tolerances.md).
"""
from __future__ import annotations

import numpy as np

from dlvmrt.vm import VM
from isa.autodiff import grad
from isa.module import Module

RTOL, ATOL, EPS = 1e-5, 1e-7, 1e-6


def numeric_gradient(vm: VM, func: str, inputs: dict[str, np.ndarray], name: str,
                     eps: float = EPS) -> np.ndarray:
    x = inputs[name]
    out = np.zeros(x.shape, dtype=np.float64)
    for i in np.ndindex(x.shape):
        args = {k: np.array(v) for k, v in inputs.items()}
        args[name][i] += eps
        up = float(np.sum(vm.run(func, *args.values())[0]))
        args[name][i] -= 2 * eps
        down = float(np.sum(vm.run(func, *args.values())[0]))
        out[i] = (up - down) / (2 * eps)
    return out


def check(module: Module, inputs: dict[str, np.ndarray], wrt: list[str] | None = None,
          func: str = "main", jit: str = "off", rtol: float = RTOL, atol: float = ATOL,
          eps: float = EPS) -> list[np.ndarray]:
    names = wrt if wrt is not None else list(inputs)
    gm = grad(module, func, names)
    vm = VM(gm, jit=jit)
    got = vm.run(f"{func}_grad", *inputs.values())
    n_res = len(module.functions[func].results)
    base = VM(module, jit="off")
    want_results = base.run(func, *inputs.values())
    for w, g in zip(want_results, got[:n_res]):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=0)
    grads = list(got[n_res:])
    for name, g in zip(names, grads):
        want = numeric_gradient(base, func, inputs, name, eps)
        assert g.shape == want.shape, f"gradient of {name}: shape {g.shape}, want {want.shape}"
        np.testing.assert_allclose(g, want, rtol=rtol, atol=atol,
                                   err_msg=f"gradient with respect to {name}")
    return grads
