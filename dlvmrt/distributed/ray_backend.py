"""Shards on a Ray actor pool, through Ray Data.

The program goes into Ray's object store once, as bytecode; every actor decodes it, verifies it
and keeps one VM with the tiered JIT (and the on-disk kernel cache, so that a node compiles each
kernel once). One shard is one task. Actors are restarted and their tasks retried when a worker
dies, and outputs are written atomically by the task itself, so a retried shard is written once.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from .runner import ShardResult, ShardRunner


class RayUnavailable(Exception):
    """The ray extra is not installed, or the cluster cannot be reached."""


def require_ray():
    try:
        import ray
        import ray.data  # noqa: F401 - the predictor and `dlvm batch` both use Ray Data
    except ImportError as e:
        raise RayUnavailable(f"running on Ray needs the ray extra (pip install 'dlvm[ray]'): {e}") \
            from None
    return ray


def connect(address: str = "auto"):
    """Join a Ray cluster: "auto" joins the one this machine belongs to (RAY_ADDRESS, or one
    started with `ray start`) and else starts a local one; anything else is a cluster address."""
    ray = require_ray()
    _quiet_ray_data(ray)
    if ray.is_initialized():
        return ray
    quiet = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
    if address == "auto":
        try:
            ray.init(address="auto", **quiet)
        except (ConnectionError, RuntimeError):
            ray.init(**quiet)
    else:
        try:
            ray.init(address=address, **quiet)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise RayUnavailable(f"cannot join the Ray cluster at {address}: {e}") from None
    return ray


def assigned_cpus() -> int:
    """The CPUs Ray gave this worker: its JIT's thread count, so actors do not oversubscribe."""
    import ray
    cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1)
    return max(int(cpus), 1)


def _quiet_ray_data(ray) -> None:
    """dlvm prints its own progress, a line per shard: no Ray Data progress bars and INFO logs."""
    import logging
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)


class _ShardActor:
    """A Ray Data map worker: one VM, built from the bytecode in the object store."""

    def __init__(self, program_ref: list, entry: str, jit: str | None, batch_size: int | None):
        import ray
        self.runner = ShardRunner(ray.get(program_ref[0]), entry, jit, batch_size,
                                  threads=assigned_cpus())

    def __call__(self, batch: dict) -> dict:
        import numpy as np
        results = [self.runner.process(Path(str(s)), Path(str(t)))
                   for s, t in zip(batch["shard"], batch["target"])]
        return {
            "shard": np.array([r.shard for r in results]),
            "status": np.array([r.status for r in results]),
            "samples": np.array([r.samples for r in results], dtype=np.int64),
            "seconds": np.array([r.seconds for r in results], dtype=np.float64),
            "error": np.array([r.error for r in results]),
            "worker": np.array([r.worker for r in results], dtype=np.int64),
        }


def run_on_ray(code: bytes, todo: list[tuple[Path, Path]], *, entry: str, jit: str | None,
               batch_size: int | None, address: str, actors: int,
               cpus_per_actor: float = 1) -> Iterator[ShardResult]:
    """Process `todo` (shard, output) pairs on `actors` Ray actors; yields results as they end."""
    if not todo:
        return
    ray = connect(address)
    program_ref = ray.put(code)
    items = [{"shard": str(s), "target": str(t)} for s, t in todo]
    dataset = ray.data.from_items(items, override_num_blocks=len(items))
    mapped = dataset.map_batches(
        _ShardActor, batch_size=1, compute=ray.data.ActorPoolStrategy(size=max(actors, 1)),
        batch_format="numpy", num_cpus=cpus_per_actor,
        fn_constructor_kwargs=dict(program_ref=[program_ref], entry=entry, jit=jit,
                                   batch_size=batch_size))
    # Ray Data starts a killed worker's actor again and retries its shard (its actors default to
    # max_restarts=-1, max_task_retries=-1); outputs are written atomically, so a retried shard
    # is neither lost nor written twice.
    for row in mapped.iter_rows():
        yield ShardResult(str(row["shard"]), str(row["status"]), int(row["samples"]),
                          float(row["seconds"]), str(row["error"]), int(row["worker"]))
