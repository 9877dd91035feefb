"""Execution profile: per-instruction and per-region calls and time, per-block counts and loop
back-edges, and optional Chrome trace events (open the JSON in Perfetto or chrome://tracing).

Only a VM made with `profile=True` (or `trace=True`) wraps its steps; the default path pays
nothing but the block counters tier-up needs anyway.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

MAX_TRACE_EVENTS = 500_000


@dataclass
class Record:
    func: str
    block: str
    index: int
    label: str              # the op, or "region[a:b] kind"
    kind: str               # "interpreted" or "compiled"
    device: str = "cpu"
    calls: int = 0
    ns: int = 0
    fallbacks: int = 0
    compile_ns: int = 0     # JIT compiles (or cache loads) during these calls, not in `ns`
    first_ns: int = 0       # the first call: one-time set-up (kernels loaded, weights packed)
    extra: dict[str, Any] = field(default_factory=dict)


def _compile_ns(runner) -> int:
    """Time a region runner has spent compiling (or loading from the code cache) so far."""
    return int(sum(getattr(c, "compile_ms", 0.0) for c in getattr(runner, "variants", {}).values())
               * 1e6)


def placement_report(scheduler) -> list[str]:
    """Where regions were placed, every transfer per device, and every CPU fallback."""
    stats = scheduler.stats
    lines = ["placements: " + (", ".join(f"{d} {n}" for d, n in sorted(stats.placed.items()))
                               or "none")]
    for d in scheduler.devices.values():
        if not d.is_host:
            t = d.transfers
            lines.append(f"transfers {d.name}: {t.h2d} to the device ({t.h2d_bytes} bytes), "
                         f"{t.d2h} to the host ({t.d2h_bytes} bytes)")
    lines.append(f"CPU fallbacks: {stats.fallbacks}")
    lines.extend(f"  {why}" for why in stats.reasons)
    return lines


class Profiler:
    def __init__(self, trace: bool = False):
        self.records: dict[tuple, Record] = {}
        self.trace = trace
        self.events: list[dict] = []
        self.t0 = time.perf_counter_ns()

    def _record(self, fcode, bi: int, key_index: int, label: str, kind: str) -> Record:
        block = fcode.func.blocks[bi].label
        key = (fcode.func.name, block, key_index, label)
        rec = self.records.get(key)
        if rec is None:
            rec = self.records[key] = Record(fcode.func.name, block, key_index, label, kind)
        return rec

    def _event(self, rec: Record, start: int, dur: int) -> None:
        self._span(rec.label, rec.kind, 1 if rec.kind == "compiled" else 0, start, dur, rec)

    def _span(self, name: str, cat: str, tid: int, start: int, dur: int, rec: Record) -> None:
        if len(self.events) < MAX_TRACE_EVENTS:
            self.events.append({"name": name, "cat": cat, "ph": "X", "pid": 1, "tid": tid,
                                "ts": (start - self.t0) / 1000, "dur": dur / 1000,
                                "args": {"function": rec.func, "block": rec.block,
                                         "instruction": rec.index, "device": rec.device}})

    def wrap(self, fcode, bi: int, ii: int, step):
        ins = fcode.func.blocks[bi].instrs[ii]
        rec = self._record(fcode, bi, ii, ins.op, "interpreted")
        clock, trace = time.perf_counter_ns, self.trace

        def timed(r):
            t = clock()
            try:
                step(r)
            finally:
                dt = clock() - t
                rec.calls += 1
                rec.ns += dt
                if trace:
                    self._event(rec, t, dt)
        timed.where = (bi, ii)
        return timed

    def wrap_region(self, fcode, bi: int, region, runner, fused):
        label = f"region[{region.start}:{region.end}] {region.kind}"
        rec = self._record(fcode, bi, region.start, label, "compiled")
        clock, trace = time.perf_counter_ns, self.trace

        def timed(r):
            before = getattr(runner, "fallbacks", 0)
            compiled_before = _compile_ns(runner)
            t = clock()
            try:
                fused(r)
            finally:
                dt = clock() - t
                compiled = _compile_ns(runner) - compiled_before
                rec.device = getattr(runner, "last_device", "cpu")
                rec.calls += 1
                if rec.calls == 1:
                    rec.first_ns = dt - compiled
                else:
                    rec.ns += dt - compiled
                rec.compile_ns += compiled
                rec.fallbacks += getattr(runner, "fallbacks", 0) - before
                if trace:
                    if compiled:     # a compile span of its own, on the compiler's track
                        self._span("compile " + rec.label, "compile", 2, t, compiled, rec)
                    self._event(rec, t + compiled, dt - compiled)
        timed.where = fused.where
        return timed

    # -- reports ----------------------------------------------------------------------------

    @staticmethod
    def region_lines(vm) -> list[str]:
        """One readable line per compiled region: its kernel, variants (compile time, and
        whether from the disk cache), calls, fallbacks and the last fallback's reason."""
        out = []
        for fname, block, region, runner in getattr(vm, "runners", []):
            info = runner.describe() if hasattr(runner, "describe") else {}
            variants = info.get("variants", [])
            vtext = ", ".join(f"{v.get('compile_ms', 0):.1f} ms from {v.get('source', '?')}"
                              for v in variants) or "none"
            line = (f"@{fname} {block} [{region.start}:{region.end}] {region.kind}: kernel "
                    f"{info.get('kernel', '?')}, {len(variants)} variant"
                    f"{'s' if len(variants) != 1 else ''} ({vtext}), "
                    f"{info.get('compiled_calls', 0)}/{info.get('calls', 0)} calls compiled, "
                    f"{info.get('threads', 1)} thread{'s' if info.get('threads', 1) != 1 else ''}")
            if info.get("fallbacks"):
                line += f"; {info['fallbacks']} fell back: {info.get('last_fallback_reason')}"
            errors = info.get("compile_errors") or []
            if errors:
                line += f"; compile failed: {errors[0]}"
            out.append(line)
        return out

    def table(self, vm=None) -> str:
        # steps a tier-up replaced before they ever ran have no calls: not worth a row
        def steady_ns(r: Record) -> int:      # the first call counts when it is the only one
            return r.ns if r.first_ns and r.calls > 1 else r.ns + r.first_ns
        rows = sorted((r for r in self.records.values() if r.calls), key=lambda r: -steady_ns(r))
        total = sum(steady_ns(r) for r in rows) or 1
        out = ["time of each instruction and compiled region; a region's first call (kernel "
               "set-up: loading, packing constant weights) and its compiles are apart",
               f"{'function':<12} {'block':<10} {'#':>3} {'op / region':<28} {'mode':<12} "
               f"{'device':<6} {'calls':>8} {'total ms':>10} {'us/call':>9} {'%':>6} "
               f"{'first ms':>9} {'compile ms':>10}"]
        for r in rows:
            steady = r.calls - 1 if r.first_ns and r.calls > 1 else r.calls
            ns = steady_ns(r)
            first = f"{r.first_ns / 1e6:>9.3f}" if r.kind == "compiled" else f"{'':>9}"
            comp = f"{r.compile_ns / 1e6:>10.1f}" if r.compile_ns else f"{'':>10}"
            out.append(f"@{r.func:<11} {r.block:<10} {r.index:>3} {r.label:<28.28} {r.kind:<12} "
                       f"{r.device:<6} {r.calls:>8} {ns / 1e6:>10.3f} "
                       f"{(ns / max(steady, 1)) / 1e3:>9.2f} "
                       f"{100 * ns / total:>5.1f}% {first} {comp}"
                       + (f"  ({r.fallbacks} fell back)" if r.fallbacks else ""))
        if vm is not None:       # compiles that failed: those regions stay interpreted
            failed = list(getattr(vm, "jit_errors", []))
            for func, label, region, runner in getattr(vm, "runners", []):
                for err in sorted(set(getattr(runner, "compile_errors", {}).values())):
                    failed.append(f"@{func} block {label} [{region.start}, {region.end}): {err}")
            if failed:
                out.append("")
                out.append("interpreted after a JIT failure:")
                out.extend("  " + f for f in failed)
        if vm is not None and getattr(vm, "scheduler", None) is not None:
            out.append("")
            out.extend(placement_report(vm.scheduler))
        if vm is not None:
            out.append("")
            out.append(f"{'function':<12} {'block':<10} {'runs':>8} {'back-edges':>10}")
            for name, code in vm._codes.items():
                for b in code.blocks:
                    out.append(f"@{name:<11} {b.label:<10} {b.count:>8} {b.back_edges:>10}")
        return "\n".join(out)

    def write_trace(self, path: str) -> None:
        doc = {"traceEvents": [
            {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "dlvm"}},
            {"name": "thread_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "interpreter"}},
            {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "jit"}},
            *self.events], "displayTimeUnit": "ms"}
        with open(path, "w") as f:
            json.dump(doc, f)
