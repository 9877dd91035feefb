"""Convolutions that read the image in place against packed patch panels, and onnxruntime.

    .venv/bin/python bench/conv_in_place.py [--batch 32] [--budget 0.5] [--threads 2]

Each row is one ONNX Conv + Relu layer, imported and run by its native library
(`vm.native.library`), with `DLVM_CONV_IN_PLACE` set to 0 (pack patch panels), 1 (read the
image in place: row by row when output rows are whole vectors, else on the padded width) and
unset (the runtime's choice, dlvm_aot_conv.c: conv_reads_in_place), against onnxruntime on the
same thread count, timed in turn (bench/_timing.py). The runtime reads the variable per call,
so one library serves every column; the columns' outputs are checked to be the same bits.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from _timing import fmt_time, interleaved_medians, optional, ort_options, table  # noqa: E402

# (input C, H = W, output O, kernel, pad): UNet, CIFAR ResNet and ImageNet ResNet stages
SHAPES = [(16, 64, 16, 3, 1), (16, 32, 16, 3, 1), (32, 16, 32, 3, 1), (32, 64, 16, 3, 1),
          (64, 32, 64, 3, 1), (128, 32, 128, 3, 1), (64, 56, 64, 3, 1), (128, 14, 128, 3, 1),
          (3, 64, 16, 3, 1), (64, 32, 64, 1, 0)]
MODES = {"packed": "0", "in place": "1", "chosen": ""}


def _layer(c: int, o: int, k: int, p: int) -> bytes:
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(c * 1000 + o)
    w = (rng.standard_normal((o, c, k, k)) * 0.1).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k], pads=[p] * 4),
             helper.make_node("Relu", ["c"], ["y"])]
    graph = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                            ["N", c, None, None])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _library(model: bytes, x: np.ndarray):
    import dlvmrt
    from frontends.onnx import import_onnx
    vm = dlvmrt.VM(import_onnx(model), native="always")
    end = time.time() + 120
    while vm.native.library is None and time.time() < end:    # built in the background
        vm.run("main", x)
        vm.wait_compiled()
    if vm.native.library is None:
        raise RuntimeError(f"no native library: {vm.native.status()}")
    return vm.native.library


def _run_with(lib, mode: str, x: np.ndarray):
    os.environ["DLVM_CONV_IN_PLACE"] = mode
    try:
        return lib.run("main", x)[0]
    finally:
        os.environ.pop("DLVM_CONV_IN_PLACE", None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="convolutions in place vs packed vs onnxruntime")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--budget", type=float, default=0.5, help="seconds per measurement")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    ort = optional("onnxruntime")
    if ort is None or optional("onnx") is None:
        print("needs onnx and onnxruntime (pip install -e '.[onnx]')")
        return 1
    os.environ["DLVM_THREADS"] = str(args.threads)
    rows = []
    for c, h, o, k, p in SHAPES:
        model = _layer(c, o, k, p)
        x = np.random.default_rng(h).standard_normal((args.batch, c, h, h)).astype(np.float32)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib = _library(model, x)
        session = ort.InferenceSession(model, ort_options(ort, args.threads))
        outs = {name: _run_with(lib, mode, x) for name, mode in MODES.items()}
        same = np.array_equal(outs["packed"], outs["in place"])
        err = float(np.abs(outs["chosen"] - session.run(None, {"x": x})[0]).max())
        fns = {name: (lambda m=mode: _run_with(lib, m, x)) for name, mode in MODES.items()}  # noqa: B023
        fns["onnxruntime"] = lambda: session.run(None, {"x": x})  # noqa: B023
        t = interleaved_medians(fns, args.budget)
        rows.append([f"{c} -> {o}, {k}x{k}, {h}x{h}"] + [fmt_time(t[n]) for n in fns] +
                     [f"{t['in place'] / t['packed']:.2f}", f"{t['chosen'] / t['onnxruntime']:.2f}",
                      "yes" if same else "NO", f"{err:.1e}"])
    print(table(f"Conv + Relu, batch {args.batch}, {args.threads} thread(s), medians",
                ["layer", *MODES, "onnxruntime", "in place / packed", "chosen / ort",
                 "same bits", "max |err|"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
