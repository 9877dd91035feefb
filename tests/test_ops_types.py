"""Type rules of the contraction, nn and movement rows: static, named ('N') and unknown ('?')
dims, and the exact user-facing messages of type errors."""
from __future__ import annotations

import numpy as np
import pytest

from isa.builder import ModuleBuilder
from isa.errors import InvalidError, OpTypeError
from isa.ops import OPS
from isa.types import parse_type
from isa.verify import check_attrs


def infer(op: str, *types: str, **attrs) -> list[str]:
    """The result types `op` infers for operand types written as text."""
    opdef = OPS[op]
    full = check_attrs(opdef, attrs)
    return [str(t) for t in opdef.infer([parse_type(t) for t in types], full)]


def type_error(op: str, *types: str, **attrs) -> str:
    with pytest.raises(OpTypeError) as e:
        infer(op, *types, **attrs)
    return str(e.value)


# ---- matmul ---------------------------------------------------------------------------------

@pytest.mark.parametrize("a, b, want", [
    ("f32[2, 3]", "f32[3, 4]", "f32[2, 4]"),
    ("f32[N, 4]", "f32[4, 3]", "f32[N, 3]"),
    ("f32[N, K]", "f32[K, M]", "f32[N, M]"),
    ("f32[N, ?]", "f32[5, 3]", "f32[N, 3]"),
    ("f32[3]", "f32[3, 4]", "f32[4]"),
    ("f32[2, 3]", "f32[3]", "f32[2]"),
    ("f32[3]", "f32[3]", "f32[]"),
    ("f32[B, 2, 3]", "f32[3, 4]", "f32[B, 2, 4]"),
    ("f32[5, 1, 2, 3]", "f32[7, 3, 4]", "f32[5, 7, 2, 4]"),
    ("f32[?, 2, 3]", "f32[B, 3, 4]", "f32[?, 2, 4]"),
    ("i32[2, 3]", "i32[3, 4]", "i32[2, 4]"),
])
def test_matmul_shapes(a, b, want):
    assert infer("matmul", a, b) == [want]


def test_matmul_errors():
    assert type_error("matmul", "f32[N, 4]", "f32[5, 3]") == "matmul inner dimensions 4 and 5 differ"
    assert type_error("matmul", "f32[3]", "f32[2]") == "matmul inner dimensions 3 and 2 differ"
    assert "differ; insert a cast" in type_error("matmul", "f32[2, 3]", "f64[3, 4]")
    assert "rank 1 or more" in type_error("matmul", "f32[]", "f32[3]")
    assert "numeric" in type_error("matmul", "bool[2, 2]", "bool[2, 2]")
    assert "do not broadcast" in type_error("matmul", "f32[2, 2, 3]", "f32[5, 3, 4]")


def test_verifier_reports_the_shared_bad_examples_messages():
    mb = ModuleBuilder("bad")
    w = mb.constant("w", np.ones((5, 3), np.float32))
    f = mb.function("main", [("x", "f32[N, 4]")], ["f32[N, 3]"])
    # the builder raises the type rule's message at the call that makes the instruction
    with pytest.raises(InvalidError, match="matmul inner dimensions 4 and 5 differ"):
        f.matmul(f.arg("x"), w)
    mb = ModuleBuilder("bad")
    f = mb.function("main", [("x", "f32[2, 3]")], ["f32[3, 2]"])
    with pytest.raises(InvalidError, match=r"perm \[0, 0\] is not a permutation of the axes"):
        f.transpose(f.arg("x"), perm=[0, 0])


# ---- movement -------------------------------------------------------------------------------

def test_transpose():
    assert infer("transpose", "f32[N, 3, ?]") == ["f32[?, 3, N]"]
    assert infer("transpose", "f32[N, 3, ?]", perm=[1, 0, 2]) == ["f32[3, N, ?]"]
    assert infer("transpose", "f32[]") == ["f32[]"]
    assert type_error("transpose", "f32[2, 3]", perm=[0, 0]) == \
        "perm [0, 0] is not a permutation of the axes"
    assert type_error("transpose", "f32[2, 3]", perm=[0, 1, 2]) == \
        "perm [0, 1, 2] is not a permutation of the axes"


