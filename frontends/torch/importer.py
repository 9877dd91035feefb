"""torch.export program -> dlvm module.

The program is lowered to core ATen with torch's own decompositions, then each FX node is
lowered by the table in `aten.py` onto the shared emitter (`frontends.base.values`), which folds
what is known at import. The entry function `main` takes the user inputs in order and returns
the user outputs in order; parameters, buffers and lifted constants become module constants.
A symbolic size becomes a named dim: the `torch.export.Dim`'s own name where the caller gave
`dynamic_shapes`, else torch's symbol (`s0`). Every ATen op the table lacks is collected first
and reported in one error with its source lines.
"""
from __future__ import annotations

import inspect
import os
from typing import Any

import numpy as np

from frontends.base.errors import unsupported_report
from frontends.base.names import Namer, sanitize
from frontends.base.values import Emitter, Value
from isa.builder import ModuleBuilder
from isa.dtypes import DType, dtype_from_numpy
from isa.module import Module, Reg
from isa.types import Dim, TensorType

from .errors import TorchImportError


class TorchEmitter(Emitter):
    """The shared emitter; parameters stay known arrays (so that transposes and casts of weights
    fold at import) and become module constants under their own names only where used."""
    error = TorchImportError

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.names: dict[int, str] = {}

    def parameter(self, name: str, arr: np.ndarray) -> Value:
        v = Value(TensorType(torch_dtype(_np_to_torch_name(arr.dtype)), tuple(arr.shape)),
                  None, arr)
        self.names[id(arr)] = name
        return v

    def materialize(self, v: Value, hint: str = "c") -> Any:
        if v.operand is None and v.const is not None:
            hint = self.names.get(id(v.const), hint)
        return super().materialize(v, hint)


def _np_to_torch_name(dt: np.dtype) -> str:
    return "bool" if dt == np.bool_ else str(dt)


_DTYPES = {"float32": DType.F32, "float64": DType.F64, "float16": DType.F16,
           "bfloat16": DType.BF16, "int64": DType.I64, "int32": DType.I32, "int16": DType.I16,
           "int8": DType.I8, "uint8": DType.U8, "bool": DType.BOOL}


def torch_dtype(dt: Any) -> DType:
    """The dlvm dtype of a torch dtype (a fixed table: this runs under fake-tensor modes too)."""
    d = _DTYPES.get(str(dt).removeprefix("torch."))
    if d is None:
        raise TorchImportError(f"torch dtype {dt} has no dlvm equivalent")
    return d


