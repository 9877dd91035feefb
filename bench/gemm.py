"""The JIT's f32 GEMM and conv2d (jit/targets/cpu/: gemm.py, conv.py) against NumPy's BLAS, onnxruntime
and torch, on the products and convolutions of MiniLM, the MLP and ResNet-18.

    .venv/bin/python bench/gemm.py [--threads 2] [--only gemm|conv]

Products: dlvm with the right operand prepacked (as the VM does for constant weights) and
without; NumPy's `matmul(out=)` (OpenBLAS); onnxruntime's MatMul with the right operand an
initializer (which MLAS prepacks too); torch.mm. Convolutions (bias, then relu, as ResNet's
blocks): dlvm's implicit GEMM with prepacked weights; onnxruntime's Conv+Relu graph; torch's
conv2d+relu. Every competitor gets the same thread count; medians of repeated batches;
ratio = time / dlvm time (above 1: dlvm is faster).
"""
# ruff: noqa: B023  (each lambda is timed within the loop iteration that defines it)
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._timing import fmt_time, interleaved_medians, median_seconds, optional, ort_options, table  # noqa: E402

PRODUCTS = [  # M, K, N, where
    (32, 384, 384, "MiniLM attention projections"),
    (32, 384, 1536, "MiniLM FFN up"),
    (32, 1536, 384, "MiniLM FFN down"),
    (256, 784, 512, "MLP layer 1, batch 256"),
    (256, 512, 512, "MLP layer 2, batch 256"),
    (64, 576, 3136, "ResNet layer1 conv as GEMM"),
    (512, 4608, 49, "ResNet layer4 conv as GEMM"),
    (32, 512, 32000, "vocabulary head, batch 32 (probe13 big_vocab_head)"),
    (1, 512, 32000, "vocabulary head, batch 1"),
]
CONVS = [  # C, H, O, k, stride, pad: every distinct convolution of ResNet-18
    (3, 224, 64, 7, 2, 3), (64, 56, 64, 3, 1, 1), (64, 56, 128, 3, 2, 1), (128, 28, 128, 3, 1, 1),
    (128, 28, 256, 3, 2, 1), (256, 14, 256, 3, 1, 1), (256, 14, 512, 3, 2, 1), (512, 7, 512, 3, 1, 1),
    (64, 56, 128, 1, 2, 0), (128, 28, 256, 1, 2, 0), (256, 14, 512, 1, 2, 0),
]
# how many times each appears in ResNet-18, for the weighted total
CONV_COUNT = [1, 4, 1, 3, 1, 3, 1, 3, 1, 1, 1]


def ort_graph(nodes, inputs, outputs, inits):
    from onnx import helper
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             ir_version=9).SerializeToString()


def _paired(name: str, fn, other: str, other_fn) -> list[tuple[str, float]]:
    """dlvm and onnxruntime timed in turn (both pools block when idle), so that a busy spell
    of the machine slows both; the others (whose threads spin after a call) run alone."""
    fns = {name: fn} | ({other: other_fn} if other_fn is not None else {})
    return list(interleaved_medians(fns).items())


def bench_products(threads: int) -> str:
    from jit.targets.cpu.gemm import gemm
    g = gemm()
    ort, torch = optional("onnxruntime"), optional("torch")
    rows = []
    rng = np.random.default_rng(0)
    for m, k, n, where in PRODUCTS:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        out = np.empty((m, n), np.float32)
        packed = g.pack(b, "b")
        sess = None
        if ort is not None and optional("onnx") is not None:
            from onnx import TensorProto, helper, numpy_helper
            model = ort_graph([helper.make_node("MatMul", ["A", "B"], ["Y"])],
                              [helper.make_tensor_value_info("A", TensorProto.FLOAT, [m, k])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [m, n])],
                              [numpy_helper.from_array(b, "B")])
            sess = ort.InferenceSession(model, ort_options(ort, threads), providers=["CPUExecutionProvider"])
        results = _paired("dlvm (B prepacked)", lambda: g.matmul(a, packed, out, threads),
                          "onnxruntime MatMul", sess and (lambda: sess.run(None, {"A": a})))
        results += [("dlvm", median_seconds(lambda: g.matmul(a, b, out, threads))),
                    ("NumPy matmul", median_seconds(lambda: np.matmul(a, b, out=out)))]
        if torch is not None:
            ta, tb, to = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(out)
            results.append(("torch.mm", median_seconds(lambda: torch.mm(ta, tb, out=to))))
        base = results[0][1]
        for name, t in results:
            gf = 2 * m * n * k / t / 1e9
            rows.append([f"{m}x{k}x{n}", where, name, fmt_time(t), f"{gf:.0f}", f"{t / base:.2f}x"])
    return table(f"f32 products, {threads} thread(s)", ["M x K x N", "where", "implementation",
                                                        "median", "GFLOP/s", "ratio"], rows)


