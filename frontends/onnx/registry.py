"""The table of ONNX op handlers, and the view of one node a handler works with.

A handler turns one ONNX node into dlvm instructions: `fn(ctx) -> list of output Values`. It is
registered for an op type and the earliest op version (ONNX `since_version`) whose semantics it
implements; a model asking for an older version of the op is reported as unsupported, never
imported with the wrong meaning. Handlers read attributes through `ctx.attr`; an attribute the
handler never read is an attribute it does not implement, and the import fails naming it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import OnnxImportError, node_label
from .values import Emitter, Value

if TYPE_CHECKING:
    from .graph import GraphConverter

_MISSING = object()


@dataclass(frozen=True)
class Handler:
    op_type: str
    domain: str
    min_version: int
    fn: Callable[[NodeCtx], list[Value]]


HANDLERS: dict[tuple[str, str], Handler] = {}


def onnx_op(*op_types: str, since: int = 1, domain: str = ""):
    """Register a handler for op types whose versions from `since` on it implements."""
    def register(fn):
        for op in op_types:
            HANDLERS[(domain, op)] = Handler(op, domain, since, fn)
        return fn
    return register


class NodeCtx:
    """One ONNX node under conversion: its inputs as Values, its attributes, its op version."""

    def __init__(self, node, version: int, inputs: list[Value | None], e: Emitter,
                 graph: GraphConverter, scope: Any = None):
        self.node = node
        self.scope = scope          # the names visible to the node (for subgraph bodies)
        self.version = version
        self.inputs = inputs
        self.e = e
        self.graph = graph
        self._attrs = {a.name: a for a in node.attribute}
        self.read: set[str] = set()

    @property
    def label(self) -> str:
        return node_label(self.node)

    def fail(self, msg: str) -> OnnxImportError:
        return OnnxImportError(f"{self.label} (opset version {self.version}): {msg}")

    # -- inputs --------------------------------------------------------------------------

    def input(self, i: int) -> Value | None:
        """Input i, or None where it is absent (past the end, or the empty name)."""
        return self.inputs[i] if i < len(self.inputs) else None

    def req(self, i: int) -> Value:
        v = self.input(i)
        if v is None:
            raise self.fail(f"input {i} is required")
        return v

    def const_input(self, i: int, what: str) -> np.ndarray | None:
        """Input i as an array known at import (shapes, axes, pads); None where absent."""
        v = self.input(i)
        if v is None:
            return None
        if v.const is None:
            raise self.not_known(i, what)
        return v.const

    def not_known(self, i: int, what: str) -> OnnxImportError:
        err = self.fail(f"{what} (input {i}) must be known at import time (an initializer or "
                        f"Constant); dlvm types are fixed before a program runs")
        err.value_name = self.node.input[i]
        return err

    def const_ints(self, i: int, what: str) -> list[int] | None:
        a = self.const_input(i, what)
        return None if a is None else [int(x) for x in np.asarray(a).reshape(-1)]

    # -- attributes ----------------------------------------------------------------------

    def has(self, name: str) -> bool:
        return name in self._attrs

    def attr(self, name: str, default: Any = _MISSING) -> Any:
        """The attribute's Python value (int, float, str, list, ndarray or GraphProto)."""
        from onnx import helper

        from .tensors import tensor_array
        self.read.add(name)
        a = self._attrs.get(name)
        if a is None:
            if default is _MISSING:
                raise self.fail(f"attribute '{name}' is required")
            return default
        if a.ref_attr_name:
            raise self.fail(f"attribute '{name}' refers to a function attribute; not supported")
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            return v.decode("utf-8")
        if a.type == a.TENSOR:
            return tensor_array(v, f"{self.label}: attribute '{name}'")
        if isinstance(v, list) and v and isinstance(v[0], bytes):
            return [x.decode("utf-8") for x in v]
        return v

    def unread(self) -> list[str]:
        return [n for n in self._attrs if n not in self.read]


def handler_for(op_type: str, domain: str) -> Handler | None:
    return HANDLERS.get((domain, op_type))
