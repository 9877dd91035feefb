"""The runner's guards, variants and fallbacks; output buffer reuse; the code cache in memory, on
disk, across processes and with corrupt entries; `compile_program`; generated IR verifies."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from isa.builder import ModuleBuilder
from isa.verify import verify_module
from jit import Jit, compile_program, form_regions
from jit.build import build_kernel
from jit.plan import make_plan

ROOT = Path(__file__).resolve().parent.parent


def elementwise_module(dtype="f32"):
    mb = ModuleBuilder("e")
    f = mb.function("main", [("x", f"{dtype}[?, ?]"), ("y", f"{dtype}[?]")], [f"{dtype}[?, ?]"])
    x, y = f.args()
    f.ret(f.mul(f.add(x, y), 0.5))
    return mb.finish()


def first_runner(jit, m):
    return jit.runner(m, form_regions(m, "main", verify_module(m)["main"])[0])


def test_guards_variants_and_fallback(tmp_path):
    jit = Jit(cache_dir=str(tmp_path), threads=1, max_variants=2)
    run = first_runner(jit, elementwise_module())
    x, y = np.ones((3, 4), np.float32), np.arange(4, dtype=np.float32)
    assert np.array_equal(run([x, y])[0], (x + y) * 0.5)
    # new sizes, same broadcast pattern: same variant, no compile
    assert run([np.ones((7, 9), np.float32), np.ones(9, np.float32)]) is not None
    assert len(run.describe()["variants"]) == 1
    # a dtype the region was not built for: guard fails
    assert run([x.astype(np.float64), y.astype(np.float64)]) is None
    assert "float64" in run.describe()["last_fallback_reason"]
    # a second pattern (y broadcast along rows becomes a column): second variant
    assert run([np.ones((1, 4), np.float32), np.ones(4, np.float32)]) is not None
    assert len(run.describe()["variants"]) == 2
    # a third pattern exceeds max_variants: stays interpreted
    assert run([np.ones((3, 1), np.float32), np.ones(5, np.float32)]) is None
    assert "max_variants" in run.describe()["last_fallback_reason"]
    # shapes that do not broadcast decline too (the interpreter traps with its own message)
    assert run([np.ones((3, 4), np.float32), np.ones(5, np.float32)]) is None
    d = run.describe()
    assert d["fallbacks"] == 3 and d["compiled_calls"] == 3 and d["calls"] == 6


def test_steady_state_reuses_output_buffers(tmp_path):
    run = first_runner(Jit(cache_dir=str(tmp_path), threads=1), elementwise_module())
    x, y = np.ones((64, 64), np.float32), np.ones(64, np.float32)
    out = None
    for _ in range(50):
        out = run([x, y])[0]         # the caller holds the previous result during the call
    assert run.describe()["output_allocations"] == 2
    kept = [run([x, y])[0] for _ in range(3)]     # held results are never overwritten
    assert len({id(k) for k in kept}) == 3 and all(np.array_equal(k, out) for k in kept)


SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, {root!r})
    from tests.test_jit_runtime import elementwise_module, first_runner
    from jit import Jit
    run = first_runner(Jit(cache_dir={cache!r}, threads=1), elementwise_module())
    out = run([np.ones((3, 4), np.float32), np.ones(4, np.float32)])
    print(json.dumps({{"source": run.describe()["variants"][0]["source"], "ok": bool(out[0][0, 0] == 1.0)}}))
""")


def run_child(cache: Path) -> dict:
    import json
    code = SCRIPT.format(root=str(ROOT), cache=str(cache))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_disk_cache_across_processes_and_corrupt_entries(tmp_path):
    cache = tmp_path / "cache"
    assert run_child(cache) == {"source": "compiled", "ok": True}
    assert run_child(cache) == {"source": "disk", "ok": True}      # the second process compiles nothing
    (entry,) = [p for p in cache.rglob("*.o")]
    entry.write_bytes(entry.read_bytes()[:100] + b"garbage")        # a truncated, damaged entry
    assert run_child(cache) == {"source": "compiled", "ok": True}   # ignored and rebuilt
    assert run_child(cache) == {"source": "disk", "ok": True}
    assert not [p for p in cache.rglob(".tmp-*")]


def test_cache_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("DLVM_CACHE_DIR", str(tmp_path / "envcache"))
    run = first_runner(Jit(threads=1, opt_level=2), elementwise_module("f64"))
    assert run([np.ones((2, 2)), np.ones(2)]) is not None
    assert list((tmp_path / "envcache").rglob("*.o"))


def test_generated_modules_verify_and_print(tmp_path):
    import llvmlite.binding as llvm

    from jit.llvm.target import host
    from jit.targets.cpu.compiler import lower_to_llvm
    host()
    m = elementwise_module()
    types = verify_module(m)["main"]
    k = build_kernel(m, types, form_regions(m, "main", types)[0])
    spec = make_plan(k, [(3, 4), (4,)]).spec
    text, _ = lower_to_llvm(k, spec)
    llvm.parse_assembly(text).verify()
    assert 'define i32 @"dlvm_kernel"' in text and "noalias" in text
    run = first_runner(Jit(cache_dir=str(tmp_path), threads=1), m)
    run([np.ones((3, 4), np.float32), np.ones(4, np.float32)])
    assert "vector" in run.llvm_ir() or "<" in run.llvm_ir()      # the loop was vectorized
    assert "ret" in run.asm()


def test_compile_program_emits_one_file_per_region(tmp_path):
    m = elementwise_module()
    for emit, ext in (("kernel-ir", ".kir"), ("llvm", ".ll"), ("asm", ".s")):
        files = compile_program(m, emit=emit, out_dir=tmp_path / emit)
        assert [f.suffix for f in files] == [ext] and files[0].read_text()
    with pytest.raises(ValueError, match="target"):
        compile_program(m, target="tpu", emit="llvm", out_dir=tmp_path)
    with pytest.raises(ValueError, match="emit"):
        compile_program(m, emit="ptx", out_dir=tmp_path)


def test_import_jit_does_not_import_llvmlite():
    code = "import sys, jit; print('llvmlite' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.stdout.strip() == "False", res.stderr


def test_unloading_compiled_code_keeps_the_compiler_usable():
    # an engine owns its target machine; disposing one must not break later compiles
    from jit.llvm import target
    from jit.targets.cpu.compiler import lower_to_llvm
    m = elementwise_module()
    types = verify_module(m)["main"]
    k = build_kernel(m, types, form_regions(m, "main", types)[0])
    text, _ = lower_to_llvm(k, make_plan(k, [(3, 4), (4,)]).spec)
    loaded = target.LoadedObject(target.emit_object(target.optimize(text)))
    assert loaded.address("dlvm_kernel")
    del loaded
    assert target.emit_object(target.optimize(text))
