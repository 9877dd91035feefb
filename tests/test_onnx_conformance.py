"""ONNX backend node tests through import + interpreter (all of them: about 6 s) and, marked
slow, through import + JIT.

A failure that is not listed in frontends/onnx/KNOWN_FAILURES.md is a regression. Regenerate
the list with `bench/onnx_conformance.py --write-known-failures frontends/onnx/KNOWN_FAILURES.md`
after making a case pass.
"""
from __future__ import annotations

import os
import re
import warnings

import pytest

pytest.importorskip("onnx")

from frontends.onnx.conformance import Report, run_all  # noqa: E402

pytestmark = pytest.mark.onnx
KNOWN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "frontends",
                     "onnx", "KNOWN_FAILURES.md")
# of every case run: models older than opset 13 are converted and counted since issue 15
MIN_PASS_RATE = 0.83


def known_failures() -> set[str]:
    with open(KNOWN) as f:
        text = f.read()
    section = text.split("## Failures, by reason", 1)[1].split("## Excluded", 1)[0]
    return set(re.findall(r"^- (test_\w+)", section, re.M))


@pytest.fixture(scope="module")
def interpreted() -> Report:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_all(None, "off")


def _check(report: Report) -> None:
    failed = {r.name: r.reason for r in report.results if r.status == "failed"}
    new = {n: why for n, why in failed.items() if n not in known_failures()}
    assert not new, "cases that fail but are not in KNOWN_FAILURES.md:\n" + "\n".join(
        f"  {n}: {why}" for n, why in sorted(new.items()))
    assert report.pass_rate >= MIN_PASS_RATE


def test_node_cases_interpreter(interpreted: Report):
    _check(interpreted)


def test_exclusions_are_only_random_or_training(interpreted: Report):
    reasons = {r.reason for r in interpreted.results if r.status == "excluded"}
    assert reasons and all(re.match(r"(random op|training op)", w) for w in reasons)


def test_core_families_pass(interpreted: Report):
    core = re.compile(r"^test_(add|sub|mul|div|relu|sigmoid|tanh|exp|log|sqrt|matmul|gemm|conv_|"
                      r"maxpool_2d|averagepool_2d|softmax|logsoftmax|reshape|transpose|concat|"
                      r"gather_|slice|squeeze|unsqueeze|reduce_sum|reduce_mean|batchnorm|"
                      r"layer_normalization|where|cast_FLOAT_to|if$)")
    bad = [r.name for r in interpreted.results
           if core.search(r.name) and r.status == "failed"
           and "element type" not in r.reason]
    assert not bad


@pytest.mark.slow
def test_node_cases_jit():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = run_all(None, "always")
    failed = {r.name for r in report.results if r.status == "failed"}
    assert report.pass_rate >= MIN_PASS_RATE
    # the JIT passes exactly where the interpreter does: it declines what it cannot compile
    assert not failed - known_failures()
