"""The importer's error: a model dlvm cannot represent faithfully.

It is a DlvmError so that the CLI prints it like every other diagnostic. One error lists every
unsupported op of a model (with the opset it was asked for), so a user sees the whole gap at once.
"""
from __future__ import annotations

from frontends.base.errors import FrontendError


class OnnxImportError(FrontendError):
    # the ONNX value that had to be known at import but is not (a graph input fed as a shape,
    # axes or pads); callers that know its value may pass it as `freeze` and import again
    value_name: str | None = None


def node_label(node) -> str:
    """How an ONNX node is named in messages: its op type and name (or first output)."""
    ident = node.name or (node.output[0] if len(node.output) else "")
    return f"{node.op_type} '{ident}'" if ident else node.op_type
