"""Interpreter dispatch overhead: a chain of 100 tiny adds through dlvm against 100 plain NumPy
calls, in one process. Reports the cost per instruction and the ratio (target: <= 3x NumPy).

    python bench/dispatch.py [--n 100] [--size 4] [--repeat 2000]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import dlvmrt
from isa.builder import ModuleBuilder


def chain_module(n: int, size: int):
    mb = ModuleBuilder("chain")
    f = mb.function("main", [("x", f"f32[{size}]"), ("y", f"f32[{size}]")], [f"f32[{size}]"])
    x, y = f.args()
    acc = x
    for _ in range(n):
        acc = f.add(acc, y, into="acc")
    f.ret(acc)
    return mb.finish()


def numpy_chain(x, y, n):
    acc = x
    for _ in range(n):
        acc = np.add(acc, y)
    return acc


def best_of(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - t) / repeat)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--size", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=2000)
    a = ap.parse_args()
    x = np.ones(a.size, np.float32)
    y = np.full(a.size, 0.5, np.float32)
    vm = dlvmrt.VM(chain_module(a.n, a.size), jit="off")
    (out,) = vm.run("main", x, y)
    assert np.array_equal(out, numpy_chain(x, y, a.n))
    t_np = best_of(lambda: numpy_chain(x, y, a.n), a.repeat) / a.n
    t_vm = best_of(lambda: vm.run("main", x, y), a.repeat) / a.n
    print(f"{'':<26}{'ns/instruction':>16}{'ratio':>8}")
    print(f"{'numpy (100 np.add calls)':<26}{t_np * 1e9:>16.0f}{1.0:>8.2f}")
    print(f"{'dlvm interpreter':<26}{t_vm * 1e9:>16.0f}{t_vm / t_np:>8.2f}")


if __name__ == "__main__":
    main()