class DimNames:
    """torch's size symbols -> dlvm dim names (the user's Dim names where known)."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.taken = Namer()

    def bind(self, symbol: str, wanted: str) -> None:
        if symbol not in self.names:
            self.names[symbol] = self.taken.fresh(wanted, "d")

    def dim(self, size: Any) -> Dim:
        if isinstance(size, int):
            return size
        expr = size.node.expr if hasattr(size, "node") else size
        if getattr(expr, "is_Integer", False):
            return int(expr)
        if getattr(expr, "is_Symbol", False):
            key = str(expr)
            if key not in self.names:
                self.bind(key, key)
            return self.names[key]
        return None        # a derived size (2*s0): checked by the VM when it runs


def meta_type(val: Any, dims: DimNames) -> TensorType:
    return TensorType(torch_dtype(val.dtype), tuple(dims.dim(s) for s in val.shape))


def _user_dim_names(mod: Any, example_args: tuple, dynamic_shapes: Any) -> list[dict[int, str]]:
    """Per user input, {axis: the Dim's name} from a `dynamic_shapes` spec (tuple or dict)."""
    if dynamic_shapes is None:
        return []
    specs: list[Any]
    if isinstance(dynamic_shapes, dict):
        try:
            fwd = mod.forward if hasattr(mod, "forward") else mod
            pnames = [p for p in inspect.signature(fwd).parameters]
        except (TypeError, ValueError):
            pnames = []
        specs = [dynamic_shapes.get(p) for p in pnames[:len(example_args)]]
    else:
        specs = list(dynamic_shapes)
    out = []
    for spec in specs:
        axes: dict[int, str] = {}
        items = spec.items() if isinstance(spec, dict) else enumerate(spec or ())
        for ax, d in items:
            n = getattr(d, "__name__", None)
            if n:
                axes[int(ax)] = n
        out.append(axes)
    return out


def export_program(model: Any, example_args: Any, dynamic_shapes: Any):
    import torch
    if isinstance(model, torch.export.ExportedProgram):
        return model
    if not isinstance(example_args, tuple):
        example_args = tuple(example_args) if isinstance(example_args, list) else (example_args,)
    if isinstance(model, torch.nn.Module):
        model = model.eval()
    try:
        return torch.export.export(model, example_args, dynamic_shapes=dynamic_shapes)
    except Exception as e:  # noqa: BLE001 - torch.export raises many unrelated types
        raise TorchImportError(f"torch.export could not export the model: "
                               f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                               ) from e


def _library_dirs() -> tuple[str, ...]:
    import torch
    return (os.path.dirname(torch.__file__) + os.sep,
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep)


_LIBRARY_DIRS: tuple[str, ...] = ()


def source_line(node: Any) -> str:
    """Where the user's code made `node`: 'file.py:12', the innermost frame of the export's stack
    trace outside torch itself (torch.nn's own modules are not where the user can act)."""
    global _LIBRARY_DIRS
    _LIBRARY_DIRS = _LIBRARY_DIRS or _library_dirs()
    st = node.meta.get("stack_trace") or ""
    last = user = ""
    for line in st.splitlines():
        line = line.strip()
        if line.startswith('File "'):
            try:
                f, rest = line[6:].split('", line ', 1)
            except ValueError:
                continue
            where = f"{os.path.basename(f)}:{rest.split(',')[0]}"
            if f.startswith(_LIBRARY_DIRS[1]):
                continue                   # dlvm's own frames (the call of import_torch)
            if not f.startswith(_LIBRARY_DIRS[0]):
                user = where
            last = where
    return user or last         # a torch.nn module's own line when no user frame made it


def op_name(target: Any) -> str:
    """'aten.add.Tensor' for an OpOverload; the callable's name otherwise."""
    if hasattr(target, "_overloadname"):       # an OpOverload prints as 'aten.add.Tensor'
        return str(target)
    return f"{getattr(target, '__module__', '')}.{getattr(target, '__name__', str(target))}"


def check_supported(graph: Any) -> None:
    from .aten import LOWERINGS
    missing: dict[str, list[str]] = {}
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        n = op_name(node.target)
        if n not in LOWERINGS:
            missing.setdefault(n, []).append(source_line(node))
    if missing:
        raise TorchImportError("cannot import this torch program: "
                               + unsupported_report("ATen", missing))


# ops the importer lowers itself rather than take torch's decomposition of: attention is one
# matmul-softmax-matmul here (torch's math decomposition gives the output strides that make a
# later `view` of a dynamic batch fail to decompose: GPT-2's `x.view(-1, x.size(-1))`)
KEEP = ("aten.scaled_dot_product_attention.default",)


def _decompositions() -> Any:
    import torch
    table = torch.export.default_decompositions()
    for name in KEEP:
        ns, op, overload = name.split(".")
        table.pop(getattr(getattr(getattr(torch.ops, ns), op), overload), None)
    return table


def import_exported(ep: Any, name: str | None = None,
                    user_dims: list[dict[int, str]] | None = None, trainable: Any = False
                    ) -> Module:
    import warnings

    import torch
    from torch.export.graph_signature import InputKind

    from .aten import Lowerer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)     # torch's own pytree deprecations
        ep = ep.run_decompositions(_decompositions())
    gm = ep.graph_module
    check_supported(gm.graph)
    mb = ModuleBuilder(sanitize(name or "torch_model", "m"))
    regs, consts = Namer(), Namer()
    dims = DimNames()
    sig = ep.graph_signature
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(sig.input_specs):
        raise TorchImportError("the exported program's inputs do not match its signature")
    user_dims = user_dims or []
    k_user = 0
    for node, spec in zip(placeholders, sig.input_specs):
        if spec.kind == InputKind.USER_INPUT:
            val = node.meta.get("val")
            if isinstance(val, torch.Tensor) and k_user < len(user_dims):
                for ax, dname in user_dims[k_user].items():
                    if ax < val.dim() and not isinstance(val.shape[ax], int):
                        dims.bind(str(val.shape[ax].node.expr), dname)
            k_user += 1
    params: list[tuple[str, TensorType]] = []
    env: dict[Any, Any] = {}
    fb = None
    pending_consts: list[tuple[Any, str, np.ndarray]] = []
    for node, spec in zip(placeholders, sig.input_specs):
        val = node.meta.get("val")
        if spec.kind == InputKind.USER_INPUT:
            if not isinstance(val, torch.Tensor):
                if isinstance(val, (int, float, bool)):
                    env[node] = val          # a specialized Python scalar
                    continue
                raise TorchImportError(f"input '{node.name}' is a {type(val).__name__}; dlvm "
                                       f"takes tensors (a symbolic int input is not supported)")
            pname = regs.fresh(node.name, "x")
            t = meta_type(val, dims)
            params.append((pname, t))
            env[node] = Value(t, Reg(pname))
        else:
            target = spec.target
            if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER) and target in ep.state_dict:
                tensor = ep.state_dict[target]
            elif target in ep.constants:
                tensor = ep.constants[target]
            else:
                raise TorchImportError(f"input '{node.name}' ({spec.kind.name}) has no value in "
                                       f"the exported program")
            if not isinstance(tensor, torch.Tensor):
                raise TorchImportError(f"constant '{target}' is a {type(tensor).__name__}, "
                                       f"not a tensor")
            pending_consts.append((node, target, to_numpy(tensor)))
    fb = mb.function("main", params, [])
    e = TorchEmitter(mb, fb, regs, consts)
    params_of = {s.target for s in sig.input_specs if s.kind == InputKind.PARAMETER}
    wanted = set(params_of) if trainable is True else set(trainable or ())
    unknown = sorted(wanted - params_of)
    if unknown:
        raise TorchImportError(f"trainable names no parameter: {', '.join(unknown)}")
    e.trainable_names = wanted
    for node, target, arr in pending_consts:
        # a trainable parameter stays a constant read as it is (nothing folded into it at
        # import), so gradients and updates of it reach every use
        env[node] = e.constant(target, arr) if target in wanted else e.parameter(target, arr)
    low = Lowerer(e, env, dims, gm)
    outs = low.run(gm.graph)
    results = []
    for v in outs:
        if not isinstance(v, Value):
            raise TorchImportError(f"an output is a {type(v).__name__}, not a tensor")
        results.append(v)
    fb.ret(*[e.materialize(v) for v in results])
    fb.func.results = [v.type for v in results]
    try:
        return mb.finish()
    except Exception as err:  # noqa: BLE001
        raise TorchImportError(f"the imported module does not verify (an importer bug): {err}"
                               ) from err


