"""MLP 784-512-512-10 (matmul + bias + relu, last layer without relu), f32, batch 1 and 256.

    .venv/bin/python bench/mlp.py [--threads 2]

dlvm: each layer is a "matmul+epilogue" region (the JIT's GEMM kernel with the weights
prepacked, NumPy's BLAS below 8 rows, then one fused kernel for bias and relu, in place on the
product), driven the way the VM drives regions
(jit.testing.JitDriver: registers in a dict, each region through its RegionRunner). Against
NumPy eager, onnxruntime (MatMul/Add/Relu graph) and torch, where installed.
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
from jit import Jit  # noqa: E402
from jit.testing import JitDriver  # noqa: E402

SIZES = [784, 512, 512, 10]


def weights(rng):
    ws = [(rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32) for a, b in zip(SIZES, SIZES[1:])]
    bs = [(rng.standard_normal(b) * 0.1).astype(np.float32) for b in SIZES[1:]]
    return ws, bs


def dlvm_module(ws, bs):
    mb = ModuleBuilder("mlp")
    f = mb.function("main", [("x", "f32[N, 784]")], ["f32[N, 10]"])
    h = f.arg("x")
    for i, (w, b) in enumerate(zip(ws, bs)):
        h = f.add(f.matmul(h, mb.constant(f"w{i}", w)), mb.constant(f"b{i}", b))
        if i < len(ws) - 1:
            h = f.relu(h)
    f.ret(h)
    return mb.finish()


def numpy_mlp(x, ws, bs):
    h = x
    for i, (w, b) in enumerate(zip(ws, bs)):
        h = h @ w + b
        if i < len(ws) - 1:
            h = np.maximum(h, 0)
    return h


def ort_session(ws, bs, threads):
    onnx, ort = optional("onnx"), optional("onnxruntime")
    if onnx is None or ort is None:
        return None
    from onnx import TensorProto, helper, numpy_helper
    nodes, inits, cur = [], [], "x"
    for i, (w, b) in enumerate(zip(ws, bs)):
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes += [helper.make_node("MatMul", [cur, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"])]
        cur = f"a{i}"
        if i < len(ws) - 1:
            nodes.append(helper.make_node("Relu", [cur], [f"r{i}"]))
            cur = f"r{i}"
    graph = helper.make_graph(nodes, "mlp",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 784])],
                              [helper.make_tensor_value_info(cur, TensorProto.FLOAT, ["N", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    return ort.InferenceSession(model.SerializeToString(), ort_options(ort, threads),
                                providers=["CPUExecutionProvider"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--budget", type=float, default=0.5)
    args = ap.parse_args()
    t = args.threads
    rng = np.random.default_rng(0)
    ws, bs = weights(rng)
    m = dlvm_module(ws, bs)
    driver = JitDriver(m, "main", Jit(threads=t))
    sess = ort_session(ws, bs, t)
    torch = optional("torch")
    if torch is not None:
        torch.set_num_threads(t)
    rows = []
    for batch in (1, 256):
        x = rng.standard_normal((batch, 784)).astype(np.float32)
        ref = numpy_mlp(x, ws, bs)
        got = driver([x])
        assert all(r.compiled_calls >= 1 for r in driver.runners.values()), \
            [r.describe() for r in driver.runners.values()]
        assert np.allclose(got[0], ref, rtol=1e-4, atol=1e-4)
        cands = {f"dlvm JIT ({t} thr)": lambda x=x: driver([x]),
                 "NumPy eager": lambda x=x: numpy_mlp(x, ws, bs)}
        if sess is not None:
            cands["onnxruntime"] = lambda x=x: sess.run(None, {"x": x})
        if torch is not None:
            tx = torch.from_numpy(x)
            tws, tbs = [torch.from_numpy(w) for w in ws], [torch.from_numpy(b) for b in bs]

            def torch_mlp(tx=tx):
                with torch.no_grad():
                    h = tx
                    for i, (w, b) in enumerate(zip(tws, tbs)):
                        h = torch.addmm(b, h, w)
                        if i < len(tws) - 1:
                            h = torch.relu_(h)
                    return h
            cands["torch"] = torch_mlp
        # dlvm and onnxruntime in turn (both pools block when idle); NumPy's OpenBLAS and
        # torch's threads keep spinning for a while after a call, stealing a core from the
        # next competitor, so they run on their own afterwards
        pair = [k for k in cands if k.startswith("dlvm") or k == "onnxruntime"]
        times = interleaved_medians({k: cands[k] for k in pair}, args.budget)
        times.update({k: median_seconds(fn, args.budget) for k, fn in cands.items() if k not in pair})
        base = times[f"dlvm JIT ({t} thr)"]
        for k, s in times.items():
            rows.append([str(batch), k, fmt_time(s), f"{s / base:.2f}x"])
    print(table(f"MLP 784-512-512-10 f32, {t} threads (ratio = time / dlvm time)",
                ["batch", "implementation", "median", "ratio"], rows))
    print("note: the dlvm column includes a minimal Python driver (JitDriver), i.e. per-region "
          "dispatch overhead of a VM; NumPy eager is the interpreter's lower bound.")


if __name__ == "__main__":
    main()
