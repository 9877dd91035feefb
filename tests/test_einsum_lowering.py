"""Einsums imported as transposes and products a pair at a time (frontends/base/einsum.py), the
rest kept as the einsum op; results against np.einsum, with a named batch dim too."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import dlvmrt  # noqa: E402
from frontends.onnx import import_onnx  # noqa: E402


def _model(equation: str, shapes: list[list]) -> bytes:
    names = [f"x{i}" for i in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], equation=equation)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                                            for n, s in zip(names, shapes)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.mark.parametrize("equation, shapes, lowered", [
    ("ij,jk->ik", [[3, 4], [4, 5]], True),
    ("bihd,bjhd->bhij", [["N", 5, 2, 3], ["N", 6, 2, 3]], True),      # attention scores
    ("bhij,bjhd->bihd", [["N", 2, 5, 6], ["N", 6, 2, 3]], True),
    ("bti,oi->bto", [["N", 4, 6], [7, 6]], True),                     # a linear layer
    ("i,j->ji", [[3], [4]], True),                                    # outer product
    ("bij,bj->bi", [[2, 3, 4], [2, 4]], True),
    ("ii->i", [[3, 3]], False),                                       # a diagonal
    ("ij,jk,kl->il", [[2, 3], [3, 4], [4, 5]], True),                 # three operands
    ("ij,ij->", [[3, 4], [3, 4]], True),                              # a full contraction
    ("ij,jk->k", [[3, 4], [4, 5]], True),                             # i summed in A alone
    ("bhnd,bhde,bhn->bhne", [["N", 2, 5, 3], ["N", 2, 3, 4], ["N", 2, 5]], True),  # linear attn
    ("bhne,bhn->bhne", [["N", 2, 5, 4], ["N", 2, 5]], True),          # nothing summed: a multiply
    ("ai,bj,ck,ijk->abc", [[2, 3], [4, 5], [6, 7], [3, 5, 7]], True),  # a Tucker product
    ("ij,jk,kk->ij", [[2, 3], [3, 4], [4, 4]], False),                # a diagonal stays the op
    ("bij,bjk,bkl->bli", [["N", 2, 3], ["N", 3, 4], ["N", 4, 2]], True),
])
def test_einsum_lowering(equation, shapes, lowered):
    module = import_onnx(_model(equation, shapes))
    ops = {i.op for b in module.functions["main"].blocks for i in b.instrs}
    assert ("einsum" not in ops) == lowered, ops
    rng = np.random.default_rng(0)
    for batch in (1, 3):
        args = [rng.standard_normal([batch if d == "N" else d for d in s]).astype(np.float32)
                for s in shapes]
        got = dlvmrt.VM(module, jit="off").run("main", *args)[0]
        np.testing.assert_allclose(got, np.einsum(equation, *args), rtol=1e-5, atol=1e-5)
