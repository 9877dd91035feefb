"""Compile latency per region at O3, and a warm disk cache that compiles nothing.

    .venv/bin/python bench/compile_latency.py

Compiles a set of distinct regions (elementwise chains of growing length and several dtypes,
broadcasting, reductions, softmax, layer_norm, matmul epilogues) into a fresh cache directory,
reports the median and max milliseconds per region (kernel IR -> LLVM IR -> O3 -> object ->
loaded), then runs a second process on the same cache and counts how many regions it compiled.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from isa.builder import ModuleBuilder  # noqa: E402
from isa.module import ConstRef  # noqa: E402
from isa.verify import verify_module  # noqa: E402
from jit import Jit, form_regions  # noqa: E402


def programs():
    """(module, example arguments) of distinct regions."""
    out = []
    for dtype, np_dt in (("f32", np.float32), ("f64", np.float64)):
        for length in (2, 4, 8, 16):
            mb = ModuleBuilder(f"chain{length}")
            f = mb.function("main", [("x", f"{dtype}[N, 64]"), ("b", f"{dtype}[64]")], [f"{dtype}[N, 64]"])
            h, b = f.args()
            for i in range(length):
                h = [f.add(h, b), f.tanh(h), f.mul(h, 1.5), f.exp(f.neg(h))][i % 4]
            f.ret(h)
            out.append((mb.finish(), [np.ones((8, 64), np_dt), np.ones(64, np_dt)]))
        for op in ("softmax", "layer_norm"):
            mb = ModuleBuilder(op)
            f = mb.function("main", [("x", f"{dtype}[N, 64]")], [f"{dtype}[N, 64]"])
            f.ret(getattr(f, op)(f.arg("x")))
            out.append((mb.finish(), [np.ones((8, 64), np_dt)]))
        mb = ModuleBuilder("epilogue")
        w = mb.constant("w", np.ones((64, 32), np_dt))
        bias = mb.constant("bias", np.ones(32, np_dt))
        f = mb.function("main", [("x", f"{dtype}[N, 64]")], [f"{dtype}[N, 32]"])
        f.ret(f.gelu(f.add(f.matmul(f.arg("x"), w), bias)))
        out.append((mb.finish(), [np.ones((8, 64), np_dt)]))
    mb = ModuleBuilder("ints")
    f = mb.function("main", [("x", "i32[N]"), ("y", "i32[N]")], ["i32[N]"])
    x, y = f.args()
    f.ret(f.xor(f.mul(f.add(x, y), 3), y))
    out.append((mb.finish(), [np.ones(8, np.int32), np.ones(8, np.int32)]))
    return out


def compile_all(cache_dir: str) -> list[dict]:
    jit = Jit(cache_dir=cache_dir, threads=1, opt_level=3)
    results = []
    for m, args in programs():
        (region,) = form_regions(m, "main", verify_module(m)["main"])
        run = jit.runner(m, region)
        params = dict(zip((p.name for p in m.functions["main"].params), args))
        values = [m.constants[o.name].value if isinstance(o, ConstRef) else params[o.name]
                  for o in region.inputs]
        assert run(values) is not None, run.describe()
        v = run.describe()["variants"][0]
        results.append({"name": m.name, "ms": v["compile_ms"], "source": v["source"]})
    return results


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(compile_all(sys.argv[2])))
        return
    with tempfile.TemporaryDirectory() as cache:
        first = compile_all(cache)
        cold = [r["ms"] for r in first if r["source"] == "compiled"]
        res = subprocess.run([sys.executable, __file__, "--child", cache], capture_output=True, text=True,
                             check=True)
        second = json.loads(res.stdout.strip().splitlines()[-1])
    warm = [r["ms"] for r in second]
    compiled_again = sum(1 for r in second if r["source"] == "compiled")
    print("### Compile latency per region (O3, host CPU)\n")
    print(f"regions: {len(first)} ({len(cold)} compiled cold, the others shared a kernel already compiled)")
    print(f"cold: median {statistics.median(cold):.1f} ms, max {max(cold):.1f} ms "
          f"(first includes LLVM initialization: {cold[0]:.1f} ms)")
    print(f"warm disk cache, second process: compiled {compiled_again} of {len(second)}; "
          f"load median {statistics.median(warm):.2f} ms")


if __name__ == "__main__":
    main()
