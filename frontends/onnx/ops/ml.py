"""ai.onnx.ml ops that are tensor arithmetic (Binarizer, ArrayFeatureExtractor) and the text
featurizer TfIdfVectorizer over integer tokens (the op table's tfidf_vectorizer)."""
from __future__ import annotations

import numpy as np

from ..registry import NodeCtx, onnx_op
from ..values import Value, known
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



@onnx_op("TfIdfVectorizer", since=9)
def tfidf_vectorizer(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    if ctx.has("pool_strings"):
        ctx.attr("pool_strings", None)
        raise ctx.fail("pool_strings: dlvm has no string tensors (integer pools only)")
    weights = np.asarray(ctx.attr("weights", []), np.float32).reshape(-1)
    return [ctx.e.emit("tfidf_vectorizer", [x, known(weights)], ctx.node.output[0],
                       min_gram=int(ctx.attr("min_gram_length")),
                       max_gram=int(ctx.attr("max_gram_length")),
                       max_skip=int(ctx.attr("max_skip_count", 0)), mode=str(ctx.attr("mode")),
                       pool=[int(v) for v in ctx.attr("pool_int64s", [])],
                       ngram_counts=[int(v) for v in ctx.attr("ngram_counts")],
                       ngram_indexes=[int(v) for v in ctx.attr("ngram_indexes")])]
