"""Progress of JIT compiles while a run waits for them (`dlvm run --jit always` with a cold
code cache can compile for seconds): a line on stderr that counts compiled kernels, redrawn on a
terminal, and a summary when compiling took long."""
from __future__ import annotations

import os
import sys
import threading
import time

SHOW_AFTER_S = 1.0       # quick runs print nothing


def _compiled(vm) -> tuple[int, float]:
    """Kernels compiled (or loaded from the cache) so far, and the time that took."""
    n, ms = 0, 0.0
    for _, _, _, runner in list(getattr(vm, "runners", [])):
        for c in list(getattr(runner, "variants", {}).values()):
            n += 1
            ms += getattr(c, "compile_ms", 0.0)
    return n, ms


class CompileProgress:
    """Use as a context manager around the runs of `vm`."""

    def __init__(self, vm, stream=None, enabled: bool | None = None):
        self.vm = vm
        self.out = stream or sys.stderr
        live = hasattr(self.out, "isatty") and self.out.isatty()
        self.live = live or os.environ.get("DLVM_PROGRESS") == "1"
        self.enabled = self.live if enabled is None else enabled
        self._stop = threading.Event()
        self._shown = False

    def __enter__(self) -> CompileProgress:
        self.t0 = time.perf_counter()
        if self.enabled:
            self._thread = threading.Thread(target=self._watch, daemon=True)
            self._thread.start()
        return self

    def _watch(self) -> None:
        if self._stop.wait(SHOW_AFTER_S):
            return
        while not self._stop.is_set():
            n, ms = _compiled(self.vm)
            self.out.write(f"\rcompiling: {n} kernel{'s' if n != 1 else ''} ready, "
                           f"{time.perf_counter() - self.t0:.1f} s")
            self.out.flush()
            self._shown = True
            self._stop.wait(0.25)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self.enabled:
            self._thread.join()
        if self._shown:
            n, ms = _compiled(self.vm)
            self.out.write(f"\rcompiled {n} kernel{'s' if n != 1 else ''} in {ms / 1e3:.1f} s "
                           f"(the code cache keeps them for the next run)\n")
            self.out.flush()
