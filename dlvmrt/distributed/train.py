"""Data-parallel training on Ray: N workers, one shard of each global batch apiece.

Every worker holds the same weights and optimizer state and one VM running the generated
train step's two halves (isa.training: the gradient function and the update function). For a
global batch it computes the gradient of the mean loss over its shard, the gradients are summed
with an allreduce from Ray's collective library (the gloo backend; tensors cross as zero-copy
torch views of the NumPy arrays), divided by the number of workers, and every worker applies the
same update. With equal shards that is the gradient of the mean loss over the global batch, so
K steps give the single-process result on the same global batches (within the summation-order
tolerance of specs/distributed.md).
"""
from __future__ import annotations

import uuid
from collections.abc import Sequence

import numpy as np

from isa.bytecode import decode, encode
from isa.module import Module
from isa.training import SGD, Adam, build_train_step

from .ray_backend import RayUnavailable, connect


class _Worker:
    """One data-parallel worker (a Ray actor)."""

    def __init__(self, code: bytes, gradient: str, update: str, weights, state, jit):
        from dlvmrt.vm import VM
        self.vm = VM(decode(code), jit=jit)
        self.gradient, self.update = gradient, update
        self.weights = [np.array(w) for w in weights]
        self.state = [np.array(s) for s in state]

    def join(self, world: int, rank: int, group: str) -> int:
        import ray.util.collective as col
        col.init_collective_group(world, rank, backend="gloo", group_name=group)
        self.group, self.world = group, world
        return rank

    def step(self, lr: float, *batch: np.ndarray) -> float:
        import ray.util.collective as col
        import torch
        out = self.vm.run(self.gradient, *batch, *self.weights)
        loss = np.array([out[0]], dtype=np.float64)
        grads = [np.array(g) for g in out[1:]]
        for g in grads:       # in place, through a torch view of the same memory
            col.allreduce(torch.from_numpy(g), group_name=self.group)
            g /= self.world
        col.allreduce(torch.from_numpy(loss), group_name=self.group)
        n_w = len(self.weights)
        lr_arr = np.asarray(lr, dtype=self.weights[0].dtype)
        res = self.vm.run(self.update, *self.weights, *self.state, lr_arr, *grads)
        self.weights, self.state = list(res[:n_w]), list(res[n_w:])
        return float(loss[0]) / self.world

    def get_weights(self) -> list[np.ndarray]:
        return self.weights


class DataParallelTrainer:
    """`Trainer`'s step and fit, with each global batch split across `workers` Ray actors."""

    def __init__(self, module: Module, workers: int = 2, model: str = "main",
                 weights: Sequence[str] | None = None, loss: str = "cross_entropy",
                 optimizer: SGD | Adam | None = None, lr: float = 0.01, jit: str | None = None,
                 address: str = "auto", cpus_per_worker: float = 1):
        if workers < 1:
            raise ValueError("workers must be at least 1")
        ray = connect(address)
        try:
            import ray.util.collective as col
            import torch  # noqa: F401 - the gloo backend's tensors
        except ImportError as e:
            raise RayUnavailable(f"data-parallel training needs Ray's collective library and "
                                 f"torch (for its gloo backend): {e}") from None
        if not col.gloo_available():
            raise RayUnavailable("Ray's collective library has no gloo backend here")
        self.step_fn = build_train_step(module, model, weights, loss, optimizer)
        self.source, self.lr, self.workers = module, lr, workers
        init = [np.array(module.constants[w].value) for w in self.step_fn.weights]
        state = [np.zeros(t.shape, dtype=t.dtype.np) for t in self.step_fn.state_types]
        code = ray.put(encode(self.step_fn.module))
        actor = ray.remote(num_cpus=cpus_per_worker)(_Worker)
        self.actors = [actor.remote(code, self.step_fn.gradient, self.step_fn.update, init, state,
                                    jit) for _ in range(workers)]
        group = f"dlvm-dp-{uuid.uuid4().hex[:8]}"
        ray.get([a.join.remote(workers, r, group) for r, a in enumerate(self.actors)])
        self._ray = ray
        self.steps = 0

    def step(self, *batch: np.ndarray) -> float:
        """One step on a global batch (the model's inputs, then the labels), split evenly."""
        n = len(batch[-1])
        if n % self.workers:
            raise ValueError(f"a global batch of {n} does not split evenly across "
                             f"{self.workers} workers")
        k = n // self.workers
        calls = [a.step.remote(self.lr, *[b[r * k:(r + 1) * k] for b in batch])
                 for r, a in enumerate(self.actors)]
        losses = self._ray.get(calls)
        self.steps += 1
        return float(losses[0])

    def fit(self, inputs, labels: np.ndarray, epochs: int = 1, batch_size: int = 64,
            shuffle: bool = True, seed: int = 0) -> list[float]:
        xs = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
        rng = np.random.default_rng(seed)
        steps = max(len(labels) // batch_size, 1)
        history = []
        for _ in range(epochs):
            order = rng.permutation(len(labels)) if shuffle else np.arange(len(labels))
            total = 0.0
            for s in range(steps):
                idx = order[s * batch_size:(s + 1) * batch_size]
                total += self.step(*[x[idx] for x in xs], labels[idx])
            history.append(total / steps)
        return history

    @property
    def weights(self) -> list[np.ndarray]:
        return self._ray.get(self.actors[0].get_weights.remote())

    def shutdown(self) -> None:
        for a in self.actors:
            self._ray.kill(a)
        self.actors = []
