"""softmax (axis -1) and layer_norm (last axis, scale and bias) on f32 [4096, 1024].

    .venv/bin/python bench/softmax_layernorm.py [--threads 2]

dlvm: the composite op, decomposed by its op-table row into reductions and elementwise ops and
fused into one row-wise kernel (outer loop over rows split across threads, vectorized inner
loops). Against NumPy eager, onnxruntime (Softmax, LayerNormalization) and torch, where
installed, with the same thread count.
"""
# ruff: noqa: B023  (each lambda is timed within the loop iteration that defines it)
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._timing import fmt_time, interleaved_medians, median_seconds, optional, ort_options, table  # noqa: E402
from isa.builder import ModuleBuilder  # noqa: E402
from isa.verify import verify_module  # noqa: E402
from jit import Jit, form_regions  # noqa: E402

SHAPE = (4096, 1024)


def dlvm_runner(op: str, threads: int):
    mb = ModuleBuilder(op)
    if op == "softmax":
        f = mb.function("main", [("x", "f32[N, D]")], ["f32[N, D]"])
        f.ret(f.softmax(f.arg("x"), axis=-1))
    else:
        f = mb.function("main", [("x", "f32[N, D]"), ("g", "f32[D]"), ("b", "f32[D]")], ["f32[N, D]"])
        f.ret(f.layer_norm(*f.args(), axis=-1, epsilon=1e-5))
    m = mb.finish()
    (region,) = form_regions(m, "main", verify_module(m)["main"])
    return Jit(threads=threads).runner(m, region)


def numpy_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def numpy_layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    return xc / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + np.float32(1e-5)) * g + b


def ort_session(op: str, threads: int):
    onnx, ort = optional("onnx"), optional("onnxruntime")
    if onnx is None or ort is None:
        return None
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(SHAPE))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(SHAPE))
    if op == "softmax":
        nodes, inputs = [helper.make_node("Softmax", ["x"], ["y"], axis=-1)], [x]
    else:
        nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1, epsilon=1e-5)]
        inputs = [x] + [helper.make_tensor_value_info(n, TensorProto.FLOAT, [SHAPE[1]]) for n in "gb"]
    model = helper.make_model(helper.make_graph(nodes, op, inputs, [y]),
                              opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    return ort.InferenceSession(model.SerializeToString(), ort_options(ort, threads),
                                providers=["CPUExecutionProvider"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--budget", type=float, default=0.5)
    args = ap.parse_args()
    t = args.threads
    torch = optional("torch")
    if torch is not None:
        torch.set_num_threads(t)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    g = rng.standard_normal(SHAPE[1]).astype(np.float32)
    b = rng.standard_normal(SHAPE[1]).astype(np.float32)
    rows = []
    for op in ("softmax", "layer_norm"):
        run = dlvm_runner(op, t)
        inputs = [x] if op == "softmax" else [x, g, b]
        ref = numpy_softmax(x) if op == "softmax" else numpy_layernorm(x, g, b)
        got = run(inputs)
        assert got is not None and np.allclose(got[0], ref, rtol=1e-4, atol=1e-5), run.describe()
        eager = (lambda: numpy_softmax(x)) if op == "softmax" else (lambda: numpy_layernorm(x, g, b))
        cands = {f"dlvm JIT ({t} thr)": lambda: run(inputs), "NumPy eager": eager}
        sess = ort_session(op, t)
        if sess is not None:
            feed = {"x": x} if op == "softmax" else {"x": x, "g": g, "b": b}
            cands["onnxruntime"] = lambda sess=sess, feed=feed: sess.run(None, feed)
        if torch is not None:
            tx, tg, tb = torch.from_numpy(x), torch.from_numpy(g), torch.from_numpy(b)
            F = torch.nn.functional
            cands["torch"] = (lambda: torch.softmax(tx, -1)) if op == "softmax" else \
                (lambda: F.layer_norm(tx, (SHAPE[1],), tg, tb, 1e-5))
        # dlvm and onnxruntime in turn (both pools block when idle); torch's threads spin
        # for a while after a call, so it runs on its own afterwards
        pair = [k for k in cands if k.startswith("dlvm") or k == "onnxruntime"]
        times = interleaved_medians({k: cands[k] for k in pair}, args.budget)
        times.update({k: median_seconds(fn, args.budget) for k, fn in cands.items() if k not in pair})
        base = times[f"dlvm JIT ({t} thr)"]
        for k, s in times.items():
            rows.append([op, k, fmt_time(s), f"{8 * x.size / s / 1e9:.1f}", f"{s / base:.2f}x"])
    print(table(f"softmax / layer_norm f32 {list(SHAPE)}, {t} threads (ratio = time / dlvm time)",
                ["op", "implementation", "median", "GB/s", "ratio"], rows))


if __name__ == "__main__":
    main()
