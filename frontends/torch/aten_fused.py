"""torch's fused inference kernels that dynamo captures from the fast paths of
nn.TransformerEncoderLayer (`aten._transformer_encoder_layer_fwd`) and nn.MultiheadAttention
(`aten._native_multi_head_attention`): in eval mode without gradients those modules call one
native kernel, not the ops they are made of. Each is written out here in dlvm ops as the
modules' own Python path computes it: in-projection, per-head scaled dot-product attention
with the merged mask (mask_type 0: [L, S], 1: a key padding mask [B, S], 2: [B, H, L, S]; a
bool mask is true where a key is left out, a float mask is added), out-projection, and for the
encoder layer the residuals, layer norms (before or after) and the ReLU / GELU feed-forward."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from frontends.base.values import Value, known
from isa.dtypes import DType
from isa.types import TensorType

from .aten import Lowerer, _used_outputs, lowers
from .errors import TorchImportError


def _linear(lo: Lowerer, x: Value, w: Value, b: Value | None) -> Value:
    y = lo.emit("matmul", [x, lo.emit("transpose", [w], perm=[1, 0])])
    return lo.emit("add", [y, b]) if b is not None else y


def _rows(lo: Lowerer, v: Value, start: int, stop: int) -> Value:
    return lo.emit("slice", [v], starts=[start], ends=[stop], axes=[0])


def _reshape(lo: Lowerer, x: Value, tail: list[int]) -> Value:
    """x's first two dims (batch and sequence) kept, the rest reshaped to `tail`: with a
    symbolic batch and sequence length (a recompile for new shapes, or dynamic=True, makes
    both symbolic) the kept sizes are read when it runs."""
    t = TensorType(x.dtype, (x.shape[0], x.shape[1], *tail))
    sizes = [d if isinstance(d, int) else -1 for d in t.shape]
    if sizes.count(-1) <= 1:
        return lo.emit("reshape", [x], shape=sizes)
    kept = lo.emit("slice", [lo.emit("shape_of", [x])], starts=[0], ends=[2], axes=[0])
    shape = lo.emit("concat", [kept, known(np.array(tail, np.int64))], axis=0)
    return lo.e.emit("reshape_dyn", [x, shape], result_type=t)


def _heads(lo: Lowerer, x: Value, h: int, d: int) -> Value:
    """[B, L, H*D] -> [B, H, L, D]."""
    return lo.emit("transpose", [_reshape(lo, x, [h, d])],
                   perm=[0, 2, 1, 3])


def _attention(lo: Lowerer, query: Value, key: Value, value: Value, embed: int, heads: int,
               w_qkv: Value, b_qkv: Value | None, w_out: Value, b_out: Value | None,
               mask: Value | None, mask_type: Any) -> tuple[Value, Value]:
    """(output [B, L, E], attention probabilities [B, H, L, S])."""
    e, h = int(embed), int(heads)
    d = e // h
    bias = (lambda i: _rows(lo, b_qkv, i * e, (i + 1) * e)) if b_qkv is not None else \
        (lambda i: None)
    if query is key and key is value:          # self-attention: one product for q, k and v
        qkv = _linear(lo, query, w_qkv, b_qkv)
        q, k, v = (lo.emit("slice", [qkv], starts=[i * e], ends=[(i + 1) * e], axes=[2])
                   for i in range(3))
    else:
        q, k, v = (_linear(lo, x, _rows(lo, w_qkv, i * e, (i + 1) * e), bias(i))
                   for i, x in enumerate((query, key, value)))
    q, k, v = (_heads(lo, t, h, d) for t in (q, k, v))
    s = lo.emit("matmul", [q, lo.emit("transpose", [k], perm=[0, 1, 3, 2])])
    s = lo.emit("mul", [s, lo.tensor(1.0 / math.sqrt(d), s.dtype)])
    if mask is not None:
        if mask_type == 1 or (mask_type is None and mask.rank == 2 and
                              mask.shape[0] == query.shape[0] and mask.shape[0] != mask.shape[1]):
            mask = lo.emit("expand_dims", [mask], axes=[1, 2])       # [B, 1, 1, S]
        if mask.dtype == DType.BOOL:
            s = lo.emit("select", [mask, lo.tensor(-math.inf, s.dtype), s])
        else:
            s = lo.emit("add", [s, lo.cast(mask, s.dtype)])
    p = lo.emit("softmax", [s], axis=3)
    o = lo.emit("transpose", [lo.emit("matmul", [p, v])], perm=[0, 2, 1, 3])   # [B, L, H, D]
    o = _reshape(lo, o, [e])
    return _linear(lo, o, w_out, b_out), p


@lowers("aten._native_multi_head_attention.default")
def _native_mha(lo: Lowerer, query: Value, key: Value, value: Value, embed: int, heads: int,
                w_qkv: Value, b_qkv: Value | None, w_out: Value, b_out: Value | None,
                mask: Value | None = None, need_weights: bool = True,
                average_attn_weights: bool = True, mask_type: Any = None) -> tuple:
    out, p = _attention(lo, query, key, value, embed, heads, w_qkv, b_qkv, w_out, b_out, mask,
                        mask_type)
    if not need_weights or 1 not in _used_outputs(lo):
        return out, None
    weights = lo.emit("reduce_mean", [p], axes=[1], keepdims=False) if average_attn_weights \
        else p
    return out, weights


@lowers("aten._transformer_encoder_layer_fwd.default")
def _encoder_layer(lo: Lowerer, src: Value, embed: int, heads: int, w_qkv: Value,
                   b_qkv: Value | None, w_out: Value, b_out: Value | None, use_gelu: bool,
                   norm_first: bool, eps: float, ln1_w: Value, ln1_b: Value, ln2_w: Value,
                   ln2_b: Value, ff1_w: Value, ff1_b: Value | None, ff2_w: Value,
                   ff2_b: Value | None, mask: Value | None = None, mask_type: Any = None
                   ) -> Value:
    if src.rank != 3:
        raise TorchImportError("the fused encoder layer takes a batch of sequences [B, L, E] "
                               "(a nested tensor input is not supported)")

    def norm(x: Value, w: Value, b: Value) -> Value:
        return lo.emit("layer_norm", [x, w, b], axis=2, epsilon=float(eps))

    def attend(x: Value) -> Value:
        return _attention(lo, x, x, x, embed, heads, w_qkv, b_qkv, w_out, b_out, mask,
                          mask_type)[0]

    def feed_forward(x: Value) -> Value:
        hid = _linear(lo, x, ff1_w, ff1_b)
        hid = lo.emit("gelu", [hid], approximate="none") if use_gelu else \
            lo.emit("relu", [hid])
        return _linear(lo, hid, ff2_w, ff2_b)
    if norm_first:
        x = lo.emit("add", [src, attend(norm(src, ln1_w, ln1_b))])
        return lo.emit("add", [x, feed_forward(norm(x, ln2_w, ln2_b))])
    x = norm(lo.emit("add", [src, attend(src)]), ln1_w, ln1_b)
    return norm(lo.emit("add", [x, feed_forward(x)]), ln2_w, ln2_b)


