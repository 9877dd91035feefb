"""Walk an ONNX graph (the main graph or an If/Loop body) and convert its nodes in order.

Names resolve through a chain of scopes, so a subgraph sees the values of the graphs around it
(ONNX's lexical scoping) and its own names vanish when it ends.
"""
from __future__ import annotations

from collections import ChainMap
from typing import Any

from isa.dtypes import BY_NAME, DType, dtype_from_numpy
from isa.types import Dim, TensorType

from .errors import OnnxImportError, node_label
from .names import Namer
from .ops.common import cast
from .registry import NodeCtx, handler_for
from .tensors import tensor_array
from .values import Emitter, Value

Scope = ChainMap  # ONNX name -> Value


def onnx_dtype(elem_type: int, what: str) -> DType:
    """The dlvm dtype of an ONNX element type, or an error naming what uses it."""
    from onnx import TensorProto, helper
    name = TensorProto.DataType.Name(elem_type) if elem_type in TensorProto.DataType.values() \
        else str(elem_type)
    try:
        npdt = helper.tensor_dtype_to_np_dtype(elem_type)
    except (KeyError, ValueError, TypeError):
        npdt = None
    dt = dtype_from_numpy(npdt) if npdt is not None else None
    if dt is None:
        raise OnnxImportError(f"{what}: ONNX element type {name} has no dlvm equivalent")
    return dt


F32 = BY_NAME["f32"]
# ops whose result dtype is not their inputs' (they convert on their own), and control flow
# (its bodies' nodes are converted one by one)
_OWN_DTYPES = frozenset({"Cast", "CastLike", "QuantizeLinear", "DequantizeLinear", "EyeLike",
                         "RandomNormalLike", "RandomUniformLike", "Bernoulli", "Multinomial",
                         "If", "Loop", "Scan"})


def _narrow_float(node, inputs: list[Value | None]):
    """The narrow float format (bf16, float8, float4) a node computes in, or None. Such a node
    is computed in f32 and its results rounded back once, as ONNX specifies each op's result:
    the importer's decomposition into several dlvm instructions must not round in between."""
    if node.op_type in _OWN_DTYPES or (node.domain or "") not in ("", "ai.onnx"):
        return None
    found = {v.dtype for v in inputs if v is not None and v.dtype.is_narrow and v.dtype.is_float}
    return found.pop() if len(found) == 1 else None


def _same_type_outputs(node, inputs: list[Value | None], narrow: DType, version: int) -> set[int] | None:
    """The outputs of a narrow-float node that take its narrow inputs' type: those whose type
    variable in the op's schema is a narrow input's (LayerNormalization's Mean and InvStdDev are
    `U`, its stash type, not `T`); None where there is no schema (every float output)."""
    from onnx import defs
    try:
        schema = defs.get_schema(node.op_type, version, node.domain or "")
    except Exception:       # noqa: BLE001 - no schema: round every float output
        return None
    formal_in, formal_out = list(schema.inputs), list(schema.outputs)
    if not formal_in or not formal_out:
        return None

    def type_str(formal: list, i: int) -> str:
        return formal[min(i, len(formal) - 1)].type_str
    narrow_types = {type_str(formal_in, i) for i, v in enumerate(inputs)
                    if v is not None and v.dtype == narrow}
    return {j for j in range(len(node.output)) if type_str(formal_out, j) in narrow_types}


def value_info_type(vi, dims: Namer, dim_names: dict[str, str]) -> TensorType:
    """The dlvm type of a graph input: named dims for dim_param, fresh names for unnamed ones."""
    tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
    if tt is None:
        kind = vi.type.WhichOneof("value")
        raise OnnxImportError(f"input '{vi.name}' is a {kind}; dlvm tensors only")
    dtype = onnx_dtype(tt.elem_type, f"input '{vi.name}'")
    if not tt.HasField("shape"):
        raise OnnxImportError(f"input '{vi.name}' has no shape; dlvm needs each input's rank")
    shape: list[Dim] = []
    for i, d in enumerate(tt.shape.dim):
        if d.HasField("dim_value"):
            shape.append(int(d.dim_value))
        elif d.dim_param:
            if d.dim_param not in dim_names:
                dim_names[d.dim_param] = dims.fresh(d.dim_param, "D")
            shape.append(dim_names[d.dim_param])
        else:
            shape.append(dims.fresh(f"{vi.name}_d{i}", "D"))
    return TensorType(dtype, tuple(shape))


