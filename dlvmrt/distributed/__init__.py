"""dlvm beyond one call: batch inference over shards and datasets, in-process or on Ray.

- `run_batch(program, inputs, out_dir, ray=None|"auto"|ADDRESS, actors=N)`: what `dlvm batch`
  runs (one output shard per input shard, atomic writes, resumable).
- `predict(dataset, program, actors=N)`: a Ray Dataset scored with `map_batches` on an actor pool.
- `connect(address)`: join or start a Ray cluster.
- `DataParallelTrainer(module, workers=N, ...)`: training with each global batch split across
  N Ray workers, gradients averaged by an allreduce (Ray's collective library, gloo).

Ray is an optional extra (`pip install 'dlvm[ray]'`); everything but the Ray backend works
without it. See specs/distributed.md.
"""
from .batch import BatchReport, print_progress, program_bytes, run_batch
from .predictor import Predictor, predict
from .ray_backend import RayUnavailable, connect
from .runner import ShardResult, ShardRunner
from .shards import ShardError, expand_inputs, is_complete, output_path, read_shard, write_outputs
from .train import DataParallelTrainer

__all__ = ["BatchReport", "DataParallelTrainer", "Predictor", "RayUnavailable", "ShardError", "ShardResult",
           "ShardRunner", "connect", "expand_inputs", "is_complete", "output_path", "predict",
           "print_progress", "program_bytes", "read_shard", "run_batch", "write_outputs"]
