"""3x3 stride-1 convolutions in the native library: Winograd's F(2x2, 3x3) against the direct
products (the implicit GEMM), and onnxruntime, layer by layer.

    .venv/bin/python bench/winograd.py [--threads 2] [--batch 1] [--budget 1.0] [--only 56]
    .venv/bin/python bench/winograd.py --layers 64->64@8,32->32@24     # other shapes

Each layer is a torch.nn Conv2d (no bias) + BatchNorm2d + ReLU exported to ONNX, imported, and
run on the native tier once it has settled. `$DLVM_WINOGRAD` is set to 1 or 0 around each call
(the library reads it per call), so both forms run on the same library and arrays, timed in
turn with onnxruntime (bench/_timing.py `interleaved_medians`). Needs torch and onnxruntime.
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from _timing import fmt_time, interleaved_medians, optional, ort_options, table  # noqa: E402

# (name, input channels, output channels, height = width): ResNet-18's stride-1 3x3 layers,
# then shapes of other CNNs (a VGG / UNet stage, a small CNN's 32x32 maps)
LAYERS = [
    ("64@56 (ResNet-18 layer1)", 64, 64, 56),
    ("128@28 (layer2)", 128, 128, 28),
    ("256@14 (layer3)", 256, 256, 14),
    ("512@7 (layer4)", 512, 512, 7),
    ("32@112", 32, 32, 112),
    ("96@40", 96, 96, 40),
    ("32->64@32", 32, 64, 32),
    ("64@16", 64, 64, 16),
]


def _time_layer(vm, sess, xn, budget: float) -> dict[str, float]:
    """Median seconds per call: the settled native tier with each form, and onnxruntime."""
    for i in range(2000):
        vm.run("main", xn)
        vm.wait_compiled()
        if i >= 2 and (vm.native is None or vm.native.settled("main", [xn])):
            break

    def form(flag: str):
        def call():
            os.environ["DLVM_WINOGRAD"] = flag
            return vm.run("main", xn)
        return call

    return interleaved_medians({"winograd": form("1"), "direct": form("0"),
                                "ort": lambda: sess.run(None, {"x": xn})}, budget_s=budget)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--budget", type=float, default=1.0)
    ap.add_argument("--only", default="", help="run the layers whose name contains this")
    ap.add_argument("--layers", default="", help="other layers instead: C->O@HW, comma-separated "
                    "(e.g. 64->64@8,32->32@24)")
    args = ap.parse_args()
    os.environ["DLVM_THREADS"] = str(args.threads)
    torch, ort = optional("torch"), optional("onnxruntime")
    if torch is None or ort is None:
        print("bench/winograd.py needs torch and onnxruntime")
        return
    warnings.simplefilter("ignore")
    import dlvmrt
    from frontends.onnx import import_onnx
    nn = torch.nn
    torch.manual_seed(0)
    rows = []
    layers = LAYERS
    if args.layers:
        layers = []
        for spec in args.layers.split(","):
            chans, hw = spec.split("@")
            c, o = chans.split("->")
            layers.append((spec, int(c), int(o), int(hw)))
    for name, c, o, hw in layers:
        if args.only not in name:
            continue
        net = nn.Sequential(nn.Conv2d(c, o, 3, 1, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU()).eval()
        x = torch.randn(args.batch, c, hw, hw)
        buf = io.BytesIO()
        torch.onnx.export(net, (x,), buf, dynamo=False, opset_version=17, input_names=["x"],
                          output_names=["y"])
        sess = ort.InferenceSession(buf.getvalue(), ort_options(ort, args.threads),
                                    providers=["CPUExecutionProvider"])
        r = _time_layer(dlvmrt.VM(import_onnx(buf.getvalue())), sess, x.numpy(), args.budget)
        os.environ.pop("DLVM_WINOGRAD", None)
        rows.append([name, fmt_time(r["winograd"]), fmt_time(r["direct"]), fmt_time(r["ort"]),
                     f"{r['winograd'] / r['direct']:.2f}", f"{r['winograd'] / r['ort']:.2f}",
                     f"{r['direct'] / r['ort']:.2f}"])
    print(table(f"3x3 stride-1 conv+BN+ReLU, batch {args.batch}, {args.threads} threads",
                ["layer", "winograd", "direct", "onnxruntime", "wg/direct", "wg/ort", "direct/ort"],
                rows))


if __name__ == "__main__":
    main()
