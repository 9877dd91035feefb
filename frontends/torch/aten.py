"""The table of core ATen op -> dlvm lowering, and the walk over an exported FX graph.

Each entry takes the Lowerer, the FX node and its arguments (FX nodes replaced by Values, lists
kept, Python scalars as they are) and returns a Value, or a tuple of them for multi-output ops.
Result types come from the node's own meta (`val`, torch's fake tensor): arithmetic is done in
the dtype torch promotes to, and reshapes of dynamic dims keep the dims torch knows.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from frontends.base.conv3d import conv3d
from frontends.base.conv_transpose import conv_transpose_2d, conv_transpose_3d
from frontends.base.maxpool_indices import maxpool2d_indices
from frontends.base.values import Emitter, Value, known
from isa.dtypes import DType
from isa.types import TensorType

from .errors import TorchImportError

Lowering = Callable[..., Any]
LOWERINGS: dict[str, Lowering] = {}


def lowers(*names: str):
    def deco(fn: Lowering) -> Lowering:
        for n in names:
            LOWERINGS[n] = fn
        return fn
    return deco


class Lowerer:
    def __init__(self, e: Emitter, env: dict, dims: Any, gm: Any = None):
        self.e = e
        self.env = env
        self.dims = dims
        self.gm = gm            # the graph's module, for its `get_attr` constants
        self.node: Any = None
        self.widened = False        # the current node computes its bf16 in f32 (see run)
        self._dim_values: dict[str, Value] = {}

    def run(self, graph: Any) -> list:
        from .importer import op_name, source_line
        outs: list = []
        for node in graph.nodes:
            if node.op in ("placeholder",):
                continue
            if node.op == "output":
                written = node.args[0]
                written = written if isinstance(written, (list, tuple)) else [written]
                outs = [self.arg(a) for a in written]
                continue
            if node.op == "get_attr" and self.gm is not None:
                self.env[node] = self.attribute(node)
                continue
            if node.op != "call_function":
                raise TorchImportError(f"FX node '{node.name}' ({node.op}) is not supported")
            self.node = node
            fn = LOWERINGS[op_name(node.target)]
            args = [self.arg(a) for a in node.args]
            kwargs = {k: self.arg(v) for k, v in node.kwargs.items()}
            # a node on bf16 computes in f32 and rounds its results once, as torch's own bf16
            # kernels do: its lowering's several instructions must not round in between
            self.widened = _has_narrow(args) or _has_narrow(list(kwargs.values()))
            if self.widened:
                args, kwargs = self._widen(args), {k: self._widen(v) for k, v in kwargs.items()}
            try:
                out = fn(self, *args, **kwargs)
                self.env[node] = self._round_back(out, node.meta.get("val")) if self.widened \
                    else out
            except TorchImportError as err:
                where = source_line(node)
                raise TorchImportError(f"{op_name(node.target)} ('{node.name}'"
                                       f"{', at ' + where if where else ''}): {err}") from None
            except Exception as err:  # noqa: BLE001 - a lowering's own bug, named with its node
                where = source_line(node)
                raise TorchImportError(f"{op_name(node.target)} ('{node.name}'"
                                       f"{', at ' + where if where else ''}): the lowering "
                                       f"failed ({type(err).__name__}: {err}); an importer bug"
                                       ) from err
        return outs

    def attribute(self, node: Any) -> Value:
        """A tensor the graph module holds (a constant dynamo lifted, `_tensor_constant0`): a
        known value, folded where it can be."""
        import torch
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        from .importer import to_numpy
        obj = self.gm
        for part in node.target.split("."):
            obj = getattr(obj, part, None)
        if not isinstance(obj, torch.Tensor):
            raise TorchImportError(f"FX node '{node.name}' reads '{node.target}', which is a "
                                   f"{type(obj).__name__}, not a tensor")
        with unset_fake_temporarily():      # AOT autograd compiles under its fake mode
            arr = to_numpy(obj)
        return self.e.parameter(node.target, arr)

    def arg(self, a: Any) -> Any:
        import torch.fx
        if isinstance(a, torch.fx.Node):
            return self.env[a]
        if isinstance(a, (list, tuple)):
            return type(a)(self.arg(x) for x in a)
        return a

    # -- helpers -------------------------------------------------------------------------

    def out_type(self, i: int | None = None) -> TensorType:
        from .importer import meta_type
        val = self.node.meta["val"]
        if i is not None:
            val = val[i]
        t = meta_type(val, self.dims)
        if self.widened and t.dtype.is_narrow and t.dtype.is_float:
            return t.with_dtype(DType.F32)     # the node computes in f32 (see run)
        return t

    def _widen(self, a: Any) -> Any:
        if isinstance(a, Value) and a.dtype.is_narrow and a.dtype.is_float:
            return self.cast(a, DType.F32)
        if isinstance(a, (list, tuple)):
            return type(a)(self._widen(x) for x in a)
        return a

    def _round_back(self, out: Any, meta: Any) -> Any:
        """A widened node's f32 results in the dtypes torch gives them (bf16 where it does)."""
        if isinstance(out, Value):
            dt = getattr(meta, "dtype", None)
            if dt is not None and out.dtype == DType.F32:
                from .importer import torch_dtype
                want = torch_dtype(dt)
                if want.is_narrow:
                    return self.cast(out, want)
            return out
        if isinstance(out, (list, tuple)) and isinstance(meta, (list, tuple)):
            return type(out)(self._round_back(o, m) for o, m in zip(out, meta))
        return out

    def size_value(self, size: Any) -> Value:
        """A size (an int, or torch's SymInt: a symbol or an expression of symbols such as
        s0 + 1 or 2*s0) as an i64 scalar at run time: each symbol read from the shape of an
        input that has its dim, then torch's arithmetic as dlvm's."""
        expr = size.node.expr if hasattr(size, "node") else size
        return self._sym(expr)

    def _sym(self, expr: Any) -> Value:
        import sympy
        if isinstance(expr, int) or getattr(expr, "is_Integer", False):
            return known(np.array(int(expr), np.int64))
        if isinstance(expr, float) or getattr(expr, "is_Float", False) or \
                getattr(expr, "is_Rational", False):
            return known(np.array(float(expr), np.float64))
        if getattr(expr, "is_Symbol", False):
            return self._symbol_value(self.dims.dim(expr))
        args = [self._sym(a) for a in expr.args]
        name = type(expr).__name__
        if any(a.dtype == DType.F64 for a in args):   # SymFloat arithmetic: in f64
            args = [self.cast(a, DType.F64) for a in args]
        ops = {"Add": "add", "Mul": "mul", "Max": "max", "Min": "min", "FloorDiv": "div",
               "Mod": "mod", "PythonMod": "mod", "FloatTrueDiv": "div", "IntTrueDiv": "div"}
        if isinstance(expr, sympy.Add):
            name = "Add"
        elif isinstance(expr, sympy.Mul):
            name = "Mul"
        if name == "ToFloat":
            return self.cast(args[0], DType.F64)
        if name in ("TruncToInt", "FloorToInt", "CeilToInt", "RoundToInt"):
            # a float size made an int again (an upsampling's 2.0 * s0)
            f = self.cast(args[0], DType.F64)
            f = f if name == "TruncToInt" else self.emit(
                {"FloorToInt": "floor", "CeilToInt": "ceil", "RoundToInt": "round"}[name], [f])
            return self.cast(f, DType.I64)
        if name == "Pow" and len(args) == 2 and getattr(expr.args[1], "is_Integer", False) \
                and 0 < int(expr.args[1]) <= 4:
            out = args[0]           # a small whole power (a side squared): products
            for _ in range(int(expr.args[1]) - 1):
                out = self.emit("mul", [out, args[0]])
            return out
        if name == "IntTrueDiv":
            args = [self.cast(a, DType.F64) for a in args]
        if name not in ops:
            raise TorchImportError(f"the size {expr} ({name}) cannot be computed at run time")
        out = args[0]
        for a in args[1:]:        # sizes are not negative: integer division floors
            out = self.emit(ops[name], [out, a])
        return out

    def _symbol_value(self, dim: Any) -> Value:
        if isinstance(dim, int):
            return known(np.array(dim, np.int64))
        if dim not in self._dim_values:
            for v in self.env.values():
                if isinstance(v, Value) and v.operand is not None and dim in v.shape:
                    shape = self.emit("shape_of", [v])
                    at = known(np.array(v.shape.index(dim), np.int64))
                    self._dim_values[dim] = self.emit("gather", [shape, at], axis=0)
                    break
            else:
                raise TorchImportError(f"no input has the dim {dim}")
        return self._dim_values[dim]

    def out_dtype(self) -> DType:
        return self.out_type().dtype

    def tensor(self, x: Any, dtype: DType) -> Value:
        """`x` as a Value of `dtype` (scalars become known arrays, tensors are cast)."""
        if isinstance(x, Value):
            return self.cast(x, dtype)
        if isinstance(x, (int, float, bool, np.number)):
            return known(np.array(x, dtype=dtype.np))
        if hasattr(x, "node") and hasattr(x.node, "expr"):
            # a SymInt / SymFloat (an upsampling's clamp to size - 1): computed at run time
            return self.cast(self.size_value(x), dtype)
        raise TorchImportError(f"a symbolic scalar ({x}) as an operand is not supported")

    def cast(self, v: Value, dtype: DType) -> Value:
        if v.dtype == dtype:
            return v
        return self.e.emit("cast", [v], to=dtype)

    def emit(self, op: str, args: list, **attrs: Any) -> Value:
        return self.e.emit(op, args, **attrs)


