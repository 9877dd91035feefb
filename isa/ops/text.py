"""Text featurization: tfidf_vectorizer (ONNX TfIdfVectorizer over integer tokens).

Each row of x (a [n] vector or a [b, n] batch of token ids) is scanned for the n-grams of a
pool: for every gram length from min_gram to max_gram and every skip from 0 to max_skip, the
grams start at each position and take every (skip + 1)-th token (unigrams once, whatever the
skip). A gram found in the pool adds 1 at its output index. The counts are the result (TF),
or weight * (count > 0) (IDF), or weight * count (TFIDF).
"""
from __future__ import annotations

import numpy as np

from ..dtypes import BY_NAME
from ..errors import OpTypeError
from ..types import TensorType
from .opdef import NOT_DIFFERENTIABLE, REQUIRED, AttrKind, AttrSpec, Family, OpDef

F32 = BY_NAME["f32"]


def _pool_grams(attrs) -> dict[tuple[int, ...], int]:
    """Every gram of the pool -> its output index. ngram_counts[k] is where the (k+1)-grams
    start in the flattened pool."""
    pool, starts, idx = list(attrs["pool"]), list(attrs["ngram_counts"]), list(attrs["ngram_indexes"])
    grams: dict[tuple[int, ...], int] = {}
    k = 0
    for length, start in enumerate(starts, 1):
        end = starts[length] if length < len(starts) else len(pool)
        for p in range(start, end, length):
            grams[tuple(pool[p:p + length])] = idx[k]
            k += 1
    return grams


def tfidf_rule(types: list[TensorType], attrs) -> list[TensorType]:
    x, weights = types
    if not x.dtype.is_int or x.rank not in (1, 2):
        raise OpTypeError(f"tfidf_vectorizer: x must be a 1-D or 2-D integer tensor, got {x}")
    if weights.rank != 1 or not weights.dtype.is_float:
        raise OpTypeError(f"tfidf_vectorizer: weights must be a float vector, got {weights}")
    if attrs["mode"] not in ("TF", "IDF", "TFIDF"):
        raise OpTypeError(f"tfidf_vectorizer: mode {attrs['mode']!r} (TF, IDF or TFIDF)")
    if not 1 <= attrs["min_gram"] <= attrs["max_gram"] or attrs["max_skip"] < 0:
        raise OpTypeError("tfidf_vectorizer: needs 1 <= min_gram <= max_gram and max_skip >= 0")
    width = max(list(attrs["ngram_indexes"]) or [-1]) + 1
    return [TensorType(F32, (width,) if x.rank == 1 else (x.shape[0], width))]


def tfidf_ref(attrs, x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    grams = _pool_grams(attrs)
    width = max(list(attrs["ngram_indexes"]) or [-1]) + 1
    rows = x.reshape(1, -1) if x.ndim == 1 else x
    out = np.zeros((rows.shape[0], width), np.float32)
    lo, hi, max_skip = attrs["min_gram"], attrs["max_gram"], attrs["max_skip"]
    for r, row in enumerate(rows.tolist()):
        for length in range(lo, hi + 1):
            for skip in range(1 if length == 1 else max_skip + 1):
                step = skip + 1
                for s in range(len(row) - (length - 1) * step):
                    j = grams.get(tuple(row[s:s + (length - 1) * step + 1:step]))
                    if j is not None:
                        out[r, j] += 1
    w = weights.astype(np.float32) if weights.size else np.ones(width, np.float32)
    if attrs["mode"] == "IDF":
        out = (out > 0).astype(np.float32) * w[:width]
    elif attrs["mode"] == "TFIDF":
        out = out * w[:width]
    return out.reshape(width) if x.ndim == 1 else out


OPS = [
    OpDef("tfidf_vectorizer", 210, Family.MISC, (2, 2), tfidf_rule, tfidf_ref,
          "r[.., j] := how often the pool's n-gram with output index j occurs in each row of the "
          "integer tokens x (lengths min_gram..max_gram, every skip 0..max_skip; unigrams once), "
          "as counts (TF), weights * (count > 0) (IDF) or weights * counts (TFIDF); ONNX "
          "TfIdfVectorizer over integers",
          attrs=(AttrSpec("min_gram", AttrKind.INT, REQUIRED, "the shortest gram"),
                 AttrSpec("max_gram", AttrKind.INT, REQUIRED, "the longest gram"),
                 AttrSpec("max_skip", AttrKind.INT, 0, "the largest gap between a gram's tokens"),
                 AttrSpec("mode", AttrKind.STR, "TF", "TF, IDF or TFIDF"),
                 AttrSpec("pool", AttrKind.INTS, REQUIRED, "the grams, flattened by length"),
                 AttrSpec("ngram_counts", AttrKind.INTS, REQUIRED,
                          "where the grams of each length start in pool"),
                 AttrSpec("ngram_indexes", AttrKind.INTS, REQUIRED,
                          "the output index of each gram, in pool order")),
          dtypes="x: integer; weights: float (empty: all 1)",
          extra={"operands": ("x", "weights")},
          vjp=NOT_DIFFERENTIABLE),
]