class GraphConverter:
    def __init__(self, e: Emitter, opsets: dict[str, int]):
        self.e = e
        self.opsets = opsets

    def op_version(self, node, opsets: dict[str, int] | None = None) -> int:
        from onnx import defs
        domain = node.domain or ""
        schema = defs.get_schema(node.op_type, (opsets or self.opsets).get(domain, 1), domain)
        return schema.since_version

    def run_graph(self, graph, scope: Scope, bound: dict[str, Value] | None = None) -> list[Value]:
        """Convert `graph` with outer names in `scope` and its own inputs `bound`; returns the
        Values of its outputs."""
        local: Scope = scope.new_child(dict(bound or {}))
        for init in graph.initializer:
            if init.name in local.maps[0]:
                continue
            onnx_dtype(init.data_type, f"initializer '{init.name}'")
            local[init.name] = self.e.constant(
                init.name, tensor_array(init, f"initializer '{init.name}'"))
        for node in graph.node:
            self.run_node(node, local)
        outs = []
        for o in graph.output:
            if o.name not in local:
                raise OnnxImportError(f"graph output '{o.name}' is never computed")
            outs.append(local[o.name])
        return outs

    def run_node(self, node, scope: Scope, opsets: dict[str, int] | None = None) -> None:
        inputs: list[Value | None] = []
        for name in node.input:
            if not name:
                inputs.append(None)
            elif name in scope:
                inputs.append(scope[name])
            else:
                raise OnnxImportError(f"{node_label(node)}: input '{name}' is not defined before "
                                      f"it is used")
        opsets = opsets or self.opsets
        h = handler_for(node.op_type, node.domain or "")
        version = self.op_version(node, opsets)
        narrow, which = _narrow_float(node, inputs), None
        if narrow is not None:
            which = _same_type_outputs(node, inputs, narrow, version)
            inputs = [cast(self.e, v, F32) if v is not None and v.dtype == narrow else v
                      for v in inputs]
        if h is None or version < h.min_version:
            fn = function_body(node, opsets, inputs)
            if fn is None:
                raise OnnxImportError(f"{node_label(node)}: unsupported ONNX op {node.op_type} "
                                      f"(opset {opsets.get(node.domain or '')})")
            # the function is one op: its results are rounded once, at its end
            outs = self._round_back(self.run_function(node, fn, inputs), narrow, which)
            for name, v in zip(node.output, outs):
                if name and v is not None:
                    scope[name] = v
            return
        ctx = NodeCtx(node, version, inputs, self.e, self, scope)
        outs = self._round_back(h.fn(ctx), narrow, which)
        extra = ctx.unread()
        if extra:
            raise ctx.fail(f"attribute{'s' if len(extra) > 1 else ''} {', '.join(extra)} "
                           f"not supported by the importer")
        for name, v in zip(node.output, outs):
            if name:
                if v is None:
                    raise ctx.fail(f"output '{name}' is not produced by the importer")
                scope[name] = v
        for name in list(node.output)[len(outs):]:
            if name:
                raise ctx.fail(f"optional output '{name}' is not supported")

    def _round_back(self, outs: list[Value | None], narrow: DType | None,
                    which: set[int] | None) -> list[Value | None]:
        """A narrow-float node's f32 results in its format (see _narrow_float): the outputs
        `which` names (None: every f32 output)."""
        if narrow is None:
            return outs
        return [cast(self.e, v, narrow) if v is not None and v.dtype == F32 and
                (which is None or j in which) else v for j, v in enumerate(outs)]

    def run_function(self, node, fn, inputs: list[Value | None]) -> list[Value | None]:
        """Inline the ONNX function that defines `node` (its schema's function body): the op is
        supported when every op of its body is."""
        from onnx import helper
        given = {a.name: a for a in node.attribute}
        defaults = {a.name: a for a in fn.attribute_proto}
        # a schema's function body refers to the op's attributes; those the node leaves out take
        # the schema's default value (e.g. HannWindow's periodic = 1)
        from onnx import defs
        try:
            schema = defs.get_schema(node.op_type, self.opsets.get(node.domain or "", 1),
                                     node.domain or "")
            for name, spec in schema.attributes.items():
                if name not in defaults and spec.default_value.type:
                    defaults[name] = spec.default_value
        except Exception:        # noqa: BLE001 - no schema: the function's own defaults only
            pass
        fscope: Scope = ChainMap({n: v for n, v in zip(fn.input, inputs) if n and v is not None})
        opsets = dict(self.opsets)
        opsets.update({o.domain or "": o.version for o in fn.opset_import})
        for inner in fn.node:
            n2 = type(inner)()
            n2.CopyFrom(inner)
            del n2.attribute[:]
            for a in inner.attribute:
                if a.ref_attr_name:
                    src = given.get(a.ref_attr_name) or defaults.get(a.ref_attr_name)
                    if src is None:
                        continue
                    a2 = type(a)()
                    a2.CopyFrom(src)
                    a2.name = a.name
                    n2.attribute.append(a2)
                else:
                    n2.attribute.append(a)
            self.run_node(n2, fscope, opsets)
        del helper
        return [fscope.get(o) for o in fn.output]


