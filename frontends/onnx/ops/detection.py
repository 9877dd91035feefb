"""ONNX NonMaxSuppression onto the op table's non_max_suppression: the optional scalar inputs
get ONNX's defaults (no max_output_boxes_per_class: no box; no iou_threshold: 0; no
score_threshold: every score, written as -inf), each as a 0-d run-time operand."""
from __future__ import annotations

import numpy as np

from isa.dtypes import BY_NAME

from ..registry import NodeCtx, onnx_op
from ..values import Value, known
from .common import cast
from .dynshape import scalar_of

I64 = BY_NAME["i64"]


@onnx_op("NonMaxSuppression", since=10)
def non_max_suppression(ctx: NodeCtx) -> list[Value]:
    e = ctx.e
    boxes, scores = ctx.req(0), ctx.req(1)
    f = boxes.dtype

    def scalar_input(i: int, what: str, default, dtype) -> Value:
        v = ctx.input(i)
        if v is None or (v.const is not None and v.const.size == 0):
            return known(np.array(default, dtype.np))
        return cast(e, scalar_of(ctx, i, what), dtype)
    max_out = scalar_input(2, "max_output_boxes_per_class", 0, I64)
    iou = scalar_input(3, "iou_threshold", 0.0, f)
    score_min = scalar_input(4, "score_threshold", -np.inf, f)
    center = bool(ctx.attr("center_point_box", 0))
    return [e.emit("non_max_suppression", [boxes, cast(e, scores, f), max_out, iou, score_min],
                   ctx.node.output[0], center_point_box=center)]
