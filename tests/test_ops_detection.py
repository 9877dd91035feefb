"""non_max_suppression's reference (the op table), against the definition written out."""
from __future__ import annotations

import numpy as np

from isa.ops import OPS

NMS = OPS["non_max_suppression"]


def _run(boxes, scores, max_out=10, iou=0.5, score_min=-np.inf, center=False):
    attrs = NMS.with_defaults({"center_point_box": center})
    return NMS.reference(attrs, np.asarray(boxes, np.float32), np.asarray(scores, np.float32),
                         np.array(max_out, np.int64), np.array(iou, np.float32),
                         np.array(score_min, np.float32))


def test_overlapping_boxes_keep_the_best_and_flipped_corners_are_the_same_box():
    boxes = [[[0, 0, 1, 1], [1.1, 1.1, 0.1, 0.1], [0, 5, 1, 6]]]   # box 1: corners flipped
    out = _run(boxes, [[[0.9, 0.8, 0.7]]])
    assert out.tolist() == [[0, 0, 0], [0, 0, 2]]      # IoU(0, 1) = 0.81 / 1.19 > 0.5


def test_threshold_limit_ties_and_classes():
    boxes = [[[0, 0, 1, 1], [0, 2, 1, 3], [0, 4, 1, 5]]]
    scores = [[[0.5, 0.5, 0.1], [0.2, 0.3, 0.9]]]
    # class 0: equal scores keep the lower index first; class 1: score_min drops box 0
    assert _run(boxes, scores, max_out=2, score_min=0.25).tolist() == \
        [[0, 0, 0], [0, 0, 1], [0, 1, 2], [0, 1, 1]]
    assert _run(boxes, scores, max_out=0).shape == (0, 3)


def test_center_point_boxes():
    boxes = [[[0.5, 0.5, 1, 1], [0.6, 0.5, 1, 1], [5, 5, 1, 1]]]
    out = _run(boxes, [[[0.6, 0.9, 0.1]]], center=True)
    assert out.tolist() == [[0, 0, 1], [0, 0, 2]]


def test_rule_rejects_bad_operands():
    from isa.dtypes import BY_NAME
    from isa.errors import OpTypeError
    from isa.types import TensorType
    f, i = BY_NAME["f32"], BY_NAME["i64"]
    good = [TensorType(f, (1, 3, 4)), TensorType(f, (1, 2, 3)), TensorType(i, ()),
            TensorType(f, ()), TensorType(f, ())]
    assert NMS.infer(good, NMS.with_defaults({}))[0] == TensorType(i, (None, 3))
    bad = [TensorType(f, (1, 3, 5))] + good[1:]
    try:
        NMS.infer(bad, NMS.with_defaults({}))
    except OpTypeError as e:
        assert "boxes" in str(e)
    else:
        raise AssertionError("a [.., 5] boxes operand was accepted")
