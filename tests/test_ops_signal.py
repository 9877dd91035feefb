"""The rows of isa/ops/signal.py and isa/ops/sampling.py against independent computations: the
DFT against an explicit sum with a DFT matrix, grid_sample against PyTorch's grid_sample."""
from __future__ import annotations

import numpy as np
import pytest
from test_ops_dynamic import COVERED as SWEPT
from test_ops_dynamic import run

RNG = np.random.default_rng(11)

COVERED = {"dft", "grid_sample"}


def test_every_row_of_these_files_is_tested_here_and_counted():
    from isa.ops import sampling, signal
    assert {op.name for op in signal.OPS + sampling.OPS} <= COVERED <= SWEPT


def _dft_matrix(n_out: int, n_in: int, inverse: bool) -> np.ndarray:
    k = np.arange(n_out)[:, None] * np.arange(n_in)[None, :]
    sign = 1 if inverse else -1
    return np.exp(sign * 2j * np.pi * k / max(n_out, n_in))


@pytest.mark.parametrize("complex_in", [False, True])
@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("axis", [1, -3])
def test_dft_matches_the_defining_sum(complex_in, inverse, axis):
    x = RNG.standard_normal((2, 6, 3, 2 if complex_in else 1))
    sig = x[..., 0] + (1j * x[..., 1] if complex_in else 0)
    m = _dft_matrix(6, 6, inverse)
    want = np.einsum("kn,bnc->bkc", m, sig) / (6 if inverse else 1)
    got = run("dft", x, axis=axis, inverse=inverse)
    np.testing.assert_allclose(got[..., 0] + 1j * got[..., 1], want, atol=1e-12)


def test_dft_length_pads_or_cuts_and_onesided_halves():
    x = RNG.standard_normal((1, 5, 1)).astype(np.float32)
    got = run("dft", x, axis=1, length=8, onesided=True)
    full = np.concatenate([x[0, :, 0], np.zeros(3)])
    want = _dft_matrix(8, 8, False) @ full
    assert got.shape == (1, 5, 2)
    np.testing.assert_allclose(got[0, :, 0] + 1j * got[0, :, 1], want[:5], rtol=1e-5, atol=1e-5)
    cut = run("dft", x, axis=1, length=3)
    want = _dft_matrix(3, 3, False) @ x[0, :3, 0]
    np.testing.assert_allclose(cut[0, :, 0] + 1j * cut[0, :, 1], want, rtol=1e-5, atol=1e-5)


def test_inverse_of_a_onesided_spectrum_is_the_real_signal():
    sig = RNG.standard_normal(8)
    half = (_dft_matrix(8, 8, False) @ sig)[:5]
    x = np.stack([half.real, half.imag], -1)[None]
    got = run("dft", x, axis=1, inverse=True, onesided=True)
    assert got.shape == (1, 8, 1)
    np.testing.assert_allclose(got[0, :, 0], sig, atol=1e-12)


def test_dft_type_rule_rejects_the_last_axis():
    from isa.errors import OpTypeError
    with pytest.raises(OpTypeError):
        run("dft", np.zeros((2, 4, 2), np.float32), axis=-1)


CASES = [(mode, pad, corners) for mode in ("linear", "nearest", "cubic")
         for pad in ("zeros", "border", "reflection") for corners in (False, True)]


@pytest.mark.parametrize("mode, padding, corners", CASES)
def test_grid_sample_2d_matches_torch(mode, padding, corners):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 5, 4))
    grid = RNG.uniform(-1.6, 1.6, (2, 6, 7, 2))
    grid[0, 0, :3] = [[-1, -1], [1, 1], [0.25, -0.5]]     # exact corners and grid points
    got = run("grid_sample", x, grid, mode=mode, padding_mode=padding, align_corners=corners)
    tmode = {"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode)
    want = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(grid), mode=tmode,
                                           padding_mode=padding, align_corners=corners).numpy()
    np.testing.assert_allclose(got, want, atol=1e-9)


@pytest.mark.parametrize("mode", ["linear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
def test_grid_sample_3d_matches_torch(mode, padding):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((1, 2, 3, 4, 5)).astype(np.float32)
    grid = RNG.uniform(-1.3, 1.3, (1, 2, 3, 4, 3)).astype(np.float32)
    got = run("grid_sample", x, grid, mode=mode, padding_mode=padding)
    tmode = "bilinear" if mode == "linear" else mode
    want = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(grid), mode=tmode,
                                           padding_mode=padding, align_corners=False).numpy()
    np.testing.assert_allclose(got, want, atol=1e-5)
