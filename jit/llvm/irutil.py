"""Small helpers for building LLVM IR with llvmlite: types of dlvm dtypes, intrinsics, constants,
loops. Imported only when something is compiled (llvmlite is imported lazily by `jit`)."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from llvmlite import ir

from isa.dtypes import DType

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()
F64 = ir.DoubleType()
PTR = ir.PointerType()

# fast-math flags of every float instruction by default: no NaN/Inf assumptions (so NaN and Inf
# keep their IEEE meaning), but contraction (FMA) and approximate intrinsics are allowed. No
# `arcp` either: InstCombine folds -(1 / sqrt y) (a neg, or a mul by -1, of an rsqrt) into one
# fdiv that takes the outer instruction's flags, and with `arcp` the x86 backend then uses the
# rsqrt estimate, NaN for 0 and Inf (found by the fuzzer: tests/test_fuzz_regressions.py).
DEFAULT_FLAGS = ("contract", "afn")
# reductions may also reassociate, so the vectorizer can keep several partial sums
REDUCE_FLAGS = DEFAULT_FLAGS + ("reassoc",)

# unsigned integers share the signed ones' LLVM types: the ops choose udiv, lshr, icmp ult,
# zext and uitofp by the dtype's class (jit/llvm/ops.py)
_REG = {DType.BOOL: I1, DType.I8: I8, DType.U8: I8, DType.I16: ir.IntType(16),
        DType.U16: ir.IntType(16), DType.I32: I32, DType.U32: I32, DType.I64: I64,
        DType.U64: I64, DType.F32: F32, DType.F64: F64}
# f16: in memory two bytes, in registers a float holding an f16 value (rounded by every cast to
# f16: jit/llvm/ops.py). Only casts, loads, stores and copies of f16 reach a kernel: the pipeline
# writes f16 arithmetic as f32 arithmetic between casts (jit/passes/widen.py), and the region
# former leaves any other to the interpreter.
HALF = ir.HalfType()
_REG[DType.F16] = F32
_MEM = {**_REG, DType.BOOL: I8, DType.F16: HALF}


def reg_type(d: DType) -> ir.Type:
    """The type a value of dtype `d` has in registers (bool is i1)."""
    if d not in _REG:
        raise NotImplementedError(f"the CPU JIT has no kernels for {d}")
    return _REG[d]


def mem_type(d: DType) -> ir.Type:
    """The type of one element of dtype `d` in memory (bool is one byte)."""
    if d not in _MEM:
        raise NotImplementedError(f"the CPU JIT has no kernels for {d}")   # the region declines
    return _MEM[d]


def type_suffix(t: ir.Type) -> str:
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{type_suffix(t.element)}"
    if isinstance(t, ir.FloatType):
        return "f32"
    if isinstance(t, ir.DoubleType):
        return "f64"
    if isinstance(t, ir.HalfType):
        return "f16"
    return f"i{t.width}"


def intrinsic(mod: ir.Module, name: str, ret: ir.Type, args: list[ir.Type],
              suffix: str | None = None) -> ir.Function:
    """Declare (once) the intrinsic `name.<suffix>` with an explicit signature."""
    full = f"{name}.{suffix if suffix is not None else type_suffix(ret)}"
    if full in mod.globals:
        return mod.globals[full]
    return ir.Function(mod, ir.FunctionType(ret, args), name=full)


class SplatConstant(ir.Constant):
    """A vector constant with every lane one scalar constant, printed `splat (float 1.0)`
    (LLVM 19+): the full lane list made printing the vector kernels' math constants half of
    their lowering time."""

    def __init__(self, t: ir.VectorType, scalar: ir.Constant):
        super().__init__(t, None)
        self.constant = [scalar] * t.count
        self.scalar = scalar

    def _get_reference(self):
        return f"splat ({self.scalar})"


class TextConstant(ir.Constant):
    """A constant printed as given (`zeroinitializer`, `poison`)."""

    def __init__(self, t: ir.Type, text: str):
        super().__init__(t, None)
        self.text = text

    def _get_reference(self):
        return self.text


def const(t: ir.Type, v) -> ir.Constant:
    if isinstance(t, ir.VectorType):
        return SplatConstant(t, const(t.element, v))
    if isinstance(t, (ir.FloatType, ir.DoubleType)):
        return ir.Constant(t, float(v))
    if t.width == 1:
        return ir.Constant(t, int(bool(v)))
    return ir.Constant(t, int(v) & ((1 << t.width) - 1))


def is_float_type(t: ir.Type) -> bool:
    return isinstance(t, (ir.FloatType, ir.DoubleType))


def elem_type(t: ir.Type) -> ir.Type:
    """The element type of a vector type; a scalar type itself."""
    return t.element if isinstance(t, ir.VectorType) else t


def like(t: ir.Type, elem: ir.Type) -> ir.Type:
    """`elem`, as a vector of t's length when t is a vector type."""
    return ir.VectorType(elem, t.count) if isinstance(t, ir.VectorType) else elem


def splat(b: ir.IRBuilder, v: ir.Value, n: int) -> ir.Value:
    """<n x T> with every lane v (a constant folds to a constant vector)."""
    vt = ir.VectorType(v.type, n)
    if isinstance(v, ir.Constant) and not isinstance(v.constant, (list, tuple)) and v.constant is not None:
        return SplatConstant(vt, v)
    poison = TextConstant(vt, "poison")
    one = b.insert_element(poison, v, ir.Constant(I32, 0))
    return b.shuffle_vector(one, poison, TextConstant(ir.VectorType(I32, n), "zeroinitializer"))


def loop_hints(mod: ir.Module, **hints: int) -> ir.MDValue:
    """Loop metadata (`!llvm.loop`) with `llvm.loop.<name>` hints, e.g. interleave_count=1
    for llvm.loop.interleave.count. The node's first operand refers to itself, as LLVM wants."""
    items = [mod.add_metadata([ir.MetaDataString(mod, "llvm.loop." + k.replace("_", ".")),
                               ir.Constant(I32, v)]) for k, v in sorted(hints.items())]
    node = ir.MDValue(mod, [], name=str(len(mod.metadata)))    # registers itself in the module
    node.operands = (node, *items)
    return node


@contextmanager
def for_range(b: ir.IRBuilder, start: ir.Value, stop: ir.Value, name: str = "i",
              hints: ir.MDValue | None = None, step: ir.Value | None = None
              ) -> Iterator[ir.Value]:
    """`for i in range(start, stop)` as a canonical loop (a phi in a header block); the body is
    built inside the `with`, the builder is left after the loop. `hints`: loop metadata from
    `loop_hints`, attached to the back edge. `step` (> 0; default 1) serves strided loops such
    as the GPU's grid-stride loops."""
    pre = b.block
    header = b.append_basic_block(f"{name}.head")
    body = b.append_basic_block(f"{name}.body")
    done = b.append_basic_block(f"{name}.done")
    b.branch(header)
    b.position_at_end(header)
    iv = b.phi(I64, name=name)
    iv.add_incoming(start, pre)
    b.cbranch(b.icmp_signed("<", iv, stop), body, done)
    b.position_at_end(body)
    yield iv
    if step is None:
        nxt = b.add(iv, ir.Constant(I64, 1), name=f"{name}.next", flags=("nsw",))
    else:
        nxt = b.add(iv, step, name=f"{name}.next")
    iv.add_incoming(nxt, b.block)
    latch = b.branch(header)
    if hints is not None:
        latch.set_metadata("llvm.loop", hints)
    b.position_at_end(done)
