"""Run ONNX's backend node tests through the importer and the dlvm VM.

Each case of `onnx.backend.test` (node kind: a one-op model with inputs and expected outputs,
built in memory by onnx's loader) is imported, run and compared with the case's tolerances.
Cases are `passed`, `failed` (with a reason) or `excluded` (with the written reason below:
random and training ops; models older than the importer's oldest opset are converted).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from isa.dtypes import dtype_from_numpy

# Ops whose results are random: dlvm runs them (isa/ops/random.py; their distributions are
# tested in tests/test_random_ops.py), but no implementation's numbers equal the cases' own.
RANDOM_OPS = {"Bernoulli", "RandomUniform", "RandomUniformLike", "RandomNormal",
              "RandomNormalLike", "Multinomial"}
# Gradient needs the graph differentiated at import; the optimizer steps (Adagrad, Adam,
# Momentum) are imported as arithmetic and run like any case.
TRAINING_OPS = {"Gradient"}
# Dropout in training mode draws a random mask.
RANDOM_CASE = re.compile(r"^test_training_dropout(?!.*zero_ratio)")


@dataclass
class CaseResult:
    name: str
    status: str          # "passed" | "failed" | "excluded"
    reason: str = ""
    seconds: float = 0.0
    frozen: tuple[str, ...] = ()   # inputs fixed at import (operands a rank depends on)


@dataclass
class Report:
    results: list[CaseResult] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(r.status == status for r in self.results)

    @property
    def pass_rate(self) -> float:
        ran = self.count("passed") + self.count("failed")
        return self.count("passed") / ran if ran else 0.0

    def count_frozen(self) -> int:
        """Passes that needed a shape-like graph input fixed at import (the fallback)."""
        return sum(1 for r in self.results if r.status == "passed" and r.frozen)

    @property
    def pass_rate_unfrozen(self) -> float:
        """The pass rate counting frozen passes as failures."""
        ran = self.count("passed") + self.count("failed")
        return (self.count("passed") - self.count_frozen()) / ran if ran else 0.0

    def grouped(self, status: str) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for r in self.results:
            if r.status == status:
                out.setdefault(r.reason, []).append(r.name)
        return dict(sorted(out.items(), key=lambda kv: (-len(kv[1]), kv[0])))


def load_cases(pattern: str | None = None) -> list[Any]:
    import warnings

    from onnx.backend.test.loader import load_model_tests
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = load_model_tests(kind="node")
    rx = re.compile(pattern) if pattern else None
    return sorted((c for c in cases if rx is None or rx.search(c.name)), key=lambda c: c.name)


def tensor_only(case) -> bool:
    """Every graph input and output is a tensor (no sequences, optionals or maps): the 1855
    cases of onnx 1.23's node tests that issue 15 counts, none left out."""
    g = case.model.graph
    return all(v.type.HasField("tensor_type") for v in [*g.input, *g.output])


def exclusion(case) -> str | None:
    """The written reason a case is not run, or None."""
    model = case.model
    ops = {n.op_type for n in _all_nodes(model.graph)}
    if ops & RANDOM_OPS or RANDOM_CASE.search(case.name):
        return "random op: runs, but no implementation draws the case's numbers"
    if ops & TRAINING_OPS:
        return "training op: dlvm imports inference graphs"
    return None


def _all_nodes(graph):
    for n in graph.node:
        yield n
        for a in n.attribute:
            if a.type == a.GRAPH:
                yield from _all_nodes(a.g)
            for g in a.graphs:
                yield from _all_nodes(g)


def short_reason(exc: BaseException) -> str:
    """A failure reason with the case-specific parts (names, numbers) kept short."""
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    msg = re.sub(r"'[^']*'", "'…'", msg)
    return f"{type(exc).__name__}: {msg}"[:160]


def _array(x: Any) -> Any:
    """Case data as arrays (cases of exotic dtypes carry TensorProtos); strings as object
    arrays of str (some onnx versions give bytes)."""
    from onnx import TensorProto, numpy_helper

    from .tensors import as_text
    a = numpy_helper.to_array(x) if isinstance(x, TensorProto) else x
    if isinstance(a, np.ndarray) and (a.dtype == object or a.dtype.kind in "US"):
        return as_text(a, "a case's string data")
    return a


