"""GELU (tanh approximation) on f32 vectors of 2^16, 2^20, 2^24 elements.

    .venv/bin/python bench/gelu.py [--threads 2]

Competitors, same process and threads: the dlvm JIT (one fused kernel; a region run through
jit.RegionRunner), NumPy eager (one pass per op), numexpr, onnxruntime on two graphs (the
9-op Mul/Add/Tanh chain of examples/gelu.dlasm, which is the issue's reference, and the fused ONNX
Gelu op, approximate="tanh", which runs MLAS's hand-written kernel), each with 1 and N intra-op
threads, and torch F.gelu(approximate="tanh"), where installed. GB/s counts one read
and one write of the f32 vector.
"""
# ruff: noqa: B023  (each lambda is timed within the loop iteration that defines it)
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._timing import fmt_time, median_seconds, optional, ort_options, table  # noqa: E402
from isa.builder import ModuleBuilder  # noqa: E402
from isa.verify import verify_module  # noqa: E402
from jit import Jit, form_regions  # noqa: E402

C = 0.7978845608028654


def dlvm_runner(threads: int):
    mb = ModuleBuilder("gelu")
    f = mb.function("main", [("x", "f32[N]")], ["f32[N]"])
    f.ret(f.gelu(f.arg("x"), approximate="tanh"))
    m = mb.finish()
    (region,) = form_regions(m, "main", verify_module(m)["main"])
    return Jit(threads=threads).runner(m, region)


def numpy_gelu(x):
    return 0.5 * x * (1 + np.tanh(np.float32(C) * (x + np.float32(0.044715) * x * x * x)))


def _onnx_model(nodes, inits=()):
    from onnx import TensorProto, helper
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N"]) for n in ("x", "y")]
    graph = helper.make_graph(nodes, "gelu", vi[:1], vi[1:], initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)


def onnx_fused_gelu():
    """onnxruntime's own fused kernel (ONNX Gelu, approximate="tanh": MLAS)."""
    from onnx import helper
    return _onnx_model([helper.make_node("Gelu", ["x"], ["y"], approximate="tanh")])


def onnx_chain_gelu():
    """The 9-op chain of examples/gelu.dlasm as ONNX Mul/Add/Tanh nodes (the issue's reference):
    onnxruntime runs it as one pass over memory per node."""
    from onnx import helper, numpy_helper
    consts = {"c3": 0.044715, "cs": 0.7978845608, "one": 1.0, "half": 0.5}
    inits = [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in consts.items()]
    steps = [("Mul", "x", "x", "x2"), ("Mul", "x2", "x", "x3"), ("Mul", "x3", "c3", "t1"),
             ("Add", "x", "t1", "t2"), ("Mul", "t2", "cs", "t3"), ("Tanh", "t3", None, "t4"),
             ("Add", "t4", "one", "t5"), ("Mul", "x", "half", "h"), ("Mul", "h", "t5", "y")]
    nodes = [helper.make_node(op, [a] + ([b] if b else []), [o]) for op, a, b, o in steps]
    return _onnx_model(nodes, inits)


def onnx_session(model, threads: int):
    ort = optional("onnxruntime")
    return ort.InferenceSession(model.SerializeToString(), ort_options(ort, threads),
                                providers=["CPUExecutionProvider"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--budget", type=float, default=0.4)
    args = ap.parse_args()
    t = args.threads
    run = dlvm_runner(t)
    run1 = dlvm_runner(1)
    ne = optional("numexpr")
    if ne is not None:
        ne.set_num_threads(t)
    torch = optional("torch")
    if torch is not None:
        torch.set_num_threads(t)
    sessions = {}
    if optional("onnx") is not None and optional("onnxruntime") is not None:
        for label, model in (("ORT 9-op chain", onnx_chain_gelu()), ("ORT fused Gelu", onnx_fused_gelu())):
            for th in sorted({1, t}):
                sessions[f"{label} ({th} thr)"] = onnx_session(model, th)
    rows = []
    for log2 in (16, 20, 24):
        n = 1 << log2
        x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
        ref = numpy_gelu(x)
        got = run([x])
        assert got is not None and np.allclose(got[0], ref, rtol=1e-5, atol=1e-6), run.describe()
        cands = {f"dlvm JIT ({t} thr)": lambda: run([x]), "dlvm JIT (1 thr)": lambda: run1([x]),
                 "NumPy eager": lambda: numpy_gelu(x)}
        if ne is not None:
            cands["numexpr"] = lambda: ne.evaluate(
                "0.5*x*(1+tanh(0.7978845608*(x+0.044715*x*x*x)))", local_dict={"x": x})
        for label, sess in sessions.items():
            cands[label] = lambda sess=sess: sess.run(None, {"x": x})
        if torch is not None:
            tx = torch.from_numpy(x)
            F = torch.nn.functional
            cands["torch F.gelu"] = lambda: F.gelu(tx, approximate="tanh")
        times = {k: median_seconds(fn, args.budget) for k, fn in cands.items()}
        for k, s in times.items():
            # compared with dlvm on the same number of threads
            base = times["dlvm JIT (1 thr)" if "(1 thr)" in k else f"dlvm JIT ({t} thr)"]
            rows.append([f"2^{log2}", k, fmt_time(s), f"{8 * n / s / 1e9:.1f}", f"{s / base:.2f}x"])
    print(table(f"GELU tanh, f32, {t} threads (ratio = time / dlvm JIT time on the same threads; "
                "> 1: dlvm is faster)",
                ["n", "implementation", "median", "GB/s", "ratio"], rows))
    print("dlvm region:", run.describe()["variants"][0]["spec"].replace("\n", "; "))


if __name__ == "__main__":
    main()
