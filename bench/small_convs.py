"""Small convolutions (the layers of CNNs nobody tuned for): the JIT's conv kernel against the
op's definition, and a conv-BN-relu-maxpool CNN against onnxruntime.

    .venv/bin/python bench/small_convs.py [--budget 0.5] [--batches 1,8] [--threads 1]

The first table times `jit.targets.cpu.conv.ConvPlan.run` (a reused padded buffer, the GEMM kernel packing
from it) and the conv2d definition (`isa.ops`: np.pad, a fresh patch matrix, one matmul) on the
same arrays, timed in turn (bench/_timing.py); `supported` says which one a compiled region
runs. The second runs `bench/onnx_nets.small_cnn` exported to ONNX, imported, with
`jit="always"`, against onnxruntime on the same thread count.
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from _timing import fmt_time, interleaved_medians, optional, ort_options, table  # noqa: E402

# (batch, input C, H, output O, kernel, stride, pad)
SHAPES = [
    (1, 3, 32, 8, 3, 1, 1),
    (1, 8, 16, 16, 3, 2, 1),
    (1, 1, 8, 1, 3, 1, 1),
    (1, 3, 8, 2, 3, 1, 1),
    (1, 64, 4, 4, 3, 1, 1),
    (1, 16, 8, 32, 3, 1, 1),
    (1, 4, 4, 4, 1, 1, 0),
    (8, 3, 32, 8, 3, 1, 1),
]


def _time_pair(kernel, definition, budget: float) -> dict[str, float]:
    """Both timed in turn, before the loop moves on (the lambdas read this iteration's arrays)."""
    return interleaved_medians({"kernel": kernel, "definition": definition}, budget)


def conv_rows(budget: float, threads: int) -> list[list[str]]:
    from isa.ops import OPS
    from jit.targets.cpu.conv import ConvPlan, supported
    from jit.targets.cpu.gemm import gemm
    ref = OPS["conv2d"].reference
    g = gemm(None)
    rng = np.random.default_rng(0)
    rows = []
    for n, c, h, o, k, s, p in SHAPES:
        x = rng.standard_normal((n, c, h, h)).astype(np.float32)
        w = rng.standard_normal((o, c, k, k)).astype(np.float32)
        attrs = {"strides": [s, s], "pads": [p] * 4, "dilations": [1, 1], "groups": 1}
        plan = ConvPlan(x.shape, w.shape, attrs)
        out = np.empty((n, o, plan.ho, plan.wo), np.float32)
        wm = plan.weights(w)[1]
        np.testing.assert_allclose(plan.run(x, w, None, out, g, threads, wm), ref(attrs, x, w),
                                   rtol=1e-4, atol=1e-4)
        t = _time_pair(lambda: plan.run(x, w, None, out, g, threads, wm),  # noqa: B023
                       lambda: ref(attrs, x, w), budget)                      # noqa: B023
        macs = n * o * plan.ho * plan.wo * c * k * k
        rows.append([f"{n}x{c}x{h}x{h} -> {o} {k}x{k}/{s}", str(macs), fmt_time(t["kernel"]),
                     fmt_time(t["definition"]), f"{t['definition'] / t['kernel']:.2f}x",
                     "kernel" if supported(x, w, attrs) else "definition"])
    return rows


def cnn_rows(budget: float, threads: int, batches: list[int]) -> list[list[str]]:
    torch, ort = optional("torch"), optional("onnxruntime")
    if torch is None or ort is None:
        return []
    import onnx_nets

    import dlvmrt
    from frontends.onnx import import_onnx
    torch.manual_seed(0)
    net = onnx_nets.small_cnn().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = onnx_nets.export(net, (torch.randn(1, 3, 32, 32),), ["x"], {"x": {0: "n"}})
    session = ort.InferenceSession(model, ort_options(ort, threads))
    module = import_onnx(model, name="small_cnn")
    vm = dlvmrt.VM(module, jit="always", jit_options={"threads": threads})
    rows = []
    for b in batches:
        x = np.random.default_rng(b).standard_normal((b, 3, 32, 32)).astype(np.float32)
        err = np.abs(vm.run("main", x)[0] - session.run(None, {"x": x})[0]).max()
        t = interleaved_medians({"dlvm": lambda: vm.run("main", x),                # noqa: B023
                                 "ort": lambda: session.run(None, {"x": x})}, budget)  # noqa: B023
        rows.append([str(b), fmt_time(t["dlvm"]), fmt_time(t["ort"]),
                     f"{t['dlvm'] / t['ort']:.2f}x", f"{err:.1e}"])
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="small convolutions: the JIT's kernel, the "
                                 "definition, and a small CNN against onnxruntime")
    ap.add_argument("--budget", type=float, default=0.5, help="seconds per measurement")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batches", default="1,8")
    args = ap.parse_args(argv)
    print(table(f"conv2d, f32, {args.threads} thread(s)",
                ["shape", "MACs", "JIT kernel", "definition", "def/kernel", "compiled runs"],
                conv_rows(args.budget, args.threads)))
    rows = cnn_rows(args.budget, args.threads, [int(b) for b in args.batches.split(",")])
    if rows:
        print(table("small_cnn (conv-BN-relu-maxpool, conv-relu, avgpool, linear, softmax), "
                    "jit=always", ["batch", "dlvm", "onnxruntime", "dlvm/ort", "max |err|"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
