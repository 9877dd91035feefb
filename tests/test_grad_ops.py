"""Every op's adjoint rule against central finite differences, generated from the op table.

Each case builds `loss = reduce_sum(op(inputs) * C)` (C a fixed random tensor, so every output
element gets its own cotangent) in float64 and checks `grad` with respect to every float input.
A new op must get a rule, or be marked NO_GRADIENT or NOT_DIFFERENTIABLE in its record.
"""
from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check

from isa.builder import ModuleBuilder
from isa.ops import OPS, Family
from isa.ops.opdef import NO_GRADIENT, NOT_DIFFERENTIABLE

RNG = np.random.default_rng(7)


def f(*shape, lo=None):
    """A float64 input: normal values, or uniform in [lo, lo + 1.5] (away from kinks)."""
    if lo is None:
        return ("f", RNG.standard_normal(shape))
    return ("f", RNG.uniform(lo, lo + 1.5, shape))


def apart(*shape):
    """Distinct values well apart (no ties for max/min/sort, no kink near 0)."""
    n = int(np.prod(shape)) if shape else 1
    v = (RNG.permutation(n) - n / 2 + 0.5) * 0.37
    return ("f", v.reshape(shape))


def k(value, dtype=np.int64):
    """An integer operand (a module constant: it has no gradient)."""
    return ("c", np.asarray(value, dtype=dtype))