def function_body(node, opsets: dict[str, int], inputs: list[Value | None] | None):
    """The FunctionProto that defines `node` at the model's opset, or None. Context-dependent
    functions need the input types, so without `inputs` they count as available."""
    from onnx import FunctionProto, defs, helper
    domain = node.domain or ""
    try:
        schema = defs.get_schema(node.op_type, opsets.get(domain, 1), domain)
    except Exception:
        return None
    fn = FunctionProto()
    if schema.has_function:
        fn.CopyFrom(schema.function_body)
        return fn
    if schema.has_context_dependent_function:
        if inputs is None:
            return True
        types = []
        for v in inputs:
            if v is None:
                types.append(helper.make_empty_tensor_value_info("").type)
            else:
                elem = helper.np_dtype_to_tensor_dtype(v.dtype.np)
                dims = [d if isinstance(d, int) else None for d in v.shape]
                types.append(helper.make_tensor_type_proto(elem, dims))
        try:
            body = schema.get_context_dependent_function(
                node.SerializeToString(), [t.SerializeToString() for t in types])
        except Exception:
            return None
        fn.ParseFromString(body)
        return fn
    return None


def collect_unsupported(graph, opsets: dict[str, int], out: dict[str, int]) -> None:
    """Every node of `graph` and its subgraphs whose op (at the model's opset) has no handler,
    counted by `Op (domain opset N)`."""
    from onnx import defs
    for node in graph.node:
        domain = node.domain or ""
        h = handler_for(node.op_type, domain)
        opset = opsets.get(domain)
        why = None
        if opset is None:
            why = "domain not imported by the model"
        else:
            try:
                since = defs.get_schema(node.op_type, opset, domain).since_version
            except Exception:
                since = None
            if since is None:
                why = "no such op in ONNX"
            elif h is None or since < h.min_version:
                fn = function_body(node, opsets, None)
                if fn is None:
                    why = "not supported"
                elif fn is not True:
                    fopsets = dict(opsets)
                    fopsets.update({o.domain or "": o.version for o in fn.opset_import})
                    collect_unsupported(fn, fopsets, out)
        if why:
            dom = f"{domain} " if domain else ""
            key = f"{node.op_type} ({dom}opset {opset})"
            out[key] = out.get(key, 0) + 1
        for a in node.attribute:
            for g in _subgraphs(a):
                collect_unsupported(g, opsets, out)


def _subgraphs(attr: Any) -> list:
    if attr.type == attr.GRAPH:
        return [attr.g]
    if attr.type == attr.GRAPHS:
        return list(attr.graphs)
    return []
