"""Batch inference throughput: `dlvm batch` in-process against a Ray actor pool of 1 and 2.

    .venv/bin/python bench/distributed.py [--shards 16] [--samples 2048] [--repeat 3]

The model is the MLP 784-512-512-10 of bench/mlp.py (f32, random weights); shards are .npz files
of `--samples` rows each, in a temporary directory. Every run writes all output shards afresh
(`resume=False`); the runs of the three ways alternate, and the table gives the median samples/s
of each and the overhead of the Ray path against in-process on the same data: "in workers" is
the rate while shards run (samples over the time spent in `ShardRunner.process`, per actor), and
"fixed cost" the rest of the wall time (actor start-up, program decode and verify, kernels from
the disk cache, Ray Data's scheduling). A local Ray
instance with 2 CPUs is started once (its start-up, ~3-5 s, is reported on its own, not counted).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.mlp import dlvm_module, weights  # noqa: E402
from dlvmrt.distributed import connect, program_bytes, run_batch  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--samples", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jit", default="always")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    program = program_bytes(dlvm_module(*weights(rng)))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "in").mkdir()
        for i in range(a.shards):
            np.savez(root / "in" / f"part-{i:03d}.npz",
                     x=rng.standard_normal((a.samples, 784)).astype(np.float32))
        t0 = time.perf_counter()
        connect("auto")
        print(f"ray start-up: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        ways = {"in-process": dict(ray=None), "ray, 1 actor": dict(ray="auto", actors=1),
                "ray, 2 actors": dict(ray="auto", actors=2)}
        rates: dict[str, list[float]] = {k: [] for k in ways}
        inside: dict[str, list[float]] = {k: [] for k in ways}
        for rep in range(a.repeat + 1):          # the first round warms caches and kernels
            for name, how in ways.items():
                report = run_batch(program, [str(root / "in")], root / name.replace(" ", ""),
                                   jit=a.jit, resume=False, **how)
                assert not report.failed, report.failed
                if rep:
                    rates[name].append(report.samples / report.seconds)
                    busy = sum(r.seconds for r in report.results) / how.get("actors", 1)
                    inside[name].append(report.samples / busy)
    total = a.shards * a.samples
    print(f"{a.shards} shards x {a.samples} samples ({total} in all), MLP 784-512-512-10, "
          f"jit={a.jit}, median of {a.repeat}")
    base = statistics.median(rates["in-process"])
    print(f"{'way':<16}{'samples/s':>12}{'vs in-process':>16}{'in workers':>14}{'fixed cost':>12}")
    for name, r in rates.items():
        m, w = statistics.median(r), statistics.median(inside[name])
        fixed = total / m - total / w      # start-up: actors, VMs, kernels from the disk cache
        print(f"{name:<16}{m:>12.0f}{m / base:>15.2f}x{w:>14.0f}{fixed:>11.2f}s")


if __name__ == "__main__":
    main()
