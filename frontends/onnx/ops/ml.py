"""ai.onnx.ml ops that are tensor arithmetic: Binarizer and ArrayFeatureExtractor."""
from __future__ import annotations

from ..registry import NodeCtx, onnx_op
from ..values import Value
from .common import scalar, where

ML = "ai.onnx.ml"


@onnx_op("Binarizer", domain=ML)
def binarizer(ctx: NodeCtx) -> list[Value]:
    # 1 where x > threshold, else 0, in x's dtype
    x, e = ctx.req(0), ctx.e
    t = float(ctx.attr("threshold", 0.0))
    above = e.emit("gt", [x, scalar(t, x)])
    return [where(e, above, scalar(1, x), scalar(0, x))]


@onnx_op("ArrayFeatureExtractor", domain=ML)
def array_feature_extractor(ctx: NodeCtx) -> list[Value]:
    # the entries of x's last axis that the indices name; a 1-D x gives a [1, k] result
    x, idx, e = ctx.req(0), ctx.req(1), ctx.e
    idx = e.emit("reshape", [idx], shape=[-1])
    out = e.emit("gather", [x, idx], axis=x.rank - 1)
    if x.rank == 1:
        out = e.emit("reshape", [out], shape=[1, -1])
    return [out]

