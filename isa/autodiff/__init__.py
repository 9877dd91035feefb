"""Automatic differentiation as module transforms: reverse mode (`grad`) by adjoint code
generation, and forward mode (`jvp`). Each op's adjoint rule lives in its record of the op table
(`OpDef.vjp`); this package walks functions and control flow and applies them."""
from .api import grad
from .emitter import GradError
from .forward import jvp

__all__ = ["grad", "jvp", "GradError"]
