"""The torch.compile backend freezes an inference graph's parameters and buffers into constants
(frontends/torch/backend.py: _Frozen), and follows the model when they change."""
from __future__ import annotations

import gc

import pytest

torch = pytest.importorskip("torch")

from frontends.torch import backend  # noqa: E402

# the backend as a function, not by the name "dlvm": the name resolves only through the entry
# point of an installed dlvm (a checkout on sys.path has none; test_torch_import tests the name)
DLVM = backend.dlvm_backend


def model():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8),
                            torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 8, 5))
    with torch.no_grad():
        m[1].running_mean.uniform_(-1, 1)
        m[1].running_var.uniform_(0.5, 2)
    return m.eval()


def test_frozen_inference_matches_eager_and_follows_weight_changes():
    torch._dynamo.reset()
    gc.collect()
    m = model()
    c = torch.compile(m, backend=DLVM)
    x = torch.randn(4, 3, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(c(x), m(x), atol=1e-4, rtol=1e-4)
        frozen = [r for r in backend.RUNNERS if isinstance(r, backend._Frozen)]
        assert frozen, "an inference graph is frozen"
        # the parameters and buffers are constants: the module takes the image only
        assert all(len(f.module.functions["main"].params) == 1 for f in frozen)
        m.load_state_dict({k: v * 1.5 for k, v in m.state_dict().items()
                           if v.dtype.is_floating_point}, strict=False)
        torch.testing.assert_close(c(x), m(x), atol=1e-4, rtol=1e-4)
        m[4].weight.add_(1.0)                                  # an in-place write
        torch.testing.assert_close(c(x), m(x), atol=1e-4, rtol=1e-4)
        m[4].weight = torch.nn.Parameter(torch.randn(5, 512))  # a new parameter object
        torch.testing.assert_close(c(x), m(x), atol=1e-4, rtol=1e-4)
        x7 = torch.randn(7, 3, 8, 8)
        torch.testing.assert_close(c(x7), m(x7), atol=1e-4, rtol=1e-4)


def test_weights_that_keep_changing_are_read_as_inputs():
    torch._dynamo.reset()
    gc.collect()
    m = model()
    c = torch.compile(m, backend=DLVM)
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        for _ in range(backend._Frozen.MAX_REFREEZES + 2):
            m[0].weight.mul_(0.9)
            torch.testing.assert_close(c(x), m(x), atol=1e-4, rtol=1e-4)
        frozen = [r for r in backend.RUNNERS if isinstance(r, backend._Frozen)]
        assert any(f.seen is None for f in frozen)            # unfrozen now
        m[0].weight.mul_(0.9)
        torch.testing.assert_close(c(x), m(x), atol=1e-4, rtol=1e-4)


def test_training_graphs_are_not_frozen():
    torch._dynamo.reset()
    m = model().train()
    c = torch.compile(m, backend=DLVM)
    x = torch.randn(4, 3, 8, 8)
    y = c(x)
    assert y.requires_grad
    y.sum().backward()
    assert m[0].weight.grad is not None
