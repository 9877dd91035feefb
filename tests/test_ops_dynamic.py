"""The dynamic-shape rows (isa/ops/dynamic.py), the ordering rows (isa/ops/ordering.py) and the
indexing rows (isa/ops/indexing.py, with bitcast) and einsum:
references against their type rules (rank, dtype and every dim the rule claims to know), against
independent NumPy computations, and their run-time traps.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from isa.dtypes import dtype_from_numpy
from isa.errors import OpTypeError, Trap
from isa.ops import OPS
from isa.types import TensorType, parse_type
from isa.verify import check_attrs

RNG = np.random.default_rng(7)


def _t(a: np.ndarray) -> TensorType:
    return TensorType(dtype_from_numpy(np.asarray(a).dtype), tuple(np.shape(a)))


def run(op: str, *arrays: Any, **attrs: Any):
    """The reference's results, after checking them against what the type rule infers: dtype,
    rank, and every dim the rule gives as a size."""
    arrays = tuple(np.asarray(a) for a in arrays)
    opdef = OPS[op]
    full = check_attrs(opdef, attrs)
    wants = opdef.infer([_t(a) for a in arrays], full)
    got = opdef.reference(full, *arrays)
    gots = list(got) if isinstance(got, tuple) else [got]
    assert len(gots) == len(wants)
    for g, w in zip(gots, wants):
        g = np.asarray(g)
        assert g.dtype == w.dtype.np, f"{op}: reference gives {g.dtype}, infer says {w}"
        assert g.ndim == w.rank, f"{op}: reference gives rank {g.ndim}, infer says {w}"
        for d, want in zip(g.shape, w.shape):
            assert want is None or d == want, f"{op}: reference gives {g.shape}, infer says {w}"
    return got


def trap(op: str, *arrays: Any, **attrs: Any) -> str:
    opdef = OPS[op]
    with pytest.raises(Trap) as e:
        opdef.reference(check_attrs(opdef, attrs), *[np.asarray(a) for a in arrays])
    return e.value.message


def i64(*v: int) -> np.ndarray:
    return np.array(v, np.int64)


X = RNG.standard_normal((2, 3, 4)).astype(np.float32)

# (op, operands, attrs, expected): each row of both files appears at least once
CASES: list[tuple[str, list, dict, Any]] = [
    ("reshape_dyn", [X, i64(4, -1)], {}, X.reshape(4, 6)),
    ("reshape_dyn", [X, i64(0, 12)], {"copy_zero": True}, X.reshape(2, 12)),
    ("reshape_dyn", [np.zeros((0, 3), np.int32), i64(3, 0)], {}, np.zeros((3, 0), np.int32)),
    ("broadcast_dyn", [X[:, :1], i64(5, 1, 1, 4)], {}, np.broadcast_to(X[:, :1], (5, 2, 1, 4))),
    ("broadcast_dyn", [X, i64(3, 1)], {}, X),
    ("tile_dyn", [X, i64(1, 2, 0)], {}, np.tile(X, (1, 2, 0))),
    ("slice_dyn", [X, i64(1, -1), i64(100, -5), i64(1, 2), i64(1, -2)], {},
     X[:, 1:, ::-2]),
    ("pad_dyn", [X, i64(0, 1, -1, 0, 2, 0), np.float32(7)], {},
     np.pad(X[:, :, 1:], ((0, 0), (1, 2), (0, 0)), constant_values=7)),
    ("pad_dyn", [X, i64(0, 0, 2, 0, 0, 1), np.float32(0)], {"mode": "reflect"},
     np.pad(X, ((0, 0), (0, 0), (2, 1)), mode="reflect")),
    ("pad_dyn", [X, i64(0, 2, 0, 0, 1, 3), np.float32(0)], {"mode": "edge"},
     np.pad(X, ((0, 0), (2, 1), (0, 3)), mode="edge")),
    ("pad_dyn", [X, i64(1, 0, 0, 1, 0, 0), np.float32(0)], {"mode": "wrap"},
     np.pad(X, ((1, 1), (0, 0), (0, 0)), mode="wrap")),
    ("range", [np.int32(10), np.int32(1), np.int32(-3)], {}, np.array([10, 7, 4], np.int32)),
    ("range", [np.float32(0.5), np.float32(2), np.float32(0.5)], {},
     np.array([0.5, 1.0, 1.5], np.float32)),
    ("fill", [i64(2, 0, 3), np.int8(4)], {}, np.full((2, 0, 3), 4, np.int8)),
    ("fill", [i64(), np.float64(1.5)], {}, np.array(1.5)),
    ("reduce_dyn", [X, i64(-1, 0)], {"kind": "sum", "keepdims": True},
     X.sum(axis=(0, 2), keepdims=True)),
    ("reduce_dyn", [X, i64(1)], {"kind": "max"}, X.max(axis=1)),
    ("reduce_dyn", [X, i64()], {"kind": "mean"}, np.asarray(X.mean(), np.float32)),
    ("reduce_dyn", [X, i64()], {"kind": "prod", "noop_with_empty_axes": True}, X),
    ("squeeze_dyn", [X[:1, :, :1], i64(-1, 0)], {}, X[0, :, 0]),
    ("unsqueeze_dyn", [X, i64(-1, 1)], {}, X[:, None, :, :, None]),
    ("cumsum", [X, np.int64(1)], {}, np.cumsum(X, axis=1)),
    ("cumsum", [np.arange(5, dtype=np.int32), i64(0)], {"exclusive": True, "reverse": True},
     np.array([10, 9, 7, 4, 0], np.int32)),
    ("cumprod", [np.arange(1, 5, dtype=np.uint16), np.int32(-1)], {"exclusive": True},
     np.array([1, 1, 2, 6], np.uint16)),
    ("cumprod", [X, np.int64(2)], {"reverse": True}, np.flip(np.cumprod(np.flip(X, 2), 2), 2)),
    ("gather_elements", [X, np.array([[[0, -1]], [[2, 1]]], np.int32)], {"axis": 2},
     np.array([[[X[0, 0, 0], X[0, 0, 3]]], [[X[1, 0, 2], X[1, 0, 1]]]], np.float32)),
    ("scatter_elements", [np.zeros((2, 3), np.int64), np.array([[2, -3]], np.int64),
                          np.array([[5, 6]], np.int64)], {"axis": 1},
     np.array([[6, 0, 5], [0, 0, 0]], np.int64)),
    ("scatter_elements", [np.ones((3,), np.float32), np.array([0, 0, 2], np.int64),
                          np.array([2, 3, 4], np.float32)], {"reduction": "mul"},
     np.array([6, 1, 4], np.float32)),
    ("gather_nd", [X, np.array([[0, 2], [1, -1]], np.int64)], {}, np.stack([X[0, 2], X[1, 2]])),
    ("gather_nd", [X, np.array([[1], [0]], np.int64)], {"batch_dims": 1},
     np.stack([X[0, 1], X[1, 0]])),
    ("scatter_nd", [np.zeros((2, 2), np.int32), np.array([[1], [1]], np.int64),
                    np.array([[1, 2], [3, 4]], np.int32)], {"reduction": "add"},
     np.array([[0, 0], [4, 6]], np.int32)),
    ("nonzero", [np.array([[0, 2], [3, 0]], np.uint32)], {}, np.array([[0, 1], [1, 0]])),
    ("compress", [X, np.array([True, False, True])], {"axis": 1}, X[:, [0, 2]]),
    ("compress", [X, np.array([False, True])], {}, X.reshape(-1)[1:2]),
    ("bitcast", [np.array([1.0, -2.0], np.float32)], {"to": dtype_from_numpy(np.int32)},
     np.array([1065353216, -1073741824], np.int32)),
    ("bitcast", [np.array([True, False])], {"to": dtype_from_numpy(np.uint8)},
     np.array([1, 0], np.uint8)),
    ("bitcast", [np.zeros(2, np.int16)], {"to": dtype_from_numpy(np.float32)}, None),
    ("einsum", [X, X], {"equation": "bij,bkj->bik"}, X @ X.transpose(0, 2, 1)),
    ("einsum", [X], {"equation": "...ii"}, None),
    ("einsum", [X[0]], {"equation": "ji"}, X[0].T),
    ("einsum", [np.arange(6, dtype=np.int8).reshape(2, 3)], {"equation": "ij->"}, np.int8(15)),
]


# every row these cases (and the topk test below) cover; test_ops_reference's sweep counts them
COVERED = {c[0] for c in CASES} | {"topk"}
# rows swept in test_ops_signal.py and test_ops_image.py against independent computations
# (they check this list)
COVERED |= {"dft", "grid_sample", "col2im", "roi_align", "unique", "det"}
COVERED |= {"non_max_suppression", "resize", "tfidf_vectorizer"}  # test_ops_{detection,resize,text}.py
COVERED |= {"string_concat", "string_split", "string_normalizer", "regex_full_match",
            "label_encoder"}    # test_strings.py


@pytest.mark.parametrize("op, arrays, attrs, want", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_reference_values_and_type_rule(op, arrays, attrs, want):
    if want is None:
        with pytest.raises(OpTypeError):
            run(op, *arrays, **attrs)
        return
    got = run(op, *arrays, **attrs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    assert np.asarray(got).dtype == np.asarray(want).dtype


def test_every_new_row_has_a_case():
    from isa.ops import dynamic, einsum, indexing, ordering
    assert {op.name for op in dynamic.OPS + ordering.OPS + indexing.OPS + einsum.OPS} <= COVERED


def test_topk_orders_ties_by_index_and_handles_unsigned():
    x = np.array([[3, 1, 3, 2], [0, 5, 5, 5]], np.uint64)
    v, i = run("topk", x, i64(2))
    np.testing.assert_array_equal(v, [[3, 3], [5, 5]])
    np.testing.assert_array_equal(i, [[0, 2], [1, 2]])
    v, i = run("topk", x, np.int32(3), axis=1, largest=False)
    np.testing.assert_array_equal(i, [[1, 3, 0], [0, 1, 2]])
    f = np.array([-np.inf, 2.0, np.inf, 2.0], np.float32)
    v, i = run("topk", f, i64(3))
    np.testing.assert_array_equal(i, [2, 1, 3])
    assert "k = 5" in trap("topk", f, i64(5))


def test_traps():
    assert "element count" in trap("reshape_dyn", X, i64(5, 5))
    assert "more than one -1" in trap("reshape_dyn", X, i64(-1, -1))
    assert "do not broadcast" in trap("broadcast_dyn", X, i64(3, 3))
    assert "negative" in trap("tile_dyn", X, i64(1, -1, 1))
    assert "step is 0" in trap("slice_dyn", X, i64(0), i64(1), i64(0), i64(0))
    assert "out of range" in trap("slice_dyn", X, i64(0), i64(1), i64(3), i64(1))
    assert "below size 0" in trap("pad_dyn", X, i64(0, -3, 0, 0, -1, 0), np.float32(0))
    assert "delta is 0" in trap("range", np.int64(0), np.int64(3), np.int64(0))
    assert "negative size" in trap("fill", i64(-1), np.int64(0))
    assert "repeat an axis" in trap("reduce_dyn", X, i64(0, -3), kind="sum")
    assert "not 1" in trap("squeeze_dyn", X, i64(0))
    assert "out of range" in trap("cumsum", X, np.int64(3))
    assert "index 3 is out of range" in trap("gather_elements", X, np.full((2, 3, 4), 3), axis=1)
    assert "out of range" in trap("gather_nd", X, np.array([[2, 0]]))
    assert "differ" in trap("scatter_elements", X, np.zeros((2, 3, 1), np.int64),
                            np.zeros((2, 3, 2), np.float32))
    assert "longer" in trap("compress", X, np.ones(5, bool), axis=1)


@pytest.mark.parametrize("op, types", [
    ("reshape_dyn", [parse_type("f32[2, 3]"), parse_type("i64[?]")]),
    ("reshape_dyn", [parse_type("f32[2, 3]"), parse_type("f32[2]")]),
    ("tile_dyn", [parse_type("f32[2, 3]"), parse_type("i64[3]")]),
    ("pad_dyn", [parse_type("f32[2]"), parse_type("i64[2]"), parse_type("i8[]")]),
    ("range", [parse_type("i64[]"), parse_type("i32[]"), parse_type("i64[]")]),
    ("reduce_dyn", [parse_type("i32[2, 3]"), parse_type("i64[1]")]),
    ("cumsum", [parse_type("bool[3]"), parse_type("i64[]")]),
    ("topk", [parse_type("f32[3]"), parse_type("i64[2]")]),
])
def test_type_rules_reject(op, types):
    attrs = {"kind": "mean"} if op == "reduce_dyn" else {}
    with pytest.raises(OpTypeError):
        OPS[op].infer(types, check_attrs(OPS[op], attrs))


def test_result_dims_the_rules_know():
    t = OPS["broadcast_dyn"].infer([parse_type("f32[3, 1]"), parse_type("i64[3]")],
                                   {})[0]
    assert t.shape == (None, 3, None)
    t = OPS["reduce_dyn"].infer([parse_type("f32[1, 4]"), parse_type("i64[1]")],
                                check_attrs(OPS["reduce_dyn"], {"kind": "sum", "keepdims": True}))[0]
    assert t.shape == (1, None)
    v, i = OPS["topk"].infer([parse_type("f32[N, 5]"), parse_type("i64[1]")],
                             check_attrs(OPS["topk"], {}))
    assert v.shape == ("N", None) and str(i.dtype) == "i64"
