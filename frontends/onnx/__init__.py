"""ONNX importer: `import_onnx(model) -> isa.Module`, `import_to_file(model, out)`.

Importing this package is cheap; onnx is loaded on the first call.
"""
from __future__ import annotations

from typing import Any


def import_onnx(model: Any, name: str | None = None, freeze: dict[str, Any] | None = None,
                trainable: Any = None):
    """ONNX model (path, bytes or ModelProto) -> verified isa.Module with entry `main`."""
    from .importer import import_onnx as _imp
    return _imp(model, name, freeze, trainable)


def import_onnx_result(model: Any, name: str | None = None, freeze: dict[str, Any] | None = None,
                       trainable: Any = None):
    """Like import_onnx, also returning the ONNX-name -> dlvm-name mappings."""
    from .importer import import_onnx_result as _imp
    return _imp(model, name, freeze, trainable)


def import_to_file(model_path: Any, out_path: Any):
    from .importer import import_to_file as _imp
    return _imp(model_path, out_path)


__all__ = ["import_onnx", "import_onnx_result", "import_to_file"]
