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
import threading
import warnings
import weakref
from typing import Any

import numpy as np

from frontends.base.names import Namer
from frontends.base.values import Value
from isa.builder import ModuleBuilder
from isa.module import Module, Reg
from isa.types import TensorType

from .errors import TorchImportError


def module_from_graph(gm: Any, name: str = "torch_graph",
                      frozen: dict[int, np.ndarray] | None = None) -> tuple[Module, list[int], list]:
    """A dlvm module for an ATen FX graph whose placeholders are its inputs; also the indices of
    the placeholders that are tensors (sizes passed as SymInts are bound by the tensors' dims),
    and per graph output either the module's result index or a size expression (AOT autograd
    returns sizes for the backward) with where its symbols are found in the inputs.
    `frozen`: placeholders (by index) whose values are known, imported as constants (folded
    where they can be: BatchNorm into its convolution, weight transposes) and not inputs."""
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
        if frozen and i in frozen:
            continue                 # a constant, set below
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
    for i, node in enumerate(n for n in gm.graph.nodes if n.op == "placeholder"):
        if frozen and i in frozen:
            env[node] = e.parameter(node.name, frozen[i])
    outs = Lowerer(e, env, dims, gm).run(gm.graph)
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
    if not a.flags.writeable:
        a = a.copy()          # a constant returned as is: torch tensors must be writable
    from .importer import from_numpy
    return from_numpy(np.ascontiguousarray(a) if a.ndim else a.reshape(()))


# the graphs the backend runs, for inspection (tests, tools): weakly held
RUNNERS: weakref.WeakSet = weakref.WeakSet()


def compile_graph(gm: Any, example_inputs: list, params: dict[int, Any] | None = None) -> Any:
    """AOT autograd's compiler: the graph as a dlvm VM, or torch's own on failure. `params`: the
    graph's inputs (by index) that are the model's parameters and buffers, in an inference
    graph; they are frozen into the module as constants (see _Frozen)."""
    from torch._functorch.aot_autograd import make_boxed_func
    try:
        runner = _Frozen(gm, params) if params else _Runner(gm, None)
        RUNNERS.add(runner)
    except TorchImportError as err:
        if os.environ.get("DLVM_TORCH_STRICT") == "1":
            raise
        warnings.warn(f"dlvm runs this graph in torch: {err}", stacklevel=2)
        return make_boxed_func(gm.forward)

    def run(args: list) -> list:
        return runner(args)

    run._boxed_call = True   # type: ignore[attr-defined]
    run.dlvm_module = runner.module  # type: ignore[attr-defined]
    return run


class _Runner:
    """One imported graph and its VM: called with the graph's boxed inputs."""

    def __init__(self, gm: Any, frozen: dict[int, np.ndarray] | None):
        import dlvmrt
        self.module, self.tensor_inputs, self.spec = module_from_graph(gm, frozen=frozen)
        self.vm = dlvmrt.VM(self.module, jit=os.environ.get("DLVM_JIT", "auto"))
        # inputs the graph's meta calls 0-d: dynamo passes an unspecialized Python float (a
        # SIREN's w0 under dynamic=True) as a one-element tensor
        self.scalars = {k for k, p in enumerate(self.module.functions["main"].params)
                        if p.type.rank == 0}

    def __call__(self, args: list) -> list:
        from .importer import to_numpy
        xs = [to_numpy(args[i]) for i in self.tensor_inputs]
        for k in self.scalars:
            if xs[k].shape == (1,):
                xs[k] = xs[k].reshape(())
        sizes = [None if s[0] == "none" else _size(s[1], s[2], args)
                 for s in self.spec if not isinstance(s, int)]
        args.clear()          # boxed calling convention: let the inputs be freed early
        outs = [_to_torch(np.asarray(o)) for o in self.vm.run("main", *xs)]
        k = iter(sizes)
        return [outs[s] if isinstance(s, int) else next(k) for s in self.spec]


