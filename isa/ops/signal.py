"""Signal processing: the discrete Fourier transform (ONNX DFT; STFT is framed into it).

Complex numbers are pairs in a trailing dim of size 2 (real, imaginary), as ONNX stores them; a
real signal has a trailing dim of size 1. The reference computes with np.fft in complex128 for
f64 operands and in complex64 for f32 / f16 ones (np.fft keeps single precision).
"""
from __future__ import annotations

import numpy as np

from ..errors import OpTypeError, Trap
from ..types import Dim, TensorType
from .opdef import NOT_DIFFERENTIABLE, AttrKind, AttrSpec, Family, OpDef


def _length(attrs, n: Dim) -> Dim:
    """The transform length: `length`, or the signal's size (2 (n - 1) for an inverse of a
    one-sided spectrum)."""
    if attrs["length"]:
        return attrs["length"]
    if not isinstance(n, int):
        return None
    return 2 * (n - 1) if attrs["inverse"] and attrs["onesided"] else n


def dft_rule(types: list[TensorType], attrs) -> list[TensorType]:
    (t,) = types
    if not t.dtype.is_float or t.rank < 2 or t.shape[-1] not in (1, 2, None):
        raise OpTypeError(f"dft takes a float tensor whose last dim is 1 (real) or 2 (complex), "
                          f"got {t}")
    axis = attrs["axis"]
    if not -t.rank <= axis < t.rank or axis % t.rank == t.rank - 1:
        raise OpTypeError(f"dft: axis {axis} must name a dim before the last of {t}")
    if attrs["length"] < 0:
        raise OpTypeError("dft: length must be 0 (the signal's size) or positive")
    axis %= t.rank
    n = _length(attrs, t.shape[axis])
    if n is not None and n < 1:
        # np.fft has no transform of length 0 (an empty signal, or the inverse of a one-sided
        # spectrum of 1 frequency)
        raise OpTypeError(f"dft: the transform length of axis {axis} of {t} is {n}; it must be "
                          "1 or more (give `length`)")
    shape = list(t.shape)
    if attrs["inverse"] and attrs["onesided"]:
        shape[axis], shape[-1] = n, 1
    else:
        shape[axis] = n // 2 + 1 if attrs["onesided"] and n is not None else n
        shape[-1] = 2
    return [t.with_shape(tuple(shape))]


def dft_ref(attrs, x: np.ndarray) -> np.ndarray:
    axis = attrs["axis"] % x.ndim
    # single precision for f16 / f32, as ONNX's generated expectations (np.fft keeps complex64)
    real = np.float64 if x.dtype == np.float64 else np.float32
    sig = x[..., 0].astype(real)
    if x.shape[-1] == 2:
        sig = sig + 1j * x[..., 1].astype(real)
    n = _length(attrs, x.shape[axis])
    if n < 1:      # a named dim bound to 0 (or 1 for a one-sided inverse) at run time
        raise Trap(f"dft: the transform length of axis {axis} of {list(x.shape)} is {n}; it "
                   "must be 1 or more")
    if attrs["inverse"]:
        if attrs["onesided"]:
            return np.fft.irfft(sig, n=n, axis=axis)[..., None].astype(x.dtype)
        y = np.fft.ifft(sig, n=n, axis=axis)
    else:
        y = np.fft.fft(sig, n=n, axis=axis)
        if attrs["onesided"]:
            y = np.take(y, np.arange(n // 2 + 1), axis=axis)
    return np.stack([y.real, y.imag], axis=-1).astype(x.dtype)


OPS = [
    OpDef("dft", 150, Family.NN, (1, 1), dft_rule, dft_ref,
          "r := the discrete Fourier transform of a along `axis` (ONNX DFT): a's last dim is 1 "
          "(real) or 2 (real, imaginary); r's last dim is 2, or 1 for the inverse of a one-sided "
          "spectrum (a real signal, np.fft.irfft); the signal is cut or zero-padded to `length`; "
          "inverse divides by the length; onesided keeps the length // 2 + 1 first frequencies",
          attrs=(AttrSpec("axis", AttrKind.INT, -2, "the transformed dim (not the last)"),
                 AttrSpec("inverse", AttrKind.BOOL, False, "inverse transform (1/n scaling)"),
                 AttrSpec("onesided", AttrKind.BOOL, False, "half spectrum of a real signal"),
                 AttrSpec("length", AttrKind.INT, 0, "transform length; 0: the signal's")),
          dtypes="float",
          vjp=NOT_DIFFERENTIABLE),
]