def _compute_dtype(lo: Lowerer, *xs: Any) -> DType:
    """The dtype torch computes a binary op in: promotion of its tensor and scalar operands."""
    import torch
    vals = []
    for x in xs:
        if isinstance(x, Value):
            vals.append(torch.empty((1,) * 0, dtype=_torch_dtype(x.dtype)))
        else:
            vals.append(x)
    if len(vals) == 1:
        return xs[0].dtype if isinstance(xs[0], Value) else lo.out_dtype()
    t = torch.result_type(vals[0], vals[1])
    from .importer import torch_dtype
    return torch_dtype(t)


def _has_narrow(xs: list) -> bool:
    for x in xs:
        if isinstance(x, Value) and x.dtype.is_narrow and x.dtype.is_float:
            return True
        if isinstance(x, (list, tuple)) and _has_narrow(list(x)):
            return True
    return False


def _torch_dtype(d: DType) -> Any:
    import torch
    if d is DType.BF16:
        return torch.bfloat16
    return torch.from_numpy(np.zeros((), d.np)).dtype


def _axis(a: int, rank: int) -> int:
    return a + rank if a < 0 else a


# -- elementwise ---------------------------------------------------------------------------

def _binary(op: str) -> Lowering:
    def lower(lo: Lowerer, a: Any, b: Any, **_: Any) -> Value:
        dt = _compute_dtype(lo, a, b)
        return lo.cast(lo.emit(op, [lo.tensor(a, dt), lo.tensor(b, dt)]), lo.out_dtype())
    return lower


for _op, _names in {
    "mul": ("aten.mul.Tensor", "aten.mul.Scalar"),
    "maximum": (), "minimum": (),
    "pow": ("aten.pow.Tensor_Tensor", "aten.pow.Tensor_Scalar", "aten.pow.Scalar"),
    "eq": ("aten.eq.Tensor", "aten.eq.Scalar"), "ne": ("aten.ne.Tensor", "aten.ne.Scalar"),
    "lt": ("aten.lt.Tensor", "aten.lt.Scalar"), "le": ("aten.le.Tensor", "aten.le.Scalar"),
    "gt": ("aten.gt.Tensor", "aten.gt.Scalar"), "ge": ("aten.ge.Tensor", "aten.ge.Scalar"),
    "and": ("aten.logical_and.default", "aten.bitwise_and.Tensor"),
    "or": ("aten.logical_or.default", "aten.bitwise_or.Tensor"),
    "xor": ("aten.logical_xor.default", "aten.bitwise_xor.Tensor"),
    "max": ("aten.maximum.default",), "min": ("aten.minimum.default",),
    "mod": ("aten.remainder.Tensor", "aten.remainder.Scalar"),      # fmod: aten_math.py
}.items():
    if _names:
        lowers(*_names)(_binary(_op))


@lowers("aten.add.Tensor", "aten.add.Scalar", "aten.sub.Tensor", "aten.sub.Scalar",
        "aten.rsub.Scalar", "aten.rsub.Tensor")
def _add_sub(lo: Lowerer, a: Any, b: Any, alpha: Any = 1) -> Value:
    name = lo.node.target.__name__ if hasattr(lo.node.target, "__name__") else ""
    op = "add" if "add" in name else "sub"
    if "rsub" in name:
        a, b = b, a
    dt = _compute_dtype(lo, a, b)
    bv = lo.tensor(b, dt)
    if alpha != 1:
        bv = lo.emit("mul", [bv, lo.tensor(alpha, dt)])
    return lo.cast(lo.emit(op, [lo.tensor(a, dt), bv]), lo.out_dtype())


@lowers("aten.div.Tensor", "aten.div.Scalar", "aten.div.Tensor_mode", "aten.div.Scalar_mode",
        "aten.true_divide.Tensor")
def _div(lo: Lowerer, a: Any, b: Any, rounding_mode: str | None = None) -> Value:
    out = lo.out_dtype()
    if rounding_mode is None:
        dt = out
    else:
        dt = _compute_dtype(lo, a, b)
    if rounding_mode is not None and not dt.is_float:
        q = lo.emit("div", [lo.tensor(a, DType.F64), lo.tensor(b, DType.F64)])
    else:
        q = lo.emit("div", [lo.tensor(a, dt), lo.tensor(b, dt)])
    if rounding_mode == "floor":
        q = lo.emit("floor", [q])
    elif rounding_mode == "trunc":
        q = lo.emit("mul", [lo.emit("sign", [q]), lo.emit("floor", [lo.emit("abs", [q])])])
    return lo.cast(q, out)


def _unary(op: str) -> Lowering:
    def lower(lo: Lowerer, a: Value) -> Value:
        out = lo.out_dtype()
        return lo.cast(lo.emit(op, [lo.cast(a, out if out.is_float else a.dtype)]), out)
    return lower


for _op in ("abs", "neg", "exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "relu", "erf", "sin",
            "cos", "floor", "ceil", "sign", "reciprocal"):
    lowers(f"aten.{_op}.default")(_unary(_op))
lowers("aten.round.default")(_unary("round"))
lowers("aten.logical_not.default", "aten.bitwise_not.default")(
    lambda lo, a: lo.emit("not", [lo.cast(a, DType.BOOL)]) if lo.out_dtype() == DType.BOOL
    else _raise("bitwise_not of integers"))
lowers("aten.isnan.default")(lambda lo, a: lo.emit("isnan", [a]))


def _raise(what: str) -> Any:
    raise TorchImportError(f"{what} is not supported")


@lowers("aten.gelu.default")
def _gelu(lo: Lowerer, a: Value, approximate: str = "none") -> Value:
    return lo.emit("gelu", [a], approximate=approximate)


@lowers("aten.exp2.default")
def _exp2(lo: Lowerer, a: Value) -> Value:
    dt = lo.out_dtype()
    return lo.emit("exp", [lo.emit("mul", [lo.cast(a, dt), lo.tensor(math.log(2.0), dt)])])


@lowers("aten.log1p.default", "aten.expm1.default", "aten.log2.default", "aten.log10.default")
def _log_family(lo: Lowerer, a: Value) -> Value:
    dt = lo.out_dtype()
    a = lo.cast(a, dt)
    n = lo.node.target.__name__.split(".")[0]
    if n == "log1p":
        return lo.emit("log", [lo.emit("add", [a, lo.tensor(1.0, dt)])])
    if n == "expm1":
        return lo.emit("sub", [lo.emit("exp", [a]), lo.tensor(1.0, dt)])
    base = 2.0 if n == "log2" else 10.0
    return lo.emit("div", [lo.emit("log", [a]), lo.tensor(math.log(base), dt)])


@lowers("aten.clamp.default", "aten.clamp.Tensor", "aten.hardtanh.default", "aten.clamp_min.default",
        "aten.clamp_max.default")
