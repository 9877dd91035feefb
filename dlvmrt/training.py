"""Training in the VM: a small Python API around a generated `train_step`.

    trainer = Trainer(module, loss="cross_entropy", optimizer=Adam(), lr=1e-3)
    history = trainer.fit(x, y, epochs=10, batch_size=64)
    trainer.evaluate(x_test, y_test)          # accuracy for a classifier, else the loss
    trained = trainer.module()                # the model with the trained weights as constants

The step function is dlvm code (isa.training.build_train_step); the trainer only keeps the
weights and optimizer state between calls, cuts batches and shows progress. One VM runs the step
with the tiered JIT, so the gradient and update code is compiled like any other.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from isa.module import Constant, Module
from isa.training import SGD, Adam, TrainStep, build_train_step

from .vm import VM


class Trainer:
    def __init__(self, module: Module, model: str = "main", weights: Sequence[str] | None = None,
                 loss: str = "cross_entropy", optimizer: SGD | Adam | None = None,
                 lr: float = 0.01, jit: str | None = None):
        self.step_fn: TrainStep = build_train_step(module, model, weights, loss, optimizer)
        self.source = module
        self.model_name = model
        self.loss = loss
        self.lr = lr
        self.vm = VM(self.step_fn.module, jit=jit)
        self.weights = [np.array(module.constants[w].value) for w in self.step_fn.weights]
        self.state = [np.zeros([d for d in t.shape], dtype=t.dtype.np)
                      for t in self.step_fn.state_types]
        self.steps = 0

    # -- one step, many steps ------------------------------------------------------------------
    def step(self, *batch: np.ndarray) -> float:
        """One optimizer step on one batch (the model's inputs, then the labels); the loss."""
        n_w, n_s = len(self.weights), len(self.state)
        lr = np.asarray(self.lr, dtype=self.weights[0].dtype)
        out = self.vm.run(self.step_fn.name, *self.weights, *self.state, lr, *batch)
        self.weights = list(out[:n_w])
        self.state = list(out[n_w:n_w + n_s])
        self.steps += 1
        return float(out[-1])

    def fit(self, inputs: np.ndarray | Sequence[np.ndarray], labels: np.ndarray, epochs: int = 1,
            batch_size: int = 32, shuffle: bool = True, seed: int = 0, progress: bool = True,
            out=None) -> list[float]:
        """Train for `epochs` over the data (the leading axis is the sample axis); the mean loss
        per epoch. The last partial batch is dropped so every step sees one batch shape."""
        xs = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
        n = len(labels)
        rng = np.random.default_rng(seed)
        out = out or sys.stderr
        history = []
        steps = max(n // batch_size, 1)
        live = progress and hasattr(out, "isatty") and out.isatty()   # redraw only on a terminal
        for epoch in range(epochs):
            order = rng.permutation(n) if shuffle else np.arange(n)
            total, t0 = 0.0, time.perf_counter()
            for s in range(steps):
                idx = order[s * batch_size:(s + 1) * batch_size]
                total += self.step(*[x[idx] for x in xs], labels[idx])
                if progress and (live or s + 1 == steps):
                    _bar(out, epoch + 1, epochs, s + 1, steps, total / (s + 1), t0, live)
            history.append(total / steps)
        return history

    # -- using the trained model ---------------------------------------------------------------
    def predict(self, *inputs: np.ndarray) -> np.ndarray:
        """The model's first output on `inputs`, with the current weights."""
        return self.vm.run(self.step_fn.model, *inputs, *self.weights)[0]

    def evaluate(self, inputs: np.ndarray | Sequence[np.ndarray], labels: np.ndarray,
                 batch_size: int = 256) -> float:
        """Accuracy (cross-entropy: the share of argmax hits) or the mean loss (mse)."""
        xs = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
        hits, total, n = 0.0, 0.0, len(labels)
        for s in range(0, n, batch_size):
            pred = self.predict(*[x[s:s + batch_size] for x in xs])
            y = labels[s:s + batch_size]
            if self.loss == "cross_entropy":
                hits += float(np.sum(np.argmax(pred, axis=-1) == y))
            else:
                total += float(np.sum((pred - y) ** 2))
        if self.loss == "cross_entropy":
            return hits / n
        return total / max(labels.size, 1)

    def module(self) -> Module:
        """The source module with the trained weights in place of the initial ones."""
        out = Module(self.source.name, dict(self.source.constants),
                     dict(self.source.functions), self.source.source)
        for name, value in zip(self.step_fn.weights, self.weights):
            c = self.source.constants[name]
            out.constants[name] = Constant(name, c.type, np.ascontiguousarray(value), c.loc)
        return out

    def describe(self) -> dict[str, Any]:
        return {"weights": self.step_fn.weights, "steps": self.steps,
                "parameters": int(sum(w.size for w in self.weights))}


def _bar(out, epoch: int, epochs: int, step: int, steps: int, loss: float, t0: float,
         live: bool) -> None:
    width = 24
    done = int(width * step / steps)
    rate = step / max(time.perf_counter() - t0, 1e-9)
    out.write(f"{chr(13) if live else ''}epoch {epoch}/{epochs} [{'#' * done}"
              f"{'.' * (width - done)}] {step}/{steps} loss {loss:.4f} ({rate:.0f} steps/s)"
              + ("\n" if step == steps else ""))
    out.flush()
