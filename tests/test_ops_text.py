"""tfidf_vectorizer's reference against counts written out by hand."""
from __future__ import annotations

import numpy as np

from isa.ops import OPS

TFIDF = OPS["tfidf_vectorizer"]


def _run(x, mode="TF", max_skip=0, weights=()):
    # pool: unigrams 2, 3; bigrams (2, 3), (3, 4); output indexes 0..3
    attrs = TFIDF.with_defaults({"min_gram": 1, "max_gram": 2, "max_skip": max_skip, "mode": mode,
                                 "pool": [2, 3, 2, 3, 3, 4], "ngram_counts": [0, 2],
                                 "ngram_indexes": [0, 1, 2, 3]})
    return TFIDF.reference(attrs, np.asarray(x, np.int64), np.asarray(weights, np.float32))


def test_counts_skips_and_modes():
    x = [2, 3, 4, 2, 9, 3]
    assert _run(x).tolist() == [2, 2, 1, 1]                  # bigrams (2,3) and (3,4) once each
    # skip 1 adds (2, 4), (3, 2), (4, 9), (2, 3), so (2, 3) is counted twice; unigrams once
    assert _run(x, max_skip=1).tolist() == [2, 2, 2, 1]
    assert _run(x, "IDF", weights=[1, 2, 3, 4]).tolist() == [1, 2, 3, 4]
    assert _run(x, "TFIDF", weights=[1, 2, 3, 4]).tolist() == [2, 4, 3, 4]
    assert _run([[2, 3], [4, 4]]).tolist() == [[1, 1, 1, 0], [0, 0, 0, 0]]
