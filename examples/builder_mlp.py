"""A framework emitting dlvm: a tiny Python "framework" that records a two-layer perceptron with
the builder API, saves it as bytecode, loads it back and runs it.

    .venv/bin/python examples/builder_mlp.py [OUT.dlbc]

This is what a frontend does: it walks its own model description and calls one builder method
per op (`f.matmul`, `f.add`, `f.relu`, `f.softmax` ... every op of the op table is a method);
`mb.finish()` verifies the module, `isa.bytecode.encode` serializes it, and `dlvmrt` runs it.
"""
from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import dlvmrt  # noqa: E402
from isa.builder import ModuleBuilder  # noqa: E402
from isa.bytecode import encode  # noqa: E402
from isa.module import Module  # noqa: E402


@dataclass
class Dense:
    """A framework-side layer: weights in NumPy, an activation by name."""
    w: np.ndarray
    b: np.ndarray
    activation: str | None = None


def emit_mlp(layers: list[Dense], n_in: int) -> Module:
    mb = ModuleBuilder("mlp")
    n_out = layers[-1].w.shape[1]
    # N is a named dim: any batch size binds it when main is called
    f = mb.function("main", [("x", f"f32[N, {n_in}]")], [f"f32[N, {n_out}]"])
    h = f.arg("x")
    for i, layer in enumerate(layers):
        w = mb.constant(f"w{i}", layer.w)          # weights become module constants
        b = mb.constant(f"b{i}", layer.b)
        h = f.add(f.matmul(h, w), b)               # NumPy broadcasting adds the bias per row
        if layer.activation == "relu":
            h = f.relu(h)
        elif layer.activation == "gelu":
            h = f.gelu(h, approximate="tanh")      # attributes are keyword arguments
    f.ret(f.softmax(h, axis=-1))
    return mb.finish()                             # verified: raises InvalidError otherwise


def reference(layers: list[Dense], x: np.ndarray) -> np.ndarray:
    for layer in layers:
        x = x @ layer.w + layer.b
        if layer.activation == "relu":
            x = np.maximum(x, 0)
        elif layer.activation == "gelu":
            x = 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def main(argv: list[str]) -> int:
    rng = np.random.default_rng(0)
    layers = [Dense(rng.standard_normal((4, 16)).astype(np.float32) * 0.5,
                    np.zeros(16, np.float32), "gelu"),
              Dense(rng.standard_normal((16, 3)).astype(np.float32) * 0.5,
                    np.full(3, 0.1, np.float32))]
    module = emit_mlp(layers, 4)
    out = argv[0] if argv else os.path.join(tempfile.mkdtemp(), "mlp.dlbc")
    with open(out, "wb") as fh:
        fh.write(encode(module))
    vm = dlvmrt.VM(dlvmrt.load(out))               # loading re-verifies the untrusted bytes
    x = rng.standard_normal((5, 4)).astype(np.float32)
    (y,) = vm.run("main", x)
    np.testing.assert_allclose(y, reference(layers, x), rtol=1e-5, atol=1e-6)
    print(f"wrote {out} ({os.path.getsize(out)} bytes); main(x[5, 4]) -> {y.shape}, rows sum to "
          f"{np.round(y.sum(-1), 6).tolist()}; matches NumPy")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
