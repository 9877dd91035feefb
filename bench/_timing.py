"""Shared helpers of the benchmarks: robust timing and tables with ratios.

Every benchmark runs all competitors side by side in one process, on the same arrays, with the
same thread count, and reports medians of repeated batches (the first calls, which compile or
warm caches, are excluded)."""
from __future__ import annotations

import atexit
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable


def median_seconds(fn: Callable[[], object], budget_s: float = 0.4, warmup: int = 3) -> float:
    """Median time of one call of `fn`, from batches sized to take about 10 ms each."""
    for _ in range(warmup):
        fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    per_batch = max(1, int(0.01 / one))
    samples = []
    end = time.perf_counter() + budget_s
    while time.perf_counter() < end or len(samples) < 5:
        t0 = time.perf_counter()
        for _ in range(per_batch):
            fn()
        samples.append((time.perf_counter() - t0) / per_batch)
    return statistics.median(samples)


def interleaved_medians(fns: dict[str, Callable[[], object]], budget_s: float = 0.4,
                        warmup: int = 3) -> dict[str, float]:
    """Median seconds per call of each function, timed in turn: one batch of each, then the
    next round. A busy spell of this shared machine (it swings up to 2x for seconds) then slows
    every competitor alike instead of whichever happened to run during it."""
    per_batch = {}
    for name, fn in fns.items():
        for _ in range(warmup):
            fn()
        t0 = time.perf_counter()
        fn()
        per_batch[name] = max(1, int(0.005 / max(time.perf_counter() - t0, 1e-7)))
    samples: dict[str, list[float]] = {name: [] for name in fns}
    end = time.perf_counter() + budget_s * len(fns)
    while time.perf_counter() < end or min(map(len, samples.values())) < 5:
        for name, fn in fns.items():
            n = per_batch[name]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            samples[name].append((time.perf_counter() - t0) / n)
    return {name: statistics.median(s) for name, s in samples.items()}


def table(title: str, header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |" for r in rows]
    return "\n".join([f"### {title}", "", line, sep, *body, ""])


def fmt_time(s: float) -> str:
    return f"{s * 1e6:.1f} us" if s < 1e-3 else f"{s * 1e3:.3f} ms"


# Worker threads of OpenMP (torch) that busy-wait after a call would steal one of the machine's
# two cores from whatever runs next; all competitors block instead of spinning.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def ort_options(ort, threads: int):
    """onnxruntime session options: `threads` intra-op threads that do not spin when idle."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return opts


def optional(name: str):
    """The module `name`, or None when it is not installed (its column is then skipped)."""
    try:
        return __import__(name)
    except ImportError:
        return None


def temp_dir(prefix: str) -> str:
    """A fresh temporary directory (a cold code cache, a library's build), removed when the
    process exits: a benchmark run otherwise left hundreds of MB of kernels behind each time."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path
