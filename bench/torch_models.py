"""dlvm against torch eager and torch.compile (inductor) on torch.nn models, in one process.

For each model (the architectures of tests/torch_models.py) and batch 1 and 32: latency of
torch eager, torch.compile with inductor, torch.compile with the dlvm backend, and dlvm's
torch.export import run by a VM with the tiered JIT (timed interleaved, medians; ratios are
against inductor), and the compile time of each (the first call, cold caches: inductor's own
cache is pointed at a fresh folder).

    python bench/torch_models.py [--models resnet18,gpt2] [--batches 1,32] [--budget 0.5]
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from _timing import fmt_time, interleaved_medians, table, temp_dir  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet18,mobilenet_v3_small,squeezenet,vit,gpt2,bert")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--budget", type=float, default=0.5)
    args = ap.parse_args()
    for var, prefix in (("TORCHINDUCTOR_CACHE_DIR", "inductor-"), ("DLVM_CACHE_DIR", "dlvm-")):
        if var not in os.environ:
            os.environ[var] = temp_dir(prefix)
    import torch
    from torch_models import MODELS

    import dlvmrt
    from frontends.torch import import_torch
    from frontends.torch.backend import dlvm_backend

    torch.set_grad_enabled(False)
    rows, ratios = [], {"eager": [], "dlvm-compile": [], "dlvm-export": []}
    compile_ratio = []
    for name in args.models.split(","):
        torch.manual_seed(0)
        make, inp = MODELS[name]
        m = make().eval()
        for b in [int(x) for x in args.batches.split(",")]:
            x = inp(b)
            torch._dynamo.reset()
            t0 = time.perf_counter()
            ind = torch.compile(m, backend="inductor")
            ind(x)
            t_ind = time.perf_counter() - t0
            torch._dynamo.reset()
            t0 = time.perf_counter()
            dc = torch.compile(m, backend=dlvm_backend)
            dc(x)
            t_dc = time.perf_counter() - t0
            t0 = time.perf_counter()
            vm = dlvmrt.VM(import_torch(m, (x,)), jit="auto")
            xn = x.numpy()
            vm.run("main", xn)
            t_ex = time.perf_counter() - t0
            # steady state: the background compiles of both dlvm paths (their first calls,
            # interpreted while those run, are the compile columns) done before timing
            from frontends.torch import backend
            for _ in range(4):
                dc(x)
                vm.run("main", xn)
                for r in [*backend.RUNNERS, None]:
                    (vm if r is None else getattr(r, "runner", r).vm).wait_compiled()
            for _ in range(8):
                dc(x)
                vm.run("main", xn)
            med = interleaved_medians({
                "eager": lambda m=m, x=x: m(x), "inductor": lambda f=ind, x=x: f(x),
                "dlvm-compile": lambda f=dc, x=x: f(x),
                "dlvm-export": lambda vm=vm, xn=xn: vm.run("main", xn)},
                budget_s=args.budget)
            for k in ratios:
                ratios[k].append(med[k] / med["inductor"])
            compile_ratio.append(t_dc / t_ind)
            rows.append([name, str(b), fmt_time(med["eager"]), fmt_time(med["inductor"]),
                         fmt_time(med["dlvm-compile"]), fmt_time(med["dlvm-export"]),
                         f"{med['dlvm-compile'] / med['inductor']:.2f}x",
                         f"{t_ind:.1f}s", f"{t_dc:.1f}s", f"{t_ex:.1f}s"])
    print(table(f"torch models, {torch.get_num_threads()} threads (latency; ratio = dlvm "
                f"backend / inductor, lower is better)",
                ["model", "batch", "eager", "inductor", "dlvm compile", "dlvm export", "ratio",
                 "compile inductor", "compile dlvm", "import+first run"], rows))

    def geo(v):
        return math.exp(sum(math.log(r) for r in v) / len(v))
    print(f"geometric mean latency / inductor: eager {geo(ratios['eager']):.2f}x, dlvm backend "
          f"{geo(ratios['dlvm-compile']):.2f}x, dlvm export {geo(ratios['dlvm-export']):.2f}x; "
          f"compile time dlvm / inductor {geo(compile_ratio):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
