"""Ahead-of-time libraries (`dlvm aot`) against the JIT and onnxruntime.

    .venv/bin/python bench/aot.py [--threads 2] [--rounds 5] [--resnet]

MLP 784-512-512-10 (f32, random weights, as bench/mlp.py) at batch 1 and 256:
- "AOT from C": a C program linked against the library times its entry function in a loop
  (median of batches of calls, measured in the C program with clock_gettime); it runs as a
  subprocess, one round at a time, alternating with the Python-side rounds below, so that a
  busy spell of this shared machine slows every competitor alike;
- "AOT via ctypes" (dlvmrt.aot.load), "dlvm JIT" (a VM with jit="always") and onnxruntime
  (intra-op threads as --threads, not spinning), timed in turn (bench/_timing.py).
--resnet also compiles ResNet-18 (torch.nn, random weights, exported to ONNX and imported) and
reports the library's size and the build time, split into its steps.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench._timing import fmt_time, interleaved_medians, table, temp_dir  # noqa: E402
from bench.mlp import dlvm_module, ort_session, weights  # noqa: E402

C_TIMER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "mlp.h"
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
int main(int argc, char **argv) {
    int batch = atoi(argv[1]), threads = atoi(argv[2]);
    double budget = atof(argv[3]);
    mlp_set_threads(threads);
    float *x = malloc(sizeof(float) * batch * 784);
    for (int i = 0; i < batch * 784; i++) x[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    dlvm_tensor in = {x, {batch, 784}, 2, DLVM_F32}, out;
    dlvm_status st;
    for (int i = 0; i < 20; i++) {
        if (mlp_main(&in, &out, &st)) { printf("error %s\n", st.message); return 1; }
        mlp_free(out.data);
    }
    double t0 = now(); mlp_main(&in, &out, &st); mlp_free(out.data);
    double one = now() - t0;
    int per = one > 0 ? (int)(0.005 / one) + 1 : 1000;
    double samples[100000]; int n = 0;
    double end = now() + budget;
    while ((now() < end || n < 5) && n < 100000) {
        t0 = now();
        for (int i = 0; i < per; i++) { mlp_main(&in, &out, &st); mlp_free(out.data); }
        samples[n++] = (now() - t0) / per;
    }
    qsort(samples, n, sizeof(double), cmp);
    printf("%.9f\n", samples[n / 2]);
    return 0;
}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--budget", type=float, default=0.3)
    ap.add_argument("--resnet", action="store_true")
    a = ap.parse_args()
    import dlvmrt
    from dlvmrt import aot
    from jit.targets.aot import compile_library, find_cc
    cc = find_cc()
    rng = np.random.default_rng(0)
    ws, bs = weights(rng)
    module = dlvm_module(ws, bs)
    tmp = Path(temp_dir("dlvm-aot-bench-"))
    built = compile_library(module, tmp / "mlp")
    lib = aot.load(tmp / "mlp")
    lib.set_threads(a.threads)
    timer = tmp / "timer"
    (tmp / "timer.c").write_text(C_TIMER)
    subprocess.run([cc, "-O2", str(tmp / "timer.c"), f"-I{tmp / 'mlp'}", str(tmp / "mlp" / "libmlp.a"),
                    "-lm", "-lpthread", "-o", str(timer)], check=True)
    # the JIT alone: without the native tier, which would run this same library
    vm = dlvmrt.VM(module, jit="always", jit_options={"threads": a.threads}, native="off")
    sess = ort_session(ws, bs, a.threads)
    rows = []
    for batch in (1, 256):
        x = rng.standard_normal((batch, 784)).astype(np.float32)
        want = vm.run("main", x)[0]
        assert np.allclose(lib.run("main", x)[0], want, rtol=1e-4, atol=1e-4)
        fns = {"AOT via ctypes": lambda x=x: lib.run("main", x),
               "dlvm JIT": lambda x=x: vm.run("main", x)}
        if sess is not None:
            fns["onnxruntime"] = lambda x=x: sess.run(None, {"x": x})
        c_times: list[float] = []
        per: dict[str, list[float]] = {k: [] for k in fns}
        for _ in range(a.rounds):
            out = subprocess.run([str(timer), str(batch), str(a.threads), str(a.budget)],
                                 capture_output=True, text=True, check=True).stdout
            c_times.append(float(out))
            for k, v in interleaved_medians(fns, a.budget / len(fns)).items():
                per[k].append(v)
        times = {"AOT from C": statistics.median(c_times)}
        times.update({k: statistics.median(v) for k, v in per.items()})
        ref = times.get("onnxruntime")
        for k, s in times.items():
            rows.append([str(batch), k, fmt_time(s), f"{s / times['dlvm JIT']:.2f}x",
                         f"{s / ref:.2f}x" if ref else "-"])
    print(table(f"MLP 784-512-512-10 f32, {a.threads} threads, medians of {a.rounds} rounds",
                ["batch", "implementation", "median", "vs JIT", "vs onnxruntime"], rows))
    print(f"MLP library: {built.shared.stat().st_size / 1e6:.2f} MB, built in {built.seconds:.1f} s")
    if a.resnet:
        import onnx_nets as nets
        import torch

        from frontends.onnx import import_onnx
        torch.manual_seed(0)
        m = import_onnx(nets.export(nets.resnet18(), (torch.randn(1, 3, 224, 224),), ["x"]))
        t0 = time.perf_counter()
        r = compile_library(m, tmp / "resnet18")
        total = time.perf_counter() - t0
        steps = ", ".join(f"{k} {v:.2f} s" for k, v in r.steps.items())
        print(f"ResNet-18 library: {r.shared.stat().st_size / 1e6:.1f} MB (.so), "
              f"{r.static.stat().st_size / 1e6:.1f} MB (.a), {r.kernels} kernels, built in "
              f"{total:.1f} s ({steps})")


if __name__ == "__main__":
    main()
