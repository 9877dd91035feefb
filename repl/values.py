"""How the REPL shows values and reads them: a type line plus a compact preview, the static
type of a concrete array, and `.npy` / random-by-type values for `:set`."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dlvmrt.binding import describe
from dlvmrt.inputs import DEFAULT_DIM, random_value
from isa.dtypes import dtype_from_numpy
from isa.types import TensorType, parse_type

from .errors import ReplError

PREVIEW_ELEMENTS = 24      # arrays larger than this are summarized (edges only) in a preview
FULL_ELEMENTS = 1000       # :print shows every element up to this many


def type_of(value: Any) -> TensorType:
    """The static type of a concrete value, e.g. f32[2, 3]; ReplError for dtypes dlvm lacks."""
    a = np.asarray(value)
    dt = dtype_from_numpy(a.dtype)
    if dt is None:
        raise ReplError(f"dlvm has no dtype for NumPy {a.dtype}")
    return TensorType(dt, tuple(int(n) for n in a.shape))


def array_text(value: Any, full: bool = False) -> str:
    a = np.asarray(value)
    limit = FULL_ELEMENTS if full else PREVIEW_ELEMENTS
    return np.array2string(a, threshold=limit, edgeitems=3 if full else 2, precision=4,
                           max_line_width=100, suppress_small=False)


def preview(value: Any) -> str:
    """`f32[2, 3] [[...]]` on one line where it fits, the array below the type otherwise."""
    body = array_text(value)
    head = describe(value)
    if "\n" in body:
        return head + "\n  " + body.replace("\n", "\n  ")
    return f"{head} {body}"


def details(value: Any) -> str:
    """What :print shows: the type, summary statistics for numbers, and the values."""
    a = np.asarray(value)
    lines = [describe(a)]
    if a.size and a.dtype.kind in "fiu":
        with np.errstate(all="ignore"):
            finite = a[np.isfinite(a)] if a.dtype.kind == "f" else a
            if finite.size:
                lines.append(f"  min {finite.min():.6g}  max {finite.max():.6g}  "
                             f"mean {finite.astype(np.float64).mean():.6g}")
            if a.dtype.kind == "f" and finite.size != a.size:
                lines.append(f"  {int(np.isnan(a).sum())} NaN, {int(np.isinf(a).sum())} inf")
    lines.append("  " + array_text(a, full=True).replace("\n", "\n  "))
    return "\n".join(lines)


def load_npy(path: str) -> np.ndarray:
    p = Path(path).expanduser()
    try:
        value = np.load(p, allow_pickle=False)
    except OSError as e:
        raise ReplError(f"cannot read {path}: {e.strerror or e}") from None
    except Exception as e:      # np.load's many refusals are the file's fault, not ours
        raise ReplError(f"{path} is not a readable .npy file: {e}") from None
    if not isinstance(value, np.ndarray):
        names = ", ".join(value.files)
        value.close()
        raise ReplError(f"{path} is an .npz archive (arrays: {names}); give one .npy file")
    type_of(value)
    return value


def random_of_type(text: str, rng: np.random.Generator, dims: dict[str, int] | None = None
                   ) -> np.ndarray:
    """A random value of the type written as `text` (`f32[2, 3]`); named and unknown dims take
    their size from `dims`, else DEFAULT_DIM."""
    try:
        t = parse_type(text)
    except ValueError as e:
        raise ReplError(str(e)) from None
    return random_value(t, dims or {}, rng)


__all__ = ["DEFAULT_DIM", "type_of", "preview", "details", "load_npy",
           "random_of_type", "array_text"]
