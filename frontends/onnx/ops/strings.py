"""The ONNX string ops (StringConcat, StringSplit, StringNormalizer, RegexFullMatch), each one
dlvm op of isa/ops/strings.py; they run in the interpreter only."""
from __future__ import annotations

import numpy as np

from ..registry import NodeCtx, onnx_op
from ..values import Value, known


@onnx_op("StringConcat", since=20)
def string_concat(ctx: NodeCtx) -> list[Value]:
    return [ctx.e.emit("string_concat", [ctx.req(0), ctx.req(1)], ctx.node.output[0])]


@onnx_op("StringSplit", since=20)
def string_split(ctx: NodeCtx) -> list[Value]:
    # an absent maxsplit splits at every delimiter (dlvm's -1)
    maxsplit = ctx.attr("maxsplit", None)
    if maxsplit is not None and int(maxsplit) < 0:
        raise ctx.fail(f"maxsplit must not be negative, got {maxsplit}")
    return ctx.e.emit("string_split", [ctx.req(0)], ctx.node.output[0], n_results=2,
                      delimiter=str(ctx.attr("delimiter", "")),
                      maxsplit=-1 if maxsplit is None else int(maxsplit))


@onnx_op("StringNormalizer", since=10)
def string_normalizer(ctx: NodeCtx) -> list[Value]:
    # the locale names a case mapping; dlvm uses Python's Unicode one for every locale
    ctx.attr("locale", "")
    words = np.empty(len(ctx.attr("stopwords", [])), dtype=object)
    words[:] = [str(w) for w in ctx.attr("stopwords", [])]
    return [ctx.e.emit("string_normalizer", [ctx.req(0), known(words)], ctx.node.output[0],
                       case_change_action=str(ctx.attr("case_change_action", "NONE")),
                       is_case_sensitive=bool(ctx.attr("is_case_sensitive", 0)))]


@onnx_op("RegexFullMatch", since=20)
def regex_full_match(ctx: NodeCtx) -> list[Value]:
    # ONNX names RE2 syntax; dlvm matches with Python's re (isa/ops/strings.py says where the
    # two differ), and a pattern re cannot compile fails the import
    return [ctx.e.emit("regex_full_match", [ctx.req(0)], ctx.node.output[0],
                       pattern=str(ctx.attr("pattern")))]
