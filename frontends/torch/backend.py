"""The `torch.compile` backend `dlvm` (registered through torch's `torch_dynamo_backends` entry
point, so `torch.compile(model, backend="dlvm")` needs no import of dlvm).

Dynamo keeps its guards and graph breaks; each FX graph it hands over goes through AOT autograd
with torch's core-ATen decompositions, and the forward graph becomes a dlvm module run by a VM
with the tiered JIT (`DLVM_JIT`, default `auto`). CPU tensors cross as NumPy views, without
copies. A graph with ATen ops the importer lacks runs in torch eagerly, with one warning listing
them (`DLVM_TORCH_STRICT=1` makes that an error). Backward graphs (training) go the same way.
"""
from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from frontends.base.names import Namer
from frontends.base.values import Value
from isa.builder import ModuleBuilder
from isa.module import Module, Reg
from isa.types import TensorType

from .errors import TorchImportError


def module_from_graph(gm: Any, name: str = "torch_graph") -> tuple[Module, list[int], list]:
    """A dlvm module for an ATen FX graph whose placeholders are its inputs; also the indices of
    the placeholders that are tensors (sizes passed as SymInts are bound by the tensors' dims),
    and per graph output either the module's result index or a size expression (AOT autograd
    returns sizes for the backward) with where its symbols are found in the inputs."""
    import torch

    from .aten import Lowerer
    from .importer import DimNames, TorchEmitter, check_supported, meta_type
    check_supported(gm.graph)
    mb = ModuleBuilder(name)
    regs = Namer()
    dims = DimNames()
    env: dict[Any, Any] = {}
    params: list[tuple[str, TensorType]] = []
    tensor_inputs: list[int] = []
    for i, node in enumerate(n for n in gm.graph.nodes if n.op == "placeholder"):
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            if val.device.type != "cpu":
                raise TorchImportError(f"input '{node.name}' is on {val.device}; the dlvm backend "
                                       f"takes CPU tensors")
            pname = regs.fresh(node.name, "x")
            t = meta_type(val, dims)
            params.append((pname, t))
            env[node] = Value(t, Reg(pname))
            tensor_inputs.append(i)
        else:
            env[node] = val          # a SymInt or Python scalar: sizes come from the tensors
    fb = mb.function("main", params, [])
    e = TorchEmitter(mb, fb, regs, Namer())
    outs = Lowerer(e, env, dims).run(gm.graph)
    where: dict[Any, tuple[int, int | None]] = {}     # symbol -> (placeholder, axis or None)
    for i, node in enumerate(n for n in gm.graph.nodes if n.op == "placeholder"):
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            for ax, size in enumerate(val.shape):
                expr = getattr(getattr(size, "node", None), "expr", None)
                if getattr(expr, "is_Symbol", False):
                    where.setdefault(expr, (i, ax))
        elif getattr(getattr(getattr(val, "node", None), "expr", None), "is_Symbol", False):
            where.setdefault(val.node.expr, (i, None))
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    written = list(out_node.args[0]) if isinstance(out_node.args[0], (list, tuple)) else \
        [out_node.args[0]]
    results, spec = [], []
    for v, w in zip(outs, written):
        if v is None and w is not None:
            raise TorchImportError(f"the graph's output {w} has no lowering to a tensor")
        if isinstance(v, Value):
            spec.append(len(results))
            results.append(v)
        elif v is None:           # a backward graph's gradient of an input that needs none
            spec.append(("none", None, {}))
        elif isinstance(v, int):
            spec.append(("size", v, {}))
        elif isinstance(v, torch.SymInt):
            expr = v.node.expr
            missing = [s for s in expr.free_symbols if s not in where]
            if missing:
                raise TorchImportError(f"the graph returns the size {expr}, not found in its inputs")
            spec.append(("size", expr, {s: where[s] for s in expr.free_symbols}))
        else:
            raise TorchImportError(f"the graph returns a {type(v).__name__}, not a tensor")
    fb.ret(*[e.materialize(v) for v in results])
    fb.func.results = [v.type for v in results]
    return mb.finish(), tensor_inputs, spec


def _size(expr: Any, symbols: dict, args: list) -> int:
    if isinstance(expr, int):
        return expr
    vals = {s: (int(args[i]) if ax is None else args[i].shape[ax]) for s, (i, ax) in symbols.items()}
    return int(expr.subs(vals))


def _to_torch(a: np.ndarray) -> Any:
    import torch
    if not a.flags.writeable:
        a = a.copy()          # a constant returned as is: torch tensors must be writable
    return torch.from_numpy(np.ascontiguousarray(a) if a.ndim else a.reshape(()))


def compile_graph(gm: Any, example_inputs: list) -> Any:
    """AOT autograd's forward compiler: the graph as a dlvm VM, or torch's own on failure."""
    from torch._functorch.aot_autograd import make_boxed_func

    import dlvmrt
    try:
        module, tensor_inputs, spec = module_from_graph(gm)
    except TorchImportError as err:
        if os.environ.get("DLVM_TORCH_STRICT") == "1":
            raise
        warnings.warn(f"dlvm runs this graph in torch: {err}", stacklevel=2)
        return make_boxed_func(gm.forward)
    vm = dlvmrt.VM(module, jit=os.environ.get("DLVM_JIT", "auto"))

    def run(args: list) -> list:
        xs = [args[i].detach().numpy() for i in tensor_inputs]
        sizes = [None if s[0] == "none" else _size(s[1], s[2], args)
                 for s in spec if not isinstance(s, int)]
        args.clear()          # boxed calling convention: let the inputs be freed early
        outs = [_to_torch(np.asarray(o)) for o in vm.run("main", *xs)]
        k = iter(sizes)
        return [outs[s] if isinstance(s, int) else next(k) for s in spec]

    run._boxed_call = True   # type: ignore[attr-defined]
    run.dlvm_module = module  # type: ignore[attr-defined]
    return run


def dlvm_backend(gm: Any, example_inputs: list, **options: Any) -> Any:
    """The `torch.compile` backend: `torch.compile(model, backend="dlvm")`."""
    from torch._decomp import core_aten_decompositions
    from torch._dynamo.backends.common import aot_autograd

    # the backward graph AOT autograd derives is ATen too: it runs in dlvm as well (a graph
    # with an op the importer lacks, such as convolution_backward, runs in torch, with the
    # warning that names it)
    return aot_autograd(fw_compiler=compile_graph, bw_compiler=compile_graph,
                        decompositions=core_aten_decompositions())(gm, example_inputs)
