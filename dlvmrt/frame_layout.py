"""Register slots of one function: every register, constant and immediate gets a slot index.

Constants and immediates live in pre-filled slots of a template register file, so every operand
of every instruction is read the same way (`r[i]`) and a frame starts as one list copy. Slot 0
holds the frame's named-dim bindings, which const and shape-typed attributes need.
"""
from __future__ import annotations

import numpy as np

from isa.module import ConstRef, Function, Imm, Module, Operand, Reg
from isa.verify import FunctionTypes

BINDINGS_SLOT = 0


def readonly(a: np.ndarray) -> np.ndarray:
    """Constants are shared by every run and may be returned to the user: never writable."""
    a = np.asarray(a)
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


class FrameLayout:
    def __init__(self, module: Module, func: Function, types: FunctionTypes,
                 constants: dict[str, np.ndarray]):
        self.func = func
        self.slots: dict[tuple, int] = {}
        self.template: list = [None]
        self.operand_slots: dict[tuple[int, int], list[int]] = {}
        for p in func.params:
            self._slot(("reg", p.name))
        self.param_slots = [self.slots[("reg", p.name)] for p in func.params]
        for bi, block in enumerate(func.blocks):
            for ii, ins in enumerate(block.instrs):
                for r in ins.results:
                    self._slot(("reg", r))
                self.operand_slots[(bi, ii)] = [self.operand_slot(o, bi, ii, k, types, constants)
                                                for k, o in enumerate(ins.operands)]

    def _slot(self, key: tuple, value=None) -> int:
        idx = self.slots.get(key)
        if idx is None:
            idx = self.slots[key] = len(self.template)
            self.template.append(value)
        return idx

    def reg(self, name: str) -> int:
        return self.slots[("reg", name)]

    def operand_slot(self, o: Operand, bi: int, ii: int, k: int, types: FunctionTypes,
                     constants: dict[str, np.ndarray]) -> int:
        if isinstance(o, Reg):
            return self._slot(("reg", o.name))
        if isinstance(o, ConstRef):
            return self._slot(("const", o.name), constants[o.name])
        assert isinstance(o, Imm)
        rows = types[bi]
        if ii < len(rows):
            dtype = rows[ii].operands[k].dtype.np
        else:       # an unreachable block: never runs, any dtype will do
            dtype = np.dtype(type(o.value))
        value = readonly(np.asarray(o.value, dtype=dtype))[()]
        # dtype.name too: the narrow formats share their .str ("<V1")
        return self._slot(("imm", dtype.str, dtype.name, type(o.value).__name__, repr(o.value)),
                          value)

    def new_frame(self) -> list:
        return self.template.copy()

    def operand_slot_of(self, o: Operand) -> int:
        """The slot of a register or module constant named by a JIT region's inputs."""
        if isinstance(o, Reg):
            return self.slots[("reg", o.name)]
        if isinstance(o, ConstRef):
            return self.slots[("const", o.name)]
        raise TypeError(f"region inputs are registers or constants, got {o}")