class _Frozen:
    """An inference graph with the model's parameters and buffers as constants (as inductor's
    freezing): BatchNorm folds into its convolution and weights are packed once, which inputs
    read afresh on each call cannot be (a ResNet through the backend ran twice the time of its
    torch.export import). Each call checks that every frozen tensor is the same object at the
    same version (torch counts in-place writes: load_state_dict, an optimizer's step); one that
    changed is imported again with the new values, and after MAX_REFREEZES such changes the
    graph runs unfrozen, its parameters read as inputs."""

    MAX_REFREEZES = 3

    def __init__(self, gm: Any, params: dict[int, Any]):
        self.gm, self.params = gm, params
        self.refreezes = 0
        self._lock = threading.Lock()      # one re-import at a time; calls read a whole state
        self._freeze(params)

    def _freeze(self, params: dict[int, Any]) -> None:
        from torch._subclasses.fake_tensor import unset_fake_temporarily
        seen = {i: (t, t._version) for i, t in params.items()}
        with unset_fake_temporarily():     # AOT autograd compiles under its fake mode
            from .importer import to_numpy
            arrays = {i: to_numpy(t).copy() for i, t in params.items()}
        # the runner before the versions it was made for: a call that sees the new versions
        # runs the new weights
        self.runner = _Runner(self.gm, arrays)
        self.seen = seen
        self.module = self.runner.module

    def __call__(self, args: list) -> list:
        seen, runner = self.seen, self.runner
        if seen is not None and not self._current(seen, args):
            with self._lock:
                if self.seen is not None and not self._current(self.seen, args):
                    self._changed(args)
                runner = self.runner
        return runner(args)

    @staticmethod
    def _current(seen: dict, args: list) -> bool:
        return all(args[i] is t and t._version == version for i, (t, version) in seen.items())

    def _changed(self, args: list) -> None:
        self.refreezes += 1
        if self.refreezes > self.MAX_REFREEZES:
            self.runner = _Runner(self.gm, None)
            self.seen = None           # the weights keep changing: read them as inputs
        else:
            self._freeze({i: args[i] for i in self.params})
        self.module = self.runner.module


def _frozen_inputs(gm: Any, example_inputs: list) -> dict[int, Any]:
    """The inputs dynamo lifted from the model's parameters and buffers (by their source), when
    the graph is traced for inference (no grad): those can be frozen."""
    import torch
    if torch.is_grad_enabled():
        return {}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        return {}
    out = {}
    for i, (node, x) in enumerate(zip(placeholders, example_inputs)):
        source = getattr(node.meta.get("grapharg"), "source", None)
        while source is not None:
            if type(source).__name__.endswith("ParamBufferSource"):
                if isinstance(x, torch.Tensor) and x.device.type == "cpu" and \
                        not isinstance(x, torch._subclasses.FakeTensor):
                    out[i] = x
                break
            source = getattr(source, "base", None)
    return out


def dlvm_backend(gm: Any, example_inputs: list, **options: Any) -> Any:
    """The `torch.compile` backend: `torch.compile(model, backend="dlvm")`."""
    from torch._decomp import core_aten_decompositions
    from torch._dynamo.backends.common import aot_autograd

    # the backward graph AOT autograd derives is ATen too: it runs in dlvm as well (a graph
    # with an op the importer lacks, such as convolution_backward, runs in torch, with the
    # warning that names it)
    params = _frozen_inputs(gm, example_inputs)

    def forward(fw: Any, inputs: list) -> Any:
        # an inference graph takes dynamo's inputs in order: the parameters keep their places
        same = len(inputs) == len(example_inputs) and all(
            tuple(a.shape) == tuple(b.shape) for i, (a, b) in enumerate(zip(inputs, example_inputs))
            if i in params)
        return compile_graph(fw, inputs, params if same else None)
    return aot_autograd(fw_compiler=forward, bw_compiler=compile_graph,
                        decompositions=core_aten_decompositions())(gm, example_inputs)
