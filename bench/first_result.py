"""Time to the first result, and to the first ten, with the default tiered JIT against the
interpreter (issue 12 item 4: no call waits for LLVM).

    .venv/bin/python bench/first_result.py                  # small CNN, encoder layer, ResNet-18/32
    .venv/bin/python bench/first_result.py --repeat 5 --calls 20

Each measurement is a fresh process with a fresh (cold) code cache, as a new user's first run:
it imports the ONNX model, makes a VM and times `vm.run` from the VM's creation to the first
result and to the `--calls`-th. Modes, in turn for every repetition (a busy spell of the shared
machine then slows all alike): the interpreter (jit=off), the default (auto: tier-up with
kernels compiled on the background thread), auto compiling on the calling thread
(background=False, the old behaviour) and always (compile before the first run). Reports the
medians and each one's ratio to the interpreter's. Target: default's first result <= 1.25x.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

MODES = {"off": dict(jit="off"), "default": {}, "auto-sync": dict(jit="auto", background=False),
         "always": dict(jit="always")}

CHILD = r"""
import json, sys, time
sys.path.insert(0, {root!r})
import numpy as np
import dlvmrt
from frontends.onnx import import_onnx
module = import_onnx(open({model!r}, "rb").read())
feeds = dict(np.load({feeds!r}))
t0 = time.perf_counter()
vm = dlvmrt.VM(module, **{kwargs!r})
times = []
for _ in range({calls}):
    vm.run("main", **feeds)
    times.append(time.perf_counter() - t0)
print(json.dumps(times))
"""


def models(args) -> list[tuple[str, bytes, dict[str, np.ndarray]]]:
    import onnx_nets as nets
    import torch
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    out = []
    for batch in (1, 8):
        x = rng.standard_normal((batch, 3, 32, 32)).astype(np.float32)
        out.append((f"small cnn, batch {batch}", nets.export(nets.small_cnn(), (torch.from_numpy(x),),
                                                               ["x"]), {"x": x}))
    x = rng.standard_normal((2, 16, 32)).astype(np.float32)
    out.append(("encoder layer 2x16x32", nets.export(nets.encoder_layer(), (torch.from_numpy(x),),
                                                     ["x"]), {"x": x}))
    x = rng.standard_normal((1, 3, args.image, args.image)).astype(np.float32)
    out.append((f"resnet-18/32 1x3x{args.image}x{args.image}",
                nets.export(nets.resnet18(width=32, classes=100), (torch.from_numpy(x),), ["x"]),
                {"x": x}))
    return out


def one_run(tmp: str, model: str, feeds: str, kwargs: dict, calls: int) -> list[float]:
    env = dict(os.environ, PYTHONPATH=ROOT, DLVM_CACHE_DIR=tempfile.mkdtemp(dir=tmp))
    env.pop("DLVM_JIT", None)
    code = CHILD.format(root=ROOT, model=model, feeds=feeds, kwargs=kwargs, calls=calls)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="time to the first result: tiered JIT vs interpreter")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--image", type=int, default=64, help="ResNet-18's input size")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    os.environ["DLVM_THREADS"] = str(args.threads)
    warnings.simplefilter("ignore")
    print(f"fresh process and cold code cache per run, median of {args.repeat}, modes in turn; "
          f"ms from VM() to the 1st and the {args.calls}th result (ratio to jit=off)")
    print(f"{'model':30s} " + " ".join(f"{m + ' 1st':>18s} {m + ' last':>18s}" for m in MODES))
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, feeds in models(args):
            mpath, fpath = os.path.join(tmp, "m.onnx"), os.path.join(tmp, "f.npz")
            with open(mpath, "wb") as f:
                f.write(model)
            np.savez(fpath, **feeds)
            runs: dict[str, list[list[float]]] = {m: [] for m in MODES}
            for _ in range(args.repeat):
                for mode, kwargs in MODES.items():
                    runs[mode].append(one_run(tmp, mpath, fpath, kwargs, args.calls))
            first = {m: statistics.median(r[0] for r in rs) * 1e3 for m, rs in runs.items()}
            last = {m: statistics.median(r[-1] for r in rs) * 1e3 for m, rs in runs.items()}
            cells = []
            for m in MODES:
                cells.append(f"{first[m]:9.1f} ({first[m] / first['off']:4.2f}x)")
                cells.append(f"{last[m]:9.1f} ({last[m] / last['off']:4.2f}x)")
            print(f"{name:30s} " + " ".join(f"{c:>18s}" for c in cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