def _clamp(lo: Lowerer, a: Value, lo_: Any = None, hi: Any = None) -> Value:
    n = lo.node.target.__name__
    if n.startswith("hardtanh"):
        lo_ = -1.0 if lo_ is None else lo_
        hi = 1.0 if hi is None else hi
    elif n.startswith("clamp_max"):
        lo_, hi = None, lo_
    dt = lo.out_dtype()
    r = lo.cast(a, dt)
    if lo_ is not None:
        r = lo.emit("max", [r, lo.tensor(lo_, dt)])
    if hi is not None:
        r = lo.emit("min", [r, lo.tensor(hi, dt)])
    return r


@lowers("aten.leaky_relu.default")
def _leaky(lo: Lowerer, a: Value, slope: float = 0.01) -> Value:
    dt = a.dtype
    return lo.emit("select", [lo.emit("gt", [a, lo.tensor(0, dt)]), a,
                              lo.emit("mul", [a, lo.tensor(slope, dt)])])


@lowers("aten.hardsigmoid.default", "aten.hardswish.default")
def _hard(lo: Lowerer, a: Value) -> Value:
    dt = a.dtype
    t = lo.emit("div", [lo.emit("min", [lo.emit("max", [lo.emit("add", [a, lo.tensor(3.0, dt)]),
                                                       lo.tensor(0.0, dt)]),
                                        lo.tensor(6.0, dt)]), lo.tensor(6.0, dt)])
    return lo.emit("mul", [a, t]) if "swish" in lo.node.target.__name__ else t


@lowers("aten.silu.default")
def _silu(lo: Lowerer, a: Value) -> Value:
    return lo.emit("mul", [a, lo.emit("sigmoid", [a])])


@lowers("aten.where.self", "aten.where.ScalarSelf", "aten.where.ScalarOther", "aten.where.Scalar")
def _where(lo: Lowerer, c: Value, a: Any, b: Any) -> Value:
    dt = lo.out_dtype()
    return lo.emit("select", [lo.cast(c, DType.BOOL), lo.tensor(a, dt), lo.tensor(b, dt)])


@lowers("aten._to_copy.default", "aten.clone.default", "aten.alias.default",
        "aten.lift_fresh_copy.default", "aten.detach.default", "aten.contiguous.default",
        "aten._assert_tensor_metadata.default", "prims.convert_element_type.default")
def _copy(lo: Lowerer, a: Any, *_: Any, **__: Any) -> Any:
    if "assert_tensor_metadata" in lo.node.target.__name__:
        return None
    return lo.cast(a, lo.out_dtype())


@lowers("aten.scalar_tensor.default")
def _scalar_tensor(lo: Lowerer, x: Any, **_: Any) -> Value:
    return lo.tensor(x, lo.out_dtype())


@lowers("aten.full.default", "aten.zeros.default", "aten.ones.default", "aten.full_like.default",
        "aten.zeros_like.default", "aten.ones_like.default", "aten.empty.memory_format",
        "aten.empty_like.default", "aten.new_zeros.default", "aten.new_ones.default",
        "aten.new_full.default", "aten.new_empty.default", "aten.empty_permuted.default",
        "aten.empty_strided.default", "aten.new_empty_strided.default")
def _full(lo: Lowerer, *args: Any, **kw: Any) -> Value:
    n = lo.node.target.__name__
    t = lo.out_type()
    if n.startswith(("zeros", "new_zeros", "empty", "new_empty")):
        value: Any = 0
    elif n.startswith(("ones", "new_ones")):
        value = 1
    elif n.startswith("full_like"):
        value = args[1]
    elif n.startswith("new_full"):
        value = args[2]
    else:
        value = args[1]
    if hasattr(value, "node"):                   # a SymInt / SymFloat: its value at run time
        fill = lo.cast(lo.size_value(value), t.dtype)
    elif not isinstance(value, (int, float, bool)):
        raise TorchImportError("a fill value that is not a number")
    else:
        fill = known(np.array(value, t.dtype.np))
    # a derived size (n + 1) or a value of sizes: the tensor made at run time
    if any(d is None for d in t.shape) or fill.const is None:
        sizes = [lo.emit("reshape", [lo.size_value(d)], shape=[1])
                 for d in lo.node.meta["val"].shape]
        shape = sizes[0] if len(sizes) == 1 else lo.emit("concat", sizes, axis=0)
        return _same_shape(lo, lo.emit("fill", [shape, fill]))
    return lo.e.emit_const_fill(value, t)


@lowers("aten.arange.start_step", "aten.arange.default", "aten.arange.start")
def _arange(lo: Lowerer, *args: Any, **kw: Any) -> Value:
    t = lo.out_type()
    if not t.is_static:
        return _arange_symbolic(lo, t, args, kw)
    nums = [a for a in args if isinstance(a, (int, float))]
    start, step = 0, 1
    if len(nums) == 1:
        end = nums[0]
    else:
        start, end = nums[0], nums[1]
        step = nums[2] if len(nums) > 2 else kw.get("step", 1)
    return known(np.arange(start, end, step).astype(t.dtype.np))


def _arange_symbolic(lo: Lowerer, t: TensorType, args: tuple, kw: dict) -> Value:
    """arange to a length known at run time (arange(x.size(1))): an `iota` over the named dim,
    scaled and moved by integer start and step."""
    nums = [a for a in args if isinstance(a, (int, float))]
    start = nums[0] if len(args) > 1 and isinstance(args[0], (int, float)) else 0
    step = kw.get("step", args[2] if len(args) > 2 and isinstance(args[2], (int, float)) else 1)
    if t.rank == 1 and (t.dtype.is_int or t.dtype.is_float) and not isinstance(t.shape[0], str):
        return _arange_range(lo, t, args, kw)
    if t.rank != 1 or not isinstance(t.shape[0], str) or not isinstance(start, int) or \
            not isinstance(step, int):
        raise TorchImportError(f"arange to {t} from symbolic bounds is not supported")
    r = lo.emit("iota", [], shape=[t.shape[0]], axis=0, dtype=t.dtype)
    if step != 1:
        r = lo.emit("mul", [r, lo.tensor(step, t.dtype)])
    return lo.emit("add", [r, lo.tensor(start, t.dtype)]) if start else r


def _arange_range(lo: Lowerer, t: TensorType, args: tuple, kw: dict) -> Value:
    """An arange whose length no input dim names (arange(0, 64 * batch), as torch's
    max_unpool2d decomposes; a float one over an upsampling's output size): the `range` op on
    its bounds computed at run time."""
    bounds = list(args[:3])
    if len(bounds) == 1:
        bounds = [0, bounds[0]]
    if len(bounds) == 2:
        bounds.append(kw.get("step", 1))

    def scalar_of(v: Any) -> Value:
        if isinstance(v, Value):
            return lo.cast(v, t.dtype)
        if isinstance(v, (int, float)):
            return known(np.array(v, t.dtype.np))
        return lo.cast(lo.size_value(v), t.dtype)
    r = lo.emit("range", [scalar_of(b) for b in bounds])
    return Value(t, r.operand, r.const) if r.type.rank == 1 else r


# -- linear algebra ------------------------------------------------------------------------

