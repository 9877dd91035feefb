"""Reading the arguments of `:run`, `:debug` and `:profile`: `@f ARG ... [DIM=SIZE ...]`.

An ARG is a session register (`%x`), `random` (a random value of the parameter's type), a
number (for scalar parameters) or a `.npy` path. Named dims of random arguments take the sizes
that the other arguments bind, else `N=8` given on the line, else DEFAULT_DIM. With no
arguments at all, every parameter is random.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

from dlvmrt.inputs import DEFAULT_DIM, random_value
from isa.module import Function

from .errors import ReplError
from .values import load_npy

if TYPE_CHECKING:
    from .session import ReplSession

DIM_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(\d+)$")
NUMBER_RE = re.compile(r"^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$|^-?(?:inf|nan)$")


def split_call(session: ReplSession, text: str) -> tuple[str, list[str]]:
    """The function name and the argument words; the name defaults to @main."""
    words = text.replace(",", " ").split()
    if words and words[0].startswith("@"):
        return words[0][1:], words[1:]
    if "main" not in session.module.functions:
        known = ", ".join("@" + f for f in session.module.functions) or "none yet (:load a program)"
        raise ReplError(f"name the function to run, e.g. `@f` (the module has: {known})")
    return "main", words


def resolve_arguments(session: ReplSession, func: Function, words: list[str]) -> list[Any]:
    dims: dict[str, int] = {}
    args: list[str] = []
    for w in words:
        m = DIM_RE.match(w)
        if m:
            dims[m.group(1)] = int(m.group(2))
        else:
            args.append(w)
    params = func.params
    if not args:
        args = ["random"] * len(params)
    if len(args) != len(params):
        sig = ", ".join(f"%{p.name}: {p.type}" for p in params) or "none"
        raise ReplError(f"@{func.name} takes {len(params)} argument{'s' if len(params) != 1 else ''}"
                        f" ({sig}), got {len(args)}; give a register, `random`, a number or a .npy "
                        f"file for each")
    values: list[Any] = [None] * len(params)
    for i, (w, p) in enumerate(zip(args, params)):
        if w == "random":
            continue
        values[i] = _one(session, w, p)
        for d, n in zip(p.type.shape, np.shape(values[i])):
            if isinstance(d, str):
                dims.setdefault(d, n)
    for i, (w, p) in enumerate(zip(args, params)):
        if w == "random":
            values[i] = random_value(p.type, dims, session.rng)
    return values


def _one(session: ReplSession, word: str, p) -> Any:
    if word.startswith("%"):
        v = session.lookup(word[1:])
        if v is None:
            raise ReplError(f"{word} is not set (:regs lists the registers)")
        return v
    if NUMBER_RE.match(word):
        try:
            return np.asarray(float(word) if p.type.dtype.is_float else int(word), p.type.dtype.np)
        except (ValueError, OverflowError):
            raise ReplError(f"{word} is not a valid {p.type.dtype} for %{p.name}") from None
    if word.endswith(".npy"):
        return load_npy(word)
    raise ReplError(f"argument {word!r} for %{p.name}: give a register (%x), `random`, a number "
                    f"or a .npy file")


__all__ = ["split_call", "resolve_arguments", "DEFAULT_DIM"]