@pytest.mark.parametrize("t, shape, want", [
    ("f32[2, 3]", [3, 2], "f32[3, 2]"),
    ("f32[2, 3]", [-1], "f32[6]"),
    ("f32[2, 3, 4]", [2, -1], "f32[2, 12]"),
    ("f32[0, 3]", [3, 0], "f32[3, 0]"),
    ("f32[B, 4, 4, 4]", [-1, 64], "f32[B, 64]"),
    ("f32[B, 4, 4, 4]", [-1, 16], "f32[?, 16]"),
    ("f32[N, M]", [-1], "f32[?]"),
    ("f32[?, 4]", [-1, 2], "f32[?, 2]"),
    ("f32[N, 4]", [2, 2, -1], "f32[2, 2, N]"),
    ("f32[N, 4]", [3, -1], "f32[3, ?]"),
])
def test_reshape(t, shape, want):
    assert infer("reshape", t, shape=shape) == [want]


def test_reshape_errors():
    assert type_error("reshape", "f32[2, 3]", shape=[4, 2]) == \
        "reshape of f32[2, 3] (6 elements) to [4, 2] (8 elements) changes the element count"
    assert "more than one -1" in type_error("reshape", "f32[2, 3]", shape=[-1, -1])
    assert "cannot fit" in type_error("reshape", "f32[2, 3]", shape=[4, -1])
    assert "cannot fit" in type_error("reshape", "f32[2, 3]", shape=[0, -1])
    assert "negative size" in type_error("reshape", "f32[2, 3]", shape=[-2, 3])


def test_broadcast_to_keeps_names_and_checks_sizes():
    assert infer("broadcast_to", "f32[3]", shape=["N", 3]) == ["f32[N, 3]"]
    assert infer("broadcast_to", "f32[1, 3]", shape=[4, 3]) == ["f32[4, 3]"]
    assert infer("broadcast_to", "f32[M, 3]", shape=[2, "N", 3]) == ["f32[2, N, 3]"]
    assert type_error("broadcast_to", "f32[2, 3]", shape=[4, 3]) == \
        "broadcast_to cannot stretch f32[2, 3] to [4, 3]"
    assert "lower the rank" in type_error("broadcast_to", "f32[2, 3]", shape=[3])


def test_expand_dims_and_squeeze():
    assert infer("expand_dims", "f32[N, 3]", axes=[0]) == ["f32[1, N, 3]"]
    assert infer("expand_dims", "f32[N, 3]", axes=[-1, 1]) == ["f32[N, 1, 3, 1]"]
    assert "repeat" in type_error("expand_dims", "f32[3]", axes=[0, 0])
    assert "out of range" in type_error("expand_dims", "f32[3]", axes=[2])
    # without axes the shape must be static: a named or unknown dim bound to 1 at run time
    # would be dropped too, changing the rank the verifier gave
    assert infer("squeeze", "f32[1, 2, 3, 1]") == ["f32[2, 3]"]
    assert "needs a static shape" in type_error("squeeze", "f32[1, N, ?, 1]")
    assert infer("squeeze", "f32[1, N, ?, 1]", axes=[1, 2]) == ["f32[1, 1]"]
    assert type_error("squeeze", "f32[1, 3]", axes=[1]) == \
        "squeeze: axis 1 of f32[1, 3] has size 3, not 1"


def test_concat():
    assert infer("concat", "f32[2, 3]", "f32[4, 3]", axis=0) == ["f32[6, 3]"]
    assert infer("concat", "f32[N, 3]", "f32[N, 5]", axis=-1) == ["f32[N, 8]"]
    assert infer("concat", "f32[N, 3]", "f32[2, 3]", axis=0) == ["f32[?, 3]"]
    assert infer("concat", "f32[N, 3]", axis=0) == ["f32[N, 3]"]
    assert infer("concat", "f32[?, 3]", "f32[2, ?]", "f32[N, 1]", axis=1) == ["f32[2, ?]"]
    assert type_error("concat", "f32[2, 3]", "f32[4, 5]", axis=0) == \
        "concat operands differ in dim 1 (3 and 5), which is not the concatenation axis 0"
    assert "ranks 2, 1" in type_error("concat", "f32[2, 3]", "f32[4]", axis=0)
    assert "insert a cast" in type_error("concat", "f32[2]", "i32[2]", axis=0)


