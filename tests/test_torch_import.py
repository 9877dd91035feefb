"""The torch importer's interface: named dims, constants, errors, .pt2 files, the command line,
and the `torch.compile` backend's registration, fallback and training graphs."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import dlvmrt  # noqa: E402
from frontends.torch import import_torch, load_pt2  # noqa: E402
from frontends.torch.errors import TorchImportError  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Unsupported(torch.nn.Module):
    def forward(self, x):
        y = torch.special.zeta(x.clamp(2, 3), 2.0)   # not in the table
        return torch.linalg.cholesky(y @ y.mT + torch.eye(3))   # nor this


def test_dims_are_named_and_parameters_are_constants():
    m = MLP().eval()
    n = torch.export.Dim("n", max=1024)
    mod = import_torch(m, (torch.randn(2, 4),), dynamic_shapes={"x": {0: n}})
    main = mod.functions["main"]
    assert [p.name for p in main.params] == ["x"]
    assert main.params[0].type.shape == ("n", 4)
    assert "fc1_bias" in mod.constants and len(main.params) == 1
    x = torch.randn(5, 4)
    (got,) = dlvmrt.VM(mod).run("main", x.numpy())
    np.testing.assert_allclose(got, m(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_unsupported_ops_are_listed_together_with_their_lines():
    with pytest.raises(TorchImportError) as e:
        import_torch(Unsupported(), (torch.randn(3, 3),))
    msg = str(e.value)
    assert "aten.special_zeta" in msg and "cholesky" in msg
    assert "test_torch_import.py:" in msg


def test_export_failure_is_a_clear_error():
    class DataDependent(torch.nn.Module):
        def forward(self, x):
            return x[x > 0] if x.sum() > 0 else x

    with pytest.raises(TorchImportError, match="torch.export could not export"):
        import_torch(DataDependent(), (torch.randn(4),))


def test_pt2_file_through_the_command_line(tmp_path):
    m = MLP().eval()
    ep = torch.export.export(m, (torch.randn(2, 4),))
    p = tmp_path / "mlp.pt2"
    torch.export.save(ep, str(p))
    mod = load_pt2(p)
    x = torch.randn(2, 4)
    (got,) = dlvmrt.VM(mod).run("main", x.numpy())
    np.testing.assert_allclose(got, m(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = tmp_path / "mlp.dlbc"
    r = subprocess.run([sys.executable, "-m", "cli", "import", str(p), "-o", str(out)],
                       capture_output=True, text=True, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    (got2,) = dlvmrt.VM(str(out)).run("main", x.numpy())
    np.testing.assert_array_equal(got, got2)
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(b"not an archive")
    r = subprocess.run([sys.executable, "-m", "cli", "run", str(bad)], capture_output=True,
                       text=True, env=env, cwd=ROOT)
    assert r.returncode != 0 and "not a saved torch.export program" in r.stderr
    assert "Traceback" not in r.stderr


def test_backend_is_found_by_name_through_the_entry_point(tmp_path):
    # what `pip install dlvm[torch]` installs: an entry point in the dist-info
    info = tmp_path / "dlvm_ep-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dlvm-ep\nVersion: 0\n")
    (info / "entry_points.txt").write_text(
        "[torch_dynamo_backends]\ndlvm = frontends.torch.backend:dlvm_backend\n")
    code = ("import torch\n"
            "assert 'dlvm' in torch._dynamo.list_backends()\n"
            "m = torch.nn.Linear(3, 2)\n"
            "x = torch.randn(4, 3)\n"
            "with torch.no_grad():\n"
            "    assert torch.allclose(torch.compile(m, backend='dlvm')(x), m(x), atol=1e-6)\n"
            "print('ok')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT]),
               DLVM_TORCH_STRICT="1")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-2000:]


def test_backend_falls_back_to_torch_with_a_warning():
    from frontends.torch.backend import dlvm_backend
    torch._dynamo.reset()
    f = torch.compile(lambda x: torch.special.zeta(x, 2.0) * 2, backend=dlvm_backend)
    x = torch.rand(5) + 1.5
    with pytest.warns(UserWarning, match="aten.special_zeta"):
        got = f(x)
    torch.testing.assert_close(got, torch.special.zeta(x, 2.0) * 2)


def test_backend_training_step_matches_eager(monkeypatch):
    from frontends.torch.backend import dlvm_backend
    monkeypatch.setenv("DLVM_TORCH_STRICT", "1")
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = MLP()
    ref = MLP()
    ref.load_state_dict(m.state_dict())
    import frontends.torch.backend as backend
    made = []
    real = backend.compile_graph
    monkeypatch.setattr(backend, "compile_graph",
                        lambda gm, ex, *rest: made.append(real(gm, ex, *rest)) or made[-1])
    c = torch.compile(m, backend=dlvm_backend)
    x = torch.randn(6, 4)
    c(x).square().sum().backward()
    ref(x).square().sum().backward()
    for p, q in zip(m.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    # the forward and the backward graph both ran as dlvm modules (strict: no fallback)
    assert len(made) == 2 and all(hasattr(f, "dlvm_module") for f in made)


def test_backend_keeps_dynamos_graph_breaks(monkeypatch):
    from frontends.torch.backend import dlvm_backend
    monkeypatch.setenv("DLVM_TORCH_STRICT", "1")
    torch._dynamo.reset()

    def f(x):
        y = torch.relu(x) * 2
        print("side effect")          # a graph break
        return torch.tanh(y) + 1

    x = torch.randn(3, 3)
    torch.testing.assert_close(torch.compile(f, backend=dlvm_backend)(x),
                               torch.tanh(torch.relu(x) * 2) + 1)


def test_backend_trains_layer_norm_and_gelu_in_dlvm(monkeypatch):
    from frontends.torch.backend import dlvm_backend
    monkeypatch.setenv("DLVM_TORCH_STRICT", "1")       # no graph may fall back to torch
    torch._dynamo.reset()
    torch.manual_seed(0)
    nn = torch.nn
    m = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 4))
    ref = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 4))
    ref.load_state_dict(m.state_dict())
    x = torch.randn(5, 8)
    torch.compile(m, backend=dlvm_backend)(x).square().sum().backward()
    ref(x).square().sum().backward()
    for p, q in zip(m.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("make, shape", [
    (lambda: torch.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1), (2, 4, 5, 6)),
    (lambda: torch.nn.ConvTranspose2d(4, 6, (3, 2), stride=(2, 1), padding=(0, 1), groups=2,
                                      dilation=(1, 2)), (2, 4, 5, 6)),
    (lambda: torch.nn.ConvTranspose1d(3, 5, 4, stride=3, padding=1), (2, 3, 7)),
    # stride = kernel: one product and a reshuffle (frontends/base/conv_transpose.py)
    (lambda: torch.nn.ConvTranspose2d(4, 6, 2, stride=2), (2, 4, 5, 6)),
    (lambda: torch.nn.ConvTranspose2d(3, 2, (3, 2), stride=(3, 2), bias=False), (1, 3, 4, 5)),
    # strided, ungrouped: one convolution over the output phases and a reshuffle (_sub_pixel),
    # kernels that are and are not multiples of the stride, pads, output padding, 1x1 inputs
    (lambda: torch.nn.ConvTranspose2d(5, 3, 4, stride=2, padding=1), (2, 5, 4, 3)),
    (lambda: torch.nn.ConvTranspose2d(2, 3, 7, stride=2, padding=3, output_padding=1), (2, 2, 6, 5)),
    (lambda: torch.nn.ConvTranspose2d(3, 2, (3, 5), stride=(2, 3), padding=(1, 2),
                                      output_padding=(1, 0)), (1, 3, 4, 5)),
    (lambda: torch.nn.ConvTranspose2d(4, 3, 4, stride=3), (2, 4, 1, 1)),
    # stride 1 with pads beyond the kernel's reach: a crop before the convolution
    (lambda: torch.nn.ConvTranspose2d(2, 3, 3, stride=1, padding=3), (2, 2, 7, 6)),
    # 16 output channels or more: one product per output phase with its own taps (_sub_pixel),
    # including phases without taps (a kernel under the stride), inputs cropped by wide pads,
    # outputs shorter than a phase's window, and 1-D
    (lambda: torch.nn.ConvTranspose2d(4, 16, 3, stride=2, padding=1, output_padding=1), (2, 4, 5, 6)),
    (lambda: torch.nn.ConvTranspose2d(3, 16, 4, stride=2, padding=1), (2, 3, 5, 4)),
    (lambda: torch.nn.ConvTranspose2d(2, 16, (1, 3), stride=(2, 2)), (2, 2, 3, 4)),
    (lambda: torch.nn.ConvTranspose2d(2, 16, 3, stride=2, padding=2), (1, 2, 4, 5)),
    (lambda: torch.nn.ConvTranspose2d(2, 17, 5, stride=3, padding=4, output_padding=2), (2, 2, 3, 4)),
    (lambda: torch.nn.ConvTranspose2d(2, 16, (5, 3), stride=(3, 2), padding=(2, 1)), (1, 2, 1, 2)),
    (lambda: torch.nn.ConvTranspose1d(3, 16, 4, stride=2, padding=1), (2, 3, 7)),
])
def test_transposed_convolutions_import(make, shape):
    from frontends.torch import import_torch
    torch.manual_seed(0)
    net = make().eval()
    x = torch.randn(*shape)
    got = dlvmrt.VM(import_torch(net, (x,)), jit="off").run("main", x.numpy())[0]
    np.testing.assert_allclose(got, net(x).detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("channels, kernel, products", [
    (32, 3, 4),     # a 3x3 kernel: 2.25 taps per phase where the shared window has 4
    (32, 4, 4),     # 4x4 at 6x6: a third more multiplies over the shared window (7x7 of 6x6)
    (3, 4, 1),      # few output channels: one product of 4 x 3 rows fills the tiles better
])
def test_transposed_convolution_per_phase_choice(channels, kernel, products):
    """_phases_pay picks one product per output phase, or one over the shared window, and
    both give torch's result."""
    from frontends.torch import import_torch
    torch.manual_seed(0)
    net = torch.nn.ConvTranspose2d(8, channels, kernel, stride=2, padding=1,
                                   output_padding=kernel % 2).eval()
    x = torch.randn(2, 8, 6, 6)
    module = import_torch(net, (x,))
    convs = sum(ins.op == "conv2d" for f in module.functions.values() for blk in f.blocks
                for ins in blk.instrs)
    assert convs == products
    got = dlvmrt.VM(module, jit="off").run("main", x.numpy())[0]
    np.testing.assert_allclose(got, net(x).detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("resize", [{"scale_factor": 2}, {"size": (7, 5)}])
def test_bilinear_upsampling_imports(align_corners, resize):
    class Up(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.interpolate(x, mode="bilinear",
                                                   align_corners=align_corners, **resize)
    x = torch.randn(2, 3, 4, 6)
    got = dlvmrt.VM(import_torch(Up(), (x,)), jit="off").run("main", x.numpy())[0]
    np.testing.assert_allclose(got, Up()(x).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dynamic", [False, True])
def test_3d_convolution_and_pooling_import(dynamic):
    # frontends/base/conv3d.py (the depth taps as channels), 3-D max and average pooling
    class Video(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv3d(3, 4, 3, padding=1)
            self.c2 = torch.nn.Conv3d(4, 6, (2, 3, 3), stride=(2, 1, 2), padding=(1, 1, 0),
                                      dilation=(1, 2, 1), groups=2)

        def forward(self, x):
            h = torch.nn.functional.max_pool3d(torch.relu(self.c1(x)), 2, ceil_mode=True)
            h = self.c2(h)
            return torch.nn.functional.avg_pool3d(h, (1, 2, 2), count_include_pad=False,
                                                  padding=(0, 1, 1))

    from frontends.torch import import_torch
    torch.manual_seed(0)
    net = Video().eval()
    x = torch.randn(2, 3, 5, 9, 10)
    shapes = ({0: torch.export.Dim("batch", min=1, max=64)},) if dynamic else None
    module = import_torch(net, (x,), dynamic_shapes=shapes)
    for batch in ((2, 1) if dynamic else (2,)):
        xb = x[:batch]
        got = dlvmrt.VM(module, jit="off").run("main", xb.numpy())[0]
        np.testing.assert_allclose(got, net(xb).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_compile_backend_fake_quantization_is_torchs_bit_for_bit(monkeypatch):
    # torch.compile's graphs carry the _cachemask form of fake quantization (QAT models); the
    # lowering multiplies by the f32 reciprocal of the scale and rounds halves to even as
    # torch's CPU kernel does, so the results are the same bits
    from frontends.torch.backend import dlvm_backend
    monkeypatch.setenv("DLVM_TORCH_STRICT", "1")      # no silent fallback to torch
    torch._dynamo.reset()

    def fq(x):
        return torch.fake_quantize_per_tensor_affine(x * 3, 0.07, 5, 0, 255) - \
            torch.fake_quantize_per_tensor_affine(x, 0.02, 0, -128, 127)
    x = torch.cat([torch.linspace(-40, 40, 2001), torch.tensor([0.035, -0.07, 0.01, -0.03])])
    got = torch.compile(fq, backend=dlvm_backend)(x)
    assert torch.equal(got, fq(x))


class _Siren(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 8)
        self.w0 = 30.0          # dynamic=True: dynamo passes it as a one-element tensor

    def forward(self, x):
        return torch.sin(self.w0 * self.lin(x))


class _SizeArithmetic(torch.nn.Module):
    """Sizes computed from symbolic dims: a float arange over a derived length, a clamp to
    size - 1 (a SymInt operand), a true division by a sum of sizes, a cast."""

    def forward(self, x):                                   # [B, C, L]
        n = x.shape[-1]
        pos = torch.arange(0, 2 * n, dtype=torch.float32) / (2 * n)
        idx = torch.clamp(torch.arange(n) + 1, max=n - 1)
        y = x[..., idx] + pos[::2]
        return torch.true_divide(y, x.shape[1] + x.shape[2]).to(torch.float64)


class _Upsample(torch.nn.Module):
    """Upsampling decomposes to advanced indexing of the symbolic height and width at once
    (x[:, :, rows, cols])."""

    def forward(self, x):
        up = torch.nn.functional.interpolate
        return up(x, scale_factor=2, mode="bilinear") + up(x, scale_factor=2, mode="nearest")


class _SqueezeHeight(torch.nn.Module):
    """A CRNN's feature map: its height pooled down to a symbolic size that is 1, squeezed."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 1)       # 4 channels: a static dim from here on

    def forward(self, x):
        pool = torch.nn.functional.max_pool2d
        c = self.conv(x)
        y = pool(pool(c, 2), 2).squeeze(2)          # [B, 4, W / 4]
        up = torch.nn.functional.interpolate(c, scale_factor=2, mode="nearest")
        return y.permute(0, 2, 1), y.unfold(1, 2, 1), up.unfold(1, 2, 1)


class _NormWindowsEncoder(torch.nn.Module):
    """Group norm over symbolic spatial dims, Tensor.unfold over a symbolic dim and the fused
    encoder layer (torch's fast path in eval) over a symbolic batch and sequence length."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 1)
        self.gn = torch.nn.GroupNorm(2, 4)
        self.enc = torch.nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True)

    def forward(self, x):                           # [B, 3, H, W]
        g = self.gn(self.conv(x))
        windows = g.flatten(2).transpose(1, 2).unfold(1, 2, 2)      # [B, H * W / 2, 4, 2]
        return g, self.enc(windows.flatten(2))


class _TransposedConvs(torch.nn.Module):
    """Transposed convolutions over symbolic sizes (a vocoder's 1-D upsampling, a decoder's
    2-D one with padding and output_padding): conv_transpose_2d's zero-inserted form."""

    def __init__(self):
        super().__init__()
        self.up1 = torch.nn.ConvTranspose1d(3, 4, 8, 4, padding=2)
        self.up2 = torch.nn.ConvTranspose2d(3, 2, 3, 2, padding=1, output_padding=1)

    def forward(self, x):                           # [B, 3, H, W]
        return self.up1(x.flatten(2)), self.up2(x)


@pytest.mark.parametrize("model, shapes", [(_Siren, [(3, 2), (5, 2)]),
                                           (_TransposedConvs, [(2, 3, 4, 5), (3, 3, 6, 3)]),
                                           (_NormWindowsEncoder, [(2, 3, 4, 6), (3, 3, 6, 4)]),
                                           (_SqueezeHeight, [(2, 3, 4, 8), (3, 3, 4, 12)]),
                                           (_SizeArithmetic, [(2, 3, 7), (4, 3, 9)]),
                                           (_Upsample, [(1, 2, 5, 6), (2, 2, 7, 4)])])
def test_compile_backend_with_every_dim_dynamic(model, shapes, monkeypatch):
    # torch.compile(dynamic=True): every dim symbolic, Python floats as tensor inputs, size
    # arithmetic (sym_sum, TruncToInt, prims.convert_element_type, true_divide) in the graphs
    from frontends.torch.backend import dlvm_backend
    monkeypatch.setenv("DLVM_TORCH_STRICT", "1")      # no silent fallback to torch
    torch._dynamo.reset()
    m = model().eval()
    c = torch.compile(m, backend=dlvm_backend, dynamic=True)
    for shape in shapes:
        x = torch.randn(*shape)
        with torch.no_grad():
            got, want = c(x), m(x)
        for g, w in zip(*(v if isinstance(v, tuple) else (v,) for v in (got, want))):
            assert g.dtype == w.dtype
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
