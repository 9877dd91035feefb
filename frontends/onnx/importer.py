"""ONNX model -> dlvm module.

The entry function is `main`; its parameters are the graph's inputs that are not initializers, in
order (ONNX names sanitized into identifiers), and its results are the graph's outputs in order.
Initializers become module constants. Dynamic dims become named dims.
"""
from __future__ import annotations

import os
from collections import ChainMap
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from frontends.base.errors import unsupported_report
from isa.builder import ModuleBuilder
from isa.module import Module, Reg
from isa.types import TensorType

from . import ops  # noqa: F401  (registers the handlers)
from .errors import OnnxImportError
from .graph import GraphConverter, collect_unsupported, onnx_dtype, value_info_type
from .names import Namer, sanitize
from .values import Emitter, Value

MIN_OPSET = 13


@dataclass
class ImportResult:
    module: Module
    inputs: dict[str, str] = field(default_factory=dict)    # ONNX input name -> parameter name
    outputs: list[str] = field(default_factory=list)         # ONNX output names, result order
    dims: dict[str, str] = field(default_factory=dict)       # ONNX dim_param -> dlvm dim name
    # ONNX initializer name -> dlvm constant name, for those imported as trainable
    trainable: dict[str, str] = field(default_factory=dict)
    source_opset: int = 0        # the model's ai.onnx opset as written
    opset: int = 0               # the opset imported (newer when the model was converted)


def load_model(model: Any):
    """A ModelProto from a path, bytes or a ModelProto."""
    import onnx
    if isinstance(model, onnx.ModelProto):
        return model
    what = "the model bytes"
    try:
        if isinstance(model, (bytes, bytearray)):
            return onnx.load_from_string(bytes(model))
        if isinstance(model, (str, os.PathLike)):
            what = os.fspath(model)
            return onnx.load(what)
    except OSError as e:
        raise OnnxImportError(f"cannot read {what}: {e.strerror or e}") from None
    except Exception as e:  # noqa: BLE001 - protobuf's decode errors have no common public base
        raise OnnxImportError(f"{what} is not an ONNX model ({type(e).__name__}: {e})") from None
    raise TypeError(f"expected a path, bytes or onnx.ModelProto, got {type(model).__name__}")


def model_opsets(model) -> dict[str, int]:
    opsets = {}
    for o in model.opset_import:
        opsets["" if o.domain in ("", "ai.onnx") else o.domain] = int(o.version)
    return opsets


def upgrade_opset(model, source: int):
    """`model` converted by onnx's version converter to MIN_OPSET, the oldest opset the op
    handlers implement (ONNX models of older opsets are common: much of the ONNX model zoo)."""
    from onnx import version_converter
    try:
        return version_converter.convert_version(model, MIN_OPSET)
    except Exception as e:  # noqa: BLE001 - the converter raises RuntimeError, ValueError, ...
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise OnnxImportError(f"cannot import this ONNX model: its ai.onnx opset {source} is older "
                              f"than {MIN_OPSET}, and onnx's version converter could not upgrade "
                              f"it: {first}") from None


def check_model(model, opsets: dict[str, int]) -> None:
    """Raise one error naming everything that keeps this model from importing."""
    problems: list[str] = []
    unsupported: dict[str, int] = {}
    collect_unsupported(model.graph, opsets, unsupported)
    if unsupported:
        problems.append(unsupported_report("ONNX", unsupported))
    if problems:
        raise OnnxImportError("cannot import this ONNX model: " + "; ".join(problems))


def import_onnx_result(model: Any, name: str | None = None,
                       freeze: dict[str, Any] | None = None,
                       trainable: Any = None) -> ImportResult:
    """Import and also return the name mappings (ONNX input -> parameter, dims).

    `freeze` gives graph inputs a value fixed at import (they become constants, not
    parameters): shape-like inputs that dlvm needs before the program runs. `trainable` names
    initializers to fine-tune: they stay module constants that the program reads as they are
    (nothing is folded into them at import, e.g. a Gemm's transpose), so their gradients and
    updates apply to them (`result.trainable` maps each to its constant's name)."""
    model = load_model(model)
    opsets = model_opsets(model)
    source_opset = opsets.get("", 0)
    if "" in opsets and source_opset < MIN_OPSET:
        model = upgrade_opset(model, source_opset)
        opsets = model_opsets(model)
    check_model(model, opsets)
    g = model.graph
    mb = ModuleBuilder(sanitize(name or g.name or "onnx_model", "m"))
    init_names = {i.name for i in g.initializer}
    regs, dims = Namer(), Namer()
    result = ImportResult(mb.module, source_opset=source_opset, opset=opsets.get("", 0))
    params: list[tuple[str, TensorType]] = []
    freeze = dict(freeze or {})
    frozen = {}
    for vi in g.input:
        if vi.name in init_names:
            continue
        if vi.name in freeze:
            frozen[vi.name] = freeze.pop(vi.name)
            continue
        t = value_info_type(vi, dims, result.dims)
        pname = regs.fresh(vi.name, "x")
        result.inputs[vi.name] = pname
        params.append((pname, t))
    if freeze:
        raise OnnxImportError(f"freeze names no graph input: {', '.join(sorted(freeze))}")
    fb = mb.function("main", params, [])
    e = Emitter(mb, fb, regs, Namer())
    wanted = set(trainable or ())
    missing = sorted(wanted - init_names)
    if missing:
        raise OnnxImportError(f"trainable names no initializer: {', '.join(missing)} "
                              f"(initializers: {', '.join(sorted(init_names)[:12])}"
                              f"{', ...' if len(init_names) > 12 else ''})")
    e.trainable = result.trainable
    e.trainable_names = wanted

    scope = ChainMap({vi_name: Value(t, Reg(p)) for (vi_name, (p, t)) in
                      zip(result.inputs, params)})
    for k, arr in frozen.items():
        scope[k] = e.constant(k, np.asarray(arr))
    outs = GraphConverter(e, opsets).run_graph(g, scope)
    for o, v in zip(g.output, outs):
        if o.type.HasField("tensor_type") and o.type.tensor_type.elem_type:
            want = onnx_dtype(o.type.tensor_type.elem_type, f"output '{o.name}'")
            if want != v.dtype:
                raise OnnxImportError(f"output '{o.name}' is {v.dtype} in dlvm but {want} in ONNX "
                                      f"(an importer bug)")
        result.outputs.append(o.name)
    fb.ret(*[e.materialize(v) for v in outs])
    fb.func.results = [v.type for v in outs]
    mb.finish()
    return result


def import_onnx(model: Any, name: str | None = None, freeze: dict[str, Any] | None = None,
                trainable: Any = None) -> Module:
    """Import an ONNX model (path, bytes or ModelProto) as a verified dlvm module whose entry
    function `main` takes the graph's non-initializer inputs and returns its outputs.

    Raises OnnxImportError naming every unsupported op (with its opset), or the node and
    attribute the importer cannot represent."""
    return import_onnx_result(model, name, freeze, trainable).module


def import_to_file(model_path: str | os.PathLike, out_path: str | os.PathLike) -> Module:
    """Import `model_path` and write its bytecode to `out_path` (the `dlvm import` command)."""
    from isa.bytecode import encode
    module = import_onnx(model_path)
    data = encode(module)
    with open(out_path, "wb") as f:
        f.write(data)
    return module