U = [f(3, 4)]
POS = [f(3, 4, lo=0.5)]
CASES: dict[str, list[tuple[list, dict]]] = {
    "neg": [(U, {})], "abs": [([apart(3, 4)], {})], "exp": [(U, {})], "log": [(POS, {})],
    "sqrt": [(POS, {})], "rsqrt": [(POS, {})], "reciprocal": [(POS, {})], "tanh": [(U, {})],
    "sigmoid": [(U, {})], "relu": [([apart(3, 4)], {})], "erf": [(U, {})],
    "gelu": [(U, {}), (U, {"approximate": "tanh"})], "sin": [(U, {})], "cos": [(U, {})],
    "floor": [([apart(3, 4)], {})], "ceil": [([apart(3, 4)], {})],
    "round": [([apart(3, 4)], {})], "sign": [([apart(3, 4)], {})],
    "add": [([f(3, 4), f(4)], {}), ([f(3, 1), f(1, 4)], {})],
    "sub": [([f(3, 4), f(3, 1)], {})], "mul": [([f(2, 3, 4), f(3, 4)], {})],
    "div": [([f(3, 4), f(4, lo=0.5)], {})],
    "pow": [([f(3, 4, lo=0.5), f(3, 4)], {}), ([f(3, 4, lo=0.5), f(1)], {})],
    "max": [([apart(3, 4), apart(4)], {})], "min": [([apart(3, 4), apart(3, 1)], {})],
    "mod": [([f(3, 4, lo=0.2), f(4, lo=2.0)], {})],
    "select": [([k(RNG.random((3, 4)) < 0.5, np.bool_), f(3, 4), f(4)], {})],
    "cast": [(U, {"to": "f64"})],
    "reduce_sum": [(U, {"axes": [1]}), ([f(2, 3, 4)], {"axes": [0, 2], "keepdims": True})],
    "reduce_mean": [(U, {"axes": [0]}), ([f(2, 3, 4)], {})],
    "reduce_max": [([apart(3, 4)], {"axes": [1]})],
    "reduce_min": [([apart(2, 3, 4)], {"axes": [0, 2], "keepdims": True})],
    "reduce_prod": [([f(3, 4, lo=0.5)], {"axes": [1]})],
    "unbroadcast": [([f(2, 3, 4), f(3, 1)], {})],
    "matmul": [([f(3, 4), f(4, 2)], {}), ([f(2, 3, 4), f(4, 2)], {}), ([f(4), f(2, 4, 3)], {}),
               ([f(2, 3, 4), f(4)], {}), ([f(4), f(4)], {})],
    "conv2d": [([f(2, 3, 6, 6), f(4, 3, 3, 3), f(4)], {"pads": [1, 1, 1, 1]}),
               ([f(1, 4, 7, 6), f(4, 2, 3, 2)], {"strides": [2, 2], "groups": 2,
                                                   "pads": [0, 1, 1, 0]}),
               ([f(1, 2, 7, 7), f(2, 1, 3, 3)], {"dilations": [2, 2], "groups": 2,
                                                   "strides": [2, 1]})],
    "conv3d": [([f(1, 2, 3, 4, 4), f(3, 2, 2, 3, 2), f(3)], {"pads": [1, 0, 1, 0, 1, 1]}),
               ([f(2, 4, 5, 4, 5), f(4, 2, 2, 2, 3)], {"strides": [2, 1, 2], "groups": 2,
                                                         "dilations": [1, 2, 1]})],
    "softmax": [(U, {"axis": 1}), ([f(2, 3, 4)], {"axis": 0})],
    "log_softmax": [(U, {})],
    "layer_norm": [([f(2, 3, 4), f(4), f(4)], {}), ([f(2, 3, 4)], {"axis": 1})],
    "batch_norm": [([f(2, 3, 2, 2), f(3), f(3), f(3), f(3, lo=0.5)], {})],
    "maxpool2d": [([apart(1, 2, 5, 5)], {"kernel": [3, 3], "strides": [2, 2],
                                         "pads": [1, 1, 1, 1]})],
    "avgpool2d": [([f(1, 2, 5, 5)], {"kernel": [2, 2], "strides": [2, 2], "ceil_mode": True}),
                  ([f(1, 2, 4, 4)], {"kernel": [3, 3], "pads": [1, 1, 1, 1]})],
    "reshape": [(U, {"shape": [2, 6]})], "transpose": [([f(2, 3, 4)], {"perm": [2, 0, 1]})],
    "broadcast_to": [([f(3, 1)], {"shape": [2, 3, 4]})],
    "expand_dims": [(U, {"axes": [0, -1]})], "squeeze": [([f(3, 1, 4)], {"axes": [1]})],
    "concat": [([f(2, 3), f(2, 2)], {"axis": 1})],
    "slice": [([f(5, 6)], {"starts": [1, -1], "ends": [4, 0], "axes": [0, 1], "steps": [2, -2]}),
              ([f(5, 6)], {"starts": [1], "ends": [100], "axes": [1]})],
    "gather": [([f(4, 3), k([0, 2, 2, -1])], {"axis": 0}),
               ([f(2, 4, 3), k([[1, 0], [3, 1]])], {"axis": 1})],
    "pad": [(U, {"pads": [1, 0, 2, -1]})],
    "mov": [(U, {})],
    "cumsum": [(U, {"_operand": k(1)}), (U, {"_operand": k(0), "reverse": True})],
    "topk": [([apart(3, 5), k(2)], {"axis": 1})],
    "gather_elements": [([f(3, 4), k([[0, 3, 3, 1], [2, 2, 0, 0]])], {"axis": 1})],
    "reshape_dyn": [([f(3, 4), k([4, 3])], {})],
    "squeeze_dyn": [([f(3, 1, 4), k([1])], {})],
    "unsqueeze_dyn": [([f(3, 4), k([0])], {})],
    "broadcast_dyn": [([f(3, 1), k([2, 3, 4])], {})],
    "fill": [([k([2, 3]), f()], {})],
    "cumprod": [([f(3, 4, lo=0.5)], {"_operand": k(1)}),
                ([f(3, 4, lo=0.5)], {"_operand": k(0), "exclusive": True, "reverse": True})],
    "compress": [([f(4, 3), k([True, False, True, True], np.bool_)], {"axis": 0})],
    "einsum": [([f(2, 3, 4), f(2, 4, 5)], {"equation": "bij,bjk->bik"}),
               ([f(3, 4), f(4)], {"equation": "ij,j->i"}),
               ([f(3, 4), f(5)], {"equation": "ij,k->ik"})],
    "scatter_elements": [([f(3, 4), k([[1, 0], [2, 3]]), f(2, 2)], {"axis": 1}),
                         ([f(3, 4), k([[1, 1], [0, 2]]), f(2, 2)], {"axis": 0, "reduction": "add"})],
    "scatter_nd": [([f(4, 3), k([[1], [3]]), f(2, 3)], {}),
                   ([f(4, 3), k([[1], [1]]), f(2, 3)], {"reduction": "add"})],
    "gather_nd": [([f(4, 3), k([[1, 2], [3, 0], [1, 2]])], {})],
    "pool_grad": [([f(1, 2, 5, 5), f(1, 2, 3, 3)], {"kernel": [2, 2], "strides": [2, 2],
                                                    "ceil_mode": True, "kind": "avg"})],
    "resize": [([f(1, 2, 3, 4), k([2.0, 1.5], np.float32)], {"axes": [2, 3], "mode": "linear"}),
               ([f(2, 5), k([3, 2])], {"axes": [0, 1], "by": "sizes", "mode": "cubic",
                                       "transform": "align_corners"}),
               ([f(1, 1, 6, 4), k([0.5, 2.0], np.float32)],
                {"axes": [2, 3], "mode": "linear", "antialias": True})],
}


