"""The random state a VM carries (the semantics: specs/semantics.md, "Random numbers").

An instruction of a random op (isa/ops/random.py) with a `seed` draws from a generator of its
own, made when the VM prepares the instruction, so a fresh VM given the same calls gives the
same numbers (onnxruntime keeps one generator per seeded node for a session in the same way).
One without a seed draws from the VM's stream: seeded by `VM(seed=...)`, else $DLVM_SEED, else by
the operating system's entropy.

NumPy's generators lock themselves while drawing, so threads calling one VM at once each get
numbers no other call got; which call gets which depends on the order the threads draw in. A
process forked from one holding a VM draws its own numbers where the VM's stream came from the
operating system (a seed given asks for the same numbers, so it is kept).
"""
from __future__ import annotations

import os
import threading
import weakref

import numpy as np

from isa.errors import SettingError
from isa.module import Module
from isa.ops import OPS
from isa.ops.random import NO_SEED


class RandomStreams:
    """One VM's random state."""

    def __init__(self, seed: int | None = None):
        if seed is None and os.environ.get("DLVM_SEED", "").strip():
            try:
                seed = int(os.environ["DLVM_SEED"])
            except ValueError:
                raise SettingError(f"DLVM_SEED must be an integer, got "
                                 f"{os.environ['DLVM_SEED']!r}") from None
        if seed is not None and seed < 0:
            raise SettingError(f"seed must be a non-negative integer, got {seed}")
        self.seed = seed
        self.shared = np.random.default_rng(seed)
        self._own: dict[tuple, np.random.Generator] = {}
        self._lock = threading.Lock()
        if seed is None:
            _UNSEEDED.add(self)

    def _reseed_after_fork(self) -> None:
        # the child's copy of the generator would repeat the parent's numbers
        self.shared.bit_generator.state = np.random.PCG64().state
        self._lock = threading.Lock()

    def for_instruction(self, attrs: dict, where: tuple) -> np.random.Generator:
        """The generator the instruction at `where` (function, block, index) draws from: kept
        for the VM's life, so preparing a function again does not restart its sequence."""
        seed = attrs.get("seed", NO_SEED)
        if seed == NO_SEED:
            return self.shared
        with self._lock:
            return self._own.setdefault(where, np.random.default_rng(seed))


_UNSEEDED: weakref.WeakSet[RandomStreams] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for streams in list(_UNSEEDED):
        streams._reseed_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def uses_random(module: Module) -> bool:
    """Whether any instruction of `module` draws random numbers."""
    return any(OPS[ins.op].random for f in module.functions.values() for b in f.blocks
               for ins in b.instrs)