def to_numpy(t: Any) -> np.ndarray:
    """A tensor's values as an array (bfloat16 as ml_dtypes' bfloat16, bit for bit: NumPy has
    no such dtype, so torch cannot convert it itself)."""
    import torch
    t = t.detach()
    if t.dtype == torch.bfloat16:
        try:
            bf16 = DType.BF16.np
        except ImportError as err:
            raise TorchImportError(f"a bfloat16 tensor: {err}") from None
        return np.ascontiguousarray(t.cpu().view(torch.int16).numpy()).view(bf16)
    return np.ascontiguousarray(t.cpu().numpy())


def from_numpy(a: np.ndarray) -> Any:
    """The torch tensor of an array (ml_dtypes' bfloat16 bit for bit as torch.bfloat16)."""
    import torch
    if a.dtype.kind == "V" and dtype_from_numpy(a.dtype) is DType.BF16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def import_torch(model: Any, example_args: Any = (), dynamic_shapes: Any = None,
                 name: str | None = None, trainable: Any = False) -> Module:
    import torch
    if not isinstance(example_args, (tuple, list)):
        example_args = (example_args,)
    example_args = tuple(example_args)
    ep = export_program(model, example_args, dynamic_shapes)
    user_dims = _user_dim_names(model, example_args, dynamic_shapes) \
        if not isinstance(model, torch.export.ExportedProgram) else []
    if name is None and isinstance(model, torch.nn.Module):
        name = type(model).__name__
    return import_exported(ep, name, user_dims, trainable)


def load_pt2(path: str | os.PathLike, name: str | None = None) -> Module:
    import warnings

    import torch
    p = os.fspath(path)
    try:
        with open(p, "rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise TorchImportError(f"cannot read {p}: {e.strerror or e}") from None
    if magic != b"PK\x03\x04":      # checked here: torch logs a traceback for a non-archive
        raise TorchImportError(f"{p} is not a saved torch.export program (not a .pt2 archive)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)   # torch's own pytree deprecations
            ep = torch.export.load(p)
    except Exception as e:  # noqa: BLE001 - a corrupt archive raises many types
        raise TorchImportError(f"{p} is not a saved torch.export program "
                               f"({type(e).__name__}: {e})") from None
    return import_exported(ep, name or os.path.splitext(os.path.basename(p))[0])


def import_to_file(pt2_path: str | os.PathLike, out_path: str | os.PathLike) -> Module:
    from isa.bytecode import encode
    module = load_pt2(pt2_path)
    with open(out_path, "wb") as f:
        f.write(encode(module))
    return module
