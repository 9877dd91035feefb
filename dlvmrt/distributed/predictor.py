"""Batch inference over a Ray Dataset: `dataset.map_batches` with a dlvm program on an actor pool.

    import ray, dlvmrt.distributed as dd
    ds = ray.data.read_parquet("s3://bucket/features/")      # a column per parameter
    scored = dd.predict(ds, "model.dlbc", actors=4, batch_size=256, keep=["id"])
    scored.write_parquet("s3://bucket/scores/")

Each actor decodes the bytecode from the object store once and keeps one VM with the tiered JIT
for every batch it is handed.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class Predictor:
    """A Ray Data map worker: batches in (a column per parameter), `out0`, `out1`, ... out."""

    def __init__(self, program, entry: str = "main", jit: str | None = None,
                 keep: Sequence[str] = ()):
        import dlvmrt
        if isinstance(program, list):       # [ObjectRef]: the bytecode in the object store
            import ray
            program = ray.get(program[0])
            from .ray_backend import assigned_cpus
            threads = assigned_cpus()
        else:
            threads = None
        self.vm = dlvmrt.VM(program, jit=jit, jit_options={"threads": threads} if threads else None)
        func = self.vm.module.functions.get(entry)
        if func is None:
            known = ", ".join("@" + f for f in self.vm.module.functions)
            raise ValueError(f"the program has no function @{entry} (it has: {known})")
        self.entry = entry
        self.params = [p.name for p in func.params]
        self.keep = list(keep)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        missing = [p for p in self.params if p not in batch]
        if missing:
            raise KeyError(f"the batch has no column {', '.join(missing)} for @{self.entry} "
                           f"(columns: {', '.join(batch)})")
        outs = self.vm.run(self.entry, **{p: np.ascontiguousarray(batch[p]) for p in self.params})
        result = {k: batch[k] for k in self.keep}
        result.update({f"out{i}": o for i, o in enumerate(outs)})
        return result


def predict(dataset, program, *, entry: str = "main", actors: int = 2,
            batch_size: int | None = 256, jit: str | None = None, keep: Sequence[str] = (),
            num_cpus: float = 1):
    """`dataset` scored by `entry` of `program` (a path, bytecode, Module or Program) on an actor
    pool of `actors`; returns a lazy Ray Dataset with the `keep` columns and `out0`, `out1`, ..."""
    from .batch import program_bytes
    from .ray_backend import require_ray
    ray = require_ray()
    ref = ray.put(program_bytes(program))
    return dataset.map_batches(
        Predictor, batch_size=batch_size, compute=ray.data.ActorPoolStrategy(size=max(actors, 1)),
        batch_format="numpy", num_cpus=num_cpus,
        fn_constructor_kwargs=dict(program=[ref], entry=entry, jit=jit, keep=list(keep)))
