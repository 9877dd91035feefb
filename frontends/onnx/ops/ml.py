"""ai.onnx.ml ops that are tensor arithmetic (Binarizer, ArrayFeatureExtractor) and the text
featurizer TfIdfVectorizer over integer tokens (the op table's tfidf_vectorizer)."""
from __future__ import annotations

import numpy as np

from isa.dtypes import DType

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



def _string_tokens(ctx: NodeCtx, x: Value) -> tuple[Value, list[int]]:
    """A string pool: each distinct pool string gets an integer id, the tokens are mapped to
    their ids by a label_encoder (-1 for a word outside the pool, which no gram holds), and the
    pool becomes those ids."""
    if ctx.has("pool_int64s"):
        ctx.attr("pool_int64s")
        raise ctx.fail("pool_strings and pool_int64s are both given")
    words = [str(w) for w in ctx.attr("pool_strings")]
    if x.dtype is not DType.STR:
        raise ctx.fail(f"pool_strings needs string tokens, got {x.dtype.name}")
    ids = {w: i for i, w in enumerate(dict.fromkeys(words))}
    keys = np.empty(len(ids), dtype=object)
    keys[:] = list(ids)
    tokens = ctx.e.emit("label_encoder", [x, known(keys), known(np.arange(len(ids), dtype=np.int64)),
                                          known(np.asarray(-1, np.int64))])
    return tokens, [ids[w] for w in words]


@onnx_op("TfIdfVectorizer", since=9)
def tfidf_vectorizer(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    if ctx.has("pool_strings"):
        x, pool = _string_tokens(ctx, x)
    else:
        pool = [int(v) for v in ctx.attr("pool_int64s", [])]
    weights = np.asarray(ctx.attr("weights", []), np.float32).reshape(-1)
    return [ctx.e.emit("tfidf_vectorizer", [x, known(weights)], ctx.node.output[0],
                       min_gram=int(ctx.attr("min_gram_length")),
                       max_gram=int(ctx.attr("max_gram_length")),
                       max_skip=int(ctx.attr("max_skip_count", 0)), mode=str(ctx.attr("mode")),
                       pool=pool,
                       ngram_counts=[int(v) for v in ctx.attr("ngram_counts")],
                       ngram_indexes=[int(v) for v in ctx.attr("ngram_indexes")])]


# LabelEncoder's keys and values come as one of these attributes each (opset 4 adds the
# tensor forms); the defaults are ONNX's for each kind of value
_KEYS = ("keys_strings", "keys_int64s", "keys_floats", "keys_tensor")
_VALUES = {"values_strings": ("default_string", "_Unused", object),
           "values_int64s": ("default_int64", -1, np.int64),
           "values_floats": ("default_float", -0.0, np.float32),
           "values_tensor": ("default_tensor", None, None)}


def _listed(ctx: NodeCtx, names, what: str) -> tuple[str, np.ndarray]:
    given = [n for n in names if ctx.has(n)]
    if len(given) != 1:
        raise ctx.fail(f"needs exactly one of {', '.join(names)} for its {what}, got "
                       f"{', '.join(given) or 'none'}")
    name = given[0]
    v = ctx.attr(name)
    if isinstance(v, np.ndarray):
        return name, v.reshape(-1)
    if name.endswith("strings"):
        out = np.empty(len(v), dtype=object)
        out[:] = [str(s) for s in v]
        return name, out
    return name, np.asarray(v, dtype=np.int64 if name.endswith("int64s") else np.float32)


@onnx_op("LabelEncoder", since=2, domain=ML)
def label_encoder(ctx: NodeCtx) -> list[Value]:
    x = ctx.req(0)
    _, keys = _listed(ctx, _KEYS, "keys")
    vname, values = _listed(ctx, tuple(_VALUES), "values")
    default_name, fallback, np_dtype = _VALUES[vname]
    for dn, _, _ in _VALUES.values():
        if dn != default_name and ctx.has(dn):
            ctx.attr(dn)       # a default for another kind of value: it cannot apply
    if np_dtype is None:
        if not ctx.has(default_name):
            raise ctx.fail("values_tensor needs default_tensor")
        default = np.asarray(ctx.attr(default_name)).reshape(-1)
        if default.size != 1 or default.dtype != values.dtype:
            raise ctx.fail(f"default_tensor must be one {values.dtype} value")
        default = default.reshape(())
    else:
        raw = ctx.attr(default_name, fallback)
        default = np.empty((), dtype=object) if np_dtype is object else None
        if default is not None:
            default[()] = str(raw)
        else:
            default = np.asarray(raw, dtype=np_dtype)
    # float keys in an f32 attribute compare with an f64 (or f16) input in the input's dtype
    if keys.dtype != x.dtype.np and keys.dtype.kind in "fiu" and x.dtype.np.kind in "fiu":
        keys = keys.astype(x.dtype.np)
    return [ctx.e.emit("label_encoder", [x, known(keys), known(values), known(default)],
                       ctx.node.output[0])]
