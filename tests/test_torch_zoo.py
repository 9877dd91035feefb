"""Every model of the zoo (bench/zoo_models.py, zoo_more.py, zoo_probe.py, zoo_probe2.py,
zoo_probe3.py, zoo_probe4.py, zoo_probe5.py, zoo_probe6.py, zoo_probe7.py, zoo_probe8.py)
through the torch frontend as a new user would take it: imported from torch.export with a
dynamic batch and run at two batch sizes, and compiled with `torch.compile(backend="dlvm")`
(no fallback to torch), each against torch eager. Tolerances: specs/tolerances.md (torch
frontend, whole models)."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import zoo_models as zm  # noqa: E402
from zoo_more import MORE  # noqa: E402
from zoo_probe import PROBE  # noqa: E402
from zoo_probe2 import PROBE2  # noqa: E402
from zoo_probe3 import PROBE3  # noqa: E402
from zoo_probe4 import PROBE4  # noqa: E402
from zoo_probe5 import PROBE5  # noqa: E402
from zoo_probe6 import PROBE6  # noqa: E402
from zoo_probe7 import PROBE7  # noqa: E402
from zoo_probe8 import PROBE8  # noqa: E402

import dlvmrt  # noqa: E402
from frontends.torch import import_torch  # noqa: E402

EVERY = {**zm.ZOO, **MORE, **PROBE, **PROBE2, **PROBE3, **PROBE4, **PROBE5, **PROBE6, **PROBE7,
         **PROBE8}
RTOL, ATOL = 1e-3, 1e-4
# the backend's cases in the default run, one or two per kind (the rest run with the slow tests)
BACKEND_FAST = {"small_cnn", "lstm", "encoder_small_post", "mixer", "style", "bigru", "llama_block",
                "swin_block", "gat", "seq2seq_attn", "perceiver", "unet3d"}
# the exports in the default run: one zoo model per kind (the backend's cases above add more);
# the rest (1-40 s each) run with the slow tests, as CI's time asks, and the ONNX path checks
# them
EXPORT_FAST = {"small_cnn", "resnet18", "mobilenet", "mlp", "lstm", "encoder_small_post", "vit"}


def _build(name):
    model = EVERY[name]
    try:
        net = model.build("small")
    except ImportError as e:          # MiniLM's packaged weights (the zoo extra)
        pytest.skip(str(e))
    return model, net


def _feeds(model, batch, seed):
    return model.inputs(batch, "small", seed=seed)


def _close(got, want):
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w.detach().numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name", [pytest.param(n, marks=[] if n in EXPORT_FAST else [pytest.mark.slow])
                                  for n in EVERY])
def test_export_dynamic_batch_matches_eager(name):
    model, net = _build(name)
    feeds = _feeds(model, 2, 0)
    args = tuple(torch.from_numpy(v) for v in feeds.values())
    batch = torch.export.Dim("batch", min=1, max=64)
    vm = dlvmrt.VM(import_torch(net, args, dynamic_shapes=tuple({0: batch} for _ in args)))
    for b, seed in ((2, 0), (3, 3)):
        feeds = _feeds(model, b, seed)
        with torch.no_grad():
            want = net(*[torch.from_numpy(v) for v in feeds.values()])
        _close(vm.run("main", *feeds.values()), want)


@pytest.mark.parametrize("name", [n if n in BACKEND_FAST else pytest.param(n, marks=pytest.mark.slow)
                                  for n in EVERY])
def test_compile_backend_matches_eager(name, monkeypatch):
    from frontends.torch.backend import dlvm_backend
    monkeypatch.setenv("DLVM_TORCH_STRICT", "1")
    model, net = _build(name)
    torch._dynamo.reset()
    c = torch.compile(net, backend=dlvm_backend)
    with torch.no_grad():
        for b, seed in ((2, 0), (3, 3)):
            args = [torch.from_numpy(v) for v in _feeds(model, b, seed).values()]
            got = c(*args)
            got = got if isinstance(got, tuple) else (got,)
            _close([t.numpy() for t in got], net(*args))
