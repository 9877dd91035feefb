"""Float-to-integer casts are defined in every tier (specs/semantics.md, "Casts"): truncate toward
zero, saturate to the target's range, NaN to 0. Every float -> integer dtype pair is checked on
NaN, the infinities, the source's finite extremes and values just inside and outside the target's
range, against an oracle in Python integers, in the interpreter (the op's reference), the
constant folder, the CPU JIT and the CUDA kernel (PTX through ptxas where installed, and the
kernel's IR run on the host)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import assembler
import dlvmrt
from isa.verify import verify_module
from jit.build import build_kernel
from jit.passes.constfold import fold_constants
from jit.plan import make_plan
from jit.regions import form_regions
from jit.targets.cuda import target
from jit.targets.cuda.codegen import build_cuda_kernel
from jit.targets.cuda.emulate import run_on_host

FLOATS = ["f16", "f32", "f64"]
INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8, "i16": np.int16,
      "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32,
      "u64": np.uint64}


def probe(src: str, dst: str) -> np.ndarray:
    """NaN, infinities, the source's extremes, and the target's boundaries +-1 as the source
    rounds them, and a few ordinary values."""
    f, info = np.finfo(NP[src]), np.iinfo(NP[dst])
    vals = [np.nan, np.inf, -np.inf, f.max, f.min, f.tiny, -f.tiny, 0.0, -0.0, 2.7, -2.7, -0.5,
            0.99, -0.99, 100.5, -100.5]
    for edge in (info.max, info.min):
        for d in (-2, -1, 0, 1, 2):
            vals.append(float(edge + d))
            vals.append(float(edge) + d * 0.5)
    with np.errstate(over="ignore"):
        x = np.array(vals, dtype=np.float64).astype(NP[src])
    return np.concatenate([x, -x])


def oracle(x: np.ndarray, dst: str) -> np.ndarray:
    info = np.iinfo(NP[dst])
    out = []
    for v in x.astype(np.float64):
        if math.isnan(v):
            out.append(0)
        elif math.isinf(v):
            out.append(info.max if v > 0 else info.min)
        else:
            out.append(min(max(math.trunc(v), info.min), info.max))   # exact: Python integers
    return np.array(out, dtype=NP[dst])


PAIRS = [(s, d) for s in FLOATS for d in INTS]
# the compiled tiers have kernels for f32/f64 sources and these targets (the rest run on the
# interpreter, which test_interpreter_saturates covers)
KERNEL_PAIRS = [(s, d) for s, d in PAIRS if s != "f16" and d in ("i8", "i16", "i32", "i64", "u8")]


def _program(src: str, dst: str, n: int, scale: bool) -> str:
    # `mul %x, 1.0` makes a two-instruction region, so the JIT compiles it (a lone cast is
    # not worth a kernel); times 1.0 is exact for every value, NaN and infinities included
    body = f"  %y = mul %x, 1.0\n  %r = cast %y {{to = {dst}}}" if scale else \
        f"  %r = cast %x {{to = {dst}}}"
    return f"module t\nfunc @main(%x: {src}[{n}]) -> {dst}[{n}] {{\n{body}\n  ret %r\n}}\n"


@pytest.mark.parametrize("src,dst", PAIRS)
def test_interpreter_saturates(src, dst):
    x = probe(src, dst)
    (got,) = dlvmrt.VM(assembler.assemble(_program(src, dst, x.size, False)), jit="off").run("main", x)
    np.testing.assert_array_equal(got, oracle(x, dst))


@pytest.mark.parametrize("src,dst", PAIRS)
def test_constant_folder_saturates(src, dst):
    x = probe(src, dst)
    text = (f"module t\nconst @c : {src}[{x.size}] = 0\nfunc @main() -> {dst}[{x.size}] {{\n"
            f"  %r = cast @c {{to = {dst}}}\n  ret %r\n}}\n")
    module = assembler.assemble(text)
    module.constants["c"].value = x
    assert fold_constants(module)
    ops = [ins.op for ins in module.functions["main"].blocks[0].instrs]
    assert "cast" not in ops, ops
    (got,) = dlvmrt.VM(module, jit="off").run("main")
    np.testing.assert_array_equal(got, oracle(x, dst))


@pytest.mark.parametrize("src,dst", KERNEL_PAIRS)
def test_cpu_jit_saturates(src, dst):
    x = probe(src, dst)
    # as written (optimize=False): the optimizer would drop the `mul %x, 1.0` the region needs
    vm = dlvmrt.VM(assembler.assemble(_program(src, dst, x.size, True)), jit="always",
                   optimize=False)
    (got,) = vm.run("main", x)
    np.testing.assert_array_equal(got, oracle(x, dst))
    [(_, _, _, runner)] = vm.runners
    assert runner.compiled_calls == 1, runner.last_reason


def _cuda(src: str, dst: str):
    x = probe(src, dst)
    module = assembler.assemble(_program(src, dst, x.size, True))
    types = verify_module(module)["main"]
    [region] = form_regions(module, "main", types)
    kernel = build_kernel(module, types, region)
    plan = make_plan(kernel, [x.shape])
    return x, kernel, plan, build_cuda_kernel(kernel, plan.spec)


@pytest.mark.parametrize("src,dst", KERNEL_PAIRS)
def test_cuda_kernel_saturates_on_host(src, dst):
    x, kernel, plan, _ = _cuda(src, dst)
    (got,), status = run_on_host(kernel, plan, [x])
    assert status == 0
    np.testing.assert_array_equal(got, oracle(x, dst))


@pytest.mark.skipif(target.ptxas_path() is None, reason="ptxas (CUDA toolkit) is not installed")
def test_ptxas_accepts_saturating_casts():
    built = [_cuda(s, d)[3] for s, d in KERNEL_PAIRS]
    for arch in sorted(target.ARCHS):
        ptx = target.emit_ptx([b.llvm_ir for b in built], [b.name for b in built], arch)
        report = target.ptxas_check(ptx, arch)
        assert all(f"'{b.name}'" in report for b in built)


@pytest.mark.parametrize("dst", ["i8", "u8", "i16"])
@pytest.mark.parametrize("src", ["f32", "f64"])
def test_narrow_casts_lower_without_the_scalarized_intrinsic(src, dst):
    # LLVM scalarizes fptosi.sat / fptoui.sat to 8- and 16-bit lanes on x86 (one conversion and
    # one lane insert per element); these casts clamp in float and convert through i32 instead,
    # which test_cpu_jit_saturates shows gives the same values
    from types import SimpleNamespace

    from llvmlite import ir

    from isa.dtypes import dtype_from_name
    from jit.llvm.irutil import reg_type
    from jit.llvm.ops import lower_cast
    mod = ir.Module()
    vec = ir.VectorType(reg_type(dtype_from_name(src)), 16)
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [vec]), name="f")
    b = ir.IRBuilder(fn.append_basic_block())
    r = lower_cast(SimpleNamespace(mod=mod), b, dtype_from_name(dst), dtype_from_name(src),
                   fn.args[0])
    b.ret_void()
    assert r.type == ir.VectorType(reg_type(dtype_from_name(dst)), 16)
    text = str(mod)
    assert ".sat" not in text and "fptosi" in text, text
