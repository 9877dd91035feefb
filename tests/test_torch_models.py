"""torchvision-, transformers- and RNN-style models through the torch importer and the
`torch.compile` backend, against torch eager; static and dynamic batch.
Tolerances: specs/tolerances.md (torch frontend)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch_models import MODELS  # noqa: E402

import dlvmrt  # noqa: E402
from frontends.torch import import_torch  # noqa: E402

RTOL, ATOL = 1e-3, 1e-4


def build(name):
    torch.manual_seed(0)
    make, inp = MODELS[name]
    m = make().eval()
    with torch.no_grad():      # non-trivial BatchNorm statistics
        for mod in m.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.2, 0.2)
                mod.running_var.uniform_(0.5, 1.5)
                mod.weight.uniform_(0.5, 1.5)
    return m, inp


def close(got, want):
    np.testing.assert_allclose(got, want.detach().numpy(), rtol=RTOL, atol=ATOL)


# the rest of the table runs with the slow tests (CI's default run has a time budget)
FAST = {"resnet18", "vit", "lstm"}       # (gpt2, 7 s, with the slow tests: CI's time)


@pytest.mark.parametrize("name", [n if n in FAST else pytest.param(n, marks=pytest.mark.slow)
                                  for n in sorted(MODELS)])
def test_model_dynamic_batch_matches_eager(name):
    m, inp = build(name)
    batch = torch.export.Dim("batch", min=1, max=64)
    x = inp(2)
    mod = import_torch(m, (x,), dynamic_shapes=({0: batch},))
    assert mod.functions["main"].params[0].type.shape[0] == "batch"
    vm = dlvmrt.VM(mod)
    for b in (1, 3):
        x = inp(b)
        (got,) = vm.run("main", x.numpy())
        with torch.no_grad():
            close(got, m(x))


@pytest.mark.parametrize("name", ["gpt2", pytest.param("resnet18", marks=pytest.mark.slow),
                                  pytest.param("mobilenet_v3_small", marks=pytest.mark.slow)])
def test_compile_backend_matches_eager(name, monkeypatch):
    from frontends.torch.backend import dlvm_backend
    monkeypatch.setenv("DLVM_TORCH_STRICT", "1")      # no silent fallback to torch
    m, inp = build(name)
    torch._dynamo.reset()
    c = torch.compile(m, backend=dlvm_backend)
    with torch.no_grad():
        for b in (1, 4):
            x = inp(b)
            close(c(x).numpy(), m(x))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small", "efficientnet_b0",
                                  "squeezenet", "vit"])
def test_real_torchvision_model(name):
    tv = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    ctor = {"resnet18": tv.models.resnet18, "mobilenet_v3_small": tv.models.mobilenet_v3_small,
            "efficientnet_b0": tv.models.efficientnet_b0,
            "squeezenet": tv.models.squeezenet1_1,
            "vit": lambda weights=None: tv.models.VisionTransformer(
                64, 16, 2, 4, 128, 256)}[name]
    m = ctor(weights=None).eval()
    size = 64 if name == "vit" else 96
    x = torch.randn(2, 3, size, size)
    mod = import_torch(m, (x,))
    (got,) = dlvmrt.VM(mod).run("main", x.numpy())
    with torch.no_grad():
        close(got, m(x))


# -- Hugging Face transformers models, built from configs with random weights -------------

def hf_model(name):
    tr = pytest.importorskip("transformers")
    tr.logging.set_verbosity_error()       # the configs' token ids outside a tiny vocabulary
    torch.manual_seed(0)
    if name == "bert":
        m = tr.BertModel(tr.BertConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2,
                                       num_attention_heads=4, intermediate_size=128,
                                       max_position_embeddings=32))
    elif name == "gpt2":          # causal self-attention
        m = tr.GPT2Model(tr.GPT2Config(vocab_size=100, n_embd=64, n_layer=2, n_head=4,
                                       n_positions=32))
    else:                         # T5's encoder: relative position buckets, RMS norm
        m = tr.T5EncoderModel(tr.T5Config(vocab_size=100, d_model=64, d_kv=16, d_ff=128,
                                          num_layers=2, num_heads=4))

    class LastHidden(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = m

        def forward(self, ids):
            return self.m(input_ids=ids).last_hidden_state
    return LastHidden().eval()


def ids(b, n=8):
    return torch.randint(0, 100, (b, n))


@pytest.mark.parametrize("name", ["bert", "gpt2", "t5"])
def test_transformers_model_dynamic_batch(name):
    m = hf_model(name)
    batch = torch.export.Dim("batch", min=1, max=64)
    mod = import_torch(m, (ids(2),), dynamic_shapes=({0: batch},))
    vm = dlvmrt.VM(mod)
    for b in (1, 3):
        x = ids(b)
        (got,) = vm.run("main", x.numpy())
        with torch.no_grad():
            close(got, m(x))


@pytest.mark.parametrize("name", ["bert", pytest.param("gpt2", marks=pytest.mark.slow),
                                  pytest.param("t5", marks=pytest.mark.slow)])   # (CI's time)
def test_transformers_model_compile_backend(name, monkeypatch):
    from frontends.torch.backend import dlvm_backend
    monkeypatch.setenv("DLVM_TORCH_STRICT", "1")      # no silent fallback to torch
    m = hf_model(name)
    torch._dynamo.reset()
    c = torch.compile(m, backend=dlvm_backend)
    with torch.no_grad():
        for b in (1, 4):
            x = ids(b)
            close(c(x).numpy(), m(x))
