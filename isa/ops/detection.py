"""Object-detection ops: non_max_suppression (ONNX NonMaxSuppression).

Greedy non-maximum suppression per (batch, class): candidates above the score threshold are
visited from the highest score down (equal scores: the lower box index first); a candidate is
kept unless its intersection over union with a box already kept exceeds the IoU threshold,
until max_out boxes are kept. Boxes are corners (y1, x1, y2, x2) in either order, or centers
(x_center, y_center, width, height) with `center_point_box`. A box pair with an empty
intersection or a non-positive area never suppresses. The result has one row per kept box,
(batch, class, box), batches and classes in order: its length is known only at run time.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import BY_NAME
from ..errors import OpTypeError
from ..types import TensorType
from .opdef import NOT_DIFFERENTIABLE, AttrKind, AttrSpec, Family, OpDef

I64 = BY_NAME["i64"]


def nms_rule(types: list[TensorType], attrs) -> list[TensorType]:
    boxes, scores, max_out, iou, score_min = types
    if boxes.rank != 3 or (isinstance(boxes.shape[2], int) and boxes.shape[2] != 4):
        raise OpTypeError(f"non_max_suppression boxes must be [batches, boxes, 4], got {boxes}")
    if scores.rank != 3:
        raise OpTypeError(f"non_max_suppression scores must be [batches, classes, boxes], "
                          f"got {scores}")
    if not (boxes.dtype.is_float and scores.dtype == boxes.dtype):
        raise OpTypeError(f"non_max_suppression boxes and scores must be one float dtype, got "
                          f"{boxes.dtype} and {scores.dtype}")
    if max_out.rank != 0 or not max_out.dtype.is_int:
        raise OpTypeError(f"non_max_suppression max_out must be an integer scalar, got {max_out}")
    for name, t in (("iou", iou), ("score_min", score_min)):
        if t.rank != 0 or not t.dtype.is_float:
            raise OpTypeError(f"non_max_suppression {name} must be a float scalar, got {t}")
    return [TensorType(I64, (None, 3))]


def _corners(b: np.ndarray, center: bool) -> tuple[np.ndarray, ...]:
    """(y_min, x_min, y_max, x_max) of boxes [n, 4], in f64."""
    b = b.astype(np.float64)
    if center:
        xc, yc, w, h = b[:, 0], b[:, 1], b[:, 2] / 2, b[:, 3] / 2
        return yc - h, xc - w, yc + h, xc + w
    return (np.minimum(b[:, 0], b[:, 2]), np.minimum(b[:, 1], b[:, 3]),
            np.maximum(b[:, 0], b[:, 2]), np.maximum(b[:, 1], b[:, 3]))


def _suppressed(c: tuple[np.ndarray, ...], k: int, kept: list[int], iou: float) -> bool:
    """Whether box k overlaps any kept box by more than `iou`."""
    if not kept:
        return False
    y0, x0, y1, x1 = c
    j = np.array(kept)
    ih = np.minimum(y1[k], y1[j]) - np.maximum(y0[k], y0[j])
    iw = np.minimum(x1[k], x1[j]) - np.maximum(x0[k], x0[j])
    inter = np.where((ih > 0) & (iw > 0), ih * iw, 0.0)
    area_k = (y1[k] - y0[k]) * (x1[k] - x0[k])
    area_j = (y1[j] - y0[j]) * (x1[j] - x0[j])
    union = area_k + area_j - inter
    valid = (inter > 0) & (area_k > 0) & (area_j > 0) & (union > 0)
    ratio = np.divide(inter, union, out=np.zeros_like(inter), where=valid)
    return bool(np.any(valid & (ratio > iou)))


def nms_ref(attrs, boxes: np.ndarray, scores: np.ndarray, max_out: np.ndarray,
            iou: np.ndarray, score_min: np.ndarray) -> np.ndarray:
    limit = max(int(max_out), 0)
    rows: list[tuple[int, int, int]] = []
    for b in range(boxes.shape[0]):
        c = _corners(boxes[b], bool(attrs["center_point_box"]))
        for cls in range(scores.shape[1]):
            s = scores[b, cls]
            # highest score first; a stable sort keeps the lower index first among equals
            order = [int(k) for k in np.argsort(-s.astype(np.float64), kind="stable")
                     if s[k] > score_min]
            kept: list[int] = []
            for k in order:
                if len(kept) >= limit:
                    break
                if not _suppressed(c, k, kept, float(iou)):
                    kept.append(k)
            rows += [(b, cls, k) for k in kept]
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


OPS = [
    OpDef("non_max_suppression", 191, Family.NN, (5, 5), nms_rule, nms_ref,
          "r := (batch, class, box) of the boxes kept by greedy non-maximum suppression per batch "
          "and class (ONNX NonMaxSuppression): candidates with score > score_min, highest first "
          "(ties: lower index), kept unless their IoU with a kept box is > iou, at most max_out "
          "per class; r's length is known only at run time",
          attrs=(AttrSpec("center_point_box", AttrKind.BOOL, False,
                          "boxes are (x_center, y_center, width, height), not corners"),),
          dtypes="boxes, scores: one float dtype; max_out: integer; iou, score_min: float",
          extra={"operands": ("boxes", "scores", "max_out", "iou", "score_min")},
          vjp=NOT_DIFFERENTIABLE),
]