def bench_convs(threads: int) -> str:
    from isa.ops import OPS
    from jit.targets.cpu import conv as jconv
    from jit.targets.cpu.gemm import gemm
    g = gemm()
    ort, torch = optional("onnxruntime"), optional("torch")
    rows = []
    rng = np.random.default_rng(0)
    totals: dict[str, float] = {}
    for (c, h, o, k, s, p), count in zip(CONVS, CONV_COUNT):
        ho = (h + 2 * p - k) // s + 1
        x = rng.standard_normal((1, c, h, h)).astype(np.float32)
        w = (rng.standard_normal((o, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)
        bias = rng.standard_normal(o).astype(np.float32)
        attrs = OPS["conv2d"].with_defaults({"strides": [s, s], "pads": [p] * 4})
        plan = jconv.ConvPlan(x.shape, w.shape, attrs)
        wm = g.pack(*reversed(plan.weights(w)))
        out = np.empty((1, o, ho, ho), np.float32)

        def dlvm():      # bias and relu applied by the kernel's store, as the VM runs it
            plan.run(x, w, bias, out, g, threads, wm, relu=True)
        dlvm()
        ref = np.maximum(OPS["conv2d"].reference(attrs, x, w, bias), 0)
        if not np.allclose(out, ref, rtol=1e-4, atol=1e-3):
            raise AssertionError(f"conv {c}x{h} -> {o} k{k}: dlvm differs from the reference")
        sess = None
        if ort is not None and optional("onnx") is not None:
            from onnx import TensorProto, helper, numpy_helper
            model = ort_graph(
                [helper.make_node("Conv", ["X", "W", "B"], ["Y"], kernel_shape=[k, k], strides=[s, s],
                                  pads=[p] * 4), helper.make_node("Relu", ["Y"], ["Z"])],
                [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x.shape))],
                [helper.make_tensor_value_info("Z", TensorProto.FLOAT, [1, o, ho, ho])],
                [numpy_helper.from_array(w, "W"), numpy_helper.from_array(bias, "B")])
            sess = ort.InferenceSession(model, ort_options(ort, threads), providers=["CPUExecutionProvider"])
        results = _paired("dlvm implicit GEMM", dlvm,
                          "onnxruntime Conv+Relu", sess and (lambda: sess.run(None, {"X": x})))
        if torch is not None:
            tx, tw, tb = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(bias)
            results.append(("torch conv2d+relu", median_seconds(
                lambda: torch.relu(torch.nn.functional.conv2d(tx, tw, tb, s, p)))))
        base = results[0][1]
        for name, t in results:
            rows.append([f"{c}x{h}x{h} -> {o}, {k}x{k}/{s} (x{count})", name, fmt_time(t),
                         f"{t / base:.2f}x"])
            totals[name] = totals.get(name, 0.0) + count * t
    base = totals["dlvm implicit GEMM"]
    for name, t in totals.items():
        rows.append(["all of ResNet-18's (weighted)", name, fmt_time(t), f"{t / base:.2f}x"])
    return table(f"f32 conv2d + bias + relu, batch 1, {threads} thread(s)",
                 ["convolution", "implementation", "median", "ratio"], rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", choices=["gemm", "conv"])
    args = ap.parse_args()
    os.environ["DLVM_THREADS"] = str(args.threads)
    torch = optional("torch")
    if torch is not None:
        torch.set_num_threads(args.threads)
    if args.only != "conv":
        print(bench_products(args.threads))
    if args.only != "gemm":
        print(bench_convs(args.threads))


if __name__ == "__main__":
    main()