def compare(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    want = np.asarray(want)
    if want.dtype == object or want.dtype.kind in "USO":
        return _compare_text(got, want)
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != expected {want.dtype}"
    if got.shape != want.shape:
        return "shape differs"
    narrow = dtype_from_numpy(want.dtype)
    if narrow is not None and narrow.is_narrow and narrow.is_float:
        # bf16 / float8 / float4 (ml_dtypes' kinds are not "f"): compared as floats, NaN equal
        got, want = got.astype(np.float32), want.astype(np.float32)
    if want.dtype.kind == "f":
        if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
            return "values differ"
    elif not np.array_equal(got, want):
        return "values differ"
    return None


def _compare_text(got: np.ndarray, want: np.ndarray) -> str | None:
    """String outputs: the same shape and the same texts (bytes read as UTF-8)."""
    from .tensors import as_text
    if got.dtype != object and got.dtype.kind != "U":
        return f"dtype {got.dtype} != expected strings"
    if got.shape != want.shape:
        return "shape differs"
    try:
        same = as_text(got).tolist() == as_text(want).tolist()
    except Exception:           # noqa: BLE001 - elements that are no text differ
        same = False
    return None if same else "values differ"


def run_case(case, jit: str = "off", exclude: bool = True) -> CaseResult:
    """Import and run one case; with `exclude=False`, random and training cases run too (and
    fail unless they happen to match)."""
    import dlvmrt
    from frontends.onnx import import_onnx
    t0 = time.perf_counter()
    why = exclusion(case) if exclude else None
    if why:
        return CaseResult(case.name, "excluded", why)
    from frontends.onnx.errors import OnnxImportError
    names = [vi.name for vi in case.model.graph.input
             if vi.name not in {i.name for i in case.model.graph.initializer}]
    frozen: dict[str, Any] = {}
    first_inputs = [_array(x) for x in case.data_sets[0][0]]
    while True:
        try:
            module = import_onnx(case.model, freeze=frozen)
            break
        except OnnxImportError as exc:
            # a shape-like graph input: fix it to the case's value and import again (dlvm
            # fixes shapes before a program runs, as an exporter's initializer would)
            name = exc.value_name
            if name is not None and len(case.data_sets) == 1:
                if name in names and name not in frozen and names.index(name) < len(first_inputs):
                    frozen[name] = first_inputs[names.index(name)]
                    continue
                # computed from graph inputs: fix every integer input the case feeds
                ints = {n: x for n, x in zip(names, first_inputs)
                        if isinstance(x, np.ndarray) and x.dtype.kind in "iu" and n not in frozen}
                if ints:
                    frozen.update(ints)
                    continue
            return CaseResult(case.name, "failed", "import: " + short_reason(exc),
                              time.perf_counter() - t0)
        except Exception as exc:                  # noqa: BLE001 - every failure is reported
            return CaseResult(case.name, "failed", "import: " + short_reason(exc),
                              time.perf_counter() - t0)
    try:
        vm = dlvmrt.VM(module, jit=jit)
        for inputs, outputs in case.data_sets:
            inputs = [_array(x) for n, x in zip(names, inputs) if n not in frozen]
            got = vm.run("main", *inputs)
            if len(got) != len(outputs):
                return CaseResult(case.name, "failed", "run: wrong number of outputs")
            for g, w in zip(got, map(_array, outputs)):
                bad = compare(np.asarray(g), w, case.rtol, case.atol)
                if bad:
                    return CaseResult(case.name, "failed", "mismatch: " + bad,
                                      time.perf_counter() - t0)
    except Exception as exc:                      # noqa: BLE001
        return CaseResult(case.name, "failed", "run: " + short_reason(exc),
                          time.perf_counter() - t0)
    return CaseResult(case.name, "passed", "", time.perf_counter() - t0, tuple(frozen))


def run_all(pattern: str | None = None, jit: str = "off", progress=None) -> Report:
    report = Report()
    for case in load_cases(pattern):
        r = run_case(case, jit)
        report.results.append(r)
        if progress:
            progress(r)
    return report
