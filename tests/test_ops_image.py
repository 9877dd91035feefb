"""The rows of isa/ops/image.py, sets.py and linalg.py against independent computations: col2im
against PyTorch's fold, roi_align against onnxruntime, unique against a dictionary walk, det
against the Leibniz formula."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_ops_dynamic import COVERED as SWEPT
from test_ops_dynamic import run

RNG = np.random.default_rng(5)

COVERED = {"col2im", "roi_align", "unique", "det"}


def test_every_row_of_these_files_is_tested_here_and_counted():
    from isa.ops import image, linalg, sets
    assert {op.name for op in image.OPS + sets.OPS + linalg.OPS} <= COVERED <= SWEPT


@pytest.mark.parametrize("img, blk, strides, pads, dil", [
    ([5, 5], [2, 2], [1, 1], [0, 0, 0, 0], [1, 1]),
    ([6, 7], [3, 2], [2, 1], [1, 0, 1, 0], [1, 2]),
    ([4, 4], [2, 2], [2, 2], [1, 1, 1, 1], [1, 1]),
])
def test_col2im_matches_torch_fold(img, blk, strides, pads, dil):
    torch = pytest.importorskip("torch")
    nd = len(img)
    outs = [(img[i] + pads[i] + pads[i + nd] - (dil[i] * (blk[i] - 1) + 1)) // strides[i] + 1
            for i in range(nd)]
    x = RNG.standard_normal((2, 3 * int(np.prod(blk)), int(np.prod(outs))))
    got = run("col2im", x, image_shape=img, block_shape=blk, strides=strides, pads=pads,
              dilations=dil)
    want = torch.nn.functional.fold(torch.tensor(x), img, blk, dilation=dil,
                                    padding=pads[:nd], stride=strides).numpy()
    np.testing.assert_allclose(got, want, atol=1e-12)


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("half", [False, True])
@pytest.mark.parametrize("ratio", [0, 2])
def test_roi_align_matches_onnxruntime(mode, half, ratio):
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper
    x = RNG.standard_normal((2, 3, 10, 9)).astype(np.float32)
    rois = np.array([[0, 0, 9, 9], [0, 5, 4, 9], [5.3, 5.1, 9, 9], [-2, 1, 12, 3.5]], np.float32)
    idx = np.array([0, 1, 1, 0], np.int64)
    node = helper.make_node("RoiAlign", ["x", "r", "i"], ["y"], mode=mode, output_height=3,
                            output_width=4, sampling_ratio=ratio, spatial_scale=0.8,
                            coordinate_transformation_mode="half_pixel" if half
                            else "output_half_pixel")
    vi = helper.make_tensor_value_info
    g = helper.make_graph([node], "g", [vi("x", TensorProto.FLOAT, x.shape),
                                        vi("r", TensorProto.FLOAT, rois.shape),
                                        vi("i", TensorProto.INT64, idx.shape)],
                          [vi("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)], ir_version=8)
    want = ort.InferenceSession(m.SerializeToString()).run(None, {"x": x, "r": rois, "i": idx})[0]
    got = run("roi_align", x, rois, idx, mode=mode, output_height=3, output_width=4,
              sampling_ratio=ratio, spatial_scale=0.8, half_pixel=half)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _unique_walk(items: list) -> tuple[list, list, list, list]:
    """First-occurrence order by walking the items once."""
    seen: dict = {}
    first, inverse, counts = [], [], []
    for i, v in enumerate(items):
        if v not in seen:
            seen[v] = len(seen)
            first.append(i)
            counts.append(0)
        inverse.append(seen[v])
        counts[seen[v]] += 1
    return list(seen), first, inverse, counts


def test_unique_of_elements_in_both_orders():
    x = np.array([[2, 1, 1], [3, 4, 3]], np.int32)
    vals, first, inverse, counts = _unique_walk(x.reshape(-1).tolist())
    y, f, inv, c = run("unique", x, sorted=False)
    assert (y.tolist(), f.tolist(), inv.tolist(), c.tolist()) == (vals, first, inverse, counts)
    y, f, inv, c = run("unique", x)
    assert y.tolist() == sorted(vals)
    assert [y[k] for k in inv] == x.reshape(-1).tolist()
    assert [x.reshape(-1)[k] for k in f] == y.tolist() and c.sum() == x.size


def test_unique_of_slices_along_an_axis():
    x = np.array([[1, 0, 1, 0], [2, 5, 2, 3], [1, 1, 1, 1]], np.float32)
    cols = [tuple(x[:, j]) for j in range(4)]
    vals, first, inverse, counts = _unique_walk(cols)
    y, f, inv, c = run("unique", x, axis=1, sorted=False)
    assert [tuple(y[:, j]) for j in range(y.shape[1])] == vals
    assert (f.tolist(), inv.tolist(), c.tolist()) == (first, inverse, counts)
    y, _, inv, _ = run("unique", x, axis=-1)
    assert [tuple(y[:, j]) for j in range(y.shape[1])] == sorted(vals)


def _leibniz(m: np.ndarray) -> float:
    n, total = m.shape[0], 0.0
    for perm in itertools.permutations(range(n)):
        inversions = sum(perm[i] > perm[j] for i in range(n) for j in range(i + 1, n))
        total += (-1) ** inversions * np.prod([m[i, perm[i]] for i in range(n)])
    return total


def test_det_matches_the_leibniz_formula():
    x = RNG.standard_normal((2, 3, 4, 4))
    got = run("det", x)
    want = np.array([[_leibniz(x[i, j]) for j in range(3)] for i in range(2)])
    np.testing.assert_allclose(got, want, rtol=1e-10)
    assert run("det", np.eye(3, dtype=np.float32) * 2).dtype == np.float32
