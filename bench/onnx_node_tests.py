"""All tensor-only ONNX backend node-test cases, none excluded, in dlvm and in onnxruntime side
by side (the count of issue 15).

    .venv/bin/python bench/onnx_node_tests.py                  # interpreter
    .venv/bin/python bench/onnx_node_tests.py --jit always     # import + JIT
    .venv/bin/python bench/onnx_node_tests.py -k '^test_resize' --list

A case is tensor-only when every graph input and output is a tensor (1855 cases in onnx 1.23).
Both runtimes get every data set of the case and are compared with the case's own tolerances
(`frontends/onnx/conformance.compare`). Random and training cases are run like the others
(they pass only where the result happens to match). dlvm's harness freezes a shape-like graph
input at import when the importer asks for it (the documented fallback); the count without
those passes is printed as well.
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from frontends.onnx.conformance import _array, compare, load_cases, run_case, short_reason, tensor_only  # noqa: E402


def ort_case(case) -> str | None:
    """None when onnxruntime matches the case's expected outputs, else the reason."""
    import onnxruntime as ort
    try:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.log_severity_level = 4
        sess = ort.InferenceSession(case.model.SerializeToString(), opts,
                                    providers=["CPUExecutionProvider"])
        names = [i.name for i in sess.get_inputs()]
        for inputs, outputs in case.data_sets:
            feeds = dict(zip(names, (_array(x) for x in inputs)))
            got = sess.run(None, feeds)
            if len(got) != len(outputs):
                return "wrong number of outputs"
            for g, w in zip(got, map(_array, outputs)):
                import numpy as np
                bad = compare(np.asarray(g), w, case.rtol, case.atol)
                if bad:
                    return "mismatch: " + bad
    except Exception as exc:  # noqa: BLE001 - every failure is counted
        return short_reason(exc)
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", "--pattern", help="regex selecting case names")
    ap.add_argument("--jit", default="off", choices=["off", "auto", "always"])
    ap.add_argument("--no-ort", action="store_true", help="dlvm only")
    ap.add_argument("--list", action="store_true",
                    help="list every case onnxruntime passes and dlvm fails, with the reason")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    cases = [c for c in load_cases(a.pattern) if tensor_only(c)]
    dl_pass = dl_frozen = ort_pass = both = 0
    ort_only: list[tuple[str, str]] = []
    dlvm_only: list[str] = []
    reasons: dict[str, int] = {}
    for case in cases:
        r = run_case(case, a.jit, exclude=False)
        d_ok = r.status == "passed"
        o_ok = None if a.no_ort else ort_case(case) is None
        dl_pass += d_ok
        dl_frozen += d_ok and bool(r.frozen)
        if not d_ok:
            reasons[r.reason] = reasons.get(r.reason, 0) + 1
        if o_ok is not None:
            ort_pass += o_ok
            both += d_ok and o_ok
            if o_ok and not d_ok:
                ort_only.append((case.name, r.reason))
            if d_ok and not o_ok:
                dlvm_only.append(case.name)
    n = len(cases)
    print(f"{n} tensor-only node-test cases, none excluded (jit={a.jit})")
    print(f"  dlvm        {dl_pass:5d}  {dl_pass / n:6.1%}   (without the {dl_frozen} passes that "
          f"froze a shape-like input: {(dl_pass - dl_frozen) / n:.1%})")
    if not a.no_ort:
        print(f"  onnxruntime {ort_pass:5d}  {ort_pass / n:6.1%}")
        print(f"  both {both}, dlvm only {len(dlvm_only)}, onnxruntime only {len(ort_only)}")
    print("\ndlvm failures by reason (top 25):")
    for why, k in sorted(reasons.items(), key=lambda kv: -kv[1])[:25]:
        print(f"  {k:4d}  {why}")
    if a.list:
        print("\npassed by onnxruntime, failed by dlvm:")
        for name, why in ort_only:
            print(f"  {name}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
