"""One shard through one VM: the unit of work of `dlvm batch`, in-process and on Ray alike."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from isa.errors import DlvmError

from .shards import ShardError, read_shard, write_outputs


@dataclass
class ShardResult:
    """What became of one shard: `status` is "written", "skipped" or "failed" (with `error`)."""
    shard: str
    status: str
    samples: int = 0
    seconds: float = 0.0
    error: str = ""
    worker: int = 0         # the process that ran it (tests kill workers by it)


class ShardRunner:
    """Keeps one VM (and so its compiled kernels) for every shard it is given.

    `batch_size` splits a shard along its sample axis into calls of at most that many samples
    (None: the whole shard in one call); the results are concatenated back along that axis.
    `threads` caps the JIT's threads (a Ray actor takes the CPUs Ray gave it, not the node's).
    """

    def __init__(self, program, entry: str = "main", jit: str | None = None,
                 batch_size: int | None = None, threads: int | None = None):
        import dlvmrt
        self.vm = dlvmrt.VM(program, jit=jit,
                            jit_options={"threads": threads} if threads else None)
        func = self.vm.module.functions.get(entry)
        if func is None:
            known = ", ".join("@" + f for f in self.vm.module.functions)
            raise ShardError(f"the program has no function @{entry} (it has: {known})")
        self.entry = entry
        self.params = [(p.name, p.type.dtype.np) for p in func.params]
        self.n_results = len(func.results)
        self.batch_size = batch_size

    def run_arrays(self, arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The entry's results for a batch of samples, called `batch_size` samples at a time."""
        n = next(iter(arrays.values())).shape[0] if arrays else 0
        step = self.batch_size or max(n, 1)
        if step >= n:
            return list(self.vm.run(self.entry, **arrays))
        parts = [self.vm.run(self.entry, **{k: v[i:i + step] for k, v in arrays.items()})
                 for i in range(0, n, step)]
        outputs = []
        for j in range(self.n_results):
            pieces = [p[j] for p in parts]
            if any(piece.ndim == 0 for piece in pieces):
                raise ShardError(f"result {j} of @{self.entry} is a scalar: it has no sample axis "
                                 "to concatenate, so run without --batch-size")
            outputs.append(np.concatenate(pieces, axis=0))
        return outputs

    def process(self, shard: Path, out: Path) -> ShardResult:
        """Read `shard`, run it, write `out` atomically; errors come back in the result."""
        import os
        start = time.perf_counter()
        try:
            arrays = read_shard(shard, self.params)
            samples = next(iter(arrays.values())).shape[0] if arrays else 0
            write_outputs(out, self.run_arrays(arrays))
        except (ShardError, DlvmError) as e:
            message = e.format() if isinstance(e, DlvmError) else str(e)
            return ShardResult(shard.name, "failed", error=message, worker=os.getpid(),
                               seconds=time.perf_counter() - start)
        except OSError as e:
            return ShardResult(shard.name, "failed", error=f"cannot write {out}: {e}",
                               worker=os.getpid(), seconds=time.perf_counter() - start)
        return ShardResult(shard.name, "written", samples, time.perf_counter() - start,
                           worker=os.getpid())