@pytest.mark.parametrize("t, attrs, want", [
    ("f32[10]", dict(starts=[2], ends=[5]), "f32[3]"),
    ("f32[10]", dict(starts=[-3], ends=[100]), "f32[3]"),
    ("f32[10]", dict(starts=[8], ends=[2]), "f32[0]"),
    ("f32[10]", dict(starts=[-1], ends=[-100], steps=[-3]), "f32[4]"),
    ("f32[4, 10]", dict(starts=[1], ends=[9], axes=[-1], steps=[2]), "f32[4, 4]"),
    ("f32[N, 10]", dict(starts=[0, 1], ends=[2, 3]), "f32[?, 2]"),
    ("f32[N, 10]", dict(starts=[0], ends=[9223372036854775807]), "f32[N, 10]"),
])
def test_slice(t, attrs, want):
    assert infer("slice", t, **attrs) == [want]


def test_slice_errors():
    assert "not be 0" in type_error("slice", "f32[4]", starts=[0], ends=[2], steps=[0])
    assert "2 starts but 1 ends" in type_error("slice", "f32[4, 4]", starts=[0, 0], ends=[2])
    assert "repeat" in type_error("slice", "f32[4, 4]", starts=[0, 0], ends=[2, 2], axes=[0, -2])


def test_gather_and_pad():
    assert infer("gather", "f32[N, 5]", "i64[2, 3]", axis=1) == ["f32[N, 2, 3]"]
    assert infer("gather", "f32[5]", "i32[]") == ["f32[]"]
    assert type_error("gather", "f32[5]", "f32[2]") == "gather indices must be i32 or i64, got f32"
    assert infer("pad", "f32[N, 3]", pads=[0, 1, 0, 2]) == ["f32[N, 6]"]
    assert infer("pad", "f32[N, 3]", pads=[1, -1, 0, 0]) == ["f32[?, 2]"]
    assert infer("pad", "f32[N, 3]", pads=[1, 0, -1, 0]) == ["f32[N, 3]"]
    assert "needs 4 pads" in type_error("pad", "f32[N, 3]", pads=[1, 1])
    assert "below size 0" in type_error("pad", "f32[2]", pads=[-2, -1])


def test_shape_of_and_iota():
    assert infer("shape_of", "f32[N, ?, 3]") == ["i64[3]"]
    assert infer("iota", shape=["N", 4]) == ["i64[N, 4]"]
    assert infer("iota", shape=[3], dtype=parse_type("f32[]").dtype, axis=-1) == ["f32[3]"]
    assert "numeric" in type_error("iota", shape=[3], dtype=parse_type("bool[]").dtype)
    assert "out of range" in type_error("iota", shape=[3], axis=1)


# ---- nn -------------------------------------------------------------------------------------

@pytest.mark.parametrize("x, w, attrs, want", [
    ("f32[B, 1, 8, 8]", "f32[4, 1, 3, 3]", dict(pads=[1, 1, 1, 1]), "f32[B, 4, 8, 8]"),
    ("f32[2, 3, 7, 9]", "f32[6, 3, 3, 2]", dict(strides=[2, 3]), "f32[2, 6, 3, 3]"),
    ("f32[2, 4, 9, 9]", "f32[6, 2, 3, 3]", dict(groups=2, dilations=[2, 1]), "f32[2, 6, 5, 7]"),
    ("f32[2, 3, H, 9]", "f32[6, 3, 3, 3]", {}, "f32[2, 6, ?, 7]"),
    ("f32[2, C, 5, 5]", "f32[O, 3, 3, 3]", {}, "f32[2, O, 3, 3]"),
])
def test_conv2d_shapes(x, w, attrs, want):
    assert infer("conv2d", x, w, **attrs) == [want]


