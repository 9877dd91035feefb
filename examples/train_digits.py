"""Train an MLP and a small CNN on scikit-learn's digits (8x8 images, bundled: no download),
entirely in the dlvm VM: the models are dlvm modules built with the Python builder, the loss,
the gradient (reverse-mode autodiff of the model) and the optimizer are dlvm code, and the VM
runs the training step with its tiered JIT.

    pip install -e '.[train]'            # scikit-learn, for the dataset
    python examples/train_digits.py      # both models; --model mlp|cnn, --epochs N
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from dlvmrt.training import Trainer
from isa.builder import ModuleBuilder
from isa.module import Module
from isa.training import Adam


def digits(seed: int = 0, test_share: float = 0.2):
    """(x_train, y_train, x_test, y_test): images scaled to [0, 1] as f32 [N, 1, 8, 8]."""
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    y = d.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    x, y = x[order], y[order]
    cut = int(len(y) * (1 - test_share))
    return x[:cut], y[:cut], x[cut:], y[cut:]


def _uniform(rng, shape, fan_in: int) -> np.ndarray:
    """PyTorch's default initialization of Linear and Conv2d: U(-1/sqrt(fan_in), ...)."""
    bound = 1 / np.sqrt(fan_in)
    return rng.uniform(-bound, bound, shape).astype(np.float32)


def mlp(seed: int = 0, sizes=(64, 256, 256, 10)) -> Module:
    """64-256-256-10 with ReLU; input f32[N, 64]."""
    rng = np.random.default_rng(seed)
    mb = ModuleBuilder("mlp")
    f = mb.function("main", [("x", f"f32[N, {sizes[0]}]")], [f"f32[N, {sizes[-1]}]"])
    h = f.arg("x")
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        w = mb.constant(f"w{i}", _uniform(rng, (a, b), a))
        bias = mb.constant(f"b{i}", _uniform(rng, (b,), a))
        h = f.add(f.matmul(h, w), bias)
        if i < len(sizes) - 2:
            h = f.relu(h)
    f.ret(h)
    return mb.finish()


def cnn(seed: int = 0) -> Module:
    """conv 3x3 (16) - relu - maxpool 2 - conv 3x3 (32) - relu - maxpool 2 - linear (10);
    input f32[N, 1, 8, 8]."""
    rng = np.random.default_rng(seed)
    mb = ModuleBuilder("cnn")
    c1 = mb.constant("conv1_w", _uniform(rng, (16, 1, 3, 3), 9))
    b1 = mb.constant("conv1_b", _uniform(rng, (16,), 9))
    c2 = mb.constant("conv2_w", _uniform(rng, (32, 16, 3, 3), 144))
    b2 = mb.constant("conv2_b", _uniform(rng, (32,), 144))
    fw = mb.constant("fc_w", _uniform(rng, (128, 10), 128))
    fb = mb.constant("fc_b", _uniform(rng, (10,), 128))
    f = mb.function("main", [("x", "f32[N, 1, 8, 8]")], ["f32[N, 10]"])
    h = f.relu(f.conv2d(f.arg("x"), c1, b1, pads=[1, 1, 1, 1]))
    h = f.maxpool2d(h, kernel=[2, 2], strides=[2, 2])
    h = f.relu(f.conv2d(h, c2, b2, pads=[1, 1, 1, 1]))
    h = f.maxpool2d(h, kernel=[2, 2], strides=[2, 2])
    h = f.reshape(h, shape=[-1, 128])
    f.ret(f.add(f.matmul(h, fw), fb))
    return mb.finish()


def pytorch_model(name: str, module: Module):
    """The same network in PyTorch with the dlvm module's weights (for comparisons: the tests
    check the loss curves agree, bench/train.py times both)."""
    import torch
    nn = torch.nn
    c = {k: torch.tensor(v.value) for k, v in module.constants.items()}
    if name == "mlp":
        net = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                            nn.Linear(256, 10))
        for i, layer in enumerate([net[0], net[2], net[4]]):
            layer.weight.data = c[f"w{i}"].T.contiguous()
            layer.bias.data = c[f"b{i}"]
        return net
    net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(128, 10))
    net[0].weight.data, net[0].bias.data = c["conv1_w"], c["conv1_b"]
    net[3].weight.data, net[3].bias.data = c["conv2_w"], c["conv2_b"]
    net[7].weight.data, net[7].bias.data = c["fc_w"].T.contiguous(), c["fc_b"]
    return net


MODELS = {"mlp": (mlp, 20, 1e-3), "cnn": (cnn, 30, 2e-3)}   # builder, epochs, learning rate


def train(name: str, epochs: int | None = None, seed: int = 0, progress: bool = True,
          jit: str | None = None) -> tuple[Trainer, list[float], float]:
    build, default_epochs, lr = MODELS[name]
    xtr, ytr, xte, yte = digits(seed)
    if name == "mlp":
        xtr, xte = xtr.reshape(len(xtr), -1), xte.reshape(len(xte), -1)
    trainer = Trainer(build(seed), loss="cross_entropy", optimizer=Adam(), lr=lr, jit=jit)
    history = trainer.fit(xtr, ytr, epochs=epochs or default_epochs, batch_size=64, seed=seed,
                          progress=progress)
    return trainer, history, trainer.evaluate(xte, yte)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=[*MODELS, "both"], default="both")
    p.add_argument("--epochs", type=int, help="default: 20 for the MLP, 30 for the CNN")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    for name in MODELS if a.model == "both" else [a.model]:
        print(f"{name}:")
        t0 = time.perf_counter()
        trainer, history, accuracy = train(name, a.epochs, a.seed)
        took = time.perf_counter() - t0
        print("  loss per epoch: " + " ".join(f"{v:.4f}" for v in history))
        print(f"  test accuracy {accuracy:.2%} after {trainer.steps} steps in {took:.1f} s")


if __name__ == "__main__":
    main()
