"""The target registry (jit/targets/registry.py): targets are found by folder, the runtime and
the command line ask it, and a target added by hand is offered like the built-in ones."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from shared_paths import REPO

import dlvmrt.devices as devices
from jit.targets import registry
from jit.targets.registry import DeviceUnavailable, Target


def test_builtin_targets_are_found():
    assert {"cpu", "cuda", "aot"} <= set(registry.names())
    for t in registry.targets():
        assert t.summary and t.emits, t.name
    assert registry.target_for_emit("ptx").name == "cuda"
    assert registry.target_for_emit("library").name == "aot"
    assert registry.target_for_emit("llvm") is None        # several targets write LLVM IR
    with pytest.raises(ValueError, match="unknown target 'tpu'"):
        registry.get("tpu")


def test_the_runtime_names_no_target():
    # dlvmrt reaches targets only through the registry (and the JIT's public API)
    offenders = []
    for path in sorted((REPO / "dlvmrt").rglob("*.py")):
        for line in path.read_text().splitlines():
            if re.search(r"^\s*(from|import) jit\.targets\.(?!registry\b)", line):
                offenders.append(f"{path.relative_to(REPO)}: {line.strip()}")
    assert not offenders, offenders


class _FakeTarget(Target):
    name = "fake"
    summary = "a target added by hand"
    emits = ("text",)
    device_kind = "fake"

    def compile_program(self, module, *, emit=None, dims=None, out_dir, **options):
        out = Path(out_dir) / f"{module.name}.txt"
        out.write_text(f"{len(module.functions)} functions\n")
        return [out]

    def available(self):
        return False, "there is no fake hardware"

    def simulated_device(self, name, **numbers):
        return registry.get("cuda").simulated_device(name, **numbers)


@pytest.fixture
def fake_target():
    registry.register(_FakeTarget())
    devices.accelerator_available.cache_clear()
    yield
    registry._targets.pop("fake", None)
    devices.accelerator_available.cache_clear()


def test_a_new_target_is_one_registration(fake_target, tmp_path):
    import jit
    from isa.builder import ModuleBuilder
    mb = ModuleBuilder("m")
    f = mb.function("main", [("x", "f32[4]")], ["f32[4]"])
    f.ret(f.relu(f.arg("x")))
    paths = jit.compile_program(mb.finish(), target="fake", out_dir=tmp_path)
    assert paths[0].read_text() == "1 functions\n"
    assert "fake" in devices.device_names()
    with pytest.raises(DeviceUnavailable, match="there is no fake hardware"):
        devices.resolve_device("fake:0")
    assert registry.parse_device("fake") == ("fake", 0)
