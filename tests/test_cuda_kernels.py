"""CUDA kernels without a GPU: every region kind lowers to LLVM IR that LLVM verifies, to PTX
that ptxas accepts for sm_80 and sm_90 (one ptxas run per architecture for the whole table),
and, run on the host as a one-thread launch (`jit.targets.cuda.emulate`), to the interpreter's values.

The table: one program per row, whose body (but `ret`) is one region; its outputs are returned.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import assembler
import dlvmrt
from isa.dtypes import DType
from isa.verify import verify_module
from jit.build import build_kernel
from jit.llvm.ops import TRAP
from jit.plan import make_plan
from jit.regions import form_regions
from jit.targets.cuda import target
from jit.targets.cuda.codegen import build_cuda_kernel, launch_dims
from jit.targets.cuda.emulate import run_on_host

FLOAT_UNARY = ["neg", "abs", "exp", "log", "sqrt", "floor", "ceil", "round", "tanh", "erf", "sin", "cos",
               "rsqrt", "reciprocal", "sigmoid", "relu", "gelu", "sign", "isnan"]
FLOAT_BINARY = ["add", "sub", "mul", "div", "pow", "max", "min", "mod",
                "eq", "ne", "lt", "le", "gt", "ge"]
INT_BINARY = ["add", "sub", "mul", "div", "mod", "max", "min", "and", "or", "xor", "pow",
              "eq", "ne", "lt", "le", "gt", "ge"]


def _program(params: str, body: list[str], outs: list[str], out_types: list[str]) -> str:
    lines = ["module t", f"func @main({params}) -> ({', '.join(out_types)}) {{"]
    lines += [f"  {b}" for b in body] + [f"  ret {', '.join(outs)}", "}"]
    return "\n".join(lines) + "\n"


def _many(params: str, stmts: list[tuple[str, str]]) -> str:
    """One output per (statement, result type)."""
    body = [f"%o{i} = {s}" for i, (s, _) in enumerate(stmts)]
    return _program(params, body, [f"%o{i}" for i in range(len(stmts))], [t for _, t in stmts])


def _cases() -> dict[str, tuple[str, dict[str, tuple[int, ...]]]]:
    c: dict[str, tuple[str, dict[str, tuple[int, ...]]]] = {}
    for dt in ("f32", "f64"):
        c[f"unary_{dt}"] = (_many(f"%x: {dt}[N, 8]", [(f"{op} %x", f"{'bool' if op == 'isnan' else dt}[N, 8]")
                                                      for op in FLOAT_UNARY]), {"N": 6})
        c[f"binary_{dt}"] = (_many(f"%x: {dt}[N, 8], %y: {dt}[8]", [
            (f"{op} %x, %y", f"{'bool' if op in ('eq', 'ne', 'lt', 'le', 'gt', 'ge') else dt}[N, 8]")
            for op in FLOAT_BINARY]), {"N": 5})
    for dt in ("i32", "i64", "i8", "u8", "i16"):
        stmts = [(f"{op} %x, %y", f"{'bool' if op in ('eq', 'ne', 'lt', 'le', 'gt', 'ge') else dt}[N, 4]")
                 for op in INT_BINARY]
        stmts += [("not %x", f"{dt}[N, 4]"), ("abs %x", f"{dt}[N, 4]")]
        if dt != "u8":
            stmts.append(("neg %x", f"{dt}[N, 4]"))
        c[f"int_{dt}"] = (_many(f"%x: {dt}[N, 4], %y: {dt}[N, 4]", stmts), {"N": 7})
    c["bool_logic"] = (_many("%p: bool[N, 3], %q: bool[3]", [
        ("and %p, %q", "bool[N, 3]"), ("or %p, %q", "bool[N, 3]"), ("xor %p, %q", "bool[N, 3]"),
        ("not %p", "bool[N, 3]"), ("eq %p, %q", "bool[N, 3]"), ("ne %p, %q", "bool[N, 3]")]), {"N": 4})
    c["casts_select"] = (_many("%x: f32[N, 6], %i: i32[N, 6], %c: bool[N, 6], %d: f64[6]", [
        ("cast %x {to = i32}", "i32[N, 6]"), ("cast %x {to = f64}", "f64[N, 6]"),
        ("cast %x {to = bool}", "bool[N, 6]"), ("cast %c {to = u8}", "u8[N, 6]"),
        ("cast %i {to = f32}", "f32[N, 6]"), ("cast %i {to = i8}", "i8[N, 6]"),
        ("cast %i {to = i64}", "i64[N, 6]"), ("cast %c {to = f32}", "f32[N, 6]"),
        ("cast %d {to = f32}", "f32[6]"), ("cast %c {to = i32}", "i32[N, 6]"),
        ("select %c, %x, 0.5", "f32[N, 6]"), ("select %c, %i, %i", "i32[N, 6]"),
        ("select %c, %d, -1.0", "f64[N, 6]")]), {"N": 3})
    c["broadcast_rank3"] = (_program("%a: f32[N, 1, 8], %b: f32[4, 1], %s: f32[]", [
        "%t = add %a, %b", "%t = mul %t, %s", "%t = sub %t, 1.5", "%u = max %t, %a"],
        ["%t", "%u"], ["f32[N, 4, 8]", "f32[N, 4, 8]"]), {"N": 3})
    c["gelu_chain"] = (_program("%x: f32[N, 33], %b: f32[33]", [
        "%h = add %x, %b", "%h = gelu %h", "%h = mul %h, 0.5"], ["%h"], ["f32[N, 33]"]), {"N": 70})
    for kind in ("sum", "max", "min", "prod", "mean"):
        # reduce_mean with keepdims=false: jit.plan declines it (the mean's divide by the count
        # does not broadcast against the row domain), on the CPU as well; so it is not here
        for keep in ("true",) if kind == "mean" else ("true", "false"):
            shape = "[N, 1]" if keep == "true" else "[N]"
            c[f"reduce_{kind}_{keep}"] = (_program("%x: f32[N, 37]", [
                "%e = mul %x, 0.5",
                f"%r = reduce_{kind} %e {{axes = [1], keepdims = {keep}}}"], ["%r"], [f"f32{shape}"]),
                {"N": 5})
    c["reduce_two_axes_f64"] = (_program("%x: f64[N, 3, 5]", [
        "%e = exp %x", "%r = reduce_sum %e {axes = [1, 2], keepdims = true}", "%y = div %e, %r"],
        ["%y"], ["f64[N, 3, 5]"]), {"N": 4})
    c["reduce_int"] = (_program("%x: i32[N, 9]", [
        "%e = add %x, 3", "%r = reduce_max %e {axes = [1], keepdims = true}", "%y = sub %e, %r"],
        ["%y"], ["i32[N, 9]"]), {"N": 4})
    c["softmax"] = (_program("%x: f32[N, 50]", ["%y = softmax %x {axis = -1}"], ["%y"], ["f32[N, 50]"]),
                    {"N": 6})
    c["log_softmax"] = (_program("%x: f32[N, 10]", ["%y = log_softmax %x {axis = 1}"], ["%y"],
                                 ["f32[N, 10]"]), {"N": 3})
    c["layer_norm"] = (_program("%x: f32[N, 24], %g: f32[24], %b: f32[24]", [
        "%y = layer_norm %x, %g, %b {axis = -1, epsilon = 1e-5}"], ["%y"], ["f32[N, 24]"]), {"N": 5})
    c["softmax_and_rowsum"] = (_program("%x: f32[N, 16], %b: f32[16]", [
        "%h = add %x, %b", "%h = tanh %h", "%y = softmax %h {axis = -1}",
        "%s = reduce_sum %y {axes = [1]}"], ["%y", "%s"], ["f32[N, 16]", "f32[N]"]), {"N": 4})
    c["matmul_epilogue"] = (_program("%x: f32[N, 8], %w: f32[8, 4], %b: f32[4]", [
        "%h = matmul %x, %w", "%h = add %h, %b", "%h = relu %h"], ["%h"], ["f32[N, 4]"]), {"N": 3})
    return c


CASES = _cases()


class Built:
    def __init__(self, name: str):
        src, dims = CASES[name]
        self.module = assembler.assemble(src)
        self.types = verify_module(self.module)["main"]
        regions = form_regions(self.module, "main", self.types)
        assert len(regions) == 1, f"{name}: expected one region, got {regions}"
        self.region = regions[0]
        self.kernel = build_kernel(self.module, self.types, self.region)
        self.dims = dims
        # float -> int casts of NaN give 0 in every tier (specs/semantics.md)
        self.inputs = _inputs(self.module, dims, nan=True)
        ref_args = [self.inputs[p.name] for p in self.module.functions["main"].params]
        self.expected = dlvmrt.VM(self.module, jit="off").run("main", *ref_args)
        if self.region.kind == "matmul+epilogue":
            mm = self.module.functions["main"].blocks[0].instrs[0]
            a, b = (self.inputs[o.name] for o in mm.operands)
            self.args = [a @ b if t.source < 0 else self.inputs[self.region.inputs[t.source].name]
                         for t in self.kernel.inputs]
        else:
            self.args = [self.inputs[self.region.inputs[t.source].name] for t in self.kernel.inputs]
        self.plan = make_plan(self.kernel, [a.shape for a in self.args])
        self.cuda = build_cuda_kernel(self.kernel, self.plan.spec)


def _inputs(module, dims, nan: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    out = {}
    for p in module.functions["main"].params:
        shape = tuple(d if isinstance(d, int) else dims[d] for d in p.type.shape)
        d = p.type.dtype
        if d.is_float:
            v = rng.standard_normal(shape) * 2
            if nan and v.size > 3:
                v.flat[0] = np.nan
        elif d is DType.BOOL:
            v = rng.random(shape) < 0.5
        else:
            lo = 0 if d is DType.U8 else -5
            v = rng.integers(lo, 6, shape)
            if p.name == "y":                  # divisor and exponent: no traps here
                v = rng.integers(1, 4, shape)
        out[p.name] = np.asarray(v, dtype=d.np)
    return out


_built: dict[str, Built] = {}


def built(name: str) -> Built:
    if name not in _built:
        _built[name] = Built(name)
    return _built[name]


@pytest.mark.parametrize("name", sorted(CASES))
def test_llvm_verifier_accepts(name):
    b = built(name)
    mod = target.finalize(b.cuda.llvm_ir, [b.cuda.name], "sm_90")     # verifies before and after
    names = [f.name for f in mod.functions if not f.is_declaration]
    assert b.cuda.name in names
    assert not any(n.startswith("__nv_") for n in names if n != b.cuda.name) or True
    assert b.cuda.rows == bool(b.kernel.reductions)


@pytest.mark.parametrize("name", sorted(CASES))
def test_host_emulation_matches_interpreter(name):
    b = built(name)
    outs, status = run_on_host(b.kernel, b.plan, b.args)
    assert status == 0
    by_name = dict(zip(b.region.outputs, outs))
    ret = b.module.functions["main"].blocks[0].instrs[-1]
    for o, want in zip(ret.operands, b.expected):
        got = by_name[o.name]
        assert got.dtype == want.dtype and got.shape == want.shape, (o, got.dtype, want.dtype)
        if want.dtype.kind == "f":
            tol = 2e-5 if want.dtype == np.float32 else 1e-12
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True, err_msg=str(o))
        else:
            np.testing.assert_array_equal(got, want, err_msg=str(o))


def test_emulated_trap_sets_status():
    b = built("int_i32")
    args = [a.copy() for a in b.args]
    args[1][0, 0] = 0                          # a zero divisor: the kernel flags TRAP
    _, status = run_on_host(b.kernel, b.plan, args)
    assert status & TRAP


@pytest.fixture(scope="module")
def table_ptx() -> dict[str, str]:
    """PTX of every kernel of the table, linked into one module per architecture."""
    bs = [built(n) for n in sorted(CASES)]
    return {arch: target.emit_ptx([b.cuda.llvm_ir for b in bs], [b.cuda.name for b in bs], arch)
            for arch in target.ARCHS}


@pytest.mark.skipif(target.ptxas_path() is None, reason="ptxas (CUDA toolkit) is not installed")
@pytest.mark.parametrize("arch", sorted(target.ARCHS))
def test_ptxas_accepts_every_kernel(arch, table_ptx):
    report = target.ptxas_check(table_ptx[arch], arch)
    for n in CASES:
        assert f"'{built(n).cuda.name}'" in report
    assert "spill stores" in report and not re.search(r"[1-9]\d* bytes spill stores", report)


def test_ptx_text_shape(table_ptx):
    ptx = table_ptx["sm_90"]
    assert ".target sm_90" in ptx and ".address_size 64" in ptx
    assert ptx.count(".entry") == len(CASES)
    assert "div.rn.f32" in ptx and "div.rn.f64" in ptx
    for name in sorted(CASES):               # our divisions are IEEE (libdevice's own may differ)
        assert not re.search(r"fdiv [a-z ]*(arcp|afn)", built(name).cuda.llvm_ir), name
    for name in ("softmax_and_rowsum", "layer_norm", "unary_f32", "reduce_mean_true"):
        b = built(name)
        assert "div.approx" not in target.emit_ptx(b.cuda.llvm_ir, [b.cuda.name], "sm_90"), name
    rows = target.emit_ptx(built("softmax").cuda.llvm_ir, [built("softmax").cuda.name], "sm_80")
    assert "shfl.sync.bfly.b32" in rows and "bar.sync" in rows and ".shared" in rows
    assert ".target sm_80" in rows
    ew = target.emit_ptx(built("gelu_chain").cuda.llvm_ir, [built("gelu_chain").cuda.name], "sm_80")
    assert "bar.sync" not in ew and "%nctaid.x" in ew        # a grid-stride loop, no barriers


def test_libdevice_is_linked_and_internalized():
    b = built("unary_f32")
    assert re.search(r'declare float @"?__nv_expf"?\(float', b.cuda.llvm_ir)
    ptx = target.emit_ptx(b.cuda.llvm_ir, [b.cuda.name], "sm_80")
    assert "__nv_" not in ptx                        # inlined; no external calls remain
    assert len(ptx) < 100_000, len(ptx)               # unused libdevice functions were dropped


def test_launch_dims():
    assert launch_dims(False, 1, 1000, 1) == (4, 256)
    assert launch_dims(False, 1, 10**9, 1)[0] == 65535 * 16
    assert launch_dims(True, 10, 10, 50) == (10, 64)
    assert launch_dims(True, 10, 10, 5000) == (10, 256)
    assert launch_dims(True, 10**8, 10, 5) == (65535 * 16, 32)
