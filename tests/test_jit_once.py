"""jit/targets/cpu/once.py: the per-process kernel object."""
from __future__ import annotations

from jit.targets.cpu.once import PerProcess


def test_per_process_builds_once():
    made = []
    once = PerProcess(lambda disk: made.append(disk) or object())
    first = once.get(None)
    assert once.get("ignored") is first and made == [None]
