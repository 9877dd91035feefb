"""The model zoo against onnxruntime: latency of dlvm (default settings, and `jit="always"`)
and onnxruntime on the same thread count, timed interleaved call by call in one process.

    .venv/bin/python bench/zoo.py                           # every model, both exporters, b 1, 32
    .venv/bin/python bench/zoo.py --models resnet18,minilm --batches 1
    .venv/bin/python bench/zoo.py --exporters torchscript --size small --threads 1
    .venv/bin/python bench/zoo.py --static                  # time the static-batch exports too
    .venv/bin/python bench/zoo.py --set more                # bench/zoo_more.py's 20 models
    .venv/bin/python bench/zoo.py --set probe2              # bench/zoo_probe2.py's 10 models
    .venv/bin/python bench/zoo.py --set probe3              # bench/zoo_probe3.py's 14 models
    .venv/bin/python bench/zoo.py --set probe4              # bench/zoo_probe4.py's 12 models
    .venv/bin/python bench/zoo.py --set probe5              # bench/zoo_probe5.py's 5 models
    .venv/bin/python bench/zoo.py --set probe6              # bench/zoo_probe6.py's 14 models
    .venv/bin/python bench/zoo.py --set probe7              # bench/zoo_probe7.py's 13 models
    .venv/bin/python bench/zoo.py --set probe8              # bench/zoo_probe8.py's 14 models
    .venv/bin/python bench/zoo.py --set probe9              # bench/zoo_probe9.py's 14 models
    .venv/bin/python bench/zoo.py --set probe10             # bench/zoo_probe10.py's 13 models
    .venv/bin/python bench/zoo.py --set probe11             # bench/zoo_probe11.py's 13 models
    .venv/bin/python bench/zoo.py --set probe12             # bench/zoo_probe12.py's 15 models
    .venv/bin/python bench/zoo.py --set probe13             # bench/zoo_probe13.py's 17 models
    .venv/bin/python bench/zoo.py --set probe14             # bench/zoo_probe14.py's 16 models
    .venv/bin/python bench/zoo.py --set probe15             # bench/zoo_probe15.py's 15 models
    .venv/bin/python bench/zoo.py --set probe16             # bench/zoo_probe16.py's 16 models
    .venv/bin/python bench/zoo.py --set probe17             # bench/zoo_probe17.py's 14 models
    .venv/bin/python bench/zoo.py --set probe18             # bench/zoo_probe18.py's 15 models
    .venv/bin/python bench/zoo.py --set probe19             # bench/zoo_probe19.py's 16 models
    .venv/bin/python bench/zoo.py --set probe20             # bench/zoo_probe20.py's 15 models
    .venv/bin/python bench/zoo.py --set probe21             # bench/zoo_probe21.py's 15 models
    .venv/bin/python bench/zoo.py --set probe22             # bench/zoo_probe22.py's 15 models

Each model of `bench/zoo_models.py` (torch.nn, seeded random weights, no downloads) is exported
with the TorchScript-based exporter (`dynamic_axes` on the batch) and with `dynamo=True` (a
dynamic batch dim); the one dynamic-batch export runs at every batch of `--batches`. With
`--static`, a static export per batch is timed as well. Each row checks the outputs against
onnxruntime (max |err|), then times the three competitors in turn (`_timing.interleaved_medians`,
so a busy spell of the shared machine slows all alike) and reports the medians, the ratios to
onnxruntime and, per column, the geometric mean over the rows. "first" is the time from a new
VM to its first result (import excluded, shown apart), with an empty kernel cache (unless
`--warm-cache`), so it includes any compile the first call waits for.
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

import zoo_models as zm  # noqa: E402
from _timing import fmt_time, interleaved_medians, ort_options, table, temp_dir  # noqa: E402
from zoo_more import MORE  # noqa: E402
from zoo_probe import PROBE  # noqa: E402
from zoo_probe2 import PROBE2  # noqa: E402
from zoo_probe3 import PROBE3  # noqa: E402
from zoo_probe4 import PROBE4  # noqa: E402
from zoo_probe5 import PROBE5  # noqa: E402
from zoo_probe6 import PROBE6  # noqa: E402
from zoo_probe7 import PROBE7  # noqa: E402
from zoo_probe8 import PROBE8  # noqa: E402
from zoo_probe9 import PROBE9  # noqa: E402
from zoo_probe10 import PROBE10  # noqa: E402
from zoo_probe11 import PROBE11  # noqa: E402
from zoo_probe12 import ORT_DISABLED_OPTIMIZERS, PROBE12  # noqa: E402
from zoo_probe13 import PROBE13  # noqa: E402
from zoo_probe14 import PROBE14  # noqa: E402
from zoo_probe15 import PROBE15  # noqa: E402
from zoo_probe16 import PROBE16  # noqa: E402
from zoo_probe17 import PROBE17  # noqa: E402
from zoo_probe18 import PROBE18  # noqa: E402
from zoo_probe19 import PROBE19  # noqa: E402
from zoo_probe20 import PROBE20  # noqa: E402
from zoo_probe21 import PROBE21  # noqa: E402
from zoo_probe22 import PROBE22  # noqa: E402


def _first_call(module, jit: str | None, args: list) -> tuple[object, float]:
    import dlvmrt
    t0 = time.perf_counter()
    vm = dlvmrt.VM(module) if jit is None else dlvmrt.VM(module, jit=jit)
    vm.run("main", *args)
    return vm, time.perf_counter() - t0


def bench_row(model: zm.ZooModel, onnx_bytes: bytes, batch: int, size: str, threads: int,
              budget: float) -> dict:
    import onnxruntime as ort

    from frontends.onnx import import_onnx
    feeds = model.inputs(batch, size)
    args = list(feeds.values())
    t0 = time.perf_counter()
    module = import_onnx(onnx_bytes)
    import_s = time.perf_counter() - t0
    sess = ort.InferenceSession(onnx_bytes, ort_options(ort, threads),
                                providers=["CPUExecutionProvider"],
                                disabled_optimizers=ORT_DISABLED_OPTIMIZERS.get(model.name, []))
    t0 = time.perf_counter()
    want = sess.run(None, feeds)
    ort_first = time.perf_counter() - t0
    vm_default, first_default = _first_call(module, None, args)
    vm_always, first_always = _first_call(module, "always", args)
    err = 0.0
    # steady state: the default VM's background compiles are done before it is timed (its
    # first call, interpreted while they run, is the "first default" column)
    # (the pipeline, then the regions' kernels, then the native library: each can wait on the
    # one before), and both VMs' native tiers have chosen between the library and the VM for
    # these inputs: a slow model's few timed calls were otherwise the choice's trial calls
    # (UNet at batch 32 was timed at 106 ms where its library runs in 53)
    # (the trial's library samples wait out the VM's OpenBLAS threads, 0.25 s: a fast model
    # settles after hundreds of calls, a slow one after a few)
    for vm in (vm_default, vm_always):
        deadline = time.perf_counter() + 20
        for i in range(100000):
            vm.run("main", *args)
            vm.wait_compiled()
            if i >= 2 and (vm.native is None or vm.native.settled("main", args)) or \
                    time.perf_counter() > deadline:
                break
    for vm in (vm_default, vm_always):
        got = vm.run("main", *args)
        err = max(err, max(float(np.max(np.abs(g - w))) for g, w in zip(got, want)))
    times = interleaved_medians({
        "default": lambda: vm_default.run("main", *args),
        "always": lambda: vm_always.run("main", *args),
        "ort": lambda: sess.run(None, feeds),
    }, budget_s=budget, warmup=1)
    return {"import_s": import_s, "err": err, "first_default": first_default,
            "first_always": first_always, "ort_first": ort_first, **times}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="the model zoo: dlvm against onnxruntime")
    ap.add_argument("--set", default="zoo", choices=["zoo", "more", "probe", "probe2", "probe3",
                                                    "probe4", "probe5", "probe6", "probe7",
                                                    "probe8", "probe9", "probe10", "probe11",
                                                    "probe12", "probe13", "probe14", "probe15",
                                                    "probe16", "probe17", "probe18", "probe19",
                                                    "probe20", "probe21", "probe22", "all"],
                    help="the zoo (zoo_models.py), the more models of zoo_more.py, the probes' "
                         "of zoo_probe.py to zoo_probe22.py, or all of them")
    ap.add_argument("--models", default="", help="comma-separated names (default: the set)")
    ap.add_argument("--exporters", default=",".join(zm.EXPORTERS))
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--size", default="full", choices=["small", "full"],
                    help="the benchmark sizes or the tests' small ones")
    ap.add_argument("--static", action="store_true", help="time static-batch exports as well")
    ap.add_argument("--threads", type=int, default=2,
                    help="threads of both: dlvm (DLVM_THREADS) and onnxruntime's intra-op pool")
    ap.add_argument("--budget", type=float, default=0.5,
                    help="seconds of timing per competitor and row (at least 5 calls each)")
    ap.add_argument("--warm-cache", action="store_true",
                    help="keep DLVM_CACHE_DIR (first calls then reuse compiled kernels)")
    a = ap.parse_args(argv)
    os.environ["DLVM_THREADS"] = str(a.threads)
    if not a.warm_cache:
        os.environ["DLVM_CACHE_DIR"] = temp_dir("dlvm-zoo-cache-")    # a cold cache per run
    warnings.simplefilter("ignore")
    batches = [int(b) for b in a.batches.split(",")]
    rows, skipped = [], []
    ratios: dict[tuple[str, int], list[float]] = {}
    sets = {"zoo": zm.ZOO, "more": MORE, "probe": PROBE, "probe2": PROBE2, "probe3": PROBE3,
            "probe4": PROBE4, "probe5": PROBE5, "probe6": PROBE6, "probe7": PROBE7,
            "probe8": PROBE8, "probe9": PROBE9, "probe10": PROBE10,
            "probe11": PROBE11, "probe12": PROBE12, "probe13": PROBE13,
            "probe14": PROBE14, "probe15": PROBE15, "probe16": PROBE16, "probe17": PROBE17,
            "probe18": PROBE18, "probe19": PROBE19, "probe20": PROBE20,
            "probe21": PROBE21, "probe22": PROBE22}
    every = {**zm.ZOO, **MORE, **PROBE, **PROBE2, **PROBE3, **PROBE4, **PROBE5, **PROBE6,
             **PROBE7, **PROBE8, **PROBE9, **PROBE10, **PROBE11, **PROBE12, **PROBE13,
             **PROBE14, **PROBE15, **PROBE16, **PROBE17, **PROBE18, **PROBE19, **PROBE20,
             **PROBE21, **PROBE22}
    known = every if a.set == "all" else sets[a.set]
    for name in (a.models.split(",") if a.models else list(known)):
        if name not in every:
            ap.error(f"unknown model {name} (the zoo: {', '.join(zm.ZOO)}; more: "
                     f"{', '.join(MORE)}; probe: {', '.join(PROBE)}; probe2: "
                     f"{', '.join(PROBE2)}; probe3: {', '.join(PROBE3)}; probe4: "
                     f"{', '.join(PROBE4)}; probe5: {', '.join(PROBE5)}; probe6: "
                     f"{', '.join(PROBE6)}; probe7: {', '.join(PROBE7)}; probe8: "
                     f"{', '.join(PROBE8)}; probe9: {', '.join(PROBE9)}; "
                     f"probe10: {', '.join(PROBE10)}; probe11: {', '.join(PROBE11)}; "
                     f"probe12: {', '.join(PROBE12)}; probe13: {', '.join(PROBE13)}; "
                     f"probe14: {', '.join(PROBE14)}; probe15: {', '.join(PROBE15)}; "
                     f"probe16: {', '.join(PROBE16)}; probe17: {', '.join(PROBE17)}; "
                     f"probe18: {', '.join(PROBE18)}; probe19: {', '.join(PROBE19)}; "
                     f"probe20: {', '.join(PROBE20)}; probe21: {', '.join(PROBE21)}; "
                     f"probe22: {', '.join(PROBE22)})")
        model = every[name]
        try:
            net = model.build(a.size)
        except ImportError as e:
            skipped.append(f"{name}: {e}")
            continue
        for exporter in a.exporters.split(","):
            exports = [("dynamic", None)] + ([("static", b) for b in batches] if a.static else [])
            for kind, static_batch in exports:
                try:
                    feeds = model.inputs(static_batch or 2, a.size)
                    onnx_bytes = zm.export_onnx(model, net, feeds, exporter, kind == "dynamic")
                except Exception as e:  # noqa: BLE001 - an exporter's failure is a table row
                    skipped.append(f"{name} {exporter} {kind}: export failed: "
                                   f"{type(e).__name__}: {str(e).splitlines()[0][:120]}")
                    continue
                for batch in ([static_batch] if static_batch else batches):
                    label = f"{name} {exporter} {kind}"
                    try:
                        r = bench_row(model, onnx_bytes, batch, a.size, a.threads, a.budget)
                    except Exception as e:  # noqa: BLE001 - reported, the table goes on
                        skipped.append(f"{label} b={batch}: {type(e).__name__}: "
                                       f"{str(e).splitlines()[0][:160]}")
                        continue
                    rd, ra = r["default"] / r["ort"], r["always"] / r["ort"]
                    ratios.setdefault(("default", batch), []).append(rd)
                    ratios.setdefault(("always", batch), []).append(ra)
                    rows.append([name, exporter, kind, str(batch), fmt_time(r["default"]),
                                 fmt_time(r["always"]), fmt_time(r["ort"]), f"{rd:.2f}",
                                 f"{ra:.2f}", fmt_time(r["first_default"]),
                                 fmt_time(r["first_always"]), fmt_time(r["ort_first"]),
                                 f"{r['import_s']:.2f} s", f"{r['err']:.1e}"])
                    print("  " + " | ".join(rows[-1]), file=sys.stderr, flush=True)
    for batch in batches:
        if ("default", batch) in ratios:
            rows.append(["geomean", "", "", str(batch), "", "", "",
                         f"{zm.geomean(ratios[('default', batch)]):.2f}",
                         f"{zm.geomean(ratios[('always', batch)]):.2f}", "", "", "", "", ""])
    header = ["model", "exporter", "batch dim", "batch", "dlvm default", "dlvm always", "ort",
              "ratio default", "ratio always", "first default", "first always", "ort first",
              "import", "max |err|"]
    print(table(f"Model zoo ({a.set}), size={a.size}, {a.threads} threads (dlvm and onnxruntime, no "
                f"spinning), medians interleaved call by call; ratio = dlvm / onnxruntime",
                header, rows))
    for s in skipped:
        print(f"- not timed: {s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
