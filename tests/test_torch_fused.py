"""torch's fused inference kernels (nn.TransformerEncoderLayer's and nn.MultiheadAttention's
fast paths, which dynamo captures in eval mode without gradients) through the torch.compile
backend, against torch eager. Tolerances: specs/tolerances.md (torch frontend)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from frontends.torch.backend import dlvm_backend  # noqa: E402

nn = torch.nn


def compiled_matches(model, *inputs, fused=None, **kwargs):
    """Compile with the backend (no fallback to torch), compare with eager, and check that the
    graph dlvm got held the fused kernel (`fused`), so the fast path was the one tested."""
    import frontends.torch.backend as backend
    seen: list[str] = []
    real = backend.module_from_graph

    def spy(gm, *a, **k):
        seen.extend(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
        return real(gm, *a, **k)
    model.eval()
    torch._dynamo.reset()
    c = torch.compile(model, backend=dlvm_backend)
    with torch.no_grad():
        want = model(*inputs, **kwargs)
        backend.module_from_graph = spy
        try:
            got = c(*inputs, **kwargs)
        finally:
            backend.module_from_graph = real
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for g, w in zip(got, want):
        if w is None:
            continue
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-5)
    if fused is not None:
        assert any(fused in s for s in seen), sorted(set(seen))


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    monkeypatch.setenv("DLVM_TORCH_STRICT", "1")


@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")])
def test_encoder_layer(norm_first, activation):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation=activation,
                                       batch_first=True, norm_first=norm_first)
    compiled_matches(layer, torch.randn(3, 7, 32), fused="_transformer_encoder_layer_fwd")


def test_encoder_layer_masks():
    torch.manual_seed(1)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    x = torch.randn(2, 5, 16)
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    compiled_matches(layer, x, src_mask=causal, fused="_transformer_encoder_layer_fwd")
    pad = torch.tensor([[False] * 5, [False, False, False, True, True]])
    compiled_matches(layer, x, src_key_padding_mask=pad, fused="_transformer_encoder_layer_fwd")


def test_multihead_attention_weights():
    torch.manual_seed(2)
    mha = nn.MultiheadAttention(16, 4, batch_first=True)

    class SelfAttention(nn.Module):
        def __init__(self, average):
            super().__init__()
            self.mha, self.average = mha, average

        def forward(self, x):
            return self.mha(x, x, x, need_weights=True, average_attn_weights=self.average)
    x = torch.randn(2, 6, 16)
    # (dynamo keeps the module's Python path here; the fused kernel's own lowering is checked
    # op by op in tests/test_torch_lowerings.py)
    compiled_matches(SelfAttention(True), x)
    compiled_matches(SelfAttention(False), x)


def test_multihead_cross_attention_with_padding():
    torch.manual_seed(3)
    mha = nn.MultiheadAttention(16, 2, batch_first=True)

    class Cross(nn.Module):
        def forward(self, q, kv, pad):
            return mha(q, kv, kv, key_padding_mask=pad, need_weights=False)[0]
    pad = torch.tensor([[False] * 4 + [True], [False] * 5])
    compiled_matches(Cross(), torch.randn(2, 3, 16), torch.randn(2, 5, 16), pad)


def test_encoder_layer_over_new_batch_and_sequence_lengths():
    # a second shape makes dynamo recompile with a symbolic batch and sequence length: the
    # fused kernel's head reshapes then read both when they run (they failed the import)
    torch.manual_seed(2)
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True).eval()
    torch._dynamo.reset()
    c = torch.compile(layer, backend=dlvm_backend)
    with torch.no_grad():
        for b, seq in ((2, 5), (3, 7), (1, 9)):
            x = torch.randn(b, seq, 32)
            np.testing.assert_allclose(c(x).numpy(), layer(x).numpy(), rtol=1e-4, atol=1e-5)
