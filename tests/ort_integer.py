"""onnxruntime's integer products on CPUs without VNNI: its u8 x s8 kernels (MatMulInteger,
ConvInteger, the QLinear ops) multiply pairs into 16-bit sums that saturate (AVX2's vpmaddubsw),
so its results there are not the exact integer products ONNX defines (on an AMD EPYC Zen 3: one
[4, 64] x [64, 8] product off by 28503). Tests that compare dlvm's exact products with
onnxruntime's ask here whether they may, and compare with onnxruntime's own MatMul over int32
instead where they may not."""
from __future__ import annotations

import functools

import numpy as np


@functools.cache
def integer_products_saturate() -> bool:
    """whether this onnxruntime's u8 x s8 MatMulInteger differs from the exact product here"""
    import onnxruntime as ort
    from onnx import TensorProto, helper
    rng = np.random.default_rng(0)
    a = rng.integers(200, 256, (4, 64), dtype=np.uint8)
    b = rng.integers(100, 128, (64, 8), dtype=np.int8)       # pairs past 2^15: saturate if 16-bit
    node = helper.make_node("MatMulInteger", ["a", "b"], ["y"])
    graph = helper.make_graph(
        [node], "probe", [helper.make_tensor_value_info("a", TensorProto.UINT8, [4, 64])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
        [helper.make_tensor("b", TensorProto.INT8, [64, 8], b.tobytes(), raw=True)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    got = ort.InferenceSession(model.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, {"a": a})[0]
    return not np.array_equal(got, a.astype(np.int32) @ b.astype(np.int32))


def with_exact_integer_products(onnx_bytes: bytes) -> bytes:
    """the model with each MatMulInteger written as MatMul over int32 of the zero-point-shifted
    operands (ONNX's definition, which onnxruntime computes exactly in int32)"""
    import onnx
    from onnx import TensorProto, helper
    model = onnx.load_from_string(onnx_bytes)
    nodes = []
    for node in model.graph.node:
        if node.op_type != "MatMulInteger" or node.domain not in ("", "ai.onnx"):
            nodes.append(node)
            continue
        ins = list(node.input) + [""] * (4 - len(node.input))
        shifted = []
        for side, (x, zp) in enumerate(((ins[0], ins[2]), (ins[1], ins[3]))):
            wide = f"{node.output[0]}__exact{side}"
            nodes.append(helper.make_node("Cast", [x], [wide], to=TensorProto.INT32))
            if zp:
                zp_wide = f"{wide}_zp"
                nodes.append(helper.make_node("Cast", [zp], [zp_wide], to=TensorProto.INT32))
                if side == 0:       # a's zero point: a scalar or one per row of a
                    axes = f"{wide}_axes"
                    nodes.append(helper.make_node("Constant", [], [axes], value=helper.make_tensor(
                        axes, TensorProto.INT64, [1], [-1])))
                    nodes.append(helper.make_node("Unsqueeze", [zp_wide, axes], [zp_wide + "_col"]))
                    zp_wide += "_col"
                nodes.append(helper.make_node("Sub", [wide, zp_wide], [wide + "_shifted"]))
                wide += "_shifted"
            shifted.append(wide)
        nodes.append(helper.make_node("MatMul", shifted, list(node.output)))
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return model.SerializeToString()
