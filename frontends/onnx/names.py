"""ONNX names to dlvm identifiers: the frontends' shared naming (`frontends.base.names`)."""
from __future__ import annotations

from frontends.base.names import Namer, sanitize

__all__ = ["Namer", "sanitize"]
