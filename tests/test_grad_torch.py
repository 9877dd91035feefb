"""Gradients of whole models against torch.autograd: torch.nn models (CNNs with BatchNorm and
squeeze-excite, a ViT, GPT with its causal mask, a BERT-like encoder, an LSTM) imported with
`import_torch(..., trainable=True)`, differentiated by `grad` with respect to the input and
every parameter, and compared with `backward()` of the same loss in PyTorch (f32, the tolerance
of specs/tolerances.md)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
tm = pytest.importorskip("torch_models")

import assembler  # noqa: E402
from dlvmrt.vm import VM  # noqa: E402
from frontends.base.names import sanitize  # noqa: E402
from isa.autodiff import grad  # noqa: E402
from isa.module import Constant  # noqa: E402
from isa.types import TensorType  # noqa: E402

RTOL = 1e-4      # relative to the largest gradient element of each tensor

MODELS = [
    pytest.param("ResNet", marks=pytest.mark.slow),
    pytest.param("MobileNetV3Small", marks=pytest.mark.slow),
    pytest.param("EfficientNetB0Lite", marks=pytest.mark.slow),     # 9 s: CI's time
    pytest.param("SqueezeNet", marks=pytest.mark.slow),             # 7 s
    "ViT", "GPT", "BertLike", "LSTMTagger",
]


def with_loss(m, weights: np.ndarray):
    """`m` plus @loss(params) = sum(main's first result * weights)."""
    f = m.functions["main"]
    m.constants["loss_w"] = Constant("loss_w", TensorType(f.results[0].dtype, weights.shape),
                                     weights)
    params = ", ".join(f"%{p.name}: {p.type}" for p in f.params)
    args = ", ".join(f"%{p.name}" for p in f.params)
    outs = ", ".join(f"%r{i}" for i in range(len(f.results)))
    return assembler.assemble(assembler.disassemble(m) + (
        f"\nfunc @loss({params}) -> f32[] {{\n  {outs} = call @main({args})\n"
        f"  %p = mul %r0, @loss_w\n  %s = reduce_sum %p\n  ret %s\n}}\n"))


@pytest.mark.parametrize("name", MODELS)
def test_model_gradients_match_torch_autograd(name):
    from frontends.torch import import_torch
    torch.manual_seed(0)
    model = getattr(tm, name)().eval()
    x = tm.tokens() if name in ("GPT", "BertLike", "LSTMTagger") else tm.image(2, 32)
    m = import_torch(model, (x,), trainable=True)
    out_shape = [int(d) for d in model(x).shape]
    w = np.random.default_rng(0).standard_normal(out_shape).astype(np.float32)
    m = with_loss(m, w)
    params = dict(model.named_parameters())
    consts = [sanitize(n, "c") for n in params]
    float_input = x.dtype.is_floating_point
    wrt = (["%" + m.functions["main"].params[0].name] if float_input else []) + \
        ["@" + c for c in consts]
    got = VM(grad(m, "loss", wrt), jit="off").run("loss_grad", x.numpy())

    xt = x.clone().requires_grad_(float_input)
    (model(xt) * torch.tensor(w)).sum().backward()
    want = ([xt.grad.numpy()] if float_input else []) + [p.grad.numpy() for p in params.values()]
    names = (["input"] if float_input else []) + list(params)
    np.testing.assert_allclose(got[0], float((model(x) * torch.tensor(w)).sum()), rtol=1e-4)
    for n, g, t in zip(names, got[1:], want):
        scale = float(np.abs(t).max()) or 1.0
        np.testing.assert_allclose(g, t, rtol=0, atol=RTOL * scale, err_msg=f"{name}: {n}")