def test_conv2d_errors():
    assert type_error("conv2d", "f32[1, 3, 5, 5]", "f32[4, 2, 3, 3]") == \
        "conv2d input has 3 channels, but the weights take 2 per group x 1 groups = 2"
    assert "do not divide into 2 groups" in type_error("conv2d", "f32[1, 4, 5, 5]", "f32[3, 2, 3, 3]",
                                                       groups=2)
    assert "bias must be [4]" in type_error("conv2d", "f32[1, 3, 5, 5]", "f32[4, 3, 3, 3]", "f32[3]")
    assert "larger than the padded input" in type_error("conv2d", "f32[1, 3, 2, 5]",
                                                        "f32[4, 3, 3, 3]")
    assert "pads must have 4 entries" in type_error("conv2d", "f32[1, 3, 5, 5]", "f32[4, 3, 3, 3]",
                                                    pads=[1, 1])
    assert "strides must be >= 1" in type_error("conv2d", "f32[1, 3, 5, 5]", "f32[4, 3, 3, 3]",
                                                strides=[0, 1])
    assert "float" in type_error("conv2d", "i32[1, 3, 5, 5]", "i32[4, 3, 3, 3]")
    assert "rank 4" in type_error("conv2d", "f32[3, 5, 5]", "f32[4, 3, 3, 3]")


def test_pools():
    assert infer("maxpool2d", "f32[B, 4, 8, 8]", kernel=[2, 2], strides=[2, 2]) == ["f32[B, 4, 4, 4]"]
    assert infer("maxpool2d", "i32[1, 1, 5, 5]", kernel=[3, 3]) == ["i32[1, 1, 3, 3]"]
    assert infer("avgpool2d", "f32[1, 2, H, 5]", kernel=[3, 3], pads=[1, 1, 1, 1]) == \
        ["f32[1, 2, ?, 5]"]
    assert type_error("maxpool2d", "f32[1, 1, 5, 5]", kernel=[2, 2], pads=[2, 0, 0, 0]) == \
        "maxpool2d pads [2, 0, 0, 0] must be smaller than the kernel [2, 2]"
    assert "float" in type_error("avgpool2d", "i32[1, 1, 5, 5]", kernel=[2, 2])
    assert "needs the attribute 'kernel'" in str(pytest.raises(OpTypeError, check_attrs,
                                                               OPS["maxpool2d"], {}).value)


def test_softmax_and_norms():
    assert infer("softmax", "f32[N, ?]") == ["f32[N, ?]"]
    assert infer("log_softmax", "f16[2, 3]", axis=0) == ["f16[2, 3]"]
    assert "float" in type_error("softmax", "i32[2, 3]")
    assert "out of range" in type_error("softmax", "f32[2, 3]", axis=2)
    assert "rank 1 or more" in type_error("log_softmax", "f32[]")
    assert infer("layer_norm", "f32[N, T, D]", "f32[D]", "f32[D]") == ["f32[N, T, D]"]
    assert infer("layer_norm", "f32[N, 4, 8]", "f32[4, 8]", axis=1) == ["f32[N, 4, 8]"]
    assert type_error("layer_norm", "f32[N, 8]", "f32[4]") == \
        "layer_norm scale f32[4] does not broadcast to the normalized dims f32[8]"
    assert "does not broadcast" in type_error("layer_norm", "f32[N, 8]", "f32[2, 8]")
    assert infer("batch_norm", "f32[N, 3, H, W]", *["f32[3]"] * 4) == ["f32[N, 3, H, W]"]
    assert infer("batch_norm", "f32[N, C]", *["f32[C]"] * 4) == ["f32[N, C]"]
    assert type_error("batch_norm", "f32[N, 3, 4]", "f32[3]", "f32[3]", "f32[4]", "f32[3]") == \
        "batch_norm mean must be [3] (one per channel), got f32[4]"
    assert "rank 2 or more" in type_error("batch_norm", *["f32[3]"] * 5)