@lowers("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def _mm(lo: Lowerer, a: Value, b: Value) -> Value:
    return lo.emit("matmul", [a, b])


@lowers("aten.addmm.default")
def _addmm(lo: Lowerer, bias: Value, a: Value, b: Value, beta: Any = 1, alpha: Any = 1) -> Value:
    dt = lo.out_dtype()
    r = lo.emit("matmul", [a, b])
    if alpha != 1:
        r = lo.emit("mul", [r, lo.tensor(alpha, dt)])
    bv = bias if beta == 1 else lo.emit("mul", [bias, lo.tensor(beta, dt)])
    return lo.emit("add", [r, bv])


@lowers("aten.convolution.default")
def _conv(lo: Lowerer, x: Value, w: Value, bias: Value | None, stride: list, padding: list,
          dilation: list, transposed: bool, output_padding: list, groups: int) -> Value:
    k = len(stride)
    if k not in (1, 2, 3):
        raise TorchImportError(f"{k}-D convolution is not supported (1-D, 2-D and 3-D are)")
    if k == 3 and transposed:
        return conv_transpose_3d(lo.e, x, w, bias, strides=list(stride), pads=list(padding) * 2,
                                 dilations=list(dilation), output_padding=list(output_padding),
                                 groups=groups, fail=TorchImportError)
    if k == 3:
        return conv3d(lo.e, x, w, bias, strides=list(stride), pads=list(padding) * 2,
                      dilations=list(dilation), groups=groups, hint="t",
                      fail=TorchImportError)
    if transposed:
        return _conv_transpose(lo, x, w, bias, list(stride), list(padding), list(dilation),
                               list(output_padding), groups)
    args = [x, w] + ([bias] if bias is not None else [])
    if k == 1:
        x1 = lo.emit("expand_dims", [x], axes=[2])
        w1 = lo.emit("expand_dims", [w], axes=[2])
        r = lo.emit("conv2d", [x1, w1] + args[2:], strides=[1, stride[0]],
                    pads=[0, padding[0], 0, padding[0]], dilations=[1, dilation[0]], groups=groups)
        return lo.emit("squeeze", [r], axes=[2])
    return lo.emit("conv2d", args, strides=list(stride),
                   pads=[padding[0], padding[1], padding[0], padding[1]],
                   dilations=list(dilation), groups=groups)


def _conv_transpose(lo: Lowerer, x: Value, w: Value, bias: Value | None, stride: list,
                    padding: list, dilation: list, output_padding: list, groups: int) -> Value:
    # sizes known only at run time (torch.compile(dynamic=True)) take conv_transpose_2d's
    # zero-inserted form
    if not (isinstance(x.shape[1], int) and w.type.is_static):
        raise TorchImportError("a transposed convolution needs static channels and weights "
                               "(the batch and the sizes may be dynamic)")
    one_d = len(stride) == 1
    if one_d:       # as 2-D with a unit height
        x = lo.emit("expand_dims", [x], axes=[2])
        w = lo.emit("expand_dims", [w], axes=[2])
        stride, padding, dilation, output_padding = ([1] + stride, [0] + padding,
                                                     [1] + dilation, [0] + output_padding)
    y = conv_transpose_2d(lo.e, x, w, bias, strides=stride, dilations=dilation,
                          pads=[padding[0], padding[1], padding[0], padding[1]],
                          output_padding=output_padding, groups=groups)
    return lo.emit("squeeze", [y], axes=[2]) if one_d else y


# -- normalization and activations ---------------------------------------------------------

@lowers("aten._native_batch_norm_legit_no_training.default")
def _bn(lo: Lowerer, x: Value, w: Value | None, b: Value | None, mean: Value, var: Value,
        momentum: float, eps: float) -> tuple:
    c = x.shape[1]
    dt = x.dtype
    w = w if w is not None else known(np.ones(c, dt.np))
    b = b if b is not None else known(np.zeros(c, dt.np))
    r = lo.emit("batch_norm", [x, w, b, mean, var], epsilon=float(eps))
    return (r, None, None)


@lowers("aten.native_layer_norm.default")
def _ln(lo: Lowerer, x: Value, shape: list, w: Value | None, b: Value | None, eps: float) -> tuple:
    axis = x.rank - len(shape)
    args = [x] + ([w] if w is not None else []) + ([b] if b is not None and w is not None else [])
    r = lo.emit("layer_norm", args, axis=axis, epsilon=float(eps))
    if b is not None and w is None:
        r = lo.emit("add", [r, b])
    if not _used_outputs(lo) - {0}:
        return (r, None, None)
    # the mean and 1/std a training graph saves for its backward, over the normalized dims
    axes = list(range(axis, x.rank))
    mean = lo.emit("reduce_mean", [x], axes=axes, keepdims=True)
    d = lo.emit("sub", [x, mean])
    var = lo.emit("reduce_mean", [lo.emit("mul", [d, d])], axes=axes, keepdims=True)
    rstd = lo.emit("rsqrt", [lo.emit("add", [var, lo.tensor(float(eps), x.dtype)])])
    return (r, mean, rstd)


def _used_outputs(lo: Lowerer) -> set:
    """Which results of a multi-output node the graph reads (getitem indices; a getitem nothing
    reads does not count: tracers unpack every result)."""
    return {u.args[1] for u in lo.node.users if u.target is operator.getitem and u.users}


@lowers("aten._softmax.default", "aten._log_softmax.default")
def _softmax(lo: Lowerer, x: Value, dim: int, half_to_float: bool = False) -> Value:
    op = "log_softmax" if "log" in lo.node.target.__name__ else "softmax"
    return lo.emit(op, [x], axis=_axis(dim, x.rank))


# -- pooling -------------------------------------------------------------------------------

def _per_dim(v: Any, nd: int) -> list:
    """A pooling argument (an int, or a list of one or nd entries) as nd entries."""
    v = [v] if isinstance(v, int) else list(v)
    return v * nd if len(v) == 1 else v


@lowers("aten.max_pool2d_with_indices.default", "aten.max_pool3d_with_indices.default")
def _maxpool(lo: Lowerer, x: Value, kernel: list, stride: list | None = None, padding: Any = 0,
             dilation: Any = 1, ceil_mode: bool = False) -> tuple:
    nd = x.rank - 2
    kernel = _per_dim(kernel, nd)
    pad = _per_dim(padding, nd)
    strides, dil = _per_dim(stride or kernel, nd), _per_dim(dilation, nd)
    r = lo.emit("maxpool2d", [x], kernel=kernel, strides=strides, pads=pad + pad, dilations=dil,
                ceil_mode=bool(ceil_mode))
    if not _used_outputs(lo) - {0}:
        return (r, None)
    # the indices (SegNet's max unpooling reads them): within each plane, as torch counts
    if nd != 2 or not all(isinstance(d, int) for d in x.shape[1:]):
        raise TorchImportError("max pool indices need a 2-D input, static but for the batch")
    out = lo.out_type(0).shape
    # ceil mode's last window may hang past the padding: as much padding more at the end
    extra = [max(0, (out[2 + i] - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1
                 - (x.shape[2 + i] + 2 * pad[i])) for i in range(2)]
    idx = maxpool2d_indices(lo.e, x, kernel, strides, dil,
                            [pad[0], pad[1], pad[0] + extra[0], pad[1] + extra[1]], per_plane=True)
    return (r, idx)


@lowers("aten.avg_pool2d.default", "aten.avg_pool3d.default")
def _avgpool(lo: Lowerer, x: Value, kernel: list, stride: list | None = None, padding: Any = 0,
             ceil_mode: bool = False, count_include_pad: bool = True,
             divisor_override: Any = None) -> Value:
    if divisor_override is not None:
        raise TorchImportError("avg_pool's divisor_override is not supported")
    nd = x.rank - 2
    kernel = _per_dim(kernel, nd)
    pad = _per_dim(padding, nd)
    return lo.emit("avgpool2d", [x], kernel=kernel, strides=_per_dim(stride or kernel, nd),
                   pads=pad + pad, dilations=[1] * nd, ceil_mode=bool(ceil_mode),
                   count_include_pad=bool(count_include_pad))


@lowers("aten._adaptive_avg_pool2d.default", "aten.adaptive_avg_pool2d.default")
def _adaptive_avg(lo: Lowerer, x: Value, size: list) -> Value:
    h, w = x.shape[2], x.shape[3]
    oh, ow = size
    if (oh, ow) == (1, 1):
        return lo.emit("reduce_mean", [x], axes=[2, 3], keepdims=True)
    if not isinstance(h, int) or not isinstance(w, int):
        raise TorchImportError(f"adaptive average pooling of a symbolic {h}x{w} image is not "
                               f"supported")
    if h % oh or w % ow:
        return _adaptive_bins(lo, x, [oh, ow], "reduce_mean")
    kh, kw = h // oh, w // ow
    return lo.emit("avgpool2d", [x], kernel=[kh, kw], strides=[kh, kw], pads=[0, 0, 0, 0])


# -- reductions ----------------------------------------------------------------------------

def _reduce(kind: str) -> Lowering:
    def lower(lo: Lowerer, x: Value, dims: Any = None, keepdim: bool = False, **kw: Any) -> Value:
        if isinstance(dims, int):
            dims = [dims]
        axes = None if not dims else [_axis(d, x.rank) for d in dims]
        out = lo.out_dtype()
        x = lo.cast(x, out) if kind in ("sum", "mean", "prod") else x
        return lo.emit(f"reduce_{kind}", [x], axes=axes, keepdims=bool(keepdim))
    return lower


lowers("aten.sum.dim_IntList", "aten.sum.default")(_reduce("sum"))
lowers("aten.mean.dim", "aten.mean.default")(_reduce("mean"))
lowers("aten.amax.default")(_reduce("max"))
lowers("aten.amin.default")(_reduce("min"))
lowers("aten.prod.dim_int", "aten.prod.default")(_reduce("prod"))


@lowers("aten.var.correction", "aten.var.dim")
def _var(lo: Lowerer, x: Value, dims: Any = None, correction: Any = None, keepdim: bool = False,
         unbiased: Any = None) -> Value:
    if isinstance(dims, int):
        dims = [dims]
    axes = list(range(x.rank)) if not dims else [_axis(d, x.rank) for d in dims]
    corr = 1 if correction is None else correction
    if unbiased is not None:
        corr = 1 if unbiased else 0
    mean = lo.emit("reduce_mean", [x], axes=axes, keepdims=True)
    d = lo.emit("sub", [x, mean])
    if all(isinstance(x.shape[a], int) for a in axes):
        s = lo.emit("reduce_sum", [lo.emit("mul", [d, d])], axes=axes, keepdims=bool(keepdim))
        n = math.prod(x.shape[a] for a in axes)
        return lo.emit("div", [s, lo.tensor(max(n - corr, 0), x.dtype)])
    # a symbolic count: the mean square scaled by n / (n - correction), n read at run time
    ms = lo.emit("reduce_mean", [lo.emit("mul", [d, d])], axes=axes, keepdims=bool(keepdim))
    if not corr:
        return ms
    sizes = lo.emit("gather", [lo.emit("shape_of", [x]), known(np.array(axes, np.int64))],
                    axis=0)
    n = lo.cast(lo.emit("reduce_prod", [sizes], axes=[0], keepdims=False), x.dtype)
    denom = lo.emit("max", [lo.emit("sub", [n, lo.tensor(corr, x.dtype)]), lo.tensor(0, x.dtype)])
    return lo.emit("div", [lo.emit("mul", [ms, n]), denom])


@lowers("aten.argmax.default", "aten.argmin.default")
def _argmax(lo: Lowerer, x: Value, dim: Any = None, keepdim: bool = False) -> Value:
    op = "argmax" if "argmax" in lo.node.target.__name__ else "argmin"
    if dim is None:
        x = lo.emit("reshape", [x], shape=[-1])
        dim = 0
    return lo.cast(lo.emit(op, [x], axis=_axis(dim, x.rank), keepdims=bool(keepdim)), DType.I64)


# -- movement ------------------------------------------------------------------------------

@lowers("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default")
def _view(lo: Lowerer, x: Value, shape: list) -> Value:
    t = lo.out_type()
    sizes = [d if isinstance(d, int) else -1 for d in t.shape]
    if sizes.count(-1) > 1:
        v = lo.emit("reshape_dyn", [x, _runtime_shape(lo, x, t)])
    else:
        v = lo.emit("reshape", [x], shape=sizes)
    return Value(t, v.operand, v.const) if v.type.rank == t.rank and v.dtype == t.dtype else v


def _runtime_shape(lo: Lowerer, x: Value, t: TensorType) -> Value:
    """t's shape as a run-time vector: a named dim read from the dim of x that has its name, at
    most one other unknown dim left to the element count (-1)."""
    parts: list[Value] = []
    free = 0
    shape = None
    for d in t.shape:
        if isinstance(d, int):
            parts.append(known(np.array([d], np.int64)))
            continue
        if isinstance(d, str) and d in x.shape:
            shape = shape if shape is not None else lo.emit("shape_of", [x])
            parts.append(lo.emit("slice", [shape], starts=[x.shape.index(d)],
                                 ends=[x.shape.index(d) + 1], axes=[0]))
            continue
        free += 1
        parts.append(known(np.array([-1], np.int64)))
    if free > 1:
        sizes = lo.node.meta["val"].shape
        parts = [lo.emit("reshape", [lo.size_value(d)], shape=[1]) for d in sizes]
        return parts[0] if len(parts) == 1 else lo.emit("concat", parts, axis=0)
    return parts[0] if len(parts) == 1 else lo.emit("concat", parts, axis=0)


@lowers("aten.permute.default")
def _permute(lo: Lowerer, x: Value, perm: list) -> Value:
    return lo.emit("transpose", [x], perm=[_axis(p, x.rank) for p in perm])


@lowers("aten.t.default")
def _t(lo: Lowerer, x: Value) -> Value:
    return lo.emit("transpose", [x], perm=list(reversed(range(x.rank))))


@lowers("aten.transpose.int")
def _transpose(lo: Lowerer, x: Value, a: int, b: int) -> Value:
    perm = list(range(x.rank))
    a, b = _axis(a, x.rank), _axis(b, x.rank)
    perm[a], perm[b] = perm[b], perm[a]
    return lo.emit("transpose", [x], perm=perm)


@lowers("aten.expand.default")
def _expand(lo: Lowerer, x: Value, shape: list, implicit: bool = False) -> Value:
    t = lo.out_type()
    if t.shape == x.shape:
        return x
    if any(d is None for d in t.shape):
        # a size no input dim names (7 * batch after a reshape): the target shape at run time
        parts = [lo.emit("reshape", [lo.size_value(d)], shape=[1])
                 for d in lo.node.meta["val"].shape]
        v = lo.emit("broadcast_dyn", [x, parts[0] if len(parts) == 1 else
                                      lo.emit("concat", parts, axis=0)])
        return Value(t, v.operand, v.const) if v.type.rank == t.rank else v
    return lo.emit("broadcast_to", [x], shape=list(t.shape))


@lowers("aten.unsqueeze.default")
def _unsqueeze(lo: Lowerer, x: Value, dim: int) -> Value:
    return lo.emit("expand_dims", [x], axes=[_axis(dim, x.rank + 1)])


@lowers("aten.squeeze.dims", "aten.squeeze.dim", "aten.squeeze.default")
def _squeeze(lo: Lowerer, x: Value, dims: Any = None) -> Value:
    if dims is None:
        dims = [i for i, d in enumerate(x.shape) if d == 1]
    if isinstance(dims, int):
        dims = [dims]
    asked = [_axis(d, x.rank) for d in dims]
    dims = [d for d in asked if x.shape[d] == 1]
    if lo.out_type().rank == x.rank - len(asked) and len(dims) < len(asked):
        # torch squeezed symbolic dims it knows are 1 (a CRNN's feature height under
        # torch.compile(dynamic=True)): the result's rank says so
        return _same_shape(lo, lo.emit("reshape_dyn", [x, lo.emit("gather", [
            lo.emit("shape_of", [x]),
            known(np.array([d for d in range(x.rank) if d not in asked], np.int64))], axis=0)]))
    if not dims:
        return x
    return lo.emit("squeeze", [x], axes=dims)


@lowers("aten.cat.default", "aten.concat.default")
def _cat(lo: Lowerer, xs: list, dim: int = 0) -> Value:
    dt = lo.out_dtype()
    xs = [lo.cast(x, dt) for x in xs if not (x.rank == 1 and x.shape[0] == 0 and dt)]
    if len(xs) == 1:
        return xs[0]
    return lo.emit("concat", xs, axis=_axis(dim, xs[0].rank))


def _same_shape(lo: Lowerer, v: Value) -> Value:
    """v typed with the node's own result type, whose dims torch knows where the op's rule
    could not (a run-time shape)."""
    t = lo.out_type()
    return Value(t, v.operand, v.const) if v.const is None and v.rank == t.rank else v


@lowers("aten.slice.Tensor")
def _slice(lo: Lowerer, x: Value, dim: int = 0, start: Any = None, end: Any = None,
           step: int = 1) -> Value:
    dim = _axis(dim, x.rank)
    start = 0 if start is None else start
    end = (1 << 62) if end is None else end
    if not isinstance(start, int) or not isinstance(end, int):
        # bounds computed from sizes at run time (x[: x.size(0) - 1])
        vec = [lo.emit("reshape", [lo.size_value(b)], shape=[1]) for b in (start, end)]
        one = [known(np.array([dim], np.int64)), known(np.array([step], np.int64))]
        return _same_shape(lo, lo.emit("slice_dyn", [x, *vec, *one]))
    if start == 0 and end >= (1 << 62) and step == 1:
        return x
    end = min(end, 1 << 62)
    return lo.emit("slice", [x], starts=[start], ends=[end], axes=[dim], steps=[step])


@lowers("aten.select.int")
def _select(lo: Lowerer, x: Value, dim: int, index: int) -> Value:
    dim = _axis(dim, x.rank)
    return lo.emit("gather", [x, known(np.array(index, np.int64))], axis=dim)


@lowers("aten.unfold.default")
def _unfold(lo: Lowerer, x: Value, dim: int, size: int, step: int) -> Value:
    """Tensor.unfold: windows of `size` every `step` along `dim`, the window as a new last axis.
    One gather of the windows' indices (an [n, size] table: a constant, or made at run time
    over a symbolic dim), then the window axis moved to the end."""
    dim = _axis(dim, x.rank)
    length = x.shape[dim]
    if size < 1 or step < 1 or (isinstance(length, int) and size > length):
        raise TorchImportError(f"unfold of size {size}, step {step} over a dim of {length}")
    if isinstance(length, int):
        n = (length - size) // step + 1
        table = known(np.arange(n, dtype=np.int64)[:, None] * step +
                      np.arange(size, dtype=np.int64))
    else:       # the windows' starts at run time: range(0, (length - size) // step * step + 1)
        n_len = lo.emit("gather", [lo.emit("shape_of", [x]), known(np.array(dim, np.int64))],
                        axis=0)
        last = lo.emit("mul", [lo.emit("div", [lo.emit("sub", [n_len, lo.tensor(size, DType.I64)]),
                                               lo.tensor(step, DType.I64)]),
                               lo.tensor(step, DType.I64)])
        starts = lo.emit("range", [lo.tensor(0, DType.I64), lo.emit("add", [
            last, lo.tensor(1, DType.I64)]), lo.tensor(step, DType.I64)])
        table = lo.emit("add", [lo.emit("expand_dims", [starts], axes=[1]),
                                known(np.arange(size, dtype=np.int64)[None, :])])
    g = lo.emit("gather", [x, table], axis=dim)                 # [..., n, size, ...]
    if dim + 1 < x.rank:
        perm = [*range(dim + 1), *range(dim + 2, x.rank + 1), dim + 1]
        g = lo.emit("transpose", [g], perm=perm)
    return _same_shape(lo, g)


@lowers("aten.split_with_sizes.default", "aten.split.Tensor")
def _split(lo: Lowerer, x: Value, sizes: Any, dim: int = 0) -> tuple:
    dim = _axis(dim, x.rank)
    n = x.shape[dim]
    if isinstance(sizes, int):
        if not isinstance(n, int):
            raise TorchImportError("split of a symbolic dim is not supported")
        sizes = [min(sizes, n - s) for s in range(0, n, sizes)]
    outs, at = [], 0
    for s in sizes:
        outs.append(lo.emit("slice", [x], starts=[at], ends=[at + s], axes=[dim]))
        at += s
    return tuple(outs)


@lowers("aten.constant_pad_nd.default")
def _pad(lo: Lowerer, x: Value, pad: list, value: float = 0.0) -> Value:
    begins, ends = [0] * x.rank, [0] * x.rank
    for i in range(len(pad) // 2):
        ax = x.rank - 1 - i
        begins[ax], ends[ax] = pad[2 * i], pad[2 * i + 1]
    if min(begins + ends) < 0:
        raise TorchImportError("negative padding is not supported")
    return lo.emit("pad", [x], pads=begins + ends, value=float(value))


@lowers("aten.embedding.default")
def _embedding(lo: Lowerer, w: Value, idx: Value, *_: Any) -> Value:
    return lo.emit("gather", [w, idx], axis=0)


@lowers("aten.index.Tensor")
def _index(lo: Lowerer, x: Value, indices: list) -> Value:
    used = [(i, v) for i, v in enumerate(indices) if v is not None]
    if len(used) == 1 and used[0][1].dtype == DType.BOOL:
        return _index_mask(lo, x, *used[0])
    if any(v.dtype == DType.BOOL for _, v in used):
        raise TorchImportError("indexing by a boolean mask together with other index tensors is "
                               "not supported")
    if len(used) == 1:
        ax, idx = used[0]
        return lo.emit("gather", [x, idx], axis=ax)
    return _index_many(lo, x, used)


def _index_many(lo: Lowerer, x: Value, used: list) -> Value:
    """x[..., i0, ..., i1, ...] with several index tensors (F.unfold's patches, a pair of
    coordinate tensors): the indexed axes moved to the front and flattened into one, read by one
    gather at the linear index sum(i_j * stride_j) of the broadcast indices (negative ones
    wrapped), then the result's dims put where torch puts them: the broadcast dims in place of
    adjacent indexed axes, else first."""
    axes = [a for a, _ in used]
    sizes = [x.shape[a] for a in axes]
    others = [a for a in range(x.rank) if a not in axes]
    xt = lo.emit("transpose", [x], perm=axes + others) if axes + others != list(range(x.rank)) \
        else x
    rest = [x.shape[a] for a in others]
    flat = [-1 if not isinstance(n, int) else n for n in rest]
    lead = math.prod(sizes) if all(isinstance(n, int) for n in sizes) else -1
    if not all(isinstance(n, int) for n in sizes[1:]) or [lead, *flat].count(-1) > 1:
        y = lo.emit("gather", [_flat_indexed(lo, xt, len(axes)),
                               _linear_index(lo, xt, [v for _, v in used])], axis=0)
        return _same_shape(lo, _index_layout(lo, y, axes, len(rest)))
    xf = lo.emit("reshape", [xt], shape=[lead, *flat])
    linear = None
    stride = 1
    for (_, idx), n in reversed(list(zip(used, sizes))):
        i = lo.cast(idx, DType.I64)
        if isinstance(n, int):      # a negative index counts from the end, as in torch
            size = lo.tensor(n, DType.I64)
            i = lo.emit("select", [lo.emit("lt", [i, lo.tensor(0, DType.I64)]),
                                   lo.emit("add", [i, size]), i])
        term = i if stride == 1 else lo.emit("mul", [i, lo.tensor(stride, DType.I64)])
        linear = term if linear is None else lo.emit("add", [term, linear])
        stride *= n if isinstance(n, int) else 1
    y = lo.emit("gather", [xf, linear], axis=0)
    return _index_layout(lo, y, axes, len(rest))


def _index_layout(lo: Lowerer, y: Value, axes: list, n_rest: int) -> Value:
    """The gathered [broadcast dims, other dims] where torch puts them: the broadcast dims in
    place of adjacent indexed axes, else first."""
    adjacent = axes == list(range(axes[0], axes[0] + len(axes)))
    if adjacent and axes[0] > 0:
        nb = y.rank - n_rest
        pre = list(range(nb, nb + axes[0]))
        perm = pre + list(range(nb)) + list(range(nb + axes[0], y.rank))
        y = lo.emit("transpose", [y], perm=perm)
    return y


def _flat_indexed(lo: Lowerer, xt: Value, k: int) -> Value:
    """xt with its first k (indexed) axes merged into one, sizes read at run time (symbolic
    dims: an upsampling's x[:, :, rows, cols] under torch.compile(dynamic=True))."""
    shape = lo.emit("shape_of", [xt])
    lead = lo.emit("reduce_prod", [lo.emit("slice", [shape], starts=[0], ends=[k], axes=[0])],
                   axes=[0], keepdims=True)
    rest = lo.emit("slice", [shape], starts=[k], ends=[xt.rank], axes=[0])
    return lo.emit("reshape_dyn", [xt, lo.emit("concat", [lead, rest], axis=0)])


def _linear_index(lo: Lowerer, xt: Value, idx: list) -> Value:
    """sum(i_j * stride_j) over the index tensors of xt's first len(idx) axes, negative ones
    wrapped, with the axes' sizes read at run time."""
    shape = lo.emit("shape_of", [xt])
    linear, stride = None, None
    for j in reversed(range(len(idx))):
        n = lo.emit("gather", [shape, known(np.array(j, np.int64))], axis=0)
        i = lo.cast(idx[j], DType.I64)
        i = lo.emit("select", [lo.emit("lt", [i, lo.tensor(0, DType.I64)]),
                               lo.emit("add", [i, n]), i])
        term = i if stride is None else lo.emit("mul", [i, stride])
        linear = term if linear is None else lo.emit("add", [term, linear])
        stride = n if stride is None else lo.emit("mul", [stride, n])
    return linear


def _index_mask(lo: Lowerer, x: Value, ax: int, mask: Value) -> Value:
    """x[..., mask] (the elements where a boolean mask over axes ax.. is true, in row-major
    order): the masked axes merged into one and `compress`ed by the flattened mask; the result's
    length is known only at run time."""
    r = mask.rank
    if r > 1:
        merged = [x.shape[a] for a in range(ax, ax + r)]
        lead = math.prod(merged) if all(isinstance(n, int) for n in merged) else -1
        sizes = [*x.shape[:ax], lead, *x.shape[ax + r:]]
        sizes = [n if isinstance(n, int) else -1 for n in sizes]
        if sizes.count(-1) > 1:
            raise TorchImportError("boolean-mask indexing with more than one symbolic dim is not "
                                   "supported")
        x = lo.emit("reshape", [x], shape=sizes)
        mask = lo.emit("reshape", [mask], shape=[-1])
    return lo.emit("compress", [x, mask], axis=ax)


@lowers("_operator.ge", "_operator.gt", "_operator.le", "_operator.lt", "_operator.eq",
        "_operator.ne")
def _sym_compare(lo: Lowerer, *_: Any) -> Any:
    """A comparison of sizes (torch's checks of data-dependent sizes): torch's symbolic value."""
    return lo.node.meta.get("val")


@lowers("aten._assert_scalar.default", "aten._assert_async.msg",
        "aten.sym_constrain_range_for_size.default")
def _size_assert(lo: Lowerer, *_: Any) -> None:
    """torch's run-time checks of a data-dependent size against the bounds it assumed (0 <= u0 <=
    numel): the ops that make the size keep their own traps, these add nothing to check."""
    return None


@lowers("aten.max.dim", "aten.min.dim")
def _max_dim(lo: Lowerer, x: Value, dim: int, keepdim: bool = False) -> tuple[Value, Value]:
    """(values, indices) along one dim: the first extreme's index, a NaN counting as one (as
    torch on the CPU)."""
    big = "max" in lo.node.target.__name__
    ax = _axis(dim, x.rank)
    values = lo.emit("reduce_max" if big else "reduce_min", [x], axes=[ax], keepdims=bool(keepdim))
    where = lo.emit("argmax" if big else "argmin", [x], axis=ax, keepdims=bool(keepdim))
    return values, lo.cast(where, DType.I64)


@lowers("aten.tril.default", "aten.triu.default")
def _tri(lo: Lowerer, x: Value, k: int = 0) -> Value:
    n, m = x.shape[-2], x.shape[-1]
    upper = "triu" in lo.node.target.__name__
    if not isinstance(n, int) or not isinstance(m, int):
        if n is None or m is None:
            raise TorchImportError("tril/triu of a size known only at run time is not supported")
        rows = lo.emit("iota", [], shape=[n, m], axis=0, dtype=DType.I64)
        cols = lo.emit("iota", [], shape=[n, m], axis=1, dtype=DType.I64)
        diff = lo.emit("sub", [cols, rows])          # the diagonal a position is on
        keep = lo.emit("ge" if upper else "le", [diff, lo.tensor(k, DType.I64)])
        return lo.emit("select", [keep, x, known(np.zeros((), x.dtype.np))])
    mask = np.triu(np.ones((n, m), bool), k) if upper else np.tril(np.ones((n, m), bool), k)
    return lo.emit("select", [known(mask), x, known(np.zeros((), x.dtype.np))])


@lowers("_operator.getitem")
def _getitem(lo: Lowerer, xs: Any, i: int) -> Any:
    return xs[i]


@lowers("aten.sym_size.int", "aten.sym_numel.default", "_operator.mul", "_operator.add",
        "_operator.sub", "_operator.floordiv", "_operator.truediv", "_operator.mod",
        "_operator.neg", "_operator.pow", "torch.sym_max", "torch.sym_min", "torch.sym_float",
        "torch.sym_int", "torch.sym_sum", "math.trunc", "math.floor", "math.ceil")
def _sym_size(lo: Lowerer, *_: Any) -> Any:
    """Size arithmetic: its value is torch's symbolic size (reshapes and expands take their
    result shapes from the node's meta, where these sizes are already named dims)."""
    return lo.node.meta.get("val")


@lowers("aten.dropout.default", "aten.native_dropout.default")
def _dropout(lo: Lowerer, x: Value, p: float = 0.5, train: Any = False) -> Any:
    native = "native" in lo.node.target.__name__
    if native and train is None:        # (ATen's native_dropout: an absent flag is training)
        train = True
    if not train or (p == 0 and not native):
        return x if not native else (x, None)
    from .aten_random import dropout  # training mode: a mask drawn per run
    y, keep = dropout(lo, x, float(p))
    return y if not native else (y, keep)


@lowers("aten.elu.default")
def _elu(lo: Lowerer, a: Value, alpha: float = 1.0, scale: float = 1.0,
         input_scale: float = 1.0) -> Value:
    dt = a.dtype
    neg = lo.emit("mul", [lo.emit("sub", [lo.emit("exp", [lo.emit("mul", [
        a, lo.tensor(input_scale, dt)])]), lo.tensor(1.0, dt)]), lo.tensor(alpha, dt)])
    r = lo.emit("select", [lo.emit("gt", [a, lo.tensor(0, dt)]), a, neg])
    return r if scale == 1 else lo.emit("mul", [r, lo.tensor(scale, dt)])


@lowers("aten.any.dim", "aten.any.dims", "aten.any.default", "aten.all.dim", "aten.all.default")
def _any_all(lo: Lowerer, x: Value, dims: Any = None, keepdim: bool = False) -> Value:
    if isinstance(dims, int):
        dims = [dims]
    axes = None if not dims else [_axis(d, x.rank) for d in dims]
    b = lo.cast(lo.emit("ne", [x, lo.tensor(0, x.dtype)]), DType.I32) if x.dtype != DType.BOOL \
        else lo.cast(x, DType.I32)
    kind = "reduce_max" if "any" in lo.node.target.__name__ else "reduce_min"
    return lo.cast(lo.emit(kind, [b], axes=axes, keepdims=bool(keepdim)), DType.BOOL)


@lowers("aten.native_group_norm.default")
def _group_norm(lo: Lowerer, x: Value, w: Value | None, b: Value | None, n: Any, c: int,
                hw: Any, groups: int, eps: float) -> tuple:
    rest = x.shape[1:]
    if not isinstance(c, int):
        raise TorchImportError("group norm over a symbolic channel count is not supported")
    if all(isinstance(d, int) for d in rest):
        per = int(np.prod(rest)) // groups
        g = lo.emit("reshape", [x], shape=[-1, groups, per])
        g = lo.emit("layer_norm", [g], axis=2, epsilon=float(eps))
        r = lo.emit("reshape", [g], shape=[-1, *rest])
    else:       # symbolic spatial dims (torch.compile(dynamic=True)): sizes at run time
        shape_x = lo.emit("shape_of", [x])
        batch = lo.emit("slice", [shape_x], starts=[0], ends=[1], axes=[0])
        g = lo.emit("reshape_dyn", [x, lo.emit("concat", [
            batch, known(np.array([groups, -1], np.int64))], axis=0)])
        g = lo.emit("layer_norm", [g], axis=2, epsilon=float(eps))
        r = lo.emit("reshape_dyn", [g, shape_x])      # (typed as the node's result below)
    shape = [c] + [1] * (x.rank - 2)
    if w is not None:
        r = lo.emit("mul", [r, lo.emit("reshape", [w], shape=shape)])
    if b is not None:
        r = lo.emit("add", [r, lo.emit("reshape", [b], shape=shape)])
    out = lo.out_type(0)
    return (Value(out, r.operand, r.const), None, None)


@lowers("aten.flip.default")
def _flip(lo: Lowerer, x: Value, dims: list) -> Value:
    axes = [_axis(d, x.rank) for d in dims]
    return lo.emit("slice", [x], starts=[-1] * len(axes), ends=[-(1 << 62)] * len(axes),
                   axes=axes, steps=[-1] * len(axes))


@lowers("aten.cumsum.default", "aten.cumprod.default")
def _cumsum(lo: Lowerer, x: Value, dim: int, dtype: Any = None) -> Value:
    x = lo.cast(x, lo.out_dtype())
    op = "cumprod" if "cumprod" in lo.node.target.__name__ else "cumsum"
    return lo.emit(op, [x, known(np.array(_axis(dim, x.rank), np.int64))])


@lowers("aten.upsample_nearest2d.vec", "aten.upsample_nearest2d.default")
def _upsample_nearest(lo: Lowerer, x: Value, size: Any, scales: Any = None, *_: Any) -> Value:
    t = lo.out_type()
    h, w = x.shape[2], x.shape[3]
    oh, ow = t.shape[2], t.shape[3]
    if not all(isinstance(d, int) for d in (h, w, oh, ow)) or oh % h or ow % w:
        return _resize_nearest(lo, x, t, scales)
    sh, sw = oh // h, ow // w
    y = lo.emit("expand_dims", [x], axes=[3, 5])
    shape = [x.shape[0], x.shape[1], h, sh, w, sw]
    y = lo.emit("broadcast_to", [y], shape=shape)
    v = lo.emit("reshape", [y], shape=[-1 if not isinstance(x.shape[0], int) else x.shape[0],
                                       x.shape[1], oh, ow])
    return Value(t, v.operand, v.const)


def _resize_nearest(lo: Lowerer, x: Value, t: TensorType, scales: Any) -> Value:
    """Nearest resizing by a factor that is not a whole number (or of symbolic sizes): torch
    reads source index floor(dst * in / out), or floor(dst / scale) for a given scale factor,
    which is the `resize` op's asymmetric transform with floor rounding."""
    common = dict(axes=[2, 3], mode="nearest", transform="asymmetric", nearest_mode="floor")
    if scales is not None and all(isinstance(s, (int, float)) for s in scales):
        v = lo.emit("resize", [x, known(np.array(scales, np.float32))], by="scales", **common)
    else:
        oh, ow = t.shape[2], t.shape[3]
        if not all(isinstance(d, int) for d in (oh, ow)):
            raise TorchImportError("nearest upsampling to a symbolic size is not supported")
        v = lo.emit("resize", [x, known(np.array([oh, ow], np.int64))], by="sizes", **common)
    return Value(t, v.operand, v.const)


@lowers("aten.upsample_bilinear2d.vec", "aten.upsample_bilinear2d.default")
def _upsample_bilinear(lo: Lowerer, x: Value, size: Any, align_corners: bool,
                       scales: Any = None, *_: Any) -> Value:
    """Bilinear resizing (F.interpolate(mode="bilinear")) by the `resize` op to the output's
    size, with PyTorch's coordinate transform."""
    t = lo.out_type()
    oh, ow = t.shape[2], t.shape[3]
    if not all(isinstance(d, int) for d in (oh, ow)):
        raise TorchImportError("bilinear upsampling to a symbolic size is not supported")
    v = lo.emit("resize", [x, known(np.array([oh, ow], np.int64))], axes=[2, 3], by="sizes",
                mode="linear", transform="align_corners" if align_corners
                else "pytorch_half_pixel")
    return Value(t, v.operand, v.const)


@lowers("aten.adaptive_max_pool2d.default")
def _adaptive_max(lo: Lowerer, x: Value, size: list) -> tuple:
    if _used_outputs(lo) - {0}:
        raise TorchImportError("adaptive max pool indices are not supported")
    if list(size) == [1, 1]:
        return (lo.emit("reduce_max", [x], axes=[2, 3], keepdims=True), None)
    h, w = x.shape[2], x.shape[3]
    if not isinstance(h, int) or not isinstance(w, int):
        raise TorchImportError(f"adaptive max pooling of a symbolic {h}x{w} image is not "
                               f"supported")
    oh, ow = size
    if h % oh == 0 and w % ow == 0:
        kh, kw = h // oh, w // ow
        return (lo.emit("maxpool2d", [x], kernel=[kh, kw], strides=[kh, kw], pads=[0, 0, 0, 0]),
                None)
    return (_adaptive_bins(lo, x, [oh, ow], "reduce_max"), None)


def _adaptive_bins(lo: Lowerer, x: Value, size: list, reduce: str) -> Value:
    """Adaptive pooling whose bins are not equal (bin i of n over m covers floor(i*m/n) to
    ceil((i+1)*m/n)): a max or a mean over a rectangle is one over its rows of one over its
    columns, so each spatial axis is reduced on its own, bin by bin, and the bins concatenated."""
    for k, n in enumerate(size):
        ax = x.rank - len(size) + k
        m = x.shape[ax]
        parts = []
        for i in range(n):
            lo_, hi = (i * m) // n, -((-(i + 1) * m) // n)
            piece = lo.emit("slice", [x], starts=[lo_], ends=[hi], axes=[ax])
            parts.append(lo.emit(reduce, [piece], axes=[ax], keepdims=True))
        x = parts[0] if n == 1 else lo.emit("concat", parts, axis=ax)
    return x


@lowers("aten._native_batch_norm_legit.no_stats", "aten._native_batch_norm_legit.default",
        "aten._native_batch_norm_legit_functional.default")
def _bn_batch_stats(lo: Lowerer, x: Value, w: Value | None, b: Value | None, *rest: Any) -> tuple:
    """Batch norm with the batch's own statistics (InstanceNorm, BatchNorm in training mode):
    the result only; the running statistics torch would update are not."""
    eps = float(rest[-1])
    axes = [a for a in range(x.rank) if a != 1]
    mean = lo.emit("reduce_mean", [x], axes=axes, keepdims=True)
    d = lo.emit("sub", [x, mean])
    var = lo.emit("reduce_mean", [lo.emit("mul", [d, d])], axes=axes, keepdims=True)
    r = lo.emit("mul", [d, lo.emit("rsqrt", [lo.emit("add", [var, lo.tensor(eps, x.dtype)])])])
    c = x.shape[1]
    shape = [c if isinstance(c, int) else -1] + [1] * (x.rank - 2)
    if w is not None:
        r = lo.emit("mul", [r, lo.emit("reshape", [w], shape=shape)])
    if b is not None:
        r = lo.emit("add", [r, lo.emit("reshape", [b], shape=shape)])
    return (r,) + (None,) * (len(lo.node.meta["val"]) - 1)


@lowers("aten.repeat.default")
def _repeat(lo: Lowerer, x: Value, reps: list) -> Value:
    lead = len(reps) - x.rank
    if lead:
        x = lo.emit("reshape", [x], shape=[1] * lead + [d if isinstance(d, int) else -1
                                                        for d in x.shape])
    if all(isinstance(r, int) for r in reps):
        counts = known(np.array(reps, np.int64))
    else:        # a count from a dynamic size (InstanceNorm's weight repeated per image)
        counts = lo.emit("concat", [lo.emit("reshape", [lo.size_value(r)], shape=[1])
                                    for r in reps], axis=0)
    v = lo.emit("tile_dyn", [x, counts])
    t = lo.out_type()
    return Value(t, v.operand, v.const) if v.const is None else v


# the rest of the table, by family (they register into LOWERINGS on import)
from . import aten_fused, aten_indexing, aten_math, aten_random  # noqa: E402,F401
