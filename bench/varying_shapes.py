"""Sequence models called on a stream of inputs whose batch and length change from call to call,
as a server of text or audio sees them: dlvm with default settings against onnxruntime, calls
interleaved one by one, in one process.

    .venv/bin/python bench/varying_shapes.py                       # the zoo's sequence models
    .venv/bin/python bench/varying_shapes.py --models minilm --calls 200 --lengths 8,64

Each model is exported once with both the batch and the sequence dims dynamic (the TorchScript
exporter's `dynamic_axes`, or the dynamo exporter's `dynamic_shapes`), imported, and called on
`--calls` inputs of random batch (from `--batches`) and random length (from `--lengths`, a
range), the same inputs for both. The table gives each phase of the stream (the first 10 calls,
the next 30, the rest) as total time and ratio dlvm / onnxruntime: the first phases hold the
interpreter's calls and the compiles behind them, the last is what a long-running server sees.
A fresh kernel cache per run (DLVM_CACHE_DIR), as a new user's first run on a new machine (the
native library's runtime is then compiled too: about 6 s of C, once per machine), unless
`--warm-cache`: the user's cache, as every run after the first.
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import zoo_models as zm  # noqa: E402
from _timing import ort_options, table, temp_dir  # noqa: E402

SEQUENCE_MODELS = ["lstm", "gru", "encoder_small_post", "encoder_medium_pre", "minilm"]
PHASES = ((0, 10), (10, 40), (40, None))


def export_dynamic(model: zm.ZooModel, exporter: str) -> bytes:
    """The model's ONNX with batch (dim 0) and length (dim 1) of every input dynamic."""
    torch = zm._torch()
    net = model.build("full")
    feeds = model.inputs(2, "full")
    args = tuple(torch.from_numpy(v) for v in feeds.values())
    names = list(feeds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "torchscript":
            f = io.BytesIO()
            torch.onnx.export(net, args, f, dynamo=False, opset_version=17, input_names=names,
                              output_names=["y"],
                              dynamic_axes={n: {0: "batch", 1: "seq"} for n in names})
            return f.getvalue()
        import contextlib
        import logging
        logging.getLogger("torch.onnx").setLevel(logging.ERROR)
        batch = torch.export.Dim("batch", min=1, max=4096)
        seq = torch.export.Dim("seq", min=2, max=4096)
        with contextlib.redirect_stdout(io.StringIO()):
            prog = torch.onnx.export(net, args, dynamo=True, opset_version=18,
                                     input_names=names, output_names=["y"],
                                     dynamic_shapes=tuple({0: batch, 1: seq} for _ in names))
        return prog.model_proto.SerializeToString()


def stream(model: zm.ZooModel, calls: int, batches: list[int], lengths: tuple[int, int],
           seed: int = 0) -> list[dict[str, np.ndarray]]:
    """`calls` feeds of random batch and length, of the model's kind."""
    rng = np.random.default_rng(seed)
    feeds = []
    for _ in range(calls):
        b, t = int(rng.choice(batches)), int(rng.integers(lengths[0], lengths[1] + 1))
        if model.kind == "minilm":
            ids = rng.integers(1000, 20000, size=(b, t)).astype(np.int64)
            ids[:, 0] = 101
            mask = np.ones((b, t), np.int64)
            mask[:, t - t // 4:] = 0
            feeds.append({"input_ids": ids, "attention_mask": mask})
        else:
            features = model.full_shape[1]
            feeds.append({"x": rng.standard_normal((b, t, features)).astype(np.float32)})
    return feeds


def run_model(model: zm.ZooModel, exporter: str, feeds: list[dict], threads: int) -> dict:
    import onnxruntime as ort

    import dlvmrt
    from frontends.onnx import import_onnx
    onnx_bytes = export_dynamic(model, exporter)
    sess = ort.InferenceSession(onnx_bytes, ort_options(ort, threads),
                                providers=["CPUExecutionProvider"])
    t0 = time.perf_counter()
    vm = dlvmrt.VM(import_onnx(onnx_bytes))
    setup = time.perf_counter() - t0
    t_vm, t_ort, err = [], [], 0.0
    for i, f in enumerate(feeds):
        args = list(f.values())
        # alternate which goes first: the one after runs beside the other's idle threads
        order = (0, 1) if i % 2 == 0 else (1, 0)
        for who in order:
            t0 = time.perf_counter()
            if who == 0:
                got = vm.run("main", *args)
                t_vm.append(time.perf_counter() - t0)
            else:
                want = sess.run(None, f)
                t_ort.append(time.perf_counter() - t0)
        err = max(err, max(float(np.max(np.abs(g - w))) for g, w in zip(got, want)))
    return {"vm": t_vm, "ort": t_ort, "err": err, "setup": setup,
            "status": vm.native.status() if vm.native is not None else "native tier off"}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(SEQUENCE_MODELS))
    ap.add_argument("--exporters", default="torchscript")
    ap.add_argument("--calls", type=int, default=120)
    ap.add_argument("--batches", default="1,2,4,8")
    ap.add_argument("--lengths", default="8,64", help="the range of lengths, both ends included")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warm-cache", action="store_true",
                    help="keep DLVM_CACHE_DIR (compiled kernels and the library's runtime)")
    a = ap.parse_args(argv)
    os.environ["DLVM_THREADS"] = str(a.threads)
    if not a.warm_cache:
        os.environ["DLVM_CACHE_DIR"] = temp_dir("dlvm-varying-cache-")
    warnings.simplefilter("ignore")
    batches = [int(b) for b in a.batches.split(",")]
    lo, hi = (int(n) for n in a.lengths.split(","))
    models = {m.name: m for m in zm.ZOO.values()} if isinstance(zm.ZOO, dict) else \
        {m.name: m for m in zm.ZOO}
    rows = []
    for name in a.models.split(","):
        model = models[name]
        feeds = stream(model, a.calls, batches, (lo, hi))
        for exporter in a.exporters.split(","):
            try:
                r = run_model(model, exporter, feeds, a.threads)
            except Exception as e:  # noqa: BLE001 - one model's failure is a row, not the end
                print(f"{name} {exporter}: {type(e).__name__}: {e}", flush=True)
                continue
            cells = [name, exporter]
            for start, end in PHASES:
                vm_s, ort_s = sum(r["vm"][start:end]), sum(r["ort"][start:end])
                cells += [f"{vm_s * 1e3:.0f} / {ort_s * 1e3:.0f} ms",
                          f"{vm_s / ort_s:.2f}" if ort_s else "-"]
            cells += [f"{r['err']:.1e}"]
            rows.append(cells)
            print(" | ".join(cells), "|", r["status"], flush=True)
    header = ["model", "exporter"]
    for start, end in PHASES:
        span = f"calls {start + 1}-{end or a.calls}"
        header += [f"{span} dlvm / ort", "ratio"]
    header += ["max |err|"]
    print(table(f"Varying shapes: batch in {{{a.batches}}}, length {lo}-{hi}, {a.calls} calls, "
                f"{a.threads} threads, dlvm default settings against onnxruntime, interleaved",
                header, rows))


if __name__ == "__main__":
    main()