def build(op: str, specs: list, attrs: dict):
    attrs = dict(attrs)
    extra = attrs.pop("_operand", None)
    if extra is not None:
        specs = specs + [extra]
    mb = ModuleBuilder("case")
    params, inputs, consts = [], {}, {}
    for i, (kind, value) in enumerate(specs):
        if kind == "f":
            params.append((f"x{i}", f"f64[{', '.join(map(str, value.shape))}]"))
            inputs[f"x{i}"] = value
        else:
            consts[i] = mb.constant(f"c{i}", value)
    fb = mb.function("main", params, ["f64[]"])
    operands = [consts[i] if i in consts else fb.arg(f"x{i}") for i in range(len(specs))]
    if "to" in attrs:
        from isa.builder import dtype_of
        attrs["to"] = dtype_of(attrs["to"])
    out = fb.emit(op, operands, attrs, results=2 if op == "topk" else None)
    r = out[0] if isinstance(out, list) else out
    shape = fb._type_of(r).shape
    if all(isinstance(d, int) for d in shape):
        weight = mb.constant("ct", RNG.standard_normal(shape))
    else:      # a shape known only at run time: a cotangent that still differs per element
        weight = fb.sin(fb.mul(r, 3.0))
    fb.ret(fb.reduce_sum(fb.mul(r, weight)))
    return mb.finish(), inputs


ALL_CASES = [(op, i, *c) for op, cs in CASES.items() for i, c in enumerate(cs)]


@pytest.mark.parametrize("op, i, specs, attrs", ALL_CASES, ids=[f"{c[0]}-{c[1]}" for c in ALL_CASES])
def test_adjoint_matches_finite_differences(op, i, specs, attrs):
    module, inputs = build(op, specs, attrs)
    check(module, inputs)


def test_every_op_has_a_rule_or_is_marked():
    """Each row says what grad does with it: a rule (checked against differences above), no
    gradient (integer, boolean or piecewise-constant results), or not differentiable yet. A row
    left at vjp=None (a new op nobody thought about) fails here."""
    for op in OPS.values():
        assert op.vjp is not None, f"{op.name}: give it an adjoint rule (OpDef.vjp), or mark it " \
                                   f"NO_GRADIENT or NOT_DIFFERENTIABLE"
        if op.family is Family.CONTROL or op.vjp in (NO_GRADIENT, NOT_DIFFERENTIABLE):
            continue
        assert op.name in CASES, f"{op.name} has an adjoint rule but no finite-difference case"


# forward mode is reverse mode transposed, so it needs every rule's own code differentiable
NO_JVP = {"maxpool2d"}       # pool_grad kind "max" has no adjoint yet


@pytest.mark.parametrize("op, i, specs, attrs", ALL_CASES, ids=[f"{c[0]}-{c[1]}" for c in ALL_CASES])
def test_jvp_matches_directional_differences(op, i, specs, attrs):
    from dlvmrt.vm import VM
    from isa.autodiff import GradError, jvp
    module, inputs = build(op, specs, attrs)
    if op in NO_JVP:
        with pytest.raises(GradError, match="not supported"):
            jvp(module, "main")
        return
    tangents = [RNG.standard_normal(np.shape(v)) for v in inputs.values()]
    out = VM(jvp(module, "main"), jit="off").run("main_jvp", *inputs.values(), *tangents)
    vm, eps = VM(module, jit="off"), 1e-6
    up = vm.run("main", *[v + eps * t for v, t in zip(inputs.values(), tangents)])[0]
    down = vm.run("main", *[v - eps * t for v, t in zip(inputs.values(), tangents)])[0]
    np.testing.assert_allclose(out[-1], (up - down) / (2 * eps), rtol=1e-5, atol=1e-7)
